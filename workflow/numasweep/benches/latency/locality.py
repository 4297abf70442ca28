"""Latency to each node's memory by CPU node, against the firmware distances, on any number of
nodes.

What is compared is what the headline reads (`plateaus`): per configuration (every series column
but those telling ranks and their nodes apart, so a 1-rank run and a 14-rank run are never pooled),
each CPU node's latency to a memory node at the end of memory's plateau, all cells of the
configuration at one size where their plateaus share one. The units are what is independent: a
node's ranks (each the median over its runs) where it has two or more, else its one rank's runs,
so one rank per node with repetitions has its interval.

For one memory node:
- *pairs*: every pair of CPU nodes once, the ratio of their geometric means over units with a Welch
  t interval. A pair of different distances contradicts the distances where the farther node is
  faster beyond the noise and the 10 % floor; a pair of one distance differs where either is slower
  beyond both. Each kind is one Benjamini-Hochberg family over the pairs tested in the call; a
  contradiction is a finding of its own (`latency_ordering`).
- *steps*: the nodes grouped by their distance (the firmware's classes: local 10, the same socket
  12, the other socket 32 on a 2-socket NPS4 machine), each class against the next nearer one,
  their units pooled: one claim per step (the same-socket step, the cross-socket penalty), beyond
  the floor, inside its margin (no practical difference) or unresolved, so that one small step the
  noise does not resolve never hides a large one. The order agrees with the distances where no pair
  contradicts them and every step is claimed or inside the margin; it is unresolved otherwise.
- *groups*: the nodes in latency order split where the next is slower than its group's fastest
  beyond the floor and the noise (Welch, one-sided): the measured groups, said beside the firmware's classes, and whether each
  measured group is a run of whole firmware classes (they agree) or splits one (a node out of its
  class, as a slow pair is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from numasweep.benches.latency import plateaus
from numasweep.benches.latency.tables import NAME
from numasweep.core.topology import Topology
from numasweep.core.units import page_words, size_words
from numasweep.findings import analysis
from numasweep.findings.analysis import Finding
from numasweep.results import series
from numasweep.statistics import contrasts, stats
from numasweep.statistics.stats import Interval

MIN_EFFECT = contrasts.MIN_EFFECT   # a difference between nodes' latencies: at least 10 %
FLOOR = f"{MIN_EFFECT * 100:.0f}%"


def _welch(a: np.ndarray, b: np.ndarray) -> tuple[Interval, float, float]:
    """Latency of units `a` over units `b`: the ratio of geometric means, Welch t interval."""
    return stats.welch(a, b, method="Welch t interval over ranks and runs on the log ratio")


def _beyond(log_ratio: float, se: float, dof: float, two_sided: bool) -> float:
    """One-sided p-value of log ratio > log(1 + MIN_EFFECT) (`two_sided`: of |log ratio|); with a
    zero standard error 0 or 1, with an unknown one NaN."""
    value = abs(log_ratio) if two_sided else log_ratio
    if se == 0:
        return 0.0 if value > math.log1p(MIN_EFFECT) else 1.0
    if two_sided:
        return stats.excess_pvalue(log_ratio, se, dof, MIN_EFFECT)
    return stats.rise_pvalue(log_ratio, se, dof, MIN_EFFECT)


def _inside_floor(ratio: Interval) -> bool:
    """The interval lies inside the floor's margin, 1 / (1 + MIN_EFFECT) .. 1 + MIN_EFFECT: no
    practical difference (the equivalence test of `contrasts` and the bandwidth findings)."""
    return bool(np.isfinite(ratio.low) and 1 / (1 + MIN_EFFECT) <= ratio.low and ratio.high <= 1 + MIN_EFFECT)


def _beyond_floor(ratio: Interval) -> bool:
    return bool(np.isfinite(ratio.low) and ratio.low > 1 + MIN_EFFECT)


@dataclass
class _NodePair:
    """Two CPU nodes reaching one node's memory: latency of `a` over `b` (ratio of geometric means
    over units, Welch interval) and the p-value the test of its family gives."""
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


def node_pairs(cells: dict[int, np.ndarray], dist: dict[int, int]) -> tuple[list[_NodePair], list[_NodePair]]:
    """Every pair of CPU nodes once: (pairs of different distances as farther / nearer, tested for
    the farther node faster beyond the floor; pairs of one distance as slower / faster by
    geometric mean, tested two-sided beyond the floor)."""
    nodes = sorted(cells)
    ordered, tied = [], []
    for i, x in enumerate(nodes):
        for y in nodes[i + 1:]:
            if dist[x] == dist[y]:
                ratio, se, dof = _welch(cells[x], cells[y])
                slow, fast = (x, y) if ratio.estimate >= 1 else (y, x)
                if slow != x:
                    ratio, se, dof = _welch(cells[slow], cells[fast])
                tied.append(_NodePair(slow, fast, dist[slow], dist[fast], ratio,
                                      _beyond(math.log(ratio.estimate), se, dof, two_sided=True)))
                continue
            far, near = (x, y) if dist[x] > dist[y] else (y, x)
            ratio, se, dof = _welch(cells[far], cells[near])
            ordered.append(_NodePair(far, near, dist[far], dist[near], ratio,
                                     _beyond(-math.log(ratio.estimate), se, dof, two_sided=False)))
    return ordered, tied


def _flag(pairs: list[_NodePair]) -> None:
    """Benjamini-Hochberg over one family: the pairs of its kind tested in the call."""
    for pair, hit in zip(pairs, stats.benjamini_hochberg([p.p_value for p in pairs])):
        pair.flagged = bool(hit)


@dataclass
class _Step:
    """The nodes of one distance against those of the next nearer one (units pooled)."""
    farther: list[int]
    nearer: list[int]
    distance_farther: int
    distance_nearer: int
    ratio: Interval

    @property
    def verdict(self) -> str:
        if _beyond_floor(self.ratio):
            return "slower"
        if self.ratio.high < 1 / (1 + MIN_EFFECT):
            return "faster"
        return "equivalent" if _inside_floor(self.ratio) else "unresolved"

    def words(self) -> str:
        said = {"slower": f"slower beyond the noise and the {FLOOR} floor",
                "faster": f"faster beyond the noise and the {FLOOR} floor, against the distances",
                "equivalent": f"inside the {FLOOR} margin: no practical difference",
                "unresolved": f"not resolved by the noise and the {FLOOR} floor"}[self.verdict]
        return (f"nodes at distance {self.distance_farther} ({_nodes(self.farther)}) over those at "
                f"{self.distance_nearer} ({_nodes(self.nearer)}) {self.ratio.text('{:.2f}x')}, {said}")

    def numbers(self) -> dict:
        return {"farther": self.farther, "nearer": self.nearer, "distance_farther": self.distance_farther,
                "distance_nearer": self.distance_nearer, **analysis.interval_numbers("ratio", self.ratio),
                "verdict": self.verdict, "claim": self.verdict in ("slower", "faster")}


def _nodes(nodes: list[int]) -> str:
    """"node 3" or "nodes 1, 2, 3" (runs of three or more as "4-7")."""
    nodes = sorted(nodes)
    runs, start = [], 0
    for i in range(1, len(nodes) + 1):
        if i == len(nodes) or nodes[i] != nodes[i - 1] + 1:
            part = nodes[start:i]
            runs.append(f"{part[0]}-{part[-1]}" if len(part) >= 3 else ", ".join(map(str, part)))
            start = i
    return ("node " if len(nodes) == 1 else "nodes ") + ", ".join(runs)


def _steps(cells: dict[int, np.ndarray], dist: dict[int, int]) -> list[_Step]:
    classes: dict[int, list[int]] = {}
    for n in sorted(cells):
        classes.setdefault(dist[n], []).append(n)
    order = sorted(classes)
    out = []
    for near, far in zip(order, order[1:]):
        ratio, _, _ = _welch(np.concatenate([cells[n] for n in classes[far]]),
                             np.concatenate([cells[n] for n in classes[near]]))
        out.append(_Step(classes[far], classes[near], far, near, ratio))
    return out


def measured_groups(cells: dict[int, np.ndarray]) -> list[list[int]]:
    """The CPU nodes in latency order (geometric mean over units), a new group where the next node
    is slower than its group's fastest beyond the floor and the noise (one-sided Welch): no group
    spans more than the floor, however gradually its nodes' latencies climb."""
    order = sorted(cells, key=lambda n: float(np.mean(np.log(cells[n]))))
    groups = [[order[0]]]
    for node in order[1:]:
        ratio, se, dof = _welch(cells[node], cells[groups[-1][0]])
        p = _beyond(math.log(ratio.estimate), se, dof, two_sided=False)
        if np.isfinite(p) and p <= stats.FDR and _beyond_floor(ratio):
            groups.append([node])
        else:
            groups[-1].append(node)
    return groups


