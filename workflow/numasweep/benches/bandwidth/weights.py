"""Weighted-interleave weights recommended from the measured bandwidth.

Weighted interleave puts `w_n` pages on node n for every `sum(w)` pages. A stream over such a
buffer finishes when its slowest share does: node n's share takes `w_n / bw_n`, so the whole
runs at the combined bandwidth of the nodes only when every share takes as long, that is when
`w_n` is proportional to `bw_n`, the bandwidth node n delivers to the CPUs that run the program.

The rule, on the measured bandwidth matrix (`numasweep.results.matrices`), per CPU node with two
or more memory nodes measured: `w_n = round(CAP * bw_n / max bw)`, at least 1 and at most CAP,
then divided by their greatest common divisor. CAP = 8 keeps the weights small (a cycle of at
most 8 pages per node, as the kernel's own automatic weights stay small) while resolving
bandwidth ratios to within 1/16 of the fastest node's. The kernel keeps one weight per node for
the whole machine, so where CPU nodes' recommendations differ, each is stated for its node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from numasweep.benches.bandwidth.figures import bandwidth_samples
from numasweep.core import firmware
from numasweep.core.topology import Topology
from numasweep.core.units import count_words, parse_page_fractions
from numasweep.findings.analysis import Finding
from numasweep.planning.placement import weights_set
from numasweep.results import matrices

CAP = 8


def recommend(bandwidth: dict[int, float], cap: int = CAP) -> dict[int, int]:
    """node -> weight for the nodes' bandwidth as one CPU node sees it (the module's rule)."""
    top = max(bandwidth.values())
    raw = {n: max(1, min(cap, round(cap * bw / top))) for n, bw in sorted(bandwidth.items())}
    divisor = math.gcd(*raw.values())
    return {n: w // divisor for n, w in raw.items()}


@dataclass(frozen=True)
class Recommendation:
    cpu_node: int
    bandwidth_mb_s: dict[int, float]
    weights: dict[int, int]

    def nodes(self) -> str:
        return ",".join(str(n) for n in self.weights)

    def memory_spec(self) -> str:
        """The numasweep memory spec that measures these weights."""
        return f"weighted:{self.nodes()}@{','.join(str(w) for w in self.weights.values())}"

    def numactl(self, program: str = "PROGRAM") -> str:
        """How a program runs under them once they are set (numactl 2.0.19 or later)."""
        return f"numactl --cpunodebind={self.cpu_node} --weighted-interleave={self.nodes()} {program}"

    def sysfs_writes(self) -> list[str]:
        return firmware.weight_writes(self.weights)


def recommendations(bandwidth: pd.DataFrame | None) -> list[Recommendation]:
    """One per CPU node of the bandwidth matrix (MB/s) with two or more memory nodes measured."""
    if bandwidth is None:
        return []
    by_cpu: dict[int, dict[int, float]] = {}
    for (cpu, mem), value in matrices.cells(bandwidth).items():
        by_cpu.setdefault(cpu, {})[mem] = value
    return [Recommendation(cpu, seen, recommend(seen)) for cpu, seen in sorted(by_cpu.items()) if len(seen) > 1]


def _listed(weights: dict[int, int]) -> str:
    return ", ".join(f"node {n}: {w}" for n, w in weights.items())


def weights_findings(bandwidth: pd.DataFrame | None, topology: Topology | None, bench: str,
                     runs: dict[tuple[int, int], int] | None = None) -> list[Finding]:
    """The recommended weights per CPU node, with the lines that set and use them, beside the
    kernel's current weights where the topology recorded them. `runs`: the jobs behind each cell
    (CPU node, memory node); a CPU node with a cell of one job gets no weights, only what would
    decide them: one run leaves the noise unknown, and the nodes' order with it."""
    fw = topology.firmware if topology else firmware.Firmware()
    found = []
    recs = recommendations(bandwidth)
    for rec in recs:
        seen = ", ".join(f"node {n} {bw / 1000:.1f} GB/s" for n, bw in sorted(rec.bandwidth_mb_s.items()))
        once = [n for n in rec.weights if runs is not None and runs.get((rec.cpu_node, n), 0) < MIN_RUNS]
        if once:
            found.append(Finding(
                id="recommended_weights", bench=bench,
                title=f"Weighted-interleave weights for node {rec.cpu_node}'s CPUs: not recommended",
                summary=(f"Measured from node {rec.cpu_node}'s CPUs: {seen}, "
                         + ("one run each" if len(once) == len(rec.weights) else
                            f"one run of node{'s' if len(once) > 1 else ''} {', '.join(map(str, once))}")
                         + ": the noise is unknown, "
                         f"and with it whether the nodes' bandwidth differ as measured, so no weights are "
                         f"recommended. Measure each node alone at least {MIN_RUNS} times (config `repetitions`, or "
                         f"`repeat_until`) and the report recommends them."),
                numbers={"cpu_node": rec.cpu_node, "recommended": False, "weights": None, "single_run_nodes": once,
                         "claim": False},
                evidence=[{"memory_node": n, "bandwidth_mb_s": round(bw, 1),
                           "runs": runs.get((rec.cpu_node, n), 0)} for n, bw in sorted(rec.bandwidth_mb_s.items())]))
            continue
        # the kernel keeps one weight per node for the whole machine: where another CPU node wants
        # other weights over the same nodes, no one vector serves both, and these are this node's
        others = [r for r in recs if r.cpu_node != rec.cpu_node and set(r.weights) == set(rec.weights)
                  and r.weights != rec.weights]
        per_socket = (" " + " ".join(f"Node {r.cpu_node}'s CPUs are recommended {_listed(r.weights)}." for r in others)
                      + f" The kernel keeps one weight per node for the whole machine, so no one vector serves "
                      f"{'both' if len(others) == 1 else 'all'}: these are the weights for programs on node "
                      f"{rec.cpu_node}'s CPUs (verify each node's from its own CPUs, docs/firmware.md)."
                      if others else "")
        current = {n: fw.weights[n] for n in rec.weights if n in fw.weights}
        now = (f"The kernel's weights when the topology was read: {_listed(current)} ({fw.weights_mode()})."
               if len(current) == len(rec.weights) else "The kernel's current weights: not provided.")
        found.append(Finding(
            id="recommended_weights", bench=bench,
            title=f"Weighted-interleave weights for node {rec.cpu_node}'s CPUs",
            summary=(f"Measured from node {rec.cpu_node}'s CPUs: {seen}. Recommended weights, each node's share "
                     f"of pages in proportion to its bandwidth (at most {CAP}, reduced; docs/firmware.md): "
                     f"{_listed(rec.weights)}. Set them with `{'; '.join(rec.sysfs_writes())}` and run "
                     f"`{rec.numactl()}` (numactl 2.0.19 or later); measure them against others with the "
                     f"memory spec `{rec.memory_spec()}` (config/campaigns/weights.yaml).{per_socket} {now}"),
            numbers={"cpu_node": rec.cpu_node, "recommended": True, "weights": {str(n): w for n, w in rec.weights.items()},
                     "current_weights": {str(n): w for n, w in current.items()} or None,
                     "weights_mode": fw.weights_mode(), "memory_spec": rec.memory_spec(),
                     "numactl": rec.numactl(), "sysfs_writes": rec.sysfs_writes(), "cap": CAP, "claim": False,
                     "per_socket": bool(others), "other_cpu_nodes": [r.cpu_node for r in others]},
            evidence=[{"memory_node": n, "bandwidth_mb_s": round(bw, 1), "weight": rec.weights[n]}
                      for n, bw in sorted(rec.bandwidth_mb_s.items())],
        ))
    return found


