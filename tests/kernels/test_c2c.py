"""numa_c2c: one row per pair of CPUs, both CPUs, their nodes and L3 groups and the line's node
checked per row; a sampled subset of the pairs."""

from __future__ import annotations

import itertools
import os

from helpers.kernels import contract_columns, fractions, l3_group, node_of, read_rows, run, run_ok

FAST = ["--samples=3", "--min-time=0.002", "--round-trips=200"]


def test_a_row_for_each_pair_with_placement(kernels_bin, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    csv_path = tmp_path / "c2c.csv"
    run_ok([kernels_bin / "numa_c2c", *FAST, "--policy=bind", "--mem-nodes=0", f"--csv={csv_path}", "--quiet"])
    header, rows = read_rows(csv_path)
    assert header == contract_columns("numa_c2c")
    assert [(int(r["cpu_a"]), int(r["cpu_b"])) for r in rows] == list(itertools.combinations(cpus, 2))
    for r in rows:
        a, b = int(r["cpu_a"]), int(r["cpu_b"])
        assert (int(r["node_a"]), int(r["node_b"])) == (node_of(a), node_of(b))
        assert (int(r["l3_group_a"]), int(r["l3_group_b"])) == (l3_group(a), l3_group(b))
        assert int(r["line_node"]) == 0 and fractions(r["line_page_fractions"])[0] == 1.0
        assert r["policy"] == "bind" and r["mem_nodes"] == "0"
        lo, med, hi = (float(r[f"round_trip_ns_{s}"]) for s in ("min", "median", "max"))
        assert 0 < lo <= med <= hi
        assert abs(float(r["one_way_ns"]) - med / 2) < 0.01
        assert int(r["samples"]) == 3 and int(r["round_trips"]) >= 3 * 200


def test_sampled_pairs_are_a_subset_in_order(kernels_bin, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    csv_path = tmp_path / "c2c.csv"
    # Name a CPU twice: the list is a set. One pair sampled out of all of them.
    run_ok([kernels_bin / "numa_c2c", *FAST, f"--cpus={cpus[0]},{cpus[1]},{cpus[0]}", "--pairs=1",
            f"--csv={csv_path}", "--quiet"])
    rows = read_rows(csv_path)[1]
    assert [(int(r["cpu_a"]), int(r["cpu_b"])) for r in rows] == [(cpus[0], cpus[1])]


def test_bad_inputs_answer_in_one_line(kernels_bin, tmp_path):
    for args, says in ((["--cpus=0-4095"], "outside the CPUs this process may use"),
                       ([f"--cpus={min(os.sched_getaffinity(0))}"], "a pair needs two CPUs"),
                       (["--pairs=0"], "--pairs"), (["--round-trips=x"], "--round-trips")):
        proc = run([kernels_bin / "numa_c2c", *args, f"--csv={tmp_path / 'x.csv'}"])
        lines = proc.stderr.splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("numa_c2c: error:"), proc.stderr
        assert says in lines[0]
