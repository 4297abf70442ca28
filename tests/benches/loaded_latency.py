"""`numa_loaded_latency` (benchmark `loaded_latency`): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

import random

from helpers.jobmodel import HOST, NODE_MB_S, THREAD_MB_S, arg, fractions, jitter, l3_group, latency_ns, node_of
from numasweep.core.topology import Topology
from numasweep.core.units import parse_size
from numasweep.planning import grid

KERNEL = "numa_loaded_latency"
BENCH = "loaded_latency"


def rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    """The job model (tests/helpers/jobmodel.py): the load moves min(threads x THREAD_MB_S, NODE_MB_S) /
    (1 + delay/1000) MB/s to the memory node; the chase costs its idle latency (as latency's) x
    (1 + 3 u^4), u the load over NODE_MB_S: flat, then a knee near the node's peak."""
    chase, mem = int(arg(job, "chase-cpu")), int(arg(job, "mem-nodes"))
    threads = int(arg(job, "load-threads"))
    load_cpus = [c for c in job.cpus if c != chase][:threads]
    size = parse_size(arg(job, "size").replace("iB", ""))
    idle = latency_ns(topo, chase, [mem], size, 1)
    rows = []
    for traffic in arg(job, "traffic").split(","):
        for delay in arg(job, "delay").split(","):
            d = -1 if delay == "idle" else int(delay)
            mb_s = 0.0 if d < 0 else min(threads * THREAD_MB_S, NODE_MB_S) / (1 + d / 1000)
            v = idle * (1 + 3 * (mb_s / NODE_MB_S) ** 4) * jitter(rng)
            rows.append({"traffic": traffic, "delay": d, "chase_cpu": chase, "chase_node": node_of(topo, chase),
                         "chase_l3_group": l3_group(topo, chase), "load_threads": threads,
                         "load_cpus": ",".join(map(str, load_cpus)),
                         "load_cpu_nodes": ",".join(str(node_of(topo, c)) for c in load_cpus),
                         "load_l3_groups": ",".join(str(l3_group(topo, c)) for c in load_cpus),
                         "strategy": arg(job, "strategy"), "policy": "bind", "mem_nodes": str(mem), "weights": "",
                         "page_size": "4k", "size_bytes": size, "load_bytes": size, "latency_ns_median": round(v, 3),
                         "latency_ns_min": round(v * 0.99, 3), "latency_ns_max": round(v * 1.01, 3), "spread_pct": 2.0,
                         "samples": 5, "loads": 1000000, "load_gb_s": round(mb_s / 1000, 3), "elapsed_s": 0.5,
                         "chase_on_cpu_pct": 100.0, "chase_retaken": 0,
                         "chase_page_fractions": fractions(topo, [mem]),
                         "load_page_fractions": fractions(topo, [mem]), "host": HOST, "load_on_cpu_pct": 100.0})
    return rows


# Its small test sizes under the sanitizers (tests/kernels/test_sanitize.py): test id -> arguments.
SANITIZED = {
    "loaded-latency": ["--size=1M", "--load-size=1M", "--delay=idle,100,0", "--traffic=read,r3w1,r2w1,r1w1,triad", "--samples=2", "--min-time=0.005", "--quiet"],
}

# Bad invocations it refuses in one line `<kernel>: error: ...` (tests/catalogue/test_catalogue.py).
BAD_ARGS = ["--bogus", "--delay=fast", "--size=abc"]

# Bad option values whose line names the value and what is allowed: (arguments, what the line says).
OPTION_CASES = [
    ("--delay=-1", "outside 0..100000000"),
    ("--delay=100000001", "outside 0..100000000"),
    ("--traffic=write", "unknown traffic 'write'"),
    ("--load-cpus=0-4095", "outside the CPUs this process may use"),
    ("--chase-cpu=4095", "outside the CPUs this process may use"),
    ("--strategy=random", "unknown strategy 'random'"),
]

# A small job table (header and two rows) its aggregation accepts; the catalogue spoils one
# cell of it per case (tests/catalogue/test_catalogue.py).
GOOD = ("traffic,delay,chase_cpu,load_gb_s,size_bytes,latency_ns_median\n"
        "read,-1,0,0,268435456,95.5\nread,0,0,12.5,268435456,180.2\n")