def _agree(groups: list[list[int]], dist: dict[int, int]) -> bool:
    """Each measured group holds whole firmware classes (nodes of one distance never split)."""
    where = {n: i for i, g in enumerate(groups) for n in g}
    by_class: dict[int, set[int]] = {}
    for n, d in dist.items():
        by_class.setdefault(d, set()).add(where[n])
    return all(len(g) == 1 for g in by_class.values())


def _tie_spread(dist: dict[int, int], latency: dict[int, float], tied: list[_NodePair]) -> dict:
    """Per distance that two nodes or more share: the nodes, their slowest over fastest latency,
    and whether a pair of them differs (`same_distance_pairs`)."""
    at: dict[int, list[int]] = {}
    for n, d in dist.items():
        at.setdefault(d, []).append(n)
    return {d: {"nodes": sorted(ns), "ratio": max(latency[n] for n in ns) / min(latency[n] for n in ns),
                "differs": any(p.flagged for p in tied if p.distance_a == d)}
            for d, ns in at.items() if len(ns) > 1}


def _group_words(groups: list[list[int]], latency: dict[int, float]) -> str:
    return "; ".join(f"{_nodes(g)} ({min(latency[n] for n in g):.0f}"
                     + (f" to {max(latency[n] for n in g):.0f}" if len(g) > 1 else "") + " ns)" for g in groups)


