"""Findings: synthetic curves with known answers, and what the seeds' examples must show."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numasweep import analysis
from numasweep.errors import NumasweepError

MIB = 1 << 20
SIZES = [MIB << k for k in range(11)]  # 1 MiB .. 1 GiB


def topo_two_nodes() -> dict:
    """2 nodes x 2 L3 groups x 4 cores, L2 1 MiB per core, L3 16 MiB per group (32 MiB per node)."""
    cores = list(range(16))
    return {
        "system": "synthetic", "threads_per_core": 1,
        "nodes": [{"id": 0, "cpus": cores[:8]}, {"id": 1, "cpus": cores[8:]}],
        "distances": [[10, 20], [20, 10]],
        "caches": [{"level": 2, "type": "Unified", "size_bytes": MIB, "instances": [[c] for c in cores]},
                   {"level": 3, "type": "Unified", "size_bytes": 16 * MIB,
                    "instances": [cores[i:i + 4] for i in range(0, 16, 4)]}],
        "l3_groups": [cores[i:i + 4] for i in range(0, 16, 4)],
        "smt_siblings": [[c] for c in cores],
    }


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


# ------------------------------------------------------------ thresholds

def test_known_steps_matched_to_caches() -> None:
    found = [f for f in analysis.cache_thresholds(latency_frame(stepped), topo_two_nodes())
             if f.id == "cache_threshold"]
    got = {(f.numbers["size_bytes"], f.numbers["matched_cache"]) for f in found}
    assert got == {(16 * MIB, "L3 per L3 group"), (32 * MIB, "L3 per node, 2 L3 groups")}
    for f in found:
        assert f"{f.numbers['step_ratio']:.2f}x" in f.summary
        assert len(f.evidence) == 4


def test_step_between_cache_sizes_is_unmatched() -> None:
    curve = lambda s, c: 10.0 * (1.5 if s >= 256 * MIB else 1.0)  # noqa: E731
    (f,) = [f for f in analysis.cache_thresholds(latency_frame(curve), topo_two_nodes()) if f.id == "cache_threshold"]
    assert f.numbers["size_bytes"] == 256 * MIB and f.numbers["matched_cache"] is None
    assert "no cache size" in f.summary


@pytest.mark.parametrize("noise,cpus", [(0.0, (0, 4, 8, 12)), (0.05, (0, 4, 8, 12)), (0.05, (0,))])
def test_flat_curve_has_no_threshold(noise: float, cpus) -> None:
    df = latency_frame(lambda s, c: 80.0, cpus=cpus, noise=noise, seed=3)
    assert analysis.cache_thresholds(df, topo_two_nodes()) == []


def test_sample_spread_sets_noise() -> None:
    # a 25 % step inside a +-15 % sample spread is not a threshold; without the spread it is
    curve = lambda s, c: 10.0 * (1.25 if s >= 128 * MIB else 1.0)  # noqa: E731
    assert ids(analysis.cache_thresholds(latency_frame(curve, spread=0.15), topo_two_nodes())) == []
    found = analysis.cache_thresholds(latency_frame(curve, spread=0.01), topo_two_nodes())
    assert [f.numbers["noise_rule"] for f in found if f.id == "cache_threshold"] == ["sample spread"]


def test_tlb_cost_from_page_sizes() -> None:
    small = latency_frame(lambda s, c: stepped(s) * (1.3 if s >= 64 * MIB else 1.0), page="4k")
    huge = latency_frame(stepped, page="2m")
    (f,) = analysis.tlb_cost(pd.concat([small, huge]), topo_two_nodes())
    assert f.numbers["onset_size_bytes"] == 64 * MIB and f.numbers["max_ratio"] == pytest.approx(1.3)
    assert analysis.tlb_cost(small, topo_two_nodes()) == []


# ------------------------------------------------------------ modes, L3 groups, anomalies

def test_mode_divergence_onset() -> None:
    serial = latency_frame(stepped, mode="serial")
    conc = latency_frame(lambda s, c: stepped(s) * (1.5 if s >= 64 * MIB else 1.0), mode="concurrent")
    found = analysis.mode_divergence(pd.concat([serial, conc]), topo_two_nodes())
    per_group = [f for f in found if "l3_position" in f.numbers]
    assert {f.numbers["onset_size_bytes"] for f in per_group} == {64 * MIB}
    assert analysis.mode_divergence(serial, topo_two_nodes()) == []


def test_no_mode_divergence_when_equal() -> None:
    df = pd.concat([latency_frame(stepped, mode="serial"), latency_frame(stepped, mode="concurrent", noise=0.02)])
    assert all(f.numbers.get("onset_size_bytes") is None for f in analysis.mode_divergence(df, topo_two_nodes()))


def test_domain_asymmetry_by_l3_group() -> None:
    # cpus 0 and 8 sit on the first L3 group of their node; they are 40 % slower from 256 MiB
    slow = lambda s, c: stepped(s) * (1.4 if s >= 256 * MIB and c % 8 == 0 else 1.0)  # noqa: E731
    (f,) = analysis.domain_asymmetry(latency_frame(slow, mode="concurrent"), topo_two_nodes())
    assert f.numbers["asymmetric"] and f.numbers["slow_cpus"] == [0, 8] and f.numbers["fast_cpus"] == [4, 12]
    assert f.numbers["onset_size_bytes"] == 256 * MIB
    assert f.numbers["plateau_from_size_bytes"] == 256 * MIB
    assert f.numbers["plateau_median_ratio"] == pytest.approx(1.4)
    (flat,) = analysis.domain_asymmetry(latency_frame(stepped), topo_two_nodes())
    assert not flat.numbers["asymmetric"]
    assert analysis.domain_asymmetry(latency_frame(stepped), {}) == []


def test_anomaly_point_found_with_rank_and_size() -> None:
    cpus = (0, 1, 2, 3, 8, 9, 10, 11)  # four comparable ranks per node, all on the first L3 group
    odd = lambda s, c: stepped(s) * (1.5 if (s, c) == (128 * MIB, 2) else 1.0)  # noqa: E731
    found = [f for f in analysis.anomalies(latency_frame(odd, cpus=cpus, noise=0.01), topo_two_nodes())]
    assert [(f.numbers["rank"], f.numbers["size_bytes"]) for f in found] == [(2, 128 * MIB)]
    assert analysis.anomalies(latency_frame(stepped, cpus=cpus, noise=0.01), topo_two_nodes()) == []


def test_anomaly_on_lonely_curve_that_falls() -> None:
    odd = lambda s, c: stepped(s) * (0.6 if s == 512 * MIB else 1.0)  # noqa: E731
    (f,) = analysis.anomalies(latency_frame(odd, cpus=(0,)), topo_two_nodes())
    assert f.numbers["size_bytes"] == 512 * MIB and f.numbers["reference"] == "previous size of the same rank"


def test_latency_locality_with_distances() -> None:
    df = latency_frame(lambda s, c: 100.0 if c < 8 else 150.0, mem=0)
    (f,) = analysis.latency_locality(df, topo_two_nodes())
    assert (f.numbers["fastest_cpu_node"], f.numbers["slowest_cpu_node"]) == (0, 1)
    assert f.numbers["ratio_slowest_fastest"] == pytest.approx(1.5)
    assert f.numbers["distance_order_agrees"] is True
    assert analysis.latency_locality(latency_frame(stepped), topo_two_nodes()) == []


# ------------------------------------------------------------ bandwidth, copy, GPU, placement

def bandwidth_frame(peak_threads: int, mem: int, scale: float) -> pd.DataFrame:
    return pd.DataFrame([{"kernel": "triad", "threads": t, "cpu_nodes": 0, "mem_nodes": mem, "policy": "bind",
                          "best_mb_s": scale * 1000 * min(t, peak_threads)} for t in range(1, 9)])


def test_bandwidth_saturation_and_ratio() -> None:
    df = pd.concat([bandwidth_frame(3, 0, 1.0), bandwidth_frame(3, 1, 0.5)])
    sat = analysis.bandwidth_saturation(df, topo_two_nodes())
    assert [f.numbers["saturation_threads"] for f in sat] == [3, 3]
    (loc,) = analysis.bandwidth_locality(df, topo_two_nodes())
    assert loc.numbers["peak_ratio"] == pytest.approx(0.5)
    assert (loc.numbers["distance_local"], loc.numbers["distance_remote"]) == (10, 20)


def test_best_weights() -> None:
    rows = [{"threads": 4, "cpu_nodes": 0, "mem_nodes": "0,1", "policy": "weighted", "weights": w,
             "best_mb_s": v} for w, v in (("1,1", 900.0), ("3,1", 1200.0), ("1,3", 700.0))]
    found = [f for f in analysis.bandwidth_locality(pd.DataFrame(rows), topo_two_nodes())
             if f.id == "bandwidth_weights"]
    assert found[0].numbers["best_weights"] == "3,1"


def test_copy_matrix() -> None:
    rows = [{"src_node": s, "dst_node": d, "best_gb_s": 20.0 if s == d else 10.0} for s in (0, 1) for d in (0, 1)]
    (f,) = analysis.copy_matrix(pd.DataFrame(rows), topo_two_nodes())
    assert f.numbers["local_median_gb_s"] == 20.0 and f.numbers["cross_median_gb_s"] == 10.0


def test_gpu_plateau_pinned_and_weights() -> None:
    rows = []
    for pinned, scale in (("1", 1.0), ("0", 0.5)):
        for weight, wscale in (("1,1", 1.0), ("1,3", 0.8)):
            for k in range(10, 30, 2):
                bw = scale * wscale * 50.0 * min(1.0, 2 ** (k - 20))
                rows.append({"access_size(bytes)": 1 << k, "read_bw(gib/s)": bw, "write_bw(gib/s)": bw,
                             "policy": "weighted", "numa_nodes": "0,1", "numa_weight": weight, "pinned": pinned})
    found = analysis.gpu_transfers(pd.DataFrame(rows), topo_two_nodes())
    plateaus = [f for f in found if f.id == "gpu_plateau" and f.numbers["pinned"] == "1"
                and f.numbers["numa_weight"] == "1,1"]
    assert {f.numbers["from_size_bytes"] for f in plateaus} == {1 << 20}
    assert {round(f.numbers["plateau_gib_s"], 1) for f in plateaus} == {50.0}
    assert all(f.numbers["ratio"] == pytest.approx(2.0) for f in found if f.id == "gpu_pinned")
    assert {f.numbers["best_weights"] for f in found if f.id == "gpu_weights"} == {"1,1"}


def test_placement_flags_ranks_below_threshold() -> None:
    df = latency_frame(stepped, cpus=(0, 8))
    df["page_fractions"] = np.where(df["rank"] == 1, "0:0.0500,1:0.9500", "0:1.0000,1:0.0000")
    (f,) = analysis.placement_verification({"latency": df}, topo_two_nodes())
    assert (f.numbers["checked"], f.numbers["flagged"]) == (2, 1)
    assert f.numbers["min_fraction"] == pytest.approx(0.95)
    assert analysis.placement_verification({"latency": latency_frame(stepped)}, topo_two_nodes()) == []


def test_absent_data_gives_nothing() -> None:
    for fn in (*analysis.LATENCY_ANALYSES, analysis.bandwidth_saturation, analysis.bandwidth_locality,
               analysis.copy_matrix, analysis.gpu_transfers):
        assert fn(None, {}) == [] and fn(pd.DataFrame(), {}) == []


# ------------------------------------------------------------ the seeds' examples

def by_id(result: dict, id_: str) -> list[dict]:
    return [f for f in result["findings"] if f["id"] == id_]


@pytest.fixture(scope="module")
def lumi(repo: Path) -> dict:
    return analysis.analyse(repo / "examples/lumi-g")


def test_lumi_g_l3_steps(lumi: dict) -> None:
    for mode in ("concurrent", "serial"):
        got = {f["numbers"]["size_bytes"]: f["numbers"]["matched_cache"] for f in by_id(lumi, "cache_threshold")
               if f["numbers"]["mode"] == mode}
        assert got[32 * MIB] == "L3 per L3 group" and got[64 * MIB] == "L3 per node, 2 L3 groups"


def test_lumi_g_first_ccd_slower_when_concurrent_only(lumi: dict) -> None:
    conc, ser = (next(f for f in by_id(lumi, "domain_asymmetry") if f["numbers"]["mode"] == m)
                 for m in ("concurrent", "serial"))
    n = conc["numbers"]
    assert n["asymmetric"] and n["slow_cpus"] == [1, 17, 33, 49] and n["fast_cpus"] == [9, 25, 41, 57]
    assert n["plateau_from_size_bytes"] == 1024 * MIB
    assert 1.5 < n["max_ratio"] < 1.7
    assert not ser["numbers"]["asymmetric"]


def test_lumi_g_modes_diverge_from_128_mib(lumi: dict) -> None:
    onset = next(f for f in by_id(lumi, "mode_divergence") if "groups" in f["numbers"])
    assert onset["numbers"]["onset_size_bytes"] == 128 * MIB
    first = next(f for f in by_id(lumi, "mode_divergence") if f["numbers"].get("l3_position") == 0)
    assert first["numbers"]["cpus"] == [1, 17, 33, 49] and first["numbers"]["onset_size_bytes"] == 128 * MIB


def test_lumi_g_node0_inversion_is_an_anomaly(lumi: dict) -> None:
    inv = [f for f in by_id(lumi, "anomaly") if f["numbers"].get("kind") == "inversion"]
    assert [(f["numbers"]["cpu_node"], f["numbers"]["size_bytes"]) for f in inv] == [(0, 16384 * MIB)]
    points = {(f["numbers"]["rank"], f["numbers"]["size_bytes"]) for f in by_id(lumi, "anomaly")
              if "rank" in f["numbers"]}
    assert {(0, 16384 * MIB), (1, 16384 * MIB)} <= points


def test_lumi_g_remote_node3_memory(repo: Path) -> None:
    (f,) = by_id(analysis.analyse(repo / "examples/lumi-g-remote"), "latency_locality")
    n = f["numbers"]
    assert (n["mem_node"], n["fastest_cpu_node"], n["slowest_cpu_node"]) == (3, 3, 0)
    assert 1.1 < n["ratio_slowest_fastest"] < 1.25
    assert f"{n['ratio_slowest_fastest']:.2f}x" in f["summary"]


def test_ulisse_saturation_and_other_socket(repo: Path) -> None:
    result = analysis.analyse(repo / "examples/ulisse")
    assert {f["numbers"]["saturation_threads"] for f in by_id(result, "bandwidth_saturation")} == {4}
    (loc,) = by_id(result, "bandwidth_locality")
    assert 0.75 < loc["numbers"]["peak_ratio"] < 0.85
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
