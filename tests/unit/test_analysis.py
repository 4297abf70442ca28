"""Findings: synthetic curves with known answers, and what the seeds' examples must show."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numasweep.core.topology import Topology
from numasweep.findings import analysis
from numasweep.core.errors import NumasweepError
from numasweep.benches.bandwidth import findings as bw_findings
from numasweep.benches import copy as copy_bench
from numasweep.benches.gpu_xfer import findings as gpu_xfer
from numasweep.benches.latency import findings as lat_findings
from numasweep.benches.latency import locality

MIB = 1 << 20
SIZES = [MIB << k for k in range(11)]  # 1 MiB .. 1 GiB


def topo_two_nodes() -> Topology:
    """2 nodes x 2 L3 groups x 4 cores, L2 1 MiB per core, L3 16 MiB per group (32 MiB per node)."""
    cores = list(range(16))
    return Topology.from_dict({
        "system": "synthetic", "threads_per_core": 1,
        "nodes": [{"id": 0, "cpus": cores[:8], "memory_bytes": 1 << 34},
                  {"id": 1, "cpus": cores[8:], "memory_bytes": 1 << 34}],
        "distances": [[10, 20], [20, 10]],
        "caches": [{"level": 2, "type": "Unified", "size_bytes": MIB, "instances": [[c] for c in cores]},
                   {"level": 3, "type": "Unified", "size_bytes": 16 * MIB,
                    "instances": [cores[i:i + 4] for i in range(0, 16, 4)]}],
        "l3_groups": [cores[i:i + 4] for i in range(0, 16, 4)],
        "smt_siblings": [[c] for c in cores],
    })


def latency_frame(curve, cpus=(0, 4, 8, 12), mode="serial", noise=0.0, seed=0, spread=None,
                  mem=None, page="") -> pd.DataFrame:
    """One row per rank and size; `curve(size, cpu)` gives the latency."""
    rng = np.random.default_rng(seed)
    rows = []
    for rank, cpu in enumerate(cpus):
        node = cpu // 8
        for size in SIZES:
            lat = curve(size, cpu) * (1 + rng.uniform(-noise, noise))
            rows.append({"rank": rank, "ranks": len(cpus), "mode": mode, "cpu": cpu, "cpu_node": node,
                         "l3_group": cpu // 4, "mem_nodes": node if mem is None else mem, "page_size": page,
                         "size_bytes": size, "latency_ns_median": lat,
                         "latency_ns_min": lat * (1 - spread) if spread is not None else np.nan,
                         "latency_ns_max": lat * (1 + spread) if spread is not None else np.nan})
    return pd.DataFrame(rows)


def stepped(size: int, cpu: int = 0) -> float:
    """Doubles when the working set outgrows 16 MiB (L3 group) and again past 32 MiB (node)."""
    return 10.0 * (2.0 if size >= 16 * MIB else 1.0) * (2.0 if size >= 32 * MIB else 1.0)


def ids(findings) -> list[str]:
    return [f.id for f in findings]


# ------------------------------------------------------------ latency: levels, TLB, contrasts

TWO_NODES = "two nodes"   # the default topology of these tests; None: no topology at all


def latency(df: pd.DataFrame, topo: Topology | None | str = TWO_NODES) -> list:
    return lat_findings.latency_findings(df, topo_two_nodes() if topo == TWO_NODES else topo)


def claims(findings) -> list:
    return [f for f in findings if f.numbers.get("claim")]


def test_one_transition_per_rise_attributed_to_the_l3_a_core_can_use() -> None:
    # 16 -> 32 MiB doubles again: one L3-to-DRAM rise over two size steps, not a per-node L3
    found = [f for f in latency(latency_frame(stepped, noise=0.01)) if f.id == "cache_threshold"]
    (f,) = found
    n = f.numbers
    assert n["cache_bytes"] == 16 * MIB and n["matched_cache"].startswith("L3 (per L3 group")
    assert n["from_size_bytes"] <= 8 * MIB and n["size_bytes"] >= 32 * MIB
    assert n["step_ratio_low"] <= 4.0 <= n["step_ratio_high"] and n["step_ratio_low"] > 3
    assert "interval" in f.summary and n["location_bytes_low"] < n["location_bytes"] < n["location_bytes_high"]
    assert all("node" not in (x.numbers.get("matched_cache") or "") for x in found)


def test_a_rise_no_cache_explains_is_said_once_with_its_caveat() -> None:
    curve = lambda s, c: 10.0 * (1.5 if s >= 256 * MIB else 1.0)  # noqa: E731
    (f,) = [f for f in latency(latency_frame(curve, noise=0.01)) if f.id == "cache_threshold"]
    assert f.numbers["size_bytes"] == 256 * MIB and f.numbers["matched_cache"] is None
    assert f.numbers["kind"] == "unexplained" and "nothing in the topology explains it" in f.summary
    assert any("TLB" in c for c in f.numbers["caveats"])          # page size unknown: TLB reach?


# The serial, 1-rank, 4 KiB-page curve of a VM the issue tracker quotes (ns at 512 KiB .. 8 MiB),
# between an L1 plateau and a memory plateau: an L2 exit, then a larger rise that ends far below
# the L3 the topology reports.
VM_CURVE = {16 << 10: 1.2, 32 << 10: 1.25, 64 << 10: 3.6, 128 << 10: 4.4, 256 << 10: 4.8, 512 << 10: 4.95,
            MIB: 11.0, 2 * MIB: 13.8, 4 * MIB: 108.0, 8 * MIB: 140.0, 16 * MIB: 150.0, 32 * MIB: 155.0,
            64 * MIB: 160.0, 128 * MIB: 163.0, 256 * MIB: 165.0}


def vm_frame(curve: dict, seed: int = 1, spread: float = 0.02, mode: str = "serial",
             spreads: dict | None = None, ranks: int = 1) -> pd.DataFrame:
    """Three runs of rank 0 of `ranks`; `spreads`: a size's own within-run spread (max - min over
    median)."""
    rng = np.random.default_rng(seed)
    rows = []
    for rep in range(3):
        for size, ns in curve.items():
            lat = ns * float(np.exp(rng.normal(0, 0.01)))
            half = (spreads or {}).get(size, 2 * spread) / 2
            rows.append({"rank": 0, "ranks": ranks, "mode": mode, "cpu": 0, "cpu_node": 0, "l3_group": 0,
                         "mem_nodes": 0, "page_size": "4k", "repetition": rep, "size_bytes": size,
                         "latency_ns_median": lat, "latency_ns_min": lat * (1 - half),
                         "latency_ns_max": lat * (1 + half), "samples": 9})
    return pd.DataFrame(rows)


def test_two_rises_in_one_window_are_two_findings_each_attributed_by_where_it_happens() -> None:
    found = latency(vm_frame(VM_CURVE))
    steps = [f.numbers for f in found if f.id == "cache_threshold"]
    (unseen,) = [f for f in found if f.id == "cache_unseen"]
    assert "already risen to 140 ns by 8 MiB (the unexplained rise from 2 MiB)" in unseen.summary
    by_range = {(n["from_size_bytes"], n["size_bytes"]): n for n in steps}
    l2 = by_range[(512 << 10, 2 * MIB)]
    assert l2["cache_bytes"] == MIB and 2.5 < l2["step_ratio"] < 3.0
    dram = by_range[(2 * MIB, 8 * MIB)]
    # the L3 (16 MiB per group) lies in its window, but the rise is half-way near 3 MiB: not the L3's
    assert dram["kind"] == "unexplained" and dram["cache_bytes"] is None and dram["step_ratio"] > 8
    assert any("explains the rise from 512 KiB to 2 MiB" in c for c in dram["caveats"])
    assert any("L3" in c and "half-way" in c for c in dram["caveats"])
    assert any("TLB" in c for c in dram["caveats"])



def test_an_unstable_size_places_no_transition() -> None:
    # 32 KiB, its runs' samples spread 65 %, reads as L1 in one mode and as L2 in the other (a
    # rank of two): the step starts at 16 KiB in both, ends at the same size, and names the size
    # it left out
    curves = {"serial": {**VM_CURVE, 32 << 10: 1.3}, "concurrent": {**VM_CURVE, 32 << 10: 3.5}}
    frame = pd.concat([vm_frame(c, mode=m, seed=i, spreads={32 << 10: 0.65}, ranks=2)
                       for i, (m, c) in enumerate(curves.items())])
    steps = [f for f in latency(frame) if f.id == "cache_threshold" and f.numbers["size_bytes"] <= 128 << 10]
    assert len(steps) == 2 and len({f.numbers["size_bytes"] for f in steps}) == 1
    for f in steps:
        n = f.numbers
        assert n["from_size_bytes"] == 16 << 10 and n["size_bytes"] >= 64 << 10, n
        assert [u["size_bytes"] for u in n["unstable_sizes"]] == [32 << 10]
        assert "32 KiB left out" in f.summary and "65%" in f.summary


def test_one_rank_in_both_modes_is_one_experiment_told_once() -> None:
    frame = pd.concat([vm_frame(VM_CURVE, mode=m, seed=i) for i, m in enumerate(("concurrent", "serial"))])
    found = latency(frame)
    steps = [f.numbers for f in found if f.id == "cache_threshold"]
    assert {n["mode"] for n in steps} == {"concurrent and serial"}
    assert [(n["from_size_bytes"], n["size_bytes"]) for n in steps].count((512 << 10, 2 * MIB)) == 1
    (same,) = [f.numbers for f in found if f.id == "mode_divergence"]  # the two runs agree
    assert not same["claim"]

@pytest.mark.parametrize("noise,cpus", [(0.0, (0, 4, 8, 12)), (0.05, (0, 4, 8, 12)), (0.05, (0,))])
def test_flat_curve_claims_nothing(noise: float, cpus) -> None:
    df = latency_frame(lambda s, c: 80.0, cpus=cpus, noise=noise, seed=3)
    assert claims(latency(df)) == []


def test_within_run_spread_is_the_noise_of_a_single_run() -> None:
    # a 25 % step inside a +-15 % sample spread is not a transition; inside +-1 % it is
    curve = lambda s, c: 10.0 * (1.25 if s >= 128 * MIB else 1.0)  # noqa: E731
    wide = latency(latency_frame(curve, cpus=(0,), spread=0.15))
    assert [f for f in wide if f.id == "cache_threshold"] == []
    (f,) = [f for f in latency(latency_frame(curve, cpus=(0,), spread=0.01)) if f.id == "cache_threshold"]
    assert f.numbers["noise_rule"].startswith("within-run spread")


def test_a_single_run_without_spread_claims_nothing() -> None:
    odd = lambda s, c: stepped(s) * (0.6 if s == 512 * MIB else 1.0)  # noqa: E731
    assert claims(latency(latency_frame(odd, cpus=(0,)))) == []


def test_tlb_parts_4k_from_huge_pages_with_intervals() -> None:
    small = latency_frame(lambda s, c: stepped(s) * (1.3 if s >= 64 * MIB else 1.0), page="4k", noise=0.01)
    huge = latency_frame(stepped, page="2m", noise=0.01, seed=1)
    (f,) = [f for f in latency(pd.concat([small, huge])) if f.id == "tlb_cost"]
    n = f.numbers
    assert n["claim"] and n["onset_size_bytes"] == 64 * MIB and n["huge_page"] == "2m"
    assert n["max_ratio_low"] <= 1.3 <= n["max_ratio_high"] and n["max_ratio"] == pytest.approx(1.3, rel=0.03)
    assert n["onset_bytes_low"] <= 64 * MIB <= n["onset_bytes_high"]
    # the reach the onset implies, in 4 KiB entries
    assert n["tlb_entries_4k"] == 64 * MIB // 4096 and "at most about 16,384 entries of 4 KiB" in f.summary
    assert [f for f in latency(small) if f.id == "tlb_cost"] == []


def test_tlb_onset_on_a_coarse_grid_spans_a_size_step_either_side() -> None:
    """A 2x size grid, 4 KiB pages 1.3x from 64 MiB on, ranks alike to 1 %: the bootstrap finds
    the onset at 64 MiB in every draw, yet the grid cannot place it closer than 32 to 128 MiB."""
    small = latency_frame(lambda s, c: stepped(s) * (1.3 if s >= 64 * MIB else 1.0), page="4k", noise=0.01)
    huge = latency_frame(stepped, page="2m", noise=0.01, seed=1)
    (f,) = [f for f in latency(pd.concat([small, huge])) if f.id == "tlb_cost"]
    n = f.numbers
    assert n["onset_size_bytes"] == 64 * MIB
    assert n["onset_bytes_low"] <= 32 * MIB and n["onset_bytes_high"] >= 128 * MIB
    assert "widened to one size step" in n["onset_bytes_method"]


def test_tlb_peak_is_claimed_only_where_significant() -> None:
    """One run a page size: 4 KiB pages 1.3x from 64 MiB on (within-run spread 1 %), and at
    4 MiB 1.9x whose samples spread 5x either way: the peak and the half-way point are the
    planted 1.3x rise's, not the unstable size's (before: "peaks at 1.90x (0.01x to 270x)")."""
    small = latency_frame(lambda s, c: stepped(s) * (1.3 if s >= 64 * MIB else 1.9 if s == 4 * MIB else 1.0),
                          cpus=(0,), page="4k", spread=0.01)
    at = small["size_bytes"] == 4 * MIB
    small.loc[at, "latency_ns_min"] = small.loc[at, "latency_ns_median"] / 5
    small.loc[at, "latency_ns_max"] = small.loc[at, "latency_ns_median"] * 5
    huge = latency_frame(stepped, cpus=(0,), page="2m", spread=0.01)
    (f,) = [f for f in latency(pd.concat([small, huge])) if f.id == "tlb_cost"]
    n = f.numbers
    assert n["claim"] and n["peak_claimed"] and n["max_size_bytes"] >= 64 * MIB
    assert 1 < n["max_ratio_low"] <= 1.3 <= n["max_ratio_high"]
    assert 32 * MIB <= n["location_bytes_low"] <= n["location_bytes"] <= n["location_bytes_high"] <= 64 * MIB
    assert "at 4 MiB" not in f.summary and "peaks at 1.30x" in f.summary


def test_huge_pages_at_the_large_sizes_only_leave_the_small_caches_to_the_4k_curve() -> None:
    """The default sweep's shape: 4 KiB pages at every size, huge pages from 8 MiB on. The L2
    rise (1 to 2 MiB) is read off the 4 KiB curve, the L3 rise off both curves (each curve tells
    its own rise out of the L3), and the 4 KiB curve's extra cost from 64 MiB on is the TLB's,
    not a cache's."""
    def base(s: int, c: int = 0) -> float:
        return stepped(s) * (0.5 if s <= MIB else 1.0)
    small = latency_frame(lambda s, c: base(s) * (1.3 if s >= 64 * MIB else 1.0), page="4k", noise=0.01)
    huge = latency_frame(base, page="thp", noise=0.01, seed=1)
    found = latency(pd.concat([small, huge[huge["size_bytes"] >= 8 * MIB]]))
    steps = {(f.numbers["page_size"], f.numbers["matched_cache"]) for f in found if f.id == "cache_threshold"}
    assert steps == {("4k", "L2 (per core)"), ("4k", "L3 (per L3 group, 4 cores)"), ("thp", "L3 (per L3 group, 4 cores)")}
    assert all(f.numbers["from_size_bytes"] < 64 * MIB for f in found if f.id == "cache_threshold")
    (tlb,) = [f for f in found if f.id == "tlb_cost"]
    assert tlb.numbers["claim"] and tlb.numbers["onset_size_bytes"] == 64 * MIB


