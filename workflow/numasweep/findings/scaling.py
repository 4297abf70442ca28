"""Rank scaling: latency against the ranks per domain, sequential against interleaved placement,
per domain set (what the seed's run_numa_benchmarks.sh sweeps).

A scaling curve is one latency configuration (`numasweep.results.series`: strategy, domains, mode,
memory, pages, label, ...) measured at several ranks per domain, taken at its largest buffer
size (where every rank is beyond its caches). Its units
are the ranks of a run: each rank's latency is the median over repetitions.
- `rank_scaling`: the latency of the ranks at the most ranks per domain against the median at
  the fewest, as the geometric mean over those ranks of their ratio, with a t interval over the
  ranks (`stats.unit_mean_interval`);
- `placement_scaling`: at each rank count both strategies ran, sequential against interleaved
  ranks (difference of mean log latency, Welch's standard error, a t interval); the finding
  names the rank count with the largest difference, and the ratio at every other count.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from numasweep.results import series
from numasweep.statistics import stats
from numasweep.findings.analysis import Finding
from numasweep.core.units import format_size

RPD = "ranks_per_domain"
# The columns that name a scaling curve: the configuration of a run less its rank count.
CURVE = tuple(c for c in series.SERIES["latency"]
              if c not in series.WITHIN["latency"] and c not in (RPD, "ranks"))


def scaling_points(latency: pd.DataFrame | None) -> pd.DataFrame:
    """One row per rank of every run at its configuration's largest size (median over
    repetitions), for the configurations measured at two or more rank counts per domain; empty
    when there are none."""
    if latency is None or latency.empty or RPD not in latency or "size_bytes" not in latency:
        return pd.DataFrame()
    # a campaign at one rank count per domain (the seed's sweep) has no curve: no table to reduce
    counts = pd.to_numeric(latency[RPD], errors="coerce").fillna(-1).astype("int64")
    if counts[counts > 0].nunique() < 2:
        return pd.DataFrame()
    points = series.point_table(latency, "latency", ["latency_ns_median"])
    points = points[(points[RPD] > 0) & (points["latency_ns_median"] > 0)]
    if points.empty:
        return pd.DataFrame()
    curve = [c for c in CURVE if c in points]
    counts = points.groupby(curve + ["size_bytes"], dropna=False)[RPD].transform("nunique")
    points = points[counts >= 2]
    # a size sweep is judged at its largest size, where every rank is beyond its caches
    largest = points.groupby(curve, dropna=False)["size_bytes"].transform("max")
    return points[points["size_bytes"] == largest].reset_index(drop=True)


def curve_columns(points: pd.DataFrame, without: tuple[str, ...] = ()) -> list[str]:
    return [c for c in CURVE if c in points and c not in without]


def _name(key: dict) -> str:
    parts = [f"{key.get('strategy', '')}".strip(), f"domains {key.get('domains', '')}"]
    for col in ("mode", "memory", "pages", "label", "system", "host"):
        value = str(key.get(col, "")).strip()
        if value:
            parts.append(value)
    return ", ".join(p for p in parts if p and p != "domains ")


def rank_scaling(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    points = scaling_points(latency)
    if points.empty:
        return []
    cols = curve_columns(points)
    findings = []
    for key, g in points.groupby(cols + ["size_bytes"], sort=True, dropna=False):
        key = dict(zip(cols + ["size_bytes"], key))
        rpds = sorted(g[RPD].unique())
        per_count = g.groupby(RPD)["latency_ns_median"].median()
        base = per_count[rpds[0]]
        top = g[g[RPD] == rpds[-1]]["latency_ns_median"].to_numpy(float)
        interval = stats.unit_mean_interval(np.log(top / base).reshape(-1, 1))
        name = _name(key)
        size = format_size(int(key["size_bytes"]))
        findings.append(Finding(
            id="rank_scaling", bench="latency",
            title=f"Rank scaling at {size} ({name})",
            summary=(f"From {rpds[0]} to {rpds[-1]} ranks per domain ({name}, {size}), the latency of a rank is "
                     f"{interval.text()} times the {base:.1f} ns at {rpds[0]} per domain "
                     f"(geometric mean over the {len(top)} ranks of the largest run; {interval.method})."),
            numbers={**{k: series.label(v) for k, v in key.items()}, "from_ranks_per_domain": int(rpds[0]),
                     "to_ranks_per_domain": int(rpds[-1]), "ratio": interval.estimate, "low": interval.low,
                     "high": interval.high, "level": interval.level, "base_ns": float(base)},
            evidence=[{RPD: int(r), "latency_ns_median": float(v), "ranks": int((g[RPD] == r).sum())}
                      for r, v in per_count.items()],
        ))
    findings += placement_scaling(points)
    return findings


def placement_scaling(points: pd.DataFrame) -> list[Finding]:
    """Sequential against interleaved ranks, per domain set, size and rank count per domain."""
    if "strategy" not in points or not {"sequential", "interleaved"} <= set(points["strategy"].unique()):
        return []
    cols = curve_columns(points, without=("strategy",))
    findings = []
    for key, g in points.groupby(cols + ["size_bytes"], sort=True, dropna=False):
        key = dict(zip(cols + ["size_bytes"], key))
        by_count = []
        for rpd, h in g.groupby(RPD):
            seq = h[h["strategy"] == "sequential"]["latency_ns_median"].to_numpy(float)
            inter = h[h["strategy"] == "interleaved"]["latency_ns_median"].to_numpy(float)
            if len(seq) and len(inter):
                by_count.append((int(rpd), stats.welch(seq, inter, "Welch t interval on the mean log latency over ranks")[0]))
        if not by_count:
            continue
        rpd, interval = max(by_count, key=lambda c: abs(math.log(c[1].estimate)))
        name = _name({**key, "strategy": ""})
        size = format_size(int(key["size_bytes"]))
        findings.append(Finding(
            id="placement_scaling", bench="latency",
            title=f"Sequential vs interleaved ranks at {size} ({name})",
            summary=(f"With {rpd} ranks per domain ({name}, {size}), sequential placement gives "
                     f"{interval.text()} times the latency of interleaved placement ({interval.method}); "
                     "at each rank count: " + ", ".join(f"{r} per domain {i.estimate:.2f}x" for r, i in by_count)
                     + "."),
            numbers={**{k: series.label(v) for k, v in key.items()}, RPD: rpd, "ratio": interval.estimate,
                     "low": interval.low, "high": interval.high, "level": interval.level},
            evidence=[{RPD: r, "ratio": i.estimate, "low": i.low, "high": i.high} for r, i in by_count],
        ))
    return findings
