"""Bandwidth findings, each ratio with its interval and each claim past a noise rule: the best
bandwidth against the theoretical peak, saturation, locality, and weightings compared.

The model is the latency one (`numasweep.statistics.stats`, docs/STATISTICS.md) with threads for sizes:
- A *series* is every row sharing the bandwidth series identity (`numasweep.results.series`: kernel,
  stores, pattern, array size, pages, policy, nodes, weights, label, ...) but the thread count;
  the *repetition* (one job of the campaign's repetitions) is the unit of uncertainty. A series'
  value at a thread count is the median over repetitions of log bandwidth (`best_mb_s`, else
  `avg_mb_s`); its noise is the repetitions' spread pooled over a band of three thread counts
  (`stats.Series.noise`), or, with one repetition, each run's spread from `min_mb_s`,
  `best_mb_s` and `ntimes` (said so: run-to-run variation unseen), or unknown (nothing claimed).
- **Saturation** (`bandwidth_saturation`): the thread count where the series reaches its plateau
  is the breakpoint of a hinge fit whose second slope is flatter (`fits.hinge_knee`),
  with a percentile bootstrap over repetitions (within-run error redrawn); the plateau is the
  geometric mean from that thread count on, and the rise is plateau / the fewest threads, both
  with a t interval over repetitions of each repetition's mean log. The series claims a
  saturation when the rise exceeds the floor beyond the noise (one-sided test, Benjamini-Hochberg
  over the series of the call).
- **Locality** (`bandwidth_locality`): remote / local memory for threads on one node, and every
  pair of interleave weights of one weighted series, are `contrasts.contrast` over thread counts
  (units: repetitions; Benjamini-Hochberg over every thread count of every pair of the call,
  floor MIN_EFFECT). The ratio a finding states is the geometric mean over the thread counts of
  the contrast's plateau (where it differs) or over all of them (where it does not), with a t
  interval over repetitions; with no thread count differing the sides are equivalent (interval
  inside the floor's margin) or indistinguishable (it is not). Where the firmware distances
  order local and remote memory and a claim puts the farther memory ahead, the ordering
  contradicts the distances: a finding of its own (`bandwidth_ordering`).
A finding's `numbers["claim"]` says whether it claims an effect.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from numasweep.benches.bandwidth import weights
from numasweep.benches.bandwidth.tables import bandwidth_points
from numasweep.core.topology import Topology
from numasweep.core.units import count_words, page_words, parse_cpulist
from numasweep.findings.analysis import Finding, in_parens, interval_numbers, method_words, size_text
from numasweep.results import series
from numasweep.statistics import contrasts, fits, stats
from numasweep.statistics.stats import REPETITIONS_NOTE, Interval, Series, unit_interval

MIN_EFFECT = contrasts.MIN_EFFECT   # a bandwidth difference under 10 % is not claimed
DRAWS = 400
UNITS = (series.REPETITION,)
BANDWIDTH = stats.Measure("mb_s", "min_mb_s", "best_mb_s", "ntimes", "threads")
SPREAD = ("mb_s", "min_mb_s", "best_mb_s", "ntimes", series.REPETITION, "threads")
WHERE = ("cpu_nodes", "mem_nodes", "memory", "cpu_node")   # where threads and memory are


# ---------------------------------------------------------------- shared pieces

def _runs(bandwidth: pd.DataFrame | None) -> tuple[pd.DataFrame, list[str], str]:
    """One row per run (series, thread count, repetition), the series keys, and the metric."""
    runs, metric = bandwidth_points(bandwidth, runs=True)
    if runs.empty:
        return runs, [], metric
    stats.check_values(bandwidth, "bandwidth.csv", stats.Measure(metric, "min_mb_s", "best_mb_s", "ntimes",
                                                                 "threads"))
    keys = [c for c in runs.columns if c not in SPREAD]
    # a thread sweep's CPU list grows with its thread count: the list names no series of its own
    # unless two lists share a thread count
    if "cpus" in keys:
        rest = [c for c in keys if c != "cpus"]
        if runs.groupby(rest + ["threads"])["cpus"].nunique().max() <= 1:
            runs = runs.assign(cpus="")
            keys = rest
    return runs, keys, metric



def _over(s: Series, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each repetition's mean log over the columns `cols` (a mask), and its within-run error."""
    logs, se = s.logs[:, cols], s.run_se[:, cols]
    n = np.sum(np.isfinite(logs), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.nansum(logs, axis=1) / np.maximum(n, 1), np.nan)
        run = np.sqrt(np.sum(np.where(np.isfinite(logs), se ** 2, 0.0), axis=1)) / np.maximum(n, 1)
    return mean, run


def _threads(values: np.ndarray) -> str:
    lo, hi = int(values.min()), int(values.max())
    return f"{lo} thread{'s' if lo != 1 else ''}" if lo == hi else f"{lo} to {hi} threads"


def gb(interval: Interval) -> Interval:
    """An interval of MB/s (the kernel's unit) in GB/s, the unit the report says bandwidth in."""
    return dataclasses.replace(interval, estimate=interval.estimate / 1000, low=interval.low / 1000,
                               high=interval.high / 1000)