# A weighting's pages are where its weights say when the first node's page ratio to each other
# node is within this of the weights' ratio (weights {2,1}: 2:1 pages, 1.9 to 2.1).
PAGE_RATIO_TOLERANCE = 0.05


def weighted_pages(bandwidth: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """Per weighting the run set (memory spec `weighted:NODES@WEIGHTS`): where its jobs' pages
    landed against the weights, the first node's page ratio to each other node against the
    weights' ratio, from the kernel's own count of every page's node (`page_fractions`, by move_pages);
    the job furthest off is the one said."""
    if bandwidth is None or bandwidth.empty or not {"memory", "page_fractions"} <= set(bandwidth.columns):
        return []
    found = []
    jobs = bandwidth.drop_duplicates([c for c in ("job_id", "repetition", "memory") if c in bandwidth.columns])
    for memory, part in jobs.groupby("memory", sort=True):
        spec = weights_set(memory)
        if spec is None:
            continue
        nodes, weights = list(spec.nodes), list(spec.weights)
        listed_nodes, listed_weights = ",".join(map(str, nodes)), ",".join(map(str, weights))
        worst, worst_off = None, -1.0
        for fractions in part["page_fractions"]:
            share = parse_page_fractions(fractions)
            first = share.get(nodes[0], 0.0)
            off = max((abs(first / share[n] / (weights[0] / w) - 1) if share.get(n) else math.inf
                       for n, w in zip(nodes[1:], weights[1:])), default=0.0)
            if off > worst_off:
                worst, worst_off = share, off
        if worst is None:
            continue
        within = worst_off <= PAGE_RATIO_TOLERANCE
        asked = ", ".join(f"node {n} {w / sum(weights) * 100:.1f}%" for n, w in zip(nodes, weights))
        landed = ", ".join(f"node {n} {worst.get(n, 0.0) * 100:.1f}%" for n in nodes)
        found.append(Finding(
            id="weighted_pages", bench="bandwidth", title=f"Pages under weights {listed_weights} over nodes {listed_nodes}",
            summary=(f"Weighted interleave with weights {listed_weights} over nodes {listed_nodes} asks for {asked} of "
                     f"the pages; the furthest of its {count_words(len(part), 'job')} put {landed} there, "
                     + (f"node {nodes[0]}'s page ratio to each other node within {PAGE_RATIO_TOLERANCE * 100:.0f}% of "
                        f"the weights' (at most {worst_off * 100:.2f}% off)." if within else
                        f"a page ratio {worst_off * 100:.1f}% off the weights', beyond {PAGE_RATIO_TOLERANCE * 100:.0f}%: "
                        "the kernel did not place the pages as the weights say (were the weights set, and is "
                        "every node's memory free?).")),
            numbers={"memory": str(memory), "nodes": nodes, "weights": weights, "jobs": len(part),
                     "worst_off": worst_off, "within": within, "tolerance": PAGE_RATIO_TOLERANCE, "claim": False},
            evidence=[{"memory_node": n, "weight": w, "asked_share": round(w / sum(weights), 4),
                       "page_share": round(worst.get(n, 0.0), 4)} for n, w in zip(nodes, weights)],
        ))
    return found


# A weight is recommended from at least two runs of each node alone: with one, its noise is unknown.
MIN_RUNS = 2


def _matrix(bandwidth: pd.DataFrame | None) -> tuple[pd.DataFrame | None, dict[tuple[int, int], int]]:
    """The bandwidth matrix (MB/s) of a bandwidth table's node-alone runs, and the jobs behind
    each cell."""
    if bandwidth is None or bandwidth.empty:
        return None, {}
    rows = bandwidth_samples(bandwidth)
    runs = {(int(c), int(m)): int(n) for (c, m), n in rows.groupby(["cpu_node", "memory_node"]).size().items()}
    return matrices.matrix(rows), runs


def recommended(bandwidth: pd.DataFrame | None) -> dict[int, Recommendation]:
    """CPU node -> the weights recommended from a bandwidth table's node-alone runs (each cell of
    MIN_RUNS jobs or more)."""
    matrix, runs = _matrix(bandwidth)
    return {r.cpu_node: r for r in recommendations(matrix)
            if all(runs.get((r.cpu_node, n), 0) >= MIN_RUNS for n in r.weights)}


def recommended_weights(bandwidth: pd.DataFrame, topology: Topology | None = None) -> list[Finding]:
    """Weighted-interleave weights from the bandwidth matrix (`weights_findings`)."""
    matrix, runs = _matrix(bandwidth)
    return weights_findings(matrix, topology, "bandwidth", runs)
