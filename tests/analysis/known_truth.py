"""Scoring of the analysis against planted truth (used by test_known_truth.py); as a script
(`PYTHONPATH=tests python tests/analysis/known_truth.py`) it prints the known-truth figures."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np

from numasweep.core.topology import Topology
from numasweep.benches.common import LATENCY
from numasweep.benches.latency import levels
from numasweep.findings import analysis
from numasweep.statistics import contrasts

from helpers import synthetic as truth
from helpers.synthetic import Planted

SERIES = ["mode", "page_size"]
REPLICATES = ["repetition", "rank"]
LEVEL_NAMES = {"L1": 1, "L2": 2, "L3": 3}


def analyse(p: Planted):
    lv = levels.latency_levels(p.table, p.topology, SERIES, REPLICATES)
    ccd = contrasts.contrast(p.table, "l3_position", 0, 1, ["cpu_node", "repetition"], ["mode", "page_size"],
                             measure=LATENCY, where="latency.csv")
    div = contrasts.contrast(p.table, "mode", "concurrent", "serial", ["rank", "repetition"],
                             ["page_size", "l3_position"], measure=LATENCY, where="latency.csv")
    devs = contrasts.deviations(ccd + div)
    return lv, ccd + div, devs


def findings(lv, cs, devs) -> int:
    return lv.findings() + sum(c.differs for c in cs) + len(devs)


def planted_transitions(p: Planted, lv) -> list[dict]:
    """For each testable planted cache level and the TLB: found and attributed, and how far (in
    doublings) the half-way point of its transition lies from the planted capacity."""
    out = []
    for curve in lv.curves:
        if curve.series.get("page_size") == "4k" and any(t.series for t in lv.tlb):
            continue
        for name, cap in (("L1", p.family.l1d), ("L2", p.family.l2), ("L3", p.family.l3)):
            if not p.testable(cap):
                continue
            hit = [t for t in curve.transitions if t.capacity_bytes == cap]
            out.append({"what": name, "series": curve.series, "found": bool(hit),
                        "error_doublings": abs(math.log2(hit[0].location_bytes.estimate / cap)) if hit else None})
    for t in lv.tlb:
        if p.testable(p.tlb_reach):
            out.append({"what": "TLB", "series": t.series, "found": t.onset_bytes is not None,
                        "error_doublings": abs(math.log2(t.location_bytes.estimate / p.tlb_reach))
                        if t.location_bytes else None})
    return out


def coverage(p: Planted, lv, cs) -> list[tuple[str, bool]]:
    """Does each interval cover the noiseless value? Transition ratios of serial huge-page curves
    (all ranks alike there) and every per-size contrast ratio."""
    out = []
    idx = {int(s): j for j, s in enumerate(p.sizes)}
    for curve in lv.curves:
        if curve.series.get("mode") != "serial" or curve.series.get("page_size") != "2m":
            continue
        truth = p.curves[("serial", "2m", 0)]
        for t in curve.transitions:
            planted = truth[idx[t.to_size_bytes]] / truth[idx[t.from_size_bytes]]
            out.append(("transition ratio", t.ratio.covers(planted)))
    for c in cs:
        for s in c.per_size:
            if not np.isfinite(s.ratio.low):
                continue
            if c.factor == "l3_position":
                a = p.curves.get((c.series["mode"], c.series["page_size"], 0))
                b = p.curves.get((c.series["mode"], c.series["page_size"], 1))
            else:
                a = p.curves.get(("concurrent", c.series["page_size"], int(c.series["l3_position"])))
                b = p.curves.get(("serial", c.series["page_size"], int(c.series["l3_position"])))
            out.append((f"{c.factor} ratio per size", s.ratio.covers(a[idx[s.size_bytes]] / b[idx[s.size_bytes]])))
    return out


# ---------------------------------------------------------------- through analysis.analyse

def entry(p: Planted) -> list[dict]:
    """The findings `analysis.analyse` writes for a results folder holding the planted table (as
    the aggregate writes latency.csv: without the generator's own locality and L3-position
    columns) and its topology.json."""
    with tempfile.TemporaryDirectory() as folder:
        truth.write_folder(Path(folder), p.topology, {"latency": p.table.drop(columns=["locality", "l3_position"])})
        return analysis.analyse(folder)["findings"]


def entry_claims(found: list[dict]) -> int:
    return sum(bool(f["numbers"].get("claim")) for f in found)


def entry_transitions(p: Planted, found: list[dict]) -> list[dict]:
    """planted_transitions, read from findings: per huge-page curve (where one pairs with the
    4 KiB curve, whose rises mix the TLB's into the caches' and are scored by tlb_cost) and
    testable level, whether a cache_threshold names that capacity; per mode whether tlb_cost
    claims the TLB."""
    modes, pages = sorted(set(p.table["mode"])), sorted(set(p.table["page_size"]))
    paired = "4k" in pages and len(pages) > 1
    steps = [f["numbers"] for f in found if f["id"] == "cache_threshold"]
    out = []
    for mode in modes:
        for page in pages:
            if paired and page == "4k":
                continue
            for name, cap in (("L1", p.family.l1d), ("L2", p.family.l2), ("L3", p.family.l3)):
                if p.testable(cap):
                    hit = [n for n in steps if (n["mode"], n["page_size"], n["cache_bytes"]) == (mode, page, cap)]
                    out.append({"what": name, "series": (mode, page), "found": bool(hit),
                                "error_doublings": abs(math.log2(hit[0]["location_bytes"] / cap)) if hit else None})
        if paired and p.testable(p.tlb_reach):
            tlb = [f["numbers"] for f in found if f["id"] == "tlb_cost" and f["numbers"]["mode"] == mode]
            out.append({"what": "TLB", "series": (mode,), "found": any(n["claim"] for n in tlb),
                        "error_doublings": abs(math.log2(tlb[0]["location_bytes"] / p.tlb_reach))
                        if tlb and tlb[0]["location_bytes"] else None})
    return out


def entry_coverage(p: Planted, found: list[dict]) -> list[tuple[str, bool]]:
    """coverage, read from findings: transition ratios of serial huge-page curves, and each
    per-size ratio of the mode and L3-group contrasts (their evidence rows)."""
    out = []
    idx = {int(s): j for j, s in enumerate(p.sizes)}
    for f in found:
        n = f["numbers"]
        if f["id"] == "cache_threshold" and (n["mode"], n["page_size"]) == ("serial", "2m") \
                and n["step_ratio_low"] is not None:
            truth = p.curves[("serial", "2m", 0)]
            planted = truth[idx[n["size_bytes"]]] / truth[idx[n["from_size_bytes"]]]
            out.append(("transition ratio", n["step_ratio_low"] <= planted <= n["step_ratio_high"]))
        if f["id"] == "domain_asymmetry":
            a = p.curves.get((n["mode"], n["page_size"], n["l3_position_a"]))
            b = p.curves.get((n["mode"], n["page_size"], n["l3_position_b"]))
            kind = "l3_position ratio per size"
        elif f["id"] == "mode_divergence" and "l3_position" in n:
            a = p.curves.get(("concurrent", n["page_size"], n["l3_position"]))
            b = p.curves.get(("serial", n["page_size"], n["l3_position"]))
            kind = "mode ratio per size"
        else:
            continue
        for e in f["evidence"]:
            if e["ratio_low"] is not None:
                planted = a[idx[e["size_bytes"]]] / b[idx[e["size_bytes"]]]
                out.append((kind, e["ratio_low"] <= planted <= e["ratio_high"]))
    return out


# ---------------------------------------------------------------- the shapes the default draw does not make

MiB = 1 << 20


def _cache_curves(p: Planted, lv) -> list:
    """The curves whose caches are read: the huge-page curves where 4 KiB curves pair with them."""
    return [c for c in lv.curves if c.measured and not (c.series.get("page_size") == "4k" and lv.tlb)]


def shape_vm_share(rng: np.random.Generator) -> list[tuple[str, bool]]:
    """Two rises inside one cache window: the core gets 4 or 8 x its L2 of the last level (a
    virtual machine's share) while the topology reports the whole L3. Per curve: the L2 found and
    attributed, the rise to memory said (unexplained, its range reaching the share), the L3 never
    named."""
    f = truth.FAMILIES[rng.integers(len(truth.FAMILIES))]
    share = int(rng.choice([4, 8])) * f.l2
    p = truth.plant(rng, f, llc_bytes=share)
    lv, _, _ = analyse(p)
    out = []
    for curve in _cache_curves(p, lv):
        if not p.testable(f.l2) or not p.testable(share):
            continue
        out.append(("L2 found and attributed", any(t.capacity_bytes == f.l2 for t in curve.transitions)))
        out.append(("rise to memory said unexplained", any(
            t.kind == "unexplained" and t.from_size_bytes <= 4 * share and t.to_size_bytes >= share
            for t in curve.transitions)))
        out.append(("the reported L3 not named", all(t.capacity_bytes != f.l3 for t in curve.transitions)))
    return out


def tlb_onsets(p: Planted, lv, ratio: float) -> list[tuple[str, bool]]:
    """Per TLB pair of a dataset planted with a reach: the onset found, its interval of non-zero
    width and within one size step of the reach, the onset itself within one step of it."""
    out = []
    for t in lv.tlb:
        out.append(("TLB onset found", t.onset_bytes is not None))
        if t.onset_bytes is not None and t.onset is not None:
            out.append(("onset interval of non-zero width", t.onset.high > t.onset.low))
            out.append(("onset interval within a size step of the reach",
                        t.onset.low / ratio <= p.tlb_reach <= t.onset.high * ratio))
            out.append(("onset within a size step of the reach",
                        p.tlb_reach / ratio <= t.onset_bytes <= p.tlb_reach * ratio * ratio))
    return out


def shape_tlb_between(rng: np.random.Generator, dip: bool = False) -> list[tuple[str, bool]]:
    """A 4 KiB TLB reach of 6, 8 or 12 MiB (between the L2 and the L3) on sizes 1.5 or 2 x apart:
    the onset found, its interval of non-zero width and within one size step of the reach.
    dip=True: the ratio dips under the floor over the DRAM sizes and rises again from 1 GiB
    (`plant(tlb_dip=True)`), which must not move the onset to the far end."""
    f = truth.FAMILIES[rng.integers(len(truth.FAMILIES))]
    ratio = float(rng.choice([1.5, 2.0]))
    reach = int(rng.choice([6, 8, 12])) * MiB
    p = truth.plant(rng, f, grid_ratio=ratio, tlb_reach=reach, tlb_dip=dip,
                    max_bytes=4 * 2 ** 30 if dip else None)
    lv, _, _ = analyse(p)
    return tlb_onsets(p, lv, ratio)


def shape_tlb_dip(rng: np.random.Generator) -> list[tuple[str, bool]]:
    return shape_tlb_between(rng, dip=True)


def shape_unstable(rng: np.random.Generator) -> list[tuple[str, bool]]:
    """The first size past the L1 or the L2 with samples from both sides of its rise: the level
    still found and attributed, the size named unstable and never an end of a transition."""
    f = truth.FAMILIES[rng.integers(len(truth.FAMILIES))]
    level = str(rng.choice(["L1", "L2"]))
    p = truth.plant(rng, f, unstable=level)
    cap = f.l1d if level == "L1" else f.l2
    lv, _, _ = analyse(p)
    out = []
    for curve in _cache_curves(p, lv):
        if not p.testable(cap):
            continue
        out.append((f"{level} found and attributed", any(t.capacity_bytes == cap for t in curve.transitions)))
        out.append(("unstable size named", p.unstable_bytes in [size for size, _ in curve.unstable]))
        out.append(("unstable size places no transition", all(
            p.unstable_bytes not in (t.from_size_bytes, t.to_size_bytes) for t in curve.transitions)))
    return out


def shape_coarse_grid(rng: np.random.Generator) -> list[tuple[str, bool]]:
    """Sizes 4x or 8x apart (a quick real sweep), so that an L2 exit and an L3 exit may share a run
    of rising steps with one size between: the rise is split there, never one rise named after
    either cache over both; nothing is told twice (transitions of a curve do not overlap)."""
    f = truth.FAMILIES[rng.integers(len(truth.FAMILIES))]
    ratio = float(rng.choice([4.0, 8.0]))
    p = truth.plant(rng, f, grid_ratio=ratio, pages=("2m",))
    lv, _, _ = analyse(p)
    out = []
    for curve in _cache_curves(p, lv):
        spans = [(t.from_size_bytes, t.to_size_bytes) for t in curve.transitions]
        out.append(("no rise told twice", all(b[0] >= a[1] for a, b in zip(spans, spans[1:]))))
        if p.testable(f.l2) and p.testable(f.l3) and f.l3 >= 16 * f.l2:
            out.append(("no one rise over both the L2 and the L3", not any(
                t.from_size_bytes <= f.l2 and t.to_size_bytes >= f.l3 and t.label for t in curve.transitions)))
    return out


def shape_contradicted_cache(rng: np.random.Generator) -> list[tuple[str, bool]]:
    """The topology reports a last level 16x the real one (a firmware that sums the slices of a
    socket, say, 480 MiB) while the curve reaches memory latency at the real L3's size and rises
    again at 1 GiB and beyond (the 4 KiB pages' walks): no rise starting at memory latency is
    given a cache, and the reported size is said contradicted."""
    f = truth.FAMILIES[rng.integers(len(truth.FAMILIES))]
    topo = truth.topology_of(f)
    d = topo.to_dict()
    d["caches"][2]["size_bytes"] = 16 * f.l3
    told = Topology.from_dict(d, f.name)
    p = truth.plant(rng, f, topology=told, tlb_dip=True, tlb_reach=8 * MiB, max_bytes=4 * 2 ** 30, pages=("4k",))
    lv, _, _ = analyse(p)
    out = []
    for curve in lv.curves:
        late = [t for t in curve.transitions if t.latency_before_ns >= levels.MEMORY_NS]
        out.append(("no cache for a rise from memory latency", all(not t.label for t in late)))
        if late:
            out.append(("the reported cache said contradicted", any(
                "contradicts" in c for t in late for c in t.caveats)))
    return out


SHAPES = {"two rises in one window (VM share of the L3)": shape_vm_share,
          "TLB reach between L2 and L3 (1.5x, 2x grids)": shape_tlb_between,
          "TLB reach with a dip under the floor over DRAM sizes": shape_tlb_dip,
          "two rises on a coarse grid (4x, 8x)": shape_coarse_grid,
          "a reported cache the curve contradicts": shape_contradicted_cache,
          "single unstable size": shape_unstable}


def measure_shapes(datasets: int, seed: int) -> dict:
    """Per shape, per criterion: how many curves (or TLB pairs) meet it, over `datasets` each."""
    import collections

    rng = np.random.default_rng(seed + 1)      # apart from the main draw, which stays as it was
    out = {}
    for name, make in SHAPES.items():
        tally = collections.defaultdict(lambda: [0, 0])
        for _ in range(datasets):
            for what, ok in make(rng):
                tally[what][0] += ok
                tally[what][1] += 1
        out[name] = {k: f"{v[0]}/{v[1]}" for k, v in tally.items()}
    return out


def measure(datasets: int, noise_only: int, seed: int, through_entry: bool = False) -> dict:
    """The known-truth figures over random families, sizes and noise (see truth.plant), from the
    modules or, with through_entry, from the findings of analysis.analyse."""
    import collections

    rng = np.random.default_rng(seed)
    found = collections.defaultdict(lambda: [0, 0])
    errors = []
    cover, by_noise, by_kind = (collections.defaultdict(list) for _ in range(3))
    for _ in range(datasets):
        p = truth.plant(rng)
        if through_entry:
            written = entry(p)
            transitions, covered = entry_transitions(p, written), entry_coverage(p, written)
        else:
            lv, cs, _ = analyse(p)
            transitions, covered = planted_transitions(p, lv), coverage(p, lv, cs)
        for r in transitions:
            found[r["what"]][0] += r["found"]
            found[r["what"]][1] += 1
            if r["found"]:
                errors.append(r["error_doublings"])
        for kind, hit in covered:
            cover[p.family.name].append(hit)
            by_noise[p.noise].append(hit)
            by_kind[kind].append(hit)
    quiet = 0
    for _ in range(noise_only):
        p = truth.plant(rng, flat=True)
        quiet += (entry_claims(entry(p)) if through_entry else findings(*analyse(p))) == 0
    every = [h for v in cover.values() for h in v]
    return {
        "datasets": datasets,
        "transitions_found": {k: f"{v[0]}/{v[1]}" for k, v in found.items()},
        "location_error_doublings": {"median": float(np.median(errors)), "p95": float(np.quantile(errors, 0.95)),
                                     "max": float(np.max(errors))},
        "coverage_95": {"all": f"{np.mean(every):.3f} of {len(every)}",
                        **{k: f"{np.mean(v):.3f} of {len(v)}" for k, v in sorted(cover.items())},
                        **{f"noise {k}": f"{np.mean(v):.3f} of {len(v)}" for k, v in sorted(by_noise.items())},
                        **{k: f"{np.mean(v):.3f} of {len(v)}" for k, v in sorted(by_kind.items())}},
        "noise_only": f"{noise_only - quiet}/{noise_only} datasets with any finding",
        "shapes": measure_shapes(datasets, seed),
    }


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Measure the known-truth figures of levels and contrasts.")
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--noise-only", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--entry", action="store_true", help="score the findings of analysis.analyse, not the modules")
    a = ap.parse_args()
    print(json.dumps(measure(a.datasets, a.noise_only, a.seed, a.entry), indent=2))
