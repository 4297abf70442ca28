"""Synthetic results in the project's schema (docs/INTERFACES.md), every number from a stated
formula, so that each test knows what the analysis and the report must find: the one generator
of the tests' data and of the model data bench/pipeline.py times the pipeline on.

`write_folder` writes a results folder (topology.json and one `<bench>.csv` per table); the
three sources of its tables follow, each with its model:

1. Formula tables (`topology`, `latency_frame`, `bandwidth_frame`, `copy_frame`, `gpu_frame`,
   `write_results`): small results folders built from simple formulas, so that each test knows
   which numbers the report may contain.

2. Planted truth (`plant`, `FAMILIES`, `topology_of`, `prefetch_curve`): latency tables for the
   known-truth tests of stats, levels and contrasts.

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

3. The job model (`write_job`, `write_campaign`, `write_default_sweep` on a `workstation`): a
   deterministic model of a system, writing what each planned job would leave behind.

4. Loaded latency and core to core (`loaded_latency_frame`, `c2c_frame`): a knee at a stated
   load, and round trips by L3 group and node (their docstrings).

`write_job(job, topo, folder)` writes `<folder>/<bench>/<id>.csv` with exactly the columns the
kernel writes (docs/INTERFACES.md, kernels/README.md) and `<id>.json`, the provenance record
(numasweep.running.provenance), for one `numasweep.planning.grid.Job` on a `numasweep.core.topology.Topology`.
Every value comes from the formulas below, so a test knows which effects the analysis must
find. The only variation is a relative jitter of at most JITTER, seeded by the job id
(`random.Random(job.id)`): the same job always gets the same numbers.

The model (the planted effects):
- latency: a random pointer chase costs L1_NS, L2_NS, L3_NS inside the smallest cache level
  of the rank's CPU that holds the buffer, and DRAM_NS x distance/10 beyond the last level
  (firmware distance from the CPU's node to the memory's node). In concurrent mode the
  ranks sharing an L3 group share its capacity (a buffer stays in the L3 while the buffers of
  all of them fit) and its memory path: beyond the L3 each costs CONTENTION x (ranks in its
  group - 1) more. So sequential ranks, which fill one L3 group first, slow down with fewer
  ranks per domain than interleaved ones. With 4 KiB pages a buffer larger than TLB_REACH
  (what the second-level TLB maps) also walks the page table on its loads: TLB_FACTOR x the
  latency; huge pages (`--pages=thp`, `2m`, `1g`) do not.
- bandwidth: per thread THREAD_MB_S, capped at NODE_MB_S per memory node, x 10/distance.
- copy: COPY_GB_S x 10/distance(src, dst), threads add linearly up to 4.
- gpu_xfer: the GPUs of one run share LINK_GIB_S: each reaches LINK_GIB_S/ngpus x
  size/(size + HALF_SIZE), times 10/distance from the host memory node to the GPU's node.
- loaded latency: the load moves min(threads x THREAD_MB_S, NODE_MB_S) / (1 + delay/1000) MB/s
  to the memory node; the chase costs its idle latency (as above) x (1 + 3 u^4), u the load
  over NODE_MB_S: flat, then a knee near the node's peak.
- core to core: C2C_L3_NS inside an L3 group, C2C_NODE_NS across groups of a node, and
  C2C_NODE_NS x distance/10 across nodes.
- mixed bandwidth: like bandwidth, per thread and memory node, for every traffic kind.
  size/(size + HALF_SIZE), times 10/distance from the host memory node to the GPU's node;
  device to host 0.9 of that; with both directions at once each direction gets BIDIR of it.
- the columns that describe the run rather than the effects (sample time, spread, first touch
  and cycle build times, store kind, element size) have fixed or size-proportional values:
  first touch at FIRST_TOUCH_B_S, building the chase's cycle at CYCLE_BUILD_B_S.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.core import registry
from numasweep.planning import fleet, grid, placement  # noqa: F401 (placement: also for tests)
from numasweep.core.topology import Topology
from numasweep.core.units import parse_size, parse_sizes  # noqa: F401 (parse_sizes: also for tests)
from numasweep.results import aggregate

from helpers.kernels import contract_columns

KiB, MiB = 1 << 10, 1 << 20


def write_folder(folder: Path, topology: dict | Topology | None, tables: dict[str, pd.DataFrame]) -> Path:
    """A results folder as aggregation leaves it: `topology.json` (none for None) and
    `<bench>.csv` for each table."""
    folder.mkdir(parents=True, exist_ok=True)
    if topology is not None:
        text = topology.to_json() if isinstance(topology, Topology) else json.dumps(topology, indent=1)
        (folder / "topology.json").write_text(text)
    for bench, table in tables.items():
        table.to_csv(folder / f"{bench}.csv", index=False)
    return folder


# ================================================================== 1. formula tables
def topology(system: str = "twin", hypervisor: str | None = None) -> Topology:
    """Two NUMA nodes of 4 cores, two L3 groups per node, plus a memory-only node 2."""
    nodes = [
        {"id": 0, "cpus": [0, 1, 2, 3], "memory_bytes": 8 << 30, "memory_only": False},
        {"id": 1, "cpus": [4, 5, 6, 7], "memory_bytes": 8 << 30, "memory_only": False},
        {"id": 2, "cpus": [], "memory_bytes": 16 << 30, "memory_only": True},
    ]
    l3 = [[0, 1], [2, 3], [4, 5], [6, 7]]
    return Topology.from_dict({
        "system": system,
        "source": "arch:tests",
        "cpu_model": "Test CPU 8-Core",
        "hypervisor": hypervisor,
        "threads_per_core": 1,
        "nodes": nodes,
        "distances": [[10, 20, 30], [20, 10, 30], [30, 30, 10]],
        "caches": [
            {"level": 1, "type": "Data", "size_bytes": 32768, "instances": [[c] for c in range(8)]},
            {"level": 1, "type": "Instruction", "size_bytes": 32768, "instances": [[c] for c in range(8)]},
            {"level": 2, "type": "Unified", "size_bytes": 512 * 1024, "instances": [[c] for c in range(8)]},
            {"level": 3, "type": "Unified", "size_bytes": 4 * MiB, "instances": l3},
        ],
        "l3_groups": l3,
        "smt_siblings": [[c] for c in range(8)],
        "reserved_cpus": [0],
        "gpus": [],
    })


RANK_CPUS = [1, 2, 5, 6]  # one rank in each L3 group


def latency_value(mode: str, cpu: int, size: int) -> float:
    """Steps at the 4 MiB L3 and 8 MiB per-node L3; concurrent ranks on the first L3 group of a
    node pay 1.5x from 64 MiB on."""
    base = 10.0 if size < 4 * MiB else (30.0 if size < 8 * MiB else 80.0)
    first_group = cpu in (1, 5)
    if mode == "concurrent" and first_group and size >= 64 * MiB:
        base *= 1.5
    return round(base + 0.1 * cpu, 2)


def latency_frame(modes=("concurrent", "serial"), sizes=None) -> pd.DataFrame:
    sizes = sizes or [MiB << i for i in range(9)]  # 1 MiB .. 256 MiB
    rows = []
    for mode in modes:
        for rank, cpu in enumerate(RANK_CPUS):
            node = 0 if cpu < 4 else 1
            for size in sizes:
                v = latency_value(mode, cpu, size)
                fractions = ",".join(f"{n}:{1.0 if n == node else 0.0:.4f}" for n in (0, 1, 2))
                rows.append({
                    "rank": rank, "ranks": len(RANK_CPUS), "mode": mode, "host": "testhost",
                    "cpu": cpu, "cpu_node": node, "l3_group": [1, 2, 5, 6].index(cpu),
                    "policy": "bind", "mem_nodes": str(node), "weights": "", "page_size": "4k",
                    "size_bytes": size, "latency_ns_median": v, "latency_ns_min": v - 0.5,
                    "latency_ns_max": v + 0.5, "samples": 5, "loads": 1000000,
                    "page_fractions": fractions, "job_id": f"lat-{mode}", "strategy": "interleaved",
                    "memory": "local", "repetition": 0,
                    "command": f"mpirun -np 4 numa_latency --size=1-256{' --serial' if mode == 'serial' else ''}",
                })
    return pd.DataFrame(rows)


def bandwidth_frame() -> pd.DataFrame:
    rows = []
    for mem in (0, 1):
        for threads in range(1, 5):
            best = (10000.0 if mem == 0 else 8000.0) * min(threads, 3)
            rows.append({
                "kernel": "triad", "pattern": "sequential", "stride": 1, "threads": threads,
                "cpus": "0-3", "cpu_nodes": "0", "policy": "bind", "mem_nodes": str(mem), "weights": "",
                "page_size": "4k", "array_bytes": 64 * MiB, "bytes_per_iter": 3 * 64 * MiB,
                "best_mb_s": best, "avg_mb_s": best * 0.95, "min_mb_s": best * 0.9, "ntimes": 10,
                "validation": "pass", "page_fractions": f"0:{1.0 if mem == 0 else 0.0:.4f},1:{1.0 if mem else 0.0:.4f},2:0.0000",
                "host": "testhost", "job_id": f"bw-{mem}-{threads}", "repetition": 0,
            })
    return pd.DataFrame(rows)


def copy_frame() -> pd.DataFrame:
    rows = []
    for src in (0, 1):
        for dst in (0, 1):
            gb = 20.0 if src == dst else 12.5
            rows.append({
                "src_node": src, "dst_node": dst, "cpu_node": 0, "threads": 4, "bytes": 256 * MiB,
                "best_gb_s": gb, "avg_gb_s": gb * 0.9, "min_gb_s": gb * 0.8, "ntimes": 5,
                "validation": "pass", "src_page_fractions": f"{src}:1.0000",
                "dst_page_fractions": f"{dst}:1.0000", "host": "testhost",
            })
    return pd.DataFrame(rows)


def gpu_frame() -> pd.DataFrame:
    rows = []
    for nodes, weight, policy in (("0", "", "bind"), ("0,2", "1,2", "weighted")):
        for i in range(10, 24, 2):
            size = 1 << i
            plateau = 50.0 if policy == "bind" else 40.0
            bw = plateau * size / (size + 65536)
            rows.append({
                "ngpus": 1, "numa_nodes": nodes, "numa_weight": weight, "access_size(bytes)": size,
                "read_latency(ms)": size / (bw * 2**30) * 1000, "read_bw(gib/s)": bw,
                "write_latency(ms)": size / (bw * 0.9 * 2**30) * 1000, "write_bw(gib/s)": bw * 0.9,
                "gpu": 0, "gpu_node": 0, "pinned": 1, "policy": policy,
                "page_fractions": "0:1.0000,1:0.0000,2:0.0000", "host": "testhost",
            })
    return pd.DataFrame(rows)


# The benchmarks with a formula table, and its maker.
FORMULA_TABLES = {"latency": latency_frame, "bandwidth": bandwidth_frame, "copy": copy_frame, "gpu_xfer": gpu_frame}


def write_results(folder: Path, benches=tuple(FORMULA_TABLES), system: str = "twin",
                  hypervisor: str | None = None) -> Path:
    return write_folder(folder, topology(system, hypervisor),
                        {bench: FORMULA_TABLES[bench]() for bench in benches})


# ================================================================== 2. planted truth
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
    unstable_bytes: int | None = None             # the size whose samples mix two levels (plant's `unstable`)

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
          topology: Topology | None = None, remote: bool = False, llc_bytes: int | None = None,
          grid_ratio: float | None = None, tlb_reach: int | None = None, unstable: str | None = None,
          tlb_dip: bool = False, noise_model: str = "lognormal") -> Planted:
    """One dataset. flat=True: a noise-only dataset (one latency everywhere: nothing to find).
    shift: the same onset shift for every level; exact_grid: whole powers of two, so the tested
    sizes include the exact cache sizes; topology: what the analysis is told (default: the truth).
    The shapes the default draw does not make:
    - llc_bytes: the last-level capacity the core really gets (a virtual machine's share), while
      the topology reports the family's whole L3: memory latency starts well below it, and close
      after the L2, two rises inside one cache window;
    - grid_ratio: sizes a fixed ratio apart (1.5, 2) from a power of two;
    - tlb_reach: the 4 KiB TLB reach in bytes (between the L2 and the L3: 6 to 12 MiB);
    - unstable: "L1" or "L2": the first size past that level gets samples from both sides of its
      rise, each run its own mix, so its runs' samples spread wide and its median jumps;
    - tlb_dip: the 4 KiB pages' walk costs its full amount only up to 4 x the L3, a fifth of it
      over the DRAM plateau (the page-table entries stay cached: the 4k / huge ratio dips under
      the 10 % floor) and 1.5 x from 1 GiB on (the walks miss the caches too);
    - noise_model: one of NOISE_MODELS (the default draws as the generator always has)."""
    f = family or FAMILIES[rng.integers(len(FAMILIES))]
    distance = int(rng.choice([12, 16, 21, 32]))
    numa_exponent = float(rng.uniform(0.5, 0.9))
    topo = topology or topology_of(f, distance=distance)
    half = rng.random() < 0.3 and not exact_grid
    start = 2 ** int(rng.integers(10, 14))
    end = max_bytes or 2 ** int(rng.integers(29, 33))
    offset = 1.5 if rng.random() < 0.3 and not exact_grid else 1.0
    exps = np.arange(math.log2(start), math.log2(end) + 1e-9,
                     math.log2(grid_ratio) if grid_ratio else (0.5 if half else 1.0))
    sizes = np.unique(np.round(2 ** exps * offset / 64) * 64).astype(np.int64)
    noise = float(noise if noise is not None else rng.choice([0.01, 0.03, 0.06]))
    caps = {"L1": f.l1d, "L2": f.l2, "L3": f.l3}
    shifts = {k: (float(rng.uniform(-0.3, 1.0)) if shift is None else shift, float(rng.uniform(1.0, 2.0)))
              for k in ("L1", "L2", "L3", "TLB")}
    lat = f.latency_ns
    reach = tlb_reach or f.tlb_entries * 4096
    if llc_bytes:
        caps["L3"] = llc_bytes
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
            cost = walk * miss(sizes, reach, *shifts["TLB"])
            if tlb_dip:
                cost = cost * np.where(sizes >= 2 ** 30, 1.5, np.where(sizes >= 4 * caps["L3"], 0.2, 1.0))
            y = y + cost
        return y

    mixed = None
    if unstable:
        i = ("L1", "L2").index(unstable)
        u = int(np.searchsorted(sizes, caps[unstable], side="right"))
        mixed = (u, float(lat[i]), float(lat[i + 1]))
    reps = int(rng.choice([3, 4, 5]))
    shared = rng.normal(0, 2 * noise, reps) if noise_model == "offsets" else np.zeros(reps)
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
                            rows += _run(rng, truth, sizes, noise, mixed=mixed, model=noise_model,
                                         shared=shared[rep], columns={
                                "rank": rank, "ranks": 2 * len(nodes), "mode": mode, "cpu": cpu, "cpu_node": node,
                                "l3_group": topo.l3_group_of(cpu), "policy": "bind", "mem_nodes": str(memory),
                                "locality": locality, "page_size": page, "repetition": rep, "l3_position": position})
                    rank += 1
    return Planted(f, topo, pd.DataFrame(rows), sizes, shifts, reach, walk, contention, noise, distance,
                   (distance / 10) ** numa_exponent, curves, int(sizes[mixed[0]]) if mixed else None)


# Noise models beside the default (a log-normal offset per run, log-normal samples around it), for
# noise-only data whose shape the analysis was never tuned on:
# - "uniform": each cell (run and size) off its truth by a factor uniform in 0.88..1.12, its
#   samples within 1 % of that;
# - "heavy": Student t with 2 degrees of freedom for the run's offset and 3 for the samples
#   (rare runs and samples far off: a shared machine's interruptions);
# - "offsets": every run of one repetition shares an offset of 2 x the noise (the machine's state
#   moved between repetitions), the samples log-normal around it.
NOISE_MODELS = ("lognormal", "uniform", "heavy", "offsets")


def run_offset(rng: np.random.Generator, model: str, noise: float, shape: tuple = ()) -> np.ndarray | float:
    """Log offset of a run (or, for "uniform", of each cell of it: `shape`) under a noise model."""
    if model == "uniform":
        return np.log(rng.uniform(0.88, 1.12, shape)) if shape else math.log(rng.uniform(0.88, 1.12))
    if model == "heavy":
        return float(rng.standard_t(2) * noise / 2)
    return float(rng.normal(0, noise / 2)) if model == "lognormal" else 0.0


def sample_logs(rng: np.random.Generator, model: str, noise: float, shape: tuple) -> np.ndarray:
    """Log deviations of samples around their run under a noise model."""
    if model == "uniform":
        return rng.normal(0, 0.01 / 2, shape)
    if model == "heavy":
        return rng.standard_t(3, shape) * noise
    return rng.normal(0, noise, shape)


def _run(rng: np.random.Generator, truth: np.ndarray, sizes: np.ndarray, noise: float, columns: dict,
         mixed: tuple[int, float, float] | None = None, model: str = "lognormal",
         shared: float = 0.0) -> list[dict]:
    """One run: a run offset (`run_offset`, plus a repetition's `shared` offset), n samples per size
    around it (`sample_logs`), kept as the kernel keeps them. mixed = (size index, low, high): that
    size's samples are low or high, high with a chance drawn per run (0.2 to 0.8)."""
    n = int(rng.integers(5, 22))
    offset_log = shared + run_offset(rng, model, noise, (len(sizes), 1) if model == "uniform" else ())
    samples = truth[:, None] * np.exp(offset_log + sample_logs(rng, model, noise, (len(sizes), n)))
    if mixed:
        u, low, high = mixed
        pick = rng.random(n) < rng.uniform(0.2, 0.8)
        samples[u] = np.where(pick, high, low) * np.exp(offset_log + rng.normal(0, noise, n))
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


# ================================================================== 3. the job model
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

# The columns each benchmark's kernel writes, as docs/INTERFACES.md documents them.
COLUMNS = {name: ",".join(contract_columns(b.launch.kernel)) for name, b in registry.all_benches().items()}


def _arg(job: grid.Job, name: str, default: str | None = None) -> str | None:
    for a in job.kernel_args:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def _node_of(topo: Topology, cpu: int) -> int:
    return next(n.id for n in topo.nodes if cpu in n.cpus)


def _distance(topo: Topology, a: int, b: int) -> int:
    ids = topo.node_ids()
    return topo.distances[ids.index(a)][ids.index(b)]


def _l3_group(topo: Topology, cpu: int) -> int:
    return next((i for i, g in enumerate(topo.l3_groups) if cpu in g), -1)


def _fractions(topo: Topology, nodes: list[int], weights: list[int] | None = None) -> str:
    weights = weights or [1] * len(nodes)
    total = sum(weights)
    share = {n: w / total for n, w in zip(nodes, weights)}
    return ",".join(f"{n}:{share.get(n, 0.0):.4f}" for n in topo.node_ids())


def _mem_nodes(topo: Topology, spec: str, cpu_node: int) -> tuple[str, list[int], list[int] | None]:
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


def _jitter(rng: random.Random) -> float:
    return 1.0 + rng.uniform(-JITTER, JITTER)


def latency_ns(topo: Topology, cpu: int, mem_nodes: list[int], size: int, sharing: int, pages: str = "4k") -> float:
    walk = TLB_FACTOR if pages == "4k" and size > TLB_REACH else 1.0
    for name, ns in ((1, L1_NS), (2, L2_NS), (3, L3_NS)):
        cache = next((c for c in topo.caches if c.level == name and c.type in ("Data", "Unified")), None)
        # the ranks sharing an L3 group share its capacity too
        if cache and size * (sharing if name == 3 else 1) <= cache.size_bytes:
            return ns * walk
    dist = sum(_distance(topo, _node_of(topo, cpu), m) for m in mem_nodes) / len(mem_nodes)
    return DRAM_NS * dist / 10 * (1 + CONTENTION * (sharing - 1)) * walk


def _latency_rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    serial = "--serial" in job.kernel_args
    sizes = parse_sizes(_arg(job, "size"))
    groups = [_l3_group(topo, p.cpu) for p in job.placements]
    rows = []
    for p in job.placements:
        sharing = 1 if serial else groups.count(_l3_group(topo, p.cpu))
        for size in sizes:
            v = latency_ns(topo, p.cpu, p.mem_nodes, size, sharing, _arg(job, "pages", "4k")) * _jitter(rng)
            rows.append({"rank": p.rank, "ranks": len(job.placements), "mode": "serial" if serial else "concurrent",
                         "host": HOST, "cpu": p.cpu, "cpu_node": p.cpu_node, "l3_group": _l3_group(topo, p.cpu),
                         "policy": p.policy, "mem_nodes": ",".join(map(str, p.mem_nodes)),
                         "weights": ",".join(map(str, p.weights or [])), "page_size": _arg(job, "pages", "4k"),
                         "size_bytes": size, "latency_ns_median": round(v, 3), "latency_ns_min": round(v * 0.99, 3),
                         "latency_ns_max": round(v * 1.01, 3), "samples": 5, "loads": 1000000,
                         "page_fractions": _fractions(topo, p.mem_nodes, p.weights),
                         "sample_s": 0.05, "spread_pct": 2.0, "first_touch_s": round(size / FIRST_TOUCH_B_S, 6),
                         "cycle_build_s": round(size / CYCLE_BUILD_B_S, 6), "on_cpu_pct": 100.0,
                         "retaken": 0})
    return rows


def _bandwidth_rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    cpu_node = _node_of(topo, job.cpus[0])
    policy, nodes, weights = _mem_nodes(topo, job.memory, cpu_node)
    array = parse_size(_arg(job, "array-size", "64MiB").replace("iB", ""))
    dist = sum(_distance(topo, cpu_node, m) for m in nodes) / len(nodes)
    best = min(job.threads * THREAD_MB_S, NODE_MB_S * len(nodes)) * 10 / dist
    rows = []
    for kernel in _arg(job, "kernels", "copy,scale,add,triad").split(","):
        arrays = 3 if kernel in ("add", "triad") else (1 if kernel in ("read", "write") else 2)
        b = best * _jitter(rng)
        rows.append({"kernel": kernel, "pattern": _arg(job, "pattern", "sequential"), "stride": 1,
                     "threads": job.threads, "cpus": ",".join(map(str, job.cpus)), "cpu_nodes": str(cpu_node),
                     "policy": policy, "mem_nodes": ",".join(map(str, nodes)),
                     "weights": ",".join(map(str, weights or [])), "page_size": _arg(job, "pages", "4k"),
                     "array_bytes": array, "bytes_per_iter": arrays * array, "best_mb_s": round(b, 1),
                     "avg_mb_s": round(b * 0.97, 1), "min_mb_s": round(b * 0.95, 1), "ntimes": 10,
                     "validation": "pass", "page_fractions": _fractions(topo, nodes, weights), "host": HOST,
                     "stores": "regular", "bytes_per_element": 8,
                     "first_touch_s": round(arrays * array / FIRST_TOUCH_B_S, 6),
                     "timer_ticks": round(arrays * array / (b * 1e6) * 1e9), "variant": "loop", "on_cpu_pct": 100.0})
    return rows


def _copy_rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    src, dst, cpu = int(_arg(job, "src")), int(_arg(job, "dst")), int(_arg(job, "cpu-node"))
    gb = COPY_GB_S * min(job.threads, 4) * 10 / _distance(topo, src, dst) * _jitter(rng)
    return [{"src_node": src, "dst_node": dst, "cpu_node": cpu, "threads": job.threads,
             "bytes": parse_size(_arg(job, "size").replace("iB", "")), "best_gb_s": round(gb, 3),
             "avg_gb_s": round(gb * 0.95, 3), "min_gb_s": round(gb * 0.9, 3), "ntimes": 10, "validation": "pass",
             "src_page_fractions": _fractions(topo, [src]), "dst_page_fractions": _fractions(topo, [dst]),
             "host": HOST, "on_cpu_pct": 100.0}]


def _gpu_rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    cpu_node = _node_of(topo, job.cpus[0]) if job.cpus else 0
    policy, nodes, weights = _mem_nodes(topo, job.memory, cpu_node)
    rows = []
    for gpu in topo.gpus[: job.gpus]:
        gpu_node = gpu.node if gpu.node is not None else 0
        dist = sum(_distance(topo, m, gpu_node) for m in nodes) / len(nodes)
        for size in parse_sizes(_arg(job, "sizes")):
            bw = LINK_GIB_S / job.gpus * size / (size + HALF_SIZE) * 10 / dist * _jitter(rng)
            rows.append({"ngpus": job.gpus, "numa_nodes": ",".join(map(str, nodes)),
                         "numa_weight": ",".join(map(str, weights or [])), "access_size(bytes)": size,
                         "read_latency(ms)": size / (bw * 2**30) * 1000, "read_bw(gib/s)": bw,
                         "write_latency(ms)": size / (0.9 * bw * 2**30) * 1000, "write_bw(gib/s)": 0.9 * bw,
                         "gpu": gpu.id, "gpu_node": gpu_node, "pinned": int(_arg(job, "pin_memory", "1")),
                         "policy": policy, "page_fractions": _fractions(topo, nodes, weights), "host": HOST,
                         "bidir_read_bw(gib/s)": BIDIR * bw, "bidir_write_bw(gib/s)": BIDIR * 0.9 * bw,
                         "on_cpu_pct": 100.0})
    return rows


def _loaded_rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    chase, mem = int(_arg(job, "chase-cpu")), int(_arg(job, "mem-nodes"))
    threads = int(_arg(job, "load-threads"))
    load_cpus = [c for c in job.cpus if c != chase][:threads]
    size = parse_size(_arg(job, "size").replace("iB", ""))
    idle = latency_ns(topo, chase, [mem], size, 1)
    rows = []
    for traffic in _arg(job, "traffic").split(","):
        for delay in _arg(job, "delay").split(","):
            d = -1 if delay == "idle" else int(delay)
            mb_s = 0.0 if d < 0 else min(threads * THREAD_MB_S, NODE_MB_S) / (1 + d / 1000)
            v = idle * (1 + 3 * (mb_s / NODE_MB_S) ** 4) * _jitter(rng)
            rows.append({"traffic": traffic, "delay": d, "chase_cpu": chase, "chase_node": _node_of(topo, chase),
                         "chase_l3_group": _l3_group(topo, chase), "load_threads": threads,
                         "load_cpus": ",".join(map(str, load_cpus)),
                         "load_cpu_nodes": ",".join(str(_node_of(topo, c)) for c in load_cpus),
                         "load_l3_groups": ",".join(str(_l3_group(topo, c)) for c in load_cpus),
                         "strategy": _arg(job, "strategy"), "policy": "bind", "mem_nodes": str(mem), "weights": "",
                         "page_size": "4k", "size_bytes": size, "load_bytes": size, "latency_ns_median": round(v, 3),
                         "latency_ns_min": round(v * 0.99, 3), "latency_ns_max": round(v * 1.01, 3), "spread_pct": 2.0,
                         "samples": 5, "loads": 1000000, "load_gb_s": round(mb_s / 1000, 3), "elapsed_s": 0.5,
                         "chase_on_cpu_pct": 100.0, "chase_retaken": 0,
                         "chase_page_fractions": _fractions(topo, [mem]),
                         "load_page_fractions": _fractions(topo, [mem]), "host": HOST, "load_on_cpu_pct": 100.0})
    return rows


def _c2c_rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    line = int(_arg(job, "mem-nodes"))
    rows = []
    cpus = sorted(job.cpus)
    for i, a in enumerate(cpus):
        for b in cpus[i + 1:]:
            na, nb = _node_of(topo, a), _node_of(topo, b)
            if na != nb:
                ns = C2C_NODE_NS * _distance(topo, na, nb) / 10
            else:
                ns = C2C_L3_NS if _l3_group(topo, a) == _l3_group(topo, b) else C2C_NODE_NS
            ns *= _jitter(rng)
            rows.append({"cpu_a": a, "cpu_b": b, "node_a": na, "node_b": nb, "l3_group_a": _l3_group(topo, a),
                         "l3_group_b": _l3_group(topo, b), "policy": "bind", "mem_nodes": str(line),
                         "line_node": line, "line_page_fractions": _fractions(topo, [line]),
                         "round_trip_ns_median": round(ns, 3), "round_trip_ns_min": round(ns * 0.98, 3),
                         "round_trip_ns_max": round(ns * 1.02, 3), "one_way_ns": round(ns / 2, 3), "samples": 5,
                         "round_trips": int(_arg(job, "round-trips")), "host": HOST, "on_cpu_pct": 100.0})
    return rows


def _mix_rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    nodes = [int(n) for n in _arg(job, "cpu-nodes").split(",")]
    threads = int(_arg(job, "threads"))
    size = parse_size((_arg(job, "size") or "64MiB").replace("iB", ""))
    if "--matrix" in job.kernel_args:
        cells = [([n], m, "bind") for n in nodes for m in topo.node_ids()]
    else:
        spec = job.grid["memory_spec"]
        policy, mem, _ = _mem_nodes(topo, spec, nodes[0])
        cells = [(nodes, mem[0], "local" if spec == "local" else policy)]
    rows = []
    for cpu_nodes, mem, memory in cells:
        cpus = [c for n in cpu_nodes for c in topo.free_cores(n)][:threads]
        dist = sum(_distance(topo, n, mem) for n in cpu_nodes) / len(cpu_nodes)
        for traffic in _arg(job, "traffic").split(","):
            gb = min(threads * THREAD_MB_S, NODE_MB_S) / 1000 * 10 / dist * _jitter(rng)
            rows.append({"traffic": traffic, "threads": threads, "cpus": ",".join(map(str, cpus)),
                         "cpu_nodes": ",".join(str(_node_of(topo, c)) for c in cpus),
                         "l3_groups": ",".join(str(_l3_group(topo, c)) for c in cpus), "strategy": _arg(job, "strategy"),
                         "memory": memory, "mem_nodes": str(mem), "weights": "", "page_size": "4k",
                         "size_bytes": size, "gb_s_median": round(gb, 3), "gb_s_min": round(gb * 0.97, 3),
                         "gb_s_max": round(gb * 1.01, 3), "samples": 5, "sample_s": 0.2,
                         "page_fractions": _fractions(topo, [mem]), "host": HOST, "on_cpu_pct": 100.0})
    return rows


# The rows of each registered benchmark (tests/unit/test_registry.py fails on one without).
ROWS = {"latency": _latency_rows, "bandwidth": _bandwidth_rows, "copy": _copy_rows, "gpu_xfer": _gpu_rows,
        "loaded_latency": _loaded_rows, "c2c": _c2c_rows, "mix_bandwidth": _mix_rows}


def _csv(rows: list[dict], bench: str) -> str:
    cols = COLUMNS[bench].split(",")
    def cell(v: object) -> str:
        text = f"{v:.6g}" if isinstance(v, float) else str(v)
        return f'"{text}"' if re.search(r'[,"]', text) else text
    return "\n".join([",".join(cols)] + [",".join(cell(r[c]) for c in cols) for r in rows]) + "\n"


def write_job(job: grid.Job, topo: Topology, folder: Path) -> Path:
    """`<folder>/<bench>/<id>.csv` and `.json` for one job; returns the CSV's path."""
    rng = random.Random(job.id)
    rows = ROWS[job.bench](job, topo, rng)
    # a fleet campaign's copy of a job ran on its node (numasweep.planning.fleet): that node is its host
    host = job.grid.get(fleet.NODE_COLUMN) or HOST
    for r in rows:
        r["host"] = host
    out = folder / job.bench
    out.mkdir(parents=True, exist_ok=True)
    csv = out / f"{job.id}.csv"
    csv.write_text(_csv(rows, job.bench))
    command = f"{job.kernel} {' '.join(job.kernel_args)} --csv={csv.name}"
    record = {"job_id": job.id, "bench": job.bench, "grid": job.grid, "command": command,
              "argv": command.split(), "host": host, "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:01:00Z",
              "slurm_job_id": None, "environment": {}, "kernel": {"path": f"build/bin/{job.kernel}"},
              "kernel_commit": "model", "repo_commit": None, "topology": topo.system,
              "topology_digest": topo.digest(), "csv": str(csv), "csv_sha256": None}
    csv.with_suffix(".json").write_text(json.dumps(record, indent=1))
    return csv


def write_campaign(plan: grid.Plan, topo: Topology, folder: Path) -> list[Path]:
    """Every job of a plan, plus `topology.json`, under `folder` (results/<system>)."""
    write_folder(folder, topo, {})
    return [write_job(job, topo, folder) for job in plan.jobs]


def workstation() -> Topology:
    """One node of 8 cores (a desktop part): L1d 32 KiB and L2 1 MiB per core, one 32 MiB L3."""
    cores = list(range(8))
    return Topology.from_dict({
        "system": "desk", "source": "arch:tests", "cpu_model": "Model CPU 8-Core", "threads_per_core": 1,
        "nodes": [{"id": 0, "cpus": cores, "memory_bytes": 32 << 30}], "distances": [[10]],
        "caches": [{"level": 1, "type": "Data", "size_bytes": 32 * KiB, "instances": [[c] for c in cores]},
                   {"level": 2, "type": "Unified", "size_bytes": MiB, "instances": [[c] for c in cores]},
                   {"level": 3, "type": "Unified", "size_bytes": 32 * MiB, "instances": [cores]}],
        "l3_groups": [cores], "smt_siblings": [[c] for c in cores]})


def write_default_sweep(folder: Path, topo: Topology | None = None) -> Path:
    """The jobs config/config.yaml plans on `topo` (the `workstation` by default), each job's CSV
    and the tables aggregated from them as the workflow aggregates them, under `folder`."""
    return write_sweep(folder, grid.DEFAULT_CONFIG, topo or workstation())


def write_sweep(folder: Path, config: Path, topo: Topology) -> Path:
    """The jobs the config file `config` plans on `topo`, each job's CSV and the tables aggregated
    from them as the workflow aggregates them, under `folder`."""
    plan = grid.expand(grid.load_config_file(config), topo)
    csvs = write_campaign(plan, topo, folder)
    write_folder(folder, None, {bench: aggregate.aggregate([c for c in csvs if c.parent.name == bench], bench)[0]
                                for bench in plan.benches()})
    return folder


# ================================================================== 4. loaded latency and core to core
MLC_SEED = 11


def loaded_latency_frame(knee: float | None = 20.0) -> pd.DataFrame:
    """Loaded latency: 100 ns idle, +2 ns per GB/s of load up to a knee at `knee` GB/s (none: flat),
    +40 ns per GB/s beyond; each point's median scaled by a log-normal factor (sigma 1 %),
    min/max at +-2 %."""
    rng = np.random.default_rng(MLC_SEED)
    rows = []
    for delay, load in [(-1, 0.0)] + [(1000 // (i + 1), 2.0 * (i + 1)) for i in range(15)]:
        ns = 100.0 if knee is None else 100 + 2 * min(load, knee) + 40 * max(0.0, load - knee)
        ns *= float(np.exp(rng.normal(0, 0.01)))
        rows.append({"traffic": "read", "delay": delay, "chase_cpu": 0, "chase_node": 0, "mem_nodes": "1",
                     "strategy": "sequential", "load_threads": 3, "page_size": "4k", "latency_ns_median": ns,
                     "latency_ns_min": ns * 0.98, "latency_ns_max": ns * 1.02, "samples": 5, "load_gb_s": load})
    return pd.DataFrame(rows)


def c2c_frame() -> pd.DataFrame:
    """Core to core: 8 CPUs, 2 nodes x 2 L3 groups x 2 CPUs; round trips 50 ns inside an L3 group,
    100 ns across groups of a node, 180 ns across nodes (sigma 3 %)."""
    rng = np.random.default_rng(MLC_SEED)
    rows = []
    for a in range(8):
        for b in range(a + 1, 8):
            node_a, node_b, l3_a, l3_b = a // 4, b // 4, a // 2, b // 2
            ns = 50.0 if l3_a == l3_b else (100.0 if node_a == node_b else 180.0)
            ns *= float(np.exp(rng.normal(0, 0.03)))
            rows.append({"cpu_a": a, "cpu_b": b, "node_a": node_a, "node_b": node_b, "l3_group_a": l3_a,
                         "l3_group_b": l3_b, "mem_nodes": "0", "round_trip_ns_median": ns})
    return pd.DataFrame(rows)
