"""Fits and resampling the findings share beyond `stats`: a two-segment (hinge) fit's breakpoint
and a percentile bootstrap over independent units."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from numasweep.statistics import stats

DRAWS = 1000


def bootstrap(groups: list[np.ndarray], statistic: Callable[..., float], what: str) -> stats.Interval:
    """Percentile bootstrap of statistic(*groups), each group resampled with replacement on its
    own (its elements are the units)."""
    estimate = float(statistic(*groups))
    if any(len(g) < 2 for g in groups):
        return stats.Interval.unknown(estimate, f"fewer than 2 {what}: no interval")
    rng = np.random.default_rng(stats.SEED + 3)
    draws = np.array([statistic(*(g[rng.integers(0, len(g), len(g))] for g in groups)) for _ in range(DRAWS)])
    draws = draws[np.isfinite(draws)]
    if len(draws) < DRAWS // 2:
        return stats.Interval.unknown(estimate, f"the bootstrap over {what} rarely gives a value")
    return stats.Interval(estimate, float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975)), stats.LEVEL,
                          f"percentile bootstrap over {min(len(g) for g in groups)}+ {what} ({DRAWS} draws)")


def hinge_knee(x: np.ndarray, y: np.ndarray, bend: int = 1) -> float | np.ndarray:
    """The breakpoint of the best continuous two-segment fit whose second slope is steeper
    (bend=1: a knee, latency under load) or flatter (bend=-1: bandwidth saturating with threads).
    y may hold several curves over the same x as columns (bootstrap draws): one knee each."""
    order = np.argsort(x)
    x, y = np.asarray(x, float)[order], np.asarray(y, float)[order]
    ys = y.reshape(len(x), -1)
    best, knee = np.full(ys.shape[1], math.inf), np.full(ys.shape[1], math.nan)
    for k in np.unique(x)[1:-1]:
        design = np.column_stack([np.ones_like(x), x, np.maximum(0.0, x - k)])
        coef = np.linalg.pinv(design) @ ys
        sse = np.sum((design @ coef - ys) ** 2, axis=0)
        better = (coef[2] * bend > 0) & (sse < best)
        best, knee = np.where(better, sse, best), np.where(better, float(k), knee)
    return float(knee[0]) if y.ndim == 1 else knee
