"""numa_latency: the chase cycle, cache versus memory latency, placement, MPI ranks, serial mode."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.kernels import cannot_check

from helpers.kernels import contract_columns, fractions, online_nodes, read_rows, run, run_ok, weights_folder

FAST = ["--min-time=0.02", "--samples=3", "--max-time=0.08"]


@pytest.mark.parametrize("slots", [2, 3, 1000, 65537])
def test_cycle_visits_every_slot_once(kernels_bin, slots):
    out = run_ok([kernels_bin / "numa_latency", f"--self-test={slots}"]).stdout
    assert f"visits {slots} distinct slots, returns to start: ok" in out, out


def test_csv_follows_contract_and_cache_is_faster_than_memory(kernels_bin, tmp_path):
    csv_path = tmp_path / "latency.csv"
    run_ok([kernels_bin / "numa_latency", "--size=16K,256M", *FAST, f"--csv={csv_path}"])
    header, rows = read_rows(csv_path)
    assert header == contract_columns("numa_latency")
    assert [int(r["size_bytes"]) for r in rows] == [16 << 10, 256 << 20]
    small, large = (float(r["latency_ns_median"]) for r in rows)
    assert small < large / 2, (small, large)
    for r in rows:
        assert float(r["latency_ns_min"]) <= float(r["latency_ns_median"]) <= float(r["latency_ns_max"])
        assert int(r["samples"]) == 3 and int(r["loads"]) > 0
        assert r["mode"] == "concurrent" and r["ranks"] == "1" and r["page_size"] == "4k"


def test_a_log_file_shows_each_finished_size_while_the_run_goes_on(kernels_bin, tmp_path):
    """One progress line per size, written when the size is done (stdout line-buffered even
    into a file, as a job's log is): the first line is there while the later sizes still run."""
    log = tmp_path / "job.log"
    sizes = ["16K", "1G", "1G", "1G"]
    with open(log, "w") as out:
        proc = subprocess.Popen([kernels_bin / "numa_latency", f"--size={','.join(sizes)}", "--samples=5",
                                 "--min-time=0.5"], stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while "size 1 of 4 done: 16K" not in log.read_text() and time.monotonic() < deadline:
                assert proc.poll() is None, f"the run ended before its first size showed in the log:\n{log.read_text()}"
                time.sleep(0.05)
            still_running = proc.poll() is None
        finally:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert "size 1 of 4 done: 16K" in text and still_running, text


def test_set_up_times_and_sample_length_are_recorded(kernels_bin, tmp_path):
    csv_path = tmp_path / "latency.csv"
    run_ok([kernels_bin / "numa_latency", "--size=64K,4M", *FAST, f"--csv={csv_path}"])
    for r in read_rows(csv_path)[1]:
        assert float(r["first_touch_s"]) >= 0 and float(r["cycle_build_s"]) > 0
        # Below 256 MiB the sample length stays --min-time.
        assert float(r["sample_s"]) == 0.02
        lo, med, hi = (float(r[c]) for c in ("latency_ns_min", "latency_ns_median", "latency_ns_max"))
        assert abs(float(r["spread_pct"]) - 100 * (hi - lo) / med) < 0.05 + 1e-3 * 100 * (hi - lo) / med


def test_sample_length_doubles_while_the_spread_is_above_target(kernels_bin, tmp_path):
    """A target no real measurement meets: the samples double from 0.01 s up to --max-time, the
    kernel keeps the samples of the quietest length (the least spread) and its warning lists every
    length tried with its spread."""
    csv_path = tmp_path / "latency.csv"
    proc = run_ok([kernels_bin / "numa_latency", "--size=256M", "--samples=3", "--min-time=0.01", "--max-time=0.04",
                   "--spread=0.01", f"--csv={csv_path}"])
    (row,) = read_rows(csv_path)[1]
    if float(row["spread_pct"]) <= 0.01:    # three samples alike to 0.01 %: the first length met it
        assert float(row["sample_s"]) == 0.01
        return
    (warning,) = [line for line in proc.stderr.splitlines() if "above the --spread target of 0.0%" in line]
    tried = [(float(pct), float(s)) for pct, s in re.findall(r"([\d.]+)% at ([\d.]+) s", warning.split("tried (this rank: ")[1])]
    assert [s for _, s in tried] == [0.01, 0.02, 0.04], warning
    least = min(pct for pct, _ in tried)
    assert float(row["sample_s"]) in {s for pct, s in tried if pct == least}, (warning, row)   # (ties: as printed)
    # the warning prints one decimal (half a step: 0.05), the CSV two (0.005): "0.4" and "0.35" agree
    assert abs(float(row["spread_pct"]) - least) <= 0.055 + 1e-9, (warning, row)
    lo, med, hi = (float(row[c]) for c in ("latency_ns_min", "latency_ns_median", "latency_ns_max"))
    assert abs(float(row["spread_pct"]) - 100 * (hi - lo) / med) < 0.05 + 1e-3 * 100 * (hi - lo) / med
    # --spread=0 keeps the sample length fixed.
    run_ok([kernels_bin / "numa_latency", "--size=256M", "--samples=3", "--min-time=0.01", "--spread=0",
            f"--csv={csv_path}"])
    assert float(read_rows(csv_path)[1][0]["sample_s"]) == 0.01


def test_below_256m_the_samples_are_taken_again_at_the_same_length_while_the_spread_is_above_target(
        kernels_bin, tmp_path):
    """A cache-sized buffer has no page walks to average out: below 256 MiB a set of samples whose
    spread is above --spread-small is taken again at the same length, as many times as --spread may
    double the length at large sizes (0.01, 0.02, 0.04 s: three sets); the quietest set is kept."""
    csv_path = tmp_path / "latency.csv"
    proc = run_ok([kernels_bin / "numa_latency", "--size=1M", "--samples=3", "--min-time=0.01", "--max-time=0.04",
                   "--spread-small=0.01", "--pages=thp", f"--csv={csv_path}"])
    (row,) = read_rows(csv_path)[1]
    assert float(row["sample_s"]) == 0.01 and row["page_size"] == "thp", row
    if float(row["spread_pct"]) <= 0.01:    # three samples alike to 0.01 %: the first set met it
        return
    (warning,) = [line for line in proc.stderr.splitlines() if "above the --spread-small target of 0.0%" in line]
    tried = [(float(pct), float(s)) for pct, s in re.findall(r"([\d.]+)% at ([\d.]+) s", warning.split("tried (this rank: ")[1])]
    assert [s for _, s in tried] == [0.01, 0.01, 0.01], warning
    assert "kept the quietest set of samples" in warning
    assert abs(float(row["spread_pct"]) - min(pct for pct, _ in tried)) <= 0.055 + 1e-9, (warning, row)
    # --spread-small=0 takes one set; --spread (2%) does not apply below 256 MiB.
    proc = run_ok([kernels_bin / "numa_latency", "--size=1M", "--samples=3", "--min-time=0.01", "--max-time=0.04",
                   "--spread-small=0", "--spread=0.01", f"--csv={csv_path}"])
    assert "target" not in proc.stderr, proc.stderr
    assert float(read_rows(csv_path)[1][0]["sample_s"]) == 0.01


def test_a_message_is_one_write_so_ranks_sharing_a_log_never_split_a_line(kernels_bin, tmp_path):
    """The ranks of a job write to one log: each message must reach stderr in one write, else
    another rank's line lands inside it ("numa_latency: warning: numa_latency: warning: rank 1
    ..."). Checked on the write calls themselves (strace), an error and the warnings alike."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace not found: install strace (the test command installs it)")
    messages = []
    for name, args in (("error", ["--size=abc"]),
                       ("warnings", ["--size=256M", "--samples=3", "--min-time=0.01", "--max-time=0.04",
                                     "--spread=0.01", "--quiet"])):
        trace = tmp_path / f"{name}.trace"
        subprocess.run([strace, "-f", "-qq", "-e", "trace=write", "-s", "8192", "-o", str(trace),
                        str(kernels_bin / "numa_latency"), *args, f"--csv={tmp_path / 'x.csv'}"],
                       capture_output=True, text=True, timeout=120)
        writes = re.findall(r'write\(2, "((?:[^"\\]|\\.)*)"', trace.read_text())
        assert writes, trace.read_text()[-2000:]
        messages += writes
    assert any(m.startswith("numa_latency: error: --size") for m in messages), messages
    for m in messages:
        assert m.startswith("numa_latency: ") and m.endswith("\\n") and m.count("numa_latency:") == 1, m


def test_samples_taken_off_the_cpu_are_taken_again_up_to_the_sample_count(kernels_bin, tmp_path):
    """A busy process on the rank's CPU leaves it about half of each sample: every sample is taken
    again until the budget (as many retakes as samples) is spent, the CSV counts them, and the
    warning says the CPU was shared even so. Alone on its CPU, a run keeps retakes under that budget."""
    cpu = min(os.sched_getaffinity(0))
    csv_path = tmp_path / "latency.csv"
    hog = subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)
        proc = run_ok(["taskset", "-c", str(cpu), kernels_bin / "numa_latency", "--size=16K", "--samples=3",
                       "--min-time=0.05", "--spread-small=0", f"--csv={csv_path}"])
    finally:
        hog.kill()
        hog.wait()
    (row,) = read_rows(csv_path)[1]
    assert int(row["retaken"]) == 3 and float(row["on_cpu_pct"]) < 95, row
    assert re.search(r"rank 0 ran only \d+% of a sample's time at 16K, after taking 3 samples again", proc.stderr), \
        proc.stderr
    run_ok(["taskset", "-c", str(cpu), kernels_bin / "numa_latency", "--size=16K", "--samples=3", "--min-time=0.05",
            "--spread-small=0", f"--csv={csv_path}"])
    (row,) = read_rows(csv_path)[1]
    assert 0 <= int(row["retaken"]) <= 3 and int(row["samples"]) == 3, row


def test_bound_pages_are_all_on_node_0_and_the_csv_says_so(kernels_bin, tmp_path):
    csv_path = tmp_path / "latency.csv"
    run_ok([kernels_bin / "numa_latency", "--size=4M", *FAST, "--policy=bind", "--mem-nodes=0", f"--csv={csv_path}"])
    _, rows = read_rows(csv_path)
    (row,) = rows
    assert row["policy"] == "bind" and row["mem_nodes"] == "0"
    placed = fractions(row["page_fractions"])
    assert sorted(placed) == online_nodes()
    assert placed[0] == 1.0 and all(v == 0.0 for n, v in placed.items() if n != 0)


def test_policy_inherited_from_numactl_is_recorded(kernels_bin, tmp_path):
    csv_path = tmp_path / "latency.csv"
    run_ok(["numactl", "--membind=0", kernels_bin / "numa_latency", "--size=1M", *FAST, f"--csv={csv_path}"])
    (row,) = read_rows(csv_path)[1]
    assert row["policy"] == "bind" and row["mem_nodes"] == "0"
    assert fractions(row["page_fractions"])[0] == 1.0


def test_weighted_interleave_is_applied_or_refused_in_one_line(kernels_bin, tmp_path):
    csv_path = tmp_path / "latency.csv"
    proc = run([kernels_bin / "numa_latency", "--size=1M", *FAST, "--policy=weighted", "--mem-nodes=0",
                f"--csv={csv_path}"])
    if proc.returncode == 0:
        (row,) = read_rows(csv_path)[1]
        assert row["policy"] == "weighted" and row["mem_nodes"] == "0"
        assert re.fullmatch(r"\d+", row["weights"]), row["weights"]
    else:
        # A kernel older than 6.9: the documented refusal, never a silent plain interleave.
        assert proc.returncode == 2
        assert proc.stderr.strip().startswith("numa_latency: error: --policy=weighted: this kernel has no weighted")


def _mpirun(kernels_bin, *args):
    return ["mpirun", "-n", "2", "--oversubscribe", "--bind-to", "core", kernels_bin / "numa_latency", *args]


def test_two_bound_ranks_give_rows_with_distinct_cpus(kernels_bin, tmp_path):
    csv_path = tmp_path / "latency.csv"
    proc = run_ok(_mpirun(kernels_bin, "--size=1-4", *FAST, f"--csv={csv_path}"))
    _, rows = read_rows(csv_path)
    assert len(rows) == 2 * 3
    assert {r["rank"] for r in rows} == {"0", "1"} and {r["ranks"] for r in rows} == {"2"}
    cpus = {r["rank"]: {r2["cpu"] for r2 in rows if r2["rank"] == r["rank"]} for r in rows}
    assert len(cpus["0"]) == 1 and len(cpus["1"]) == 1 and cpus["0"] != cpus["1"], cpus
    # The seed-style table: one line per rank with a latency for each size.
    table = [line for line in proc.stdout.splitlines() if re.match(r"\| 000[01] ", line)]
    assert len(table) == 2 and all(len(line.split("|")) == 8 + 3 + 1 for line in table), proc.stdout


def test_each_finished_size_prints_one_progress_line_unless_quiet(kernels_bin, tmp_path):
    """A long job's log shows how far it is: one line per size as it finishes; --quiet prints none."""
    out = run_ok([kernels_bin / "numa_latency", "--size=16K,64K,1M", *FAST]).stdout
    progress = [re.match(r"^  size (\d) of 3 done: (\S+), [0-9.]+ ns \([0-9.]+ s so far\)$", line)
                for line in out.splitlines() if "done:" in line]
    assert [(m[1], m[2]) for m in progress if m] == [("1", "16K"), ("2", "64K"), ("3", "1M")], out
    quiet = run_ok([kernels_bin / "numa_latency", "--size=16K,64K", *FAST, "--quiet"]).stdout
    assert "done:" not in quiet, quiet


def test_serial_mode_measures_each_rank(kernels_bin, tmp_path):
    csv_path = tmp_path / "latency.csv"
    run_ok(_mpirun(kernels_bin, "--size=1-2", *FAST, "--serial", "--quiet", f"--csv={csv_path}"))
    _, rows = read_rows(csv_path)
    assert len(rows) == 4 and {r["mode"] for r in rows} == {"serial"}
    assert all(float(r["latency_ns_median"]) > 0 for r in rows)


def test_thp_pages_are_recorded(kernels_bin, tmp_path):
    csv_path = tmp_path / "latency.csv"
    run_ok([kernels_bin / "numa_latency", "--size=4M", *FAST, "--pages=thp", f"--csv={csv_path}"])
    (row,) = read_rows(csv_path)[1]
    assert row["page_size"] == "thp" and fractions(row["page_fractions"])[0] > 0


def test_weights_are_written_for_the_run_and_restored(kernels_bin, tmp_path):
    # A constructed folder: no test writes the host's weights (helpers.kernels.weights_folder).
    folder, env = weights_folder(tmp_path)
    csv_path = tmp_path / "latency.csv"
    proc = run([kernels_bin / "numa_latency", "--size=1M", *FAST, "--policy=weighted", "--mem-nodes=0",
                "--weights=3", f"--csv={csv_path}"], env=env)
    if proc.returncode == 0:
        (row,) = read_rows(csv_path)[1]
        assert row["policy"] == "weighted" and row["weights"] == "3"
        assert (folder / "node0").read_text().strip() == "1" and (folder / "auto").read_text().strip() == "true"
        assert not (tmp_path / "w.state").exists()
    else:
        # No weighted interleave in this kernel: one line saying so.
        assert proc.returncode == 2
        line = proc.stderr.strip()
        assert "\n" not in line and "no weighted interleave" in line, line


def test_weights_are_restored_when_a_signal_ends_the_run(kernels_bin, tmp_path):
    # SLURM's time limit, scancel and mpirun stopping the ranks all end a run with SIGTERM.
    folder, env = weights_folder(tmp_path)
    weight_file = folder / "node0"
    proc = subprocess.Popen([kernels_bin / "numa_bandwidth", "--policy=weighted", "--mem-nodes=0",
                             "--weights=2", "--array-size=4M", "--ntimes=100000", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    try:
        deadline = time.monotonic() + 60
        while weight_file.read_text().strip() != "2" and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is not None and "no weighted interleave" in proc.stderr.read():
            cannot_check("no weighted interleave in this kernel: restoring weights cannot be checked")
        assert weight_file.read_text().strip() == "2", proc.poll()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
        assert weight_file.read_text().strip() == "1" and (folder / "auto").read_text().strip() == "true"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_reserved_huge_pages_that_fit_the_buffer_are_enough(kernels_bin, tmp_path):
    # A 4 MiB buffer on 2 MiB pages needs exactly two reserved pages; the chase's scratch space
    # lives on ordinary pages and must not raise that count.
    pool = Path("/sys/devices/system/node/node0/hugepages/hugepages-2048kB")
    if not os.access(pool / "nr_hugepages", os.W_OK):
        cannot_check(f"{pool}/nr_hugepages is not writable here: reserving huge pages cannot be checked")
    before = (pool / "nr_hugepages").read_text().strip()
    try:
        (pool / "nr_hugepages").write_text(str(int(before) - int((pool / "free_hugepages").read_text()) + 2))
        if int((pool / "free_hugepages").read_text()) != 2:
            cannot_check("two free 2 MiB huge pages could not be reserved on node 0")
        csv_path = tmp_path / "latency.csv"
        run_ok([kernels_bin / "numa_latency", "--size=4M", *FAST, "--pages=2m", f"--csv={csv_path}"])
        (row,) = read_rows(csv_path)[1]
        assert row["page_size"] == "2m" and fractions(row["page_fractions"])[0] == 1.0
        proc = run([kernels_bin / "numa_latency", "--size=8M", *FAST, "--pages=2m"])
        assert proc.returncode == 2 and "needs 4 free 2m huge pages on node(s) 0, 2 are free" in proc.stderr
    finally:
        (pool / "nr_hugepages").write_text(before)


def _without_thp() -> None:
    # PR_SET_THP_DISABLE: this process and what it executes get no transparent huge pages.
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(41, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_THP_DISABLE)")


@pytest.mark.parametrize("kernel, args", [
    ("numa_latency", ["--size=4M", *FAST]),
    ("numa_bandwidth", ["--array-size=4M", "--ntimes=2"]),
    ("numa_copy", ["--src=0", "--dst=0", "--size=4M", "--ntimes=2"]),
])
def test_thp_run_without_huge_pages_is_refused_not_mislabelled(kernels_bin, tmp_path, kernel, args):
    csv_path = tmp_path / "out.csv"
    proc = subprocess.run([str(kernels_bin / kernel), *args, "--pages=thp", "--quiet", f"--csv={csv_path}"],
                          capture_output=True, text=True, preexec_fn=_without_thp, timeout=120)
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"{kernel}: error: --pages=thp: only 0 of the 4M buffer got transparent huge pages")
    assert not csv_path.exists()