def _class_words(dist: dict[int, int]) -> str:
    classes: dict[int, list[int]] = {}
    for n, d in sorted(dist.items()):
        classes.setdefault(d, []).append(n)
    return "; ".join(f"{_nodes(ns)} at {d}" for d, ns in sorted(classes.items()))


# ---------------------------------------------------------------- cells

@dataclass
class _Group:
    """One configuration's cells to one memory node: CPU node -> its units' latencies (ns)."""
    name: str
    mode: str
    page: str
    mem_node: int
    sizes: list[int]
    cells: dict[int, np.ndarray]


def _cells(latency: pd.DataFrame, topology: Topology | None) -> list[_Group]:
    """Per configuration and memory node, the units of each CPU node at the size memory is read
    at (`plateaus.memory_readings`)."""
    every, _ = plateaus.curves(latency, topology)
    config = [k for k in (every[0].key if every else {}) if k != "locality"]
    varying = [k for k in config if k not in ("mode", "page_size", analysis.GRID_PAGES)
               and len({str(c.key.get(k)) for c in every}) > 1]
    by_config: dict[tuple, list[plateaus.Curve]] = {}
    for c in every:
        by_config.setdefault(tuple(str(c.key.get(k)) for k in config), []).append(c)
    out = []
    for key, curves in by_config.items():
        values = dict(zip(config, key))
        rows = plateaus.samples(plateaus.memory_readings(curves))
        for mem, part in rows.groupby("memory_node"):
            cells = {int(n): _units(g) for n, g in part.groupby("cpu_node")}
            if len(cells) >= 2:
                out.append(_Group(series.config_name(values, varying), values.get("mode", ""),
                                  values.get("page_size", ""), int(mem), sorted(set(part["size_bytes"])), cells))
    return out


def _units(cell: pd.DataFrame) -> np.ndarray:
    """A CPU node's independent values: its ranks (each the median over its runs) where it has two
    or more, else its one rank's runs. A rank's runs share what sets that rank apart (its core, its
    L3 group), so with several ranks they are no more independent units than the rank is."""
    ranks = cell.groupby(["host", "rank", "cpu"])["value"]
    return (ranks.median() if ranks.ngroups >= 2 else cell["value"]).to_numpy(float)


