"""`gpu_xfer` (benchmark `gpu_xfer`): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

import random

from helpers.jobmodel import BIDIR, HALF_SIZE, HOST, LINK_GIB_S, arg, distance, fractions, jitter, mem_nodes, node_of
from numasweep.core.topology import Topology
from numasweep.core.units import parse_sizes
from numasweep.planning import grid

KERNEL = "gpu_xfer"
BENCH = "gpu_xfer"


def rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    """The job model (tests/helpers/jobmodel.py): the GPUs of one run share LINK_GIB_S: each reaches
    LINK_GIB_S/ngpus x size/(size + HALF_SIZE), times 10/distance from the host memory node to the
    GPU's node; device to host 0.9 of that; with both directions at once each direction gets BIDIR
    of it."""
    cpu_node = node_of(topo, job.cpus[0]) if job.cpus else 0
    policy, nodes, weights = mem_nodes(topo, job.memory, cpu_node)
    rows = []
    for gpu in topo.gpus[: job.gpus]:
        gpu_node = gpu.node if gpu.node is not None else 0
        dist = sum(distance(topo, m, gpu_node) for m in nodes) / len(nodes)
        for size in parse_sizes(arg(job, "sizes")):
            bw = LINK_GIB_S / job.gpus * size / (size + HALF_SIZE) * 10 / dist * jitter(rng)
            rows.append({"ngpus": job.gpus, "numa_nodes": ",".join(map(str, nodes)),
                         "numa_weight": ",".join(map(str, weights or [])), "access_size(bytes)": size,
                         "read_latency(ms)": size / (bw * 2**30) * 1000, "read_bw(gib/s)": bw,
                         "write_latency(ms)": size / (0.9 * bw * 2**30) * 1000, "write_bw(gib/s)": 0.9 * bw,
                         "gpu": gpu.id, "gpu_node": gpu_node, "pinned": int(arg(job, "pin_memory", "1")),
                         "policy": policy, "page_fractions": fractions(topo, nodes, weights), "host": HOST,
                         "bidir_read_bw(gib/s)": BIDIR * bw, "bidir_write_bw(gib/s)": BIDIR * 0.9 * bw,
                         "on_cpu_pct": 100.0})
    return rows

# A small job table (header and two rows) its aggregation accepts; the catalogue spoils one
# cell of it per case (tests/catalogue/test_catalogue.py).
GOOD = "ngpus,access_size(bytes),read_bw(gib/s),write_bw(gib/s)\n1,4096,10.5,11.5\n1,8192,12.5,13.5\n"
