"""`numa_latency` (benchmark `latency`): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

import random

from helpers.jobmodel import CYCLE_BUILD_B_S, FIRST_TOUCH_B_S, HOST, arg, fractions, jitter, l3_group, latency_ns
from numasweep.core.topology import Topology
from numasweep.core.units import parse_sizes
from numasweep.planning import grid

KERNEL = "numa_latency"
BENCH = "latency"


def rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    """The job model (tests/helpers/jobmodel.py): a random pointer chase costs L1_NS, L2_NS, L3_NS inside the smallest
    cache level of the rank's CPU that holds the buffer, and DRAM_NS x distance/10 beyond the
    last level (firmware distance from the CPU's node to the memory's node). In concurrent mode
    the ranks sharing an L3 group share its capacity (a buffer stays in the L3 while the buffers
    of all of them fit) and its memory path: beyond the L3 each costs CONTENTION x (ranks in its
    group - 1) more. So sequential ranks, which fill one L3 group first, slow down with fewer
    ranks per domain than interleaved ones. With 4 KiB pages a buffer larger than TLB_REACH
    (what the second-level TLB maps) also walks the page table on its loads: TLB_FACTOR x the
    latency; huge pages (`--pages=thp`, `2m`, `1g`) do not."""
    serial = "--serial" in job.kernel_args
    sizes = parse_sizes(arg(job, "size"))
    groups = [l3_group(topo, p.cpu) for p in job.placements]
    rows = []
    for p in job.placements:
        sharing = 1 if serial else groups.count(l3_group(topo, p.cpu))
        for size in sizes:
            v = latency_ns(topo, p.cpu, p.mem_nodes, size, sharing, arg(job, "pages", "4k")) * jitter(rng)
            rows.append({"rank": p.rank, "ranks": len(job.placements), "mode": "serial" if serial else "concurrent",
                         "host": HOST, "cpu": p.cpu, "cpu_node": p.cpu_node, "l3_group": l3_group(topo, p.cpu),
                         "policy": p.policy, "mem_nodes": ",".join(map(str, p.mem_nodes)),
                         "weights": ",".join(map(str, p.weights or [])), "page_size": arg(job, "pages", "4k"),
                         "size_bytes": size, "latency_ns_median": round(v, 3), "latency_ns_min": round(v * 0.99, 3),
                         "latency_ns_max": round(v * 1.01, 3), "samples": 5, "loads": 1000000,
                         "page_fractions": fractions(topo, p.mem_nodes, p.weights),
                         "sample_s": 0.05, "spread_pct": 2.0, "first_touch_s": round(size / FIRST_TOUCH_B_S, 6),
                         "cycle_build_s": round(size / CYCLE_BUILD_B_S, 6), "on_cpu_pct": 100.0,
                         "retaken": 0})
    return rows


# Its small test sizes under the sanitizers (tests/kernels/test_sanitize.py): test id -> arguments.
SANITIZED = {
    "latency-self-test": ["--self-test=4099"],
}

# Bad invocations it refuses in one line `<kernel>: error: ...` (tests/catalogue/test_catalogue.py).
BAD_ARGS = ["--bogus", "--size=abc", "--size=", "--size=-1", "--csv=", "--iterations=x"]

# A small job table (header and two rows) its aggregation accepts; the catalogue spoils one
# cell of it per case (tests/catalogue/test_catalogue.py).
GOOD = "rank,cpu,size_bytes,latency_ns_median\n0,1,1048576,90.5\n1,2,2097152,95.1\n"
