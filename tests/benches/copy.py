"""`numa_copy` (benchmark `copy`): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

import random

from helpers.jobmodel import COPY_GB_S, HOST, arg, distance, fractions, jitter
from numasweep.core.topology import Topology
from numasweep.core.units import parse_size
from numasweep.planning import grid

KERNEL = "numa_copy"
BENCH = "copy"


def rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    """The job model (tests/helpers/jobmodel.py): COPY_GB_S x 10/distance(src, dst), threads add linearly
    up to 4."""
    src, dst, cpu = int(arg(job, "src")), int(arg(job, "dst")), int(arg(job, "cpu-node"))
    gb = COPY_GB_S * min(job.threads, 4) * 10 / distance(topo, src, dst) * jitter(rng)
    return [{"src_node": src, "dst_node": dst, "cpu_node": cpu, "threads": job.threads,
             "bytes": parse_size(arg(job, "size").replace("iB", "")), "best_gb_s": round(gb, 3),
             "avg_gb_s": round(gb * 0.95, 3), "min_gb_s": round(gb * 0.9, 3), "ntimes": 10, "validation": "pass",
             "src_page_fractions": fractions(topo, [src]), "dst_page_fractions": fractions(topo, [dst]),
             "host": HOST, "on_cpu_pct": 100.0}]


# Its small test sizes under the sanitizers (tests/kernels/test_sanitize.py): test id -> arguments.
SANITIZED = {
    "copy": ["--src=0", "--dst=0", "--size=1M", "--ntimes=2", "--quiet"],
    "copy-matrix": ["--matrix", "--size=1M", "--ntimes=2", "--quiet"],
}

# Bad invocations it refuses in one line `<kernel>: error: ...` (tests/catalogue/test_catalogue.py).
BAD_ARGS = ["--bogus", "--size=abc", "--size=0", "--src=x", "--dst=x", "--threads=x"]

# A small job table (header and two rows) its aggregation accepts; the catalogue spoils one
# cell of it per case (tests/catalogue/test_catalogue.py).
# it places its memory with --src/--dst, not --policy/--mem-nodes
PLACE_ARGS = ["--src=0", "--dst=62", "--cpu-node=63"]
GOOD = "src_node,dst_node,bytes,best_gb_s\n0,0,67108864,9.5\n0,1,67108864,7.5\n"
