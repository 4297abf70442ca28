"""Small results folders in the project's own schema (docs/INTERFACES.md), built from simple
formulas so that each test knows which numbers the report may contain."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from numasweep.core.topology import Topology

MiB = 1 << 20


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


def write_results(folder: Path, benches=("latency", "bandwidth", "copy", "gpu_xfer"),
                  system: str = "twin", hypervisor: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "topology.json").write_text(topology(system, hypervisor).to_json())
    makers = {"latency": latency_frame, "bandwidth": bandwidth_frame, "copy": copy_frame,
              "gpu_xfer": gpu_frame}
    for bench in benches:
        makers[bench]().to_csv(folder / f"{bench}.csv", index=False)
    return folder
