"""The bandwidth calibration's decision (numasweep.benches.bandwidth.calibration) on data whose
truth is planted: rates generated from a model (each shape's true rate, a per-round drift that
all shapes of a round share, lognormal noise per timing), across noise levels, round counts and
the processor families' shape sets; and what it writes (the shapes file, the report's block, a
job's provenance)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from numasweep.benches.bandwidth import calibration
from numasweep.core.errors import NumasweepError
from numasweep.running import provenance

# The shapes each family's build runs (x86-64 without AVX-512: Zen 2; with it: Zen 4, Xeon;
# aarch64: the loop and scalar shapes only).
FAMILIES = {
    "avx2": ["loop", "scalar", "scalar-unroll", "sse", "sse-unroll", "avx2", "avx2-unroll"],
    "avx512": ["loop", "scalar", "scalar-unroll", "sse", "sse-unroll", "avx2", "avx2-unroll", "avx512",
               "avx512-unroll"],
    "aarch64": ["loop", "scalar", "scalar-unroll"],
}


def _rows(truth: dict[str, float], rounds: int, noise: float, drift: float, seed: int,
          kernel: str = "triad", stores: str = "regular") -> pd.DataFrame:
    """A --calibrate table: round r's rate of shape s = truth[s] x drift_r x noise."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(rounds):
        phase = np.exp(rng.normal(0, drift))
        for s, rate in truth.items():
            out.append({"kernel": kernel, "stores": stores, "shape": s, "round": r,
                        "mb_s": rate * phase * np.exp(rng.normal(0, noise))})
    return pd.DataFrame(out)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("noise,rounds", [(0.005, 5), (0.01, 7), (0.02, 15)])
def test_a_shape_planted_faster_is_chosen_with_its_margin_inside_the_interval(family, noise, rounds):
    shapes = FAMILIES[family]
    best = shapes[-1]
    truth = {s: 20000.0 for s in shapes} | {best: 20000.0 * 1.08}
    decided = 0
    for seed in range(10):
        (d,) = calibration.decide(_rows(truth, rounds, noise, drift=0.15, seed=seed))
        assert d["shape"] in (best, shapes[0]) or d["shape"] in d["tied"], d
        if d["decided"]:
            decided += 1
            assert d["shape"] == best and d["over"] != best, d
            est, low, high = d["ratio"]
            assert low > 1 and low <= est <= high
        else:   # never a slower shape decided; an undecided one is the first of its ties
            assert d["shape"] == min(d["tied"], key=list(calibration.PREFERENCE).index)
    # 8% against noise of at most 2% a timing: told apart nearly every time
    assert decided >= 8, decided


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("noise", [0.01, 0.05])
def test_shapes_alike_are_left_to_the_fixed_order(family, noise):
    shapes = FAMILIES[family]
    truth = {s: 15000.0 for s in shapes}
    picks = []
    for seed in range(20):
        (d,) = calibration.decide(_rows(truth, 9, noise, drift=0.3, seed=seed))
        picks.append(d["shape"])
        if d["decided"]:   # a false decision, at most at the intervals' rate
            continue
        assert d["shape"] == min(d["tied"], key=list(calibration.PREFERENCE).index)
    # with every shape alike, the plain loop nearly always (each of the others could be told
    # apart from it by chance at the intervals' 5%)
    assert picks.count("loop") >= 14, picks


def test_a_busy_machine_widens_the_intervals_rather_than_moving_the_choice():
    """A drift shared by the round's shapes (a neighbour's load) falls on both sides of each
    ratio; heavy noise per timing leaves the shapes undecided, never a slower one decided."""
    truth = {"loop": 18000.0, "sse": 18000.0, "sse-unroll": 19800.0, "avx2": 18500.0}
    quiet = [calibration.decide(_rows(truth, 9, 0.01, 0.0, seed=s))[0] for s in range(5)]
    busy = [calibration.decide(_rows(truth, 9, 0.15, 0.5, seed=s))[0] for s in range(20)]
    assert all(d["decided"] and d["shape"] == "sse-unroll" for d in quiet)
    assert all(d["shape"] == "sse-unroll" or not d["decided"] for d in busy)


def test_every_kernel_and_store_kind_is_decided_and_written_for_the_kernel():
    rows = pd.concat([_rows({"loop": 1e4, "avx2": 1.2e4}, 5, 0.01, 0.1, 1, k, st)
                      for k, st in (("copy", "regular"), ("copy", "nt"), ("read", "regular"))])
    decisions = calibration.decide(rows)
    assert [(d["kernel"], d["stores"], d["shape"]) for d in decisions] == [
        ("copy", "regular", "avx2"), ("copy", "nt", "avx2"), ("read", "regular", "avx2")]
    lines = calibration.shapes_text(decisions).splitlines()
    assert lines[0].startswith("#") and [ln.split(" # ")[0] for ln in lines[1:]] == [
        "copy regular avx2", "copy nt avx2", "read regular avx2"]
    words = calibration.words(decisions[0])
    assert words.startswith("copy, regular stores: 256-bit vectors, chosen over plain loop by 20% (")
    assert "5 rounds" in words
    # the rows' shape_choice: the sentence, the chosen shape's rate and the plain loop's (STREAM's)
    how = lines[1].split(" # ", 1)[1]
    assert how.startswith("chosen over plain loop by 20%") and " GB/s (" in how
    assert re.search(r"; the plain loop \(STREAM's shape\) [0-9.]+ GB/s \([0-9.]+ to [0-9.]+\)$", how), how


def test_too_few_rounds_or_another_table_are_refused_in_one_line():
    with pytest.raises(NumasweepError, match="2 rounds; give at least 3"):
        calibration.decide(_rows({"loop": 1.0, "sse": 1.0}, 2, 0.01, 0, 0))
    with pytest.raises(NumasweepError, match="no column mb_s"):
        calibration.decide(pd.DataFrame({"kernel": ["triad"], "stores": ["regular"], "shape": ["loop"],
                                         "round": [0]}))


def test_a_jobs_provenance_keeps_the_record_of_the_setup_its_launch_line_names(tmp_path):
    decisions = calibration.decide(_rows({"loop": 1e4, "sse-unroll": 1.1e4}, 7, 0.005, 0.1, 3))
    shapes = tmp_path / "calibration.shapes"
    rec = {"made": "2026-12-02T00:00:00+00:00", "kernel_sha256": "abc", "reads": str(shapes), "rounds": 7,
           "decisions": decisions}
    record = tmp_path / "calibration.json"
    record.write_text(json.dumps(rec))
    (got,) = provenance.setups([record], f"numa_bandwidth --shapes={shapes} --csv=x")
    assert got["record"] == str(record) and got["decisions"][0]["shape"] == "sse-unroll" and got["rounds"] == 7
    assert provenance.setups([record], "numa_bandwidth --variant=avx2 --csv=x") == []
    record.write_text("{")
    with pytest.raises(NumasweepError, match="not a readable setup record"):
        provenance.setups([record], f"numa_bandwidth --shapes={shapes}")
