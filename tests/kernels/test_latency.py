"""numa_latency: the chase cycle, cache versus memory latency, placement, MPI ranks, serial mode."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernel_helpers import contract_columns, fractions, online_nodes, read_rows, run, run_ok

FAST = ["--min-time=0.02", "--samples=3"]


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
    weight_file = Path("/sys/kernel/mm/mempolicy/weighted_interleave/node0")
    before = weight_file.read_text().strip() if weight_file.exists() else None
    wanted = "2" if before != "2" else "3"
    csv_path = tmp_path / "latency.csv"
    proc = run([kernels_bin / "numa_latency", "--size=1M", *FAST, "--policy=weighted", "--mem-nodes=0",
                f"--weights={wanted}", f"--csv={csv_path}"])
    if proc.returncode == 0:
        (row,) = read_rows(csv_path)[1]
        assert row["policy"] == "weighted" and row["weights"] == wanted
        assert weight_file.read_text().strip() == before
    else:
        # No weighted interleave here, or no permission to write the weights: one line saying so.
        assert proc.returncode == 2
        line = proc.stderr.strip()
        assert "\n" not in line and ("no weighted interleave" in line or "cannot set" in line), line
