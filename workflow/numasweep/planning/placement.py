"""Where each rank runs and where its memory lives.

A plan is (strategy, domains, ranks per domain, memory spec) -> one CPU and one memory policy
per rank. `sequential` fills each domain's free cores in CPU order; `interleaved` takes one
core from each L3 group (CCD) of the domain in turn, so ranks of a domain spread over its
CCDs before doubling up. Domains are NUMA node ids. Free cores are cores none of whose
hardware threads is reserved; a rank gets the core's first hardware thread.

Memory specs (docs/INTERFACES.md): `local`, `node:N`, `nodes:0,0,1,1` (one per rank),
`preferred:N`, `interleave:0,1`, `weighted:0,3@1,2` (nodes @ weights, 1..255), `weighted:0,3` (the
weights the kernel has now: set by hand or, from Linux 6.16, from the firmware's bandwidth).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from numasweep.core.errors import NumasweepError
from numasweep.core.topology import Topology
from numasweep.core.units import format_cpulist

STRATEGIES = ("sequential", "interleaved")
POLICIES = ("bind", "preferred", "interleave", "weighted")
SPEC_HELP = "local, node:N, nodes:0,0,1,1, preferred:N, interleave:0,1, weighted:0,3@1,2 or weighted:0,3"


@dataclass(frozen=True)
class MemorySpec:
    kind: str                      # local | node | nodes | preferred | interleave | weighted
    nodes: tuple[int, ...] = ()
    weights: tuple[int, ...] | None = None  # weighted without weights: the kernel's current ones

    def __str__(self) -> str:
        if self.kind == "local":
            return "local"
        nodes = ",".join(str(n) for n in self.nodes)
        if self.kind == "weighted" and self.weights:
            return f"weighted:{nodes}@{','.join(str(w) for w in self.weights or ())}"
        return f"{self.kind}:{nodes}"


@dataclass
class RankPlacement:
    rank: int
    cpu: int
    cpu_node: int
    l3_group: int
    policy: str                    # bind | preferred | interleave | weighted
    mem_nodes: list[int]
    weights: list[int] | None = None


def _int_list(text: str, spec: str, what: str) -> tuple[int, ...]:
    if not re.fullmatch(r"\d+(,\d+)*", text):
        raise NumasweepError(f"memory spec '{spec}': {what} '{text}' is not a comma list of numbers")
    return tuple(int(x) for x in text.split(","))


def parse_memory(spec: str) -> MemorySpec:
    """The memory spec's syntax; whether its nodes exist is checked against a topology later."""
    s = str(spec).strip()
    if s == "local":
        return MemorySpec("local")
    kind, sep, rest = s.partition(":")
    if not sep or kind not in ("node", "nodes", "preferred", "interleave", "weighted"):
        raise NumasweepError(f"memory spec '{spec}' is not one of {SPEC_HELP}")
    if kind == "weighted":
        nodes_s, at, weights_s = rest.partition("@")
        nodes = _int_list(nodes_s, spec, "nodes")
        if len(set(nodes)) != len(nodes):
            raise NumasweepError(f"memory spec '{spec}': a node is listed twice")
        if not at:
            return MemorySpec(kind, nodes, None)
        weights = _int_list(weights_s, spec, "weights")
        if len(weights) != len(nodes):
            raise NumasweepError(
                f"memory spec '{spec}': {len(nodes)} node(s) but {len(weights)} weight(s); give one weight per node"
            )
        for w in weights:
            if not 1 <= w <= 255:
                raise NumasweepError(f"memory spec '{spec}': weight {w} is outside 1..255")
        return MemorySpec(kind, nodes, weights)
    nodes = _int_list(rest, spec, "node" if kind in ("node", "preferred") else "nodes")
    if kind in ("node", "preferred") and len(nodes) != 1:
        raise NumasweepError(f"memory spec '{spec}': {kind} takes one node; use nodes: or interleave: for several")
    if kind == "interleave" and len(set(nodes)) != len(nodes):
        raise NumasweepError(f"memory spec '{spec}': a node is listed twice")
    return MemorySpec(kind, nodes)


def weights_set(spec: object) -> MemorySpec | None:
    """The memory spec of a table's `memory` cell when it sets the weights for its run
    (`weighted:NODES@WEIGHTS`); None for any other spec, or a cell that is none."""
    try:
        mem = parse_memory(str(spec))
    except NumasweepError:
        return None
    return mem if mem.kind == "weighted" and mem.weights else None


def check_memory(topo: Topology, mem: MemorySpec) -> None:
    """Every node the spec names exists (memory-only nodes are fine: that is what they are for)."""
    for n in mem.nodes:
        try:
            topo.node(n)
        except NumasweepError as exc:
            raise NumasweepError(f"memory spec '{mem}': {exc}") from None


def check_domains(topo: Topology, domains: list[int]) -> None:
    if not domains:
        raise NumasweepError("no domains given: name at least one NUMA node, e.g. 0 or 0,1")
    for d in domains:
        if domains.count(d) > 1:
            raise NumasweepError(f"domain {d} is listed twice; name each domain once")
        node = topo.node(d)
        if not node.cpus:
            raise NumasweepError(
                f"domain {d} of {topo.system} has no CPUs (memory-only node): it cannot run ranks; "
                f"place memory on it instead (--memory node:{d})"
            )