def test_mode_divergence_onset_with_interval() -> None:
    serial = latency_frame(stepped, mode="serial", noise=0.01)
    conc = latency_frame(lambda s, c: stepped(s) * (1.5 if s >= 64 * MIB else 1.0), mode="concurrent", noise=0.01,
                         seed=1)
    found = [f for f in latency(pd.concat([serial, conc])) if f.id == "mode_divergence"]
    per_group = [f for f in found if "l3_position" in f.numbers]
    assert per_group and {f.numbers["onset_size_bytes"] for f in per_group} == {64 * MIB}
    for f in per_group:
        assert f.numbers["plateau_ratio_low"] <= 1.5 <= f.numbers["plateau_ratio_high"]
    assert [f for f in latency(serial) if f.id == "mode_divergence"] == []


def test_equal_modes_are_said_alike() -> None:
    df = pd.concat([latency_frame(stepped, mode="serial", noise=0.02),
                    latency_frame(stepped, mode="concurrent", noise=0.02, seed=1)])
    found = [f for f in latency(df) if f.id == "mode_divergence"]
    assert found and not claims(found) and all(f.numbers["onset_size_bytes"] is None for f in found)


def test_domain_asymmetry_by_l3_group() -> None:
    # cpus 0 and 8 sit on the first L3 group of their node; they are 40 % slower from 256 MiB
    slow = lambda s, c: stepped(s) * (1.4 if s >= 256 * MIB and c % 8 == 0 else 1.0)  # noqa: E731
    (f,) = [f for f in latency(latency_frame(slow, mode="concurrent", noise=0.01)) if f.id == "domain_asymmetry"]
    n = f.numbers
    assert n["asymmetric"] and n["cpus_a"] == [0, 8] and n["cpus_b"] == [4, 12]
    assert n["onset_size_bytes"] == 256 * MIB and n["plateau_from_size_bytes"] == 256 * MIB
    assert n["plateau_ratio"] == pytest.approx(1.4, rel=0.02) and n["plateau_ratio_low"] > 1.1
    (flat,) = [f for f in latency(latency_frame(stepped, noise=0.01)) if f.id == "domain_asymmetry"]
    assert not flat.numbers["asymmetric"]
    assert [f for f in latency(latency_frame(stepped, noise=0.01), None) if f.id == "domain_asymmetry"] == []