def _distance_text(dist: dict[int, int], steps: list[_Step], ordered: list[_NodePair], agrees: bool | None,
                   family: int) -> str:
    listed = ", ".join(f"node {n}: {d}" for n, d in sorted(dist.items()))
    if not ordered:
        return f"firmware distances ({listed}) give every node the same distance: they order nothing"
    if agrees is False:
        p = min((p for p in ordered if p.flagged), key=lambda p: p.ratio.estimate)
        return (f"firmware distances ({listed}) order them differently: node {p.a} (distance {p.distance_a}) has "
                f"{p.ratio.text('{:.2f}x')} the latency of node {p.b} (distance {p.distance_b}), faster beyond the "
                f"noise and the {FLOOR} floor (Benjamini-Hochberg over the {family} pairs of different distances "
                "tested)")
    head = {True: "order the nodes the same way", None: "are not contradicted"}[agrees]
    return f"firmware distances ({listed}) {head}: " + "; ".join(s.words() for s in steps)


def _tied_text(tied: list[_NodePair], family: int) -> str:
    """The pairs of one distance that differ, one clause per slower node."""
    by: dict[int, list[_NodePair]] = {}
    for p in tied:
        if p.flagged:
            by.setdefault(p.a, []).append(p)
    out = ""
    for slow, pairs in sorted(by.items()):
        others = sorted({p.b for p in pairs})
        ratios = [f"{p.ratio.text('{:.2f}x')} node {p.b}'s" for p in sorted(pairs, key=lambda p: p.b)]
        said = ", ".join(ratios[:-1]) + (" and " if len(ratios) > 1 else "") + ratios[-1]
        out += (f"; the firmware gives node {slow} the distance {pairs[0].distance_a} of {_nodes(others)}, yet node "
                f"{slow}'s latency is {said}, {'each ' if len(pairs) > 1 else ''}beyond the noise and the {FLOOR} floor "
                f"(Benjamini-Hochberg over the {family} pairs of one distance tested)")
    return out


