"""Bandwidth and copy findings, each ratio with its interval and each claim past a noise rule.

The model is the latency one (`numasweep.statistics.stats`, docs/STATISTICS.md) with threads for sizes:
- A *series* is every row sharing the bandwidth series identity (`numasweep.results.series`: kernel,
  stores, pattern, array size, pages, policy, nodes, weights, label, ...) but the thread count;
  the *repetition* (one job of the campaign's repetitions) is the unit of uncertainty. A series'
  value at a thread count is the median over repetitions of log bandwidth (`best_mb_s`, else
  `avg_mb_s`); its noise is the repetitions' spread pooled over a band of three thread counts
  (`stats.Series.noise`), or, with one repetition, each run's spread from `min_mb_s`,
  `best_mb_s` and `ntimes` (said so: run-to-run variation unseen), or unknown (nothing claimed).
- **Saturation** (`bandwidth_saturation`): the thread count where the series reaches its plateau
  is the breakpoint of a hinge fit whose second slope is flatter (`mlc_analysis.hinge_knee`),
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
- **Copy** (`copy_matrix`): per configuration (threads, bytes, label, ...), cross-node over
  within-node copies as the ratio of geometric means over cells, one log ratio per repetition,
  t interval over repetitions; claimed past the floor and the noise, Benjamini-Hochberg over the
  configurations of the call.
A finding's `numbers["claim"]` says whether it claims an effect.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from numasweep.statistics import contrasts, stats
from numasweep.results import series, tables
from numasweep.findings.analysis import Finding, _distance, _in, _iv, _sz, _topology
from numasweep.findings.mlc_analysis import hinge_knee
from numasweep.statistics.stats import Interval, Series

MIN_EFFECT = contrasts.MIN_EFFECT   # a bandwidth difference under 10 % is not claimed
DRAWS = 400
UNITS = (series.REPETITION,)
BANDWIDTH = stats.Measure("mb_s", "min_mb_s", "best_mb_s", "ntimes", "threads")
COPY = stats.Measure("best_gb_s", "min_gb_s", "best_gb_s", "ntimes", "bytes")
SPREAD = ("mb_s", "min_mb_s", "best_mb_s", "ntimes", series.REPETITION, "threads")
WHERE = ("cpu_nodes", "mem_nodes", "memory", "cpu_node")   # where threads and memory are
REPETITIONS_NOTE = "one repetition: run-to-run variation unseen"


# ---------------------------------------------------------------- shared pieces

def _runs(bandwidth: pd.DataFrame | None) -> tuple[pd.DataFrame, list[str], str]:
    """One row per run (series, thread count, repetition), the series keys, and the metric."""
    runs, metric = tables.bandwidth_points(bandwidth, runs=True)
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


def _unit_interval(d: np.ndarray, run_se: np.ndarray, what: str) -> tuple[Interval, float, float]:
    """A log quantity measured once per repetition (NaN where one lacks it) as (interval, se,
    dof): a t interval over repetitions, or with one repetition a normal interval from its
    within-run spread, or no interval."""
    ok = np.isfinite(d)
    d, run_se = d[ok], run_se[ok]
    if len(d) >= 2:
        est, se, n = stats.unit_mean(d[:, None])
        return (stats.t_interval(est, se, n - 1, method=f"t interval over {n} repetitions on the log {what} "
                                                        f"({n - 1} df)"), se, n - 1)
    if len(d) == 1 and np.isfinite(run_se[0]) and run_se[0] > 0:
        return (stats.t_interval(float(d[0]), float(run_se[0]), math.inf,
                                 method=f"normal interval on the log {what} from the within-run spread "
                                        f"({REPETITIONS_NOTE})"), float(run_se[0]), math.inf)
    return (Interval.unknown(math.exp(float(d[0])) if len(d) else math.nan,
                             "noise unknown: one repetition without within-run spread"), math.nan, math.nan)


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


def _series_name(r: Any) -> str:
    """Names every series column that can tell two bandwidth series apart."""
    kernel = f"{r['kernel']} " if r["kernel"] else ""
    text = f"{kernel}bandwidth with threads on node {r['cpu_nodes']} and memory on node {r['mem_nodes']}"
    extra = []
    if str(r.get("array_bytes", "")).strip():
        extra.append(f"{_sz(float(r['array_bytes']))} arrays")
    for col, word in (("stores", "stores"), ("pattern", "pattern"), ("stride", "stride"), ("page_size", "pages"),
                      ("weights", "weights"), ("memory", "memory"), ("label", "sweep")):
        value = str(r.get(col, "")).strip()
        if value and (col, value) not in (("stores", "regular"), ("pattern", "sequential")) \
                and not (col == "stride" and value in ("0", "1")):
            extra.append(f"{word} {value}")
    return text + (f" ({', '.join(extra)})" if extra else "")


# ---------------------------------------------------------------- saturation

def saturation_point(s: Series) -> tuple[Interval, int | None]:
    """Thread count where the series reaches its plateau (hinge fit, bootstrap over repetitions)
    and its column, or an unknown interval and None when no bend is found."""
    knee = hinge_knee(s.sizes.astype(float), np.exp(s.center()), bend=-1)
    if not math.isfinite(knee):
        return Interval.unknown(math.nan, "no bend: bandwidth does not level off"), None
    col = int(np.searchsorted(s.sizes, knee))
    if s.logs.shape[0] < 2 and not np.isfinite(s.run_se).any():
        return Interval.unknown(knee, "noise unknown: one repetition without within-run spread"), col
    draws = s.draws(stats.SEED + 5, DRAWS)
    knees = np.asarray(hinge_knee(s.sizes.astype(float), np.exp(draws).T, bend=-1))
    hit = knees[np.isfinite(knees)]
    if len(hit) < DRAWS // 2:
        return Interval.unknown(knee, "the bootstrap rarely finds a bend"), col
    reps = s.logs.shape[0]
    how = f"over {reps} repetitions" if reps > 1 else f"of the within-run spread ({REPETITIONS_NOTE})"
    return Interval(knee, float(np.quantile(hit, 0.025)), float(np.quantile(hit, 0.975)), stats.LEVEL,
                    f"hinge fit, percentile bootstrap {how} ({DRAWS} draws)"), col


def bandwidth_saturation(bandwidth: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Per bandwidth series: the thread count of its plateau, the plateau and the rise to it."""
    runs, keys, metric = _runs(bandwidth)
    if runs.empty:
        return []
    curves = [s for s in stats.series_table(runs, keys, UNITS, BANDWIDTH) if len(s.sizes) >= 3]
    fits = []
    for s in curves:
        point, col = saturation_point(s)
        cols = np.arange(len(s.sizes)) >= (col if col is not None else len(s.sizes) - 1)
        plateau, _, _ = _unit_interval(*_over(s, cols), "plateau")
        top, top_se = _over(s, cols)
        rise, se, dof = _unit_interval(top - s.logs[:, 0], np.hypot(top_se, s.run_se[:, 0]), "rise")
        fits.append((s, point, col, plateau, rise, stats.rise_pvalue(math.log(rise.estimate), se, dof, MIN_EFFECT)))
    flags = stats.benjamini_hochberg([f[-1] for f in fits])
    findings = []
    for (s, point, col, plateau, rise, p), claim in zip(fits, flags):
        first = s.key
        name = _series_name(first)
        medians = np.exp(s.center())
        peak = int(np.nanargmax(medians))
        t0 = int(s.sizes[0])
        noise_rule = s.noise()[3]
        t0_text = f"{t0} thread{'s' if t0 != 1 else ''}"
        at = (f"{int(point.estimate)} threads ({point.level * 100:.0f}% interval {point.low:.0f} to "
              f"{point.high:.0f}; {point.method})" if np.isfinite(point.low)
              else f"{int(point.estimate)} threads ({point.method})" if col is not None else "")
        if claim and col is not None:
            text = f"rises {rise.text('{:.2f}x')} from {t0_text} to a plateau of {plateau.text('{:.0f}')} MB/s, reached at {at}"
        elif claim:
            text = (f"rises {rise.text('{:.2f}x')} from {t0_text} to {int(s.sizes[-1])} and does not level off "
                    "within the thread counts tested")
        elif not np.isfinite(p):
            text = (f"goes from {t0_text} to a plateau of {plateau.estimate:.0f} MB/s, {rise.text('{:.2f}x')} higher"
                    + (f" from {at} on" if at else "") + "; with the noise unknown nothing is claimed")
        else:
            text = (f"does not rise beyond the noise and the {MIN_EFFECT * 100:.0f}% floor from {t0_text} on "
                    f"(plateau / first {rise.text('{:.2f}x')}; plateau {plateau.text('{:.0f}')} MB/s)")
        findings.append(Finding(
            id="bandwidth_saturation", bench="bandwidth", title=f"Saturation: {name}",
            summary=(f"{name[0].upper() + name[1:]} {text}; the highest median is {medians[peak]:.0f} MB/s at "
                     f"{int(s.sizes[peak])} threads."),
            numbers={"cpu_nodes": first["cpu_nodes"], "mem_nodes": first["mem_nodes"], "kernel": first["kernel"],
                     "policy": first["policy"], "metric": metric, "claim": bool(claim),
                     **_iv("saturation_threads", point if col is not None else None),
                     **_iv("plateau_mb_s", plateau), **_iv("rise", rise), "p_value": p, "floor": MIN_EFFECT,
                     "peak_mb_s": float(medians[peak]), "peak_threads": int(s.sizes[peak]), "first_threads": t0,
                     "repetitions": int(s.logs.shape[0]), "noise_rule": noise_rule},
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
    ratio, se, dof = _unit_interval(*_over(s, cols), "ratio")
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
             "repetitions": s.units, "differs": s.differs} for s in c.per_size]


