"""Measured matrices set beside HMAT and SLIT, on model data whose disagreements are planted:
each planted one is found with its interval, and the agreeing pairs are not flagged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.core import firmware as fw
from numasweep.core.topology import load_arch
from numasweep.findings.firmware import far_memory, firmware_findings

REPO = Path(__file__).resolve().parents[2]


def samples(truth: dict[tuple[int, int], float], n: int = 8, noise: float = 0.01, seed: int = 7) -> pd.DataFrame:
    """n units per (cpu node, memory node) around the planted value, 1 % log-normal noise."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"cpu_node": c, "memory_node": m, "value": v * float(np.exp(rng.normal(0, noise)))}
                         for (c, m), v in truth.items() for _ in range(n)])


def cxl(access: list[fw.Access], tiers: list[fw.Tier] | None = None):
    topo = load_arch(REPO / "config" / "arch" / "cxl-example.yaml")  # nodes 0, 1 (CPUs), 3 (memory only)
    topo.firmware = fw.Firmware(access=access, tiers=tiers or [])
    return topo


def hmat(cpu: int, bandwidth: dict[int, int]) -> list[fw.Access]:
    return [fw.Access(1, cpu, m, read_bandwidth_mb_s=bw) for m, bw in bandwidth.items()]


def test_planted_bandwidth_disagreement_is_found_and_agreements_are_not():
    # The firmware says node 1 gives half of node 0 and the CXL node 0.3x; measured: 0.93x and 0.3x.
    topo = cxl(hmat(0, {0: 100000, 1: 50000, 3: 30000}), [fw.Tier(4, [0, 1]), fw.Tier(22, [3])])
    found = firmware_findings(samples({(0, 0): 100.0, (0, 1): 93.0, (0, 3): 30.0}), topo, "bandwidth_mb_s", "bandwidth")
    (comparison,) = [f for f in found if f.id == "firmware_comparison"]
    assert comparison.numbers["source"] == "HMAT access1" and comparison.numbers["claim"] is True
    rows = {r["memory_node"]: r for r in comparison.evidence}
    assert rows[1]["disagrees"] and not rows[3]["disagrees"]  # 1 found, 1 agreement left alone
    assert rows[1]["claimed_ratio"] == 0.5
    assert rows[1]["measured_ratio_low"] < 0.93 < rows[1]["measured_ratio_high"]
    assert ("CPUs of node 0 to memory of node 1: HMAT access1 says 0.50x, measured 0.93x (95% interval"
            in comparison.summary)
    assert ("1 of 2 pair(s) disagree beyond 10%; 1 of 2 pair(s) agree within 10%; the node ordering agrees"
            in comparison.summary)
    assert [r["verdict"] for r in comparison.evidence] == ["disagrees", "agrees"]
    (tier,) = [f for f in found if f.id == "memory_tier"]
    assert tier.summary.startswith("Far memory, node 3 (memory tier 22, no CPUs), from node 0's CPUs: 0.30x")
    assert not [f for f in found if f.id == "firmware_not_provided"]


def test_planted_ordering_disagreement():
    # The firmware ranks node 1 above the CXL node; measured, node 1 is the slower by far.
    topo = cxl(hmat(0, {0: 100000, 1: 60000, 3: 50000}))
    found = firmware_findings(samples({(0, 0): 100.0, (0, 1): 30.0, (0, 3): 52.0}), topo, "bandwidth_mb_s", "bandwidth")
    (comparison,) = [f for f in found if f.id == "firmware_comparison"]
    assert comparison.numbers["ordering_agrees"] is False
    assert ("the firmware puts node 1 above node 3, measured 0.58x (95% interval 0.58x to 0.59x) of it"
            in comparison.summary)
    assert [r["disagrees"] for r in comparison.evidence] == [True, False]  # 0.30 vs 0.60 claimed; 0.52 vs 0.50


def test_latency_against_slit_and_noise_is_not_a_disagreement():
    # SLIT (cxl-example): node 0 -> 1 is 21, -> 3 is 14: claimed 2.1x and 1.4x. Measured 2.05x (within
    # 10 %) and 1.9x (planted), with 5 % noise on few units so the first stays inside the noise.
    topo = cxl([])
    data = samples({(0, 0): 100.0, (0, 1): 205.0, (0, 3): 190.0}, n=4, noise=0.05)
    found = firmware_findings(data, topo, "latency_ns", "latency")
    (comparison,) = [f for f in found if f.id == "firmware_comparison"]
    assert comparison.numbers["source"] == "SLIT"
    assert {r["memory_node"]: r["disagrees"] for r in comparison.evidence} == {1: False, 3: True}
    (missing,) = [f for f in found if f.id == "firmware_not_provided"]
    assert missing.summary == ("Measured latency against the firmware: HMAT: not provided, so the measurement "
                               "stands alone beside the SLIT distances.")


