"""The measured node-to-node matrices of a results folder: each benchmark that has one
(`Bench.tables.matrix`) turns its aggregated table into samples (one row per rank or job: cpu_node,
memory_node, value) of the quantity it measures (`Bench.tables.matrix_of`: latency_ns,
bandwidth_mb_s); their median per cell is the matrix, CPU node (rows) by memory node (columns).

The firmware comparison, the recommended weighted-interleave weights and the hwloc export all
read these, so they agree on which cell is which number.
"""

from __future__ import annotations

import pandas as pd

from numasweep.core import registry
from numasweep.core.topology import Topology


def samples(tables: dict[str, pd.DataFrame], topology: Topology | None = None) -> dict[str, pd.DataFrame]:
    """quantity -> samples, for the benchmarks present in `tables` (bench name -> aggregated
    table) whose table holds at least one single-node cell, read as the benchmark reads its
    values on `topology` (latency: on the plateaus its curves show)."""
    out: dict[str, pd.DataFrame] = {}
    for bench in registry.all_benches().values():
        if bench.tables.matrix is None or bench.name not in tables or bench.tables.matrix_of in out:
            continue
        rows = bench.tables.matrix(tables[bench.name], topology)
        if len(rows):
            out[bench.tables.matrix_of] = rows
    return out


def matrix(rows: pd.DataFrame) -> pd.DataFrame | None:
    """The median of the samples per cell, CPU node (rows) by memory node (columns)."""
    if not len(rows):
        return None
    return rows.pivot_table(index="cpu_node", columns="memory_node", values="value", aggfunc="median")


def measured(tables: dict[str, pd.DataFrame], topology: Topology | None = None) -> dict[str, pd.DataFrame]:
    """quantity -> matrix (`samples`, then `matrix`)."""
    return {quantity: matrix(rows) for quantity, rows in samples(tables, topology).items()}


def sources(tables: dict[str, pd.DataFrame], topology: Topology | None = None) -> dict[str, str]:
    """quantity -> what its cells are, in words (the series and the statistic each benchmark's
    samples say they took, `attrs["source"]`), for the benchmarks that say it."""
    return {quantity: rows.attrs["source"] for quantity, rows in samples(tables, topology).items()
            if rows.attrs.get("source")}


def cells(matrix: pd.DataFrame) -> dict[tuple[int, int], float]:
    """(cpu node, memory node) -> value over the cells measured."""
    return {(int(cpu), int(mem)): float(v) for (cpu, mem), v in matrix.stack().dropna().items()}
