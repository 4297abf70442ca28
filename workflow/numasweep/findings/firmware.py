"""The measured node-to-node matrix set beside what the firmware claims.

Absolute firmware numbers and measured ones need not share a definition (HMAT's latency may be
the memory's, ours is a load's, through the caches' miss path; HMAT's bandwidth is a link's,
ours a STREAM kernel's), so what is compared is each memory node relative to the CPU node's
local one: measured ratio `value(c, m) / value(c, c)` with its Welch t interval over the units
measured (ranks or jobs, `statistics.stats.welch`), against the firmware's ratio for the same
pair: HMAT's read latency or read bandwidth (access class 1, CPU initiators, where given, else
class 0), and for latency the SLIT distance over 10.

A pair disagrees when measured over claimed lies beyond FLOOR (10 %) either way with the
excess tested one-sided against the pair's noise, Benjamini-Hochberg over every pair of one
analysis (`stats.excess_pvalue`). A pair with one value a side (one rank or job per cell) has
no interval and is not tested: it is said to be untested, with how far apart the two ratios lie,
never to agree. A tested pair that does not disagree agrees only when its whole interval lies
within FLOOR of the claim; an interval reaching past that (a few noisy runs) leaves it undecided,
said so, never "agrees". The node ordering agrees when no two memory nodes that the
measurement tells apart (their own Welch interval excludes 1) are ranked the other way by the
firmware. Memory-only nodes (CXL-like) are said in words against the CPU node's local memory:
one finding per benchmark here, said as one sentence of latency and bandwidth in the report
(`far_memory`).
Where the firmware gives nothing to compare, one finding says so in one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from numasweep.core.firmware import NOT_PROVIDED
from numasweep.core.registry import Claim
from numasweep.core.topology import Topology
from numasweep.core.units import unit_kind
from numasweep.findings.analysis import Finding, interval_numbers
from numasweep.statistics import stats
from numasweep.statistics.stats import Interval

FLOOR = 0.10
# The HMAT field of a measured quantity (`Bench.tables.matrix_of`), by the kind of unit its name says
# (`units.unit_kind`): a time is read latency, beside the SLIT distance; a rate read bandwidth.
# Only ratios to a local cell are compared, so the units need not match. The quantity's first word
# names it in the text.
HMAT_FIELDS = {"time": "read_latency_ns", "rate": "read_bandwidth_mb_s"}


def _word(quantity: str) -> str:
    return quantity.split("_")[0]


@dataclass
class Pair:
    source: str  # "HMAT access1", "HMAT access0", "SLIT"
    cpu: int
    mem: int
    local: int  # the node whose local cell (local, local) the ratio is to
    claimed: float  # the firmware's ratio to the local cell
    measured: Interval  # measured ratio to the local cell
    se: float
    dof: float
    disagrees: bool = False

    @property
    def tested(self) -> bool:
        """False with one value a side: no interval, so neither agreement nor disagreement."""
        return math.isfinite(self.se)

    def apart(self) -> bool:
        """The measured ratio lies beyond FLOOR of the claimed one, either way."""
        return abs(math.log(self.measured.estimate / self.claimed)) > math.log1p(FLOOR)

    @property
    def agrees(self) -> bool:
        """Tested, not disagreeing, and the whole interval within FLOOR of the claim."""
        band = math.log1p(FLOOR)
        return (self.tested and not self.disagrees
                and abs(math.log(self.measured.low / self.claimed)) <= band
                and abs(math.log(self.measured.high / self.claimed)) <= band)

    def verdict(self) -> str:
        factor = max(self.measured.estimate / self.claimed, self.claimed / self.measured.estimate)
        if not self.tested:
            return (f"untested, {factor:.2f}x apart" if self.apart()
                    else f"untested, within {FLOOR:.0%} of each other")
        return ("disagrees" if self.disagrees else "agrees" if self.agrees
                else f"undecided, its interval reaching past {FLOOR:.0%} of the firmware's ratio")

    def words(self) -> str:
        verdict = self.verdict()
        return (f"CPUs of node {self.cpu} to memory of node {self.mem}: {self.source} says {self.claimed:.2f}x, "
                f"measured {self.measured.text('{:.2f}x')}, {verdict}")


def _claim(topo: Topology, source: str, hmat_field: str, cpu: int, mem: int) -> float | None:
    if source == "SLIT":
        return topo.distance(cpu, mem)
    found = topo.firmware.pairs(int(source[-1])).get((cpu, mem))
    return getattr(found, hmat_field) if found else None


def _pairs(samples: pd.DataFrame, topo: Topology, quantity: str) -> list[Pair]:
    """Each measured remote cell against a local one: the CPU node's own, else the memory node's
    (a column measured from every CPU node towards one memory node)."""
    hmat_field = HMAT_FIELDS[unit_kind(quantity)]
    cells = {(int(c), int(m)): g["value"].to_numpy(float) for (c, m), g in samples.groupby(["cpu_node", "memory_node"])}
    sources = ["HMAT access1", "HMAT access0"] + (["SLIT"] if unit_kind(quantity) == "time" and topo.distances else [])
    pairs = []
    for (cpu, mem), values in sorted(cells.items()):
        local = cpu if (cpu, cpu) in cells else mem if (mem, mem) in cells else None
        if cpu == mem or local is None:
            continue
        hmat_done = False
        for source in sources:
            if hmat_done and source.startswith("HMAT"):
                continue
            there, here = _claim(topo, source, hmat_field, cpu, mem), _claim(topo, source, hmat_field, local, local)
            if not (there and here):
                continue
            hmat_done = hmat_done or source.startswith("HMAT")
            ratio, se, dof = stats.welch(values, cells[(local, local)], "Welch t interval over units on the log ratio")
            pairs.append(Pair(source, cpu, mem, local, there / here, ratio, se, dof))
    return pairs


def _ordering(samples: pd.DataFrame, cpu: int, claimed: dict[int, float]) -> tuple[list[str], int]:
    """Pairs of memory nodes the measurement tells apart but the firmware ranks the other way, and
    how many pairs of nodes have an interval at all (none with one value a node)."""
    rows = samples[samples["cpu_node"] == cpu]
    by_mem = {int(m): g["value"].to_numpy(float) for m, g in rows.groupby("memory_node")}
    wrong, tested = [], 0
    nodes = sorted(n for n in claimed if n in by_mem)
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            ratio = stats.welch(by_mem[a], by_mem[b])[0]
            tested += bool(np.isfinite(ratio.low))
            if not (np.isfinite(ratio.low) and (ratio.low > 1 or ratio.high < 1)) or claimed[a] == claimed[b]:
                continue
            if (ratio.estimate > 1) != (claimed[a] > claimed[b]):
                wrong.append(f"the firmware puts node {a} {'above' if claimed[a] > claimed[b] else 'below'} "
                             f"node {b}, measured {ratio.text('{:.2f}x')} of it")
    return wrong, tested


def firmware_findings(samples: pd.DataFrame, topo: Topology | None, quantity: str, bench: str) -> list[Finding]:
    """The measured matrix beside HMAT and SLIT, one finding per source and CPU node; one line
    when the firmware gives nothing to set it beside."""
    if topo is None or not len(samples):
        return []
    word = _word(quantity)
    pairs = _pairs(samples, topo, quantity)
    p = [stats.excess_pvalue(math.log(x.measured.estimate / x.claimed), x.se, x.dof, FLOOR) for x in pairs]
    for pair, rejected in zip(pairs, stats.benjamini_hochberg(p)):
        pair.disagrees = bool(rejected)
    found = []
    groups: dict[tuple[str, int], list[Pair]] = {}
    for pair in pairs:
        groups.setdefault((pair.source, pair.local), []).append(pair)
    for (source, local), group in groups.items():
        row = [x for x in group if x.cpu == local]
        claimed = {x.mem: x.claimed for x in row} | {local: 1.0}
        wrong, ordered = _ordering(samples, local, claimed) if len(row) > 1 else ([], 0)
        off = [x for x in group if x.disagrees]
        untested = [x for x in group if not x.tested]
        agree = [x for x in group if x.agrees]
        undecided = [x for x in group if x.tested and not x.disagrees and not x.agrees]
        said = ([f"{len(off)} of {len(group)} pair(s) disagree beyond {FLOOR:.0%}"] if off else []) + (
            [f"every pair agrees within {FLOOR:.0%}" if len(agree) == len(group)
             else f"{len(agree)} of {len(group)} pair(s) agree within {FLOOR:.0%}"] if agree else []) + (
            [f"{len(undecided)} of {len(group)} pair(s) undecided, the interval reaching past {FLOOR:.0%} of the "
             f"firmware's ratio (more ranks or repetitions narrow it)"] if undecided else [])
        verdict = "; ".join(said) if said else "no pair tested"
        if untested:
            far = sum(x.apart() for x in untested)
            verdict += (f"; {len(untested)} of {len(group)} pair(s) untested, with one value a side and no "
                        f"interval (more ranks or repetitions give one)"
                        + (f", {far} of them more than {FLOOR:.0%} apart from the firmware's ratio" if far else ""))
        order = ("" if len(row) < 2 else "; the node ordering untested" if not ordered
                 else "; the node ordering agrees" if not wrong
                 else "; the node ordering disagrees: " + "; ".join(wrong))
        found.append(Finding(
            id="firmware_comparison", bench=bench,
            title=f"Measured {word} against {source}, relative to node {local}'s local {word}",
            summary=(f"{word[0].upper() + word[1:]} relative to node {local}'s local {word}: "
                     + "; ".join(x.words() for x in group) + f". {verdict[0].upper() + verdict[1:]}{order}."
                     + (" The firmware's numbers do not describe what this machine delivers there."
                        if off or wrong else "")),
            numbers={"source": source, "local_node": local, "quantity": quantity, "floor": FLOOR,
                     "claim": bool(off or wrong), "disagreements": len(off), "pairs": len(group),
                     "untested": len(untested), "agree": len(agree), "undecided": len(undecided),
                     "ordering_agrees": None if len(row) < 2 or not ordered else not wrong},
            evidence=[{"cpu_node": x.cpu, "memory_node": x.mem, "claimed_ratio": round(x.claimed, 4),
                       "disagrees": x.disagrees, "tested": x.tested, "verdict": x.verdict().split(",")[0],
                       **interval_numbers("measured_ratio", x.measured)} for x in group],
        ))
    hmat = any(x.source.startswith("HMAT") for x in pairs)
    if not hmat:
        have = "" if topo.firmware.access else f"HMAT: {NOT_PROVIDED}"
        why = have or f"HMAT gives no {word} for the CPU nodes measured against their local memory"
        found.append(Finding(
            id="firmware_not_provided", bench=bench, title=f"Firmware {word} not provided",
            summary=f"Measured {word} against the firmware: {why}, so the measurement stands alone"
                    + (" beside the SLIT distances." if any(x.source == "SLIT" for x in pairs) else "."),
            numbers={"quantity": quantity, "claim": False},
        ))
    return found + tier_findings(samples, topo, quantity, bench)


# what the kinds written here claim, for the audit of every report (`findings.audit`)
CLAIMS = {
    "firmware_comparison": Claim(nothing="a verdict per node pair, each measured ratio with its interval in its table"),
    "firmware_not_provided": Claim(nothing="says which firmware table the machine does not provide"),
    "memory_tier": Claim(states=("ratio",)),
}


def _far_memory_sentence(node: int, tier: int | None, cpu: int, ratios: list[tuple[Interval, str]]) -> str:
    """"Far memory, node 3 (memory tier 22, no CPUs), from node 0's CPUs: 1.90x (...) the local
    latency and 0.45x (...) the local bandwidth." """
    tier_text = f"memory tier {tier}" if tier is not None else f"memory tier {NOT_PROVIDED}"
    said = " and ".join(f"{ratio.text('{:.2f}x')} the local {word}" for ratio, word in ratios)
    return f"Far memory, node {node} ({tier_text}, no CPUs), from node {cpu}'s CPUs: {said}."