def test_outlier_found_with_rank_size_and_interval() -> None:
    cpus = (0, 1, 2, 3, 8, 9, 10, 11)  # four comparable ranks per node, all on the first L3 group
    odd = lambda s, c: stepped(s) * (1.5 if (s, c) == (128 * MIB, 2) else 1.0)  # noqa: E731
    found = [f for f in latency(latency_frame(odd, cpus=cpus, noise=0.01)) if f.id == "anomaly"]
    assert [(f.numbers["rank"], f.numbers["size_bytes"]) for f in found] == [(2, 128 * MIB)]
    assert found[0].numbers["relative_low"] > 1.1
    assert [f for f in latency(latency_frame(stepped, cpus=cpus, noise=0.01)) if f.id == "anomaly"] == []


def test_impossible_latency_is_refused_with_line_and_column() -> None:
    df = latency_frame(stepped, noise=0.01)
    df.loc[5, "latency_ns_median"] = 0.0
    with pytest.raises(NumasweepError, match="line 7 column latency_ns_median"):
        latency(df)


def test_latency_locality_with_distances() -> None:
    df = latency_frame(lambda s, c: 100.0 if c < 8 else 150.0, mem=0)
    (f,) = locality.latency_locality(df, topo_two_nodes())
    assert (f.numbers["fastest_cpu_node"], f.numbers["slowest_cpu_node"]) == (0, 1)
    assert f.numbers["ratio_slowest_fastest"] == pytest.approx(1.5)
    assert f.numbers["distance_order_agrees"] is True
    assert locality.latency_locality(latency_frame(stepped), topo_two_nodes()) == []