def _series_name(r: Any) -> str:
    """Names every series column that can tell two bandwidth series apart."""
    kernel = f"{r['kernel']} " if r["kernel"] else ""
    mem = str(r.get("mem_nodes", "") or "").strip()
    text = (f"{kernel}bandwidth with threads on node {r['cpu_nodes']} and "
            + (f"memory on node {mem}" if mem else "their local memory"))
    extra = []
    if str(r.get("array_bytes", "")).strip():
        extra.append(f"{size_text(float(r['array_bytes']))} arrays")
    for col, word in (("stores", "stores"), ("pattern", "pattern"), ("stride", "stride"), ("page_size", "pages"),
                      ("weights", "weights"), ("memory", "memory"), ("label", "sweep")):
        value = str(r.get(col, "")).strip()
        # the sweep's memory choice says no more than the node already named ("node:0")
        said = col == "memory" and value in (f"node:{r['mem_nodes']}", "local")
        if value and not said and (col, value) not in (("stores", "regular"), ("pattern", "sequential")) \
                and not (col == "stride" and value in ("0", "1")):
            extra.append(page_words(value) if col == "page_size" else f"{word} {value}")
    return text + (f" ({', '.join(extra)})" if extra else "")


# ---------------------------------------------------------------- saturation

def saturation_point(s: Series) -> tuple[Interval, int | None]:
    """Thread count where the series reaches its plateau (hinge fit, bootstrap over repetitions)
    and its column, or an unknown interval and None when no bend is found."""
    knee = fits.hinge_knee(s.sizes.astype(float), np.exp(s.center()), bend=-1)
    if not math.isfinite(knee):
        return Interval.unknown(math.nan, "no bend: bandwidth does not level off"), None
    col = int(np.searchsorted(s.sizes, knee))
    if s.logs.shape[0] < 2 and not np.isfinite(s.run_se).any():
        return Interval.unknown(knee, "noise unknown: one repetition without within-run spread"), col
    draws = s.draws(stats.SEED + 5, DRAWS)
    knees = np.asarray(fits.hinge_knee(s.sizes.astype(float), np.exp(draws).T, bend=-1))
    hit = knees[np.isfinite(knees)]
    if len(hit) < DRAWS // 2:
        return Interval.unknown(knee, "the bootstrap rarely finds a bend"), col
    reps = s.logs.shape[0]
    how = f"over {reps} repetitions" if reps > 1 else f"of the within-run spread ({REPETITIONS_NOTE})"
    return Interval(knee, float(np.quantile(hit, 0.025)), float(np.quantile(hit, 0.975)), stats.LEVEL,
                    f"hinge fit, percentile bootstrap {how} ({DRAWS} draws)"), col


