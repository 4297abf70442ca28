"""The job model's shared parts: the constants of the modelled system and the helpers each
benchmark's rows (`rows` in its tests/benches/ file) are computed with. tests/helpers/synthetic.py
`write_job` writes those rows for one planned job.

The system: a pointer chase costs L1_NS, L2_NS, L3_NS inside the smallest cache level that holds
the buffer and DRAM_NS x distance/10 beyond the last level; ranks sharing an L3 group pay
CONTENTION per neighbour beyond it; 4 KiB pages walk the page table (TLB_FACTOR) beyond TLB_REACH.
A thread moves THREAD_MB_S, a memory node at most NODE_MB_S. The columns that describe the run
rather than the effects have fixed or size-proportional values: first touch at FIRST_TOUCH_B_S,
building the chase's cycle at CYCLE_BUILD_B_S. The only variation is a relative jitter of at most
JITTER, seeded by the job id: the same job always gets the same numbers.
"""

from __future__ import annotations

import random

from numasweep.core.topology import Topology
from numasweep.planning import grid

L1_NS, L2_NS, L3_NS, DRAM_NS = 1.5, 4.0, 12.0, 80.0
TLB_REACH, TLB_FACTOR = 8 << 20, 1.3
CONTENTION = 0.3
THREAD_MB_S, NODE_MB_S = 12000.0, 40000.0
COPY_GB_S = 10.0
LINK_GIB_S, HALF_SIZE = 24.0, 64 * 1024
C2C_L3_NS, C2C_NODE_NS = 40.0, 90.0
BIDIR = 0.8
FIRST_TOUCH_B_S, CYCLE_BUILD_B_S = 2e9, 1e9
JITTER = 0.002
HOST = "model"


def arg(job: grid.Job, name: str, default: str | None = None) -> str | None:
    for a in job.kernel_args:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def node_of(topo: Topology, cpu: int) -> int:
    return next(n.id for n in topo.nodes if cpu in n.cpus)


def distance(topo: Topology, a: int, b: int) -> int:
    ids = topo.node_ids()
    return topo.distances[ids.index(a)][ids.index(b)]


def l3_group(topo: Topology, cpu: int) -> int:
    return next((i for i, g in enumerate(topo.l3_groups) if cpu in g), -1)


def fractions(topo: Topology, nodes: list[int], weights: list[int] | None = None) -> str:
    weights = weights or [1] * len(nodes)
    total = sum(weights)
    share = {n: w / total for n, w in zip(nodes, weights)}
    return ",".join(f"{n}:{share.get(n, 0.0):.4f}" for n in topo.node_ids())


def mem_nodes(topo: Topology, spec: str, cpu_node: int) -> tuple[str, list[int], list[int] | None]:
    """(policy as get_mempolicy reports it, nodes, weights) for a memory spec."""
    kind, _, rest = spec.partition(":")
    if kind == "local":
        return "bind", [cpu_node], None
    if kind == "weighted":
        nodes, _, weights = rest.partition("@")
        # without weights: the kernel's weights of the moment, modelled as uniform
        return "weighted", [int(n) for n in nodes.split(",")], [int(w) for w in weights.split(",")] if weights else None
    nodes = [int(n) for n in rest.split(",")]
    return {"node": "bind", "nodes": "bind"}.get(kind, kind), nodes, None


def jitter(rng: random.Random) -> float:
    return 1.0 + rng.uniform(-JITTER, JITTER)


def latency_ns(topo: Topology, cpu: int, mem_nodes: list[int], size: int, sharing: int, pages: str = "4k") -> float:
    walk = TLB_FACTOR if pages == "4k" and size > TLB_REACH else 1.0
    for name, ns in ((1, L1_NS), (2, L2_NS), (3, L3_NS)):
        cache = next((c for c in topo.caches if c.level == name and c.type in ("Data", "Unified")), None)
        # the ranks sharing an L3 group share its capacity too
        if cache and size * (sharing if name == 3 else 1) <= cache.size_bytes:
            return ns * walk
    dist = sum(distance(topo, node_of(topo, cpu), m) for m in mem_nodes) / len(mem_nodes)
    return DRAM_NS * dist / 10 * (1 + CONTENTION * (sharing - 1)) * walk