def test_latency_locality_never_pools_ranks_of_different_configurations() -> None:
    """A 4-rank run over both nodes (node 0 nearer node 0's memory, and faster) beside a 6-rank run
    on node 0 alone, loaded and slow: pooled, node 0 would read slower than node 1 against the
    distances; kept apart, the 4-rank run agrees with them and the 6-rank run, one node only,
    compares nothing."""
    light = latency_frame(lambda s, c: 100.0 if c < 8 else 150.0, mem=0)
    loaded = latency_frame(lambda s, c: 400.0, cpus=(1, 2, 3, 5, 6, 7), mem=0)
    found = locality.latency_locality(pd.concat([light, loaded], ignore_index=True), topo_two_nodes())
    assert [f.id for f in found] == ["latency_locality"]
    (f,) = found
    assert f.numbers["latency_ns"] == {0: 100.0, 1: 150.0} and f.numbers["distance_order_agrees"] is True
    assert f.numbers["config"] == "4 ranks" and f.title.endswith("(4 ranks)") and "4 ranks" in f.summary


# ------------------------------------------------------------ bandwidth, copy, GPU, placement

def bandwidth_frame(peak_threads: int, mem: int, scale: float, reps: int = 3) -> pd.DataFrame:
    """Bandwidth rising linearly to `peak_threads` and flat beyond, x `scale`; each repetition
    off by a fixed +-1 % pattern (a stated model, not a measurement)."""
    jitter = (1.0, 1.01, 0.99, 1.005, 0.995)
    return pd.DataFrame([{"kernel": "triad", "threads": t, "cpu_nodes": 0, "mem_nodes": mem, "policy": "bind",
                          "repetition": r, "best_mb_s": scale * 1000 * min(t, peak_threads) * jitter[(r + 2 * t + mem) % 5]}
                         for r in range(reps) for t in range(1, 9)])


