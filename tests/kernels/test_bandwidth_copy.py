"""numa_bandwidth and numa_copy: STREAM validation, byte counting, placement, the CSV contract."""

from __future__ import annotations

import platform

import re

from helpers.kernels import contract_columns, fractions, read_rows, run, run_ok

WORDS = {"copy": 2, "scale": 2, "add": 3, "triad": 3, "read": 1, "write": 1}


def test_stream_kernels_validate_for_every_pattern(kernels_bin, tmp_path):
    csv_path = tmp_path / "bandwidth.csv"
    proc = run_ok(
        [kernels_bin / "numa_bandwidth", "--array-size=4M", "--ntimes=3", "--pattern=sequential,strided,random",
         "--stride=4", "--policy=bind", "--mem-nodes=0", f"--csv={csv_path}"],
        env={"OMP_NUM_THREADS": "2"},
    )
    assert "Validation: passed" in proc.stdout
    header, rows = read_rows(csv_path)
    assert header == contract_columns("numa_bandwidth")
    assert len(rows) == 6 * 3
    n = (4 << 20) // 8
    for r in rows:
        assert r["validation"] == "pass", r
        assert r["threads"] == "2" and r["policy"] == "bind" and r["mem_nodes"] == "0"
        assert fractions(r["page_fractions"])[0] == 1.0
        visited = (n + 3) // 4 if r["pattern"] == "strided" else n
        assert int(r["bytes_per_iter"]) == WORDS[r["kernel"]] * 8 * visited
        assert float(r["min_mb_s"]) <= float(r["avg_mb_s"]) <= float(r["best_mb_s"])
        assert int(r["array_bytes"]) == 4 << 20 and r["ntimes"] == "3"
    assert {r["stride"] for r in rows if r["pattern"] == "strided"} == {"4"}


def test_regular_and_nt_stores_both_validate_and_count_the_same_bytes(kernels_bin, tmp_path):
    csv_path = tmp_path / "bandwidth.csv"
    proc = run_ok(
        [kernels_bin / "numa_bandwidth", "--array-size=4M", "--ntimes=3", "--stores=regular,nt",
         "--pattern=sequential,strided", f"--csv={csv_path}"],
        env={"OMP_NUM_THREADS": "2"},
    )
    assert "Validation: passed" in proc.stdout
    assert "--stores=nt runs the sequential pattern only" in proc.stderr
    _, rows = read_rows(csv_path)
    got = {(r["kernel"], r["pattern"], r["stores"]) for r in rows}
    stores_kernels = {"copy", "scale", "add", "triad", "write"}
    assert got == ({(k, p, "regular") for k in WORDS for p in ("sequential", "strided")}
                   | {(k, "sequential", "nt") for k in stores_kernels})
    for r in rows:
        assert r["validation"] == "pass", r
        assert int(r["bytes_per_element"]) == WORDS[r["kernel"]] * 8
        assert float(r["first_touch_s"]) > 0
    # The variants of a kernel count identical bytes: only the store instructions differ.
    per_iter = {(r["kernel"], r["stores"]): r["bytes_per_iter"] for r in rows if r["pattern"] == "sequential"}
    assert all(per_iter[(k, "nt")] == per_iter[(k, "regular")] for k in stores_kernels)
    # The figure's byte counting is printed beside it.
    assert "Bytes/elem" in proc.stdout and "stores: regular and nt" in proc.stdout


def test_regular_store_loops_are_not_turned_into_memcpy(kernels_bin):
    """gcc may turn a copy loop into memcpy, which streams large blocks: "regular" would be nt.
    The loop shape runs in run_kernel, the other shapes in their workers (e.g. scalar_copy_regular)."""
    out = run_ok(["objdump", "-d", "--no-show-raw-insn", kernels_bin / "numa_bandwidth"]).stdout
    calls, function, workers = [], None, set()
    for line in out.splitlines():
        if line.endswith(">:"):
            function = line.split("<", 1)[1].rstrip(">:")
            if function.endswith("_regular"):
                workers.add(function)
        elif "call" in line and ("memcpy" in line or "memset" in line) and (
                "run_kernel" in (function or "") or (function or "").endswith("_regular")):
            calls.append((function, line))
    assert not calls, calls
    assert {"scalar_copy_regular", "scalar_u_write_regular"} <= workers, sorted(workers)


SHAPES = ["loop", "scalar", "scalar-unroll", "sse", "sse-unroll", "avx2", "avx2-unroll", "avx2-pages", "avx512",
          "avx512-unroll", "avx512-pages"]
REGULAR_ONLY, NT_ONLY = {"loop"}, {"avx2-pages", "avx512-pages"}   # the shapes with one store kind