def bandwidth_saturation(bandwidth: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """Per bandwidth series: the thread count of its plateau, the plateau and the rise to it."""
    runs, keys, metric = _runs(bandwidth)
    if runs.empty:
        return []
    table = stats.series_table(runs, keys, UNITS, BANDWIDTH)
    curves = [s for s in table if len(s.sizes) >= 3]
    two = [s for s in table if len(s.sizes) == 2]
    fits = []
    for s in curves:
        point, col = saturation_point(s)
        rising = None
        if col is not None and not _flat_from(s, col):
            rising, col = _still_rising(s), None        # no plateau: the points past the bend keep rising
        cols = np.arange(len(s.sizes)) >= (col if col is not None else len(s.sizes) - 1)
        plateau, rise, p = _plateau(s, cols)
        fits.append((s, point, col, plateau, rise, rising, p))
    flags = stats.benjamini_hochberg([f[-1] for f in fits])
    findings = []
    for (s, point, col, plateau, rise, rising, p), claim in zip(fits, flags):
        first = s.key
        name = _series_name(first)
        medians = np.exp(s.center())
        peak = int(np.nanargmax(medians))
        t0 = int(s.sizes[0])
        noise_rule = s.noise()[3]
        t0_text = count_words(t0, "thread")
        at = (f"{count_words(int(point.estimate), 'thread')} ({point.level * 100:.0f}% interval {point.low:.0f} to "
              f"{point.high:.0f}; {method_words(point.method)})" if np.isfinite(point.low)
              else f"{count_words(int(point.estimate), 'thread')} ({method_words(point.method)})"
              if col is not None else "")
        if claim and col is not None:
            text = f"rises {rise.text('{:.2f}x')} from {t0_text} to a plateau of {gb(plateau).text('{:.1f}')} GB/s, reached at {at}"
        elif claim and rising:
            text = (f"rises {rise.text('{:.2f}x')} from {t0_text} to {count_words(int(s.sizes[-1]), 'thread')} and is "
                    f"still rising at {int(s.sizes[-1])} threads ({rising}): no plateau within the thread counts tested")
        elif claim:
            text = (f"rises {rise.text('{:.2f}x')} from {t0_text} to {int(s.sizes[-1])} and does not level off "
                    "within the thread counts tested")
        elif not np.isfinite(p):
            text = (f"goes from {t0_text} to a plateau of {plateau.estimate / 1000:.1f} GB/s, {rise.text('{:.2f}x')} higher"
                    + (f" from {at} on" if at else "") + "; with the noise unknown nothing is claimed")
        else:
            text = (f"does not rise beyond the noise and the {MIN_EFFECT * 100:.0f}% floor from {t0_text} on "
                    f"(plateau / first {rise.text('{:.2f}x')}; plateau {gb(plateau).text('{:.1f}')} GB/s)")
        findings.append(Finding(
            id="bandwidth_saturation", bench="bandwidth", title=f"Saturation: {name}",
            summary=(f"{name[0].upper() + name[1:]} {text}; the highest median is {medians[peak] / 1000:.1f} GB/s at "
                     f"{count_words(int(s.sizes[peak]), 'thread')}."),
            numbers={"cpu_nodes": first["cpu_nodes"], "mem_nodes": first["mem_nodes"], "kernel": first["kernel"],
                     "policy": first["policy"], "metric": metric, "claim": bool(claim), "still_rising": bool(rising),
                     **interval_numbers("saturation_threads", point if col is not None else None),
                     **interval_numbers("plateau_mb_s", plateau), **interval_numbers("rise", rise), "p_value": p, "floor": MIN_EFFECT,
                     "peak_mb_s": float(medians[peak]), "peak_threads": int(s.sizes[peak]), "first_threads": t0,
                     "repetitions": int(s.logs.shape[0]), "noise_rule": noise_rule},
            evidence=[{"threads": int(t), "mb_s": float(v), "repetitions": int(k)}
                      for t, v, k in zip(s.sizes, medians, s.k)],
        ))
    return findings + _two_count_rises(bandwidth, two, keys, metric)


def _flat_from(s: Series, col: int) -> bool:
    """A plateau is flat: every point from the bend on within the floor of their level (the
    geometric mean of their values), none beyond it either way."""
    y = s.center()[col:]
    return bool(np.all(np.abs(y - np.mean(y)) <= math.log1p(MIN_EFFECT)))


def _still_rising(s: Series) -> str:
    """How a curve that does not level off ends: "12% from 4 threads" (its last step)."""
    y = s.center()
    return f"{(math.exp(y[-1] - y[-2]) - 1) * 100:.0f}% from {count_words(int(s.sizes[-2]), 'thread')}"


def _plateau(s: Series, cols: np.ndarray) -> tuple[Interval, Interval, float]:
    """(the plateau: the geometric mean of the points' values from the bend on, the medians the
    evidence prints; its rise over the fewest threads, the quotient of the two; the one-sided
    p-value of that rise beyond the floor), each interval a t interval from the model's noise at
    each point (each thread count is its own jobs: repetitions pair nothing)."""
    y = s.center()
    se, dof, _, rule = s.noise()
    j = np.flatnonzero(cols)
    level, e = float(np.mean(y[j])), float(math.sqrt(np.sum(se[j] ** 2)) / len(j))
    df = float(np.min(dof[j]))
    d, e_rise, df_rise = level - float(y[0]), float(math.hypot(e, se[0])), float(min(df, dof[0]))
    if not (np.isfinite(e_rise) and e_rise > 0):
        why = "noise unknown: one repetition without within-run spread"
        return Interval.unknown(math.exp(level), why), Interval.unknown(math.exp(d), why), math.nan
    method = f"t interval on the log of the medians ({rule})"
    return (stats.t_interval(level, e, df, method=method), stats.t_interval(d, e_rise, df_rise, method=method),
            float(stats.rise_pvalue(d, e_rise, df_rise, MIN_EFFECT)))


def _rise(s: Series) -> tuple[Interval, float]:
    """The most threads over the fewest of one series: the ratio of the two points' values (the
    medians over repetitions every table prints), with a t interval from the model's noise at each
    (the latency steps' rule: each thread count is its own jobs, so repetitions pair nothing); and
    the two-sided p-value of a change beyond the floor."""
    y = s.center()
    se, dof, _, rule = s.noise()
    d, e, df = float(y[-1] - y[0]), float(math.hypot(se[-1], se[0])), float(min(dof[-1], dof[0]))
    if not (np.isfinite(e) and e > 0):
        return Interval.unknown(math.exp(d), "noise unknown: one repetition without within-run spread"), math.nan
    rise = stats.t_interval(d, e, df, method=f"t interval on the log ratio of the medians ({rule})")
    return rise, float(stats.excess_pvalue(d, e, df, MIN_EFFECT))


def _beyond_floor(ratio: Interval) -> bool:
    """The interval excludes "no effect" (a ratio within the floor of 1)."""
    return bool(np.isfinite(ratio.low) and (ratio.low > 1 + MIN_EFFECT or ratio.high < 1 / (1 + MIN_EFFECT)))


def _two_count_rises(bandwidth: pd.DataFrame, two: list[Series], keys: list[str], metric: str) -> list[Finding]:
    """Series with two thread counts: no plateau can be placed, but the change from the fewer to
    the more threads is a finding, of the best bandwidth and of the average (each with its
    interval; a claim only where the test over the floor passes, Benjamini-Hochberg over the
    series, and the interval excludes the floor's margin around 1)."""
    if not two:
        return []
    average: dict[tuple, Series] = {}
    if metric == "best_mb_s" and "avg_mb_s" in bandwidth and bandwidth["avg_mb_s"].notna().any():
        avg_runs, avg_keys, _ = _runs(bandwidth.drop(columns=["best_mb_s"]))
        if not avg_runs.empty and avg_keys == keys:
            best, _, _ = _runs(bandwidth)
            # the within-run spread reaches up to the best iteration: keep it for the average too
            spread = best.set_index(keys + [series.REPETITION, "threads"])["best_mb_s"]
            avg_runs["best_mb_s"] = spread.reindex(
                pd.MultiIndex.from_frame(avg_runs[keys + [series.REPETITION, "threads"]])).to_numpy()
            for s in stats.series_table(avg_runs, keys, UNITS, BANDWIDTH):
                average[tuple(str(s.key.get(k, "")) for k in keys)] = s
    rises = [_rise(s) for s in two]
    flags = stats.benjamini_hochberg([p for _, p in rises])
    findings = []
    said: set[tuple[int, int]] = set()    # why no plateau is placed: said once per pair of counts
    for s, (rise, p), flag in zip(two, rises, flags):
        name = _series_name(s.key)
        t0, t1 = int(s.sizes[0]), int(s.sizes[-1])
        why = "" if (t0, t1) in said else (f" No plateau is placed: placing one takes three or more thread counts, and "
                                           f"this series, as every other measured at {t0} and {t1} threads, has two.")
        said.add((t0, t1))
        span = f"from {t0} thread{'s' if t0 != 1 else ''} to {t1} threads"
        claim = bool(flag) and _beyond_floor(rise)
        what = "best" if metric == "best_mb_s" else "average"
        word = "rises" if rise.estimate >= 1 else "changes"
        if claim:
            text = f"{what} bandwidth {word} {rise.text('{:.2f}x')} {span}"
        elif not np.isfinite(rise.low):
            text = f"{what} bandwidth goes {rise.text('{:.2f}x')} {span}; with the noise unknown nothing is claimed"
        else:
            text = (f"{what} bandwidth goes {rise.text('{:.2f}x')} {span}: not beyond the noise and the "
                    f"{MIN_EFFECT * 100:.0f}% floor, no change is claimed")
        avg = average.get(tuple(str(s.key.get(k, "")) for k in keys))
        avg_rise, avg_claim = None, False
        if avg is not None and len(avg.sizes) == 2:
            avg_rise, avg_p = _rise(avg)
            avg_claim = bool(np.isfinite(avg_p) and avg_p <= stats.FDR) and _beyond_floor(avg_rise)
            # the qualifier is the average's own: the best's claim above stands either way
            text += (f"; the average {'rises' if avg_claim else 'goes'} {avg_rise.text('{:.2f}x')}"
                     + ("" if avg_claim else f", a change of the average not claimed (not beyond the noise and the "
                                             f"{MIN_EFFECT * 100:.0f}% floor)"))
        medians = np.exp(s.center())
        findings.append(Finding(
            id="bandwidth_saturation", bench="bandwidth", title=f"Rise with threads: {name}",
            summary=f"{name[0].upper() + name[1:]}: {text}.{why}",
            numbers={"cpu_nodes": s.key["cpu_nodes"], "mem_nodes": s.key["mem_nodes"], "kernel": s.key["kernel"],
                     "policy": s.key["policy"], "metric": metric, "claim": claim, "thread_counts": 2,
                     **interval_numbers("saturation_threads", None), **interval_numbers("rise", rise),
                     **interval_numbers("average_rise", avg_rise), "average_claim": avg_claim,
                     "p_value": p, "floor": MIN_EFFECT, "first_threads": t0, "last_threads": t1,
                     "repetitions": int(s.logs.shape[0]), "noise_rule": s.noise()[3]},
            evidence=[{"threads": int(t), "mb_s": float(v), "repetitions": int(k)}
                      for t, v, k in zip(s.sizes, medians, s.k)],
        ))
    return findings


# ---------------------------------------------------------------- locality and weights

def _contrasts(pairs: list[tuple[str, pd.DataFrame, pd.DataFrame]]) -> dict[str, contrasts.Contrast]:
    """a / b of every pair (label, rows a, rows b: each a series) over thread counts, in one
    false-finding family."""
    if not pairs:
        return {}
    table = pd.concat([part for label, a, b in pairs
                       for part in (a.assign(_pair=label, _side="a"), b.assign(_pair=label, _side="b"))])
    found = contrasts.contrast(table, "_side", "a", "b", UNITS, ["_pair"], where="bandwidth.csv",
                               measure=BANDWIDTH, onset=False)
    return {c.series["_pair"]: c for c in found}


def _stated(c: contrasts.Contrast) -> tuple[Interval, np.ndarray, bool, float]:
    """The ratio a finding states (geometric mean over the plateau's thread counts where the
    contrast differs, over all of them where not), those thread counts, whether the sides are
    equivalent, and the ratio's p-value."""
    s = c.ratios
    cols = np.ones(len(s.sizes), bool)
    if c.differs and c.plateau_from_bytes is not None:
        cols = (s.sizes >= c.plateau_from_bytes) & (s.sizes <= c.plateau_to_bytes)
    ratio, se, dof = unit_interval(*_over(s, cols), "ratio")
    margin = (1 / (1 + c.floor), 1 + c.floor)
    equivalent = not c.differs and bool(np.isfinite(ratio.low) and margin[0] <= ratio.low and ratio.high <= margin[1])
    return ratio, s.sizes[cols], equivalent, stats.excess_pvalue(math.log(ratio.estimate), se, dof, c.floor)


def _verdict(c: contrasts.Contrast, ratio: Interval, equivalent: bool, a: str, b: str) -> str:
    floor = f"{c.floor * 100:.0f}%"
    differing = [s for s in c.per_size if s.differs]
    if not np.isfinite(ratio.low):
        return f"{a} {ratio.text('{:.2f}x')} {b}; with the noise unknown nothing is claimed"
    if c.unclaimed:
        return f"{a} {ratio.text('{:.2f}x')} {b}; nothing is claimed: {c.unclaimed}"
    if c.differs:
        return (f"{a} {ratio.text('{:.2f}x')} {b}; beyond the noise and the {floor} floor at {len(differing)} of "
                f"{len(c.per_size)} thread counts (Benjamini-Hochberg over every thread count compared)")
    if equivalent:
        return f"{a} {ratio.text('{:.2f}x')} {b}, inside the {floor} margin: equivalent"
    return (f"{a} {ratio.text('{:.2f}x')} {b}; no thread count differs beyond the noise and the {floor} floor, but the "
            "data cannot show them alike either: indistinguishable")


def _per_thread(c: contrasts.Contrast, a: pd.Series, b: pd.Series, names: tuple[str, str]) -> list[dict]:
    return [{"threads": s.size_bytes, names[0]: a.get(s.size_bytes), names[1]: b.get(s.size_bytes),
             "ratio": s.ratio.estimate, "ratio_low": s.ratio.low, "ratio_high": s.ratio.high,
             "repetitions": s.units, "differs": s.verdict} for s in c.per_size]


def _medians(rows: pd.DataFrame) -> pd.Series:
    return rows.groupby("threads")["mb_s"].median()


def bandwidth_locality(bandwidth: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """Remote over local bandwidth for threads on one node, per series and thread count, next to
    the firmware distances (and where a claim contradicts them, a finding of that); and the best
    over the worst interleave weights of each weighted series. Every pair compared is one family."""
    runs, keys, metric = _runs(bandwidth)
    if runs.empty:
        return []
    pairs, meta = _locality_pairs(runs, keys)
    weight_pairs, weight_meta = _weight_pairs(runs, keys)
    verify_pairs, verify_meta = _verify_pairs(runs, keys)
    found = _contrasts(pairs + weight_pairs + verify_pairs)
    verified = _verify_findings(found, verify_meta, weights.recommended(bandwidth), metric)
    # one story per comparison: a weighting and uniform interleave alone are the verification's
    told = {(f.numbers["cpu_node"], f.numbers["mem_nodes"], frozenset((f.numbers["weights"],
            f.numbers["baseline_weights"]))) for f in verified if f.numbers["baseline"] == "uniform"}
    compared = [f for f in _weight_findings(found, weight_meta, metric)
                if f.numbers["weightings"] > 2 or (str(f.numbers["cpu_nodes"]), f.numbers["mem_nodes"], frozenset(
                    (f.numbers["best_weights"], f.numbers["worst_weights"]))) not in told]
    return _locality_findings(found, meta, topology, metric) + compared + verified


def _locality_pairs(runs: pd.DataFrame, keys: list[str]) -> tuple[list, dict]:
    base = [c for c in keys if c not in WHERE]
    single = runs[~runs["cpu_nodes"].str.contains(",") & ~runs["mem_nodes"].str.contains(",")
                  & (runs["cpu_nodes"] != "") & (runs["mem_nodes"] != "")]
    varying = [c for c in base if single[c].astype(str).nunique() > 1]
    pairs, meta = [], {}
    for key, g in single.groupby(base + ["cpu_nodes"]):
        cpu = key[-1]
        local = g[g["mem_nodes"] == cpu]
        if local.empty:
            continue
        for mem, remote in g[g["mem_nodes"] != cpu].groupby("mem_nodes"):
            label = f"locality {len(pairs)}"
            pairs.append((label, remote, local))
            meta[label] = (cpu, mem, remote, local, ", ".join(f"{c} {g.iloc[0][c]}" for c in varying))
    return pairs, meta


def _locality_findings(found: dict, meta: dict, topo: Topology | None, metric: str) -> list[Finding]:
    findings = []
    for label, (cpu, mem, remote, local, name) in meta.items():
        c = found.get(label)
        if c is None:
            continue
        ratio, threads, equivalent, p = _stated(c)
        d_local, d_remote = (topo.distance(int(cpu), int(cpu)), topo.distance(int(cpu), int(mem))) if topo else (None, None)
        known = d_local is not None and d_remote is not None
        contradicts = bool(c.differs and known and d_remote != d_local
                           and (d_remote > d_local) == (ratio.estimate > 1))
        dist_text = (f"; firmware distance {d_remote} vs {d_local}" if known else
                     "; firmware distances are not recorded")
        rem, loc = _medians(remote), _medians(local)
        numbers = {"cpu_node": int(cpu), "mem_node": int(mem), "metric": metric, "claim": c.differs,
                   "differs": c.differs, "equivalent": equivalent, "floor": c.floor, **interval_numbers("ratio", ratio),
                   "ratio_threads_min": int(threads.min()), "ratio_threads_max": int(threads.max()),
                   "p_value": p, "local_peak_mb_s": float(loc.max()), "remote_peak_mb_s": float(rem.max()),
                   "distance_local": d_local, "distance_remote": d_remote,
                   "distance_order_agrees": (not contradicts) if known and c.differs else None,
                   "repetitions": len(c.ratios.replicates), "noise_rule": c.noise_rule, "config": name}
        evidence = _per_thread(c, rem, loc, ("remote_mb_s", "local_mb_s"))
        verdict = _verdict(c, ratio, equivalent, f"threads on node {cpu} reach with node {mem}'s memory",
                           "the bandwidth of their own node's memory")
        findings.append(Finding(
            id="bandwidth_locality", bench="bandwidth", title=f"Bandwidth: node {mem} vs node {cpu} memory" + in_parens(name),
            summary=(f"Over {_threads(threads)} (geometric mean), {verdict} (peak medians {rem.max() / 1000:.1f} vs "
                     f"{loc.max() / 1000:.1f} GB/s){dist_text}."),
            numbers=numbers, evidence=evidence))
        if contradicts:
            farther = "farther" if d_remote > d_local else "nearer"
            findings.append(Finding(
                id="bandwidth_ordering", bench="bandwidth",
                title=f"Bandwidth ordering contradicts the firmware distances: node {mem} vs node {cpu} memory"
                      + in_parens(name),
                summary=(f"Node {mem}'s memory is {farther} from node {cpu}'s CPUs than their own by the firmware "
                         f"distances ({d_remote} vs {d_local}), yet gives {ratio.text('{:.2f}x')} their own node's bandwidth "
                         f"over {_threads(threads)}, beyond the noise and the {c.floor * 100:.0f}% floor: the "
                         "ordering contradicts the firmware distances."),
                numbers={**numbers, "claim": True}, evidence=evidence))
    return findings


def _weight_pairs(runs: pd.DataFrame, keys: list[str]) -> tuple[list, dict]:
    """Every pair of weightings of each weighted series, the better first (by the geometric mean
    of its runs): the family holds the selection of best and worst."""
    weighted = runs[runs["policy"] == "weighted"]
    if weighted.empty:
        return [], {}
    # the grid's memory spec names the weights too (weighted:0,3@2,1): it tells no series apart here
    base = [c for c in keys if c not in ("weights", "memory")]
    others = [c for c in base if c not in ("cpu_nodes", "mem_nodes")]
    varying = [c for c in others if weighted[c].astype(str).nunique() > 1]
    pairs, meta = [], {}
    for key, g in weighted.groupby(base):
        order = np.log(g["mb_s"]).groupby(g["weights"]).mean().sort_values(ascending=False).index.tolist()
        if len(order) < 2:
            continue
        group = f"weights {len(meta)}"
        for i, wa in enumerate(order):
            for wb in order[i + 1:]:
                pairs.append((f"{group}|{wa}|{wb}", g[g["weights"] == wa], g[g["weights"] == wb]))
        meta[group] = (g, order, ", ".join(f"{c} {g.iloc[0][c]}" for c in varying))
    return pairs, meta


def _weight_findings(found: dict, meta: dict, metric: str) -> list[Finding]:
    """Best over worst interleave weights of each weighted series."""
    findings = []
    for group, (g, order, name) in meta.items():
        best, worst = order[0], order[-1]
        c = found.get(f"{group}|{best}|{worst}")
        if c is None:
            continue
        ratio, threads, equivalent, p = _stated(c)
        cpu, mem = g.iloc[0]["cpu_nodes"], g.iloc[0]["mem_nodes"]
        per = g.groupby("weights")["mb_s"].median()
        verdict = _verdict(c, ratio, equivalent, f"weights {best} reach", f"the bandwidth of weights {worst}")
        findings.append(Finding(
            id="bandwidth_weights", bench="bandwidth",
            title=f"Best interleave weights over nodes {mem} from node {cpu}" + in_parens(name),
            summary=(f"Weighted interleave over nodes {mem} from node {cpu}'s CPUs, over {_threads(threads)} "
                     f"(geometric mean): {verdict} ({len(order)} weightings compared, every pair tested)."),
            numbers={"cpu_nodes": cpu, "mem_nodes": mem, "metric": metric, "claim": c.differs,
                     "differs": c.differs, "equivalent": equivalent, "floor": c.floor, "best_weights": best,
                     "worst_weights": worst, "best_mb_s": float(per[best]), "worst_mb_s": float(per[worst]),
                     **interval_numbers("ratio", ratio), "p_value": p, "weightings": len(order),
                     "repetitions": len(c.ratios.replicates), "noise_rule": c.noise_rule},
            evidence=[{"weights": w, "mb_s": float(per[w])} for w in order],
        ))
    return findings


def _uniform(weights: str) -> bool:
    """Weights that give every node the same share (1,1 or 2,2): plain interleave."""
    values = [w for w in str(weights).split(",") if w]
    return len(values) > 1 and len(set(values)) == 1


def _verify_pairs(runs: pd.DataFrame, keys: list[str]) -> tuple[list, dict]:
    """Weights verified: in a sweep that measures local-only memory (bound to the CPUs' own node)
    beside weightings, each weighting that is not uniform against local-only memory and against
    uniform interleave over the same nodes (equal weights, or the interleave policy), every
    other setting alike."""
    if "policy" not in runs.columns:
        return [], {}
    base = [c for c in keys if c not in ("weights", "memory", "mem_nodes", "policy")]
    varying = [c for c in base if runs[c].astype(str).nunique() > 1]
    pairs, meta = [], {}
    for _, g in runs.groupby(base, dropna=False) if base else [((), runs)]:
        cpu = str(g.iloc[0]["cpu_nodes"])
        weighted = g[g["policy"] == "weighted"]
        local = g[(g["mem_nodes"] == cpu) & ~g["policy"].isin(["weighted", "interleave"])]
        if "," in cpu or not cpu or weighted.empty or local.empty:
            continue
        name = ", ".join(f"{c} {g.iloc[0][c]}" for c in varying)
        for nodes, over in weighted.groupby("mem_nodes"):
            uniform = over[over["weights"].map(_uniform)]
            if uniform.empty:
                uniform = g[(g["policy"] == "interleave") & (g["mem_nodes"] == nodes)]
            for chosen, rows in over[~over["weights"].map(_uniform)].groupby("weights"):
                for baseline, other in (("local", local), ("uniform", uniform)):
                    if other.empty or other["weights"].nunique() > 1:
                        continue
                    label = f"verify {len(pairs)}"
                    pairs.append((label, rows, other))
                    meta[label] = (cpu, nodes, chosen, baseline, rows, other, name)
    return pairs, meta


BASELINES = {"local": "local-only memory (node {cpu})", "uniform": "uniform interleave over nodes {nodes}"}


def _verify_findings(found: dict, meta: dict, recommended: dict[int, weights.Recommendation],
                     metric: str) -> list[Finding]:
    """Whether each weighting helped against each baseline, with the ratio's interval; the weights
    recommended from the same results' node-alone bandwidth named as such."""
    findings = []
    for label, (cpu, nodes, chosen, baseline, rows, other, name) in meta.items():
        c = found.get(label)
        if c is None:
            continue
        ratio, threads, equivalent, p = _stated(c)
        against = BASELINES[baseline].format(cpu=cpu, nodes=nodes)
        if not np.isfinite(ratio.low) or c.unclaimed:
            outcome = "unknown"
        elif c.differs:
            outcome = "helped" if ratio.estimate > 1 else "cost bandwidth"
        else:
            outcome = "no gain" if equivalent else "undecided"
        said = {"helped": "the weights helped", "cost bandwidth": "the weights cost bandwidth",
                "no gain": f"the weights gained nothing beyond the {c.floor * 100:.0f}% margin",
                "undecided": "whether the weights helped is undecided",
                "unknown": "whether the weights helped is unknown"}[outcome]
        rec = recommended.get(int(cpu))
        is_recommended = bool(rec and rec.memory_spec() == f"weighted:{nodes}@{chosen}")
        which = (f"the weights recommended from this run's node-alone bandwidth ({chosen})" if is_recommended
                 else f"weights {chosen}")
        verdict = _verdict(c, ratio, equivalent, f"weights {chosen} reach", f"the bandwidth of {against}")
        findings.append(Finding(
            id="weights_verified", bench="bandwidth",
            title=f"Weights {chosen} over nodes {nodes} from node {cpu} against {against}" + in_parens(name),
            summary=(f"Weighted interleave over nodes {nodes} with {which}, from node {cpu}'s CPUs, over "
                     f"{_threads(threads)} (geometric mean): {verdict}. So {said}."),
            numbers={"cpu_node": cpu, "mem_nodes": nodes, "weights": chosen, "baseline": baseline,
                     "baseline_weights": str(other.iloc[0]["weights"]), "recommended": is_recommended,
                     "outcome": outcome, "metric": metric, "claim": c.differs, "differs": c.differs,
                     "equivalent": equivalent, "floor": c.floor, **interval_numbers("ratio", ratio), "p_value": p,
                     "repetitions": len(c.ratios.replicates), "noise_rule": c.noise_rule},
            evidence=_per_thread(c, _medians(rows), _medians(other), ("weighted_mb_s", "baseline_mb_s")),
        ))
    return findings


def thread_points(rows: pd.DataFrame) -> dict[int, tuple[float, float, float, int]]:
    """Thread count -> `Series.point` (log MB/s, se, dof, repetitions) of bandwidth rows taken as
    one series (repetitions its replicates: the median over them, its noise pooled over a band of
    thread counts, as the findings take a series' points)."""
    if rows.empty:
        return {}
    return {t: s.point(j) for s in [_one_series(rows)] for j, t in enumerate(int(t) for t in s.sizes)}


def thread_values(rows: pd.DataFrame) -> dict[int, tuple[Interval, int]]:
    """Thread count -> (value in GB/s with the model's interval, repetitions) of `thread_points`."""
    if rows.empty:
        return {}
    s = _one_series(rows)
    return {int(t): (gb(s.at(j)), int(s.k[j])) for j, t in enumerate(s.sizes)}


def _one_series(rows: pd.DataFrame) -> Series:
    runs = pd.DataFrame({"threads": pd.to_numeric(rows["threads"]).to_numpy(),
                         "mb_s": pd.to_numeric(rows["best_mb_s"], errors="coerce").to_numpy(),
                         series.REPETITION: (rows[series.REPETITION].astype(str).to_numpy()
                                             if series.REPETITION in rows else "0")})
    for col in ("min_mb_s", "best_mb_s", "ntimes"):
        runs[col] = pd.to_numeric(rows[col], errors="coerce").to_numpy() if col in rows else np.nan
    (s,) = stats.series_table(runs, [], UNITS, BANDWIDTH)
    return s


# ---------------------------------------------------------------- the physical limit

def best_run(bandwidth: pd.DataFrame | None) -> tuple[Interval, Any, int] | None:
    """The highest bandwidth of the campaign, GB/s (10^9 bytes/s): the value of the series and
    thread count whose value is highest (`thread_values`: the median over repetitions, the one
    every table and the headline give the point, with the model's interval); its series key and
    thread count. None without rows."""
    runs, keys, _ = _runs(bandwidth)
    if runs.empty:
        return None
    best = None
    for values, part in runs.groupby(keys, sort=False, dropna=False):
        key = dict(zip(keys, values if isinstance(values, tuple) else (values,)))
        for threads, (iv, _) in thread_values(part.assign(best_mb_s=part["mb_s"])).items():
            if np.isfinite(iv.estimate) and (best is None or iv.estimate > best[0].estimate):
                best = (iv, key, threads)
    return best


def bandwidth_peak(bandwidth: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """The best measured bandwidth as a fraction of the machine's theoretical peak (core/peak.py:
    dmidecode's DIMMs or the arch file's `memory_peak`), or why the peak is unknown. Where the best
    used the memory of some of several memory nodes, also against those nodes' even share of the
    channels (an assumption: NPS and interleave settings can split them otherwise)."""
    found = best_run(bandwidth)
    if found is None or topology is None:
        return []
    best, key, threads = found
    mem = str(key.get("mem_nodes", "") or "").strip()
    where = (f"{key['kernel'] + ', ' if key.get('kernel') else ''}{count_words(threads, 'thread')}, "
             f"threads on node {key['cpu_nodes']}, " + (f"memory on node {mem}" if mem else "their local memory"))
    best_text = best.text("{:.1f} GB/s")
    peak = topology.memory_peak
    if peak is None:
        why = topology.memory_peak_unknown or "not recorded in this topology.json"
        return [Finding(
            id="bandwidth_peak", bench="bandwidth", title="Theoretical memory bandwidth: unknown",
            summary=(f"{why[0].upper() + why[1:]}. Give `memory_peak` (channels, mt_s) in an arch file "
                     f"(config/arch/README.md) to read the best measured, {best_text} ({where}), as a fraction of it."),
            numbers={"claim": False, "peak_gb_s": None, "unknown": why, **interval_numbers("best_gb_s", best),
                     "threads": threads, **{k: key.get(k) for k in ("kernel", "cpu_nodes", "mem_nodes")}},
        )]
    fraction = Interval(best.estimate / peak.gb_s, best.low / peak.gb_s, best.high / peak.gb_s, best.level,
                        best.method)
    text = (f"The best measured bandwidth ({where}), {best_text}, is {fraction.text('{:.2f}x')} of the machine's "
            f"theoretical peak of {peak.gb_s:.1f} GB/s ({peak.how()}).")
    numbers = {"claim": bool(np.isfinite(best.low)), "peak_gb_s": peak.gb_s, **interval_numbers("best_gb_s", best),
               **interval_numbers("fraction", fraction), "threads": threads,
               **{k: key.get(k) for k in ("kernel", "cpu_nodes", "mem_nodes")}}
    with_memory = [n.id for n in topology.nodes if n.memory_bytes > 0]
    used = [n for n in parse_cpulist(str(key.get("mem_nodes", ""))) if n in with_memory] \
        if str(key.get("mem_nodes", "")).strip() else []
    if used and len(with_memory) > 1 and len(used) < len(with_memory):
        share = peak.gb_s * len(used) / len(with_memory)
        of_share = Interval(best.estimate / share, best.low / share, best.high / share, best.level, best.method)
        text += (f" Its memory is {len(used)} of the {len(with_memory)} memory nodes: {of_share.text('{:.2f}x')} "
                 f"of their {share:.1f} GB/s share if the channels are split evenly.")
        numbers["share_gb_s"] = share
    return [Finding(id="bandwidth_peak", bench="bandwidth", title="Best bandwidth against the theoretical peak",
                    summary=text, numbers=numbers)]
