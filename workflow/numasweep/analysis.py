"""Findings computed from aggregated results: every number a report states comes from here.

Each analysis is a pure function over tidy DataFrames (the aggregated `<bench>.csv` of
docs/INTERFACES.md) and the topology (a `Topology` or its dict), returning `list[Finding]`, and
`[]` when the data it needs is absent. A finding's `summary` is written from its own `numbers`.

Latency findings (`latency_findings`) come from the statistical model of docs/STATISTICS.md:
`levels` finds each curve's transitions and their causes (a cache level one core can use, the TLB
where 4 KiB and huge-page curves part, or nothing, said once), refuses curves that are not latency,
and `contrasts` compares modes and L3 groups size by size; every ratio, onset and location carries
its interval and method, decisions hold the false-finding rate over every point tested, and a
floor of practical effect stays. A finding's `numbers["claim"]` says whether it claims an effect.
`latency_locality` tests every pair of CPU nodes reaching one node's memory against the firmware
distances (Welch intervals over ranks, Benjamini-Hochberg over the pairs of the call); a farther
node faster beyond the floor and the noise is a finding of its own (`latency_ordering`).
Bandwidth and copy findings (`bandwidth_analysis`) rest on the same model, with thread counts for
sizes and repetitions for units. A GPU plateau here is the mean over runs (repetitions) of each
run's median over the plateau sizes, with a t interval over the runs; its ratios get Welch intervals.
`analyse` runs them as parts that need nothing from each other (`_parts`: the latency levels,
contrasts and outliers apart, each analysis of the other benchmarks), side by side in forked
worker processes on a large table (`workers.run`); each part seeds its own draws, so the findings
are the same numbers in one process or several.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from numasweep import benches, contrasts, levels, series, stats, workers
from numasweep.errors import NumasweepError
from numasweep.stats import Interval
from numasweep.topology import Topology
from numasweep.io import REPORT_ONLY, UNREAD, atomic_write_text, read_csv
from numasweep.tables import as_text as _text
from numasweep.tables import latency_points as _latency_points
from numasweep.tables import l3_position as _l3_position
from numasweep.tables import locality, node_lists
from numasweep.tables import nodes as _nodes
from numasweep.units import format_size, parse_page_fractions

MIN_EFFECT = contrasts.MIN_EFFECT   # a difference between nodes' latencies: at least 10 %
SATURATION = 0.95        # a GPU transfer plateau: the sizes reaching 95 % of the largest bandwidth
PLACEMENT_OK = 0.99      # a rank whose pages are less than 99 % on the requested node(s) is flagged
MAX_ANOMALIES = 10


@dataclass
class Finding:
    id: str
    bench: str
    title: str
    summary: str
    numbers: dict[str, Any] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return _jsonable(self)


# ---------------------------------------------------------------- helpers

def _flat(value: Any) -> bool:
    return isinstance(value, dict) and not any(isinstance(v, (dict, list)) for v in value.values())


def json_text(value: Any, pad: str = "") -> str:
    """findings.json's text: objects and lists one item a line, indented a space a level as
    json.dumps(indent=1) writes them, except a list of flat objects (evidence rows), one object a
    line. A large campaign's placement finding has a row per rank of every job, which the
    indenting encoder spreads over a line a field (a million-row campaign's file: 66,672 evidence
    lines instead of about 600,000, written in 0.38 s instead of 0.70 s here)."""
    inner = pad + " "
    if isinstance(value, dict) and value:
        return "{\n" + ",\n".join(f"{inner}{json.dumps(str(k))}: {json_text(v, inner)}" for k, v in value.items()) \
            + "\n" + pad + "}"
    if isinstance(value, list) and value:
        rows = [json.dumps(v) for v in value] if all(_flat(v) for v in value) else [json_text(v, inner) for v in value]
        return "[\n" + ",\n".join(inner + r for r in rows) + "\n" + pad + "]"
    return json.dumps(value)


def _jsonable(value: Any) -> Any:
    """A finding's value as JSON values: dataclasses as dicts (dataclasses.asdict without its deep
    copy, which a finding's thousands of evidence rows make slow), NaN as null, floats to 4 places."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:   # most values: first, and cheaply
        return value
    if kind is float:
        return None if math.isnan(value) else round(value, 4)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else round(float(value), 4)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _topology(topology: Any) -> dict:
    if topology is None:
        return {}
    if isinstance(topology, dict):
        return topology
    if hasattr(topology, "to_dict"):
        return topology.to_dict()
    if dataclasses.is_dataclass(topology):
        return dataclasses.asdict(topology)
    raise TypeError(f"topology must be a dict or Topology, not {type(topology).__name__}")


def _sz(nbytes: float) -> str:
    return format_size(int(nbytes))


def _pct(ratio: float) -> str:
    excess = abs(ratio - 1) * 100
    return f"{excess:.1f}%" if excess < 10 else f"{excess:.0f}%"


def _cpus(cpus: list[int]) -> str:
    """'CPU 1' or 'CPUs 1, 17, 33'."""
    cpus = sorted(cpus)
    return ("CPU " if len(cpus) == 1 else "CPUs ") + ", ".join(str(c) for c in cpus)


def _position_label(position: int) -> str:
    names = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
    word = names[position] if position < len(names) else f"#{position + 1}"
    return f"{word} L3 group of each node"


def _distance(topo: dict, cpu_node: int, mem_node: int) -> int | None:
    dist = topo.get("distances")
    ids = [n["id"] for n in topo.get("nodes", [])]
    if not dist or cpu_node not in ids or mem_node not in ids:
        return None
    return dist[ids.index(cpu_node)][ids.index(mem_node)]


def _in(name: str) -> str:
    return f" ({name})" if name else ""


def _two_sample_ratio(a: pd.Series, b: pd.Series) -> Interval:
    """Ratio of the geometric means of two groups of ranks with its Welch t interval (`stats.welch`)."""
    return stats.welch(a.to_numpy(float), b.to_numpy(float))[0]


def _welch_nodes(by_node: Any, a: Any, b: Any) -> tuple[Interval, float, float]:
    """Latency of CPU node a over node b: `stats.welch` over their ranks."""
    return stats.welch(by_node.get_group(a).to_numpy(float), by_node.get_group(b).to_numpy(float))


def _beyond(log_ratio: float, se: float, dof: float, two_sided: bool) -> float:
    """One-sided p-value of log ratio > log(1 + MIN_EFFECT) (`two_sided`: of |log ratio|); with a
    zero standard error 0 or 1, with an unknown one NaN."""
    value = abs(log_ratio) if two_sided else log_ratio
    if se == 0:
        return 0.0 if value > math.log1p(MIN_EFFECT) else 1.0
    if two_sided:
        return stats.excess_pvalue(log_ratio, se, dof, MIN_EFFECT)
    return stats.rise_pvalue(log_ratio, se, dof, MIN_EFFECT)


@dataclass
class _NodePair:
    """Two CPU nodes reaching one node's memory: latency of `a` over `b` (ratio of geometric means
    over ranks, Welch interval) and the p-value the test of its family gives."""
    a: int
    b: int
    distance_a: int
    distance_b: int
    ratio: Interval
    p_value: float
    flagged: bool = False

    def numbers(self, names: tuple[str, str], flag: str) -> dict:
        return {names[0]: self.a, names[1]: self.b, f"distance_{names[0]}": self.distance_a,
                f"distance_{names[1]}": self.distance_b, "ratio": self.ratio.estimate, "low": self.ratio.low,
                "high": self.ratio.high, "method": self.ratio.method, "p_value": self.p_value, flag: self.flagged}


