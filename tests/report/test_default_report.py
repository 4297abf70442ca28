"""The default sweep's report on a one-node workstation explains its latency transitions: each
rise is a cache level's, the TLB's (where the huge-page curve measured the same sizes and does
not rise), or said plainly to be unexplained.

The results come from the job model of helpers.synthetic (planted caches, DRAM and a TLB reach
for 4 KiB pages) for the jobs config/config.yaml plans on a constructed one-node topology."""

from __future__ import annotations

import pytest

from numasweep.findings import analysis
from numasweep.reporting import report

from helpers import synthetic as model


@pytest.fixture(scope="module")
def default_report(tmp_path_factory) -> tuple[str, list[dict]]:
    results = model.write_default_sweep(tmp_path_factory.mktemp("desk") / "results" / "desk")
    findings = analysis.analyse(results)
    text = report.render(results, findings, None, results.parent / "experimentation.md").read_text()
    return text, findings["findings"]


def section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_cache_level_is_found_on_the_curve_that_can_show_it(default_report) -> None:
    text, findings = default_report
    matched = {(f["numbers"]["page_size"], f["numbers"]["matched_cache"]) for f in findings
               if f["id"] == "cache_threshold" and f["numbers"]["mode"] == "concurrent"
               and f["numbers"]["matched_cache"]}
    # L1 and L2 off the 4 KiB curve (huge pages start at 4 MiB), the L3 off the huge-page curve
    assert {("4k", "L1d (per core)"), ("4k", "L2 (per core)"), ("thp", "L3 (per L3 group, 8 cores)")} <= matched
    caches = section(text, "Caches")
    assert [line for line in caches.splitlines() if line][1].startswith("Of the ")   # the tally after the lead


def test_the_tlb_is_told_from_the_caches(default_report) -> None:
    text, findings = default_report
    (tlb,) = [f for f in findings if f["id"] == "tlb_cost"]
    # 4 KiB pages walk the page table beyond the model's 8 MiB reach: from 16 MiB on
    assert tlb["numbers"]["claim"] and tlb["numbers"]["onset_size_bytes"] == 2 * model.TLB_REACH
    assert tlb["numbers"]["max_ratio"] == pytest.approx(model.TLB_FACTOR, rel=0.02)
    tlb_text = section(text, "TLB")
    assert tlb["summary"] in tlb_text and "the TLB reach, not a cache" in tlb_text
    assert "cannot be told" not in text


def test_every_rise_is_explained_or_said_unexplained(default_report) -> None:
    text, findings = default_report
    caches = section(text, "Caches")
    steps = [f for f in findings if f["id"] == "cache_threshold"]
    assert steps
    tlb = [f for f in steps if f["numbers"]["kind"] == "tlb"]
    unexplained = [f for f in steps if f["numbers"]["kind"] == "unexplained"]
    for f in steps:
        assert f["summary"] in caches
        assert f["numbers"]["matched_cache"] or f in tlb or "nothing in the topology explains it" in f["summary"]
    # the 1-rank 4 KiB curve's rise at the TLB reach, at sizes its huge-page twin measured without
    # rising there: the TLB's, never called unexplained
    assert tlb and all("the TLB's reach with 4 KiB pages" in f["summary"] and f["numbers"]["page_size"] == "4k"
                       for f in tlb)
    # the curves with 4 KiB pages only (serial, two ranks) rise at the TLB reach too, which no
    # cache explains: said so, with the TLB named as what may cause it
    assert unexplained and all(any("TLB" in c for c in f["numbers"]["caveats"]) for f in unexplained)
    assert all(f["numbers"]["page_size"] == "4k" for f in unexplained)
    n = len(unexplained)
    assert f"and {n} nothing in the topology explains" in caches