def test_bandwidth_saturation_and_ratio() -> None:
    df = pd.concat([bandwidth_frame(3, 0, 1.0), bandwidth_frame(3, 1, 0.5)])
    sat = bw_findings.bandwidth_saturation(df, topo_two_nodes())
    assert [f.numbers["saturation_threads"] for f in sat] == [3, 3]
    for f in sat:
        n = f.numbers
        assert n["claim"] and n["saturation_threads_low"] <= 3 <= n["saturation_threads_high"]
        assert n["plateau_mb_s_low"] < n["plateau_mb_s"] < n["plateau_mb_s_high"]
        assert "interval" in f.summary
    (loc,) = bw_findings.bandwidth_locality(df, topo_two_nodes())
    n = loc.numbers
    assert n["claim"] and n["ratio"] == pytest.approx(0.5, rel=0.02) and n["ratio_low"] < 0.5 < n["ratio_high"]
    assert (n["distance_local"], n["distance_remote"]) == (10, 20) and n["distance_order_agrees"] is True
    assert f"{n['ratio']:.2f}x" in loc.summary and "interval" in loc.summary


def test_bandwidth_alike_sides_claim_nothing() -> None:
    df = pd.concat([bandwidth_frame(3, 0, 1.0), bandwidth_frame(3, 1, 1.02)])
    (loc,) = bw_findings.bandwidth_locality(df, topo_two_nodes())
    assert not loc.numbers["claim"] and loc.numbers["equivalent"] and "equivalent" in loc.summary
    one = bandwidth_frame(3, 0, 1.0, reps=1).drop(columns="repetition")
    (sat,) = bw_findings.bandwidth_saturation(one, topo_two_nodes())
    assert not sat.numbers["claim"] and "noise unknown" in sat.summary


def test_faster_remote_memory_contradicts_the_distances() -> None:
    df = pd.concat([bandwidth_frame(3, 0, 1.0), bandwidth_frame(3, 1, 1.3)])
    found = bw_findings.bandwidth_locality(df, topo_two_nodes())
    (order,) = [f for f in found if f.id == "bandwidth_ordering"]
    assert order.numbers["ratio_low"] > 1.1 and "contradicts the firmware distances" in order.summary


@pytest.mark.parametrize("grid_memory", [False, True])
def test_best_weights(grid_memory: bool) -> None:
    # grid_memory: the workflow's table, with each job's memory spec (weighted:0,1@3,1) as a column
    rows = [{"threads": t, "cpu_nodes": 0, "mem_nodes": "0,1", "policy": "weighted", "weights": w, "repetition": r,
             "best_mb_s": v * t * (1 + 0.01 * ((r + 2 * t + i) % 3)),
             **({"memory": f"weighted:0,1@{w}"} if grid_memory else {})}
            for i, (w, v) in enumerate((("1,1", 900.0), ("3,1", 1200.0), ("1,3", 700.0)))
            for t in (1, 2, 4) for r in range(3)]
    (found,) = [f for f in bw_findings.bandwidth_locality(pd.DataFrame(rows), topo_two_nodes())
                if f.id == "bandwidth_weights"]
    n = found.numbers
    assert (n["best_weights"], n["worst_weights"]) == ("3,1", "1,3") and n["claim"]
    assert n["ratio_low"] < 1200 / 700 < n["ratio_high"]


