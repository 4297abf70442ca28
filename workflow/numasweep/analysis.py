"""Findings computed from aggregated results: every number a report states comes from here.

Each analysis is a pure function over tidy DataFrames (the aggregated `<bench>.csv` of
docs/INTERFACES.md) and the topology (a `Topology` or its dict), returning `list[Finding]`, and
`[]` when the data it needs is absent. A finding's `summary` is written from its own `numbers`.

Noise rule (used by every "beyond noise" decision):
- when the rows carry the kernel's sample spread (`latency_ns_min`/`latency_ns_max`), the noise of
  a point is half its min-max range relative to its median, and the dataset's noise is the
  median of that over all points;
- otherwise the noise is the spread across comparable ranks: ranks of the same mode, page size,
  memory locality and L3 position in their node, measured at the same size; their relative
  deviations from the group median, median-absolute-deviation scaled to a standard deviation;
- with neither (a single curve without sample spread) it is DEFAULT_NOISE.
A difference between two points counts when it exceeds max(MIN_EFFECT, NOISE_FACTOR x the
noise of a ratio of two points); a latency step counts when it exceeds max(MIN_STEP, the same).
MIN_EFFECT and MIN_STEP are floors of practical relevance, so that a very quiet dataset does not
turn a 2 % wobble into a finding.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from numasweep import benches
from numasweep.errors import NumasweepError
from numasweep.io import atomic_write_text, read_csv
from numasweep.tables import as_text as _text
from numasweep.tables import bandwidth_points as _bandwidth_points
from numasweep.tables import latency_points as _latency_points
from numasweep.tables import name_configs as _configs
from numasweep.tables import nodes as _nodes
from numasweep.units import format_size, parse_page_fractions

MIN_STEP = 0.20          # a latency step: at least 20 % more latency between consecutive sizes
MIN_EFFECT = 0.10        # a difference between modes, L3 groups or page sizes: at least 10 %
NOISE_FACTOR = 3.0       # ... and at least 3 standard deviations of the ratio
DEFAULT_NOISE = 0.02     # relative noise assumed when the data cannot tell
SATURATION = 0.95        # bandwidth saturates at the first thread count reaching 95 % of the peak
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
        return _jsonable(dataclasses.asdict(self))


# ---------------------------------------------------------------- helpers

def _jsonable(value: Any) -> Any:
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


def relative_noise(points: pd.DataFrame) -> tuple[float, str]:
    """The dataset's relative noise of one point and the rule that gave it (see module docstring)."""
    if points.empty:
        return DEFAULT_NOISE, "default"
    spread = ((points["hi"] - points["lo"]) / 2 / points["latency_ns"]).dropna()
    if len(spread) >= max(1, len(points) // 2):
        return float(spread.median()), "sample spread"
    devs: list[float] = []
    for _, g in points.groupby(["comparable", "size_bytes"]):
        if len(g) >= 2:
            med = g["latency_ns"].median()
            devs.extend((g["latency_ns"] / med - 1).abs().tolist())
    if devs:
        return float(1.4826 * np.median(devs)), "spread across comparable ranks"
    return DEFAULT_NOISE, "default"


def _threshold(noise: float, floor: float) -> float:
    """Relative difference between two points that counts: the floor, or 3 sigma of a ratio."""
    return max(floor, NOISE_FACTOR * math.sqrt(2) * noise)


def _cache_candidates(topo: dict) -> list[tuple[str, int]]:
    """(label, bytes) for each cache size a working set can outgrow: per instance, and L3 per node."""
    out: list[tuple[str, int]] = []
    siblings = [set(s) for s in topo.get("smt_siblings") or []]
    for cache in topo.get("caches") or []:
        if str(cache.get("type", "")).lower().startswith("instr"):
            continue
        inst = [set(i) for i in cache.get("instances") or []]
        per_core = bool(inst) and all(any(i == s for s in siblings) or len(i) == 1 for i in inst)
        level = cache["level"]
        if per_core:
            label = f"L{level}{'d' if level == 1 else ''} per core"
        else:
            label = f"L{level} per {'L3 group' if level == 3 else 'instance'}"
        out.append((label, int(cache["size_bytes"])))
        if level == 3 and inst:
            per_node = set()
            for node in topo.get("nodes", []):
                cpus = set(node.get("cpus", []))
                n = sum(1 for i in inst if i & cpus)
                if n > 1:
                    per_node.add(n)
            for n in sorted(per_node):
                out.append((f"L3 per node, {n} L3 groups", n * int(cache["size_bytes"])))
    return out


# ---------------------------------------------------------------- latency vs size

def _step_table(points: pd.DataFrame) -> pd.DataFrame:
    """Ratio of each curve's latency between consecutive tested sizes."""
    rows = []
    for curve, g in points.groupby("curve"):
        g = g.sort_values("size_bytes")
        sizes, lat = g["size_bytes"].to_numpy(), g["latency_ns"].to_numpy()
        first = g.iloc[0]
        for i in range(1, len(g)):
            rows.append({"curve": curve, "mode": first["mode"], "page_size": first["page_size"],
                         "rank": first["rank"], "cpu": first["cpu"], "from": sizes[i - 1], "to": sizes[i],
                         "before": lat[i - 1], "after": lat[i], "ratio": lat[i] / lat[i - 1]})
    return pd.DataFrame(rows)


def cache_thresholds(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Latency steps between consecutive sizes, matched to the cache sizes of the topology.

    A step from size A to size B (median ratio over the ranks of one mode and page size) counts
    when it exceeds max(MIN_STEP, 3 sigma of a ratio). It is matched to a cache of size C with
    A < C <= B: the working set outgrows C at the first tested size not below C. Caches outside
    the tested range are reported once, as not measurable.
    """
    topo = _topology(topology)
    points = _latency_points(latency, topo)
    if points.empty or points["size_bytes"].nunique() < 2:
        return []
    noise, rule = relative_noise(points)
    limit = _threshold(noise, MIN_STEP)
    steps = _step_table(points)
    caches = _cache_candidates(topo)
    findings: list[Finding] = []
    steps = steps.merge(points[["curve", "config", "config_name"]].drop_duplicates(), on="curve")
    for (mode, page, _, name), g in steps.groupby(["mode", "page_size", "config", "config_name"]):
        for (lo, hi), s in g.groupby(["from", "to"]):
            ratio = float(s["ratio"].median())
            if ratio - 1 < limit:
                continue
            match = [(label, size) for label, size in caches if lo < size <= hi]
            label, cache = match[-1] if match else (None, None)
            where = f"in {mode} mode" + (f" with {page} pages" if page else "")
            before, after = float(s["before"].median()), float(s["after"].median())
            cause = (f"matching the {label} ({_sz(cache)})" if label
                     else "no cache size of the topology lies between these sizes")
            findings.append(Finding(
                id="cache_threshold", bench="latency",
                title=f"Latency step at {_sz(hi)} ({mode})" + _in(name),
                summary=(f"{where.capitalize()}, latency rises {ratio:.2f}x from {_sz(lo)} to {_sz(hi)} "
                         f"({before:.1f} to {after:.1f} ns, median of {len(s)} rank curves); {cause}."),
                numbers={"mode": mode, "page_size": page, "config": name, "from_size_bytes": lo, "size_bytes": hi,
                         "step_ratio": ratio, "latency_before_ns": before, "latency_after_ns": after,
                         "matched_cache": label, "cache_bytes": cache, "ranks": len(s),
                         "threshold_ratio": 1 + limit, "noise": noise, "noise_rule": rule},
                evidence=[{"rank": r["rank"], "cpu": r["cpu"], "size_bytes": hi, "latency_ns": r["after"],
                           "step_ratio": r["ratio"]} for _, r in s.sort_values("rank").iterrows()],
            ))
    smallest, largest = points["size_bytes"].min(), points["size_bytes"].max()
    outside = [(label, size) for label, size in caches if size < smallest or size >= largest]
    if outside and findings:
        names = ", ".join(f"{label} ({_sz(size)})" for label, size in outside)
        findings.append(Finding(
            id="cache_untested", bench="latency", title="Caches outside the tested sizes",
            summary=f"The tested sizes {_sz(smallest)} to {_sz(largest)} cannot show {names}.",
            numbers={"min_size_bytes": smallest, "max_size_bytes": largest,
                     "caches": [{"cache": label, "cache_bytes": size} for label, size in outside]},
        ))
    return findings


def tlb_cost(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Extra latency of 4 KiB pages over huge pages at the same size, rank and mode.

    Where both page sizes were run, the difference is TLB cost (the cache misses are the same);
    reported from the smallest size from which the 4 KiB run stays slower beyond the noise.
    """
    topo = _topology(topology)
    points = _latency_points(latency, topo)
    if points.empty or "4k" not in set(points["page_size"]):
        return []
    noise, _ = relative_noise(points)
    limit = _threshold(noise, MIN_EFFECT)
    _configs(points, without=("page_size", "pages"))
    key = ["mode", "policy", "locality", "rank", "cpu", "size_bytes"]
    findings = []
    for (mode, _, name), m in points.groupby(["mode", "config", "config_name"]):
        small = m[m["page_size"] == "4k"].groupby(key)["latency_ns"].median()
        for page in sorted(set(m["page_size"]) - {"4k", ""}):
            huge = m[m["page_size"] == page].groupby(key)["latency_ns"].median()
            both = pd.concat([small.rename("small"), huge.rename("huge")], axis=1).dropna().reset_index()
            if both.empty:
                continue
            both["ratio"] = both["small"] / both["huge"]
            per_size = both.groupby("size_bytes")["ratio"].median().sort_index()
            onset = _sustained_onset(per_size, limit)
            peak_size = per_size.idxmax()
            findings.append(Finding(
                id="tlb_cost", bench="latency", title=f"TLB cost: 4k vs {page} pages ({mode})" + _in(name),
                summary=(f"In {mode} mode, 4k pages are {_pct(per_size.max())} slower than {page} pages at "
                         f"{_sz(peak_size)}" + (f", beyond the noise from {_sz(onset)} on." if onset is not None
                                                else "; the difference does not persist beyond the noise.")),
                numbers={"mode": mode, "config": name, "huge_page": page, "onset_size_bytes": onset,
                         "max_ratio": float(per_size.max()), "max_size_bytes": peak_size,
                         "threshold_ratio": 1 + limit},
                evidence=[{"size_bytes": s, "ratio_4k_to_huge": r} for s, r in per_size.items()],
            ))
    return findings


def _sustained_onset(per_size: pd.Series, limit: float) -> int | None:
    """Smallest size from which every larger size differs by more than `limit`, in one direction."""
    onset = None
    sign = None
    for size in sorted(per_size.index, reverse=True):
        dev = per_size[size] - 1
        s = 1 if dev > 0 else -1
        if abs(dev) <= limit or (sign is not None and s != sign):
            break
        sign, onset = s, size
    return onset


def latency_locality(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Latency to one node's memory from each node's CPUs, normalised, next to the distances.

    Uses the largest size measured from at least two CPU nodes; latency per CPU node is the
    median over its ranks.
    """
    topo = _topology(topology)
    points = _latency_points(latency, topo)
    if points.empty:
        return []
    single = points[~points["mem_nodes"].str.contains(",") & (points["mem_nodes"] != "")]
    findings = []
    for (mode, page, mem), g in single.groupby(["mode", "page_size", "mem_nodes"]):
        sizes = [s for s, h in g.groupby("size_bytes") if h["cpu_node"].nunique() >= 2]
        if not sizes:
            continue
        size = max(sizes)
        h = g[g["size_bytes"] == size]
        per_node = h.groupby("cpu_node")["latency_ns"].agg(["median", "min", "max", "count"])
        fast, slow = int(per_node["median"].idxmin()), int(per_node["median"].idxmax())
        best = per_node["median"].min()
        mem_node = int(mem)
        dist = {int(n): _distance(topo, int(n), mem_node) for n in per_node.index}
        known = all(d is not None for d in dist.values())
        agrees = None
        ratios = {int(n): per_node.loc[n, "median"] / best for n in per_node.index}
        # nodes the firmware puts at one distance but whose latencies differ: what distances miss
        tied: dict[int, list[int]] = {}
        if known:
            order = sorted(per_node.index, key=lambda n: per_node.loc[n, "median"])
            agrees = all(dist[int(a)] <= dist[int(b)] for a, b in zip(order, order[1:]))
            for n, d in dist.items():
                tied.setdefault(d, []).append(n)
        tied = {d: ns for d, ns in tied.items() if len(ns) > 1}
        tie_spread = {d: max(ratios[n] for n in ns) / min(ratios[n] for n in ns) for d, ns in tied.items()}
        others = "; ".join(f"node {n} {ratios[n]:.2f}x" for n in sorted(ratios) if n not in (fast, slow))
        dist_text = "firmware distances are not recorded for this system"
        if known:
            dist_text = (f"firmware distances ({', '.join(f'node {n}: {dist[n]}' for n in sorted(dist))}) "
                         + ("order the nodes the same way" if agrees else "order them differently"))
            dist_text += "".join(
                f", but give nodes {', '.join(map(str, sorted(ns)))} the same distance {d} while their latencies "
                f"differ by {tie_spread[d]:.2f}x" for d, ns in tied.items() if tie_spread[d] - 1 > MIN_EFFECT / 2)
        findings.append(Finding(
            id="latency_locality", bench="latency", title=f"Latency to node {mem_node}'s memory by CPU node",
            summary=(f"With memory on node {mem_node} ({_sz(size)}, {mode} mode), latency is lowest from node "
                     f"{fast}'s CPUs ({best:.1f} ns) and highest from node {slow}'s "
                     f"({per_node.loc[slow, 'median']:.1f} ns, {ratios[slow]:.2f}x)"
                     + (f"; {others}" if others else "") + f"; {dist_text}."),
            numbers={"mode": mode, "page_size": page, "mem_node": mem_node, "size_bytes": size,
                     "fastest_cpu_node": fast, "slowest_cpu_node": slow, "fastest_ns": best,
                     "slowest_ns": per_node.loc[slow, "median"], "ratio_slowest_fastest": ratios[slow],
                     "ratio_to_fastest": ratios, "latency_ns": per_node["median"].to_dict(),
                     "distances": dist, "distance_order_agrees": agrees,
                     "same_distance_spread": {d: {"nodes": sorted(tied[d]), "ratio": r}
                                              for d, r in tie_spread.items()}},
            evidence=[{"cpu_node": int(n), "mem_node": mem_node, "size_bytes": size, "latency_ns": r["median"],
                       "latency_ns_min_rank": r["min"], "latency_ns_max_rank": r["max"], "ranks": int(r["count"]),
                       "distance": dist[int(n)]} for n, r in per_node.iterrows()],
        ))
    return findings


# ---------------------------------------------------------------- modes and L3 groups

def mode_divergence(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Smallest size from which concurrent and serial runs differ beyond the noise, per rank group.

    Rank groups are the L3 position in the node (first L3 group of each node, second, ...). At
    each size the concurrent/serial ratio of each rank is taken, then the median over the group;
    the onset is the smallest size from which that median stays beyond the threshold.
    """
    topo = _topology(topology)
    points = _latency_points(latency, topo)
    if points.empty or not {"concurrent", "serial"} <= set(points["mode"]):
        return []
    noise, rule = relative_noise(points)
    limit = _threshold(noise, MIN_EFFECT)
    _configs(points, without=("mode",))
    key = ["config", "config_name", "page_size", "locality", "l3_pos", "rank", "cpu", "size_bytes"]
    conc = points[points["mode"] == "concurrent"].groupby(key)["latency_ns"].median().rename("concurrent")
    ser = points[points["mode"] == "serial"].groupby(key)["latency_ns"].median().rename("serial")
    both = pd.concat([conc, ser], axis=1).dropna().reset_index()
    if both.empty:
        return []
    both["ratio"] = both["concurrent"] / both["serial"]
    findings = []
    onsets = []
    for (_, name, page, loc, pos), g in both.groupby(["config", "config_name", "page_size", "locality", "l3_pos"]):
        per_size = g.groupby("size_bytes")["ratio"].median().sort_index()
        onset = _sustained_onset(per_size, limit)
        cpus = sorted(g["cpu"].unique().tolist())
        group = _position_label(pos) if topo.get("l3_groups") else "all ranks"
        who = f"ranks on the {group} ({_cpus(cpus)})"
        peak = per_size.sub(1).abs().idxmax()
        if onset is not None:
            tail = per_size[per_size.index >= onset]
            onsets.append(onset)
            text = (f"For {who}, concurrent and serial runs diverge from {_sz(onset)} on: concurrent is "
                    f"{_pct(tail.median())} {'slower' if tail.median() > 1 else 'faster'} (median over those sizes, "
                    f"up to {_pct(per_size[peak])} at {_sz(peak)}).")
        else:
            text = (f"For {who}, concurrent and serial runs show no divergence beyond the noise that lasts to the "
                    f"largest size; "
                    f"the largest difference is {_pct(per_size[peak])} at {_sz(peak)} "
                    f"(threshold {limit * 100:.0f}%).")
        findings.append(Finding(
            id="mode_divergence", bench="latency", title=f"Concurrent vs serial: {group}" + _in(name),
            summary=text,
            numbers={"page_size": page, "config": name, "locality": loc, "l3_position": pos, "cpus": cpus,
                     "onset_size_bytes": onset,
                     "median_ratio_from_onset": float(per_size[per_size.index >= onset].median())
                     if onset is not None else None,
                     "max_ratio": float(per_size[peak]), "max_size_bytes": peak,
                     "threshold_ratio": 1 + limit, "noise": noise, "noise_rule": rule},
            evidence=[{"rank": r["rank"], "cpu": r["cpu"], "size_bytes": r["size_bytes"],
                       "latency_ns_concurrent": r["concurrent"], "latency_ns_serial": r["serial"],
                       "ratio": r["ratio"]} for _, r in g.iterrows()
                      if onset is not None and r["size_bytes"] >= onset],
        ))
    if onsets and len(findings) > 1:
        first = min(onsets)
        findings.insert(0, Finding(
            id="mode_divergence", bench="latency", title="Concurrent vs serial: onset",
            summary=(f"Concurrent and serial runs diverge beyond the noise from {_sz(first)} on, in "
                     f"{len(onsets)} of {len(findings)} rank groups."),
            numbers={"onset_size_bytes": first, "groups_diverging": len(onsets), "groups": len(findings),
                     "threshold_ratio": 1 + limit},
        ))
    return findings


def _asymmetry(points: pd.DataFrame) -> pd.DataFrame:
    """Per mode, page size, node, memory target and size: latency of each L3 position (median of its
    ranks) and the ratio of position 0 to position 1 (or of the slowest to the fastest position)."""
    rows = []
    for (config, name, mode, page, node, mem, size), g in points.groupby(
            ["config", "config_name", "mode", "page_size", "cpu_node", "mem_nodes", "size_bytes"]):
        per_pos = g.groupby("l3_pos")["latency_ns"].median()
        if len(per_pos) < 2:
            continue
        cpus = {p: sorted(g[g["l3_pos"] == p]["cpu"].tolist()) for p in per_pos.index}
        rows.append({"config": config, "config_name": name, "mode": mode, "page_size": page, "cpu_node": node, "mem_nodes": mem, "size_bytes": size,
                     "per_pos": per_pos.to_dict(), "cpus": cpus})
    return pd.DataFrame(rows)


def _asymmetry_runs(points: pd.DataFrame, limit: float) -> list[dict]:
    """For each mode and page size: the slow and fast L3 positions, the per-size median ratio over
    nodes, and which nodes invert it."""
    table = _asymmetry(points)
    if table.empty:
        return []
    out = []
    for (_, name, mode, page), g in table.groupby(["config", "config_name", "mode", "page_size"]):
        positions = sorted({p for d in g["per_pos"] for p in d})
        mean_log = {p: np.mean([math.log(d[p]) for d in g["per_pos"] if p in d]) for p in positions}
        slow, fast = max(mean_log, key=mean_log.get), min(mean_log, key=mean_log.get)
        g = g[[slow in d and fast in d for d in g["per_pos"]]].copy()
        g["ratio"] = [d[slow] / d[fast] for d in g["per_pos"]]
        per_size = g.groupby("size_bytes")["ratio"].median().sort_index()
        inversions = [{"cpu_node": int(r["cpu_node"]), "size_bytes": int(r["size_bytes"]), "ratio": r["ratio"],
                       "slow_cpus": r["cpus"][slow], "fast_cpus": r["cpus"][fast]}
                      for _, r in g.iterrows()
                      if per_size[r["size_bytes"]] - 1 > limit and r["ratio"] < 1 - limit]
        slow_cpus = sorted({c for d in g["cpus"] for c in d.get(slow, [])})
        fast_cpus = sorted({c for d in g["cpus"] for c in d.get(fast, [])})
        out.append({"mode": mode, "config_name": name, "page_size": page, "slow": slow, "fast": fast, "per_size": per_size,
                    "table": g, "inversions": inversions, "slow_cpus": slow_cpus, "fast_cpus": fast_cpus})
    return out


def domain_asymmetry(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Latency difference between the L3 groups (CCDs) inside one NUMA node.

    Ranks are grouped by the L3 group they run on (its position in the node), never by rank
    parity. Per size, the slow/fast ratio is the median over nodes. Reported: the onset (smallest
    size from which it stays beyond the threshold), the plateau (contiguous sizes around the
    maximum where the excess is at least half the maximum) and nodes that invert it.
    """
    topo = _topology(topology)
    points = _latency_points(latency, topo)
    if points.empty or not topo.get("l3_groups"):
        return []
    noise, rule = relative_noise(points)
    limit = _threshold(noise, MIN_EFFECT)
    findings = []
    for run in _asymmetry_runs(points, limit):
        per_size, mode = run["per_size"], run["mode"]
        peak = per_size.sub(1).abs().idxmax()
        onset = _sustained_onset(per_size, limit)
        slow_name, fast_name = _position_label(run["slow"]), _position_label(run["fast"])
        base = {"mode": mode, "config": run["config_name"], "page_size": run["page_size"], "slow_l3_position": run["slow"],
                "fast_l3_position": run["fast"], "slow_cpus": run["slow_cpus"], "fast_cpus": run["fast_cpus"],
                "max_ratio": float(per_size[peak]), "max_size_bytes": peak, "threshold_ratio": 1 + limit,
                "noise": noise, "noise_rule": rule}
        evidence = [{"cpu_node": int(r["cpu_node"]), "size_bytes": int(r["size_bytes"]), "ratio": r["ratio"],
                     "latency_ns_slow": r["per_pos"][run["slow"]], "latency_ns_fast": r["per_pos"][run["fast"]]}
                    for _, r in run["table"].iterrows()]
        if per_size[peak] - 1 <= limit:
            findings.append(Finding(
                id="domain_asymmetry", bench="latency", title=f"L3 groups inside a node ({mode}): no asymmetry" + _in(run["config_name"]),
                summary=(f"In {mode} mode, ranks on different L3 groups of the same node differ by at most "
                         f"{_pct(per_size[peak])} (at {_sz(peak)}, median over nodes), within the "
                         f"{limit * 100:.0f}% threshold: no asymmetry."),
                numbers={**base, "asymmetric": False}, evidence=evidence))
            continue
        half = 1 + (per_size[peak] - 1) / 2
        sizes = list(per_size.index)
        i = j = sizes.index(peak)
        while i > 0 and per_size[sizes[i - 1]] >= half:
            i -= 1
        while j + 1 < len(sizes) and per_size[sizes[j + 1]] >= half:
            j += 1
        plateau = per_size.loc[sizes[i]:sizes[j]]
        inv = run["inversions"]
        inv_text = "".join(f"; node {x['cpu_node']} inverts at {_sz(x['size_bytes'])} ({x['ratio']:.2f}x)"
                           for x in inv)
        onset_text = (f"; the gap exceeds the noise from {_sz(onset)} on" if onset is not None
                      else "; the gap does not persist to the largest size")
        findings.append(Finding(
            id="domain_asymmetry", bench="latency", title=f"L3 groups inside a node ({mode})" + _in(run["config_name"]),
            summary=(f"In {mode} mode, ranks on the {slow_name} ({_cpus(run['slow_cpus'])}) are "
                     f"{_pct(plateau.median())} slower than those on the {fast_name} "
                     f"({_cpus(run['fast_cpus'])}) from {_sz(sizes[i])} to {_sz(sizes[j])} "
                     f"(median over nodes and sizes; up to {_pct(per_size[peak])} at {_sz(peak)})"
                     f"{onset_text}{inv_text}."),
            numbers={**base, "asymmetric": True, "onset_size_bytes": onset,
                     "plateau_from_size_bytes": sizes[i], "plateau_to_size_bytes": sizes[j],
                     "plateau_median_ratio": float(plateau.median()), "inversions": inv},
            evidence=evidence))
    return findings


def anomalies(latency: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Points off their curve by more than the noise, with rank and size.

    A point is compared with the same size on its comparable ranks (same mode, pages, locality and
    L3 position; at least two others): it is off when it deviates from their median by more than
    the threshold and by more than 3 times their own spread (so a group split in two is not
    flagged point by point). Without comparable ranks, a latency that falls by more than the
    threshold as the size grows is off its own curve. Nodes where the L3-group asymmetry inverts
    are reported too.
    """
    topo = _topology(topology)
    points = _latency_points(latency, topo)
    if points.empty:
        return []
    noise, rule = relative_noise(points)
    limit = _threshold(noise, MIN_EFFECT)
    found = []
    for (_, size), g in points.groupby(["comparable", "size_bytes"]):
        if len(g) < 3:
            continue
        for idx, r in g.iterrows():
            others = g.drop(index=idx)["latency_ns"]
            med = others.median()
            spread = (others.max() - others.min()) / 2 / med
            dev = r["latency_ns"] / med - 1
            if abs(dev) > limit and abs(dev) > NOISE_FACTOR * spread:
                found.append((abs(dev), r, dev, med, "comparable ranks"))
    lonely = points.groupby(["comparable", "size_bytes"])["curve"].transform("count") < 3
    for curve, g in points[lonely].groupby("curve"):
        g = g.sort_values("size_bytes")
        lat = g["latency_ns"].to_numpy()
        for k in range(1, len(g)):
            dev = lat[k] / lat[k - 1] - 1
            if dev < -limit:
                found.append((abs(dev), g.iloc[k], dev, lat[k - 1], "previous size of the same rank"))
    found.sort(key=lambda x: -x[0])
    findings = []
    for _, r, dev, ref, against in found[:MAX_ANOMALIES]:
        findings.append(Finding(
            id="anomaly", bench="latency", title=f"Rank {r['rank']} at {_sz(r['size_bytes'])} ({r['mode']})",
            summary=(f"In {r['mode']} mode, rank {r['rank']} (CPU {r['cpu']}, node {r['cpu_node']}) measures "
                     f"{r['latency_ns']:.1f} ns at {_sz(r['size_bytes'])}, {_pct(1 + dev)} "
                     f"{'above' if dev > 0 else 'below'} the {ref:.1f} ns of its {against}."),
            numbers={"mode": r["mode"], "rank": r["rank"], "cpu": r["cpu"], "cpu_node": r["cpu_node"],
                     "size_bytes": r["size_bytes"], "latency_ns": r["latency_ns"], "reference_ns": ref,
                     "deviation": dev, "reference": against, "threshold_ratio": 1 + limit, "noise_rule": rule},
            evidence=[{"rank": r["rank"], "cpu": r["cpu"], "size_bytes": r["size_bytes"],
                       "latency_ns": r["latency_ns"]}],
        ))
    if topo.get("l3_groups"):
        for run in _asymmetry_runs(points, limit):
            for inv in run["inversions"]:
                findings.append(Finding(
                    id="anomaly", bench="latency",
                    title=f"Inversion on node {inv['cpu_node']} at {_sz(inv['size_bytes'])} ({run['mode']})",
                    summary=(f"In {run['mode']} mode at {_sz(inv['size_bytes'])}, node {inv['cpu_node']} inverts "
                             f"the L3-group pattern: {_cpus(inv['slow_cpus'])} ran {_pct(1 / inv['ratio'])} "
                             f"faster than {_cpus(inv['fast_cpus'])}, while the median over all nodes has the "
                             f"first {_pct(run['per_size'][inv['size_bytes']])} slower."),
                    numbers={"mode": run["mode"], "cpu_node": inv["cpu_node"], "size_bytes": inv["size_bytes"],
                             "ratio": inv["ratio"], "median_ratio_all_nodes": run["per_size"][inv["size_bytes"]],
                             "kind": "inversion"},
                    evidence=[{"cpu": c, "size_bytes": inv["size_bytes"]} for c in inv["slow_cpus"] + inv["fast_cpus"]],
                ))
    return findings


# ---------------------------------------------------------------- bandwidth, copy, GPU

def _series_name(r: Any) -> str:
    """Names every series column that can tell two bandwidth series apart."""
    kernel = f"{r['kernel']} " if r["kernel"] else ""
    text = f"{kernel}bandwidth with threads on node {r['cpu_nodes']} and memory on node {r['mem_nodes']}"
    extra = []
    if str(r.get("array_bytes", "")).strip():
        extra.append(f"{_sz(float(r['array_bytes']))} arrays")
    for col, word in (("pattern", "pattern"), ("stride", "stride"), ("page_size", "pages"), ("weights", "weights"),
                      ("memory", "memory"), ("label", "sweep")):
        value = str(r.get(col, "")).strip()
        if value and not (col == "pattern" and value == "sequential") and not (col == "stride" and value in ("0", "1")):
            extra.append(f"{word} {value}")
    return text + (f" ({', '.join(extra)})" if extra else "")


def bandwidth_saturation(bandwidth: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Thread count at which each bandwidth series first reaches SATURATION of its peak."""
    points, metric = _bandwidth_points(bandwidth)
    if points.empty:
        return []
    keys = [c for c in points.columns if c not in ("threads", "mb_s")]
    findings = []
    for _, g in points.groupby(keys):
        if g["threads"].nunique() < 3:
            continue
        g = g.sort_values("threads")
        peak = g.loc[g["mb_s"].idxmax()]
        sat = g[g["mb_s"] >= SATURATION * peak["mb_s"]].iloc[0]
        first = g.iloc[0]
        name = _series_name(first)
        findings.append(Finding(
            id="bandwidth_saturation", bench="bandwidth", title=f"Saturation: {name}",
            summary=(f"{name[0].upper() + name[1:]} reaches {SATURATION * 100:.0f}% of its "
                     f"{peak['mb_s']:.0f} MB/s peak at {int(sat['threads'])} threads ({sat['mb_s']:.0f} MB/s, "
                     f"{sat['mb_s'] / first['mb_s']:.2f}x the {int(first['threads'])}-thread value); the peak is at "
                     f"{int(peak['threads'])} threads."),
            numbers={"cpu_nodes": first["cpu_nodes"], "mem_nodes": first["mem_nodes"], "kernel": first["kernel"],
                     "policy": first["policy"], "metric": metric, "saturation_threads": int(sat["threads"]),
                     "saturation_mb_s": sat["mb_s"], "peak_mb_s": peak["mb_s"], "peak_threads": int(peak["threads"]),
                     "first_threads": int(first["threads"]), "speedup_vs_first": sat["mb_s"] / first["mb_s"],
                     "fraction": SATURATION},
            evidence=[{"threads": int(r["threads"]), "mb_s": r["mb_s"]} for _, r in g.iterrows()],
        ))
    return findings


def bandwidth_locality(bandwidth: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Remote over local bandwidth for the same CPU node, at the peak and per thread count,
    next to the firmware distances; and the best interleave weights where weighted runs exist."""
    topo = _topology(topology)
    points, metric = _bandwidth_points(bandwidth)
    if points.empty:
        return []
    single = points[~points["cpu_nodes"].str.contains(",") & ~points["mem_nodes"].str.contains(",")
                    & (points["cpu_nodes"] != "") & (points["mem_nodes"] != "")]
    # everything of the series identity but where the memory is (grid `memory`, `mem_nodes`)
    keys = [c for c in points.columns if c not in ("cpu_nodes", "mem_nodes", "memory", "cpu_node", "threads", "mb_s")]
    keys.append("cpu_nodes")
    varying = [c for c in keys[:-1] if points[c].astype(str).nunique() > 1]
    findings = []
    for key, g in single.groupby(keys):
        cpu = key[-1]
        first = g.iloc[0]
        name = ", ".join(f"{c} {first[c]}" for c in varying)
        local = g[g["mem_nodes"] == cpu].set_index("threads")["mb_s"]
        if local.empty:
            continue
        for mem, remote in g[g["mem_nodes"] != cpu].groupby("mem_nodes"):
            remote = remote.set_index("threads")["mb_s"]
            per_thread = (remote / local).dropna()
            peak_ratio = remote.max() / local.max()
            d_local, d_remote = _distance(topo, int(cpu), int(cpu)), _distance(topo, int(cpu), int(mem))
            dist_text = (f"; firmware distance {d_remote} vs {d_local}" if d_local is not None and d_remote is not None
                         else "; firmware distances are not recorded")
            range_text = (f"; {per_thread.min():.2f}-{per_thread.max():.2f}x across "
                          f"{int(per_thread.index.min())}-{int(per_thread.index.max())} threads"
                          if len(per_thread) > 1 else "")
            findings.append(Finding(
                id="bandwidth_locality", bench="bandwidth",
                title=f"Bandwidth: node {mem} vs node {cpu} memory" + _in(name),
                summary=(f"Threads on node {cpu} reach {peak_ratio:.2f}x the bandwidth from node {mem}'s memory "
                         f"that they reach from their own node's (peak {remote.max():.0f} vs {local.max():.0f} MB/s)"
                         f"{range_text}{dist_text}."),
                numbers={"cpu_node": int(cpu), "mem_node": int(mem), "metric": metric,
                         "peak_ratio": peak_ratio, "local_peak_mb_s": local.max(), "remote_peak_mb_s": remote.max(),
                         "ratio_min": per_thread.min() if len(per_thread) else None,
                         "ratio_max": per_thread.max() if len(per_thread) else None,
                         "ratio_median": per_thread.median() if len(per_thread) else None,
                         "threads_min": int(per_thread.index.min()) if len(per_thread) else None,
                         "threads_max": int(per_thread.index.max()) if len(per_thread) else None,
                         "distance_local": d_local, "distance_remote": d_remote, "config": name},
                evidence=[{"threads": int(t), "local_mb_s": local.get(t), "remote_mb_s": remote.get(t),
                           "ratio": r} for t, r in per_thread.items()],
            ))
    weighted = points[points["policy"] == "weighted"]
    others = [c for c in keys if c not in ("weights", "cpu_nodes")]
    varying = [c for c in others if weighted[c].astype(str).nunique() > 1]
    for key, g in weighted.groupby(["cpu_nodes", "mem_nodes"] + others):
        cpu, mem = key[0], key[1]
        per_weights = g.groupby("weights")["mb_s"].max().sort_values(ascending=False)
        if len(per_weights) < 2:
            continue
        best, worst = per_weights.index[0], per_weights.index[-1]
        name = ", ".join(f"{c} {g.iloc[0][c]}" for c in varying)
        findings.append(Finding(
            id="bandwidth_weights", bench="bandwidth",
            title=f"Best interleave weights over nodes {mem} from node {cpu}" + _in(name),
            summary=(f"Weighted interleave over nodes {mem} from node {cpu}'s CPUs is fastest with weights {best} "
                     f"({per_weights.iloc[0]:.0f} MB/s), {per_weights.iloc[0] / per_weights.iloc[-1]:.2f}x the "
                     f"slowest weights {worst}."),
            numbers={"cpu_nodes": cpu, "mem_nodes": mem, "best_weights": best, "best_mb_s": per_weights.iloc[0],
                     "worst_weights": worst, "worst_mb_s": per_weights.iloc[-1],
                     "ratio": per_weights.iloc[0] / per_weights.iloc[-1]},
            evidence=[{"weights": w, "mb_s": v} for w, v in per_weights.items()],
        ))
    return findings


def copy_matrix(copy: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    """Best copy bandwidth per (source, destination) node pair: fastest, slowest, local vs cross."""
    need = {"src_node", "dst_node", "best_gb_s"}
    if copy is None or copy.empty or not need <= set(copy.columns):
        return []
    cells = copy.groupby(["src_node", "dst_node"])["best_gb_s"].max()
    if len(cells) < 2:
        return []
    fast, slow = cells.idxmax(), cells.idxmin()
    local = cells[[s == d for s, d in cells.index]]
    cross = cells[[s != d for s, d in cells.index]]
    ratio_text = (f"; within a node {local.median():.1f} GB/s, across nodes {cross.median():.1f} GB/s "
                  f"(medians, {cross.median() / local.median():.2f}x)" if len(local) and len(cross) else "")
    return [Finding(
        id="copy_matrix", bench="copy", title="Copy bandwidth between nodes",
        summary=(f"Copies are fastest from node {fast[0]} to node {fast[1]} ({cells[fast]:.1f} GB/s) and slowest "
                 f"from node {slow[0]} to node {slow[1]} ({cells[slow]:.1f} GB/s, "
                 f"{cells[slow] / cells[fast]:.2f}x){ratio_text}."),
        numbers={"fastest": {"src_node": fast[0], "dst_node": fast[1], "gb_s": cells[fast]},
                 "slowest": {"src_node": slow[0], "dst_node": slow[1], "gb_s": cells[slow]},
                 "ratio_slowest_fastest": cells[slow] / cells[fast],
                 "cross_to_local": cross.median() / local.median() if len(local) and len(cross) else None,
                 "local_median_gb_s": local.median() if len(local) else None,
                 "cross_median_gb_s": cross.median() if len(cross) else None},
        evidence=[{"src_node": s, "dst_node": d, "gb_s": v} for (s, d), v in cells.items()],
    )]


def _plateau(curve: pd.Series) -> tuple[float, int]:
    """Median bandwidth over the sizes reaching SATURATION of the maximum, and the first such size."""
    top = curve[curve >= SATURATION * curve.max()]
    return float(top.median()), int(top.index.min())


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
            value, start = _plateau(curve)
            plateaus.append({"direction": direction, "policy": policy, "numa_nodes": nodes, "numa_weight": weight,
                             "pinned": pinned, "ngpus": ngpus, "gpu": gpu_id, "label": label, "host": host,
                             "plateau_gib_s": value, "from_size_bytes": start})
            who = f"{ngpus} GPU{'s' if ngpus not in ('', '1') else ''}, GPU {gpu_id}" + (f", {label}" if label else "")
            mem = f"memory on node(s) {nodes}" + (f" with weights {weight}" if weight else "")
            pin = {"1": "pinned", "true": "pinned", "0": "pageable", "false": "pageable"}.get(pinned.lower(), pinned)
            findings.append(Finding(
                id="gpu_plateau", bench="gpu_xfer",
                title=(f"GPU {direction}: {policy or 'default'} {nodes}" + (f" weights {weight}" if weight else "")
                       + f", {pin or 'pinning unknown'} ({who})"),
                summary=(f"GPU {direction}s ({who}, {pin or 'pinning unknown'}, {policy or 'default'} policy, {mem}) reach a "
                         f"plateau of {value:.1f} GiB/s from {_sz(start)} on."),
                numbers={"direction": direction, "policy": policy, "numa_nodes": nodes, "numa_weight": weight,
                         "pinned": pinned, "ngpus": ngpus, "gpu": gpu_id, "plateau_gib_s": value,
                         "from_size_bytes": start},
                evidence=[{"size_bytes": int(s), "gib_s": v} for s, v in curve.items()],
            ))
    table = pd.DataFrame(plateaus)
    if table.empty:
        return findings
    for (direction, policy, nodes, weight, ngpus, gpu_id, label, host), g in table.groupby(
            ["direction", "policy", "numa_nodes", "numa_weight", "ngpus", "gpu", "label", "host"]):
        pins = {p.lower(): v for p, v in zip(g["pinned"], g["plateau_gib_s"])}
        pinned = pins.get("1", pins.get("true"))
        pageable = pins.get("0", pins.get("false"))
        if pinned is None or pageable is None:
            continue
        findings.append(Finding(
            id="gpu_pinned", bench="gpu_xfer",
            title=f"Pinned vs pageable GPU {direction}s ({policy or 'default'} {nodes}, {ngpus} GPU(s), GPU {gpu_id})",
            summary=(f"Pinned host memory gives {pinned / pageable:.2f}x the {direction} plateau of pageable memory "
                     f"({pinned:.1f} vs {pageable:.1f} GiB/s, {policy or 'default'} policy, node(s) {nodes})."),
            numbers={"direction": direction, "policy": policy, "numa_nodes": nodes, "pinned_gib_s": pinned,
                     "pageable_gib_s": pageable, "ratio": pinned / pageable},
        ))
    weighted = table[table["numa_weight"] != ""]
    for (direction, nodes, pinned, ngpus, gpu_id, label, host), g in weighted.groupby(
            ["direction", "numa_nodes", "pinned", "ngpus", "gpu", "label", "host"]):
        if len(g) < 2:
            continue
        g = g.sort_values("plateau_gib_s", ascending=False)
        best, worst = g.iloc[0], g.iloc[-1]
        findings.append(Finding(
            id="gpu_weights", bench="gpu_xfer",
            title=(f"Best weights for GPU {direction}s over nodes {nodes} "
                   f"({'pinned' if pinned in ('1', 'true') else 'pageable'}, {ngpus} GPU(s), GPU {gpu_id})"),
            summary=(f"Weights {best['numa_weight']} over nodes {nodes} give the highest {direction} plateau "
                     f"({best['plateau_gib_s']:.1f} GiB/s), {best['plateau_gib_s'] / worst['plateau_gib_s']:.2f}x "
                     f"weights {worst['numa_weight']}."),
            numbers={"direction": direction, "numa_nodes": nodes, "best_weights": best["numa_weight"],
                     "best_gib_s": best["plateau_gib_s"], "worst_weights": worst["numa_weight"],
                     "worst_gib_s": worst["plateau_gib_s"], "ratio": best["plateau_gib_s"] / worst["plateau_gib_s"]},
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
        rows = []
        for _, r in df.iterrows():
            fr = parse_page_fractions(r[col])
            if not fr:
                continue
            wanted = _nodes(r.get(req_col)) or _nodes(r.get("cpu_node")) or _nodes(r.get("cpu_nodes"))
            rows.append({who: r.get(who, ""), "job_id": r.get("job_id", ""), "mode": r.get("mode", ""),
                         "cpu": r.get("cpu"),
                         "requested": ",".join(map(str, wanted)), "size_bytes": r.get("size_bytes"),
                         "fraction": sum(fr.get(n, 0.0) for n in wanted), "page_fractions": r[col]})
        if not rows:
            continue
        table = pd.DataFrame(rows)
        # one line per rank of each job (rank numbers repeat across jobs), at its worst size
        table["job_id"] = table["job_id"].fillna("").astype(str)
        worst = table.loc[table.groupby(list(dict.fromkeys(["job_id", who])))["fraction"].idxmin()]
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
            evidence=[{k: r[k] for k in dict.fromkeys(("job_id", who, "mode", "cpu", "requested", "size_bytes",
                                                       "fraction", "page_fractions"))}
                      for _, r in worst.iterrows()],
        ))
    return findings


# ---------------------------------------------------------------- entry points

LATENCY_ANALYSES = (cache_thresholds, tlb_cost, latency_locality, mode_divergence, domain_asymmetry, anomalies)


def analyse(results_dir: str | Path) -> dict:
    """All findings for one results folder (results/<system>/ or examples/<name>/)."""
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
    frames = {b: read_csv(results_dir / f"{b}.csv") if (results_dir / f"{b}.csv").exists() else None
              for b in benches.NAMES}
    if all(f is None for f in frames.values()):
        raise NumasweepError(f"{results_dir}: no aggregated <bench>.csv; run `python -m numasweep aggregate` first")
    findings: list[Finding] = []
    for fn in LATENCY_ANALYSES:
        findings += fn(frames["latency"], topo)
    findings += bandwidth_saturation(frames["bandwidth"], topo)
    findings += bandwidth_locality(frames["bandwidth"], topo)
    findings += copy_matrix(frames["copy"], topo)
    findings += gpu_transfers(frames["gpu_xfer"], topo)
    from numasweep import gpu_analysis  # it builds on this module

    findings += gpu_analysis.findings(frames["gpu_xfer"], topo)
    from numasweep import scaling  # it builds on this module

    findings += scaling.rank_scaling(frames["latency"], topo)
    findings += placement_verification(frames, topo)
    return {"system": topo.get("system") or results_dir.name, "findings": [f.to_dict() for f in findings]}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m numasweep analyse",
                                description="Compute findings.json from aggregated results.")
    p.add_argument("--results", required=True, help="results/<system> or examples/<name>")
    p.add_argument("-o", "--output", required=True, help="findings.json to write")
    args = p.parse_args(argv)
    result = analyse(args.results)
    atomic_write_text(args.output, json.dumps(result, indent=1) + "\n")
    print(f"{args.output}: {len(result['findings'])} findings for {result['system']}")
    return 0
