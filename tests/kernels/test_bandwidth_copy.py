"""numa_bandwidth and numa_copy: STREAM validation, byte counting, placement, the CSV contract."""

from __future__ import annotations

from kernel_helpers import contract_columns, fractions, read_rows, run_ok

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
