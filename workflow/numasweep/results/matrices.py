"""The measured node-to-node matrices of a results folder: each benchmark that has one
(`Bench.matrix`) turns its aggregated table into a matrix of CPU node (rows) by memory node
(columns) of the quantity it measures (`Bench.matrix_of`: latency_ns, bandwidth_mb_s).

The firmware comparison, the recommended weighted-interleave weights and the hwloc export all
read these, so they agree on which cell is which number.
"""

from __future__ import annotations

import pandas as pd

from numasweep.core import registry


def measured(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """quantity -> matrix, for the benchmarks present in `tables` (bench name -> aggregated
    table) whose table holds at least one single-node cell."""
    out: dict[str, pd.DataFrame] = {}
    for bench in registry.all_benches().values():
        if bench.matrix is None or bench.name not in tables or bench.matrix_of in out:
            continue
        matrix = bench.matrix(tables[bench.name])
        if matrix is not None and matrix.size:
            out[bench.matrix_of] = matrix
    return out


def cells(matrix: pd.DataFrame) -> dict[tuple[int, int], float]:
    """(cpu node, memory node) -> value over the cells measured."""
    return {(int(cpu), int(mem)): float(v) for (cpu, mem), v in matrix.stack().dropna().items()}