def test_copy_matrix() -> None:
    rows = [{"src_node": s, "dst_node": d, "repetition": r, "best_gb_s": (20.0 if s == d else 10.0) * (1 + 0.01 * r)}
            for s in (0, 1) for d in (0, 1) for r in range(3)]
    (f,) = copy_bench.copy_matrix(pd.DataFrame(rows), topo_two_nodes())
    n = f.numbers
    assert n["local_median_gb_s"] == pytest.approx(20.2) and n["cross_median_gb_s"] == pytest.approx(10.1)
    assert n["claim"] and n["cross_to_local"] == pytest.approx(0.5) and "0.50x" in f.summary


def test_gpu_plateau_pinned_and_weights() -> None:
    rows = []
    for pinned, scale in (("1", 1.0), ("0", 0.5)):
        for weight, wscale in (("1,1", 1.0), ("1,3", 0.8)):
            for k in range(10, 30, 2):
                bw = scale * wscale * 50.0 * min(1.0, 2 ** (k - 20))
                rows.append({"access_size(bytes)": 1 << k, "read_bw(gib/s)": bw, "write_bw(gib/s)": bw,
                             "policy": "weighted", "numa_nodes": "0,1", "numa_weight": weight, "pinned": pinned})
    found = gpu_xfer.gpu_transfers(pd.DataFrame(rows), topo_two_nodes())
    plateaus = [f for f in found if f.id == "gpu_plateau" and f.numbers["pinned"] == "pinned"
                and f.numbers["numa_weight"] == "1,1"]
    assert {f.numbers["from_size_bytes"] for f in plateaus} == {1 << 20}
    assert {round(f.numbers["plateau_gib_s"], 1) for f in plateaus} == {50.0}
    assert all(f.numbers["ratio"] == pytest.approx(2.0) for f in found if f.id == "gpu_pinned")
    assert {f.numbers["best_weights"] for f in found if f.id == "gpu_weights"} == {"1,1"}


def test_gpu_claims_carry_an_interval_over_runs_or_say_there_is_none() -> None:
    """Planted: pinned plateau 50 GiB/s, pageable 20, weights 1,3 at 0.8x, each run (repetition)
    off by a few percent. With three runs every plateau, pinned/pageable and best-weights claim
    has a 95% interval over the runs that holds the planted value; with one run each says
    "one run: no interval"."""
    def table(runs: int) -> pd.DataFrame:
        rows = []
        for pinned, scale in (("1", 50.0), ("0", 20.0)):
            for weight, wscale in (("1,1", 1.0), ("1,3", 0.8)):
                for rep in range(runs):
                    drift = (1.0, 1.03, 0.975)[rep]
                    for k in range(10, 30, 2):
                        bw = scale * wscale * drift * min(1.0, 2 ** (k - 20)) * (1 + 0.002 * (k % 3))
                        rows.append({"access_size(bytes)": 1 << k, "read_bw(gib/s)": bw, "write_bw(gib/s)": bw,
                                     "policy": "weighted", "numa_nodes": "0,1", "numa_weight": weight,
                                     "pinned": pinned, "repetition": rep})
        return pd.DataFrame(rows)

    found = gpu_xfer.gpu_transfers(table(3), topo_two_nodes())
    planted = {("gpu_plateau", "1", "1,1"): 50.0, ("gpu_plateau", "0", "1,1"): 20.0,
               ("gpu_plateau", "1", "1,3"): 40.0, ("gpu_plateau", "0", "1,3"): 16.0}
    claims = [f for f in found if f.id in ("gpu_plateau", "gpu_pinned", "gpu_weights")]
    assert {f.id for f in claims} == {"gpu_plateau", "gpu_pinned", "gpu_weights"}
    for f in claims:
        n = f.numbers
        # the findings say the words the kernel's 1/0 mean
        pin = {"pinned": "1", "pageable": "0"}.get(n.get("pinned"), n.get("pinned"))
        truth = {"gpu_pinned": 2.5, "gpu_weights": 1.25}.get(f.id) or planted[(f.id, pin, n["numa_weight"])]
        low, high = n["low"], n["high"]
        # three runs: the model's interval of a median (Shamos' sigma, 2 df) is some +-10 % wide
        assert low < truth < high and high / low < 1.25, (f.summary, n)
        assert "95% interval" in f.summary and "no interval" not in f.summary
    for f in gpu_xfer.gpu_transfers(table(1), topo_two_nodes()):
        if f.id in ("gpu_plateau", "gpu_pinned", "gpu_weights"):
            assert "(one run: no interval)" in f.summary, f.summary


