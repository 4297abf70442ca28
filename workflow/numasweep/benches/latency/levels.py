"""Latency curves as plateaus and transitions on log size, each transition given one cause.

A curve (one `stats.Series`) is a run of plateaus joined by transitions. A *rising step* is a pair
of consecutive tested sizes whose latency ratio exceeds 1 + STEP_FLOOR beyond the noise (the
one-sided test of `stats.rise_pvalue`, Benjamini-Hochberg over every step of every curve given in
one call). Consecutive rising steps form one transition, kept when its whole rise reaches
1 + TRANSITION_FLOOR: a rise spread over two size steps is one transition, labelled once.

Its *location* is the size at which latency is half-way (in ns) between the plateau before and
the plateau after, interpolated on log size; its interval is a bootstrap over replicates.

Two rises in one run: a run of rising steps that holds two capacities at least two doublings apart
(an L1 and an L2 rise with no plateau tested between) is split at its flattest step between them;
a run whose steps rise, flatten and rise again is split where they flatten: a step rising less
than FLATTER x the steepest step before it and the steepest after it, both beyond the noise (one
cache's miss rate 1 - (C/S)^p rises steepest first, then ever less, so a steeper step after a
flatter one is a second cause). That step, the tail of the first rise, stays with the first.

Attribution, by where the rise happens: a capacity C explains a transition from size A (last size
before the rise) to B (first size after it) only where the curve measured a size at or below C and
one above it (a cache's exit needs a size on either side of the cache), and when
A / 2^t <= C <= B x 2^t, t = TOLERANCE_STEPS
tested size steps and at least one doubling, and when the sizes at which a random chase is
half-way out of a cache of exactly C ([C, 2C]: C x 2^(1/p) for a miss rate 1 - (C/S)^p, p >= 1)
reach the transition's location interval, up to t beyond its lower end (a rise a step late): a
latency that starts rising a step before C (associativity, prefetch) or a step after it
(replacement keeps part of the set) is still C's, a rise half-way far from C is not, whatever C's
window holds. Capacities are what one core can use
(`usable_capacities`): each data cache level's instance that holds the core, so the L3 of its
own L3 group (CCX/CCD), never the sum over a node's groups. Each capacity explains at most one
transition and each transition gets at most one capacity (nearest in log size to the location
over sqrt 2, where a random pointer chase is half-way for a cache exactly that size). A
transition no capacity explains is unexplained, with its numbers, why each cache of its window is
not its cause, and the causes that look like it (the TLB reach with 4 KiB pages, a virtual
machine's share of a last-level cache that shows no rise of its own).

TLB: where a 4 KiB-page curve and a huge-page curve are otherwise the same series, the caches are
read from the huge-page curve and the TLB from the 4k / huge ratio at the sizes both measured:
its onset is the smallest such size from which every larger size exceeds 1 + TLB_FLOOR beyond the
noise (its interval at least one size step either side: the grid's resolution), its location where
the ratio is half its maximum; the peak is the largest ratio at a size that is significant (beyond
the floor, interval above 1), else none is claimed. The 4 KiB curve is then segmented only
below the huge-page curve's smallest size (where huge pages were not measured, as in the default
sweep); above it, its rises are the same caches plus that TLB. A 4 KiB curve's rise no cache
explains, at sizes its huge-page twin measured too, is the TLB's (kind "tlb") where the twin does
not rise there and 4 KiB pages are slower at its upper end beyond the floor and the noise; where the
twin rises alike, it is said not to be the TLB's.

Unstable sizes: a size whose runs' own samples disagree (UNSTABLE_SPREAD) is left out of the curve
that is segmented, so the step of its neighbours spans it and no transition is placed by it; the
curve lists it (`unstable`) for the findings to name.

Plausibility gate: a curve whose latency at sizes at least FAR_BEYOND x the largest usable cache
stays under PREFETCH_MAX_NS never left L1/L2 latency: no DRAM load-to-use latency of a server part
is that low, so the kernel measured streaming through prefetchers, not latency, and the curve is
not analysed further.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from numasweep.findings import analysis
from numasweep.statistics import stats
from numasweep.benches.common import LATENCY
from numasweep.statistics.stats import Interval, Series
from numasweep.core.topology import Topology
from numasweep.core.units import capacity_words, page_words, size_words

STEP_FLOOR = 0.10          # a size step that adds at least 10 % latency may belong to a transition
TRANSITION_FLOOR = 0.20    # a transition raises latency by at least 20 % from plateau to plateau
TLB_FLOOR = 0.10           # 4 KiB pages at least 10 % slower than huge pages
TOLERANCE_STEPS = 1.0
FLATTER = 0.75             # a step between two rises rises less than 3/4 of the steepest on either side
FAR_BEYOND = 8
# An L2 hit costs at most ~5 ns and DRAM at least ~60 ns on the server parts we know (AMD, Intel
# and Arm optimisation guides); 10 ns far beyond the LLC is neither.
PREFETCH_MAX_NS = 10.0
NO_TOPOLOGY_FAR_BYTES = 2 ** 31   # without a topology, "far beyond any LLC" is 2 GiB
BASE_PAGES = {"4k", "4kib", "4096"}
LOCATION_DRAWS = 300
# A size whose runs' samples spread (median over runs of (max - min) / median, the kernel's
# spread_pct) beyond 30 % and beyond 3x the curve's typical spread is unstable: its samples
# disagree (a chase caught between two levels, a page placement redrawn), so its median may sit
# anywhere between them and places nothing.
# A load that takes this long comes from memory: no cache level of a CPU we know of is that slow
# (an L3 hit costs 10-50 ns, DRAM 80-150 ns, CXL and remote memory more), so a rise starting
# there is not a cache's exit, whatever size the topology reports.
MEMORY_NS = 60.0
UNSTABLE_SPREAD = 0.30
UNSTABLE_FACTOR = 3.0


@dataclass(frozen=True)
class Capacity:
    label: str           # "L2 (per core)", "L3 (per L3 group, 8 cores)"
    size_bytes: int
    level: int
    shared_by: int       # cores sharing one instance


@dataclass
class Transition:
    from_size_bytes: int
    to_size_bytes: int
    location_bytes: Interval
    ratio: Interval                  # latency at to_size / latency at from_size
    latency_before_ns: float
    latency_after_ns: float
    p_value: float                   # largest p-value of its steps (each rejected at the FDR)
    kind: str                        # "cache" | "tlb" | "unexplained"
    label: str | None = None
    capacity_bytes: int | None = None
    caveats: list[str] = field(default_factory=list)
    to_memory: bool = False          # a cache's exit that rises on to memory: the larger caches' exits inside it

    def describe(self) -> str:
        where = f"from {size_words(self.from_size_bytes)} to {size_words(self.to_size_bytes)}"
        loc = self.location_bytes
        at = f"half-way at {size_words(loc.estimate)}"
        if np.isfinite(loc.low):
            at += f" ({size_words(loc.low)} to {size_words(loc.high)})"
        if self.label:
            cause = f"the {capacity_words(self.label, self.capacity_bytes)}"
        elif self.kind == "tlb":
            cause = "the TLB's reach with 4 KiB pages" + "".join(f": {c}" for c in self.caveats)
        else:
            cause = "nothing in the topology explains it" + "".join(f"; {c}" for c in self.caveats)
        if self.to_memory:
            cause += (f", and on to memory-level latency ({self.latency_after_ns:.0f} ns) with no plateau between: "
                      "the exit from the larger caches is inside this rise, and its ratio is not this cache's alone")
        return f"latency rises {self.ratio.text('{:.2f}x')} {where}, {at}: {cause}"


@dataclass
class CurveLevels:
    series: dict
    sizes: list[int]
    latency_ns: list[float]
    noise_rule: str
    measured: bool                   # False: the plausibility gate refused it
    gate_reason: str | None
    transitions: list[Transition]
    unseen: list[Capacity]           # in the tested range but no transition found for it
    untested: list[Capacity]         # outside the tested range
    unstable: list[tuple[int, float]] = field(default_factory=list)   # (size, spread) left out of segmenting
    # (from, to) sizes of each step that rises beyond the step floor and the noise (Benjamini-
    # Hochberg over every step of the call): the rises the transitions must account for
    rising: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class TlbParting:
    series: dict                     # the shared keys of the two curves
    huge_page: str
    onset_bytes: int | None
    onset: Interval | None           # bootstrap of the onset size
    location_bytes: Interval | None  # ratio half-way to its maximum
    max_ratio: Interval              # 4k / huge at the size of the largest ratio
    max_size_bytes: int
    per_size: list[dict]
    # the largest ratio is a peak only at a size that exceeds the floor beyond the noise and whose
    # interval excludes 1; otherwise max_ratio is the largest ratio seen, not a claim
    peak_significant: bool = False


@dataclass
class Levels:
    curves: list[CurveLevels]
    tlb: list[TlbParting]
    capacities: list[Capacity]

    def findings(self) -> int:
        """Number of claims: transitions, TLB partings and refused curves."""
        return (sum(len(c.transitions) for c in self.curves) + sum(t.onset_bytes is not None for t in self.tlb)
                + sum(not c.measured for c in self.curves))


# ---------------------------------------------------------------- capacities

def usable_capacities(topology: Topology | None, cpu: int | None = None) -> list[Capacity]:
    """Data and unified caches one core can fill: per level, the instance holding `cpu` (or the
    largest instance when no CPU is given). Sums over a node's L3 groups are never offered."""
    if topology is None:
        return []
    core = {c: i for i, sibs in enumerate(topology.smt_siblings) for c in sibs}
    out = []
    for cache in sorted(topology.caches, key=lambda c: c.level):
        if cache.type.lower().startswith("instr"):
            continue
        insts = [i for i in cache.instances if cpu is None or cpu in i] or cache.instances
        inst = max(insts, key=len) if insts else []
        cores = len({core.get(c, c) for c in inst}) or 1
        if cores == 1:
            where = "per core"
        elif cache.level == 3 and topology.l3_groups:
            where = f"per L3 group, {cores} cores"
        else:
            where = f"shared by {cores} cores"
        name = f"L{cache.level}{'d' if cache.type.lower().startswith('data') else ''}"
        out.append(Capacity(f"{name} ({where})", int(cache.size_bytes), cache.level, cores))
    return out