def check_cpus(topo: Topology, cpus: list[int]) -> None:
    """Explicit CPUs (single-process kernels): each exists, none reserved, none twice."""
    if not cpus:
        raise NumasweepError("no CPUs given: name at least one")
    for c in cpus:
        topo.node_of(c)
        if cpus.count(c) > 1:
            raise NumasweepError(f"CPU {c} is listed twice")
        if c in topo.reserved_cpus:
            raise NumasweepError(f"CPU {c} is reserved on {topo.system}; pick a free CPU")


def _domain_cpus(topo: Topology, strategy: str, domain: int, count: int) -> list[int]:
    free = topo.free_cores(domain)
    if count > len(free):
        raise NumasweepError(
            f"{count} ranks do not fit domain {domain} of {topo.system}: it has {len(free)} free cores "
            f"({format_cpulist(free)}); ask for at most {len(free)} ranks per domain"
        )
    if strategy == "sequential":
        return free[:count]
    groups: dict[int, list[int]] = {}
    for cpu in free:
        groups.setdefault(topo.l3_group_of(cpu), []).append(cpu)
    queues = [groups[g] for g in sorted(groups)]
    out: list[int] = []
    while len(out) < count:
        for q in queues:
            if q and len(out) < count:
                out.append(q.pop(0))
    return out


def plan_cpus(topo: Topology, strategy: str, domains: list[int], ranks_per_domain: int) -> list[int]:
    """One CPU per rank, domain after domain (rank order = the order of `domains`)."""
    if strategy not in STRATEGIES:
        raise NumasweepError(f"strategy '{strategy}' is not one of {', '.join(STRATEGIES)}")
    if ranks_per_domain < 1:
        raise NumasweepError(f"ranks per domain must be at least 1, got {ranks_per_domain}")
    check_domains(topo, domains)
    if strategy == "interleaved" and not topo.l3_groups:
        raise NumasweepError(
            f"{topo.system} has no L3 groups: interleaved needs them; use sequential or add the "
            "level-3 cache to the arch file"
        )
    cpus: list[int] = []
    for d in domains:
        cpus.extend(_domain_cpus(topo, strategy, d, ranks_per_domain))
    return cpus


def memory_for(topo: Topology, mem: MemorySpec, cpus: list[int]) -> list[tuple[str, list[int], list[int] | None]]:
    """(policy, nodes, weights) per rank for the CPUs the ranks run on."""
    check_memory(topo, mem)
    n = len(cpus)
    if mem.kind == "local":
        return [("bind", [topo.node_of(c)], None) for c in cpus]
    if mem.kind == "node":
        return [("bind", [mem.nodes[0]], None)] * n
    if mem.kind == "nodes":
        if len(mem.nodes) != n:
            raise NumasweepError(
                f"memory spec '{mem}' names {len(mem.nodes)} node(s) for {n} rank(s); give one node per rank"
            )
        return [("bind", [m], None) for m in mem.nodes]
    if mem.kind == "preferred":
        return [("preferred", [mem.nodes[0]], None)] * n
    if mem.kind == "interleave":
        return [("interleave", list(mem.nodes), None)] * n
    return [("weighted", list(mem.nodes), list(mem.weights) if mem.weights else None)] * n


def plan(topo: Topology, strategy: str, domains: list[int], ranks_per_domain: int,
         memory: str | MemorySpec = "local") -> list[RankPlacement]:
    mem = memory if isinstance(memory, MemorySpec) else parse_memory(memory)
    check_memory(topo, mem)
    cpus = plan_cpus(topo, strategy, domains, ranks_per_domain)
    return [
        RankPlacement(rank, cpu, topo.node_of(cpu), topo.l3_group_of(cpu), policy, list(nodes),
                      None if weights is None else list(weights))
        for rank, (cpu, (policy, nodes, weights)) in enumerate(zip(cpus, memory_for(topo, mem, cpus)))
    ]


def rank_scaling(topo: Topology, strategy: str, domains: list[int], max_per_domain: int | None = None) -> list[int]:
    """The ranks-per-domain series 1..N, N = the fewest free cores among the domains (or less)."""
    plan_cpus(topo, strategy, domains, 1)  # refuses what any step of the series would
    fit = min(len(topo.free_cores(d)) for d in domains)
    if max_per_domain is None:
        return list(range(1, fit + 1))
    if max_per_domain < 1:
        raise NumasweepError(f"maximum ranks per domain must be at least 1, got {max_per_domain}")
    if max_per_domain > fit:
        small = min(domains, key=lambda d: len(topo.free_cores(d)))
        raise NumasweepError(
            f"{max_per_domain} ranks per domain do not fit domain {small} of {topo.system}: "
            f"it has {fit} free cores; ask for at most {fit}"
        )
    return list(range(1, max_per_domain + 1))


def scaling_name(strategy: str, domains: list[int], ranks: int, size_bytes: int | None = None) -> str:
    """The seed's result names: sequential_domain0_8ranks_16MB.csv, sequential_domains0,1_16ranks_16MB.csv
    (`ranks` is the total; sizes in MiB, written MB as the seed did)."""
    word = "domain" if len(domains) == 1 else "domains"
    name = f"{strategy}_{word}{','.join(str(d) for d in domains)}_{ranks}ranks"
    if size_bytes is not None:
        name += f"_{size_bytes >> 20}MB" if size_bytes % (1 << 20) == 0 else f"_{size_bytes}B"
    return name + ".csv"