def _stores_of(shape: str) -> set[str]:
    return {"regular"} if shape in REGULAR_ONLY else {"nt"} if shape in NT_ONLY else {"regular", "nt"}


def _shapes_here(kernels_bin) -> list[str]:
    """The shapes --version says this CPU runs ("name" alone; "name (not here: why)" otherwise)."""
    line = next(ln for ln in run_ok([kernels_bin / "numa_bandwidth", "--version"]).stdout.splitlines()
                if ln.strip().startswith("code shapes:"))
    listed = line.split(":", 1)[1].replace("(not here: ", "(").split()
    assert [w for w in listed if w in SHAPES] == SHAPES, line
    here = [name for name, after in zip(listed, listed[1:] + [""]) if name in SHAPES and not after.startswith("(")]
    assert {"loop", "scalar", "scalar-unroll"} <= set(here), line
    return here


def test_every_code_shape_validates_with_both_stores(kernels_bin, tmp_path):
    """Correctness of each shape, not its speed: 3 threads split the lines unevenly, so the workers'
    remainders (single vectors after the unrolled groups) run too."""
    for shape in _shapes_here(kernels_bin):
        csv_path = tmp_path / f"{shape}.csv"
        stores = ",".join(sorted(_stores_of(shape)))
        proc = run_ok([kernels_bin / "numa_bandwidth", "--array-size=4097K", "--ntimes=3", f"--variant={shape}",
                       f"--stores={stores}", f"--csv={csv_path}"], env={"OMP_NUM_THREADS": "3"})
        assert "Validation: passed" in proc.stdout, shape
        header, rows = read_rows(csv_path)
        assert header == contract_columns("numa_bandwidth")
        expected = ({(k, "regular") for k in WORDS} if "regular" in _stores_of(shape) else set()) | (
            {(k, "nt") for k in WORDS if k != "read"} if "nt" in _stores_of(shape) else set())
        assert {(r["kernel"], r["stores"]) for r in rows} == expected, shape
        for r in rows:
            assert r["variant"] == shape and r["validation"] == "pass", r
            assert int(r["bytes_per_iter"]) == WORDS[r["kernel"]] * 8 * ((4097 << 10) // 8)


def test_auto_calibrates_one_shape_per_kernel_and_says_which(kernels_bin, tmp_path):
    here = _shapes_here(kernels_bin)
    csv_path = tmp_path / "auto.csv"
    proc = run_ok([kernels_bin / "numa_bandwidth", "--array-size=2M", "--ntimes=2", "--stores=regular,nt",
                   "--pattern=sequential,strided", f"--csv={csv_path}"], env={"OMP_NUM_THREADS": "2"})
    _, rows = read_rows(csv_path)
    sequential = [r for r in rows if r["pattern"] == "sequential"]
    assert len(sequential) == 6 + 5
    for r in sequential:
        assert r["variant"] in here and r["validation"] == "pass", r
        assert r["stores"] in _stores_of(r["variant"]), r   # loop: regular only; the page order: nt only
        # The log lists the calibration of that kernel and stores, ending with the shape chosen.
        line = next(ln for ln in proc.stdout.splitlines()
                    if ln.split()[:2] == [r["kernel"], r["stores"]] and "->" in ln)
        assert line.rstrip().endswith(f"-> {r['variant']}"), line
        timed = line.split("->")[0].split()[2::2]
        assert set(timed) == {s for s in here if r["stores"] in _stores_of(s)}, line
    assert all(r["variant"] == "loop" for r in rows if r["pattern"] == "strided")


def test_all_runs_every_shape_here_and_bad_shapes_are_refused(kernels_bin, tmp_path):
    here = _shapes_here(kernels_bin)
    csv_path = tmp_path / "all.csv"
    run_ok([kernels_bin / "numa_bandwidth", "--array-size=1M", "--ntimes=2", "--kernels=triad,read", "--variant=all",
            "--quiet", f"--csv={csv_path}"], env={"OMP_NUM_THREADS": "1"})
    _, rows = read_rows(csv_path)
    assert sorted((r["kernel"], r["variant"]) for r in rows) == sorted(
        (k, s) for k in ("triad", "read") for s in here if "regular" in _stores_of(s))
    assert all(r["validation"] == "pass" for r in rows)
    refused = [(["--variant=loop", "--stores=nt"], "no shape asked for has a form with nt stores"),
               (["--variant=avx3"], "unknown variant 'avx3'")]
    refused += [([f"--variant={s}"], "no shape asked for has a form with regular stores") for s in here if s in NT_ONLY]
    for args, words in refused:
        proc = run([kernels_bin / "numa_bandwidth", "--array-size=1M", *args])
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    for missing in set(SHAPES) - set(here):
        proc = run([kernels_bin / "numa_bandwidth", "--array-size=1M", f"--variant={missing}"])
        assert proc.returncode == 2 and "this CPU has no" in proc.stderr, proc.stderr


def test_calibrate_times_every_shape_in_rounds_and_measures_nothing(kernels_bin, tmp_path):
    """--calibrate=N: one row per round, kernel, store kind and shape this CPU runs (nt where the
    build has it), every shape in every round; python -m numasweep calibrate decides from them."""
    here = _shapes_here(kernels_bin)
    csv_path = tmp_path / "calibration.csv"
    run_ok([kernels_bin / "numa_bandwidth", "--array-size=1M", "--calibrate=3", "--kernels=triad,read",
            f"--csv={csv_path}"], env={"OMP_NUM_THREADS": "1"})
    _, rows = read_rows(csv_path)
    stores = {"regular", "nt"} if platform.machine() == "x86_64" else {"regular"}
    expected = {(k, st, s, r) for k in ("triad", "read") for st in stores for s in here for r in range(3)
                if st in _stores_of(s) and not (k == "read" and st == "nt")}
    assert {(r["kernel"], r["stores"], r["shape"], int(r["round"])) for r in rows} == expected
    assert all(float(r["mb_s"]) > 0 and int(r["threads"]) == 1 for r in rows)
    proc = run([kernels_bin / "numa_bandwidth", "--array-size=1M", "--calibrate=3", "--variant=avx2"])
    assert proc.returncode == 2 and "give one of them" in proc.stderr, proc.stderr


def test_shapes_file_sets_each_kernels_shape_and_refuses_what_it_lacks(kernels_bin, tmp_path):
    shapes = tmp_path / "calibration.shapes"
    shapes.write_text("# kernel stores shape\ntriad regular sse-unroll\nread regular scalar-unroll\n")
    csv_path = tmp_path / "bw.csv"
    proc = run_ok([kernels_bin / "numa_bandwidth", "--array-size=1M", "--ntimes=2", "--kernels=triad,read",
                   f"--shapes={shapes}", f"--csv={csv_path}"], env={"OMP_NUM_THREADS": "1"})
    assert f"from {shapes}" in proc.stdout
    _, rows = read_rows(csv_path)
    assert {(r["kernel"], r["variant"]) for r in rows} == {("triad", "sse-unroll"), ("read", "scalar-unroll")}
    long = "x" * 600   # a long reason is the rows' shape_choice, cut to the kernel's 511 characters
    shapes.write_text(f"triad regular sse-unroll # {long}\nread regular loop\n")
    run_ok([kernels_bin / "numa_bandwidth", "--array-size=1M", "--ntimes=2", "--kernels=triad,read",
            f"--shapes={shapes}", f"--csv={csv_path}"], env={"OMP_NUM_THREADS": "1"})
    _, rows = read_rows(csv_path)
    assert {r["kernel"]: r["shape_choice"] for r in rows} == {"triad": "x" * 511, "read": f"from {shapes}"}
    for text, words in [("triad regular sse-unroll\n", "names no shape for read with regular stores"),
                        (f"triad regular loop # {'y' * 3000}\n", "longer than 2046 characters"),
                        ("triad regular avx3\nread regular loop\n", "names no kernel, store kind or shape"),
                        ("triad regular\n", "not \"KERNEL STORES SHAPE\"")]:
        shapes.write_text(text)
        proc = run([kernels_bin / "numa_bandwidth", "--array-size=1M", "--kernels=triad,read", f"--shapes={shapes}"])
        assert proc.returncode == 2 and words in proc.stderr and "calibrate" in proc.stderr, proc.stderr
    proc = run([kernels_bin / "numa_bandwidth", "--array-size=1M", f"--shapes={tmp_path / 'none'}"])
    assert proc.returncode == 2 and "calibrate first" in proc.stderr, proc.stderr


def test_unrolled_read_is_likwid_benchs_sum_loop(kernels_bin):
    """likwid-bench 5.2.2's sum, sum_sse, sum_avx and sum_avx512 (as objdump shows Debian's build):
    eight accumulators, each adding one of eight consecutive vectors per iteration. The unrolled
    read workers must have that loop: eight adds of consecutive offsets, a vector apart, into eight
    accumulators. The compiler may advance the pointer within the iteration (gcc 12 on Zen 3 gave
    offsets 0-24, then -32 to -8 after adding 64), so the offsets are compared modulo the iteration's
    eight vectors."""
    out = run_ok(["objdump", "-d", "--no-show-raw-insn", kernels_bin / "numa_bandwidth"]).stdout
    workers = {"scalar_u_read": ("addsd", 8), "sse_u_read": ("addpd", 16), "avx2_u_read": ("addpd", 32),
               "avx512_u_read": ("addpd", 64)}
    for name, (op, width) in workers.items():
        body = out.split(f"<{name}>:", 1)
        if len(body) < 2:
            assert name != "scalar_u_read" and platform.machine() != "x86_64", name
            continue
        adds = [ln for ln in body[1].split("\n\n", 1)[0].splitlines() if op in ln and "(%" in ln]
        offsets = [int(ln.split(op, 1)[1].split()[0].split("(")[0] or "0", 16) for ln in adds[:8]]
        accumulators = {ln.rsplit(",", 1)[-1].strip() for ln in adds[:8]}
        assert sorted(o % (8 * width) for o in offsets) == [i * width for i in range(8)], (name, adds[:8])
        assert len(accumulators) == 8, (name, adds[:8])


def test_default_array_size_follows_four_times_the_last_level_cache(kernels_bin, tmp_path):
    csv_path = tmp_path / "bandwidth.csv"
    proc = run_ok([kernels_bin / "numa_bandwidth", "--ntimes=2", "--kernels=read", "--quiet", f"--csv={csv_path}"],
                  env={"OMP_NUM_THREADS": "1"})
    (row,) = read_rows(csv_path)[1]
    llc, instances = _llc()
    expected = max(64 << 20, -(-4 * llc * instances // (1 << 20)) << 20)
    capped = re.search(r"arrays capped at (\d+(?:\.\d+)?)([MG])", proc.stderr)
    if capped:
        # a large last level (a 480 MiB L3 here) on a machine with little free memory: the kernel
        # caps the three arrays at half the free memory and says so; the cap is below the rule's size
        size = float(capped.group(1)) * (1 << (20 if capped.group(2) == "M" else 30))
        assert int(row["array_bytes"]) < expected and abs(int(row["array_bytes"]) - size) <= 0.01 * size, proc.stderr
        return
    assert int(row["array_bytes"]) == expected, (row["array_bytes"], llc, instances)


def _llc() -> tuple[int, int]:
    """Size of cpu0's highest cache level and the number of its instances, from sysfs."""
    from pathlib import Path

    base = Path("/sys/devices/system/cpu")
    best = (0, 0, "")
    for d in sorted((base / "cpu0" / "cache").glob("index*")):
        if (d / "type").read_text().strip() == "Instruction":
            continue
        level, size = int((d / "level").read_text()), (d / "size").read_text().strip()
        nbytes = int(size[:-1]) << (10 if size.endswith("K") else 20) if size[-1] in "KM" else int(size)
        if level > best[0]:
            best = (level, nbytes, d.name)
    shared = {(cpu / "cache" / best[2] / "shared_cpu_list").read_text().strip()
              for cpu in base.glob("cpu[0-9]*") if (cpu / "cache" / best[2] / "shared_cpu_list").exists()}
    return best[1], len(shared)


def test_threads_option_and_cpus_recorded(kernels_bin, tmp_path):
    csv_path = tmp_path / "bandwidth.csv"
    run_ok([kernels_bin / "numa_bandwidth", "--array-size=1M", "--ntimes=2", "--kernels=triad", "--threads=1",
            "--quiet", f"--csv={csv_path}"])
    (row,) = read_rows(csv_path)[1]
    assert row["kernel"] == "triad" and row["threads"] == "1"
    assert row["cpus"].isdigit() and row["cpu_nodes"] == "0"


def test_copy_node_0_to_node_0(kernels_bin, tmp_path):
    csv_path = tmp_path / "copy.csv"
    run_ok([kernels_bin / "numa_copy", "--src=0", "--dst=0", "--size=8M", "--ntimes=3", f"--csv={csv_path}"])
    header, rows = read_rows(csv_path)
    assert header == contract_columns("numa_copy")
    (row,) = rows
    assert (row["src_node"], row["dst_node"], row["cpu_node"]) == ("0", "0", "0")
    assert row["validation"] == "pass" and float(row["best_gb_s"]) > 0
    assert fractions(row["src_page_fractions"])[0] == 1.0 and fractions(row["dst_page_fractions"])[0] == 1.0
    assert int(row["bytes"]) == 8 << 20


def test_copy_matrix_covers_every_pair_of_memory_nodes(kernels_bin, tmp_path):
    csv_path = tmp_path / "copy.csv"
    run_ok([kernels_bin / "numa_copy", "--matrix", "--size=1M", "--ntimes=2", "--quiet", f"--csv={csv_path}"])
    _, rows = read_rows(csv_path)
    pairs = {(r["src_node"], r["dst_node"]) for r in rows}
    nodes = {r["src_node"] for r in rows}
    assert pairs == {(a, b) for a in nodes for b in nodes} and "0" in nodes
    assert all(r["validation"] == "pass" for r in rows)