# ---------------------------------------------------------------- gate

def plausibility(sizes: np.ndarray, latency_ns: np.ndarray, capacities: Sequence[Capacity]) -> str | None:
    """Why the curve is not a latency measurement, or None when it may be one."""
    far = FAR_BEYOND * max(c.size_bytes for c in capacities) if capacities else NO_TOPOLOGY_FAR_BYTES
    beyond = latency_ns[sizes >= far]
    if len(beyond) and float(np.median(beyond)) < PREFETCH_MAX_NS:
        return (f"latency stays at {float(np.median(beyond)):.1f} ns at {size_words(int(sizes[sizes >= far][0]))} "
                f"and beyond, {FAR_BEYOND}x past the largest cache: no memory latency is that low, so the "
                "kernel streamed through the prefetchers (a fixed stride, e.g. lmbench lat_mem_rd at stride 64) "
                "rather than chasing dependent random pointers; not analysed as latency")
    return None


# ---------------------------------------------------------------- segmentation

def _crossing(sizes: np.ndarray, values: np.ndarray, target: float) -> float:
    """log2 size where `values` first reaches `target`, interpolated linearly in log2 size."""
    return float(_crossings(sizes, values[None, :], np.array([target]))[0])


def _crossings(sizes: np.ndarray, values: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per row of `values` (one per bootstrap draw), `_crossing` at its own target: the log2 size
    where the row first reaches it from the second size on, interpolated linearly in log2 size,
    and the largest size where it never does; all rows at once."""
    x = np.log2(sizes.astype(float))
    if values.shape[1] < 2:
        return np.full(len(values), x[-1])
    hit = values[:, 1:] >= targets[:, None]
    j = np.argmax(hit, axis=1) + 1
    rows = np.arange(len(values))
    v0, v1 = values[rows, j - 1], values[rows, j]
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = (targets - v0) / (v1 - v0)
    # as min(1, max(0, raw)) takes it, a missing value before the crossing counting as 0
    f = np.where((v1 == v0) | np.isnan(raw), 0.0, np.minimum(1.0, np.maximum(0.0, raw)))
    return np.where(hit.any(axis=1), x[j - 1] + f * (x[j] - x[j - 1]), x[-1])


def _half_way(sizes: np.ndarray, logs: np.ndarray, a: int, b: int) -> float:
    return float(_half_ways(sizes, logs[None, :], a, b)[0])


def _half_ways(sizes: np.ndarray, logs: np.ndarray, a: int, b: int) -> np.ndarray:
    """Per row of log latencies (a curve or its bootstrap draws), the log2 size where latency
    crosses half-way between sizes a and b."""
    lat = np.exp(np.ascontiguousarray(logs[:, a:b + 1]))
    return _crossings(sizes[a:b + 1], lat, (lat[:, 0] + lat[:, -1]) / 2)


def _location(series: Series, a: int, b: int, seed: int, columns: Sequence[int] | None = None) -> Interval:
    """Where the curve crosses half-way between sizes a and b, with its bootstrap interval;
    `columns`: the sizes (a to b among them) of every transition located on the same draws."""
    est = 2 ** _half_way(series.sizes, series.center(), a, b)
    if series.logs.shape[0] < 2 and not np.isfinite(series.run_se).any():
        return Interval.unknown(est, "one replicate without spread")
    draws = series.draws(seed, LOCATION_DRAWS, columns)
    locs = np.array([2 ** v for v in _half_ways(series.sizes, draws, a, b).tolist()])
    # the sizes tested resolve a location to half a step either side, whatever the noise
    half = 2 ** (float(np.median(np.diff(np.log2(series.sizes)))) / 2)
    return Interval(float(est), float(np.quantile(locs, 0.025)) / half, float(np.quantile(locs, 0.975)) * half,
                    stats.LEVEL, f"percentile bootstrap over {series.logs.shape[0]} replicates ({LOCATION_DRAWS} "
                                 "draws), widened by half a size step either side for the size resolution")


def _steps(series: Series) -> list[tuple[float, float, float]]:
    """(log ratio, se, dof) of each consecutive pair of sizes."""
    y = series.center()
    se, dof, _, _ = series.noise()
    return [(float(y[j + 1] - y[j]), float(math.hypot(se[j], se[j + 1])), float(min(dof[j], dof[j + 1])))
            for j in range(len(y) - 1)]


def _window(from_bytes: float, to_bytes: float, step: float) -> tuple[float, float]:
    tol = 2 ** max(1.0, TOLERANCE_STEPS * step)
    return from_bytes / tol, to_bytes * tol


def _split(run: list[int], sizes: np.ndarray, y: np.ndarray, se: np.ndarray, capacities: Sequence[Capacity],
           step: float) -> list[list[int]]:
    """Split a run of rising steps (step j: sizes[j] -> sizes[j + 1]) in two where it holds two
    rises, recursively: at its flattest step between two capacities at least two doublings apart
    (kept with the first rise as its tail, or with the second where it is the run's last step: on
    a coarse grid, sizes 4x to 8x apart, one size lies between the two caches), or else at a step
    that rises less than 3/4 as much as the steepest step on either side of it, beyond the noise
    (`_two_rises`; that step, the tail of the rise before it, kept with the first part). No step is
    dropped: each rise of the run is told in one part."""
    lo, hi = _window(sizes[run[0]], sizes[run[-1] + 1], step)
    # the smaller may sit up to the tolerance below the run, the larger must be inside it
    inside = sorted(c.size_bytes for c in capacities if lo <= c.size_bytes <= sizes[run[-1] + 1])
    for small, large in zip(inside, inside[1:]):
        if large < 4 * small:
            continue
        between = [j for j in run if sizes[j] >= small and sizes[j + 1] <= large]
        if not between:
            continue
        # the flattest step between them ends the first rise (its tail); where it is the run's
        # last step (a coarse grid: one size between the two caches) it begins the second
        cut = min(between, key=lambda j: y[j + 1] - y[j])
        left, right = [j for j in run if j <= cut], [j for j in run if j > cut]
        if not right:
            left, right = [j for j in run if j < cut], [j for j in run if j >= cut]
        if not left:
            continue
        return [part for part in (*_split(left, sizes, y, se, capacities, step),
                                  *_split(right, sizes, y, se, capacities, step))]
    cut = _two_rises(run, y, se)
    if cut is None:
        return [run]
    left, right = [j for j in run if j <= cut], [j for j in run if j > cut]
    return [part for side in (left, right) for part in _split(side, sizes, y, se, capacities, step)]


def _two_rises(run: list[int], y: np.ndarray, se: np.ndarray) -> int | None:
    """The step of a run at which one rise ends and the next begins, or None: the flattest inner
    step whose rise is less than FLATTER x the steepest step before it and the steepest after it,
    each difference of the two log steps beyond 1.96 standard errors (one-sided, 2.5 %). One
    cache's miss curve rises steepest first and then ever less (1 - (C/S)^p), so a step that
    rises again after a flatter one is a second cause."""
    d = {j: float(y[j + 1] - y[j]) for j in run}
    z = 1.96
    best = None
    for c in run[1:-1]:
        left = max((j for j in run if j < c), key=d.get)
        right = max((j for j in run if j > c), key=d.get)
        ok = True
        for j in (left, right):
            # the difference of two steps of a curve: their sizes' errors, the shared one twice
            sizes_of = [j, j + 1, c, c + 1]
            var = sum(float(se[i]) ** 2 * (2 if sizes_of.count(i) == 2 else 1) ** 2
                      for i in set(sizes_of) if np.isfinite(se[i]))
            ok &= d[c] < FLATTER * d[j] and d[j] - d[c] > z * math.sqrt(var)
        if ok and (best is None or d[c] < d[best]):
            best = c
    return best


def _explains(t: Transition, c: Capacity, step: float, share: int = 1) -> bool:
    """Whether capacity c can be the cause of transition t: its size lies in the transition's
    window, and the sizes at which a random chase is half-way out of a cache of exactly that size
    ([C, 2C]: C x 2^(1/p) for a miss rate 1 - (C/S)^p, p >= 1) reach the transition's location
    interval: its upper end at least C (a rise starting a step early, 2^-0.3 C, is still half-way
    past C), its lower end, for a rise a size step late, at most 2C one size step (at least a
    doubling) on. `share`: the ranks of a concurrent run, which may split a shared cache between
    them, so that one rank's rise out of it comes as early as C / share."""
    lo, hi = _window(t.from_size_bytes, t.to_size_bytes, step)
    if not lo <= c.size_bytes <= hi:
        return False
    loc = t.location_bytes
    low, high = (loc.low, loc.high) if np.isfinite(loc.low) and np.isfinite(loc.high) else (loc.estimate,) * 2
    tol = 2 ** max(1.0, TOLERANCE_STEPS * step)
    part = c.size_bytes / (share if c.shared_by > 1 else 1)
    return low / tol <= 2 * c.size_bytes and part <= high


def _attribute(transitions: list[Transition], capacities: Sequence[Capacity], step: float, share: int = 1) -> None:
    """One capacity per transition, one transition per capacity, nearest first, each pair one
    that `_explains` allows; a transition left without one stays unexplained. A rise that starts
    at memory-level latency (MEMORY_NS) is no cache's exit: the data already come from memory."""
    pairs = []
    largest = max((c.size_bytes for c in capacities), default=0)
    for i, t in enumerate(transitions):
        if t.latency_before_ns >= MEMORY_NS:
            continue
        for j, c in enumerate(capacities):
            if _explains(t, c, step, share):
                dist = abs(math.log2(t.location_bytes.estimate / math.sqrt(2)) - math.log2(c.size_bytes))
                pairs.append((dist, i, j))
    used_t, used_c = set(), set()
    for _, i, j in sorted(pairs):
        if i in used_t or j in used_c:
            continue
        used_t.add(i)
        used_c.add(j)
        transitions[i].kind, transitions[i].label = "cache", capacities[j].label
        transitions[i].capacity_bytes = capacities[j].size_bytes
        # a rise out of a cache below the last level that ends at memory's latency passed through
        # the larger caches without a plateau (a virtual machine's small share of the last level,
        # say): it is told as going on to memory, not as that cache's exit alone
        transitions[i].to_memory = transitions[i].latency_after_ns >= MEMORY_NS and capacities[j].size_bytes < largest


def _passed_over(t: Transition, transitions: Sequence[Transition], capacities: Sequence[Capacity],
                 step: float, share: int = 1, tested: tuple[int, int] = (0, 2 ** 62)) -> list[str]:
    """Why each cache whose size lies in an unexplained transition's window is not its cause
    (`tested`: the curve's smallest and largest size)."""
    out = []
    lo, hi = _window(t.from_size_bytes, t.to_size_bytes, step)
    for c in capacities:
        if not lo <= c.size_bytes <= hi:
            continue
        name = f"the {capacity_words(c.label, c.size_bytes)}"
        other = next((o for o in transitions if o.capacity_bytes == c.size_bytes), None)
        if other is None and not tested[0] <= c.size_bytes < tested[1]:
            out.append(f"{name} lies in its size window, but the sweep measured no size "
                       f"{'below' if c.size_bytes < tested[0] else 'above'} it, and a cache's exit needs a size "
                       "measured on either side of the cache")
        elif other is None and t.latency_before_ns >= MEMORY_NS:
            out.append(f"{name} that the topology reports cannot be its cause: latency is already "
                       f"{t.latency_before_ns:.0f} ns, memory's, where the rise starts, so the curve contradicts a "
                       "cache of that size serving this core")
        elif other is not None:
            out.append(f"{name} explains the rise from {size_words(other.from_size_bytes)} to "
                       f"{size_words(other.to_size_bytes)}")
        elif not _explains(t, c, step, share):
            out.append(f"{name} is in its size window, but a rise out of it would be half-way near "
                       f"{size_words(c.size_bytes)} to {size_words(2 * c.size_bytes)}, more than a size step "
                       "from where this one is")
    # the curve's last rise ending below a cache with no rise of its own: memory came first
    last = all(o.from_size_bytes < t.to_size_bytes for o in transitions)
    above = [c for c in capacities if c.size_bytes > hi and all(o.capacity_bytes != c.size_bytes for o in transitions)]
    if above and last:
        c = min(above, key=lambda c: c.size_bytes)
        out.append(f"it ends well below the {capacity_words(c.label, c.size_bytes)}, which shows no rise of its own: "
                   "a last-level cache only partly available to this core (a virtual machine's share) looks like this")
    return out


def _caveats(topology: Topology | None, series: dict, page_col: str) -> list[str]:
    out = []
    if topology is not None and topology.hypervisor:
        out.append(f"this is a {topology.hypervisor} virtual machine, whose cache and page sizes need not be "
                   "the host's")
    page = str(series.get(page_col, "")).lower()
    if page in BASE_PAGES or page in ("", "nan"):
        out.append(("4 KiB" if page in BASE_PAGES else "page size unknown, likely 4 KiB") + BASE_PAGE_CAVEAT)
    if _sharing(series) > 1:
        out.append("concurrent ranks share the L3 group and memory controllers, so each gets a part of them")
    return out


def latency_series(table: pd.DataFrame, series_keys: Sequence[str], replicate_keys: Sequence[str],
                   where: str = "latency table") -> list[Series]:
    """The series of a tidy latency table, as `latency_levels` takes them (its values checked)."""
    stats.check_values(table, where, LATENCY)
    return stats.series_table(table, series_keys, replicate_keys, LATENCY)


def refusals(all_series: Sequence[Series], topology: Topology | None) -> list[str | None]:
    """Per series, why the plausibility gate refuses it as a latency curve (None: measured)."""
    capacities = usable_capacities(topology)
    return [plausibility(s.sizes, s.values(), capacities) for s in all_series]


def latency_levels(table: pd.DataFrame, topology: Topology | None, series_keys: Sequence[str],
                   replicate_keys: Sequence[str], page_col: str = "page_size", where: str = "latency table",
                   q: float = stats.FDR, all_series: list[Series] | None = None) -> Levels:
    """Plateaus, transitions and their causes for each series of a tidy latency table
    (`all_series`: its series, when `latency_series` has already built them)."""
    if all_series is None:
        all_series = latency_series(table, series_keys, replicate_keys, where)
    capacities = usable_capacities(topology)
    pairs = _page_pairs(all_series, page_col)
    # Every curve is segmented over all its sizes, a 4 KiB curve paired with a huge-page one too:
    # its rise out of the last cache to memory is a story of its own (the TLB's share of it is
    # told by the pair's ratio, `tlb_partings`), never dropped.
    curves_in: list[tuple[Series, str | None]] = list(zip(all_series, refusals(all_series, topology)))
    spreads = _run_spreads(table, series_keys)
    unstable = {id(s): _unstable(s, spreads, series_keys) for s, reason in curves_in if reason is None}
    stable = {id(s): _without_sizes(s, [size for size, _ in unstable[id(s)]]) for s, reason in curves_in
              if reason is None}
    # one BH family: every step of every measured curve that is segmented
    tested = [(s, j, st) for s, reason in curves_in if reason is None
              for j, st in enumerate(_steps(stable[id(s)]))]
    steps = np.array([st for _, _, st in tested], float).reshape(-1, 3)       # (log ratio, se, dof) each
    pvals = [float(p) for p in stats.rise_pvalue(steps[:, 0], steps[:, 1], steps[:, 2], STEP_FLOOR)]
    rejected = stats.benjamini_hochberg(pvals, q)
    rising: dict[int, dict[int, float]] = {}
    for (s, j, _), p, r in zip(tested, pvals, rejected):
        if r:
            rising.setdefault(id(s), {})[j] = p
    curves = []
    for n, (s, reason) in enumerate(curves_in):
        _, _, _, rule = s.noise()
        base = dict(series=s.key, sizes=s.sizes.tolist(), latency_ns=s.values().tolist(), noise_rule=rule)
        if reason is not None:
            curves.append(CurveLevels(**base, measured=False, gate_reason=reason, transitions=[], unseen=[],
                                      untested=[]))
            continue
        step = float(np.median(np.diff(np.log2(s.sizes)))) if len(s.sizes) > 1 else 1.0
        transitions = _segment(stable[id(s)], rising.get(id(s), {}), capacities, step, seed=stats.SEED + n)
        share = _sharing(s.key)
        # a cache explains a step only where the curve measured a size on either side of it
        sizes = stable[id(s)].sizes
        _attribute(transitions, [c for c in capacities if sizes[0] <= c.size_bytes < sizes[-1]], step, share)
        for t in transitions:
            if t.kind == "unexplained":
                t.caveats = (_passed_over(t, transitions, capacities, step, share, (int(sizes[0]), int(sizes[-1])))
                             + _caveats(topology, s.key, page_col))
        lo, hi = s.sizes.min(), s.sizes.max()
        used = {t.capacity_bytes for t in transitions}
        curves.append(CurveLevels(
            **base, measured=True, gate_reason=None, transitions=transitions,
            unseen=[c for c in capacities if 2 * lo <= c.size_bytes <= hi / 2 and c.size_bytes not in used],
            untested=[c for c in capacities if (c.size_bytes < 2 * lo or c.size_bytes > hi / 2)
                      and c.size_bytes not in used],
            unstable=unstable[id(s)],
            rising=[(int(stable[id(s)].sizes[j]), int(stable[id(s)].sizes[j + 1])) for j in sorted(rising.get(id(s), {}))]))
    tlb = tlb_partings(pairs, page_col, q)
    _tlb_causes(curves, all_series, pairs, tlb, page_col)
    return Levels(curves, tlb, capacities)


BASE_PAGE_CAVEAT = " pages: a TLB-reach rise looks like this; a huge-page run at these sizes tells the two apart"


def _tlb_causes(curves: list[CurveLevels], all_series: list[Series], pairs: list[tuple[Series, Series]],
                tlb: list[TlbParting], page_col: str) -> None:
    """A 4 KiB curve's unexplained rise where its huge-page twin measured the same sizes: the
    TLB's reach where the twin does not rise there and 4 KiB pages are slower beyond the floor and
    the noise at its upper end (`tlb_partings`); not the TLB where the twin rises alike. Either way
    the base-page caveat ("a huge-page run tells the two apart") gives way to what the twin shows."""
    index = {id(s): n for n, s in enumerate(all_series)}
    for (small, huge), parting in zip(pairs, tlb):
        curve, twin = curves[index[id(small)]], curves[index[id(huge)]]
        if not (curve.measured and twin.measured):
            continue
        significant = {r["size_bytes"] for r in parting.per_size if r["significant"]}
        for t in curve.transitions:
            if t.kind != "unexplained" or not (twin.sizes[0] <= t.from_size_bytes and t.to_size_bytes <= twin.sizes[-1]):
                continue
            alike = any(o.from_size_bytes < t.to_size_bytes and o.to_size_bytes > t.from_size_bytes
                        for o in twin.transitions)
            kept = [c for c in t.caveats if not c.endswith(BASE_PAGE_CAVEAT)]
            if alike:
                t.caveats = kept + [f"with {page_words(parting.huge_page)} latency rises alike at these sizes, so "
                                    "it is not the TLB's reach"]
            elif t.to_size_bytes in significant:
                t.kind, t.caveats = "tlb", [f"with {page_words(parting.huge_page)} latency does not rise at these sizes, "
                                            "and 4 KiB pages are slower there beyond the noise and the floor (under TLB)"]
            else:
                t.caveats = kept + [f"with {page_words(parting.huge_page)} latency does not rise at these sizes"]


def _sharing(key: dict) -> int:
    """The ranks that may share one cache instance in a series: its rank count in concurrent
    mode, else 1 (serial ranks run alone)."""
    if str(key.get("mode", "")) != "concurrent":
        return 1
    try:
        return max(1, int(str(key.get("ranks", 1)).split()[0]))
    except ValueError:
        return 1


def _run_spreads(table: pd.DataFrame, series_keys: Sequence[str]) -> dict[tuple, pd.Series]:
    """Per series (its keys' values as text), the median over its runs of (max - min) / median at
    each size: how far one run's own samples disagree. Empty without the min and max columns."""
    if LATENCY.low not in table or LATENCY.high not in table:
        return {}
    keys = [k for k in series_keys if k in table]
    low = pd.to_numeric(table[LATENCY.low], errors="coerce")
    high = pd.to_numeric(table[LATENCY.high], errors="coerce")
    frame = pd.DataFrame({k: stats.key_column(table[k]).astype(str) for k in keys})
    frame[LATENCY.axis] = table[LATENCY.axis].to_numpy()
    frame["_spread"] = ((high - low) / pd.to_numeric(table[LATENCY.value], errors="coerce")).to_numpy()
    if not keys:
        return {(): frame.groupby(LATENCY.axis)["_spread"].median()}
    median = frame.groupby(keys + [LATENCY.axis], sort=False)["_spread"].median()
    levels_of_key = list(range(len(keys)))
    return {(key if isinstance(key, tuple) else (key,)): part.droplevel(levels_of_key)
            for key, part in median.groupby(level=levels_of_key, sort=False)}


def _unstable(s: Series, spreads: dict[tuple, pd.Series], series_keys: Sequence[str]) -> list[tuple[int, float]]:
    """(size, spread) of each unstable size of a curve (see UNSTABLE_SPREAD)."""
    per_size = spreads.get(tuple(str(s.key[k]) for k in series_keys if k in s.key))
    if per_size is None:
        return []
    values = per_size.reindex(s.sizes).to_numpy(float)
    if not np.isfinite(values).any():
        return []
    limit = max(UNSTABLE_SPREAD, UNSTABLE_FACTOR * float(np.nanmedian(values)))
    return [(int(size), float(v)) for size, v in zip(s.sizes, values) if np.isfinite(v) and v > limit]


def unstable_indices(table: pd.DataFrame, series_keys: Sequence[str], curves: Sequence[Series]) -> list[list[int]]:
    """Per curve of `table` (its series by `series_keys`), the indices of its unstable sizes."""
    spreads = _run_spreads(table, series_keys)
    out = []
    for s in curves:
        unstable = {size for size, _ in _unstable(s, spreads, series_keys)}
        out.append([j for j, size in enumerate(s.sizes) if int(size) in unstable])
    return out


def _without_sizes(s: Series, sizes: Sequence[int]) -> Series:
    """The curve without the given sizes (unstable ones), when at least two sizes remain."""
    keep = ~np.isin(s.sizes, np.asarray(sizes, dtype=np.int64))
    if keep.all() or keep.sum() < 2:
        return s
    return Series(s.key, s.sizes[keep], s.logs[:, keep], s.run_se[:, keep], s.replicates)


def _segment(s: Series, rising: dict[int, float], capacities: Sequence[Capacity], step: float,
             seed: int) -> list[Transition]:
    y = s.center()
    se, dof, _, _ = s.noise()
    out = []
    runs: list[list[int]] = []
    for j in sorted(rising):
        if runs and runs[-1][-1] == j - 1:
            runs[-1].append(j)
        else:
            runs.append([j])
    kept = [run for r in runs for run in _split(r, s.sizes, y, se, capacities, step)
            if not float(y[run[-1] + 1] - y[run[0]]) < math.log1p(TRANSITION_FLOOR)]
    # the bootstrap takes its medians only at the sizes the transitions span, on one set of draws
    columns = sorted({j for run in kept for j in range(run[0], run[-1] + 2)})
    for run in kept:
        a, b = run[0], run[-1] + 1
        d = float(y[b] - y[a])
        ratio = stats.t_interval(d, float(math.hypot(se[a], se[b])), float(min(dof[a], dof[b])))
        out.append(Transition(
            from_size_bytes=int(s.sizes[a]), to_size_bytes=int(s.sizes[b]),
            location_bytes=_location(s, a, b, seed, columns), ratio=ratio,
            latency_before_ns=float(math.exp(y[a])), latency_after_ns=float(math.exp(y[b])),
            p_value=max(rising[j] for j in run), kind="unexplained"))
    return out


# ---------------------------------------------------------------- TLB

def _page_pairs(series: list[Series], page_col: str) -> list[tuple[Series, Series]]:
    """(4 KiB series, huge-page series) pairs equal in every other key and in their sizes."""
    out = []
    for s in series:
        if str(s.key.get(page_col, "")).lower() not in BASE_PAGES:
            continue
        others = _without_pages(s.key, page_col)
        for h in series:
            page = str(h.key.get(page_col, "")).lower()
            if page in BASE_PAGES or page in ("", "nan"):
                continue
            if _without_pages(h.key, page_col) == others:
                out.append((s, h))
                break
    return out


def _without_pages(key: dict, page_col: str) -> dict:
    return {k: v for k, v in key.items() if k not in (page_col, analysis.GRID_PAGES)}


def _ratio_series(small: Series, huge: Series) -> Series:
    """Replicates of log(4k) - log(huge) at the shared sizes, replicates matched in order."""
    sizes = np.intersect1d(small.sizes, huge.sizes)
    a = small.logs[:, np.searchsorted(small.sizes, sizes)]
    b = huge.logs[:, np.searchsorted(huge.sizes, sizes)]
    ra = small.run_se[:, np.searchsorted(small.sizes, sizes)]
    rb = huge.run_se[:, np.searchsorted(huge.sizes, sizes)]
    k = min(len(a), len(b))
    return Series({}, sizes, a[:k] - b[:k], np.hypot(ra[:k], rb[:k]), list(range(k)))


def tlb_partings(pairs: list[tuple[Series, Series]], page_col: str, q: float = stats.FDR) -> list[TlbParting]:
    ratios = [_ratio_series(s, h) for s, h in pairs]
    tests = []
    for r in ratios:
        se, dof, _, _ = r.noise()
        y = r.center()
        tests.append([stats.rise_pvalue(float(y[j]), float(se[j]), float(dof[j]), TLB_FLOOR)
                      for j in range(len(y))])
    flat = [p for t in tests for p in t]
    rej = stats.benjamini_hochberg(flat, q)
    out, pos = [], 0
    for (s, h), r, t in zip(pairs, ratios, tests):
        flags = list(rej[pos:pos + len(t)])
        pos += len(t)
        y = r.center()
        se, dof, _, _ = r.noise()
        lows = np.array([stats.t_interval(float(y[j]), float(se[j]), float(dof[j])).low for j in range(len(y))])
        significant = np.array(flags, bool) & np.isfinite(lows) & (lows > 1)
        peak = int(np.argmax(np.where(significant, y, -np.inf))) if significant.any() else int(np.argmax(y))
        onset = stats.parting_onset(flags, y)
        onset_iv = location = None
        if onset is not None:
            def retest(d: np.ndarray) -> np.ndarray:
                return stats.benjamini_hochberg(stats.rise_pvalue(d, se, dof, TLB_FLOOR), q)
            onset_iv = _on_grid(stats.onset_interval(r, onset, retest, rule=stats.parting_onset, centre=True),
                                r.sizes, onset)
            # half-way from the size before the onset on: a ratio off at a smaller size (an
            # unstable one, below the floor's sustained run) does not place the TLB's rise
            start = max(onset - 1, 0)
            # ... up to the end of the parting's first run: a rise again at the largest sizes,
            # after a dip under the floor, is the page walks of DRAM sizes, not the reach
            end = onset
            while end + 1 < len(flags) and flags[end + 1]:
                end += 1
            stop = end + 1
            excess = np.exp(y[start:stop]) - 1
            loc = 2 ** _crossing(r.sizes[start:stop], excess, excess.max() / 2)
            draws = r.draws(stats.SEED, LOCATION_DRAWS)
            grown = np.exp(draws[:, start:stop])
            locs = [2 ** v for v in _crossings(r.sizes[start:stop], grown - 1,
                                               (grown.max(axis=1) - 1) / 2).tolist()]
            location = Interval(float(loc), float(np.quantile(locs, 0.025)), float(np.quantile(locs, 0.975)),
                                stats.LEVEL, f"percentile bootstrap over {len(r.replicates)} replicate pairs")
            if location.high <= location.low:
                # every draw crossed at one grid size: the grid, not the data, bounds it
                location = _on_grid(location, r.sizes, int(np.argmin(np.abs(np.log2(r.sizes / loc)))))
        out.append(TlbParting(
            series=_without_pages(s.key, page_col), huge_page=str(h.key.get(page_col)),
            onset_bytes=int(r.sizes[onset]) if onset is not None else None, onset=onset_iv,
            location_bytes=location, max_ratio=stats.t_interval(float(y[peak]), float(se[peak]), float(dof[peak])),
            max_size_bytes=int(r.sizes[peak]),
            per_size=[{"size_bytes": int(sz), "ratio_4k_to_huge": float(math.exp(v)), "significant": bool(f)}
                      for sz, v, f in zip(r.sizes, y, flags)],
            peak_significant=bool(significant[peak])))
    return out


def _on_grid(onset: Interval, sizes: np.ndarray, at: int) -> Interval:
    """An onset found at sizes[at] lies somewhere between the sizes measured around it: its
    interval spans at least one grid step either side (the neighbouring sizes, or the nearest
    step's ratio at an end of the grid), never zero width on a coarse grid."""
    if len(sizes) < 2:
        return onset
    below = float(sizes[at - 1]) if at > 0 else float(sizes[0]) ** 2 / float(sizes[1])
    above = float(sizes[at + 1]) if at + 1 < len(sizes) else float(sizes[-1]) ** 2 / float(sizes[-2])
    if not np.isfinite(onset.low):
        return onset
    low, high = min(onset.low, below), max(onset.high, above)
    if (low, high) == (onset.low, onset.high):
        return onset
    return Interval(onset.estimate, low, high, onset.level,
                    onset.method + "; widened to one size step either side of the onset (the grid's resolution)")