def test_a_gpu_curve_that_falls_back_at_large_sizes_peaks_and_says_where_it_ends() -> None:
    """Planted: pageable copies rising to 20 GiB/s at 1 MiB, then falling to 10 GiB/s at 256 MiB
    (as pageable copies did on an H100 guest); pinned ones rising to a 50 GiB/s plateau. Only the
    pinned curve is said to hold a plateau "from S on"."""
    rows = []
    for k in range(12, 29):
        size = 1 << k
        pageable = 20.0 * min(1.0, 2 ** (k - 20)) * (1.0 if k <= 20 else 0.5 ** ((k - 20) / 8))
        pinned = 50.0 * min(1.0, 2 ** (k - 22))
        for pin, bw in (("0", pageable), ("1", pinned)):
            rows.append({"access_size(bytes)": size, "read_bw(gib/s)": bw, "policy": "local", "numa_nodes": "",
                         "numa_weight": "", "pinned": pin})
    found = {f.numbers["pinned"]: f for f in gpu_xfer.gpu_transfers(pd.DataFrame(rows)) if f.id == "gpu_plateau"}
    falls, holds = found["pageable"], found["pinned"]
    assert not falls.numbers["plateau_holds"] and holds.numbers["plateau_holds"]
    assert "peak at 20.0 GiB/s" in falls.summary and "from" not in falls.summary
    assert "move 10.0 GiB/s (one run: no interval) at the largest size, 256 MiB" in falls.summary
    assert falls.numbers["large_gib_s"] == pytest.approx(10.0) and holds.numbers["large_gib_s"] == pytest.approx(50.0)
    assert "reach a plateau of 50.0 GiB/s (one run: no interval) from 4 MiB on" in holds.summary
    # pinned against pageable where large copies are: 50 against 10 GiB/s, not against the 20 GiB/s peak
    (ratio,) = [f for f in gpu_xfer.gpu_transfers(pd.DataFrame(rows)) if f.id == "gpu_pinned"]
    assert ratio.numbers["ratio"] == pytest.approx(5.0) and "large copies host to device" in ratio.summary


def test_placement_flags_ranks_below_threshold() -> None:
    df = latency_frame(stepped, cpus=(0, 8))
    df["page_fractions"] = np.where(df["rank"] == 1, "0:0.0500,1:0.9500", "0:1.0000,1:0.0000")
    (f,) = analysis.placement_verification({"latency": df})
    assert (f.numbers["checked"], f.numbers["flagged"]) == (2, 1)
    assert f.numbers["min_fraction"] == pytest.approx(0.95)
    assert analysis.placement_verification({"latency": latency_frame(stepped)}) == []


def test_absent_data_gives_nothing() -> None:
    for fn in (*lat_findings.LATENCY_ANALYSES, bw_findings.bandwidth_saturation,
               bw_findings.bandwidth_locality, copy_bench.copy_matrix, gpu_xfer.gpu_transfers):
        assert fn(None, None) == [] and fn(pd.DataFrame(), None) == []


# ------------------------------------------------------------ the seeds' examples

def by_id(result: dict, id_: str) -> list[dict]:
    return [f for f in result["findings"] if f["id"] == id_]


@pytest.fixture(scope="module")
def lumi(repo: Path) -> dict:
    return analysis.analyse(repo / "examples/lumi-g")


def test_lumi_g_one_l3_transition_per_mode_and_no_per_node_l3(lumi: dict) -> None:
    steps = by_id(lumi, "cache_threshold")
    for mode in ("concurrent", "serial"):
        l3 = [f["numbers"] for f in steps if f["numbers"]["mode"] == mode and f["numbers"]["cache_bytes"] == 32 * MIB]
        assert len(l3) == 1 and l3[0]["from_size_bytes"] <= 16 * MIB and l3[0]["size_bytes"] >= 64 * MIB
        assert l3[0]["step_ratio_low"] > 1.2
    assert not [f for f in steps if f["numbers"]["cache_bytes"] == 64 * MIB or "node" in f["title"]]


def test_lumi_g_first_ccd_slower_when_concurrent_only(lumi: dict) -> None:
    conc, ser = (next(f for f in by_id(lumi, "domain_asymmetry") if f["numbers"]["mode"] == m)
                 for m in ("concurrent", "serial"))
    n = conc["numbers"]
    assert n["asymmetric"] and n["cpus_a"] == [1, 17, 33, 49] and n["cpus_b"] == [9, 25, 41, 57]
    assert (n["plateau_from_size_bytes"], n["plateau_to_size_bytes"]) == (1024 * MIB, 8192 * MIB)
    assert 1.40 < n["plateau_ratio"] < 1.55 and n["plateau_ratio_low"] > 1.3   # the seed: about 47 %
    assert not ser["numbers"]["asymmetric"] and ser["numbers"]["equivalent"]


def test_lumi_g_modes_diverge_on_the_first_ccd(lumi: dict) -> None:
    first = next(f for f in by_id(lumi, "mode_divergence") if f["numbers"].get("l3_position") == 0)
    n = first["numbers"]
    assert n["cpus"] == [1, 17, 33, 49] and 256 * MIB <= n["onset_size_bytes"] <= 2048 * MIB
    assert n["onset_bytes_low"] <= n["onset_size_bytes"] <= n["onset_bytes_high"]
    second = next(f for f in by_id(lumi, "mode_divergence") if f["numbers"].get("l3_position") == 1)
    assert not second["numbers"]["claim"] and second["numbers"]["equivalent"]