def _medians(rows: pd.DataFrame) -> pd.Series:
    return rows.groupby("threads")["mb_s"].median()


def bandwidth_locality(bandwidth: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Remote over local bandwidth for threads on one node, per series and thread count, next to
    the firmware distances (and where a claim contradicts them, a finding of that); and the best
    over the worst interleave weights of each weighted series. Every pair compared is one family."""
    topo = _topology(topology)
    runs, keys, metric = _runs(bandwidth)
    if runs.empty:
        return []
    pairs, meta = _locality_pairs(runs, keys)
    weight_pairs, weight_meta = _weight_pairs(runs, keys)
    found = _contrasts(pairs + weight_pairs)
    return _locality_findings(found, meta, topo, metric) + _weight_findings(found, weight_meta, metric)


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


def _locality_findings(found: dict, meta: dict, topo: dict, metric: str) -> list[Finding]:
    findings = []
    for label, (cpu, mem, remote, local, name) in meta.items():
        c = found.get(label)
        if c is None:
            continue
        ratio, threads, equivalent, p = _stated(c)
        d_local, d_remote = _distance(topo, int(cpu), int(cpu)), _distance(topo, int(cpu), int(mem))
        known = d_local is not None and d_remote is not None
        contradicts = bool(c.differs and known and d_remote != d_local
                           and (d_remote > d_local) == (ratio.estimate > 1))
        dist_text = (f"; firmware distance {d_remote} vs {d_local}" if known else
                     "; firmware distances are not recorded")
        rem, loc = _medians(remote), _medians(local)
        numbers = {"cpu_node": int(cpu), "mem_node": int(mem), "metric": metric, "claim": c.differs,
                   "differs": c.differs, "equivalent": equivalent, "floor": c.floor, **_iv("ratio", ratio),
                   "ratio_threads_min": int(threads.min()), "ratio_threads_max": int(threads.max()),
                   "p_value": p, "local_peak_mb_s": float(loc.max()), "remote_peak_mb_s": float(rem.max()),
                   "distance_local": d_local, "distance_remote": d_remote,
                   "distance_order_agrees": (not contradicts) if known and c.differs else None,
                   "repetitions": len(c.ratios.replicates), "noise_rule": c.noise_rule, "config": name}
        evidence = _per_thread(c, rem, loc, ("remote_mb_s", "local_mb_s"))
        verdict = _verdict(c, ratio, equivalent, f"threads on node {cpu} reach with node {mem}'s memory",
                           "the bandwidth of their own node's memory")
        findings.append(Finding(
            id="bandwidth_locality", bench="bandwidth", title=f"Bandwidth: node {mem} vs node {cpu} memory" + _in(name),
            summary=(f"Over {_threads(threads)} (geometric mean), {verdict} (peak medians {rem.max():.0f} vs "
                     f"{loc.max():.0f} MB/s){dist_text}."),
            numbers=numbers, evidence=evidence))
        if contradicts:
            farther = "farther" if d_remote > d_local else "nearer"
            findings.append(Finding(
                id="bandwidth_ordering", bench="bandwidth",
                title=f"Bandwidth ordering contradicts the firmware distances: node {mem} vs node {cpu} memory"
                      + _in(name),
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
    base = [c for c in keys if c != "weights"]
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
            title=f"Best interleave weights over nodes {mem} from node {cpu}" + _in(name),
            summary=(f"Weighted interleave over nodes {mem} from node {cpu}'s CPUs, over {_threads(threads)} "
                     f"(geometric mean): {verdict} ({len(order)} weightings compared, every pair tested)."),
            numbers={"cpu_nodes": cpu, "mem_nodes": mem, "metric": metric, "claim": c.differs,
                     "differs": c.differs, "equivalent": equivalent, "floor": c.floor, "best_weights": best,
                     "worst_weights": worst, "best_mb_s": float(per[best]), "worst_mb_s": float(per[worst]),
                     **_iv("ratio", ratio), "p_value": p, "weightings": len(order),
                     "repetitions": len(c.ratios.replicates), "noise_rule": c.noise_rule},
            evidence=[{"weights": w, "mb_s": float(per[w])} for w in order],
        ))
    return findings


# ---------------------------------------------------------------- copy

def copy_matrix(copy: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Per copy configuration: fastest and slowest cells, and cross-node over within-node copies
    (geometric means over cells, one log ratio per repetition)."""
    need = {"src_node", "dst_node", "best_gb_s"}
    if copy is None or copy.empty or not need <= set(copy.columns):
        return []
    stats.check_values(copy, "copy.csv", COPY)
    df = series.normalise(copy, "copy")
    df[series.REPETITION] = tables.as_text(df[series.REPETITION]) if series.REPETITION in df else ""
    df["_log"] = np.log(pd.to_numeric(df["best_gb_s"], errors="coerce"))
    df["_se"] = stats.run_standard_error(df, COPY)
    cell = [c for c in ("src_node", "dst_node", "cpu_node") if c in df]
    config = [c for c in series.series_columns(df, "copy") if c not in cell]
    varying = [c for c in config if df[c].astype(str).nunique() > 1]
    fits = []
    for key, g in (df.groupby(config) if config else [((), df)]):
        cells = g.groupby(cell)["best_gb_s"].median()
        if len(cells) < 2:
            continue
        inside_cells = (g["src_node"] == g["dst_node"]).to_numpy()
        d, se_d = [], []
        for _, r in g.groupby(series.REPETITION):
            inside = r[r["src_node"] == r["dst_node"]].groupby(cell)[["_log", "_se"]].median()
            across = r[r["src_node"] != r["dst_node"]].groupby(cell)[["_log", "_se"]].median()
            if inside.empty or across.empty:
                continue
            d.append(across["_log"].mean() - inside["_log"].mean())
            se_d.append(math.hypot(math.sqrt((across["_se"] ** 2).sum()) / len(across),
                                   math.sqrt((inside["_se"] ** 2).sum()) / len(inside)))
        ratio = p = None
        if inside_cells.any() and (~inside_cells).any() and d:
            ratio, se, dof = _unit_interval(np.array(d), np.array(se_d), "ratio")
            p = stats.excess_pvalue(math.log(ratio.estimate), se, dof, MIN_EFFECT)
        fits.append((key, g, cells, ratio, p))
    flags = stats.benjamini_hochberg([f[-1] if f[-1] is not None else math.nan for f in fits])
    findings = []
    for (key, g, cells, ratio, p), claim in zip(fits, flags):
        fast, slow = cells.idxmax(), cells.idxmin()
        name = ", ".join(f"{c} {g.iloc[0][c]}" for c in varying)
        local = cells[[i[0] == i[1] for i in cells.index]]
        cross = cells[[i[0] != i[1] for i in cells.index]]
        ratio_text = ""
        if ratio is not None:
            verdict = ("beyond the noise and the {f} floor" if claim else
                       "noise unknown: nothing claimed" if not np.isfinite(ratio.low) else
                       "inside the {f} margin: equivalent" if np.isfinite(ratio.low) and 1 / (1 + MIN_EFFECT)
                       <= ratio.low and ratio.high <= 1 + MIN_EFFECT else
                       "not beyond the noise and the {f} floor: indistinguishable").format(f=f"{MIN_EFFECT * 100:.0f}%")
            ratio_text = (f"; copies across nodes reach {ratio.text('{:.2f}x')} the bandwidth of copies within a node "
                          f"(geometric means over cells, {verdict}; within a node {local.median():.1f} GB/s, across "
                          f"nodes {cross.median():.1f} GB/s, medians)")

        def where(i: tuple) -> str:
            return f"from node {i[0]} to node {i[1]}" + (f" (threads on node {i[2]})" if len(i) > 2 and i[2] >= 0
                                                         else "")
        findings.append(Finding(
            id="copy_matrix", bench="copy", title="Copy bandwidth between nodes" + _in(name),
            summary=(f"Copies{' (' + name + ')' if name else ''} are fastest {where(fast)} ({cells[fast]:.1f} GB/s) "
                     f"and slowest {where(slow)} ({cells[slow]:.1f} GB/s){ratio_text}."),
            numbers={"claim": bool(claim), "config": name,
                     "fastest": {"src_node": fast[0], "dst_node": fast[1], "gb_s": cells[fast]},
                     "slowest": {"src_node": slow[0], "dst_node": slow[1], "gb_s": cells[slow]},
                     **_iv("cross_to_local", ratio), "p_value": p, "floor": MIN_EFFECT,
                     "local_median_gb_s": local.median() if len(local) else None,
                     "cross_median_gb_s": cross.median() if len(cross) else None},
            evidence=[{**dict(zip(cell, i)), "gb_s": v} for i, v in cells.items()],
        ))
    return findings
