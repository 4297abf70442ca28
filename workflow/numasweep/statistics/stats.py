"""Statistical model of tidy tables of runs: noise, intervals and decisions.

Model (what every interval and decision of `levels` and `contrasts` rests on):
- A *series* is all rows sharing the caller's series-key columns, its axis (size, thread count)
  aside; a *replicate* is one value of the caller's replicate-key columns (a job repetition, or
  ranks the analysis declares alike): the unit of uncertainty, whose points are never resampled
  apart. `Measure` names the axis, value and spread columns: the callers say which.
- Each row is the median of a run's samples, log-normal about the run's centre. The table keeps
  median, min, max and the sample count n, so sigma_run = log(max / min) / d2(n) (d2: expected
  range of n normal draws) and the run median's standard error is sqrt(pi/2) sigma_run / sqrt(n);
  a heavy upper tail only widens it; without n we take n = 2, wider still.
- The value of a series at a size is the median over its replicates of the log value. With two or
  more replicates its noise is their spread over a band of sizes (the size and one either side):
  sigma = 1.0483 x the median absolute pairwise difference of the band (Shamos' estimator: one
  erratic replicate barely moves it, and only in its own band), standard error sqrt(pi/2) sigma /
  sqrt(k) for k >= 3 replicates (sigma / sqrt(k) for k = 2), sum(k - 1) degrees of freedom. The
  median is over every pair of replicates while pairs x sizes <= MAX_CELLS (some 500 replicates
  over 15 sizes), else over a fixed random sample (seeded: the same table, the same noise) of
  MAX_CELLS / sizes pairs, each with its differences at every size (within 0.4 % of the full
  median at 2,000 to 33,000 replicates), and the noise rule says so. With one replicate only
  the within-run spread is known, and said; with neither, the noise is unknown and nothing is
  tested.
- A ratio of two values is a difference of logs with a Student-t interval (`t_interval`; two
  groups of values: Welch's, `welch`); statistics with no closed form (onsets, locations) take a
  percentile bootstrap over replicates with the within-run error redrawn (`Series.draws`); a mean
  over sizes, a t interval over the units' own means (`unit_mean_interval`). Every Interval says
  which.
- A difference counts when it exceeds a floor of practical effect *and* the noise: the one-sided
  test of |log ratio| > log(1 + floor) (`excess_pvalue`), the false-finding rate of all points
  tested in one analysis held at FDR by Benjamini-Hochberg (`benjamini_hochberg`), or the
  family-wise rate by Holm (`holm`) where one false claim would be as bad as several
  (`deviations`: a replicate against the others of its series, their noise left-one-out).

scipy.stats is imported by the functions that use it: the report and figures import this module
for its tables and seldom test anything.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from numasweep.core.errors import NumasweepError
from numasweep.statistics.constants import LEVEL, MEDIAN_EFFICIENCY, SHAMOS

FDR = 0.05              # false-finding rate of the decisions of one analysis
SEED = 20261123         # bootstraps and pair samples are reproducible: the same table, the same interval
MAX_CELLS = 2_000_000   # pairwise differences (pairs x sizes) a series' noise lists; beyond, a sample
LOO_CELLS = 1 << 22     # differences x replicates listed at once for the left-one-out noise
DRAW_CELLS = 1 << 20    # bootstrap values drawn at once (`Series.draws`): 8 MiB a piece
REPETITIONS_NOTE = "one repetition: run-to-run variation unseen"   # said of an interval from one run


@dataclass(frozen=True)
class Measure:
    """Which columns of a tidy table hold a series' axis, its value and each run's spread (the
    run's lowest and highest sample and the sample count)."""
    value: str
    low: str
    high: str
    count: str
    axis: str

    def columns(self, table: pd.DataFrame, *others: str) -> pd.DataFrame:
        """`table` narrowed to `others` and this measure's columns, those it has."""
        return table[[c for c in dict.fromkeys((*others, self.axis, self.value, self.low, self.high, self.count))
                      if c in table]]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its interval, level and the method that gave it."""
    estimate: float
    low: float
    high: float
    level: float
    method: str

    def covers(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)

    def text(self, fmt: str = "{:.2f}") -> str:
        if not (np.isfinite(self.low) and np.isfinite(self.high)):
            return f"{fmt.format(self.estimate)} (no interval: noise unknown)"
        return (f"{fmt.format(self.estimate)} ({self.level * 100:.0f}% interval {fmt.format(self.low)} to "
                f"{fmt.format(self.high)})")

    @staticmethod
    def unknown(estimate: float, why: str) -> "Interval":
        return Interval(float(estimate), math.nan, math.nan, LEVEL, why)


# ---------------------------------------------------------------- input checks

def check_values(table: pd.DataFrame, where: str, measure: Measure) -> None:
    """Refuse values and axis points no kernel writes (zero, negative, infinite, missing), naming
    the file, CSV line (header = line 1) and column. Missing min/max/samples are allowed."""
    bad: list[str] = []
    for col in (measure.axis, measure.value, measure.low, measure.high, measure.count):
        if col not in table:
            continue
        values = pd.to_numeric(table[col], errors="coerce")
        missing = table[col].isna()
        if not pd.api.types.is_numeric_dtype(table[col]):
            missing |= table[col].astype(str).str.strip() == ""
        wrong = (values.isna() & ~missing) | (values.notna() & (~np.isfinite(values) | (values <= 0)))
        if col in (measure.axis, measure.value):
            wrong |= missing
        for idx in table.index[wrong.to_numpy()]:
            line = f"line {idx + 2}" if isinstance(idx, (int, np.integer)) else f"row {idx}"
            bad.append(f"{line} column {col}: {table.at[idx, col]!r}")
    if bad:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise NumasweepError(
            f"{where}: {'; '.join(bad[:3])}{more} is not a positive finite value; "
            "a kernel never writes one, so fix or drop those rows and rerun")


# ---------------------------------------------------------------- within-run spread

@lru_cache(maxsize=None)
def range_constant(n: int) -> float:
    """d2(n): expected range of n standard normal draws (d2(2) = 1.128, d2(10) = 3.078)."""
    from scipy.stats import norm

    if n < 2:
        return math.nan
    x = np.linspace(-9, 9, 20001)
    cdf = norm.cdf(x)
    return float(np.trapezoid(1 - cdf ** n - (1 - cdf) ** n, x))


def run_standard_error(table: pd.DataFrame, measure: Measure) -> np.ndarray:
    """Standard error of each row's log median from its min, max and samples (NaN when absent)."""
    def column(name: str) -> np.ndarray:
        return pd.to_numeric(table[name], errors="coerce").to_numpy(float) if name in table \
            else np.full(len(table), np.nan)
    lo, hi, k = column(measure.low), column(measure.high), column(measure.count)
    k = np.where(np.isfinite(k) & (k >= 2), k, 2).astype(int)
    counts, at = np.unique(k, return_inverse=True)      # d2 once per distinct sample count
    d2 = np.array([range_constant(int(v)) for v in counts], dtype=float)[at.reshape(-1)]
    return MEDIAN_EFFICIENCY * np.log(hi / lo) / d2 / np.sqrt(k)


# ---------------------------------------------------------------- between-replicate spread

def _band_sum(x: np.ndarray, band: int) -> np.ndarray:
    """Sum over the last axis of each position and `band` positions either side."""
    m = x.shape[-1]
    c = np.cumsum(np.pad(x, [(0, 0)] * (x.ndim - 1) + [(1, 0)]), axis=-1)
    j = np.arange(m)
    return c[..., np.minimum(m, j + band + 1)] - c[..., np.maximum(0, j - band)]


def _pair_diffs(logs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(|x_a - x_b| of pairs of replicates (rows) at every size, NaN where either lacks it; rows a
    and b; all pairs): every pair, or past MAX_CELLS a seeded sample drawn with replacement."""
    r, m = logs.shape
    pairs = r * (r - 1) // 2
    if pairs * m <= MAX_CELLS:
        a, b = np.triu_indices(r, 1)
    else:
        rng = np.random.default_rng(SEED)
        n = max(1, MAX_CELLS // m)
        a = rng.integers(0, r, n)
        b = rng.integers(0, r - 1, n)
        b += b >= a
    return np.abs(logs[a] - logs[b]), a, b, pairs


def _pooled(d: np.ndarray, band: int) -> np.ndarray:
    """(sizes, pairs x (2 band + 1)): per size its band's differences, pair by pair (NaN past the ends)."""
    padded = np.pad(d, ((0, 0), (band, band)), constant_values=np.nan)
    windows = sliding_window_view(padded, 2 * band + 1, axis=1)         # (pairs, sizes, band)
    return windows.transpose(1, 0, 2).reshape(d.shape[1], -1)


def _nanmedian(x: np.ndarray, axis: int) -> np.ndarray:
    """np.nanmedian, NaN for a slice with no value and no warning about it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(x, axis=axis)


# ---------------------------------------------------------------- series

@dataclass
class Series:
    """One series: replicates x sizes of log values, and their within-run standard errors."""
    key: dict
    sizes: np.ndarray            # the axis (bytes, threads), ascending
    logs: np.ndarray             # (replicates, sizes), NaN where a replicate lacks a size
    run_se: np.ndarray           # same shape, NaN where unknown
    replicates: list
    _noise: dict = field(default_factory=dict, init=False, repr=False, compare=False)   # by band: never mutated
    _draws: dict = field(default_factory=dict, init=False, repr=False, compare=False)   # by (seed, n, columns)

    @property
    def k(self) -> np.ndarray:
        return np.sum(np.isfinite(self.logs), axis=0)

    def center(self, logs: np.ndarray | None = None) -> np.ndarray:
        return np.nanmedian(self.logs if logs is None else logs, axis=0)

    def values(self) -> np.ndarray:
        """exp of the centre: the value at each size in the table's unit."""
        return np.exp(self.center())

    def point(self, j: int) -> tuple[float, float, float, int]:
        """(log centre, its standard error, degrees of freedom, replicates) at the j-th size: the
        model's noise pooled over the band of sizes; se NaN with fewer than two replicates there."""
        y, k = float(self.center()[j]), int(self.k[j])
        se, dof, _, _ = self.noise()
        return y, (float(se[j]) if k >= 2 else math.nan), float(dof[j]), k

    def at(self, j: int) -> Interval:
        """The value at the j-th size (exp of the centre) with the model's t interval there, its
        noise pooled over the band of sizes; none with fewer than two replicates at that size."""
        y, se, dof, k = self.point(j)
        if k < 2:
            return Interval.unknown(math.exp(y), "one replicate: no interval")
        if not se > 0:
            return Interval.unknown(math.exp(y), f"{k} replicates alike: no spread")
        return t_interval(y, se, dof, method=f"t interval on the median's log ({self.noise()[3]})")

    def noise(self, band: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """(se of the log centre, degrees of freedom, sigma of one replicate) per size, and the
        rule; worked out once per band (a series is not changed once built)."""
        if band not in self._noise:
            self._noise[band] = self._work_out_noise(band)
        se, dof, sig, rule = self._noise[band]
        return se.copy(), dof.copy(), sig.copy(), rule

    def _work_out_noise(self, band: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        m = len(self.sizes)
        se, dof, sig = np.full(m, np.nan), np.full(m, np.inf), np.full(m, np.nan)
        k = self.k
        if np.max(k, initial=0) >= 2:
            d, a, _, pairs = _pair_diffs(self.logs)
            med = _nanmedian(_pooled(d, band), axis=1)
            ok = np.isfinite(med) & (k > 0)
            sig[ok] = SHAMOS * med[ok]
            se[ok] = np.where(k >= 3, MEDIAN_EFFICIENCY, 1.0)[ok] * sig[ok] / np.sqrt(k[ok])
            dof[ok] = np.maximum(1, _band_sum(np.maximum(k - 1, 0), band))[ok]
            sample = f"; a seeded sample of {len(a)} of its {pairs} pairs of replicates" if len(a) < pairs else ""
            return se, dof, sig, f"spread of replicates, pooled over a band of {2 * band + 1} sizes{sample}"
        run = np.nanmedian(self.run_se, axis=0) if np.isfinite(self.run_se).any() else np.full(m, np.nan)
        if np.isfinite(run).any():
            return run, np.full(m, np.inf), run, "within-run spread only (one replicate: run-to-run variation unseen)"
        return se, dof, sig, "unknown (one replicate, no within-run spread)"

    def draws(self, seed: int, n: int, columns: Sequence[int] | None = None) -> np.ndarray:
        """n bootstrap draws of the log centre (draws x sizes): replicates resampled whole, each
        one's within-run error redrawn; once per (seed, n, columns), so every transition of a
        curve is located on one set. `columns`: the only sizes drawn (the others NaN). Plain
        numpy, not scipy.stats.bootstrap: that resamples data for one statistic, whereas a draw
        here adds a normal within-run error to each resampled value and serves several statistics."""
        key = (seed, n, None if columns is None else tuple(int(j) for j in columns))
        if key not in self._draws:
            self._draws[key] = self._draw(seed, n, key[2])
            self._draws[key].flags.writeable = False
        return self._draws[key]

    def _draw(self, seed: int, n: int, columns: tuple[int, ...] | None) -> np.ndarray:
        r, m = self.logs.shape
        cols = np.arange(m) if columns is None else np.asarray(columns, dtype=np.int64)
        rng = np.random.default_rng(seed)
        pick = rng.integers(0, r, (n, r)) if r > 1 else np.zeros((n, 1), int)
        logs = self.logs[:, cols].T                                    # (columns, replicates)
        se = np.nan_to_num(self.run_se[:, cols], nan=0.0).T
        out = np.full((n, m), np.nan)
        step = max(1, DRAW_CELLS // max(1, r * len(cols)))            # draws held at once
        for a in range(0, n, step):
            p = pick[a:a + step]                                        # (draws, replicates)
            # drawn draw by draw: the same numbers in pieces of any size as in one
            error = rng.standard_normal((len(p), len(cols), r)).transpose(1, 0, 2)
            values = logs[:, p] + se[:, p] * error
            out[a:a + len(p), cols] = _nanmedian(values, axis=2).T
        return out


def key_column(values: pd.Series) -> pd.Series:
    """A column to group by that never drops a row: NaN as "" (as objects); without NaN, as it is."""
    return values.astype(object).where(values.notna(), "") if values.hasnans else values


def series_table(table: pd.DataFrame, series_keys: Sequence[str], replicate_keys: Sequence[str],
                 measure: Measure) -> list[Series]:
    """Split a tidy table into Series (see the module docstring for keys); `measure` names its
    axis, value and spread columns."""
    df = measure.columns(table, *series_keys, *replicate_keys)
    keys = [k for k in series_keys if k in df]
    reps = [k for k in replicate_keys if k in df]
    for col in keys + reps:
        df[col] = key_column(df[col])
    df["_log"] = np.log(pd.to_numeric(df[measure.value], errors="coerce"))
    df["_se"] = run_standard_error(df, measure)
    if not reps:
        df["_rep"], reps = 0, ["_rep"]
    # every point of every series at once (a fleet has thousands), sorted: a series is a run of
    # points and its replicates runs within it
    uniques, shape, key, logs, ses = _sorted_points(df, keys + reps + [measure.axis])
    values = [u.tolist() for u in uniques]
    nk, nr = len(keys), len(reps)
    series, rep, size = key // math.prod(shape[nk:]), key // shape[-1], key % shape[-1]
    starts = np.flatnonzero(np.r_[True, series[1:] != series[:-1]])
    out = []
    for a, b in zip(starts, np.r_[starts[1:], len(key)]):
        first = np.r_[True, rep[a + 1:b] != rep[a:b - 1]]
        rid = np.cumsum(first) - 1
        used, si = np.unique(size[a:b], return_inverse=True)
        wide, wse = np.full((2, rid[-1] + 1, len(used)), np.nan)
        wide[rid, si], wse[rid, si] = logs[a:b], ses[a:b]
        codes = np.unravel_index(rep[a:b][first], shape[:-1])        # per column, each replicate's
        labels = pd.MultiIndex(levels=uniques[nk:-1], codes=codes[nk:]) if nr > 1 else uniques[nk].take(codes[nk])
        out.append(Series({k: values[i][codes[i][0]] for i, k in enumerate(keys)},
                          np.asarray(values[-1], dtype=np.int64)[used], wide, wse, list(labels)))
    return out


def _sorted_points(df: pd.DataFrame, by: list[str]) -> tuple[list[pd.Index], list[int], np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """(each column's sorted distinct values; their counts, the key's shape; per point, ascending,
    its key: the codes of its values as digits of that shape; the median `_log` and `_se` of its
    rows), as pandas' sorted grouping by `by` gives them, one table-long array at a time."""
    uniques, shape, key = [], [], np.zeros(len(df), np.int64)
    for c in by:
        codes, values = pd.factorize(df[c], sort=True, use_na_sentinel=False)
        uniques.append(pd.Index(values, name=c))
        shape.append(max(1, len(values)))
        key = key * shape[-1] + codes
    if math.prod(shape) >= 2 ** 63:
        raise NumasweepError(f"{' x '.join(map(str, shape))} combinations of {', '.join(by)}: too many to number")
    order = np.argsort(key, kind="stable")
    key = key[order]
    if np.all(key[1:] != key[:-1]):          # one row a point (the usual table): sorted is grouped
        return uniques, shape, key, df["_log"].to_numpy()[order], df["_se"].to_numpy()[order]
    points = df[["_log", "_se"]].iloc[order].groupby(key).median()
    return uniques, shape, points.index.to_numpy(), points["_log"].to_numpy(), points["_se"].to_numpy()


# ---------------------------------------------------------------- intervals and tests

@lru_cache(maxsize=4096)
def _quantile(p: float, dof: float) -> float:
    """Student t's quantile (normal's at infinite dof), cached: a fleet asks for a few dofs often."""
    from scipy.stats import t

    return float(t.ppf(p, dof))


def t_interval(log_ratio: float, se: float, dof: float, level: float = LEVEL, method: str = "") -> Interval:
    """Interval of exp(log_ratio) from a Student-t interval on the log scale."""
    if not (np.isfinite(se) and se > 0):
        return Interval.unknown(math.exp(log_ratio), "noise unknown")
    q = _quantile(0.5 + level / 2, float(dof))
    return Interval(math.exp(log_ratio), math.exp(log_ratio - q * se), math.exp(log_ratio + q * se), level,
                    method or f"t interval on the log ratio ({'inf' if not np.isfinite(dof) else int(dof)} df)")


def welch(a: np.ndarray, b: np.ndarray, method: str = "Welch t interval over ranks on the log ratio"
          ) -> tuple[Interval, float, float]:
    """(ratio of the geometric means of two groups of values with scipy's Welch t interval on the
    log difference, its standard error, its dof); no interval with fewer than two values a side
    (se NaN); values alike to the last digit give a zero-width interval (se 0)."""
    from scipy.stats import ttest_ind

    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    d = float(la.mean() - lb.mean())
    if len(la) < 2 or len(lb) < 2:
        return Interval.unknown(math.exp(d), "one value a side: no interval"), math.nan, math.nan
    se = math.sqrt(la.var(ddof=1) / len(la) + lb.var(ddof=1) / len(lb))
    if se == 0:
        return Interval(math.exp(d), math.exp(d), math.exp(d), LEVEL, "no spread: zero-width interval"), 0.0, math.inf
    test = ttest_ind(la, lb, equal_var=False)
    ci = test.confidence_interval(LEVEL)
    return Interval(math.exp(d), math.exp(ci.low), math.exp(ci.high), LEVEL, method), se, float(test.df)


def _beyond(x: np.ndarray, se, dof, log_floor) -> Any:
    """One-sided p-value of x > log_floor with standard error se and dof (Student t; normal at inf)."""
    from scipy.stats import t

    se = np.asarray(se, float)
    ok = np.isfinite(se) & (se > 0)
    p = np.where(ok, t.sf((x - log_floor) / np.where(ok, se, 1), dof), np.nan)
    return float(p) if p.ndim == 0 else p


def excess_pvalue(log_ratio, se, dof, floor: float):
    """One-sided p-value of |log ratio| > log(1 + floor): the effect exceeds the practical floor.
    Scalars or arrays; NaN where the noise is unknown."""
    return _beyond(np.abs(np.asarray(log_ratio, float)), se, dof, math.log1p(floor))


def excess_pvalues(tests: Sequence[tuple[Any, Any, Any, float]]) -> list[np.ndarray]:
    """`excess_pvalue` of each (log ratios, se, dof, floor), the same numbers, in one scipy call."""
    if not tests:
        return []
    shapes = [np.shape(r) for r, _, _, _ in tests]
    flat = [np.concatenate([np.broadcast_to(np.asarray(x, float), shape).ravel() for x, shape in zip(col, shapes)])
            for col in list(zip(*tests))[:3]]
    floors = np.concatenate([np.full(math.prod(shape), math.log1p(f)) for (_, _, _, f), shape in zip(tests, shapes)])
    p = _beyond(np.abs(flat[0]), flat[1], flat[2], floors)
    return [part.reshape(shape) for part, shape in zip(np.split(p, np.cumsum([math.prod(s) for s in shapes])[:-1]),
                                                       shapes)]


def rise_pvalue(log_ratio, se, dof, floor: float):
    """One-sided p-value of log ratio > log(1 + floor) (a rise, not a fall). Scalars or arrays."""
    return _beyond(np.asarray(log_ratio, float), se, dof, math.log1p(floor))


def benjamini_hochberg(pvalues: Sequence[float], q: float = FDR) -> np.ndarray:
    """Rejections at false-discovery rate q (scipy's BH-adjusted p <= q); NaN: not a test."""
    from scipy.stats import false_discovery_control

    p = np.asarray(pvalues, float)
    ok = np.isfinite(p)
    out = np.zeros(len(p), bool)
    if ok.any():
        out[ok] = false_discovery_control(p[ok], method="bh") <= q
    return out


def holm(pvalues: Sequence[float], alpha: float = FDR) -> np.ndarray:
    """Rejections at family-wise error rate alpha: Holm's step-down, the i-th smallest of m
    p-values against alpha / (m - i) until the first above; NaN: not a test."""
    p = np.asarray(pvalues, float)
    idx = np.flatnonzero(np.isfinite(p))
    idx = idx[np.argsort(p[idx], kind="stable")]
    m = len(idx)
    out = np.zeros(len(p), bool)
    out[idx] = np.cumprod(p[idx] <= alpha / (m - np.arange(m))).astype(bool)
    return out


def unit_mean(logs: np.ndarray) -> tuple[float, float, int]:
    """(mean, standard error, units) of the mean log over units (rows) and sizes (columns): each
    unit's mean over the sizes is one replicate (se NaN with fewer than two units)."""
    means = np.nanmean(logs[np.isfinite(logs).any(axis=1)], axis=1)
    est = float(np.mean(means)) if len(means) else math.nan
    se = float(np.std(means, ddof=1) / math.sqrt(len(means))) if len(means) >= 2 else math.nan
    return est, se, len(means)


def unit_mean_interval(logs: np.ndarray, level: float = LEVEL) -> Interval:
    """exp of `unit_mean` with a t interval over the units' means (units - 1 df): sizes of a unit
    are never treated as independent."""
    est, se, n = unit_mean(logs)
    if n < 2:
        return Interval.unknown(math.exp(est), "one unit: no interval")
    return t_interval(est, se, n - 1, level, f"t interval over {n} units' mean log ratio ({n - 1} df)")


def quotient(a: tuple[float, float, float, int], b: tuple[float, float, float, int]) -> Interval:
    """The ratio of two points' values (`Series.point` of each: log centre, se, dof) with a t
    interval on its log, their errors added (two points of independent runs) and Welch-
    Satterthwaite's degrees of freedom; none where either has no noise."""
    d, se = a[0] - b[0], math.hypot(a[1], b[1])
    if not (np.isfinite(se) and se > 0):
        return Interval.unknown(math.exp(d), "a point without an interval: none for the ratio")
    parts = [(e ** 4 / f) for e, f in ((a[1], a[2]), (b[1], b[2])) if e > 0]
    dof = se ** 4 / sum(parts) if all(np.isfinite(parts)) and sum(parts) > 0 else min(a[2], b[2])
    return t_interval(d, se, dof, method="Welch t interval on the log ratio of the two points' medians")


def center_interval(values: Sequence[float], level: float = LEVEL) -> Interval:
    """One point's value over its units (runs, ranks), as the model takes a series' value at a
    size: the median of their logs, with the model's t interval on it (`Series.noise` of a
    one-point series: Shamos' sigma of the units' pairwise differences, sqrt(pi/2) sigma / sqrt(k)
    for k >= 3 units, k - 1 degrees of freedom); exp of both. Every value the report prints of a
    point is this one, so a table, a headline and a ratio beside them agree."""
    estimate, se, dof, k = center_point(values)
    if not k:
        return Interval.unknown(math.nan, "no value")
    if k < 2:
        return Interval.unknown(math.exp(estimate), "one unit: no interval")
    if not se > 0:
        return Interval.unknown(math.exp(estimate), f"{k} units alike: no spread")
    return t_interval(estimate, se, dof, level,
                      f"median over {k} units, t interval on its log from their spread (Shamos' sigma, {int(dof)} df)")


def center_point(values: Sequence[float]) -> tuple[float, float, float, int]:
    """`center_interval`'s (log centre, se, dof, units), as `Series.point` gives a series' point."""
    logs = np.log(np.asarray(values, dtype=float).reshape(-1))
    logs = logs[np.isfinite(logs)]
    if not len(logs):
        return math.nan, math.nan, math.nan, 0
    s = Series({}, np.zeros(1, dtype=np.int64), logs[:, None], np.full((len(logs), 1), np.nan), list(range(len(logs))))
    return s.point(0)


def unit_interval(d: np.ndarray, run_se: np.ndarray, what: str) -> tuple[Interval, float, float]:
    """A log quantity measured once per repetition (NaN where one lacks it) as (interval, se,
    dof): a t interval over repetitions, or with one repetition a normal interval from its
    within-run spread, or no interval."""
    ok = np.isfinite(d)
    d, run_se = d[ok], run_se[ok]
    if len(d) >= 2:
        est, se, n = unit_mean(d[:, None])
        return (t_interval(est, se, n - 1, method=f"t interval over {n} repetitions on the log {what} "
                                                  f"({n - 1} df)"), se, n - 1)
    if len(d) == 1 and np.isfinite(run_se[0]) and run_se[0] > 0:
        return (t_interval(float(d[0]), float(run_se[0]), math.inf,
                           method=f"normal interval on the log {what} from the within-run spread "
                                  f"({REPETITIONS_NOTE})"), float(run_se[0]), math.inf)
    return (Interval.unknown(math.exp(float(d[0])) if len(d) else math.nan,
                             "noise unknown: one repetition without within-run spread"), math.nan, math.nan)


# ---------------------------------------------------------------- replicates off their series

def others_median(x: np.ndarray) -> np.ndarray:
    """Per cell, numpy's median of the finite values of the other cells of its row (NaN where
    none): the sorted row's order statistics with the cell's own place skipped (one sort a row)."""
    finite = np.isfinite(x)
    keyed = np.where(finite, x, np.inf)                       # missing values sort last
    order = np.argsort(keyed, axis=1, kind="stable")
    ranked = np.take_along_axis(keyed, order, axis=1)
    place = np.empty_like(order)
    np.put_along_axis(place, order, np.broadcast_to(np.arange(x.shape[1]), x.shape), axis=1)
    k = finite.sum(axis=1, keepdims=True) - finite            # the others' finite values
    last = x.shape[1] - 1

    def at(q: np.ndarray) -> np.ndarray:
        skip = finite & (q >= place)                          # past the cell's own value
        return np.take_along_axis(ranked, np.clip(np.where(skip, q + 1, q), 0, last), axis=1)

    low, high = at((k - 1) // 2), at(k // 2)
    return np.where(k <= 0, np.nan, np.where(k % 2 == 1, low, (low + high) / 2))


def _left_out(s: Series, band: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(dof, sigma, centre, replicates) per size with each replicate left out in turn, as rows:
    `Series.noise` and `Series.center` of the series without it. Sigma exactly while every
    difference once per replicate fits in LOO_CELLS (a few tens of replicates); past that, the
    whole series' (one of more than ~50 replicates moves it a few per cent, an outlier upwards)."""
    r, m = s.logs.shape
    finite = np.isfinite(s.logs)
    k = finite.sum(axis=0) - finite                          # (r, m): replicates left per size
    ref = others_median(s.logs.T).T                          # the median of the others at each size
    pairwise = k.max(axis=1) >= 2                            # else the others' noise is their runs' own
    sig = np.full((r, m), np.nan)
    if pairwise.any():
        d, a, b, pairs = _pair_diffs(s.logs)
        if len(a) == pairs and r * d.size * (2 * band + 1) <= LOO_CELLS:
            pooled = _pooled(d, band)                        # (sizes, pairs x band): pair p at p // width
            pair = np.arange(pooled.shape[1]) // (2 * band + 1)
            mine = (a[pair][None, :] == np.arange(r)[:, None]) | (b[pair][None, :] == np.arange(r)[:, None])
            sig = SHAMOS * _nanmedian(np.where(mine[:, None, :], np.nan, pooled[None]), axis=2)
        else:
            sig = np.broadcast_to(s.noise(band)[2], (r, m)).copy()
    ok = pairwise[:, None] & np.isfinite(sig) & (k > 0)
    sig = np.where(ok, sig, np.nan)
    dof = np.where(ok, np.maximum(1, _band_sum(np.maximum(k - 1, 0), band)), np.inf)
    for u in np.nonzero(~pairwise)[0]:      # the others' own runs (`Series.noise`), one by one
        rest = Series(s.key, s.sizes, np.delete(s.logs, u, axis=0), np.delete(s.run_se, u, axis=0),
                      [x for i, x in enumerate(s.replicates) if i != u])
        _, dof[u], sig[u], _ = rest.noise(band)
    return dof, sig, ref, k


def series_sigma(s: Series, skip: Sequence[int] = ()) -> float:
    """Sigma of one replicate pooled over every size of a series (but `skip`): Shamos's estimate
    from every pair of replicates at every size; NaN with fewer than two replicates."""
    if s.logs.shape[0] < 2:
        return math.nan
    d = _pair_diffs(s.logs)[0]
    keep = np.setdiff1d(np.arange(d.shape[1]), np.asarray(skip, dtype=int))
    values = d[:, keep]
    values = values[np.isfinite(values)]
    return float(SHAMOS * np.median(values)) if values.size else math.nan


# A replicate is tested against the others of its point only where MIN_OTHERS of them remain: with
# two, their median is their mean, and one real outlier among them makes a normal replicate look off.
MIN_OTHERS = 3


def deviations(series: Sequence[Series], floors: Sequence[float], alpha: float = FDR,
               skip: Sequence[Sequence[int]] | None = None) -> list[tuple]:
    """Replicates off the others of their series at one size: |own - median(others)| beyond
    log(1 + floor) and the others' noise (an outlier does not widen its own reference), Holm over
    every replicate and size; only where MIN_OTHERS others remain, and only a replicate off the
    median of all of them on the same side (never the majority against one). The noise is the larger of the size's band (with the replicate left
    out) and the whole series' (`series_sigma`): a band of three sizes with a few replicates can
    come out several times too small (a sigma of 0.012 against the series' 0.066), and a point
    would then be off the others from noise alone. `skip`: per series, the indices of sizes not
    searched (those called unstable: their runs' own samples disagree, so their medians are not
    evidence of anything). Each found: (series, replicate and size index, log deviation, others'
    log median, Interval of exp(deviation), p-value)."""
    tested = []      # per series: (series index, replicate, size, deviation, centre, se, dof) of each point
    tests = []       # and its p-values' arguments, taken in one call
    for n, (s, floor) in enumerate(zip(series, floors)):
        if s.logs.shape[0] - 1 < MIN_OTHERS:
            continue
        dof, sig, ref, k = _left_out(s)
        left_out = skip[n] if skip is not None else ()
        pooled = series_sigma(s, left_out)
        if np.isfinite(pooled):
            sig = np.where(np.isfinite(sig), np.maximum(sig, pooled), sig)
        searched = np.ones(len(s.sizes), bool)
        searched[np.asarray(left_out, dtype=int)] = False
        u, j = np.nonzero(np.isfinite(s.logs) & (k >= MIN_OTHERS) & searched[None, :])
        se = sig[u, j] * np.sqrt(1 + math.pi / 2 / np.maximum(k[u, j], 1))
        diff = s.logs[u, j] - ref[u, j]
        # never the majority against one: a replicate is off only where it is off the median of
        # every replicate at that size too, on the same side
        whole = np.nanmedian(s.logs, axis=0)[j]
        keep = np.sign(s.logs[u, j] - whole) == np.sign(diff)
        u, j, se, diff = u[keep], j[keep], se[keep], diff[keep]
        tested.append((np.full(len(u), n), u, j, diff, ref[u, j], se, dof[u, j]))
        tests.append((diff, se, dof[u, j], floor))
    if not tested:
        return []
    n, u, j, diff, ref, se, dof = (np.concatenate(c) for c in zip(*tested))
    p = np.concatenate(excess_pvalues(tests))
    return [(int(n[i]), int(u[i]), int(j[i]), float(diff[i]), float(ref[i]),
             t_interval(float(diff[i]), float(se[i]), float(dof[i])), float(p[i]))
            for i in np.nonzero(holm(p, alpha))[0]]


def sustained_onset(flags: Sequence[bool]) -> int | None:
    """Index from which every later flag is set, or None."""
    j = len(flags)
    while j > 0 and flags[j - 1]:
        j -= 1
    return j if j < len(flags) else None


def parting_onset(flags: Sequence[bool], centre: Sequence[float] | None = None) -> int | None:
    """Index where two curves begin to part for good: the first flag followed by another flag, or
    after which the log ratio (`centre`) stays above 0 at every larger size, or a flag at the last
    index; else None. Unlike `sustained_onset` a later dip under the floor (the TLB's cost
    shrinking on the DRAM plateau, then growing again with the page walks of the largest sizes)
    does not move the onset to the far end, while a lone flag the curves cross back over is no
    onset."""
    n = len(flags)
    for j in range(n):
        if flags[j] and (j == n - 1 or flags[j + 1]
                         or (centre is not None and all(float(v) > 0 for v in centre[j + 1:]))):
            return j
    return None


def onset_interval(series: Series, onset: int, flags_of: Callable[[np.ndarray], Sequence[bool]],
                   draws: int = 300, rule: Callable[..., int | None] = sustained_onset,
                   centre: bool = False) -> Interval:
    """Bootstrap of an onset: each draw of the series is retested by `flags_of` (the same tests and
    multiple-testing rule as the estimate) and its onset size, by the same `rule` (given the draw
    too where `centre`), kept."""
    found = []
    for d in series.draws(SEED + 1, draws):
        o = rule(flags_of(d), d) if centre else rule(flags_of(d))
        found.append(series.sizes[o] if o is not None else np.nan)
    sizes = np.array(found, float)
    hit = sizes[np.isfinite(sizes)]
    if len(hit) == 0:
        return Interval.unknown(float(series.sizes[onset]), "bootstrap never finds the onset")
    return Interval(float(series.sizes[onset]), float(np.quantile(hit, 0.025)), float(np.quantile(hit, 0.975)),
                    LEVEL, f"percentile bootstrap over {series.logs.shape[0]} replicates ({draws} draws); the "
                           f"onset is found in {len(hit) / len(sizes):.0%} of draws")
