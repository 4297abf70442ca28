"""Latency tables with planted truth, for the known-truth tests of stats, levels and contrasts.

Model (noiseless latency of a dependent random pointer chase over a working set of S bytes):
    L(S) = L1 + sum over cache levels of (next level's latency - this level's) x m(S, C)
           + walk x m(S, R)   [4 KiB pages only: R = TLB entries x 4 KiB]
    m(S, C) = 0 for S <= C', else 1 - (C' / S)^p,  C' = C x 2^shift
m is the miss fraction of a capacity-C cache under random replacement (p = 1) or sharper
(p up to 2); `shift` moves the rise from a little before C (-0.3: associativity, prefetch) to a
whole size step after it (+1: processors whose latency rises one step past the cache size).
Each dataset draws shift and p per level, the family, the tested sizes (start, end, whole or half
power-of-two steps, grids on or off the exact cache sizes), replicates and noise.
Noise: each run (repetition x rank) gets a log-normal offset; each of its n samples a log-normal
draw around it; the row keeps median, min, max and n as the kernel does.
Concurrent mode on parts with several L3 groups per node plants CCD contention: ranks on the
first L3 group of each node pay (1 + contention) on the DRAM part of their latency.
remote=True adds, for every rank, a run on the next node's memory: its DRAM latency is the local
one x (distance / 10)^e, the firmware distance drawn from 12..32 and e from 0.5..0.9 (the column
`locality` says local or remote).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from numasweep.core.topology import Topology

KiB, MiB = 1 << 10, 1 << 20


@dataclass(frozen=True)
class Family:
    name: str
    l1d: int
    l2: int
    l3: int                 # one L3 instance (CCX/CCD, or the whole shared L3 / SLC)
    cores_per_l3: int
    l3_per_node: int
    tlb_entries: int        # last-level data TLB entries for 4 KiB pages
    latency_ns: tuple       # L1, L2, L3, DRAM
    clock: str = ""


# Sizes from public specifications:
# - AMD Software Optimization Guide for family 17h models 30h+ (Zen 2, EPYC 7002): 32 KiB L1d,
#   512 KiB L2 per core, 16 MiB L3 per 4-core CCX, L2 DTLB 2048 entries.
# - AMD Software Optimization Guide for family 19h (Zen 3, EPYC 7003 / 7A53): 32 KiB L1d, 512 KiB
#   L2, 32 MiB L3 per 8-core CCD, L2 DTLB 2048 entries.
# - AMD Software Optimization Guide for family 19h models 10h+ (Zen 4, EPYC 9004): 32 KiB L1d,
#   1 MiB L2, 32 MiB L3 per 8-core CCD, L2 DTLB 3072 entries.
# - Intel 64 and IA-32 Optimization Reference Manual, Sapphire Rapids (4th gen Xeon): 48 KiB
#   L1d, 2 MiB L2 per core, 1.875 MiB L3 per core shared (56 cores: 105 MiB), STLB 2048 entries.
# - Same manual, Ice Lake SP (3rd gen Xeon): 48 KiB L1d, 1.25 MiB L2, 1.5 MiB L3 per core
#   shared (40 cores: 60 MiB), STLB 2048 entries.
# - Arm Neoverse N1 TRM (Ampere Altra): 64 KiB L1d, 1 MiB L2, 32 MiB system level cache shared
#   by 80 cores, L2 TLB 1280 entries.
# - Arm Neoverse V1 TRM (AWS Graviton3): 64 KiB L1d, 1 MiB L2, 32 MiB shared L3 (64 cores),
#   L2 TLB 2048 entries.
# Latencies are typical published load-to-use figures, rounded; the tests never depend on them.
FAMILIES = (
    Family("zen2", 32 * KiB, 512 * KiB, 16 * MiB, 4, 4, 2048, (1.2, 4.0, 12.0, 95.0)),
    Family("zen3", 32 * KiB, 512 * KiB, 32 * MiB, 8, 2, 2048, (1.2, 4.0, 14.0, 105.0)),
    Family("zen4", 32 * KiB, 1 * MiB, 32 * MiB, 8, 3, 3072, (1.1, 3.6, 13.0, 115.0)),
    Family("sapphire_rapids", 48 * KiB, 2 * MiB, 105 * MiB, 56, 1, 2048, (1.4, 4.6, 33.0, 112.0)),
    Family("ice_lake_sp", 48 * KiB, 1280 * KiB, 60 * MiB, 40, 1, 2048, (1.4, 4.5, 22.0, 100.0)),
    Family("neoverse_n1", 64 * KiB, 1 * MiB, 32 * MiB, 80, 1, 1280, (1.3, 3.7, 30.0, 110.0)),
    Family("neoverse_v1", 64 * KiB, 1 * MiB, 32 * MiB, 64, 1, 2048, (1.5, 5.0, 32.0, 120.0)),
)


@dataclass
class Planted:
    family: Family
    topology: Topology
    table: pd.DataFrame
    sizes: np.ndarray
    shifts: dict            # capacity label -> (shift, p)
    tlb_reach: int
    walk_ns: float
    contention: float       # 0 when none planted
    noise: float
    distance: int           # firmware distance between the two nodes
    remote_factor: float    # remote / local DRAM latency
    curves: dict = field(default_factory=dict)   # (mode, page, l3_position) -> noiseless latency per size

    def testable(self, capacity: int) -> bool:
        """A capacity the sweep can show: two sizes below it and four above."""
        return 2 * self.sizes.min() <= capacity <= self.sizes.max() / 4


def topology_of(f: Family, nodes: int = 2, hypervisor: str | None = None, distance: int = 20) -> Topology:
    cpus_per_node = f.cores_per_l3 * f.l3_per_node
    groups = [list(range(g * f.cores_per_l3, (g + 1) * f.cores_per_l3)) for g in range(nodes * f.l3_per_node)]
    all_cpus = list(range(nodes * cpus_per_node))
    d = {
        "system": f.name, "source": "truth", "cpu_model": f.name, "hypervisor": hypervisor, "threads_per_core": 1,
        "nodes": [{"id": n, "cpus": all_cpus[n * cpus_per_node:(n + 1) * cpus_per_node],
                   "memory_bytes": 64 << 30} for n in range(nodes)],
        "distances": [[10 if i == j else distance for j in range(nodes)] for i in range(nodes)],
        "caches": [{"level": 1, "type": "Data", "size_bytes": f.l1d, "instances": [[c] for c in all_cpus]},
                   {"level": 2, "type": "Unified", "size_bytes": f.l2, "instances": [[c] for c in all_cpus]},
                   {"level": 3, "type": "Unified", "size_bytes": f.l3, "instances": groups}],
        "l3_groups": groups, "smt_siblings": [[c] for c in all_cpus],
    }
    return Topology.from_dict(d, f.name)


def miss(sizes: np.ndarray, capacity: float, shift: float, p: float) -> np.ndarray:
    c = capacity * 2 ** shift
    return np.where(sizes <= c, 0.0, 1 - (c / np.maximum(sizes, 1)) ** p)


def plant(rng: np.random.Generator, family: Family | None = None, noise: float | None = None,
          flat: bool = False, pages: tuple = ("4k", "2m"), modes: tuple = ("serial", "concurrent"),
          max_bytes: int | None = None, shift: float | None = None, exact_grid: bool = False,
          topology: Topology | None = None, remote: bool = False) -> Planted:
    """One dataset. flat=True: a noise-only dataset (one latency everywhere: nothing to find).
    shift: the same onset shift for every level; exact_grid: whole powers of two, so the tested
    sizes include the exact cache sizes; topology: what the analysis is told (default: the truth)."""
    f = family or FAMILIES[rng.integers(len(FAMILIES))]
    distance = int(rng.choice([12, 16, 21, 32]))
    numa_exponent = float(rng.uniform(0.5, 0.9))
    topo = topology or topology_of(f, distance=distance)
    half = rng.random() < 0.3 and not exact_grid
    start = 2 ** int(rng.integers(10, 14))
    end = max_bytes or 2 ** int(rng.integers(29, 33))
    offset = 1.5 if rng.random() < 0.3 and not exact_grid else 1.0
    exps = np.arange(math.log2(start), math.log2(end) + 1e-9, 0.5 if half else 1.0)
    sizes = np.unique(np.round(2 ** exps * offset / 64) * 64).astype(np.int64)
    noise = float(noise if noise is not None else rng.choice([0.01, 0.03, 0.06]))
    caps = {"L1": f.l1d, "L2": f.l2, "L3": f.l3}
    shifts = {k: (float(rng.uniform(-0.3, 1.0)) if shift is None else shift, float(rng.uniform(1.0, 2.0)))
              for k in ("L1", "L2", "L3", "TLB")}
    lat = f.latency_ns
    reach = f.tlb_entries * 4096
    walk = float(rng.uniform(20, 40))
    contention = float(rng.uniform(0.25, 0.6)) if f.l3_per_node > 1 and "concurrent" in modes else 0.0
    level = float(rng.uniform(20, 150))

    def curve(page: str, mode: str, position: int, locality: str) -> np.ndarray:
        if flat:
            return np.full(len(sizes), level)
        y = np.full(len(sizes), lat[0], float)
        dram = lat[3] * ((distance / 10) ** numa_exponent if locality == "remote" else 1.0)
        for i, name in enumerate(("L1", "L2", "L3")):
            upper = dram if name == "L3" else lat[i + 1]
            extra = (upper - lat[i]) * miss(sizes, caps[name], *shifts[name])
            if name == "L3" and mode == "concurrent" and position == 0:
                extra = extra * (1 + contention)
            y = y + extra
        if page == "4k":
            y = y + walk * miss(sizes, reach, *shifts["TLB"])
        return y

    reps = int(rng.choice([3, 4, 5]))
    rows, curves = [], {}
    nodes = topo.node_ids()
    for mode in modes:
        for page in pages:
            rank = 0
            for node in nodes:
                groups = [g for g in topo.l3_groups if g[0] in topo.node(node).cpus]
                # two ranks per node: one on each of its first two L3 groups, or two cores of its one L3
                placed = [(groups[0][1], 0), (groups[1][1], 1)] if len(groups) > 1 else \
                    [(groups[0][1], 0), (groups[0][2], 0)]
                for cpu, position in placed:
                    for locality in ("local", "remote") if remote else ("local",):
                        truth = curve(page, mode, position, locality)
                        curves[(mode, page, position) + ((locality,) if locality == "remote" else ())] = truth
                        memory = node if locality == "local" else nodes[(nodes.index(node) + 1) % len(nodes)]
                        for rep in range(reps):
                            rows += _run(rng, truth, sizes, noise, {
                                "rank": rank, "ranks": 2 * len(nodes), "mode": mode, "cpu": cpu, "cpu_node": node,
                                "l3_group": topo.l3_group_of(cpu), "policy": "bind", "mem_nodes": str(memory),
                                "locality": locality, "page_size": page, "repetition": rep, "l3_position": position})
                    rank += 1
    return Planted(f, topo, pd.DataFrame(rows), sizes, shifts, reach, walk, contention, noise, distance,
                   (distance / 10) ** numa_exponent, curves)


def _run(rng: np.random.Generator, truth: np.ndarray, sizes: np.ndarray, noise: float, columns: dict) -> list[dict]:
    """One run: a log-normal run offset, n samples per size around it, kept as the kernel keeps them."""
    offset_log = rng.normal(0, noise / 2)
    n = int(rng.integers(5, 22))
    samples = truth[:, None] * np.exp(offset_log + rng.normal(0, noise, (len(sizes), n)))
    return [{**columns, "size_bytes": int(size), "latency_ns_median": float(np.median(s)),
             "latency_ns_min": float(s.min()), "latency_ns_max": float(s.max()), "samples": n}
            for size, s in zip(sizes, samples)]


def prefetch_curve(rng: np.random.Generator, family: Family) -> tuple[Topology, pd.DataFrame]:
    """lmbench lat_mem_rd at stride 64: 1-3 ns out to 2 GiB (the prefetchers hide every miss)."""
    topo = topology_of(family)
    sizes = 2 ** np.arange(12, 32)
    lat = 1.0 + 2.0 * np.log2(sizes / sizes[0]) / np.log2(sizes[-1] / sizes[0])
    rows = [{"rank": 0, "mode": "serial", "page_size": "4k", "cpu": 1, "size_bytes": int(s),
             "latency_ns_median": float(v * math.exp(rng.normal(0, 0.02))), "repetition": r}
            for r in range(3) for s, v in zip(sizes, lat)]
    return topo, pd.DataFrame(rows)
