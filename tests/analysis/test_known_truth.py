"""levels and contrasts, and the findings analysis.analyse writes from them, against datasets
with planted truth (helpers.synthetic's planted truth): every planted cache and TLB transition found and
attributed, noise-only datasets quiet, intervals covering the planted values at about their
stated rate."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from numasweep.benches.common import LATENCY
from numasweep.benches.latency import levels
from numasweep.findings import analysis
from numasweep.statistics import contrasts

import known_truth as kt

from helpers import synthetic as truth

NOISE_ONLY = 200


@pytest.fixture(scope="module")
def planted():
    """One dataset per processor family, each with its own sizes, shifts and noise."""
    out = []
    for i, family in enumerate(truth.FAMILIES):
        p = truth.plant(np.random.default_rng(100 + i), family)
        out.append((p, *kt.analyse(p)))
    return out


def test_every_planted_cache_and_tlb_transition_is_found_and_attributed(planted):
    for p, lv, _, _ in planted:
        results = kt.planted_transitions(p, lv)
        assert {r["what"] for r in results} >= {"L2", "L3", "TLB"}, p.family.name
        missed = [(r["what"], r["series"]) for r in results if not r["found"]]
        assert not missed, (p.family.name, missed)
        for curve in lv.curves:
            labels = [t.capacity_bytes for t in curve.transitions if t.capacity_bytes]
            assert len(labels) == len(set(labels))                       # one capacity, one transition


def test_exact_cache_sizes_and_a_rise_one_step_late_are_still_attributed():
    for i, family in enumerate(truth.FAMILIES[:3]):
        p = truth.plant(np.random.default_rng(200 + i), family, shift=1.0, exact_grid=True, noise=0.02)
        lv, _, _ = kt.analyse(p)
        assert all(r["found"] for r in kt.planted_transitions(p, lv)), family.name


def assert_coverage(results: list[tuple[str, bool]]) -> None:
    """95 % intervals cover at about their rate: per kind and all together."""
    for kind in {k for k, _ in results}:
        hits = [h for k, h in results if k == kind]
        assert len(hits) >= 20 and 0.85 <= np.mean(hits) <= 1.0, kind
    hits = [h for _, h in results]
    assert len(hits) > 200 and 0.90 <= np.mean(hits) <= 0.995


def test_intervals_cover_the_planted_values_at_about_their_rate(planted):
    results = [r for p, lv, cs, _ in planted for r in kt.coverage(p, lv, cs)]
    assert_coverage(results)


def test_planted_ccd_contention_is_found_with_an_interval_covering_it(planted):
    for p, _, cs, _ in planted:
        conc = [c for c in cs if c.factor == "l3_position" and c.series["mode"] == "concurrent"]
        if p.contention == 0:
            assert not conc or not any(c.differs for c in conc)
            continue
        for c in conc:
            assert c.differs and c.plateau_ratio.low > 1
            a = p.curves[("concurrent", c.series["page_size"], 0)]
            b = p.curves[("concurrent", c.series["page_size"], 1)]
            assert np.max(a / b) > c.plateau_ratio.low


@pytest.mark.slow
def test_noise_only_datasets_give_no_finding_in_at_least_95_percent():
    """Through analysis.analyse: no claim of any latency finding (transition, TLB, gate, mode or
    L3-group difference, inversion, outlier) on at least 95 % of noise-only datasets."""
    rng = np.random.default_rng(7)
    quiet = 0
    for _ in range(NOISE_ONLY):
        p = truth.plant(rng, flat=True, max_bytes=1 << 18)
        quiet += kt.entry_claims(kt.entry(p)) == 0
    assert quiet >= 0.95 * NOISE_ONLY


@pytest.fixture(scope="module")
def written(planted):
    """The findings analysis.analyse writes for each planted dataset's results folder."""
    return [(p, kt.entry(p)) for p, *_ in planted]


def test_analyse_finds_and_attributes_every_planted_transition(written):
    for p, found in written:
        results = kt.entry_transitions(p, found)
        assert {r["what"] for r in results} >= {"L2", "L3", "TLB"}, p.family.name
        missed = [(r["what"], r["series"]) for r in results if not r["found"]]
        assert not missed, (p.family.name, missed)
        steps = [f["numbers"] for f in found if f["id"] == "cache_threshold"]
        for n in steps:
            assert n["step_ratio_low"] <= n["step_ratio"] <= n["step_ratio_high"]
            assert n["location_bytes_low"] <= n["location_bytes"] <= n["location_bytes_high"]
        per_curve = [(n["mode"], n["page_size"], n["cache_bytes"]) for n in steps if n["cache_bytes"]]
        assert len(per_curve) == len(set(per_curve))                    # one capacity, one transition


def test_analyse_intervals_cover_the_planted_values_at_about_their_rate(written):
    results = [r for p, found in written for r in kt.entry_coverage(p, found)]
    assert_coverage(results)


