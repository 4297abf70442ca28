"""Each level's latency read where its curve's own segmentation puts its plateau: the values a
reader takes away (the summary's headline, the CPU node x memory node matrix, the firmware
comparison and the hwloc export), never a size taken from the topology alone.

A curve (`levels.CurveLevels`) is plateaus joined by transitions. Its *plateaus* are the runs of
stable sizes between one transition and the next (the first from the smallest size, the last to
the largest). Each plateau is one level:
- memory, where its latency is memory's (`levels.MEMORY_NS` or more: no cache of a CPU we know is
  that slow), where the rise into it ends there, or where all its sizes lie beyond every cache one
  core can use (a desktop's DRAM may be faster than MEMORY_NS);
- otherwise a cache one core can use (`levels.usable_capacities`): the cache whose exit the rise
  out of it is; else the next cache above the one whose exit the rise into it is; else the
  smallest cache that holds its first size. Each cache has one plateau in a curve, its first.
A cache's plateau holds two sizes or more (one size may lie on a rise); memory's may hold one (a
sweep of one size, or one that ends where it reaches memory). A level is read at its plateau's last size: a cache's plateau has no step beyond the floor and the
noise, so its largest size holds the most data still served by it; memory's plateau ends before
the first such step after it (the page walks of sizes beyond the TLB's reach, whose tables no
longer stay in the caches), and at its last size the hits left in the caches count least.

A cache's plateau is *cut short* where the rise out of it is no exit of its own and reaches memory
well below its size (a virtual machine's share of the host's last-level cache, a cache the core
cannot fill): the level is read there, and the reading says where the curve leaves it. A cache in
the sizes tested with no plateau of its own (the rise out of the cache below goes on to memory) is
said as missing, with no value.

The value read is the analysis' own (`stats.Series`): the median over the curve's replicates at
that size, with the model's interval there (its noise pooled over a band of sizes), so that the
headline, the evidence tables and the raw tables print one value per point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from numasweep.benches.latency import findings, levels
from numasweep.core.topology import Topology
from numasweep.core.units import count_words
from numasweep.results import series
from numasweep.results.tables import with_memory_node
from numasweep.statistics import stats
from numasweep.statistics.stats import Interval, Series


@dataclass
class Plateau:
    """One level's plateau on one curve: the sizes between the rise into it and the rise out of it
    (`into`, `out`: None at the curve's ends), the size it is read at, and for memory the first
    step rising beyond the floor and the noise after it (`past`: the page walks' rise)."""
    capacity: levels.Capacity | None          # None: memory
    sizes: list[int]
    read_at: int
    into: levels.Transition | None
    out: levels.Transition | None
    past: tuple[int, int] | None = None

    @property
    def memory(self) -> bool:
        return self.capacity is None

    def cut_short(self) -> bool:
        """A cache's plateau that the curve leaves for memory two doublings or more below the
        cache's size, by a rise that is not that cache's exit."""
        return (self.capacity is not None and self.out is not None and self.out.capacity_bytes != self.capacity.size_bytes
                and self.out.latency_after_ns >= levels.MEMORY_NS
                and self.out.from_size_bytes <= self.capacity.size_bytes // 4)


def _memory_level(values: np.ndarray, sizes: list[int], into: levels.Transition | None,
                  capacities: list[levels.Capacity]) -> bool:
    largest = max((c.size_bytes for c in capacities), default=None)
    return (float(np.median(values)) >= levels.MEMORY_NS
            or (into is not None and (into.to_memory or into.latency_after_ns >= levels.MEMORY_NS))
            or (largest is not None and sizes[0] > largest))


def curve_plateaus(curve: levels.CurveLevels, capacities: list[levels.Capacity]) -> list[Plateau]:
    """The plateaus of a curve the analysis measured, in size order (none for a refused one)."""
    if not curve.measured:
        return []
    unstable = {size for size, _ in curve.unstable}
    points = [(int(s), float(v)) for s, v in zip(curve.sizes, curve.latency_ns) if int(s) not in unstable]
    cuts = sorted(curve.transitions, key=lambda t: t.from_size_bytes)
    spans: list[tuple[levels.Transition | None, levels.Transition | None]] = list(zip([None, *cuts], [*cuts, None]))
    # the caches a plateau may be: those that hold the curve's smallest size or more
    usable = [c for c in capacities if points and c.size_bytes >= points[0][0]]
    found: list[tuple[list[int], np.ndarray, levels.Transition | None, levels.Transition | None]] = []
    for into, out in spans:
        lo = into.to_size_bytes if into else -math.inf
        hi = out.from_size_bytes if out else math.inf
        mine = [(s, v) for s, v in points if lo <= s <= hi]
        if mine:
            found.append(([s for s, _ in mine], np.array([v for _, v in mine]), into, out))
    # which cache each plateau is: the exit out of it first, then the exit into it, then the
    # smallest cache holding its first size; each cache once
    level: dict[int, levels.Capacity | None] = {}
    used: set[int] = set()
    memory_from = None
    for i, (sizes, values, into, out) in enumerate(found):
        if _memory_level(values, sizes, into, capacities) or memory_from is not None:
            memory_from = i if memory_from is None else memory_from
            level[i] = None
    by_size = {c.size_bytes: c for c in usable}
    for i, (_, _, _, out) in enumerate(found):
        if i in level or out is None or out.kind != "cache" or out.capacity_bytes not in by_size:
            continue
        if out.capacity_bytes not in used:
            level[i] = by_size[out.capacity_bytes]
            used.add(out.capacity_bytes)
    for i, (sizes, _, into, _) in enumerate(found):
        if i in level:
            continue
        above = [c for c in usable if c.size_bytes not in used and (
            c.size_bytes > into.capacity_bytes if into is not None and into.kind == "cache" and into.capacity_bytes
            else c.size_bytes >= sizes[0])]
        if above:
            level[i] = min(above, key=lambda c: c.size_bytes)
            used.add(level[i].size_bytes)
    out_list = []
    for i, (sizes, _, into, out) in enumerate(found):
        if i not in level:
            continue                   # a second plateau of a level, or one no cache holds
        capacity = level[i]
        if capacity is None and i != memory_from:
            continue                   # memory is read on its first plateau
        if capacity is not None and len(sizes) < 2:
            continue                   # one size shows no plateau: it may lie on a rise
        read_at, past = sizes[-1], None
        if capacity is None:
            # memory's plateau ends before the first step after its start that rises beyond the
            # floor and the noise (levels' `rising`)
            rises = [(a, b) for a, b in curve.rising if a >= sizes[0]]
            if rises:
                first = min(rises)
                past = first
                read_at = max([s for s in sizes if s <= first[0]], default=sizes[0])
        out_list.append(Plateau(capacity, [s for s in sizes if s <= read_at] if capacity is None else sizes,
                                read_at, into, out, past))
    return out_list


def missing(curve: levels.CurveLevels, plateaus: list[Plateau], capacities: list[levels.Capacity]) -> list[
        tuple[levels.Capacity, levels.Transition | None]]:
    """The caches that hold a curve's smallest size and have no plateau on it: each with the rise
    into memory where that rise passes the cache by (the cache lies above the one whose exit it
    is, or above where it starts, whatever the cache's size), else, for a cache inside the sizes
    tested, with None (no two sizes in a row hold it: a coarse grid, or a rise that never levels)."""
    had = {p.capacity.size_bytes for p in plateaus if p.capacity is not None}
    memory = next((p for p in plateaus if p.memory), None)
    rise = memory.into if memory is not None else None
    below = None if rise is None else rise.capacity_bytes if rise.capacity_bytes is not None else rise.from_size_bytes
    out = []
    for c in capacities:
        if c.size_bytes in had or c.size_bytes < curve.sizes[0]:
            continue
        if below is not None and c.size_bytes > below:
            out.append((c, rise))              # memory's latency came first, whatever the cache's size
        elif c.size_bytes < curve.sizes[-1] and (memory is None or c.size_bytes < memory.sizes[0]):
            out.append((c, None))
    return out


# ---------------------------------------------------------------- the analysis' curves

@dataclass
class Curve:
    """One latency curve as the analysis sees it: its series (replicates x sizes), its levels and
    its plateaus."""
    series: Series
    levels: levels.CurveLevels
    plateaus: list[Plateau]
    replicate_keys: list[str]
    rows: pd.DataFrame                   # its rows of the (pooled) table

    def memory(self) -> Plateau | None:
        return next((p for p in self.plateaus if p.memory), None)

    @property
    def key(self) -> dict:
        return self.series.key

    def page(self) -> str:
        return str(self.key.get("page_size", ""))

    def huge_pages(self) -> bool:
        page = self.page().lower()
        return page not in levels.BASE_PAGES and page not in ("", "nan")

    def ranks(self) -> int:
        try:
            return int(str(self.key.get("ranks", 1)).split()[0])
        except ValueError:
            return 1

    def mode(self) -> str:
        return str(self.key.get("mode", ""))

    def locality(self) -> str:
        return str(self.key.get("locality", "local"))

    def replicate(self, column: str) -> list:
        """Each replicate's value of a replicate column (None where the curve has no such column)."""
        if column not in self.replicate_keys:
            return [None] * len(self.series.replicates)
        i = self.replicate_keys.index(column)
        return [r[i] if isinstance(r, tuple) else r for r in self.series.replicates]

    def read(self, size: int, keep: list[bool] | None = None) -> tuple[Interval, str]:
        """The value at `size` over the replicates `keep` (all by default), with the model's
        interval there, and the units it rests on in words ("3 runs", "8 ranks", "2 ranks x 3 runs")."""
        s, mask = self._kept(keep)
        j = int(np.searchsorted(s.sizes, size))
        used = np.flatnonzero(mask)[np.isfinite(s.logs[:, j])]
        return s.at(j), self.units_words(used)

    def point(self, size: int, keep: list[bool] | None = None) -> tuple[float, float, float, int]:
        """`Series.point` at `size` over the replicates `keep`: for a ratio of two readings."""
        s, _ = self._kept(keep)
        return s.point(int(np.searchsorted(s.sizes, size)))

    def _kept(self, keep: list[bool] | None) -> tuple[Series, np.ndarray]:
        s = self.series
        mask = np.ones(len(s.replicates), dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
        if not mask.all():
            s = Series(s.key, s.sizes, s.logs[mask], s.run_se[mask], [r for r, k in zip(s.replicates, mask) if k])
        return s, mask

    def units_words(self, used: np.ndarray) -> str:
        """Runs are repetitions, ranks are ranks: "3 runs", "8 ranks", "2 ranks x 3 runs"."""
        reps = self.replicate(series.REPETITION)
        who = list(zip(self.replicate("host"), self.replicate("rank"), self.replicate("cpu")))
        runs = len({reps[i] for i in used})
        ranks = len({who[i] for i in used})
        hosts = len({who[i][0] for i in used})
        where = f" on {hosts} hosts" if hosts > 1 else ""
        if ranks <= 1:
            return count_words(runs, "run")
        if runs <= 1 or len(used) == ranks:
            return count_words(ranks, "rank") + where
        return f"{count_words(ranks, 'rank')}{where} x {count_words(runs, 'run')}"


def curves(latency: pd.DataFrame, topology: Topology | None) -> tuple[list[Curve], list[levels.Capacity]]:
    """Every curve of a latency table, segmented as the findings segment it (one call of
    `levels.latency_levels` over all of them, so one false-finding family), with its plateaus;
    over several hosts, the hosts are units of one curve (the fleet report ranks them apart)."""
    study = findings.prepare(latency, topology)
    if study is None:
        return [], levels.usable_capacities(topology)
    pooled = findings.pool_one_rank(study.table)
    keys = [k for k in study.keys if k != "host"]
    replicates = [c for c in findings.REPLICATES + ("host",) if c in pooled]
    all_series = levels.latency_series(pooled, keys, replicates, where="latency.csv")
    found = levels.latency_levels(pooled, topology, keys, replicates, all_series=all_series)
    text = {k: stats.key_column(pooled[k]).astype(str) for k in keys if k in pooled}

    def rows(key: dict) -> pd.DataFrame:
        mask = np.ones(len(pooled), dtype=bool)
        for k, column in text.items():
            mask &= (column == str(key.get(k, ""))).to_numpy()
        return pooled[mask]

    return ([Curve(s, c, curve_plateaus(c, found.capacities), replicates, rows(s.key))
             for s, c in zip(all_series, found.curves)], found.capacities)


def memory_readings(chosen: list[Curve]) -> list[tuple[Curve, Plateau, int]]:
    """Per locality of the curves (local memory, and each CPU node -> memory nodes), the curve
    memory is read on (`best` of those with a memory plateau), that plateau, and the size read:
    one size for all of them where their plateaus share one (the smallest end, where it is at or
    past every start and every curve measured it), so that a matrix, a NUMA ratio and a comparison
    of nodes read one size; else each plateau's end."""
    by: dict[str, list[tuple[Curve, Plateau]]] = {}
    for c in chosen:
        p = c.memory()
        if p is not None:
            by.setdefault(c.locality(), []).append((c, p))
    found = [best(readings) for readings in by.values()]
    if not found:
        return []
    common = min(p.read_at for _, p in found)
    if common >= max(p.sizes[0] for _, p in found) and all(common in c.series.sizes for c, _ in found):
        return [(c, p, common) for c, p in found]
    return [(c, p, p.read_at) for c, p in found]


def samples(readings: list[tuple[Curve, Plateau, int]]) -> pd.DataFrame:
    """One row per replicate of each reading's curve at the size memory is read at: the CPU
    node, its L3 group, the node holding the buffer (`with_memory_node`: where its pages landed),
    the value, the size, and who measured it (host, rank, CPU, repetition). The median per cell is
    the headline's value."""
    parts = []
    for c, _, size in readings:
        rows = with_memory_node(c.rows[c.rows["size_bytes"] == size]).dropna(subset=["memory_node"])
        if rows.empty or "cpu_node" not in rows:
            continue
        l3 = (pd.to_numeric(rows["l3_group"], errors="coerce").fillna(-1).astype(int).to_numpy() if "l3_group" in rows
              else np.full(len(rows), -1))
        who = {c: rows[c].astype(str).to_numpy() if c in rows else "" for c in ("host", "rank", "cpu", series.REPETITION)}
        parts.append(pd.DataFrame({"cpu_node": rows["cpu_node"].astype(int).to_numpy(), "l3_group": l3,
                                   "memory_node": rows["memory_node"].astype(int).to_numpy(),
                                   "value": rows["latency_ns_median"].astype(float).to_numpy(),
                                   "size_bytes": size, **who}))
    if not parts:
        return pd.DataFrame(columns=["cpu_node", "l3_group", "memory_node", "value", "size_bytes", "host", "rank",
                                     "cpu", series.REPETITION])
    return pd.concat(parts, ignore_index=True)


def idle(all_curves: list[Curve]) -> list[Curve]:
    """The curves idle latency is read from: those the analysis measured, of the fewest ranks,
    alone (serial runs, or one rank) where such runs exist."""
    measured = [c for c in all_curves if c.levels.measured]
    if not measured:
        return []
    fewest = min(c.ranks() for c in measured)
    mine = [c for c in measured if c.ranks() == fewest]
    alone = [c for c in mine if c.ranks() == 1 or c.mode() in ("serial", findings.POOLED_MODE)]
    return alone or mine


def best(candidates: list[tuple[Curve, Plateau]]) -> tuple[Curve, Plateau] | None:
    """The reading of one level over several curves: huge pages where a huge-page curve has the
    level's plateau (no page walks add to its latency: with 4 KiB pages the walks of sizes past
    the TLB's reach can lift an L3 plateau to memory's latency), then the longest plateau."""
    if not candidates:
        return None
    return max(candidates, key=lambda cp: (cp[0].huge_pages(), len(cp[1].sizes)))
