"""Weighted-interleave weights recommended from a measured bandwidth matrix whose truth is
planted, and the finding that states them with the lines that set and use them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from numasweep.core import firmware
from numasweep.core.topology import load_arch
from numasweep.benches.bandwidth import weights
from numasweep.findings.analysis import analyse

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("bandwidth,expected", [
    ({0: 100.0, 1: 100.0}, {0: 1, 1: 1}),            # equal nodes: plain interleave
    ({0: 100.0, 3: 45.0}, {0: 2, 3: 1}),             # CXL at 0.45x: 8 and 3.6 -> 8, 4 -> 2, 1
    ({0: 25615.4, 1: 20190.8}, {0: 4, 1: 3}),         # 8 and 6.3 -> 8, 6 -> 4, 3
    ({0: 100.0, 1: 50.0, 2: 25.0}, {0: 4, 1: 2, 2: 1}),
    ({0: 100.0, 1: 1.0}, {0: 8, 1: 1}),              # capped: never below 1, never above 8
])
def test_weights_follow_bandwidth_reduced_and_capped(bandwidth, expected):
    assert weights.recommend(bandwidth) == expected


def test_one_recommendation_per_cpu_node_with_two_memory_nodes():
    matrix = pd.DataFrame([[20000.0, 9000.0], [10000.0, None]], index=[0, 1], columns=[0, 3])
    recs = weights.recommendations(matrix)
    assert [r.cpu_node for r in recs] == [0]  # node 1 measured one memory node only
    rec = recs[0]
    assert rec.weights == {0: 2, 3: 1}
    assert rec.memory_spec() == "weighted:0,3@2,1"
    assert rec.numactl("./app") == "numactl --cpunodebind=0 --weighted-interleave=0,3 ./app"
    assert rec.sysfs_writes() == ["echo 2 | sudo tee /sys/kernel/mm/mempolicy/weighted_interleave/node0",
                                  "echo 1 | sudo tee /sys/kernel/mm/mempolicy/weighted_interleave/node3"]


def test_two_sockets_that_want_different_weights_are_each_told_their_own():
    """Each socket's CPUs see their own node's memory twice as fast as the other's: node 0's CPUs
    want 2,1 and node 1's 1,2 over the same two nodes, which one machine-wide vector cannot be."""
    matrix = pd.DataFrame([[20000.0, 10000.0], [10000.0, 20000.0]], index=[0, 1], columns=[0, 1])
    found = weights.weights_findings(matrix, None, "bandwidth")
    assert [f.numbers["weights"] for f in found] == [{"0": 2, "1": 1}, {"0": 1, "1": 2}]
    for f, other in zip(found, (1, 0)):
        assert f.numbers["per_socket"] and f.numbers["other_cpu_nodes"] == [other], f.numbers
        assert f"Node {other}'s CPUs are recommended" in f.summary and "no one vector serves both" in f.summary
    alike = pd.DataFrame([[20000.0, 10000.0], [20000.0, 10000.0]], index=[0, 1], columns=[0, 1])
    assert not any(f.numbers["per_socket"] for f in weights.weights_findings(alike, None, "bandwidth"))


def test_finding_states_the_kernels_current_weights_beside_them():
    topo = load_arch(REPO / "config" / "arch" / "cxl-example.yaml")
    matrix = pd.DataFrame([[20000.0, 9000.0]], index=[0], columns=[0, 3])
    (bare,) = weights.weights_findings(matrix, topo, "bandwidth")
    assert "current weights: not provided" in bare.summary
    topo.firmware = firmware.Firmware(weights={0: 1, 1: 1, 3: 1}, weights_auto=True)
    (found,) = weights.weights_findings(matrix, topo, "bandwidth")
    assert found.id == "recommended_weights" and found.numbers["weights"] == {"0": 2, "3": 1}
    assert found.numbers["current_weights"] == {"0": 1, "3": 1}
    assert "node 0: 1, node 3: 1 (auto" in found.summary
    assert "`numactl --cpunodebind=0 --weighted-interleave=0,3 PROGRAM`" in found.summary


def test_cached_ulisse_bandwidth_of_one_run_a_node_recommends_no_weights():
    """One run of each node alone: the noise is unknown, so no weights (and no sysfs line to set
    them); the finding says what would decide them."""
    (found,) = [f for f in analyse(REPO / "examples" / "ulisse")["findings"] if f["id"] == "recommended_weights"]
    assert not found["numbers"]["recommended"] and found["numbers"]["single_run_nodes"] == [0, 1]
    assert "no weights are recommended" in found["summary"] and "tee" not in found["summary"]
    assert "at least 2 times" in found["summary"]


def test_two_runs_of_each_node_recommend_weights():
    matrix = pd.DataFrame([[25600.0, 20200.0]], index=[0], columns=[0, 1])
    (found,) = weights.weights_findings(matrix, None, "bandwidth", {(0, 0): 2, (0, 1): 3})
    assert found.numbers["recommended"] and found.numbers["memory_spec"] == "weighted:0,1@4,3"
    (once,) = weights.weights_findings(matrix, None, "bandwidth", {(0, 0): 2, (0, 1): 1})
    assert not once.numbers["recommended"] and once.numbers["single_run_nodes"] == [1]


def _weighted_jobs(share_of_node0: list[float]) -> pd.DataFrame:
    """Bandwidth rows of jobs under weights 2,1 over nodes 0 and 3, each with its pages' split."""
    return pd.DataFrame([{"job_id": f"j{i}", "repetition": i, "memory": "weighted:0,3@2,1",
                          "page_fractions": f"0:{s:.4f},3:{1 - s:.4f}", "best_mb_s": 1000.0}
                         for i, s in enumerate(share_of_node0)])


def test_pages_under_weights_two_to_one_are_two_to_one_within_five_percent():
    (found,) = weights.weighted_pages(_weighted_jobs([0.6667, 0.6660, 0.6672]))
    n = found.numbers
    assert n["within"] and n["jobs"] == 3 and n["worst_off"] < 0.01, found.summary
    assert "node 0 66.7%, node 3 33.3% of the pages" in found.summary and "within 5%" in found.summary


def test_pages_off_the_weights_are_said_with_the_job_furthest_off():
    # 60/40 is a ratio of 1.5, 25% under the 2 the weights ask for
    (found,) = weights.weighted_pages(_weighted_jobs([0.6667, 0.60]))
    assert not found.numbers["within"] and abs(found.numbers["worst_off"] - 0.25) < 0.01
    assert "node 0 60.0%, node 3 40.0% there" in found.summary and "beyond 5%" in found.summary


def test_only_a_weighting_the_run_set_is_checked():
    plain = _weighted_jobs([0.5]).assign(memory="weighted:0,3")   # the kernel's own weights: unknown ratio
    assert weights.weighted_pages(plain) == [] and weights.weighted_pages(None) == []
