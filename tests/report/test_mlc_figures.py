"""Figures of the loaded-latency, core-to-core and mixed-bandwidth kernels from the model tables
of helpers.synthetic: each is written, and the core-to-core heatmap puts the
CPUs in node and L3-group order with every pair's value on both sides of the diagonal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.benches import c2c
from numasweep.benches import loaded_latency
from numasweep.benches import mix_bandwidth

from helpers.synthetic import c2c_frame as _c2c
from helpers.synthetic import loaded_latency_frame as _loaded


def test_loaded_latency_figure_written(tmp_path: Path) -> None:
    paths = loaded_latency.plot_loaded_latency(_loaded(), None, tmp_path)
    assert sorted(p.name for p in paths) == ["loaded_latency--cpu0-mem1.png", "loaded_latency--cpu0-mem1.svg"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_c2c_matrix_in_topology_order_and_symmetric(tmp_path: Path) -> None:
    table = _c2c().sample(frac=1.0, random_state=3)  # row order must not matter
    matrix, cpus = c2c.c2c_matrix(table)
    assert [c for c, _, _ in cpus] == list(range(8)) and [n for _, n, _ in cpus] == [0] * 4 + [1] * 4
    values = matrix.to_numpy(float)
    off = ~np.eye(8, dtype=bool)
    assert np.isfinite(values[off]).all() and np.allclose(values, values.T, equal_nan=True)
    assert len(c2c.plot_c2c(table, None, tmp_path)) == 2


def test_mix_matrix_one_panel_per_traffic_kind(tmp_path: Path) -> None:
    rows = [{"traffic": t, "cpu_nodes": str(c), "mem_nodes": str(m), "gb_s_median": 10.0 + c + m}
            for t in ("read", "r1w1") for c in range(2) for m in range(2)]
    paths = mix_bandwidth.plot_mix_matrix(pd.DataFrame(rows), None, tmp_path)
    assert [p.name for p in paths] == ["mix_bandwidth_matrix--all.png", "mix_bandwidth_matrix--all.svg"]


def test_loaded_latency_configurations_never_share_a_figure_or_table(tmp_path: Path) -> None:
    """Two chase buffers (or load thread counts, page sizes...) on the same nodes are two series:
    each gets its figure and table, named by what tells them apart; the CPUs are named only where
    one node and its memory have several placements."""
    small = _loaded().assign(size_bytes=1 << 30)
    large = _loaded().assign(size_bytes=1 << 31, **{c: (lambda d, c=c: d[c] + 50) for c in
                                                    ("latency_ns_median", "latency_ns_min", "latency_ns_max")})
    both = pd.concat([small, large], ignore_index=True)
    paths = loaded_latency.plot_loaded_latency(both, None, tmp_path)
    assert sorted(p.name for p in paths if p.suffix == ".png") == [
        "loaded_latency--cpu0-mem1-1-gib.png", "loaded_latency--cpu0-mem1-2-gib.png"]
    tables = loaded_latency.loaded_latency_tables(both.assign(load_cpus="1,2,3"))
    assert [t["title"] for t in tables] == ["Chase on node 0, memory on node(s) 1, 1 GiB",
                                            "Chase on node 0, memory on node(s) 1, 2 GiB"]
    # each table's idle row is its own buffer's, not a median over both
    idle = [float(t["table"].splitlines()[2].split("|")[5]) for t in tables]
    assert idle[1] - idle[0] > 40
    # a second chase CPU on the same node: named by its CPUs
    other_cpu = _loaded().assign(chase_cpu=1, load_cpus="2,3,4")
    two = pd.concat([_loaded().assign(load_cpus="1,2,3"), other_cpu], ignore_index=True)
    names = sorted(name for name, _, _ in loaded_latency.loaded_configurations(two))
    assert names == ["cpu0-mem1-chase0-load1,2,3", "cpu0-mem1-chase1-load2,3,4"]
