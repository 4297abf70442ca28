"""A deterministic model of a system, writing what each planned job would leave behind.

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
import random
import re
from pathlib import Path

from numasweep import benches
from numasweep.planning import fleet, grid, placement
from numasweep.core.topology import Topology
from numasweep.core.units import parse_size, parse_sizes  # noqa: F401 (parse_sizes: also for tests)

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

INTERFACES = Path(__file__).resolve().parents[2] / "docs" / "INTERFACES.md"


def documented_columns(kernel: str) -> str:
    """The CSV header docs/INTERFACES.md gives for a kernel (`- numa_latency: `rank,...``)."""
    match = re.search(rf"^- {re.escape(kernel)}: `([^`]+)`", INTERFACES.read_text(), re.M)
    assert match, f"docs/INTERFACES.md documents no columns for {kernel}"
    return match.group(1)


# The columns each benchmark's kernel writes, as documented.
COLUMNS = {name: documented_columns(b.kernel) for name, b in benches.BENCHES.items()}


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
        return "weighted", [int(n) for n in nodes.split(",")], [int(w) for w in weights.split(",")]
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
                     "timer_ticks": round(arrays * array / (b * 1e6) * 1e9), "variant": "loop"})
    return rows


def _copy_rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    src, dst, cpu = int(_arg(job, "src")), int(_arg(job, "dst")), int(_arg(job, "cpu-node"))
    gb = COPY_GB_S * min(job.threads, 4) * 10 / _distance(topo, src, dst) * _jitter(rng)
    return [{"src_node": src, "dst_node": dst, "cpu_node": cpu, "threads": job.threads,
             "bytes": parse_size(_arg(job, "size").replace("iB", "")), "best_gb_s": round(gb, 3),
             "avg_gb_s": round(gb * 0.95, 3), "min_gb_s": round(gb * 0.9, 3), "ntimes": 10, "validation": "pass",
             "src_page_fractions": _fractions(topo, [src]), "dst_page_fractions": _fractions(topo, [dst]),
             "host": HOST}]


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
                         "bidir_read_bw(gib/s)": BIDIR * bw, "bidir_write_bw(gib/s)": BIDIR * 0.9 * bw})
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
                         "load_page_fractions": _fractions(topo, [mem]), "host": HOST})
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
                         "round_trips": int(_arg(job, "round-trips")), "host": HOST})
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
                         "page_fractions": _fractions(topo, [mem]), "host": HOST})
    return rows


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
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "topology.json").write_text(topo.to_json())
    return [write_job(job, topo, folder) for job in plan.jobs]


__all__ = ["write_job", "write_campaign", "latency_ns", "placement"]
