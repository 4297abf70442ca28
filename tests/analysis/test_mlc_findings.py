"""Loaded-latency, core-to-core and bandwidth-matrix findings on tables generated from stated
models, with the kernels' column names (docs/INTERFACES.md):
- loaded latency and core to core: the models of helpers.synthetic (`loaded_latency_frame`,
  `c2c_frame`);
- bandwidth matrix: 2 nodes, 20 GB/s local and 12 GB/s remote (sigma 2 %)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numasweep.benches import c2c
from numasweep.benches import loaded_latency
from numasweep.benches import mix_bandwidth



from helpers.synthetic import MLC_SEED as RNG_SEED
from helpers.synthetic import c2c_frame as _c2c
from helpers.synthetic import loaded_latency_frame as _loaded


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


def test_latency_rising_straight_under_load_has_no_knee() -> None:
    """100 ns idle and 8 ns more per GB/s of load all the way (no bend): the rise is said, with its
    interval, and no knee, though a two-segment fit finds a breakpoint in any curve."""
    straight = _loaded(knee=None)
    straight["latency_ns_median"] = 100.0 + 8.0 * straight["load_gb_s"]
    (f,) = loaded_latency.loaded_latency(straight)
    assert f.numbers["rise"]["low"] > 1 and "knee_gb_s" not in f.numbers and "no knee is placed" in f.summary


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