def test_lumi_g_node0_inversion_is_an_anomaly(lumi: dict) -> None:
    inv = [f for f in by_id(lumi, "anomaly") if f["numbers"].get("kind") == "inversion"]
    assert [(f["numbers"]["cpu_node"], f["numbers"]["size_bytes"]) for f in inv] == [(0, 16384 * MIB)]
    assert inv[0]["numbers"]["relative_high"] < 1


def test_lumi_g_remote_node3_memory(repo: Path) -> None:
    (f,) = by_id(analysis.analyse(repo / "examples/lumi-g-remote"), "latency_locality")
    n = f["numbers"]
    assert (n["mem_node"], n["fastest_cpu_node"], n["slowest_cpu_node"]) == (3, 3, 0)
    assert 1.1 < n["ratio_slowest_fastest"] < 1.25
    assert 1.05 < n["geomean_ratio_low"] <= n["geomean_ratio"] <= n["geomean_ratio_high"] < 1.3
    assert f"{n['ratio_slowest_fastest']:.2f}x" in f["summary"]


def test_ulisse_saturation_and_other_socket(repo: Path) -> None:
    result = analysis.analyse(repo / "examples/ulisse")
    # the seed's table has one run per thread count and no spread: the knee is read, nothing claimed
    sat = by_id(result, "bandwidth_saturation")
    assert {f["numbers"]["saturation_threads"] for f in sat} == {3}
    assert not any(f["numbers"]["claim"] for f in sat) and all("noise unknown" in f["summary"] for f in sat)
    (loc,) = by_id(result, "bandwidth_locality")
    assert 0.75 < loc["numbers"]["ratio"] < 0.85 and not loc["numbers"]["claim"]
    assert (loc["numbers"]["distance_local"], loc["numbers"]["distance_remote"]) == (10, 11)


def test_cli_writes_findings(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "findings.json"
    assert analysis.main(["--results", str(repo / "examples/ulisse"), "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["system"] == "ulisse"
    assert all(set(f) == {"id", "bench", "title", "summary", "numbers", "evidence"} for f in data["findings"])


def test_missing_results_folder(tmp_path: Path) -> None:
    with pytest.raises(NumasweepError, match="no such results folder"):
        analysis.analyse(tmp_path / "nope")
    with pytest.raises(NumasweepError, match="no aggregated"):
        analysis.analyse(tmp_path)


def _one_rank_modes(reps: int, seed: int = 5) -> pd.DataFrame:
    """Model data: one rank, concurrent and serial runs; the concurrent runs read 0.63x at 32 and
    64 MiB (what one run a side on a shared VM showed), with a tight 1 % within-run spread."""
    rng = np.random.default_rng(seed)
    rows = []
    for rep in range(reps):
        for mode in ("concurrent", "serial"):
            for i, size in enumerate(1 << np.arange(14, 29)):
                base = 2.0 * (1.35 ** i) * (0.63 if mode == "concurrent" and size in (32 << 20, 64 << 20) else 1.0)
                med = base * float(np.exp(rng.normal(0, 0.003)))
                rows.append({"rank": 0, "ranks": 1, "mode": mode, "cpu": 0, "cpu_node": 0, "l3_group": 0,
                             "size_bytes": int(size), "latency_ns_median": med, "latency_ns_min": med * 0.995,
                             "latency_ns_max": med * 1.005, "samples": 5, "repetition": rep})
    return pd.DataFrame(rows)


def test_one_run_a_side_claims_no_mode_difference_from_the_within_run_noise():
    """A claim states its ratio with an interval: with one run a side there is none between runs,
    so sizes that differ only beyond the within-run spread are held back, and said so."""
    (one,) = [f for f in lat_findings.latency_findings(_one_rank_modes(1)) if f.id == "mode_divergence"]
    assert one.numbers["claim"] is False and one.numbers["unclaimed"], one.summary
    assert "nothing is claimed" in one.summary and "between runs is unknown" in one.summary
    (three,) = [f for f in lat_findings.latency_findings(_one_rank_modes(3)) if f.id == "mode_divergence"]
    assert three.numbers["claim"] is True and three.numbers["plateau_ratio_high"] < 0.7, three.summary


def test_findings_json_text_reads_back_the_same_with_an_evidence_row_a_line() -> None:
    """`analysis.json_text`: what json.loads gives back is the value written; evidence rows
    (flat objects) take one line each, nested objects and lists a line an item."""
    value = {"system": "x", "findings": [
        {"id": "placement", "numbers": {"checked": 3, "min_fraction": 0.5, "none": None, "flags": [True, False]},
         "evidence": [{"rank": r, "fraction": 0.5 + r / 10, "mode": "serial"} for r in range(3)]},
        {"id": "empty", "numbers": {}, "evidence": []}]}
    text = analysis.json_text(value)
    assert json.loads(text) == value
    lines = text.splitlines()
    assert sum(line.strip().startswith('{"rank"') for line in lines) == 3
    assert ' "findings": [' in lines and '    "checked": 3,' in lines