def _node_pairs(by_node: Any, dist: dict[int, int | None]) -> tuple[list[_NodePair], list[_NodePair]]:
    """Every pair of CPU nodes of one group with known distances: (pairs of different distances as
    farther / nearer, tested for the farther node faster beyond the floor; pairs of one distance as
    slower / faster by geometric mean, tested two-sided beyond the floor)."""
    nodes = sorted(n for n in by_node.groups if dist.get(int(n)) is not None)
    ordered, tied = [], []
    for i, x in enumerate(nodes):
        for y in nodes[i + 1:]:
            dx, dy = dist[int(x)], dist[int(y)]
            if dx == dy:
                ratio, se, dof = _welch_nodes(by_node, x, y)
                if ratio.estimate < 1:
                    x, y = y, x
                    ratio, se, dof = _welch_nodes(by_node, x, y)
                tied.append(_NodePair(int(x), int(y), dx, dy, ratio,
                                      _beyond(math.log(ratio.estimate), se, dof, two_sided=True)))
                continue
            far, near = (x, y) if dx > dy else (y, x)
            ratio, se, dof = _welch_nodes(by_node, far, near)
            ordered.append(_NodePair(int(far), int(near), dist[int(far)], dist[int(near)], ratio,
                                     _beyond(-math.log(ratio.estimate), se, dof, two_sided=False)))
    return ordered, tied


def _flag(pairs: list[_NodePair]) -> None:
    """Benjamini-Hochberg over one family of pairs (every group of the call)."""
    for pair, hit in zip(pairs, stats.benjamini_hochberg([p.p_value for p in pairs])):
        pair.flagged = bool(hit)


def _agreement(ordered: list[_NodePair]) -> bool | None:
    """False when a pair contradicts the distances (its farther node faster beyond the floor and the
    noise, Benjamini-Hochberg over the call); True when every pair of different distances has the
    farther node slower with its 95 % interval above 1 (an intersection-union rule: each pair on its
    own, so no correction for their number); None, not resolved by the noise, otherwise."""
    if any(p.flagged for p in ordered):
        return False
    if ordered and all(np.isfinite(p.ratio.low) and p.ratio.low > 1 for p in ordered):
        return True
    return None


def _weakest(ordered: list[_NodePair]) -> _NodePair:
    """The pair of different distances closest to contradicting them: the lowest interval bound
    (an unknown one first), then the lowest ratio."""
    return min(ordered, key=lambda p: (np.isfinite(p.ratio.low), p.ratio.low if np.isfinite(p.ratio.low) else 0,
                                       p.ratio.estimate))


def _family(pairs: int) -> str:
    return ("one pair of different distances tested" if pairs == 1 else
            f"Benjamini-Hochberg over the {pairs} pairs of different distances")


def _distance_text(dist: dict[int, int | None], ordered: list[_NodePair], agrees: bool | None,
                   family: int) -> str:
    listed = ", ".join(f"node {n}: {dist[n]}" for n in sorted(dist))
    if not ordered:
        return f"firmware distances ({listed}) give every node the same distance: they order nothing"
    if agrees is False:
        p = min((p for p in ordered if p.flagged), key=lambda p: p.ratio.estimate)
        return (f"firmware distances ({listed}) order them differently: node {p.a} (distance {p.distance_a}) has "
                f"{p.ratio.text('{:.2f}x')} the latency of node {p.b} (distance {p.distance_b}), faster beyond the "
                f"noise and the {MIN_EFFECT * 100:.0f}% floor ({_family(family)})")
    p = _weakest(ordered)
    pair = (f"node {p.a} (distance {p.distance_a}) over node {p.b} (distance {p.distance_b}) "
            f"{p.ratio.text('{:.2f}x')}")
    if agrees:
        return (f"firmware distances ({listed}) order the nodes the same way: every farther node is slower, each "
                f"interval above 1 (the closest, {pair})")
    return (f"firmware distances ({listed}) are not contradicted, but the noise does not resolve the order "
            f"({pair})")


def _tied_text(tied: list[_NodePair]) -> str:
    return "".join(
        f"; the firmware gives nodes {p.a} and {p.b} the same distance {p.distance_a}, yet node {p.a}'s latency is "
        f"{p.ratio.text('{:.2f}x')} node {p.b}'s, beyond the noise and the {MIN_EFFECT * 100:.0f}% floor "
        f"(Benjamini-Hochberg over the pairs of one distance)" for p in tied if p.flagged)