def tier_findings(samples: pd.DataFrame, topo: Topology, quantity: str, bench: str) -> list[Finding]:
    """Each memory-only node against the local memory of the CPU nodes that measured it, in words."""
    word = _word(quantity)
    found = []
    for node in topo.memory_only_nodes():
        for cpu, rows in samples[samples["memory_node"] == node].groupby("cpu_node"):
            local = samples[(samples["cpu_node"] == cpu) & (samples["memory_node"] == cpu)]["value"]
            if local.empty:
                continue
            ratio = stats.welch(rows["value"].to_numpy(float), local.to_numpy(float))[0]
            tier = topo.firmware.tier_of(node)
            found.append(Finding(
                id="memory_tier", bench=bench,
                title=f"Memory-only node {node} from node {cpu}'s CPUs ({word})",
                summary=_far_memory_sentence(node, tier, int(cpu), [(ratio, word)]),
                numbers={"memory_node": node, "cpu_node": int(cpu), "tier": tier, "quantity": quantity,
                         "claim": False, **interval_numbers("ratio", ratio)},
            ))
    return found


def far_memory(findings: list[dict]) -> list[dict]:
    """The findings with each memory-only node's latency and bandwidth findings seen from one CPU
    node (`memory_tier`, one per benchmark) said as one finding, in one sentence, in the place of
    the first: "Far memory, node 3 (...), from node 0's CPUs: 1.90x (...) the local latency and 0.45x (...) the
    local bandwidth." A node measured for one quantity keeps its finding as it is."""
    def key(f: dict) -> tuple:
        return f["numbers"]["memory_node"], f["numbers"]["cpu_node"]

    tiers: dict[tuple, list[dict]] = {}
    for f in findings:
        if f.get("id") == "memory_tier":
            tiers.setdefault(key(f), []).append(f)
    out = []
    for f in findings:
        group = tiers.get(key(f)) if f.get("id") == "memory_tier" else None
        if group is None or len(group) == 1:
            out.append(f)
        elif f is group[0]:
            kinds = [*HMAT_FIELDS, None]
            order = sorted(group, key=lambda g: kinds.index(unit_kind(g["numbers"]["quantity"])))
            ratios = [(_interval(g["numbers"], "ratio"), _word(g["numbers"]["quantity"])) for g in order]
            node, cpu = key(f)
            out.append({**f, "bench": ", ".join(g["bench"] for g in order),
                        "title": f"Memory-only node {node} from node {cpu}'s CPUs",
                        "summary": _far_memory_sentence(node, f["numbers"]["tier"], cpu, ratios),
                        "numbers": {"memory_node": node, "cpu_node": cpu, "tier": f["numbers"]["tier"],
                                    "quantity": [g["numbers"]["quantity"] for g in order], "claim": False,
                                    **{f"{_word(g['numbers']['quantity'])}_{k}": g["numbers"].get(k)
                                       for g in order for k in ("ratio", "ratio_low", "ratio_high", "ratio_method")}}})
    return out


def _interval(numbers: dict, name: str) -> Interval:
    """An interval back from its numbers (`interval_numbers`); a missing bound as NaN."""
    def value(key: str) -> float:
        return math.nan if numbers.get(key) is None else float(numbers[key])
    return Interval(value(name), value(f"{name}_low"), value(f"{name}_high"), stats.LEVEL,
                    str(numbers.get(f"{name}_method") or ""))
