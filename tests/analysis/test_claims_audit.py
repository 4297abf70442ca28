"""The claims audit (numasweep.findings.audit) on every report the project can write from data it
ships or generates, and what a reader of the Zen 2 sweep (tests/fixtures/measured/zen2-vm, with
its physical truth in tests/fixtures/measured/README.md) must read in it. A planted contradiction
fails the audit and the report rule's render, in one line naming the finding."""

from __future__ import annotations

import ast
import copy
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.findings import analysis, audit
from numasweep.reporting import report
from numasweep.results import aggregate

from analysis import known_truth as kt
from helpers import synthetic as truth

REPO = Path(__file__).resolve().parents[2]
MEASURED = REPO / "tests" / "fixtures" / "measured"
ZEN2 = MEASURED / "zen2-vm"
EXAMPLES = sorted(p for p in (REPO / "examples").iterdir() if (p / "topology.json").exists())
MIB = 1 << 20


@pytest.fixture(scope="module")
def zen2() -> list[dict]:
    return analysis.analyse(ZEN2)["findings"]


@pytest.fixture(scope="module")
def zen4(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    folder = tmp_path_factory.mktemp("vm-zen4")
    shutil.copy(MEASURED / "vm-zen4" / "topology.json", folder / "topology.json")
    csvs = sorted(str(p) for p in (MEASURED / "vm-zen4" / "latency").glob("*.csv"))
    assert aggregate.main(["--bench", "latency", "-o", str(folder / "latency.csv"), *csvs]) == 0
    return analysis.analyse(folder)["findings"]


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_the_audit_passes_on_every_shipped_example(example: Path) -> None:
    assert audit.audit(analysis.analyse(example)["findings"]) == []


def test_the_audit_passes_on_the_measured_curves(zen2, zen4) -> None:
    assert audit.audit(zen2) == []
    assert audit.audit(zen4) == []


def test_the_audit_passes_on_the_generators_reports(tmp_path: Path) -> None:
    """The default sweep's model data, and planted datasets of every shape (TLB dips included)."""
    assert audit.audit(analysis.analyse(truth.write_default_sweep(tmp_path / "sweep"))["findings"]) == []
    rng = np.random.default_rng(2026)
    for shape in ({}, {"tlb_dip": True, "tlb_reach": 8 * MIB, "max_bytes": 1 << 32}, {"flat": True},
                  {"grid_ratio": 1.5, "tlb_reach": 6 * MIB}, {"unstable": "L2"}):
        p = truth.plant(rng, **shape)
        assert audit.audit(kt.entry(p)) == [], shape


def _tlb(findings: list[dict]) -> dict:
    (tlb,) = [f for f in findings if f["id"] == "tlb_cost"]
    return tlb


def test_a_sentence_saying_nothing_parts_over_a_flagged_table_fails(zen2) -> None:
    tlb = copy.deepcopy(_tlb(zen2))
    assert any(r["significant"] for r in tlb["evidence"])
    tlb["summary"] = "4 KiB pages and transparent huge pages do not part beyond the noise at any size tested."
    problems = audit.audit([tlb])
    said = [p for p in problems if "says nothing differs" in p]
    assert len(said) == 1 and tlb["title"] in said[0], problems


def test_a_claim_whose_interval_holds_no_effect_fails(zen2, tmp_path: Path) -> None:
    (div,) = [f for f in zen2 if f["id"] == "mode_divergence" and f["numbers"]["claim"]]
    bad = copy.deepcopy(div)
    bad["numbers"]["plateau_ratio_low"], bad["numbers"]["plateau_ratio_high"] = 0.21, 19.12
    problems = audit.audit([bad])
    assert len(problems) == 1 and "holds 1.0, no effect" in problems[0], problems
    # ... and the report is written with it shown as refused, then fails in one line naming it
    out = tmp_path / "experimentation.md"
    with pytest.raises(report.AuditRefused) as err:
        report.render(ZEN2, {"findings": [bad]}, None, out)
    assert "\n" not in str(err.value) and div["title"] in str(err.value) and "claims audit refused" in str(err.value)
    assert "--forcerun analyse" in str(err.value) and str(out) in str(err.value)
    head = "\n".join(out.read_text().splitlines()[:12])
    assert "**Refused by the claims audit.**" in head and "holds 1.0, no effect" in head, head
    text = out.read_text()
    assert f"Refused by the claims audit: {problems[0]}" in text.replace("\\", ""), text[:3000]
    assert "0.21" not in text.split("## Summary", 1)[1].split("\n## ", 1)[0]  # not in the summary


def test_a_sentence_reworded_to_drop_its_number_is_refused(tmp_path: Path) -> None:
    """A kind that claims no interval (the saturation of a run with one repetition) still states its
    rise: its sentence replaced by words without it is refused, in the report's first lines."""
    ulisse = REPO / "examples" / "ulisse"
    found = analysis.analyse(ulisse)["findings"]
    saturation = next(f for f in found if f["id"] == "bandwidth_saturation" and not f["numbers"]["claim"])
    reworded = {**copy.deepcopy(saturation), "summary": "Nothing to see here."}
    problems = audit.audit([reworded])
    assert problems == [f"finding '{saturation['title']}' (bandwidth_saturation): its sentence does not print the "
                        f"rise it states ({saturation['numbers']['rise']:.2f})"], problems
    out = tmp_path / "experimentation.md"
    with pytest.raises(report.AuditRefused):
        report.render(ulisse, {"findings": [reworded if f is saturation else f for f in found]}, None, out)
    assert problems[0] in "\n".join(out.read_text().splitlines()[:12]).replace("\\", "")


def test_a_kind_that_declares_no_claims_is_refused(zen2) -> None:
    made_up = {**copy.deepcopy(zen2[0]), "id": "made_up_kind"}
    (problem,) = audit.audit([made_up])
    assert "its kind 'made_up_kind' declares no claims" in problem and "Checks.claims" in problem, problem
    with pytest.raises(NumasweepError, match="declare what it claims"):
        registry.Claim()


def test_every_finding_kind_the_package_writes_declares_its_claims() -> None:
    """Each `Finding(id=...)` of the package names a kind the audit knows, whether or not the
    shipped data writes one (a GPU's, a migration's, a loaded latency's)."""
    written = set()
    for path in (REPO / "workflow" / "numasweep").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding":
                written |= {k.value.value for k in node.keywords
                            if k.arg == "id" and isinstance(k.value, ast.Constant)}
    assert len(written) > 30, written
    assert written - set(audit._claims()) == set()


def test_a_hand_edited_claims_entry_that_is_not_a_mapping_is_one_problem(zen2) -> None:
    (div,) = [f for f in zen2 if f["id"] == "mode_divergence" and f["numbers"]["claim"]]
    bad = copy.deepcopy(div)
    bad["numbers"]["claims"] = ["plateau_ratio 1.5", None]
    problems = audit.audit([bad])
    assert [p for p in problems if "claims[0] is str" in p and "not a mapping" in p], problems
    assert [p for p in problems if "claims[1] is NoneType" in p], problems


def test_a_no_with_unknown_noise_and_two_verdicts_for_one_quantity_fail(zen2) -> None:
    (div,) = [f for f in zen2 if f["id"] == "mode_divergence" and f["numbers"]["claim"]]
    bad = copy.deepcopy(div)
    bad["evidence"][0].update(differs=False, ratio_low=None, ratio_high=None)
    assert any("'unknown'" in p for p in audit.audit([bad]))
    other = copy.deepcopy(div)
    other["evidence"][9]["differs"] = not other["evidence"][9]["differs"]
    assert any("same quantity" in p for p in audit.audit([div, other]))


def test_zen2_tlb_parting_at_the_l2_tlb_reach(zen2) -> None:
    tlb = _tlb(zen2)
    n = tlb["numbers"]
    assert n["claim"] and 8 * MIB <= n["onset_size_bytes"] <= 16 * MIB, n
    assert n["onset_bytes_low"] / 4096 <= 2048 <= n["onset_bytes_high"] / 4096, n      # 2,048 entries
    assert "do not part" not in tlb["summary"] and "2,048 entries" in tlb["summary"]
    flagged = [r["size_bytes"] for r in tlb["evidence"] if r["significant"]]
    assert flagged and all(size_text in tlb["summary"] for size_text in ("8 MiB", "16 MiB"))


def test_zen2_concurrent_against_serial_with_an_interval_excluding_1(zen2) -> None:
    (div,) = [f for f in zen2 if f["id"] == "mode_divergence" and f["numbers"]["claim"]]
    n = div["numbers"]
    assert n["plateau_ratio_low"] > 1 and n["plateau_from_size_bytes"] == 8 * MIB, n
    # the printed interval is as narrow as the per-size ones that decided it
    per_size = [r for r in div["evidence"] if r["differs"] is True]
    assert n["plateau_ratio_high"] <= max(r["ratio_high"] for r in per_size)


def test_zen2_one_rank_4k_series_tells_its_l3_exit_to_memory(zen2) -> None:
    steps = [f["numbers"] for f in zen2 if f["id"] == "cache_threshold"]
    one = [n for n in steps if n["page_size"] == "4k" and n["mode"] == "concurrent" and n["config"] == "1 rank"]
    levels = {n["matched_cache"] for n in one}
    assert {"L1d (per core)", "L2 (per core)", "L3 (per L3 group, 2 cores)"} <= levels, one
    (l3,) = [n for n in one if n["matched_cache"].startswith("L3")]
    assert l3["latency_before_ns"] < 20 and l3["latency_after_ns"] > 100, l3      # L3 plateau to memory


def test_summary_tells_a_cache_level_once_and_numa_first(zen2) -> None:
    found = report.prepared_findings({"findings": zen2})
    lines = report.summary_lines([f for f in found if f["headline"]])
    l3 = [line for line in lines if "L3" in line["title"] and line["title"].startswith("Latency step")]
    assert len(l3) == 1 and l3[0]["merged"] >= 3, l3
    ordered = [report.importance(f) for f in sorted(found, key=report.importance)]
    assert ordered == sorted(ordered)


def test_summary_opens_with_the_slow_node_pair_on_several_nodes() -> None:
    """A 4-node model with a planted remote latency: the NUMA story before any cache step."""
    rng = np.random.default_rng(5)
    p = truth.plant(rng, remote=True, topology=truth.topology_of(truth.FAMILIES[0], nodes=4))
    found = [dict(f, headline=report.is_headline(f), subject=report.subject_of(f["id"]).title)
             for f in kt.entry(p)]
    lines = [f for f in sorted(found, key=report.importance) if f["headline"]]
    firsts = [report.importance(f) for f in lines]
    caches = [i for i, f in enumerate(lines) if f["id"] == "cache_threshold"]
    numa = [i for i, f in enumerate(lines) if report.importance(f) == 0]
    assert firsts == sorted(firsts)
    assert numa and caches and max(numa) < min(caches), (numa, caches)


def test_a_grid_point_twice_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "twice"
    shutil.copytree(ZEN2, folder)
    table = pd.read_csv(folder / "latency.csv")
    row = table.iloc[[3]].copy()
    row["latency_ns_median"] = 12.4
    pd.concat([table, row]).to_csv(folder / "latency.csv", index=False)
    with pytest.raises(NumasweepError) as err:
        aggregate.load_results(folder)
    text = str(err.value)
    assert "\n" not in text and "lines 5 and" in text and "one grid point" in text and "12.4" in text, text


def test_a_topology_without_caches_is_said_in_the_first_lines(tmp_path: Path) -> None:
    folder = tmp_path / "nocache"
    shutil.copytree(ZEN2, folder)
    import json
    topo = json.loads((folder / "topology.json").read_text())
    topo["caches"] = []
    (folder / "topology.json").write_text(json.dumps(topo))
    out = report.render(folder, analysis.analyse(folder), None, tmp_path / "experimentation.md")
    head = "\n".join(out.read_text().splitlines()[:15])
    assert "No cache sizes known" in head, head


def _curves(table: pd.DataFrame, topology) -> list:
    """The latency curves the report's levels come from (`benches.latency.findings`)."""
    from numasweep.benches.latency import findings as latency
    from numasweep.benches.latency import levels

    study = latency.prepare(table, topology)
    pooled = latency.pool_one_rank(study.table)
    return [c for c in levels.latency_levels(pooled, topology, study.keys, latency.REPLICATES).curves if c.measured]


def _untold(curve) -> list[tuple[int, int]]:
    """Steps of a curve that rise beyond the floor and the noise by 20 % or more (a transition's
    worth on their own) that no transition of the curve holds, and transitions that overlap (a
    rise told twice)."""
    at = dict(zip(curve.sizes, curve.latency_ns))
    spans = sorted((t.from_size_bytes, t.to_size_bytes) for t in curve.transitions)
    out = [(a, b) for a, b in curve.rising
           if at[b] / at[a] >= 1.2 and not any(lo <= a and b <= hi for lo, hi in spans)]
    return out + [(b0, a1) for (_, a1), (b0, _) in zip(spans, spans[1:]) if b0 < a1]


def _results_curves(folder: Path) -> list:
    frames = aggregate.load_results(folder)
    return _curves(frames["latency"], aggregate.load_topology(folder)) if "latency" in frames else []


@pytest.mark.parametrize("folder", [ZEN2, REPO / "examples" / "lumi-g"], ids=["zen2", "lumi-g"])
def test_every_rise_of_a_real_curve_is_told_once(folder: Path) -> None:
    curves = _results_curves(folder)
    assert curves
    for c in curves:
        assert _untold(c) == [], (c.series, _untold(c))


def test_every_rise_of_a_measured_zen4_and_model_curve_is_told_once(zen4, tmp_path: Path) -> None:
    folder = tmp_path / "zen4"
    shutil.copy(MEASURED / "vm-zen4" / "topology.json", folder.mkdir() or folder / "topology.json")
    csvs = sorted(str(p) for p in (MEASURED / "vm-zen4" / "latency").glob("*.csv"))
    assert aggregate.main(["--bench", "latency", "-o", str(folder / "latency.csv"), *csvs]) == 0
    curves = _results_curves(folder) + _results_curves(truth.write_default_sweep(tmp_path / "sweep"))
    rng = np.random.default_rng(77)
    for shape in ({}, {"grid_ratio": 4.0}, {"tlb_dip": True, "max_bytes": 1 << 32}):
        p = truth.plant(rng, **shape)
        curves += _curves(p.table.drop(columns=["locality", "l3_position"]), p.topology)
    for c in curves:
        assert _untold(c) == [], (c.series, _untold(c))


XEON = MEASURED / "xeon-vm"


def test_xeon_guest_tells_its_caches_and_never_the_reported_480_mib_l3() -> None:
    """The default sweep on a 2-vCPU Intel Xeon KVM guest (AVX-512, AMX) whose sysfs reports a
    480 MiB L3 (tests/fixtures/measured/README.md): the L1d exit named, no rise put on the
    reported L3 (latency is memory's long before it), no rise from memory latency given a cache,
    every rise told once, no job disturbed, the audit passes."""
    found = analysis.analyse(XEON)["findings"]
    assert audit.audit(found) == []
    steps = [f["numbers"] for f in found if f["id"] == "cache_threshold"]
    assert {n["config"] for n in steps if n["matched_cache"] == "L1d (per core)"} >= {"1 rank", "2 ranks, 2 per domain"}
    assert not [n for n in steps if str(n["matched_cache"]).startswith("L3")], steps
    assert all(not n["matched_cache"] for n in steps if n["latency_before_ns"] >= 60), steps
    assert not [f for f in found if f["id"] == "not_concluded"]
    for c in _results_curves(XEON):
        assert _untold(c) == [], (c.series, _untold(c))


XEON_HOST = MEASURED / "xeon-host"


def test_many_core_xeon_host_tells_each_cache_and_the_l2_exit_that_runs_on_to_memory(tmp_path: Path) -> None:
    """The host latency curve of a 16-vCPU Emerald Rapids-class Xeon guest (tests/fixtures/measured/
    README.md, xeon-host): the L1d and L2 exits named for both page kinds; with 4 KiB pages the
    rise out of the L2 goes on to memory latency without a plateau, and is told so (its ratio is
    not the L2's alone); with huge pages the rise to memory after the guest's small L3 share is
    unexplained, never put on the reported 300 MiB L3; the TLB onset interval holds the L1 DTLB's
    reach; every rise told once; the audit passes."""
    shutil.copy(XEON_HOST / "topology.json", tmp_path / "topology.json")
    csvs = sorted(str(p) for p in (XEON_HOST / "latency").glob("*.csv"))
    assert aggregate.main(["--bench", "latency", "-o", str(tmp_path / "latency.csv"), *csvs]) == 0
    found = analysis.analyse(tmp_path)["findings"]
    assert audit.audit(found) == []
    steps = [f["numbers"] for f in found if f["id"] == "cache_threshold"]
    for pages in ("4k", "thp"):
        named = {n["matched_cache"]: n for n in steps if n["page_size"] == pages and n["matched_cache"]}
        assert set(named) == {"L1d (per core)", "L2 (per core)"}, (pages, named)
        assert 16 * 1024 <= named["L1d (per core)"]["from_size_bytes"] < named["L1d (per core)"]["size_bytes"] <= 64 * 1024
        l2 = named["L2 (per core)"]
        # with huge pages the L2's exit stops at the L3 share's plateau; with 4 KiB pages it does not
        assert l2["to_memory"] == (pages == "4k") and (l2["latency_after_ns"] >= 60) == (pages == "4k"), l2
    rise = [n for n in steps if n["page_size"] == "thp" and not n["matched_cache"]]
    assert len(rise) == 1 and rise[0]["from_size_bytes"] >= 4 * MIB and rise[0]["size_bytes"] <= 32 * MIB, rise
    assert "partly available" in " ".join(rise[0]["caveats"]), rise
    (tlb,) = [f["numbers"] for f in found if f["id"] == "tlb_cost"]
    assert tlb["claim"] and tlb["onset_bytes_low"] <= 384 * 1024 and tlb["onset_bytes_high"] >= 256 * 1024, tlb
    for c in _results_curves(tmp_path):
        assert _untold(c) == [], (c.series, _untold(c))
