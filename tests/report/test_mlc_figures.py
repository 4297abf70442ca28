"""Figures of the loaded-latency, core-to-core and mixed-bandwidth kernels from the model tables
of tests/analysis/test_mlc_findings.py: each is written, and the core-to-core heatmap puts the
CPUs in node and L3-group order with every pair's value on both sides of the diagonal."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from test_mlc_findings import _c2c, _loaded  # noqa: E402

from numasweep import mlc_figures  # noqa: E402


def test_loaded_latency_figure_written(tmp_path: Path) -> None:
    paths = mlc_figures.plot_loaded_latency(_loaded(), tmp_path)
    assert sorted(p.name for p in paths) == ["loaded_latency--cpu0-mem1.png", "loaded_latency--cpu0-mem1.svg"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_c2c_matrix_in_topology_order_and_symmetric(tmp_path: Path) -> None:
    table = _c2c().sample(frac=1.0, random_state=3)  # row order must not matter
    matrix, cpus = mlc_figures.c2c_matrix(table)
    assert [c for c, _, _ in cpus] == list(range(8)) and [n for _, n, _ in cpus] == [0] * 4 + [1] * 4
    values = matrix.to_numpy(float)
    off = ~np.eye(8, dtype=bool)
    assert np.isfinite(values[off]).all() and np.allclose(values, values.T, equal_nan=True)
    assert len(mlc_figures.plot_c2c(table, tmp_path)) == 2


def test_mix_matrix_one_panel_per_traffic_kind(tmp_path: Path) -> None:
    rows = [{"traffic": t, "cpu_nodes": str(c), "mem_nodes": str(m), "gb_s_median": 10.0 + c + m}
            for t in ("read", "r1w1") for c in range(2) for m in range(2)]
    paths = mlc_figures.plot_mix_matrix(pd.DataFrame(rows), tmp_path)
    assert [p.name for p in paths] == ["mix_bandwidth_matrix--all.png", "mix_bandwidth_matrix--all.svg"]
