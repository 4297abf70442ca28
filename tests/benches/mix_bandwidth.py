"""`numa_mix_bandwidth` (benchmark `mix_bandwidth`): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

import random

from helpers.jobmodel import HOST, NODE_MB_S, THREAD_MB_S, arg, distance, fractions, jitter, l3_group, mem_nodes, node_of
from numasweep.core.topology import Topology
from numasweep.core.units import parse_size
from numasweep.planning import grid

KERNEL = "numa_mix_bandwidth"
BENCH = "mix_bandwidth"


def rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    """The job model (tests/helpers/jobmodel.py): like bandwidth, per thread and memory node, for every
    traffic kind."""
    nodes = [int(n) for n in arg(job, "cpu-nodes").split(",")]
    threads = int(arg(job, "threads"))
    size = parse_size((arg(job, "size") or "64MiB").replace("iB", ""))
    if "--matrix" in job.kernel_args:
        cells = [([n], m, "bind") for n in nodes for m in topo.node_ids()]
    else:
        spec = job.grid["memory_spec"]
        policy, mem, _ = mem_nodes(topo, spec, nodes[0])
        cells = [(nodes, mem[0], "local" if spec == "local" else policy)]
    rows = []
    for cpu_nodes, mem, memory in cells:
        cpus = [c for n in cpu_nodes for c in topo.free_cores(n)][:threads]
        dist = sum(distance(topo, n, mem) for n in cpu_nodes) / len(cpu_nodes)
        for traffic in arg(job, "traffic").split(","):
            gb = min(threads * THREAD_MB_S, NODE_MB_S) / 1000 * 10 / dist * jitter(rng)
            rows.append({"traffic": traffic, "threads": threads, "cpus": ",".join(map(str, cpus)),
                         "cpu_nodes": ",".join(str(node_of(topo, c)) for c in cpus),
                         "l3_groups": ",".join(str(l3_group(topo, c)) for c in cpus), "strategy": arg(job, "strategy"),
                         "memory": memory, "mem_nodes": str(mem), "weights": "", "page_size": "4k",
                         "size_bytes": size, "gb_s_median": round(gb, 3), "gb_s_min": round(gb * 0.97, 3),
                         "gb_s_max": round(gb * 1.01, 3), "samples": 5, "sample_s": 0.2,
                         "page_fractions": fractions(topo, [mem]), "host": HOST, "on_cpu_pct": 100.0})
    return rows


# The rows of each registered benchmark (tests/unit/test_registry.py fails on one without).

# Its small test sizes under the sanitizers (tests/kernels/test_sanitize.py): test id -> arguments.
SANITIZED = {
    "mix-bandwidth": ["--size=1M", "--samples=2", "--min-time=0.01", "--local-memory", "--quiet"],
    "mix-bandwidth-matrix": ["--size=1M", "--samples=1", "--min-time=0.01", "--matrix", "--traffic=triad", "--quiet"],
}

# Bad invocations it refuses in one line `<kernel>: error: ...` (tests/catalogue/test_catalogue.py).
BAD_ARGS = ["--bogus", "--threads=0", "--size=abc", "--min-time=x"]

# Bad option values whose line names the value and what is allowed: (arguments, what the line says).
OPTION_CASES = [
    ("--traffic=copy", "unknown traffic 'copy'"),
    ("--cpus=0-4095", "outside the CPUs this process may use"),
    ("--cpu-nodes=200", "node 200 is not an online node"),
    ("--matrix --local-memory", "--matrix chooses the CPUs by node"),
]

# A small job table (header and two rows) its aggregation accepts; the catalogue spoils one
# cell of it per case (tests/catalogue/test_catalogue.py).
GOOD = "traffic,threads,gb_s_median\nread,1,12.5\nr1w1,1,10.5\n"
