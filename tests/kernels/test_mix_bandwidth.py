"""numa_mix_bandwidth: one row per traffic kind, pinned threads and local or bound memory checked
per row."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.kernels import contract_columns, fractions, online_nodes, read_rows, run, run_ok

KINDS = ["read", "r3w1", "r2w1", "r1w1", "triad"]
FAST = ["--size=4M", "--samples=3", "--min-time=0.02"]


def test_every_kind_on_every_cpu_with_local_memory(kernels_bin, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    csv_path = tmp_path / "mix.csv"
    run_ok([kernels_bin / "numa_mix_bandwidth", *FAST, "--local-memory", f"--csv={csv_path}", "--quiet"])
    header, rows = read_rows(csv_path)
    assert header == contract_columns("numa_mix_bandwidth")
    assert [r["traffic"] for r in rows] == KINDS
    for r in rows:
        assert [int(c) for c in r["cpus"].split(",")] == cpus and int(r["threads"]) == len(cpus)
        assert r["memory"] == "local" and r["strategy"] == "sequential"
        assert fractions(r["page_fractions"])[0] == 1.0
        lo, med, hi = (float(r[f"gb_s_{s}"]) for s in ("min", "median", "max"))
        assert 0 < lo <= med <= hi
        assert int(r["size_bytes"]) == 4 << 20 and int(r["samples"]) == 3


def test_cpu_list_and_bound_memory(kernels_bin, tmp_path):
    cpu = max(os.sched_getaffinity(0))
    csv_path = tmp_path / "mix.csv"
    run_ok([kernels_bin / "numa_mix_bandwidth", *FAST, f"--cpus={cpu}", "--traffic=r2w1,triad", "--policy=bind",
            "--mem-nodes=0", f"--csv={csv_path}", "--quiet"])
    rows = read_rows(csv_path)[1]
    assert [r["traffic"] for r in rows] == ["r2w1", "triad"]
    for r in rows:
        assert r["cpus"] == str(cpu) and r["strategy"] == "list" and r["threads"] == "1"
        assert r["memory"] == "bind" and r["mem_nodes"] == "0" and fractions(r["page_fractions"])[0] == 1.0


def test_bad_inputs_answer_in_one_line(kernels_bin, tmp_path):
    for args, says in ((["--traffic=copy"], "unknown traffic 'copy'"),
                       (["--cpus=0-4095"], "outside the CPUs this process may use"),
                       (["--cpu-nodes=200"], "node 200"),
                       (["--local-memory", "--policy=bind", "--mem-nodes=0"], "give one of them"),
                       (["--matrix", "--cpus=0"], "--matrix chooses the CPUs by node")):
        proc = run([kernels_bin / "numa_mix_bandwidth", *args, f"--csv={tmp_path / 'x.csv'}"])
        lines = proc.stderr.splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert lines[0].startswith("numa_mix_bandwidth: error:") and says in lines[0], lines


def test_matrix_has_a_cell_per_cpu_node_and_memory_node(kernels_bin, tmp_path):
    """One row per (CPU node with CPUs, memory node, kind); the CPU and page columns show each
    cell's threads on its node and its pages on the memory node."""
    nodes = online_nodes()
    cpu_nodes = [n for n in nodes if Path(f"/sys/devices/system/node/node{n}/cpulist").read_text().strip()]
    csv_path = tmp_path / "mix.csv"
    run_ok([kernels_bin / "numa_mix_bandwidth", *FAST, "--matrix", "--traffic=read,r1w1", f"--csv={csv_path}",
            "--quiet"])
    rows = read_rows(csv_path)[1]
    cells = [(c, m, k) for c in cpu_nodes for m in nodes for k in ("read", "r1w1")]
    assert len(rows) == len(cells)
    for r, (c, m, kind) in zip(rows, cells):
        assert r["traffic"] == kind and r["memory"] == "bind" and r["mem_nodes"] == str(m)
        assert {int(n) for n in r["cpu_nodes"].split(",")} == {c}
        assert fractions(r["page_fractions"])[m] == 1.0
