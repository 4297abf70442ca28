"""Noise-only data under noise models the analysis was never tuned on (helpers.synthetic's
NOISE_MODELS: log-normal as before, uniform +-12 % per cell, heavy-tailed, per-repetition offsets),
latency through `analysis.analyse` and bandwidth and copy through their findings: how many data
sets carry a claim, and of what kind. An outlier or deviation finding names one run off the
others; under heavy tails those runs are really off (`outliers_real`), so they are counted apart
from claims about the machine. As a script (`PYTHONPATH=workflow:tests python
tests/analysis/noise_models.py --per-model 200 --seed 4242`) it prints the figures of
docs/STATISTICS.md; test_noise_models.py asserts them on fewer data sets."""

from __future__ import annotations

import argparse
import json

import numpy as np

from analysis import known_truth as kt
from analysis import test_bandwidth_findings as bw
from helpers import synthetic as truth

RUN_FINDINGS = {("anomaly", "outlier"), ("anomaly", "deviation")}     # a run off the others, not the machine


def latency(rng: np.random.Generator, model: str) -> tuple[list[str], int, int, int]:
    """(claims about the machine, run findings, outlier findings, of them runs really more than
    the 10 % floor off the planted level) of one noise-only latency data set."""
    p = truth.plant(rng, flat=True, max_bytes=1 << 18, noise_model=model)
    level = float(next(iter(p.curves.values()))[0])
    machine, runs, outliers, real = [], 0, 0, 0
    for f in kt.entry(p):
        n = f["numbers"]
        if not n.get("claim"):
            continue
        if (f["id"], n.get("kind")) in RUN_FINDINGS:
            runs += 1
            if n.get("kind") == "outlier":
                outliers += 1
                real += not 1 / 1.1 <= n["latency_ns"] / level <= 1.1
        else:
            machine.append(f["id"])
    return machine, runs, outliers, real


def bandwidth(rng: np.random.Generator, model: str) -> list[str]:
    """The claims of one noise-only bandwidth and copy data set."""
    p = bw.plant(rng, flat=True, nodes=2, noise_model=model)
    return [f.id for f in bw.findings(p) if f.numbers.get("claim")]


def measure(per_model: int, seed: int) -> dict:
    out = {}
    for i, model in enumerate(truth.NOISE_MODELS):
        rng = np.random.default_rng([seed, i])
        lat = [latency(rng, model) for _ in range(per_model)]
        band = [bandwidth(rng, model) for _ in range(per_model)]
        out[model] = {
            "latency data sets with a claim about the machine": f"{sum(bool(m) for m, *_ in lat)}/{per_model}",
            "latency data sets with a run off the others": f"{sum(r > 0 for _, r, _, _ in lat)}/{per_model}",
            "outliers really off the planted level": f"{sum(x for *_, x in lat)}/{sum(o for _, _, o, _ in lat)}",
            "bandwidth data sets with a claim": f"{sum(bool(b) for b in band)}/{per_model}",
            "kinds": sorted({k for m, *_ in lat for k in m} | {k for b in band for k in b}),
        }
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-model", type=int, default=200)
    ap.add_argument("--seed", type=int, default=4242)
    a = ap.parse_args()
    print(json.dumps(measure(a.per_model, a.seed), indent=1))