def test_a_wide_interval_is_undecided_never_agreeing():
    """Two runs a cell with 40 % noise (an emulated machine): the interval of the ratio spans far
    more than 10 % either side of the claim, so the pair neither disagrees nor agrees: it is said
    to be undecided, and nothing is claimed."""
    topo = cxl(hmat(0, {0: 20000, 1: 10000}))
    found = firmware_findings(samples({(0, 0): 100.0, (0, 1): 70.0}, n=2, noise=0.4, seed=3), topo,
                              "bandwidth_mb_s", "bandwidth")
    (comparison,) = [f for f in found if f.id == "firmware_comparison"]
    (row,) = comparison.evidence
    assert row["tested"] and not row["disagrees"] and row["verdict"] == "undecided", row
    assert row["measured_ratio_low"] < 0.5 / 1.1 and row["measured_ratio_high"] > 0.5 * 1.1, row
    assert ", undecided, its interval reaching past 10% of the firmware's ratio" in comparison.summary
    assert ("1 of 1 pair(s) undecided, the interval reaching past 10% of the firmware's ratio (more ranks or "
            "repetitions narrow it)" in comparison.summary)
    assert "agrees" not in comparison.summary.replace("ordering agrees", "")
    assert comparison.numbers["claim"] is False and comparison.numbers["undecided"] == 1


def test_one_node_without_hmat_says_so_in_one_line():
    topo = load_arch(REPO / "config" / "arch" / "ulisse.yaml")
    found = firmware_findings(samples({(0, 0): 20000.0}), topo, "bandwidth_mb_s", "bandwidth")
    assert [(f.id, f.summary) for f in found] == [
        ("firmware_not_provided", "Measured bandwidth against the firmware: HMAT: not provided, so the "
                                  "measurement stands alone.")]


def test_one_value_a_side_is_untested_never_agreeing():
    # One rank per cell (the four-node guest's sweep): no interval, so no verdict either way. The
    # CXL node's 3x claim against a measured 1.02x is said to be untested and far apart, node 1's
    # 0.5x against 0.52x untested and within the floor; neither agrees, and nothing is claimed.
    topo = cxl(hmat(0, {0: 20000, 1: 10000, 3: 6000}))
    found = firmware_findings(samples({(0, 0): 100.0, (0, 1): 52.0, (0, 3): 102.0}, n=1, noise=0.0), topo,
                              "bandwidth_mb_s", "bandwidth")
    (comparison,) = [f for f in found if f.id == "firmware_comparison"]
    assert ("CPUs of node 0 to memory of node 1: HMAT access1 says 0.50x, measured 0.52x (no interval: noise "
            "unknown), untested, within 10% of each other" in comparison.summary)
    assert ("CPUs of node 0 to memory of node 3: HMAT access1 says 0.30x, measured 1.02x (no interval: noise "
            "unknown), untested, 3.40x apart" in comparison.summary)
    assert ("No pair tested; 2 of 2 pair(s) untested, with one value a side and no interval (more ranks or "
            "repetitions give one), 1 of them more than 10% apart from the firmware's ratio; the node ordering "
            "untested." in comparison.summary)
    assert "agrees" not in comparison.summary
    assert comparison.numbers["claim"] is False and comparison.numbers["untested"] == 2
    assert comparison.numbers["ordering_agrees"] is None
    assert [r["tested"] for r in comparison.evidence] == [False, False]


def test_far_memory_latency_and_bandwidth_in_one_sentence():
    """A memory-only node measured for latency and bandwidth from one CPU node: the report says
    both in one sentence ("far memory: 1.9x local latency, 0.45x local bandwidth"), each ratio
    with its interval; a node measured for one quantity keeps its own finding."""
    topo = cxl([], [fw.Tier(4, [0, 1]), fw.Tier(22, [3])])
    latency = firmware_findings(samples({(0, 0): 100.0, (0, 3): 190.0, (1, 1): 100.0, (1, 3): 200.0}),
                                topo, "latency_ns", "latency")
    bandwidth = firmware_findings(samples({(0, 0): 100.0, (0, 3): 45.0}), topo, "bandwidth_mb_s", "bandwidth")
    found = far_memory([f.to_dict() for f in bandwidth + latency])
    tiers = [f for f in found if f["id"] == "memory_tier"]
    assert len(tiers) == 2, tiers
    both, alone = tiers
    assert both["summary"].startswith("Far memory, node 3 (memory tier 22, no CPUs), from node 0's CPUs: 1.90x "
                                      "(95% interval 1.8"), both["summary"]
    assert " the local latency and 0.45x (95% interval 0.4" in both["summary"]
    assert both["summary"].endswith(" the local bandwidth."), both["summary"]
    assert both["numbers"]["latency_ratio_low"] < 1.9 < both["numbers"]["latency_ratio_high"]
    assert both["numbers"]["bandwidth_ratio_low"] < 0.45 < both["numbers"]["bandwidth_ratio_high"]
    assert alone["summary"].startswith("Far memory, node 3 (memory tier 22, no CPUs), from node 1's CPUs: 2.0")
    assert alone["summary"].endswith(" the local latency."), alone["summary"]
    # everything else as it was, in its order
    rest = [f for f in bandwidth + latency if f.id != "memory_tier"]
    assert [f["title"] for f in found if f["id"] != "memory_tier"] == [f.title for f in rest]