def latency_locality(latency: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """One finding per configuration and memory node measured from two CPU nodes or more (the
    module docstring), and one per contradiction of the distances (`latency_ordering`)."""
    if latency is None or latency.empty or not {"size_bytes", "latency_ns_median"} <= set(latency.columns):
        return []
    groups = []
    for g in _cells(latency, topology):
        dist = {n: topology.distance(n, g.mem_node) if topology else None for n in g.cells}
        known = all(d is not None for d in dist.values())
        ordered, tied = node_pairs(g.cells, dist) if known else ([], [])
        groups.append((g, dist, known, ordered, tied))
    every_ordered = [p for *_, ordered, _ in groups for p in ordered]
    every_tied = [p for *_, tied in groups for p in tied]
    _flag(every_ordered)
    _flag(every_tied)
    findings = []
    for g, dist, known, ordered, tied in groups:
        latency_ns = {n: float(np.median(v)) for n, v in g.cells.items()}
        fast, slow = min(latency_ns, key=latency_ns.get), max(latency_ns, key=latency_ns.get)
        spread, _, _ = _welch(g.cells[slow], g.cells[fast])
        steps = _steps(g.cells, dist) if known else []
        contradicted = any(p.flagged for p in ordered)
        agrees = (False if contradicted else
                  True if steps and all(s.verdict in ("slower", "equivalent") for s in steps)
                  and any(s.verdict == "slower" for s in steps) else None) if known else None
        measured = measured_groups(g.cells)
        structure = (f"measured, the nodes fall in {len(measured)} group{'s' if len(measured) > 1 else ''}: "
                     f"{_group_words(measured, latency_ns)}"
                     + ((", as the firmware's distances group them" if _agree(measured, dist) else
                         ", which splits nodes the firmware puts at one distance") if known else ""))
        others = "; ".join(f"node {n} {latency_ns[n] / latency_ns[fast]:.2f}x" for n in sorted(latency_ns)
                           if n not in (fast, slow))
        size = (size_words(g.sizes[0]) if len(g.sizes) == 1 else
                f"{size_words(g.sizes[0])} to {size_words(g.sizes[-1])}") + " (the end of memory's plateau)"
        where = f"{size}, {g.mode} mode" + (f", {page_words(g.page)}" if g.page else "") + (f", {g.name}" if g.name else "")
        equivalent = _inside_floor(spread)
        if equivalent:
            listed = ", ".join(f"node {n} {v:.1f} ns" for n, v in sorted(latency_ns.items()))
            opening = (f"latency is the same from every CPU node within the {FLOOR} floor ({listed}; "
                       f"slowest over fastest {spread.text('{:.2f}x')}, inside the {FLOOR} margin: equivalent, no "
                       "practical difference)")
        else:
            opening = (f"latency is lowest from node {fast}'s CPUs ({latency_ns[fast]:.1f} ns) and highest from node "
                       f"{slow}'s ({latency_ns[slow]:.1f} ns, {spread.text('{:.2f}x')})" + (f"; {others}" if others else ""))
        dist_text = (_distance_text(dist, steps, ordered, agrees, len(every_ordered)) + _tied_text(tied, len(every_tied))
                     if known else "firmware distances are not recorded for this system")
        numbers = {"mode": g.mode, "page_size": g.page, "config": g.name, "mem_node": g.mem_node,
                   "size_bytes": g.sizes[-1], "sizes_bytes": g.sizes, "fastest_cpu_node": fast, "slowest_cpu_node": slow,
                   "fastest_ns": latency_ns[fast], "slowest_ns": latency_ns[slow],
                   "ratio_slowest_fastest": latency_ns[slow] / latency_ns[fast],
                   **analysis.interval_numbers("geomean_ratio", spread), "latency_ns": latency_ns,
                   "units": {n: len(v) for n, v in g.cells.items()},
                   "distances": dist, "distance_order_agrees": agrees, "floor": MIN_EFFECT, "equivalent": equivalent,
                   "distance_steps": [s.numbers() for s in steps],
                   "distance_pairs": [p.numbers(("farther", "nearer"), "contradicts") for p in ordered],
                   "same_distance_pairs": [p.numbers(("slower", "faster"), "differs") for p in tied],
                   "same_distance_spread": _tie_spread(dist, latency_ns, tied) if known else {},
                   "measured_groups": measured, "groups_agree": _agree(measured, dist) if known else None,
                   "claim": bool(agrees is not None or any(p.flagged for p in tied)
                                 or any(s.verdict in ("slower", "faster") for s in steps))}
        evidence = [{"cpu_node": n, "mem_node": g.mem_node, "latency_ns": latency_ns[n],
                     "latency_ns_min_unit": float(np.min(v)), "latency_ns_max_unit": float(np.max(v)),
                     "units": len(v), "distance": dist[n]} for n, v in sorted(g.cells.items())]
        findings.append(Finding(
            id="latency_locality", bench=NAME,
            title=f"Latency to node {g.mem_node}'s memory by CPU node" + (f" ({g.name})" if g.name else ""),
            summary=f"With memory on node {g.mem_node} ({where}), {opening}; {dist_text}; {structure}.",
            numbers=numbers, evidence=evidence))
        for p in (p for p in ordered if p.flagged):
            findings.append(Finding(
                id="latency_ordering", bench=NAME,
                title=(f"Latency ordering contradicts the firmware distances: node {p.a} vs node {p.b} to node "
                       f"{g.mem_node}'s memory" + analysis.in_parens(where)),
                summary=(f"Node {g.mem_node}'s memory is farther from node {p.a}'s CPUs than from node {p.b}'s by the "
                         f"firmware distances ({p.distance_a} vs {p.distance_b}), yet node {p.a}'s latency to it is "
                         f"{p.ratio.text('{:.2f}x')} node {p.b}'s ({where}; geometric means over ranks and runs), "
                         f"faster beyond the noise and the {FLOOR} floor (Benjamini-Hochberg over the "
                         f"{len(every_ordered)} pairs of different distances tested): the ordering contradicts the "
                         "firmware distances."),
                numbers={"mode": g.mode, "page_size": g.page, "config": g.name, "mem_node": g.mem_node,
                         "size_bytes": g.sizes[-1], "claim": True, "farther_cpu_node": p.a, "nearer_cpu_node": p.b,
                         "distance_farther": p.distance_a, "distance_nearer": p.distance_b,
                         **analysis.interval_numbers("ratio", p.ratio), "p_value": p.p_value, "floor": MIN_EFFECT,
                         "distance_order_agrees": False},
                evidence=[e for e in evidence if e["cpu_node"] in (p.a, p.b)]))
    return findings
