"""`numa_c2c` (benchmark `c2c`): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

import random

from helpers.jobmodel import C2C_L3_NS, C2C_NODE_NS, HOST, arg, distance, fractions, jitter, l3_group, node_of
from numasweep.core.topology import Topology
from numasweep.planning import grid

KERNEL = "numa_c2c"
BENCH = "c2c"


def rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    """The job model (tests/helpers/jobmodel.py): C2C_L3_NS inside an L3 group, C2C_NODE_NS across groups
    of a node, and C2C_NODE_NS x distance/10 across nodes."""
    line = int(arg(job, "mem-nodes"))
    rows = []
    cpus = sorted(job.cpus)
    for i, a in enumerate(cpus):
        for b in cpus[i + 1:]:
            na, nb = node_of(topo, a), node_of(topo, b)
            if na != nb:
                ns = C2C_NODE_NS * distance(topo, na, nb) / 10
            else:
                ns = C2C_L3_NS if l3_group(topo, a) == l3_group(topo, b) else C2C_NODE_NS
            ns *= jitter(rng)
            rows.append({"cpu_a": a, "cpu_b": b, "node_a": na, "node_b": nb, "l3_group_a": l3_group(topo, a),
                         "l3_group_b": l3_group(topo, b), "policy": "bind", "mem_nodes": str(line),
                         "line_node": line, "line_page_fractions": fractions(topo, [line]),
                         "round_trip_ns_median": round(ns, 3), "round_trip_ns_min": round(ns * 0.98, 3),
                         "round_trip_ns_max": round(ns * 1.02, 3), "one_way_ns": round(ns / 2, 3), "samples": 5,
                         "round_trips": int(arg(job, "round-trips")), "host": HOST, "on_cpu_pct": 100.0})
    return rows


# Its small test sizes under the sanitizers (tests/kernels/test_sanitize.py): test id -> arguments.
SANITIZED = {
    "c2c": ["--samples=2", "--min-time=0.002", "--round-trips=100", "--quiet"],
}

# Bad invocations it refuses in one line `<kernel>: error: ...` (tests/catalogue/test_catalogue.py).
BAD_ARGS = ["--bogus", "--cpus=x", "--pairs=0", "--round-trips=x", "--samples=0"]

# Bad option values whose line names the value and what is allowed: (arguments, what the line says).
OPTION_CASES = [
    ("--cpus=0-4095", "outside the CPUs this process may use"),
]

# A small job table (header and two rows) its aggregation accepts; the catalogue spoils one
# cell of it per case (tests/catalogue/test_catalogue.py).
GOOD = "cpu_a,cpu_b,round_trip_ns_median\n0,1,60.5\n0,2,150.2\n"
