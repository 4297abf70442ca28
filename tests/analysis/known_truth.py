"""Scoring of the analysis against planted truth (used by test_known_truth.py)."""

from __future__ import annotations

import math

import numpy as np

from numasweep import contrasts, levels

from truth import Planted

SERIES = ["mode", "page_size"]
REPLICATES = ["repetition", "rank"]
LEVEL_NAMES = {"L1": 1, "L2": 2, "L3": 3}


def analyse(p: Planted):
    lv = levels.latency_levels(p.table, p.topology, SERIES, REPLICATES)
    ccd = contrasts.contrast(p.table, "l3_position", 0, 1, ["cpu_node", "repetition"], ["mode", "page_size"])
    div = contrasts.contrast(p.table, "mode", "concurrent", "serial", ["rank", "repetition"],
                             ["page_size", "l3_position"])
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


def measure(datasets: int, noise_only: int, seed: int) -> dict:
    """The known-truth figures over random families, sizes and noise (see truth.plant)."""
    import collections
    import truth

    rng = np.random.default_rng(seed)
    found = collections.defaultdict(lambda: [0, 0])
    errors = []
    cover, by_noise, by_kind = (collections.defaultdict(list) for _ in range(3))
    for _ in range(datasets):
        p = truth.plant(rng)
        lv, cs, _ = analyse(p)
        for r in planted_transitions(p, lv):
            found[r["what"]][0] += r["found"]
            found[r["what"]][1] += 1
            if r["found"]:
                errors.append(r["error_doublings"])
        for kind, hit in coverage(p, lv, cs):
            cover[p.family.name].append(hit)
            by_noise[p.noise].append(hit)
            by_kind[kind].append(hit)
    quiet = 0
    for _ in range(noise_only):
        quiet += findings(*analyse(truth.plant(rng, flat=True))) == 0
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
    }


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Measure the known-truth figures of levels and contrasts.")
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--noise-only", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(json.dumps(measure(a.datasets, a.noise_only, a.seed), indent=2))
