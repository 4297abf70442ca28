"""Curves measured by the kernels themselves, not planted: the default sweep's one-rank latency
runs on a 2-vCPU AMD EPYC (Zen 4) KVM guest (tests/fixtures/measured/vm-zen4: each job's CSV
and provenance record as the workflow wrote them, 4 KiB and transparent huge pages, 16 KiB to
256 MiB; L1d 32 KiB and L2 1 MiB per core, a 32 MiB L3 reported, of which the guest gets a
share). What the analysis must tell of them, as a reader of the report would check it: the L1d
and the L2 exits each named after their cache, the much larger rise to memory latency told apart
from the L2 exit and not put on the reported L3, and the 4 KiB pages' TLB cost with an onset
interval at least a size step wide."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from numasweep.findings import analysis
from numasweep.results import aggregate

MEASURED = Path(__file__).resolve().parents[1] / "fixtures" / "measured" / "vm-zen4"
MIB = 1 << 20


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    folder = tmp_path_factory.mktemp("vm-zen4")
    shutil.copy(MEASURED / "topology.json", folder / "topology.json")
    csvs = sorted(str(p) for p in (MEASURED / "latency").glob("*.csv"))
    assert aggregate.main(["--bench", "latency", "-o", str(folder / "latency.csv"), *csvs]) == 0
    return analysis.analyse(folder)["findings"]


def steps(findings: list[dict]) -> list[dict]:
    return [f["numbers"] for f in findings if f["id"] == "cache_threshold" and f["numbers"].get("claim")]


def test_the_l1d_and_l2_exits_are_named_after_their_caches(findings: list[dict]) -> None:
    named = {n["matched_cache"]: n for n in steps(findings) if n.get("matched_cache")}
    assert set(named) == {"L1d (per core)", "L2 (per core)"}, named
    assert 32 * 1024 <= named["L1d (per core)"]["location_bytes"] <= 64 * 1024
    assert 512 * 1024 <= named["L2 (per core)"]["location_bytes"] <= 2 * MIB


@pytest.mark.parametrize("pages", ["4k", "thp"])
def test_the_rise_to_memory_is_its_own_unexplained_step_not_the_reported_l3(findings: list[dict], pages) -> None:
    # each curve tells its own rise to memory, the 4 KiB one too (its TLB share is the TLB's finding)
    unexplained = [n for n in steps(findings) if not n.get("matched_cache") and n["page_size"] == pages]
    assert len(unexplained) == 1, unexplained
    (rise,) = unexplained
    assert rise["step_ratio_low"] > 4 and 2 * MIB <= rise["location_bytes"] <= 16 * MIB, rise
    l2 = next(n for n in steps(findings) if n.get("matched_cache") == "L2 (per core)")
    assert l2["location_bytes_high"] < rise["location_bytes_low"], (l2, rise)   # two rises, told apart


def test_the_tlb_cost_has_an_onset_at_least_a_size_step_wide(findings: list[dict]) -> None:
    (tlb,) = [f["numbers"] for f in findings if f["id"] == "tlb_cost"]
    assert tlb["claim"] and tlb["onset_bytes_high"] >= 2 * tlb["onset_bytes_low"], tlb
    assert tlb["tlb_entries_4k"] == tlb["onset_size_bytes"] // 4096