def latency_locality(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Latency to one node's memory from each node's CPUs, normalised, next to the distances.

    One finding per configuration (every series column but those telling ranks apart,
    `series.WITHIN`: a 1-rank run and a 14-rank run load the memory differently, so their ranks are
    never pooled) and memory node. Uses the largest size measured from at least two CPU nodes;
    latency per CPU node is the median over its ranks. Against the firmware distances, every pair
    of CPU nodes is the ratio of the geometric means over their ranks (ranks are the units) with a
    Welch t interval: a pair of different distances contradicts them when the farther node is
    faster beyond the noise and the 10 % floor, and a pair of one distance differs when either is
    slower beyond both (Benjamini-Hochberg over each kind of pair of the call). A contradiction is
    a finding of its own (`latency_ordering`).
    """
    topo = _topology(topology)
    points = _latency_points(latency, topo)
    if points.empty:
        return []
    single = points[~points["mem_nodes"].str.contains(",") & (points["mem_nodes"] != "")]
    config = [c for c in series.series_columns(single, "latency") if c not in series.WITHIN["latency"]]
    varying = [c for c in config if c not in ("mode", "page_size", levels.GRID_PAGES) and single[c].nunique() > 1]
    groups = []
    for key, g in single.groupby(config + ["mem_nodes"]):
        values = dict(zip(config, key))
        mode, page, mem = values.get("mode", ""), values.get("page_size", ""), key[-1]
        name = ", ".join(series.value_name(c, values[c]) for c in varying if str(values[c]) != "")
        sizes = [s for s, h in g.groupby("size_bytes") if h["cpu_node"].nunique() >= 2]
        if not sizes:
            continue
        size = max(sizes)
        h = g[g["size_bytes"] == size]
        by_node = h.groupby("cpu_node")["latency_ns"]
        mem_node = int(mem)
        dist = {int(n): _distance(topo, int(n), mem_node) for n in by_node.groups}
        known = all(d is not None for d in dist.values())
        ordered, tied = _node_pairs(by_node, dist) if known else ([], [])
        groups.append((mode, page, name, mem_node, size, by_node, dist, known, ordered, tied))
    every_ordered = [p for g in groups for p in g[8]]
    _flag(every_ordered)
    _flag([p for g in groups for p in g[9]])
    findings = []
    for mode, page, name, mem_node, size, by_node, dist, known, ordered, tied in groups:
        spread = _two_sample_ratio(by_node.get_group(by_node.median().idxmax()),
                                   by_node.get_group(by_node.median().idxmin()))
        per_node = by_node.agg(["median", "min", "max", "count"])
        fast, slow = int(per_node["median"].idxmin()), int(per_node["median"].idxmax())
        best = per_node["median"].min()
        ratios = {int(n): per_node.loc[n, "median"] / best for n in per_node.index}
        agrees = _agreement(ordered) if known else None
        # nodes the firmware puts at one distance: their latencies (median over ranks), each pair tested
        at: dict[int, list[int]] = {}
        for n, d in dist.items():
            at.setdefault(d, []).append(n)
        tie_spread = {d: {"nodes": sorted(ns), "ratio": max(ratios[n] for n in ns) / min(ratios[n] for n in ns),
                          "differs": any(p.flagged for p in tied if p.distance_a == d)}
                      for d, ns in at.items() if known and len(ns) > 1}
        others = "; ".join(f"node {n} {ratios[n]:.2f}x" for n in sorted(ratios) if n not in (fast, slow))
        dist_text = "firmware distances are not recorded for this system"
        if known:
            dist_text = _distance_text(dist, ordered, agrees, len(every_ordered)) + _tied_text(tied)
        where = f"{_sz(size)}, {mode} mode" + (f", {page} pages" if page else "") + (f", {name}" if name else "")
        numbers = {"mode": mode, "page_size": page, "config": name, "mem_node": mem_node, "size_bytes": size,
                   "fastest_cpu_node": fast, "slowest_cpu_node": slow, "fastest_ns": best,
                   "slowest_ns": per_node.loc[slow, "median"], "ratio_slowest_fastest": ratios[slow],
                   **_iv("geomean_ratio", spread),
                   "ratio_to_fastest": ratios, "latency_ns": per_node["median"].to_dict(),
                   "distances": dist, "distance_order_agrees": agrees, "floor": MIN_EFFECT,
                   "distance_pairs": [p.numbers(("farther", "nearer"), "contradicts") for p in ordered],
                   "same_distance_spread": tie_spread,
                   "same_distance_pairs": [p.numbers(("slower", "faster"), "differs") for p in tied]}
        evidence = [{"cpu_node": int(n), "mem_node": mem_node, "size_bytes": size, "latency_ns": r["median"],
                     "latency_ns_min_rank": r["min"], "latency_ns_max_rank": r["max"], "ranks": int(r["count"]),
                     "distance": dist[int(n)]} for n, r in per_node.iterrows()]
        findings.append(Finding(
            id="latency_locality", bench="latency",
            title=f"Latency to node {mem_node}'s memory by CPU node" + (f" ({name})" if name else ""),
            summary=(f"With memory on node {mem_node} ({where}), latency is lowest from node "
                     f"{fast}'s CPUs ({best:.1f} ns) and highest from node {slow}'s "
                     f"({per_node.loc[slow, 'median']:.1f} ns, {ratios[slow]:.2f}x; "
                     f"geometric means {spread.text('{:.2f}x')})"
                     + (f"; {others}" if others else "") + f"; {dist_text}."),
            numbers=numbers, evidence=evidence))
        for p in (p for p in ordered if p.flagged):
            findings.append(Finding(
                id="latency_ordering", bench="latency",
                title=(f"Latency ordering contradicts the firmware distances: node {p.a} vs node {p.b} to node "
                       f"{mem_node}'s memory" + _in(where)),
                summary=(f"Node {mem_node}'s memory is farther from node {p.a}'s CPUs than from node {p.b}'s by the "
                         f"firmware distances ({p.distance_a} vs {p.distance_b}), yet node {p.a}'s latency to it is "
                         f"{p.ratio.text('{:.2f}x')} node {p.b}'s ({where}; geometric means over ranks), faster "
                         f"beyond the noise and the {MIN_EFFECT * 100:.0f}% floor ({_family(len(every_ordered))}): the "
                         "ordering contradicts the firmware distances."),
                numbers={"mode": mode, "page_size": page, "config": name, "mem_node": mem_node, "size_bytes": size,
                         "claim": True,
                         "farther_cpu_node": p.a, "nearer_cpu_node": p.b, "distance_farther": p.distance_a,
                         "distance_nearer": p.distance_b, **_iv("ratio", p.ratio), "p_value": p.p_value,
                         "floor": MIN_EFFECT, "distance_order_agrees": False},
                evidence=[e for e in evidence if e["cpu_node"] in (p.a, p.b)]))
    return findings


# ---------------------------------------------------------------- latency: levels, TLB, contrasts

# Columns whose values are repetitions of one curve: job repetitions and the ranks of a run (ranks
# that should measure alike; the series keys keep apart those that should not).
REPLICATES = (series.REPETITION, "rank", "cpu", "cpu_node", "l3_group", "mem_nodes")
RANK_UNITS = (series.REPETITION, "rank", "cpu", "cpu_node")      # one rank of one run, in both modes
NODE_UNITS = ("cpu_node", series.REPETITION)                     # one node's L3 groups, in one run


@dataclass
class _Latency:
    """A latency table prepared for levels and contrasts: identity columns normalised, with
    `locality` ("local" or "<cpu node>-><memory nodes>") and `l3_position` (index of the rank's
    L3 group among its node's), and the series keys of one curve."""
    table: pd.DataFrame
    topology: Topology | None
    keys: list[str]
    varying: list[str]


def _prepare(latency: pd.DataFrame | None, topo: dict) -> _Latency | None:
    need = {"size_bytes", "latency_ns_median"}
    if latency is None or latency.empty or not need <= set(latency.columns):
        return None
    stats.check_values(latency, "latency.csv", levels.LATENCY)
    df = series.normalise(latency, "latency")
    for col in ("mode", "page_size", "mem_nodes"):
        if col not in df:
            df[col] = ""
    for col in ("cpu_node", "l3_group"):
        if col not in df:
            df[col] = -1
    df["locality"] = series.row_codes(pd.DataFrame({"cpu_node": df["cpu_node"], "mem_nodes": node_lists(
        df["mem_nodes"], categorical=True)}), locality)
    position = _l3_position(topo)
    df["l3_position"] = series.per_value(df["l3_group"], lambda g: position.get(int(g), 0), dtype=np.int64)
    keys = [c for c in series.series_columns(df, "latency") if c not in series.WITHIN["latency"]]
    keys = keys + ["host", "locality"] if "host" in df else keys + ["locality"]
    # normalised (series.normalise): numbers or text, so distinct values are distinct texts
    varying = [c for c in keys if df[c].nunique() > 1]
    return _Latency(df, levels.topology_object(topo), keys, varying)


def _iv(name: str, interval: Interval | None) -> dict:
    """An interval as numbers: name, name_low, name_high, name_method."""
    if interval is None:
        return {name: None, f"{name}_low": None, f"{name}_high": None, f"{name}_method": None}
    return {name: interval.estimate, f"{name}_low": interval.low, f"{name}_high": interval.high,
            f"{name}_method": interval.method}


def _size_iv(interval: Interval) -> str:
    if not np.isfinite(interval.low):
        return f"{levels.approx_size(interval.estimate)} (no interval)"
    return (f"{levels.approx_size(interval.estimate)} ({interval.level * 100:.0f}% interval "
            f"{levels.approx_size(interval.low)} to {levels.approx_size(interval.high)})")


def _where(key: dict, varying: list[str], skip: tuple[str, ...] = ()) -> tuple[str, str, dict]:
    """(sentence opening such as "in concurrent mode with 4k pages", or "" when nothing names the
    series; title suffix; numbers) naming one series."""
    mode, page = str(key.get("mode", "")), str(key.get("page_size", ""))
    locality = str(key.get("locality", "local"))
    parts = [f"in {mode} mode" if mode and "mode" not in skip else "",
             f"with {page} pages" if page and "page_size" not in skip else "",
             f"memory {locality}" if locality not in ("local", "") else ""]
    others = [c for c in varying if c not in ("mode", "page_size", levels.GRID_PAGES, "locality") + skip and c in key]
    name = ", ".join(series.value_name(c, key[c]) for c in others if str(key[c]) != "")
    text = " ".join(p for p in parts + [f"({name})" if name else ""] if p)
    title = ", ".join(x for x in (mode if "mode" not in skip else "", page if "page_size" not in skip else "",
                                  locality if locality not in ("local", "") else "", name) if x)
    numbers = {"mode": mode, "page_size": page, "locality": locality, "config": name}
    return text, f" ({title})" if title else "", numbers


def _opening(text: str, rest: str) -> str:
    """A sentence from an optional opening and the rest: "In serial mode, rest." or "Rest."."""
    return f"{text[0].upper()}{text[1:]}, {rest}." if text else f"{rest[0].upper()}{rest[1:]}."


UNIT_NAMES = {"cpu_node": "node", "l3_group": "L3 group", "mem_nodes": "memory on node", "cpu": "CPU",
              "rank": "rank", series.REPETITION: "repetition"}


def _unit(unit: dict) -> str:
    """'rank 5, CPU 41, node 2' from a unit's key columns."""
    return ", ".join(f"{UNIT_NAMES.get(k, k)} {v}" for k, v in unit.items() if str(v) not in ("", "-1"))


def _levels_findings(study: _Latency, lv: levels.Levels) -> list[Finding]:
    findings: list[Finding] = []
    for curve in lv.curves:
        text, title, base = _where(curve.series, study.varying)
        if not curve.measured:
            findings.append(Finding(
                id="not_latency", bench="latency", title="Not a latency curve" + title,
                summary=_opening(text, curve.gate_reason),
                numbers={**base, "claim": True, "reason": curve.gate_reason},
                evidence=[{"size_bytes": s, "latency_ns": v} for s, v in zip(curve.sizes, curve.latency_ns)]))
            continue
        for t in curve.transitions:
            findings.append(Finding(
                id="cache_threshold", bench="latency",
                title=(f"Latency step {_sz(t.from_size_bytes)} to {_sz(t.to_size_bytes)}: "
                       f"{t.label or 'unexplained'}" + title),
                summary=_opening(text, t.describe()),
                numbers={**base, "claim": True, "kind": t.kind, "from_size_bytes": t.from_size_bytes,
                         "size_bytes": t.to_size_bytes, **_iv("step_ratio", t.ratio),
                         **_iv("location_bytes", t.location_bytes), "latency_before_ns": t.latency_before_ns,
                         "latency_after_ns": t.latency_after_ns, "matched_cache": t.label,
                         "cache_bytes": t.capacity_bytes, "caveats": t.caveats, "p_value": t.p_value,
                         "noise_rule": curve.noise_rule},
                evidence=[{"size_bytes": s, "latency_ns": v} for s, v in zip(curve.sizes, curve.latency_ns)
                          if t.from_size_bytes <= s <= t.to_size_bytes]))
        if curve.unseen:
            names = ", ".join(f"{c.label} ({_sz(c.size_bytes)})" for c in curve.unseen)
            findings.append(Finding(
                id="cache_unseen", bench="latency", title="Cache levels without a visible transition" + title,
                summary=_opening(text, f"the tested sizes span {names} but latency shows no transition beyond the "
                                       f"noise for {'it' if len(curve.unseen) == 1 else 'them'}"),
                numbers={**base, "claim": False, "caches": [{"cache": c.label, "cache_bytes": c.size_bytes}
                                                            for c in curve.unseen]}))
    seen = {t.capacity_bytes for curve in lv.curves for t in curve.transitions}
    untested = {c.size_bytes: c for curve in lv.curves if curve.measured for c in curve.untested
                if c.size_bytes not in seen}
    tested = [s for curve in lv.curves for s in curve.sizes]
    if untested and tested:
        names = ", ".join(f"{c.label} ({_sz(c.size_bytes)})" for c in sorted(untested.values(),
                                                                            key=lambda c: c.size_bytes))
        findings.append(Finding(
            id="cache_untested", bench="latency", title="Caches outside the tested sizes",
            summary=(f"The tested sizes {_sz(min(tested))} to {_sz(max(tested))} need two sizes either side of a "
                     f"cache to show it, so they cannot show {names}."),
            numbers={"claim": False, "min_size_bytes": min(tested), "max_size_bytes": max(tested),
                     "caches": [{"cache": c.label, "cache_bytes": c.size_bytes} for c in untested.values()]}))
    for t in lv.tlb:
        text, title, base = _where(t.series, study.varying, skip=("page_size",))
        peak = f"{t.max_ratio.text('{:.2f}x')} at {_sz(t.max_size_bytes)}"
        if t.onset_bytes is not None:
            summary = _opening(text, f"4 KiB pages are slower than {t.huge_page} pages beyond the noise and the "
                                     f"{levels.TLB_FLOOR * 100:.0f}% floor from {_sz(t.onset_bytes)} on (onset "
                                     f"{_size_iv(t.onset)}; the cost is half its largest at "
                                     f"{_size_iv(t.location_bytes)}); 4 KiB / {t.huge_page} latency peaks at {peak}: "
                                     "the TLB reach, not a cache")
        else:
            summary = _opening(text, f"4 KiB and {t.huge_page} pages do not part beyond the noise and the "
                                     f"{levels.TLB_FLOOR * 100:.0f}% floor at any size tested (largest ratio {peak})")
        findings.append(Finding(
            id="tlb_cost", bench="latency", title=f"TLB cost: 4k vs {t.huge_page} pages" + title, summary=summary,
            numbers={**base, "page_size": "4k", "claim": t.onset_bytes is not None, "huge_page": t.huge_page,
                     "onset_size_bytes": t.onset_bytes, **_iv("onset_bytes", t.onset),
                     **_iv("location_bytes", t.location_bytes), **_iv("max_ratio", t.max_ratio),
                     "max_size_bytes": t.max_size_bytes, "floor": levels.TLB_FLOOR},
            evidence=t.per_size))
    return findings


def _per_size(c: contrasts.Contrast) -> list[dict]:
    return [{"size_bytes": s.size_bytes, "ratio": s.ratio.estimate, "ratio_low": s.ratio.low,
             "ratio_high": s.ratio.high, "units": s.units, "differs": s.differs} for s in c.per_size]


def _contrast_numbers(c: contrasts.Contrast) -> dict:
    peak = max(c.per_size, key=lambda s: abs(math.log(s.ratio.estimate)))
    return {**_iv("max_ratio", peak.ratio), "max_size_bytes": peak.size_bytes,"claim": c.differs, "differs": c.differs, "equivalent": c.equivalent, "floor": c.floor,
            "onset_size_bytes": c.onset_bytes, **_iv("onset_bytes", c.onset),
            "plateau_from_size_bytes": c.plateau_from_bytes, "plateau_to_size_bytes": c.plateau_to_bytes,
            **_iv("plateau_ratio", c.plateau_ratio), **_iv("overall_ratio", c.overall_ratio),
            "units": len(c.ratios.replicates) if c.ratios is not None else 0, "noise_rule": c.noise_rule,
            "unclaimed": c.unclaimed}


def _slower(ratio: float, a: str, b: str) -> str:
    return f"{a} are {_pct(ratio)} {'slower' if ratio > 1 else 'faster'} than {b}"


def _contrast_text(c: contrasts.Contrast, a: str, b: str) -> str:
    """What a contrast shows, with its numbers and intervals."""
    floor = f"{c.floor * 100:.0f}%"
    if c.differs and c.plateau_ratio is not None:
        text = (f"{_slower(c.plateau_ratio.estimate, a, b)} from {_sz(c.plateau_from_bytes)} to "
                f"{_sz(c.plateau_to_bytes)} (ratio {c.plateau_ratio.text()}, geometric mean over those sizes)")
        if c.onset_bytes is not None:
            text += f"; beyond the noise and the {floor} floor from {_sz(c.onset_bytes)} on (onset {_size_iv(c.onset)})"
        else:
            text += "; the difference does not last to the largest size"
        return text
    overall = c.overall_ratio.text() if c.overall_ratio is not None else "unknown"
    if c.unclaimed:
        return f"nothing is claimed: {c.unclaimed} (overall ratio {overall}); repeat the runs to tell"
    if c.equivalent:
        return f"{a} and {b} are alike: overall ratio {overall}, inside the {floor} margin (equivalent)"
    return (f"no size differs beyond the noise and the {floor} floor, but the data cannot show them alike "
            f"either (overall ratio {overall})")


def _cpus_by_position(table: pd.DataFrame) -> dict[int, list[int]]:
    """The CPUs measured at each L3 position (once per table: a fleet has a contrast per node)."""
    if "cpu" not in table:
        return {}
    pairs = table[["l3_position", "cpu"]].drop_duplicates()
    return {int(p): sorted(set(g.astype(int))) for p, g in pairs.groupby("l3_position")["cpu"]}


def _divergence_findings(study: _Latency, div: list[contrasts.Contrast]) -> list[Finding]:
    findings = []
    at = _cpus_by_position(study.table) if div else {}
    for c in div:
        text, title, base = _where(c.series, study.varying, skip=("mode",))
        pos = int(c.series.get("l3_position", 0))
        cpus = at.get(pos, [])
        group = _position_label(pos) if study.topology is not None and study.topology.l3_groups else "all ranks"
        who = f"ranks on the {group}" + (f" ({_cpus(cpus)})" if cpus and cpus != [-1] else "")
        findings.append(Finding(
            id="mode_divergence", bench="latency", title=f"Concurrent vs serial: {group}" + title,
            summary=f"For {who}{' ' + text if text else ''}: {_contrast_text(c, 'concurrent runs', 'serial runs')}.",
            numbers={**base, "l3_position": pos, "cpus": cpus, **_contrast_numbers(c)}, evidence=_per_size(c)))
    onsets = [f.numbers["onset_size_bytes"] for f in findings if f.numbers["onset_size_bytes"] is not None]
    if onsets and len(findings) > 1:
        findings.insert(0, Finding(
            id="mode_divergence", bench="latency", title="Concurrent vs serial: onset",
            summary=(f"Concurrent and serial runs diverge beyond the noise from {_sz(min(onsets))} on, in "
                     f"{len(onsets)} of {len(findings)} rank groups."),
            numbers={"claim": False, "onset_size_bytes": min(onsets), "groups_diverging": len(onsets),
                     "groups": len(findings)}))
    return findings


def _asymmetry_findings(study: _Latency, ccd: list[tuple[int, int, contrasts.Contrast]]) -> list[Finding]:
    findings = []
    at = _cpus_by_position(study.table) if ccd else {}
    for a, b, c in ccd:
        text, title, base = _where(c.series, study.varying)
        cpus = {p: at.get(p, []) for p in (a, b)}
        name_a = f"ranks on the {_position_label(a)} ({_cpus(cpus[a])})"
        name_b = f"those on the {_position_label(b)} ({_cpus(cpus[b])})"
        findings.append(Finding(
            id="domain_asymmetry", bench="latency",
            title=f"L3 groups inside a node: {_position_label(a).split(' ')[0]} vs {_position_label(b).split(' ')[0]}"
                  + title,
            summary=_opening(text, f"{_contrast_text(c, name_a, name_b)} (ratio per node, then over nodes)"),
            numbers={**base, "l3_position_a": a, "l3_position_b": b, "cpus_a": cpus[a], "cpus_b": cpus[b],
                     "asymmetric": c.differs, **_contrast_numbers(c)},
            evidence=_per_size(c)))
    return findings


def _deviation_findings(study: _Latency, devs: list[contrasts.Deviation]) -> list[Finding]:
    findings = []
    for d in devs:
        # mode contrasts are split by L3 position, L3-group contrasts by mode
        ratio_name = "concurrent / serial ratio" if "mode" not in d.series else "L3-group latency ratio"
        text, title, base = _where(d.series, study.varying, skip=("mode",) if "mode" not in d.series else ())
        unit = _unit(d.unit)
        kind = "inversion" if d.inversion else "deviation"
        summary = _opening(" ".join(x for x in (text, f"at {_sz(d.size_bytes)}") if x),
                           f"{unit} has a {ratio_name} of {d.ratio:.2f} while the others' median is "
                           f"{d.others_ratio:.2f}: {d.relative.text('{:.2f}x')} theirs"
                           + (", inverting the pattern" if d.inversion else ""))
        findings.append(Finding(
            id="anomaly", bench="latency", title=f"{kind.capitalize()}: {unit} at {_sz(d.size_bytes)}" + title,
            summary=summary,
            numbers={**base, **{k: int(v) if str(v).lstrip("-").isdigit() else v for k, v in d.unit.items()},
                     "claim": True, "kind": kind,
                     "size_bytes": d.size_bytes, "ratio": d.ratio, "others_ratio": d.others_ratio,
                     **_iv("relative", d.relative), "p_value": d.p_value, "what": ratio_name}))
    return findings


def _outlier_findings(study: _Latency, table: pd.DataFrame) -> list[Finding]:
    """Runs (a rank of one repetition) off the others of their curve at one size (`stats.deviations`)."""
    keys = study.keys + ["l3_position"]
    reps = [c for c in REPLICATES if c in table]
    curves = stats.series_table(table, keys, reps, levels.LATENCY)
    found = stats.deviations(curves, [contrasts.MIN_EFFECT] * len(curves))
    findings = []
    for n, u, j, diff, ref, interval, p in found:
        s = curves[n]
        run = s.replicates[u] if isinstance(s.replicates[u], tuple) else (s.replicates[u],)
        who = dict(zip(reps, run))
        text, title, base = _where(s.key, study.varying)
        unit = _unit(who)
        size = int(s.sizes[j])
        findings.append(Finding(
            id="anomaly", bench="latency", title=f"Outlier: {unit} at {_sz(size)}" + title,
            summary=_opening(" ".join(x for x in (text, f"at {_sz(size)}") if x),
                             f"{unit} measures {math.exp(diff + ref):.1f} ns against the {math.exp(ref):.1f} ns "
                             f"median of the other runs: {interval.text('{:.2f}x')} theirs (Holm over every run and size)"),
            numbers={**base, **who, "claim": True, "kind": "outlier", "size_bytes": size,
                     "latency_ns": math.exp(diff + ref), "reference_ns": math.exp(ref), **_iv("relative", interval),
                     "p_value": p}))
    return findings


def _without(table: pd.DataFrame, refused: list[dict]) -> pd.DataFrame:
    """The table without the series (their keys) the plausibility gate refused."""
    for key in refused:
        mask = np.ones(len(table), bool)
        for k, v in key.items():
            mask &= (table[k].astype(str) == str(v)).to_numpy()
        table = table[~mask]
    return table


def latency_findings(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Every latency finding but locality, from `levels` (transitions and their causes, the TLB, the
    plausibility gate) and `contrasts` (concurrent vs serial, L3 groups inside a node, units that
    deviate), each number with its interval (docs/STATISTICS.md). `claim` in a finding's numbers
    says whether it claims an effect (False: a symmetry, a level with no transition, an untested one)."""
    return [f for part in _latency_parts(latency, topology) for f in part()]


def _latency_parts(latency: pd.DataFrame | None, topology: Any = None) -> list[Callable[[], list[Finding]]]:
    """`latency_findings` as parts that need only what is worked out here (the table, its series
    and the curves the gate refuses), in the order of their findings: the levels, the contrasts,
    the outliers. `analyse` runs them side by side on a large table."""
    topo = _topology(topology)
    study = _prepare(latency, topo)
    if study is None or study.table["size_bytes"].nunique() < 2:
        return []
    curves = levels.latency_series(study.table, study.keys, REPLICATES, where="latency.csv")
    parts: list[Callable[[], list[Finding]]] = [functools.partial(_levels_part, study, curves)]
    table = _without(study.table, [s.key for s, reason in zip(curves, levels.refusals(curves, study.topology))
                                   if reason is not None])
    if table.empty:
        return parts
    return parts + [functools.partial(_contrast_findings, study, table),
                    functools.partial(_outlier_findings, study, table)]


def _levels_part(study: _Latency, curves: list[stats.Series]) -> list[Finding]:
    return _levels_findings(study, levels.latency_levels(study.table, study.topology, study.keys, REPLICATES,
                                                         all_series=curves))


def _contrast_findings(study: _Latency, table: pd.DataFrame) -> list[Finding]:
    """Concurrent vs serial, the L3 groups inside a node, and the units that deviate from both."""
    div: list[contrasts.Contrast] = []
    if {"concurrent", "serial"} <= set(table["mode"].unique()):
        div_keys = [k for k in study.keys if k != "mode"] + ["l3_position"]
        div = contrasts.contrast(table, "mode", "concurrent", "serial", RANK_UNITS, div_keys, where="latency.csv")
    ccd: list[tuple[int, int, contrasts.Contrast]] = []
    positions = sorted(set(table["l3_position"].unique()))
    if study.topology is not None and study.topology.l3_groups and len(positions) > 1:
        for p in positions[1:]:
            ccd += [(positions[0], p, c) for c in contrasts.contrast(
                table, "l3_position", positions[0], p, NODE_UNITS, study.keys, where="latency.csv")]
    return (_divergence_findings(study, div) + _asymmetry_findings(study, ccd)
            + _deviation_findings(study, contrasts.deviations([c for _, _, c in ccd] + div)))


# ---------------------------------------------------------------- GPU

def plateau_sizes(curve: pd.Series) -> list[int]:
    """The sizes at which a bandwidth curve reaches SATURATION of its maximum, ascending."""
    curve = curve.dropna()
    return [int(s) for s in curve[curve >= SATURATION * curve.max()].index]


def _gpu_memory(policy: str, nodes: str, weight: str) -> tuple[str, str]:
    """A gpu_xfer run's host memory in words, short (titles) and long (summaries). A run under
    the local policy names no node: its memory is on the node of the thread that touches it."""
    name = policy or "default"
    if not nodes:
        where = ", memory on the host thread's node" if policy == "local" else ""
        return name, f"{name} policy{where}"
    weights = f" weights {weight}" if weight else ""
    return f"{name} {nodes}{weights}", f"{name} policy, memory on node(s) {nodes}" + (f" with{weights}" if weight else "")


def _gpu_level(g: pd.DataFrame, column: str, sizes: list[int]) -> tuple[Interval, np.ndarray]:
    """A GPU series' plateau with its interval, and each run's level: each run (repetition) gives
    the median of its log bandwidths over the plateau sizes of the median curve, the plateau is
    their mean, with a t interval over the runs (sizes are never counted as independent); one run
    gives its level with no interval."""
    reps = g[series.REPETITION] if series.REPETITION in g else pd.Series("0", index=g.index)
    per_run = (g.assign(_run=_text(reps)).groupby(["_run", benches.GPU_SIZE])[column].median()
               .unstack(benches.GPU_SIZE).reindex(columns=sizes))
    logs = np.log(per_run.to_numpy(float))
    levels = np.nanmedian(logs[np.isfinite(logs).any(axis=1)], axis=1)
    n = len(levels)
    if n < 2:
        return Interval.unknown(math.exp(levels.mean()), "one run: no interval"), np.exp(levels)
    interval = stats.t_interval(float(levels.mean()), float(levels.std(ddof=1) / math.sqrt(n)), n - 1,
                                method=f"t interval over {n} runs' median log level ({n - 1} df)")
    return interval, np.exp(levels)


def _gpu_interval_text(level: Interval, runs: str, fmt: str) -> str:
    """'51.1 GiB/s (95% interval 50.8 to 51.4, 3 runs)', or '(one run: no interval)'."""
    if not (np.isfinite(level.low) and np.isfinite(level.high)):
        return f"{fmt.format(level.estimate)} (one run: no interval)"
    return (f"{fmt.format(level.estimate)} ({level.level * 100:.0f}% interval {fmt.format(level.low)} to "
            f"{fmt.format(level.high)}, {runs})")


def gpu_transfers(gpu: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """GPU transfer bandwidth plateau per direction and policy, pinned vs pageable, best weights."""
    if gpu is None or gpu.empty or benches.GPU_SIZE not in gpu:
        return []
    df = gpu.copy()
    for col in ("policy", "numa_nodes", "numa_weight", "pinned", "gpu", "ngpus", "label", "memory", "host"):
        df[col] = _text(df[col]) if col in df else ""
    findings = []
    plateaus = []
    for direction, column in benches.GPU_BANDWIDTH.items():
        if column not in df or df[column].isna().all():
            continue
        # one series per GPU of a run and per GPU count: 2 GPUs sharing a link are not 1 GPU
        for (policy, nodes, weight, pinned, ngpus, gpu_id, label, host), g in df.groupby(
                ["policy", "numa_nodes", "numa_weight", "pinned", "ngpus", "gpu", "label", "host"]):
            curve = g.groupby(benches.GPU_SIZE)[column].median().dropna().sort_index()
            if len(curve) < 2:
                continue
            band = plateau_sizes(curve)
            start, band_end = band[0], band[-1]
            # "from S on" only where every larger size stays in the band: a curve that falls
            # back at the large sizes (pageable copies often do) peaks, and says where it ends.
            holds = band == [int(s) for s in curve.index if s >= start]
            level, run_levels = _gpu_level(g, column, band)
            value, runs = level.estimate, len(run_levels)
            plateaus.append({"direction": direction, "policy": policy, "numa_nodes": nodes, "numa_weight": weight,
                             "pinned": pinned, "ngpus": ngpus, "gpu": gpu_id, "label": label, "host": host,
                             "plateau_gib_s": value, "from_size_bytes": start, "run_levels": run_levels})
            who = f"{ngpus} GPU{'s' if ngpus not in ('', '1') else ''}, GPU {gpu_id}" + (f", {label}" if label else "")
            short, mem = _gpu_memory(policy, nodes, weight)
            pin = {"1": "pinned", "true": "pinned", "0": "pageable", "false": "pageable"}.get(pinned.lower(), pinned)
            findings.append(Finding(
                id="gpu_plateau", bench="gpu_xfer",
                title=f"GPU {direction}: {short}, {pin or 'pinning unknown'} ({who})",
                summary=(f"GPU {direction}s ({who}, {pin or 'pinning unknown'}, {mem}) "
                         + (f"reach a plateau of {_gpu_interval_text(level, f'{runs} runs', '{:.1f} GiB/s')} from "
                            f"{_sz(start)} on." if holds else
                            f"peak at {_gpu_interval_text(level, f'{runs} runs', '{:.1f} GiB/s')} "
                            + (f"over {_sz(start)} to {_sz(band_end)}, the sizes" if band_end != start
                               else f"at {_sz(start)}, the only size")
                            + f" within {(1 - SATURATION) * 100:.0f}% of the highest, and move "
                            f"{float(curve.iloc[-1]):.1f} GiB/s at the largest size, {_sz(int(curve.index[-1]))}.")),
                numbers={"direction": direction, "policy": policy, "numa_nodes": nodes, "numa_weight": weight,
                         "pinned": pinned, "ngpus": ngpus, "gpu": gpu_id, "plateau_gib_s": value,
                         "low": level.low, "high": level.high, "runs": runs, "from_size_bytes": start,
                         "plateau_holds": holds, "largest_size_gib_s": float(curve.iloc[-1])},
                evidence=[{"size_bytes": int(s), "gib_s": v} for s, v in curve.items()],
            ))
    table = pd.DataFrame(plateaus)
    if table.empty:
        return findings
    for (direction, policy, nodes, weight, ngpus, gpu_id, label, host), g in table.groupby(
            ["direction", "policy", "numa_nodes", "numa_weight", "ngpus", "gpu", "label", "host"]):
        pins = {p.lower(): (v, r) for p, v, r in zip(g["pinned"], g["plateau_gib_s"], g["run_levels"])}
        pinned, pinned_runs = pins.get("1", pins.get("true", (None, None)))
        pageable, pageable_runs = pins.get("0", pins.get("false", (None, None)))
        if pinned is None or pageable is None:
            continue
        # the runs of each side are independent jobs: a Welch interval over their levels
        ratio, _, _ = stats.welch(pinned_runs, pageable_runs, method="Welch t interval over runs on the log ratio")
        runs = f"{len(pinned_runs)} and {len(pageable_runs)} runs"
        short, mem = _gpu_memory(policy, nodes, weight)
        findings.append(Finding(
            id="gpu_pinned", bench="gpu_xfer",
            title=f"Pinned vs pageable GPU {direction}s ({short}, {ngpus} GPU(s), GPU {gpu_id})",
            summary=(f"Pinned host memory gives {_gpu_interval_text(ratio, runs, '{:.2f}x')} the {direction} bandwidth "
                     f"of pageable memory, each at its plateau or peak ({pinned:.1f} vs {pageable:.1f} GiB/s, {mem})."),
            numbers={"direction": direction, "policy": policy, "numa_nodes": nodes, "pinned_gib_s": pinned,
                     "pageable_gib_s": pageable, "ratio": ratio.estimate, "low": ratio.low, "high": ratio.high,
                     "method": ratio.method},
        ))
    weighted = table[table["numa_weight"] != ""]
    for (direction, nodes, pinned, ngpus, gpu_id, label, host), g in weighted.groupby(
            ["direction", "numa_nodes", "pinned", "ngpus", "gpu", "label", "host"]):
        if len(g) < 2:
            continue
        g = g.sort_values("plateau_gib_s", ascending=False)
        best, worst = g.iloc[0], g.iloc[-1]
        ratio, _, _ = stats.welch(best["run_levels"], worst["run_levels"],
                                  method="Welch t interval over runs on the log ratio")
        runs = f"{len(best['run_levels'])} and {len(worst['run_levels'])} runs"
        findings.append(Finding(
            id="gpu_weights", bench="gpu_xfer",
            title=(f"Best weights for GPU {direction}s over nodes {nodes} "
                   f"({'pinned' if pinned in ('1', 'true') else 'pageable'}, {ngpus} GPU(s), GPU {gpu_id})"),
            summary=(f"Weights {best['numa_weight']} over nodes {nodes} give the highest {direction} plateau "
                     f"({best['plateau_gib_s']:.1f} GiB/s), {_gpu_interval_text(ratio, runs, '{:.2f}x')} "
                     f"weights {worst['numa_weight']}."),
            numbers={"direction": direction, "numa_nodes": nodes, "best_weights": best["numa_weight"],
                     "best_gib_s": best["plateau_gib_s"], "worst_weights": worst["numa_weight"],
                     "worst_gib_s": worst["plateau_gib_s"], "ratio": ratio.estimate, "low": ratio.low,
                     "high": ratio.high, "method": ratio.method},
            evidence=[{"numa_weight": r["numa_weight"], "plateau_gib_s": r["plateau_gib_s"]} for _, r in g.iterrows()],
        ))
    return findings


# ---------------------------------------------------------------- placement

def placement_verification(frames: dict[str, pd.DataFrame | None], topology: Any = None) -> list[Finding]:
    """Per rank (latency) or job (bandwidth, copy): the smallest fraction of the buffer's pages found
    on the requested node(s), flagged below PLACEMENT_OK. Requested = `mem_nodes`, or the CPU's node
    when no node was requested."""
    findings = []
    checks: list[tuple[str, str, str, str]] = [
        ("latency", "page_fractions", "mem_nodes", "rank"),
        ("bandwidth", "page_fractions", "mem_nodes", "job_id"),
        ("copy", "src_page_fractions", "src_node", "job_id"),
        ("copy", "dst_page_fractions", "dst_node", "job_id"),
    ]
    for bench, col, req_col, who in checks:
        df = frames.get(bench)
        if df is None or df.empty or col not in df or df[col].isna().all():
            continue
        fraction, requested = _placement_fractions(df, col, req_col)
        if not fraction.notna().any():
            continue
        # one line per rank of each job (rank numbers repeat across jobs), at its worst size
        keys = pd.DataFrame({"job_id": df["job_id"] if "job_id" in df else "", who: df[who] if who in df else "",
                             "fraction": fraction})
        keys["job_id"] = keys["job_id"].astype(object).fillna("").astype(str)
        keys = keys[fraction.notna()].reset_index(drop=True)
        at = keys.groupby(list(dict.fromkeys(["job_id", who])))["fraction"].idxmin()
        # those rows, column by column (a large campaign has a line per rank of every job)
        pick = np.flatnonzero(fraction.notna().to_numpy())[at.to_numpy()]

        def picked(values: Any, default: Any = None) -> Any:
            return default if values is None else pd.Series(values).iloc[pick].reset_index(drop=True)

        worst = pd.DataFrame({name: value for name, value in (
            (who, picked(df.get(who), "")), ("job_id", picked(df.get("job_id"), "")),
            ("mode", picked(df.get("mode"), "")), ("cpu", picked(df.get("cpu"))), ("requested", picked(requested)),
            ("size_bytes", picked(df.get("size_bytes"))), ("fraction", picked(fraction)),
            ("page_fractions", picked(df[col])))}, index=pd.RangeIndex(len(pick)))
        worst["job_id"] = worst["job_id"].astype(object).fillna("").astype(str)
        worst = worst.sort_values("fraction", kind="stable")
        bad = worst[worst["fraction"] < PLACEMENT_OK]
        what = {"src_page_fractions": "copy sources", "dst_page_fractions": "copy destinations"}.get(
            col, "ranks" if who == "rank" else "jobs")
        bad_text = "; ".join(f"{who} {r[who]}{' (' + r['mode'] + ')' if r['mode'] else ''} has "
                             f"{r['fraction'] * 100:.1f}% on node(s) {r['requested']}"
                             for _, r in bad.head(5).iterrows())
        findings.append(Finding(
            id="placement", bench=bench, title=f"Placement of {what}",
            summary=(f"{len(worst) - len(bad)} of {len(worst)} {what} have at least {PLACEMENT_OK * 100:.0f}% of their "
                     f"pages on the requested node(s) at every size; lowest {worst['fraction'].min() * 100:.1f}%"
                     + (f"; {bad_text}." if len(bad) else ".")),
            numbers={"checked": len(worst), "flagged": len(bad), "min_fraction": worst["fraction"].min(),
                     "threshold": PLACEMENT_OK},
            evidence=worst[list(dict.fromkeys(("job_id", who, "mode", "cpu", "requested", "size_bytes", "fraction",
                                               "page_fractions")))].to_dict("records"),
        ))
    return findings


def _requested(mem_nodes: Any, cpu_node: Any, cpu_nodes: Any) -> tuple[int, ...]:
    """The nodes a buffer was asked on: `mem_nodes`, else the CPU's node(s)."""
    return _nodes(mem_nodes) or _nodes(cpu_node) or _nodes(cpu_nodes)


def _placement_fractions(df: pd.DataFrame, col: str, req_col: str) -> tuple[pd.Series, pd.Series]:
    """Per row, the fraction of its pages on the requested node(s), NaN where no placement was
    recorded, and those nodes ("0,1"). Computed once per distinct (placement, request): a large
    table repeats a few."""
    cols = list(dict.fromkeys(c for c in (col, req_col, "cpu_node", "cpu_nodes") if c in df))
    codes = df.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    firsts = pd.Series(np.arange(len(df))).groupby(codes).first()
    values = np.full(len(firsts), np.nan)
    asked = np.empty(len(firsts), dtype=object)
    for code, at in firsts.items():
        r = df.iloc[at]
        wanted = _requested(r.get(req_col), r.get("cpu_node"), r.get("cpu_nodes"))
        asked[code] = ",".join(map(str, wanted))
        fr = parse_page_fractions(r[col])
        if fr:
            values[code] = sum(fr.get(n, 0.0) for n in wanted)
    return pd.Series(values[codes], index=df.index), pd.Series(asked[codes], index=df.index)


# ---------------------------------------------------------------- entry points

LATENCY_ANALYSES = (latency_findings, latency_locality)

def _parts(frames: dict[str, pd.DataFrame | None], topo: dict) -> list[Callable[[], list[Finding]]]:
    """Every analysis of `analyse` as parts that need nothing from each other, in the order of
    their findings."""
    from numasweep import bandwidth_analysis, gpu_analysis, mlc_analysis, scaling  # they build on this module

    lat, bw = frames["latency"], frames["bandwidth"]
    calls = [(latency_locality, lat, topo),
             (bandwidth_analysis.bandwidth_saturation, bw, topo), (bandwidth_analysis.bandwidth_locality, bw, topo),
             (bandwidth_analysis.copy_matrix, frames["copy"], topo),
             (gpu_transfers, frames["gpu_xfer"], topo), (gpu_analysis.findings, frames["gpu_xfer"], topo),
             (mlc_analysis.loaded_latency, frames["loaded_latency"]), (mlc_analysis.core_to_core, frames["c2c"]),
             (mlc_analysis.bandwidth_matrix, frames["mix_bandwidth"]),
             (scaling.rank_scaling, lat, topo), (placement_verification, frames, topo)]
    return _latency_parts(lat, topo) + [functools.partial(fn, *args) for fn, *args in calls]


def analyse(results_dir: str | Path, jobs: int | None = None, min_rows: int = workers.PARALLEL_ROWS) -> dict:
    """All findings for one results folder (results/<system>/ or examples/<name>/). From `min_rows`
    rows, its parts run in up to `jobs` worker processes (None: one per CPU); the same findings."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise NumasweepError(f"{results_dir}: no such results folder; pass --results results/<system>")
    topo_path = results_dir / "topology.json"
    topo: dict = {}
    if topo_path.exists():
        try:
            topo = json.loads(topo_path.read_text())
        except json.JSONDecodeError as exc:
            raise NumasweepError(f"{topo_path}: not valid JSON ({exc.msg}); regenerate it with "
                                 f"`python -m numasweep topology`") from None
    frames = {b: read_csv(results_dir / f"{b}.csv", skip=UNREAD + REPORT_ONLY, codes=True)
              if (results_dir / f"{b}.csv").exists() else None for b in benches.NAMES}
    if all(f is None for f in frames.values()):
        raise NumasweepError(f"{results_dir}: no aggregated <bench>.csv; run `python -m numasweep aggregate` first")
    findings = workers.run(_parts(frames, topo), workers.count(frames, jobs, min_rows), "analyse")
    return {"system": topo.get("system") or results_dir.name, "findings": [f.to_dict() for f in findings]}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m numasweep analyse",
                                description="Compute findings.json from aggregated results.")
    p.add_argument("--results", required=True, help="results/<system> or examples/<name>")
    p.add_argument("-o", "--output", required=True, help="findings.json to write")
    p.add_argument("--jobs", type=int, default=None,
                   help=f"at most this many worker processes, used from {workers.PARALLEL_ROWS:,} rows of results "
                        "(default: one per CPU); the findings are the same, the memory grows with them")
    args = p.parse_args(argv)
    result = analyse(args.results, args.jobs)
    atomic_write_text(args.output, json_text(result) + "\n")
    print(f"{args.output}: {len(result['findings'])} findings for {result['system']}")
    return 0
