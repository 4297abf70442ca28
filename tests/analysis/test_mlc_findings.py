"""Loaded-latency, core-to-core and bandwidth-matrix findings on tables generated from stated
models, with the kernels' column names (docs/INTERFACES.md):
- loaded latency: 100 ns idle, +2 ns per GB/s of load up to a knee at 20 GB/s, +40 ns per GB/s
  beyond; each point's median scaled by a log-normal factor (sigma 1 %), min/max at +-2 %;
- core to core: 8 CPUs, 2 nodes x 2 L3 groups x 2 CPUs; round trips 50 ns inside an L3 group,
  100 ns across groups of a node, 180 ns across nodes (sigma 3 %);
- bandwidth matrix: 2 nodes, 20 GB/s local and 12 GB/s remote (sigma 2 %)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numasweep.benches import c2c
from numasweep.benches import loaded_latency
from numasweep.benches import mix_bandwidth



RNG_SEED = 11


def _loaded(knee: float | None = 20.0) -> pd.DataFrame:
    rng = np.random.default_rng(RNG_SEED)
    rows = []
    for delay, load in [(-1, 0.0)] + [(1000 // (i + 1), 2.0 * (i + 1)) for i in range(15)]:
        ns = 100.0 if knee is None else 100 + 2 * min(load, knee) + 40 * max(0.0, load - knee)
        ns *= float(np.exp(rng.normal(0, 0.01)))
        rows.append({"traffic": "read", "delay": delay, "chase_cpu": 0, "chase_node": 0, "mem_nodes": "1",
                     "strategy": "sequential", "load_threads": 3, "page_size": "4k", "latency_ns_median": ns,
                     "latency_ns_min": ns * 0.98, "latency_ns_max": ns * 1.02, "samples": 5, "load_gb_s": load})
    return pd.DataFrame(rows)


def test_loaded_latency_knee_and_rise_with_intervals() -> None:
    (f,) = loaded_latency.loaded_latency(_loaded())
    knee, rise = f.numbers["knee_gb_s"], f.numbers["rise"]
    assert knee["low"] <= 20 <= knee["high"] and knee["high"] - knee["low"] < 8
    assert rise["low"] > 3  # 100 ns -> 1300 ns
    assert "interval" in f.summary


def test_flat_loaded_latency_claims_no_knee() -> None:
    (f,) = loaded_latency.loaded_latency(_loaded(knee=None))
    assert "knee_gb_s" not in f.numbers and "bends" not in f.summary
    assert f.numbers["rise"]["low"] <= 1 <= f.numbers["rise"]["high"]


def test_loaded_latency_curves_of_different_series_are_never_pooled() -> None:
    """Two chase buffers on the same nodes, 50 ns apart: two curves, each with its own idle
    latency and a title naming its buffer (pooled, the first idle row would stand for both)."""
    small = _loaded().assign(size_bytes=1 << 30)
    large = _loaded().assign(size_bytes=1 << 31, **{c: (lambda d, c=c: d[c] + 50) for c in
                                                    ("latency_ns_median", "latency_ns_min", "latency_ns_max")})
    found = loaded_latency.loaded_latency(pd.concat([small, large], ignore_index=True))
    assert len(found) == 2 and len({f.title for f in found}) == 2
    by_size = {f.numbers["size_bytes"]: f for f in found}
    assert by_size[str(1 << 31)].numbers["idle_ns"] - by_size[str(1 << 30)].numbers["idle_ns"] == \
        pytest.approx(50, abs=5)
    assert all(f"size_bytes {size}" in f.title for size, f in by_size.items())


def _c2c() -> pd.DataFrame:
    rng = np.random.default_rng(RNG_SEED)
    rows = []
    for a in range(8):
        for b in range(a + 1, 8):
            node_a, node_b, l3_a, l3_b = a // 4, b // 4, a // 2, b // 2
            ns = 50.0 if l3_a == l3_b else (100.0 if node_a == node_b else 180.0)
            ns *= float(np.exp(rng.normal(0, 0.03)))
            rows.append({"cpu_a": a, "cpu_b": b, "node_a": node_a, "node_b": node_b, "l3_group_a": l3_a,
                         "l3_group_b": l3_b, "mem_nodes": "0", "round_trip_ns_median": ns})
    return pd.DataFrame(rows)


def test_core_to_core_classes_apart_with_ratio_intervals() -> None:
    (f,) = c2c.core_to_core(_c2c())
    n = f.numbers
    assert [n[c]["pairs"] for c in c2c.CLASSES] == [4, 8, 16]
    other_l3 = n["other L3 group, same node"]["ratio_to_same_L3_group"]
    other_node = n["other node"]["ratio_to_same_L3_group"]
    assert other_l3["low"] <= 2.0 <= other_l3["high"] and other_node["low"] <= 3.6 <= other_node["high"]
    assert n["pairs_ordered"]["faster"] == n["pairs_ordered"]["of"] and "topology's groups" in f.summary


def test_bandwidth_matrix_local_against_remote() -> None:
    rng = np.random.default_rng(RNG_SEED)
    rows = [{"traffic": "read", "threads": 1, "cpu_nodes": str(c), "mem_nodes": str(m),
             "gb_s_median": (20.0 if c == m else 12.0) * float(np.exp(rng.normal(0, 0.02)))}
            for c in range(2) for m in range(2) for _ in range(3)]
    (f,) = mix_bandwidth.bandwidth_matrix(pd.DataFrame(rows))
    ratio = f.numbers["remote_to_local"]
    assert ratio["low"] <= 0.6 <= ratio["high"] and ratio["high"] < 0.7
