"""`numa_bandwidth` (benchmark `bandwidth`): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

import random

from helpers.jobmodel import FIRST_TOUCH_B_S, HOST, NODE_MB_S, THREAD_MB_S, arg, distance, fractions, jitter, mem_nodes, node_of
from numasweep.core.topology import Topology
from numasweep.core.units import parse_size
from numasweep.planning import grid

KERNEL = "numa_bandwidth"
BENCH = "bandwidth"


def rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    """The job model (tests/helpers/jobmodel.py): per thread THREAD_MB_S, capped at NODE_MB_S per memory node,
    x 10/distance."""
    cpu_node = node_of(topo, job.cpus[0])
    policy, nodes, weights = mem_nodes(topo, job.memory, cpu_node)
    array = parse_size(arg(job, "array-size", "64MiB").replace("iB", ""))
    dist = sum(distance(topo, cpu_node, m) for m in nodes) / len(nodes)
    best = min(job.threads * THREAD_MB_S, NODE_MB_S * len(nodes)) * 10 / dist
    rows = []
    for kernel in arg(job, "kernels", "copy,scale,add,triad").split(","):
        arrays = 3 if kernel in ("add", "triad") else (1 if kernel in ("read", "write") else 2)
        b = best * jitter(rng)
        rows.append({"kernel": kernel, "pattern": arg(job, "pattern", "sequential"), "stride": 1,
                     "threads": job.threads, "cpus": ",".join(map(str, job.cpus)), "cpu_nodes": str(cpu_node),
                     "policy": policy, "mem_nodes": ",".join(map(str, nodes)),
                     "weights": ",".join(map(str, weights or [])), "page_size": arg(job, "pages", "4k"),
                     "array_bytes": array, "bytes_per_iter": arrays * array, "best_mb_s": round(b, 1),
                     "avg_mb_s": round(b * 0.97, 1), "min_mb_s": round(b * 0.95, 1), "ntimes": 10,
                     "validation": "pass", "page_fractions": fractions(topo, nodes, weights), "host": HOST,
                     "stores": "regular", "bytes_per_element": 8,
                     "first_touch_s": round(arrays * array / FIRST_TOUCH_B_S, 6),
                     "timer_ticks": round(arrays * array / (b * 1e6) * 1e9), "variant": "loop", "on_cpu_pct": 100.0,
                     "shape_choice": "the fastest of one timed run of each shape (--variant=auto)"})
    return rows


# Its small test sizes under the sanitizers (tests/kernels/test_sanitize.py): test id -> arguments.
SANITIZED = {
    "bandwidth": ["--array-size=1M", "--ntimes=2", "--pattern=sequential,strided,random", "--quiet"],
    "bandwidth-shapes": ["--array-size=1025K", "--ntimes=2", "--variant=all", "--stores=regular,nt", "--threads=3", "--quiet"],
}

# Bad invocations it refuses in one line `<kernel>: error: ...` (tests/catalogue/test_catalogue.py).
BAD_ARGS = ["--bogus", "--threads=x", "--threads=0", "--size=abc", "--size=0", "--ntimes=x"]

# A small job table (header and two rows) its aggregation accepts; the catalogue spoils one
# cell of it per case (tests/catalogue/test_catalogue.py).
GOOD = "kernel,threads,best_mb_s,validation\ntriad,1,9000.5,ok\ntriad,2,15000.2,ok\n"