def test_analyse_reports_planted_ccd_contention_with_its_interval(written):
    for p, found in written:
        conc = [f["numbers"] for f in found if f["id"] == "domain_asymmetry" and f["numbers"]["mode"] == "concurrent"]
        if p.contention == 0:
            assert not any(n["claim"] for n in conc)
            continue
        assert conc
        for n in conc:
            a = p.curves[("concurrent", n["page_size"], 0)]
            b = p.curves[("concurrent", n["page_size"], 1)]
            assert n["claim"] and 1 < n["plateau_ratio_low"] < np.max(a / b)


def test_analyse_refuses_a_prefetch_dominated_curve(tmp_path):
    topo, table = truth.prefetch_curve(np.random.default_rng(3), truth.FAMILIES[1])
    truth.write_folder(tmp_path, topo, {"latency": table})
    found = analysis.analyse(tmp_path)["findings"]
    (gate,) = [f for f in found if f["id"] == "not_latency"]
    assert gate["numbers"]["claim"] and "prefetch" in gate["summary"]
    assert [f["id"] for f in found if f["bench"] == "latency"] == ["not_latency"]


def test_prefetch_dominated_curve_is_not_analysed_as_latency():
    topo, table = truth.prefetch_curve(np.random.default_rng(3), truth.FAMILIES[1])
    lv = levels.latency_levels(table, topo, ["mode", "page_size"], ["repetition"])
    (curve,) = lv.curves
    assert not curve.measured and "prefetch" in curve.gate_reason and not curve.transitions


def test_a_transition_nothing_explains_is_said_once_with_the_vm_caveat():
    family = truth.FAMILIES[1]
    told = truth.topology_of(family, hypervisor="KVM")
    told = dataclasses.replace(told, caches=[c for c in told.caches if c.level != 2])
    p = truth.plant(np.random.default_rng(5), family, noise=0.01, topology=told, exact_grid=True, shift=0.0)
    lv = levels.latency_levels(p.table, told, kt.SERIES, kt.REPLICATES)
    for curve in lv.curves:
        unexplained = [t for t in curve.transitions if t.kind == "unexplained"]
        near_l2 = [t for t in unexplained if t.from_size_bytes <= family.l2 * 2 and t.to_size_bytes >= family.l2]
        assert len(near_l2) == 1, curve.series
        assert any("virtual machine" in c for c in near_l2[0].caveats)


def test_contrast_of_identical_sides_is_equivalent():
    p = truth.plant(np.random.default_rng(9), flat=True, max_bytes=1 << 20, noise=0.01)
    (c, *_) = contrasts.contrast(p.table, "mode", "concurrent", "serial", ["rank", "repetition"],
                                 measure=LATENCY, where="latency.csv")
    assert not c.differs and c.equivalent and c.overall_ratio.covers(1.0)


def test_planted_numa_distance_is_found_at_dram_sizes_only_and_covered():
    far = 0
    for i, family in enumerate(truth.FAMILIES[::3]):
        p = truth.plant(np.random.default_rng(300 + i), family, remote=True, pages=("2m",), modes=("serial",))
        far += p.remote_factor > 1.2
        (c,) = contrasts.contrast(p.table, "locality", "remote", "local", ["rank", "repetition"], ["mode"],
                                  measure=LATENCY, where="latency.csv")
        local, remote = p.curves[("serial", "2m", 0)], p.curves[("serial", "2m", 0, "remote")]
        for s, a, b in zip(c.per_size, remote, local):
            if s.size_bytes <= family.l2:
                assert not s.differs                                     # caches are not remote
            if s.size_bytes >= 16 * family.l3 and p.remote_factor > 1.2:
                assert s.differs and s.ratio.low > 1                      # farther memory, slower
        if p.remote_factor > 1.2:
            assert c.onset_bytes is not None and c.onset_bytes <= 16 * family.l3
        elif p.remote_factor < 1.05:
            assert not c.differs
    assert far >= 1


@pytest.mark.parametrize("shape", list(kt.SHAPES))
def test_the_shapes_the_default_draw_does_not_make_come_out_right(shape):
    """Two rises in one window (a VM's share of the L3), a TLB reach between the L2 and the L3 on
    1.5x and 2x grids, a single unstable size: every criterion of the shape on at least 60 % of
    its curves over six datasets, and most on all (known_truth.py --datasets N prints them per
    criterion). An L2 exit starting a step late and a share of 4x the L2 starting early overlap
    into one rise, which is then said unexplained rather than named after the L2."""
    rng = np.random.default_rng(400)
    results = [r for _ in range(6) for r in kt.SHAPES[shape](rng)]
    assert results
    for what in {w for w, _ in results}:
        hits = [ok for w, ok in results if w == what]
        assert np.mean(hits) >= 0.6, (what, hits)
    assert np.mean([ok for _, ok in results]) >= 0.85
