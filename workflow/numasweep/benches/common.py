"""Pieces several benchmark modules share: the columns of a latency table (latency, loaded
latency), the plan and table helpers of the kernels that pin their own threads (loaded latency,
core-to-core, mixed bandwidth). Not a benchmark: it registers none."""

from __future__ import annotations

from typing import Any

import pandas as pd
import numpy as np

from numasweep.core.errors import NumasweepError
from numasweep.core.registry import Spread
from numasweep.core.units import format_size, parse_size
from numasweep.planning import placement
from numasweep.statistics import stats

# The columns of a latency table (numa_latency, numa_loaded_latency): a curve's axis, value and
# each run's spread, the measure the latency findings hand to `statistics`.
LATENCY = stats.Measure("latency_ns_median", "latency_ns_min", "latency_ns_max", "samples", "size_bytes")

# The spread within a run a job's quality verdict reads (`core.registry.Spread`): a time per load
# 2% (numa_latency's --spread) from 256 MiB on and 5% below (--spread-small), where a sample is
# short and a cache's edge spreads it; a rate (bandwidths) 3%.
TIME_SPREAD_PCT, RATE_SPREAD_PCT = 2.0, 3.0
SMALL_BYTES, SMALL_SPREAD_PCT = 256 << 20, 5.0
LATENCY_SPREAD = Spread(LATENCY.high, LATENCY.low, LATENCY.value, TIME_SPREAD_PCT,
                        (LATENCY.axis, SMALL_BYTES, SMALL_SPREAD_PCT))

PLACED_CPUS = ("chase_cpu", "load_nodes", "load_cpus")  # where the chase and the load ran


SHARED_CPU_PCT = 90  # a chase on its CPU for less of a sample than this shared the CPU


def node_set(column: pd.Series) -> pd.Series:
    """A per-thread node list ("0,0,1,1") as the set of nodes ("0,1"); empty stays empty."""
    def one(text: object) -> str:
        nodes = {int(float(x)) for x in str(text).split(",") if x.strip() not in ("", "nan")}
        return ",".join(str(n) for n in sorted(nodes))
    return column.map(one)


def numbers(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").to_numpy(float)


def named_cpus(df: pd.DataFrame) -> list[str]:
    """The columns of PLACED_CPUS a loaded-latency finding, figure or table names: those with
    several values for one chase node and memory, not those that follow the node."""
    where = [c for c in ("chase_node", "mem_nodes") if c in df]
    return [c for c in PLACED_CPUS if c in df and where and df.groupby(where)[c].nunique().max() > 1]


def size_word(value: Any, where: str) -> str:
    try:
        return format_size(parse_size(value))
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None


def memory_args(topo: Any, spec: str, where: str) -> list[str]:
    """A memory spec of the config as the kernels' own options (`local`: each thread's node)."""
    try:
        mem = placement.parse_memory(spec)
        placement.check_memory(topo, mem)
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None
    if mem.kind == "local":
        return ["--local-memory"]
    policy = {"node": "bind", "nodes": "bind"}.get(mem.kind, mem.kind)
    args = [f"--policy={policy}", f"--mem-nodes={','.join(map(str, mem.nodes))}"]
    if mem.kind == "weighted":
        args.append(f"--weights={','.join(map(str, mem.weights or ()))}")
    return args


def free_cpus(topo: Any, nodes: list[int]) -> list[int]:
    return [c for n in nodes for c in topo.free_cores(n)]


def pair_cpu_node(topo: Any, choice: str | int, src: int, dst: int) -> int:
    """Where the threads of a node pair's job run (copy, migrate): `src`/`dst` name the pair's
    node; when it is memory-only (CXL), the other node of the pair, else the nearest node with
    CPUs (firmware distance)."""
    if isinstance(choice, int):
        return choice
    first, other = (src, dst) if choice == "src" else (dst, src)
    ids = topo.node_ids()
    row = topo.distances[ids.index(first)]
    nearest = sorted(ids, key=lambda n: row[ids.index(n)])
    return next((n for n in [first, other, *nearest] if topo.free_cores(n)), first)
