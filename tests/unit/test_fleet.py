"""Fleet mode: jobs spread over nodes, and node screening on tables from a stated model.

Model: latency of rank r at size s is 2 ns below 32 KiB, 10 ns to 1 MiB, 90 ns above, times
(1 + 0.05 r), times a per-host factor; each point carries a deterministic +-2 % jitter that
differs between hosts. Bandwidth is 10 GB/s per thread divided by the same host factor.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from numasweep.planning import fleet, grid
from numasweep.statistics import stats
from numasweep.core import topology
from numasweep.results import aggregate
from numasweep.reporting import fleet_report

SIZES = [2**k for k in range(12, 26)]


def jitter(host: str, key: int) -> float:
    return 1 + 0.02 * (((key * 7 + sum(map(ord, host))) % 5) - 2) / 2


def model(folder: Path, factors: dict[str, float]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lat, bw = [], []
    for host, factor in factors.items():
        for rank in range(2):
            for i, size in enumerate(SIZES):
                base = 2.0 if size < 32 * 2**10 else 10.0 if size <= 2**20 else 90.0
                lat.append({"job_id": f"lat-on-{host}", "host": host, "rank": rank, "cpu": rank, "mode": "concurrent",
                            "size_bytes": size, "repetition": 0,
                            "latency_ns_median": base * (1 + 0.05 * rank) * factor * jitter(host, i + rank)})
        for threads in (1, 2, 4):
            bw.append({"job_id": f"bw-on-{host}", "host": host, "kernel": "triad", "threads": threads, "repetition": 0,
                       "best_mb_s": 10000.0 * threads / factor * jitter(host, threads), "validation": "pass"})
    pd.DataFrame(lat).to_csv(folder / "latency.csv", index=False)
    pd.DataFrame(bw).to_csv(folder / "bandwidth.csv", index=False)
    return folder


def flagged(scores: list[fleet_report.NodeScore]) -> set[tuple[str, str]]:
    return {(s.host, s.bench) for s in scores if s.out_of_line}


def test_a_slow_node_among_three_is_flagged_and_ranked_first(tmp_path: Path) -> None:
    frames = aggregate.load_results(model(tmp_path, {"node1": 1.0, "node2": 1.02, "node3": 1.5}))
    scores = fleet_report.screen(frames)
    assert flagged(scores) == {("node3", "latency"), ("node3", "bandwidth")}
    assert fleet_report.ranking(scores)[0] == "node3"
    slow = next(s for s in scores if s.host == "node3" and s.bench == "latency")
    assert slow.slowdown.covers(1.5 / 1.01) and slow.points == 2 * len(SIZES)


def test_two_nodes_flag_only_the_slower_one(tmp_path: Path) -> None:
    frames = aggregate.load_results(model(tmp_path, {"node1": 1.0, "node2": 1.4}))
    assert flagged(fleet_report.screen(frames)) == {("node2", "latency"), ("node2", "bandwidth")}


def test_nodes_alike_within_tolerance_pass(tmp_path: Path) -> None:
    frames = aggregate.load_results(model(tmp_path, {"node1": 1.0, "node2": 1.03, "node3": 0.98}))
    assert flagged(fleet_report.screen(frames)) == set()


@pytest.mark.slow
def test_command_writes_table_figure_and_names_each_host(tmp_path: Path) -> None:
    results = model(tmp_path / "results", {"node1": 1.0, "node2": 1.6})
    out = tmp_path / "report" / "fleet.md"
    out.parent.mkdir()
    proc = subprocess.run([sys.executable, "-m", "numasweep", "fleet", "--results", str(results), "-o", str(out),
                           "--figures", str(tmp_path / "report" / "figures")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "| 1 | node2 |" in text and "| 2 | node1 |" in text and "**node2**, latency" in text
    assert (tmp_path / "report" / "figures" / "fleet" / "fleet_nodes--all.png").stat().st_size > 0
    assert "](figures/fleet/fleet_nodes--all.png)" in text
    one = model(tmp_path / "one", {"node1": 1.0})
    proc = subprocess.run([sys.executable, "-m", "numasweep", "fleet", "--results", str(one), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "two or more hosts" in proc.stdout, proc.stderr
    assert "so no host is ranked" in out.read_text() and "node1" in out.read_text()


def test_spread_gives_each_node_its_own_jobs(repo: Path) -> None:
    topo = topology.load(repo / "config" / "arch" / "lumi-g.yaml")
    config = {"latency": {"sweeps": [{"domains": [[0]], "ranks_per_domain": [1], "sizes": "64K"}]}}
    plan = grid.expand(config, topo)
    spread = fleet.spread(plan, ["nid001", "nid002"])
    assert len(spread.jobs) == 2 * len(plan.jobs)
    assert [j.id for j in spread.jobs[:2]] == [f"{plan.jobs[0].id}-on-nid001", f"{plan.jobs[0].id}-on-nid002"]
    assert [fleet.slurm_nodelist(j.grid) for j in spread.jobs[:2]] == [" '--nodelist=nid001'", " '--nodelist=nid002'"]
    assert fleet.spread(plan, []) is plan


def test_each_hosts_reference_is_the_median_of_the_other_hosts_as_pandas_takes_it() -> None:
    """The leave-one-out median of every cell from one sort per point equals pandas' median of the
    other columns, bit for bit: odd and even counts, ties, missing values, a point with one host."""
    import numpy as np

    rng = np.random.default_rng(7)
    for hosts in (2, 3, 4, 9, 40):
        x = np.round(rng.normal(size=(30, hosts)), 1)            # rounded: many ties
        x[rng.random(x.shape) < 0.2] = np.nan
        x[0, 1:] = np.nan                                        # one host at this point
        frame = pd.DataFrame(x)
        expected = np.column_stack([frame.drop(columns=h).median(axis=1).to_numpy() for h in frame.columns])
        got = stats.others_median(x)
        assert np.array_equal(np.isnan(got), np.isnan(expected))
        assert np.array_equal(got[~np.isnan(got)], expected[~np.isnan(expected)])


@pytest.mark.parametrize("state, takes_jobs", [
    ("idle", True), ("mix", True), ("alloc", True), ("idle~", True), ("comp", True), ("resv", True),
    ("drain", False), ("drng", False), ("down", False), ("down*", False), ("idle*", False), ("fail", False),
    ("drain~", False), ("unk*", False), ("futr", False),
])
def test_a_node_in_a_state_that_takes_no_job_is_left_out(state: str, takes_jobs: bool) -> None:
    """sinfo's compact states: a drained, down or non-responding node would leave a job pinned to
    it pending; a powered-down one (`~`) is started for the job."""
    assert fleet.available(state) is takes_jobs
