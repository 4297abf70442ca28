"""Findings of the loaded-latency, core-to-core and mixed-bandwidth kernels (the measurements
engineers reach Intel MLC for), each number with its interval:

- **loaded latency** (numa_loaded_latency): per series (chase node and CPU, memory node, traffic
  kind, load threads, buffers, page size, ...: every column of `series.SERIES`; those that vary
  besides the named ones are said in the title), the latency-against-achieved-bandwidth curve; its *knee* is the breakpoint of a hinge fit
  (latency = a + b x + c max(0, x - knee), x the load's GB/s, the knee at the point that
  minimises the squared error with c > 0), with a percentile bootstrap over the curve's points,
  looked for only where the rise below is significant;
  the rise from idle to the heaviest load is a ratio with a t interval from each point's
  within-run spread (`stats.run_standard_error`).
- **core-to-core** (numa_c2c): pairs classed by the topology the kernel found them on (same L3
  group, other L3 group of the same node, other node); each class's median round trip and the
  ratio of each outer class to the L3 class, with a percentile bootstrap over pairs (pairs are
  the units); whether every pair inside an L3 group is faster than every pair outside it (the
  heatmap shows the topology's groups) is said with the counts.
- **bandwidth matrix** (numa_mix_bandwidth --matrix): per traffic kind, local cells (CPU node =
  memory node) against remote cells, a ratio of medians with a percentile bootstrap over cells.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from numasweep import levels, series, stats
from numasweep.analysis import Finding

DRAWS = 1000
PLACED_CPUS = ("chase_cpu", "load_nodes", "load_cpus")  # where the chase and the load ran
SHARED_CPU_PCT = 90  # a chase on its CPU for less of a sample than this shared the CPU


def bootstrap(groups: list[np.ndarray], statistic: Callable[..., float], what: str) -> stats.Interval:
    """Percentile bootstrap of statistic(*groups), each group resampled with replacement on its
    own (its elements are the units)."""
    estimate = float(statistic(*groups))
    if any(len(g) < 2 for g in groups):
        return stats.Interval.unknown(estimate, f"fewer than 2 {what}: no interval")
    rng = np.random.default_rng(stats.SEED + 3)
    draws = np.array([statistic(*(g[rng.integers(0, len(g), len(g))] for g in groups)) for _ in range(DRAWS)])
    draws = draws[np.isfinite(draws)]
    if len(draws) < DRAWS // 2:
        return stats.Interval.unknown(estimate, f"the bootstrap over {what} rarely gives a value")
    return stats.Interval(estimate, float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975)), stats.LEVEL,
                          f"percentile bootstrap over {min(len(g) for g in groups)}+ {what} ({DRAWS} draws)")


def node_set(column: pd.Series) -> pd.Series:
    """A per-thread node list ("0,0,1,1") as the set of nodes ("0,1"); empty stays empty."""
    def one(text: object) -> str:
        nodes = {int(float(x)) for x in str(text).split(",") if x.strip() not in ("", "nan")}
        return ",".join(str(n) for n in sorted(nodes))
    return column.map(one)


def _num(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").to_numpy(float)


# ---------------------------------------------------------------- loaded latency

def hinge_knee(x: np.ndarray, y: np.ndarray, bend: int = 1) -> float | np.ndarray:
    """The breakpoint of the best continuous two-segment fit whose second slope is steeper
    (bend=1: a knee, latency under load) or flatter (bend=-1: bandwidth saturating with threads).
    y may hold several curves over the same x as columns (bootstrap draws): one knee each."""
    order = np.argsort(x)
    x, y = np.asarray(x, float)[order], np.asarray(y, float)[order]
    ys = y.reshape(len(x), -1)
    best, knee = np.full(ys.shape[1], math.inf), np.full(ys.shape[1], math.nan)
    for k in np.unique(x)[1:-1]:
        design = np.column_stack([np.ones_like(x), x, np.maximum(0.0, x - k)])
        coef = np.linalg.pinv(design) @ ys
        sse = np.sum((design @ coef - ys) ** 2, axis=0)
        better = (coef[2] * bend > 0) & (sse < best)
        best, knee = np.where(better, sse, best), np.where(better, float(k), knee)
    return float(knee[0]) if y.ndim == 1 else knee


def named_cpus(df: pd.DataFrame) -> list[str]:
    """The columns of PLACED_CPUS a loaded-latency finding, figure or table names: those with
    several values for one chase node and memory, not those that follow the node."""
    where = [c for c in ("chase_node", "mem_nodes") if c in df]
    return [c for c in PLACED_CPUS if c in df and where and df.groupby(where)[c].nunique().max() > 1]


def loaded_latency(table: pd.DataFrame | None) -> list[Finding]:
    if table is None or table.empty or "load_gb_s" not in table:
        return []
    df = table.copy()
    # one curve per series (`series.SERIES`): two chase buffers, load sizes, policies or CPUs are
    # never one curve; those of them that vary are named in the finding
    keys = series.series_columns(df, "loaded_latency")
    for col in keys:
        df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    named = ("host", "chase_node", "mem_nodes", "traffic", "strategy", "load_threads", "label")
    cpus = named_cpus(df)
    varying = [c for c in series.config_columns(df, "loaded_latency", without=named)
               if c not in PLACED_CPUS or c in cpus]
    findings = []
    for key, g in df.groupby(keys):
        row = dict(zip(keys, key))
        idle = g[pd.to_numeric(g["delay"], errors="coerce") < 0]
        loaded = g[pd.to_numeric(g["delay"], errors="coerce") >= 0]
        if idle.empty or len(loaded) < 1:
            continue
        heaviest = loaded.loc[pd.to_numeric(loaded["load_gb_s"], errors="coerce").idxmax()]
        pair = pd.DataFrame([idle.iloc[0], heaviest])
        se = stats.run_standard_error(pair, levels.LATENCY)
        logs = np.log(_num(pair, "latency_ns_median"))
        dof = max(1.0, float(np.nanmin(_num(pair, "samples"))) - 1)
        rise = stats.t_interval(logs[1] - logs[0], float(np.hypot(*se)), dof,
                                method=f"t interval from the two points' within-run spread ({dof:.0f} df)")
        x = np.concatenate([[0.0], _num(loaded, "load_gb_s")])
        y = np.concatenate([[float(idle.iloc[0]["latency_ns_median"])], _num(loaded, "latency_ns_median")])
        memory = f"memory on node(s) {row['mem_nodes']}" if row.get("mem_nodes") else "memory by the default policy"
        load = f"{row['load_threads']} load threads" + (f" ({row['strategy']})" if row.get("strategy") else "") \
            if row.get("load_threads") else "load threads"
        where = (f"chase on node {row.get('chase_node', '?')}, {memory}, {load}, {row.get('traffic', '?')} traffic"
                 + (f", {row['label']}" if row.get("label") else "")
                 + "".join(f", {c} {row[c]}" for c in varying if row.get(c)))
        summary = (f"With {where}, latency goes from {y[0]:.0f} ns idle to {float(heaviest['latency_ns_median']):.0f} ns "
                   f"at {float(heaviest['load_gb_s']):.1f} GB/s of load: {rise.text('{:.2f}x')}.")
        numbers: dict[str, Any] = {"idle_ns": y[0], "peak_load_gb_s": float(heaviest["load_gb_s"]),
                                   "loaded_ns": float(heaviest["latency_ns_median"]),
                                   "rise": {"estimate": rise.estimate, "low": rise.low, "high": rise.high}}
        # A bend is looked for only where latency demonstrably rises under load.
        if len(x) >= 4 and rise.low > 1:
            points = np.column_stack([x, y])
            knee = bootstrap([points], lambda p: hinge_knee(p[:, 0], p[:, 1]), "curve points")
            if math.isfinite(knee.estimate):
                numbers["knee_gb_s"] = {"estimate": knee.estimate, "low": knee.low, "high": knee.high,
                                        "method": knee.method}
                summary += (f" The curve bends at {knee.text('{:.1f}')} GB/s, "
                            f"{knee.estimate / float(heaviest['load_gb_s']):.0%} of the highest load reached.")
        if "chase_on_cpu_pct" in g and np.nanmin(_num(g, "chase_on_cpu_pct")) < SHARED_CPU_PCT:
            share = float(np.nanmin(_num(g, "chase_on_cpu_pct")))
            numbers["chase_on_cpu_pct_min"] = share
            summary += (f" The chase ran only {share:.0f}% of some samples on its CPU: the CPU was shared with other "
                        f"work, and those latencies are inflated.")
        findings.append(Finding(
            id="loaded_latency", bench="loaded_latency", title=f"Loaded latency: {where}", summary=summary,
            numbers={**row, **numbers},
            evidence=[{"load_gb_s": float(a), "latency_ns": float(b)} for a, b in sorted(zip(x, y))],
        ))
    return findings


# ---------------------------------------------------------------- core to core

CLASSES = ("same L3 group", "other L3 group, same node", "other node")


def pair_class(row: pd.Series) -> str:
    if row["node_a"] != row["node_b"]:
        return CLASSES[2]
    return CLASSES[0] if row["l3_group_a"] == row["l3_group_b"] else CLASSES[1]


def _pairs(n: int) -> str:
    return f"{n} pair" + ("" if n == 1 else "s")


def core_to_core(table: pd.DataFrame | None) -> list[Finding]:
    if table is None or table.empty or "round_trip_ns_median" not in table:
        return []
    df = table[(pd.to_numeric(table["cpu_a"], errors="coerce") >= 0)
               & (pd.to_numeric(table["cpu_b"], errors="coerce") >= 0)].copy()
    if df.empty:
        return []
    df["class"] = df.apply(pair_class, axis=1)
    keys = [c for c in ("system", "host", "label", "mem_nodes") if c in df]
    for col in keys:
        df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    findings = []
    for key, g in (df.groupby(keys) if keys else [((), df)]):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        values = {c: _num(g[g["class"] == c], "round_trip_ns_median") for c in CLASSES}
        present = [c for c in CLASSES if len(values[c])]
        if not present:
            continue
        base = present[0]
        parts = [f"{base}: {np.median(values[base]):.0f} ns ({_pairs(len(values[base]))})"]
        numbers: dict[str, Any] = {c: {"median_ns": float(np.median(values[c])), "pairs": len(values[c])}
                                   for c in present}
        for c in present[1:]:
            ratio = bootstrap([values[c], values[base]], lambda a, b: np.median(a) / np.median(b), "pairs")
            numbers[c]["ratio_to_" + base.replace(" ", "_")] = {"estimate": ratio.estimate, "low": ratio.low,
                                                               "high": ratio.high}
            parts.append(f"{c}: {np.median(values[c]):.0f} ns ({_pairs(len(values[c]))}), "
                         f"{ratio.text('{:.2f}x')} the {base} round trip")
        summary = "Round trips of a cache line between two CPUs, median per pair class: " + "; ".join(parts) + "."
        if len(present) > 1:
            inside, outside = values[base], np.concatenate([values[c] for c in present[1:]])
            apart = int(np.sum(inside[:, None] < outside[None, :]))
            numbers["pairs_ordered"] = {"faster": apart, "of": int(inside.size * outside.size)}
            summary += (f" {apart} of {inside.size * outside.size} (inside, outside) pair comparisons put the "
                        f"{base} pair faster" + (": the heatmap shows the topology's groups." if
                                                  apart == inside.size * outside.size else "."))
        findings.append(Finding(
            id="core_to_core", bench="c2c", title="Core-to-core latency by pair class", summary=summary,
            numbers={**row, **numbers},
            evidence=[{"cpu_a": int(r.cpu_a), "cpu_b": int(r.cpu_b), "class": r["class"],
                       "round_trip_ns": float(r.round_trip_ns_median)} for _, r in g.iterrows()],
        ))
    return findings


# ---------------------------------------------------------------- bandwidth matrix

def bandwidth_matrix(table: pd.DataFrame | None) -> list[Finding]:
    if table is None or table.empty or "gb_s_median" not in table:
        return []
    df = table.assign(cpu_nodes=node_set(table["cpu_nodes"]), mem_nodes=node_set(table["mem_nodes"]))
    cells = df[~df["cpu_nodes"].str.contains(",") & ~df["mem_nodes"].str.contains(",") & (df["mem_nodes"] != "")]
    keys = [c for c in ("system", "host", "label", "traffic", "threads", "size_bytes") if c in cells]
    findings = []
    for key, g in (cells.groupby(keys) if keys else [((), cells)]):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        local = _num(g[g["cpu_nodes"] == g["mem_nodes"]], "gb_s_median")
        remote = _num(g[g["cpu_nodes"] != g["mem_nodes"]], "gb_s_median")
        if not len(local) or not len(remote):
            continue
        ratio = bootstrap([remote, local], lambda a, b: np.median(a) / np.median(b), "cells")
        best = g.loc[pd.to_numeric(g["gb_s_median"], errors="coerce").idxmax()]
        worst = g.loc[pd.to_numeric(g["gb_s_median"], errors="coerce").idxmin()]
        findings.append(Finding(
            id="bandwidth_matrix", bench="mix_bandwidth",
            title=f"CPU node x memory node bandwidth, {row.get('traffic', '')} traffic",
            summary=(f"Remote memory gives {ratio.text('{:.2f}x')} the bandwidth of local memory "
                     f"(medians {np.median(remote):.1f} vs {np.median(local):.1f} GB/s over {len(remote)} remote and "
                     f"{len(local)} local cells); the best cell is CPU node {best['cpu_nodes']} to memory node "
                     f"{best['mem_nodes']} ({float(best['gb_s_median']):.1f} GB/s), the worst CPU node "
                     f"{worst['cpu_nodes']} to memory node {worst['mem_nodes']} ({float(worst['gb_s_median']):.1f} GB/s)."),
            numbers={**row, "remote_to_local": {"estimate": ratio.estimate, "low": ratio.low, "high": ratio.high},
                     "local_median_gb_s": float(np.median(local)), "remote_median_gb_s": float(np.median(remote))},
            evidence=[{"cpu_node": r["cpu_nodes"], "mem_node": r["mem_nodes"], "gb_s": float(r["gb_s_median"])}
                      for _, r in g.iterrows()],
        ))
    return findings
