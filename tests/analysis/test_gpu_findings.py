"""GPU findings by GPU count and by GPU, on gpu_xfer tables generated from a stated model:
bandwidth b(size) = plateau * size / (size + 256 KiB), each repetition's value scaled by a
log-normal factor (sigma 1 %). Planted: one GPU alone reaches 20 GiB/s from its own node 0 and
14 GiB/s from node 1 (ratio 1.43); two GPUs at once reach 12 GiB/s each (together 24 GiB/s,
0.6 of twice one GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numasweep.benches.gpu_xfer import figures as gpu_figures, findings as gpu_xfer



SIZES = [1 << k for k in range(12, 31, 2)]
HALF = 256 << 10


def _rows(rng, ngpus: int, gpu: int, gpu_node: int, node: int, plateau: float, reps: int) -> list[dict]:
    rows = []
    for rep in range(reps):
        for size in SIZES:
            bw = plateau * size / (size + HALF) * float(np.exp(rng.normal(0, 0.01)))
            rows.append({"system": "model", "host": "h", "label": "", "memory": f"bind:{node}", "pages": "4k",
                         "ngpus": ngpus, "gpu": gpu, "gpu_node": gpu_node, "pinned": 1, "policy": "bind",
                         "numa_nodes": str(node), "numa_weight": "", "repetition": rep,
                         "access_size(bytes)": size, "read_bw(gib/s)": bw, "write_bw(gib/s)": 0.9 * bw})
    return rows


def _table(own: float = 20.0, other: float = 14.0, each_of_two: float = 12.0, reps: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = _rows(rng, 1, 0, 0, 0, own, reps) + _rows(rng, 1, 0, 0, 1, other, reps)
    rows += _rows(rng, 2, 0, 0, 0, each_of_two, reps) + _rows(rng, 2, 1, 1, 0, each_of_two, reps)
    return pd.DataFrame(rows)


def test_aggregate_of_two_gpus_is_apart_from_each_gpu_and_from_one_gpu() -> None:
    found = [f for f in gpu_xfer.aggregate(_table()) if f.numbers["direction"] == "read"]
    assert [f.numbers["ngpus"] for f in found] == [2], "only the 2-GPU run has an aggregate"
    n = found[0].numbers
    assert n["aggregate_gib_s"] == pytest.approx(24.0, rel=0.05)
    assert all(v == pytest.approx(12.0, rel=0.05) for v in n["per_gpu_gib_s"].values())
    assert n["one_gpu_gib_s"] == pytest.approx(20.0, rel=0.05)
    scaling = n["scaling"]
    assert scaling["low"] <= 0.6 <= scaling["high"] and scaling["high"] < 0.7
    assert "interval" in found[0].summary


def test_host_node_effect_per_gpu_with_its_interval() -> None:
    found = [f for f in gpu_xfer.host_node(_table()) if f.numbers["direction"] == "read"]
    assert len(found) == 1 and found[0].numbers["gpu"] == "0" and found[0].numbers["ngpus"] == "1"
    ratio = found[0].numbers["ratio"]["1"]
    assert ratio["low"] <= 20 / 14 <= ratio["high"] and ratio["low"] > 1.3
    assert "interval" in found[0].summary


def test_no_host_node_effect_claimed_where_none_was_planted() -> None:
    found = [f for f in gpu_xfer.host_node(_table(own=20.0, other=20.0)) if f.numbers["direction"] == "read"]
    ratio = found[0].numbers["ratio"]["1"]
    assert ratio["low"] <= 1.0 <= ratio["high"]


def test_one_repetition_says_it_has_no_interval() -> None:
    found = gpu_xfer.host_node(_table(reps=1))
    assert found and all("no interval" in f.summary for f in found)


def test_host_node_by_gpu_matrix_with_the_own_node_marked(tmp_path) -> None:
    """Two GPUs alone (GPU 0 on node 0, GPU 1 on node 1), host memory on nodes 0 and 1: the planted
    plateaus come back per cell with their intervals, each GPU's own node said."""
    rng = np.random.default_rng(11)
    planted = {(0, 0): 24.0, (1, 0): 16.0, (0, 1): 15.0, (1, 1): 23.0}  # (host node, GPU) -> GiB/s
    rows = [r for (node, g), bw in planted.items() for r in _rows(rng, 1, g, g, node, bw, 4)]
    rows += _rows(rng, 2, 0, 0, 0, 12.0, 4)  # two GPUs at once: not a cell of the matrix
    cells = gpu_xfer.node_cells(pd.DataFrame(rows))["read"]
    assert set(cells) == set(planted)
    for cell, bw in planted.items():
        level, own, runs = cells[cell]
        # the plateau's sizes reach 95 % of the largest: its level lies a little under the asymptote
        assert 0.97 * bw < level.low < level.estimate < level.high < 1.02 * bw and own == cell[1] and runs == 4
    (found,) = [f for f in gpu_xfer.node_matrix(pd.DataFrame(rows)) if f.numbers["direction"] == "read"]
    assert found.id == "gpu_node_matrix" and "GPU 1 (on node 1): node 0 14.9" in found.summary
    assert "node 1 (own) 23.0 (95% interval 22.7 to 23.3, 4 runs)" in found.summary
    paths = gpu_figures.plot_node_matrix(pd.DataFrame(rows), None, tmp_path)
    assert [p.suffix for p in paths] and all(p.exists() for p in paths)
