"""Statistical model of the latency tables: noise, intervals and decisions.

Model (what every interval and decision of `levels` and `contrasts` rests on):
- A *series* is all rows sharing the caller's series-key columns, size aside. Inside a series, a
  *replicate* is one value of the caller's replicate-key columns (a job repetition, or ranks the
  analysis declares alike). The replicate is the unit of uncertainty; sizes of one replicate are
  never resampled apart.
- Each row is the median of a run's timed samples. Log latency of a sample = log of the run's
  centre + Normal(0, sigma_run). The CSV keeps only median, min, max and the sample count n, so
  sigma_run = log(max / min) / d2(n), d2(n) being the expected range of n standard normal draws
  (the control-chart constant), and the run median's standard error is sqrt(pi/2) sigma_run /
  sqrt(n). A heavy upper tail (interrupts) inflates the range, so this errs on the wide side;
  without n we take n = 2, wider still.
- The value of a series at a size is the median over its replicates of log latency. With two or
  more replicates its noise comes from their spread, per size band (the size and one tested size
  either side, pooled over those sizes): sigma = 1.0483 x the median absolute pairwise difference
  (Shamos' estimator; one erratic replicate barely moves it, and it moves only its own band),
  standard error sqrt(pi/2) sigma / sqrt(k) for k >= 3 replicates (sigma / sqrt(k) for k = 2),
  with sum(k - 1) degrees of freedom. With one replicate only the within-run spread is known and
  is said so; with neither, the noise is unknown and nothing is tested.
- A ratio of two values is a difference of logs; its interval is a Student-t interval on that
  difference (`t_interval`), or, for statistics with no closed form (medians over sizes, onsets,
  locations), a percentile bootstrap over replicates with the within-run error redrawn
  (`onset_interval`, and the locations of `levels`); a mean over sizes is a t interval over the
  units' own means (`unit_mean_interval`). Every Interval says which.
- A difference counts when it exceeds a floor of practical effect *and* the noise: the one-sided
  test of |log ratio| > log(1 + floor) (`excess_pvalue`), with the false-finding rate of all
  points tested in one analysis held at FDR by Benjamini-Hochberg (`benjamini_hochberg`), or the
  family-wise rate by Holm (`holm`) where one false claim would be as bad as several.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from numasweep.errors import NumasweepError

LEVEL = 0.95            # confidence level of every interval
FDR = 0.05              # false-finding rate of the decisions of one analysis
SEED = 20261123         # bootstraps are reproducible: the same table gives the same interval
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)   # SE(median) / SE(mean) of normal draws
SHAMOS = 1.0483         # sigma = SHAMOS x median |x_i - x_j| for normal draws
@dataclass(frozen=True)
class Measure:
    """Which columns of a tidy table hold a series' axis, its value and each run's spread (the
    run's lowest and highest sample and the sample count)."""
    value: str
    low: str
    high: str
    count: str
    axis: str


LATENCY = Measure("latency_ns_median", "latency_ns_min", "latency_ns_max", "samples", "size_bytes")


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

def check_values(table: pd.DataFrame, where: str, measure: Measure = LATENCY) -> None:
    """Refuse values and axis points that no kernel writes (latencies and sizes by default):
    zero, negative, infinite, or a missing value. Names the file, CSV line (header = line 1, for a
    table read straight from a CSV) and column. Missing min/max/samples are allowed (legacy
    imports have none)."""
    bad: list[str] = []
    for col in (measure.axis, measure.value, measure.low, measure.high, measure.count):
        if col not in table:
            continue
        values = pd.to_numeric(table[col], errors="coerce")
        required = col in (measure.axis, measure.value)
        missing = table[col].isna()
        if not pd.api.types.is_numeric_dtype(table[col]):
            missing |= table[col].astype(str).str.strip() == ""
        unreadable = values.isna() & ~missing
        wrong = unreadable | (values.notna() & (~np.isfinite(values) | (values <= 0)))
        if required:
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
    if n < 2:
        return math.nan
    x = np.linspace(-9, 9, 20001)
    cdf = sps.norm.cdf(x)
    return float(np.trapezoid(1 - cdf ** n - (1 - cdf) ** n, x))


def run_standard_error(table: pd.DataFrame, measure: Measure = LATENCY) -> np.ndarray:
    """Standard error of each row's log median from its min, max and samples (NaN when absent)."""
    n = len(table)

    def column(name: str) -> np.ndarray:
        return pd.to_numeric(table[name], errors="coerce").to_numpy(float) if name in table else np.full(n, np.nan)
    lo, hi, k = column(measure.low), column(measure.high), column(measure.count)
    k = np.where(np.isfinite(k) & (k >= 2), k, 2).astype(int)
    d2 = np.array([range_constant(int(v)) for v in k])
    sigma = np.log(hi / lo) / d2
    return MEDIAN_EFFICIENCY * sigma / np.sqrt(k)


# ---------------------------------------------------------------- series values

@dataclass
class Series:
    """One series: replicates x sizes of log latency, and their within-run standard errors."""
    key: dict
    sizes: np.ndarray            # bytes, ascending
    logs: np.ndarray             # (replicates, sizes), NaN where a replicate lacks a size
    run_se: np.ndarray           # same shape, NaN where unknown
    replicates: list

    @property
    def k(self) -> np.ndarray:
        return np.sum(np.isfinite(self.logs), axis=0)

    def center(self, logs: np.ndarray | None = None) -> np.ndarray:
        return np.nanmedian(self.logs if logs is None else logs, axis=0)

    def latency_ns(self) -> np.ndarray:
        return np.exp(self.center())

    def noise(self, band: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """(se of the log centre, degrees of freedom, sigma of one replicate) per size, and the rule."""
        m = len(self.sizes)
        se, dof, sig = np.full(m, np.nan), np.full(m, np.inf), np.full(m, np.nan)
        k = self.k
        if np.nanmax(k, initial=0) >= 2:
            diffs_by_size = []
            for j in range(m):
                col = self.logs[:, j][np.isfinite(self.logs[:, j])]
                diffs_by_size.append(np.abs(col[:, None] - col[None, :])[np.triu_indices(len(col), 1)])
            for j in range(m):
                lo, hi = max(0, j - band), min(m, j + band + 1)
                pooled = np.concatenate(diffs_by_size[lo:hi])
                if len(pooled) == 0 or k[j] == 0:
                    continue
                sig[j] = SHAMOS * float(np.median(pooled))
                factor = MEDIAN_EFFICIENCY if k[j] >= 3 else 1.0
                se[j] = factor * sig[j] / math.sqrt(k[j])
                dof[j] = max(1, int(np.sum(np.maximum(k[lo:hi] - 1, 0))))
            return se, dof, sig, f"spread of replicates, pooled over a band of {2 * band + 1} sizes"
        run = np.nanmedian(np.where(np.isfinite(self.run_se), self.run_se, np.nan), axis=0) \
            if np.isfinite(self.run_se).any() else np.full(m, np.nan)
        if np.isfinite(run).any():
            return run, np.full(m, np.inf), run, "within-run spread only (one replicate: run-to-run variation unseen)"
        return se, dof, sig, "unknown (one replicate, no within-run spread)"

    def draws(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Bootstrap draws of the log centre: replicates resampled whole, within-run error redrawn."""
        r, m = self.logs.shape
        pick = rng.integers(0, r, (n, r)) if r > 1 else np.zeros((n, 1), int)
        run_se = np.nan_to_num(self.run_se, nan=0.0)
        logs = self.logs[pick] + rng.standard_normal((n, pick.shape[1], m)) * run_se[pick]
        return np.nanmedian(logs, axis=1)


def series_table(table: pd.DataFrame, series_keys: Sequence[str], replicate_keys: Sequence[str],
                 measure: Measure = LATENCY) -> list[Series]:
    """Split a tidy latency table into Series (see the module docstring for keys); `measure`
    names the axis, value and spread columns of another table (bandwidth over threads)."""
    df = table.copy()
    keys = [k for k in series_keys if k in df]
    reps = [k for k in replicate_keys if k in df]
    for col in keys + reps:
        df[col] = df[col].astype(object).where(df[col].notna(), "")
    df["_log"] = np.log(pd.to_numeric(df[measure.value], errors="coerce"))
    df["_se"] = run_standard_error(df, measure)
    if not reps:
        df["_rep"], reps = 0, ["_rep"]
    out = []
    groups = df.groupby(keys, sort=True, dropna=False) if keys else [((), df)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        sizes = np.sort(g[measure.axis].astype(np.int64).unique())
        agg = g.groupby(reps + [measure.axis], dropna=False).agg(_log=("_log", "median"), _se=("_se", "median"))
        wide = agg["_log"].unstack(measure.axis).reindex(columns=sizes)
        wse = agg["_se"].unstack(measure.axis).reindex(columns=sizes)
        out.append(Series(dict(zip(keys, key)), sizes, wide.to_numpy(float), wse.to_numpy(float),
                          list(wide.index)))
    return out


# ---------------------------------------------------------------- intervals and tests

def t_interval(log_ratio: float, se: float, dof: float, level: float = LEVEL, method: str = "") -> Interval:
    """Interval of exp(log_ratio) from a Student-t interval on the log scale."""
    if not (np.isfinite(se) and se > 0):
        return Interval.unknown(math.exp(log_ratio), "noise unknown")
    q = sps.t.ppf(0.5 + level / 2, dof) if np.isfinite(dof) else sps.norm.ppf(0.5 + level / 2)
    return Interval(math.exp(log_ratio), math.exp(log_ratio - q * se), math.exp(log_ratio + q * se), level,
                    method or f"t interval on the log ratio ({'inf' if not np.isfinite(dof) else int(dof)} df)")


def _sf(z: np.ndarray, dof: np.ndarray) -> np.ndarray:
    z, dof = np.broadcast_arrays(np.asarray(z, float), np.asarray(dof, float))
    return np.where(np.isfinite(dof), sps.t.sf(z, np.where(np.isfinite(dof), dof, 1)), sps.norm.sf(z))


def excess_pvalue(log_ratio, se, dof, floor: float):
    """One-sided p-value of |log ratio| > log(1 + floor): the effect exceeds the practical floor.
    Scalars or arrays; NaN where the noise is unknown."""
    se = np.asarray(se, float)
    ok = np.isfinite(se) & (se > 0)
    z = (np.abs(np.asarray(log_ratio, float)) - math.log1p(floor)) / np.where(ok, se, 1)
    p = np.where(ok, _sf(z, dof), np.nan)
    return float(p) if p.ndim == 0 else p


def rise_pvalue(log_ratio, se, dof, floor: float):
    """One-sided p-value of log ratio > log(1 + floor) (a rise, not a fall). Scalars or arrays."""
    se = np.asarray(se, float)
    ok = np.isfinite(se) & (se > 0)
    z = (np.asarray(log_ratio, float) - math.log1p(floor)) / np.where(ok, se, 1)
    p = np.where(ok, _sf(z, dof), np.nan)
    return float(p) if p.ndim == 0 else p


def benjamini_hochberg(pvalues: Sequence[float], q: float = FDR) -> np.ndarray:
    """Rejections at false-discovery rate q (NaN p-values are never rejected)."""
    p = np.asarray(pvalues, float)
    ok = np.isfinite(p)
    out = np.zeros(len(p), bool)
    m = int(ok.sum())
    if m == 0:
        return out
    idx = np.where(ok)[0][np.argsort(p[ok])]
    passed = p[idx] <= q * np.arange(1, m + 1) / m
    if passed.any():
        out[idx[: np.max(np.where(passed)[0]) + 1]] = True
    return out


def holm(pvalues: Sequence[float], alpha: float = FDR) -> np.ndarray:
    """Rejections with the family-wise error rate held at alpha (Holm's step-down)."""
    p = np.asarray(pvalues, float)
    ok = np.isfinite(p)
    out = np.zeros(len(p), bool)
    m = int(ok.sum())
    idx = np.where(ok)[0][np.argsort(p[ok])]
    for rank, i in enumerate(idx):
        if p[i] > alpha / (m - rank):
            break
        out[i] = True
    return out


def unit_mean(logs: np.ndarray) -> tuple[float, float, int]:
    """(mean, standard error, units) of the mean log over units (rows) and sizes (columns): each
    unit's mean over the sizes is one replicate (se NaN with fewer than two units)."""
    means = np.array([np.nanmean(r) for r in logs if np.isfinite(r).any()])
    est = float(np.mean(means)) if len(means) else math.nan
    se = float(np.std(means, ddof=1) / math.sqrt(len(means))) if len(means) >= 2 else math.nan
    return est, se, len(means)


def unit_mean_interval(logs: np.ndarray, level: float = LEVEL) -> Interval:
    """exp of the mean log over units (rows) and sizes (columns): each unit's mean over the sizes
    is one replicate, and the interval a t interval over those (units - 1 df). Sizes of a unit
    are never treated as independent."""
    est, se, n = unit_mean(logs)
    if n < 2:
        return Interval.unknown(math.exp(est), "one unit: no interval")
    return t_interval(est, se, n - 1, level, f"t interval over {n} units' mean log ratio ({n - 1} df)")


def deviations(series: Sequence[Series], floors: Sequence[float], alpha: float = FDR) -> list[tuple]:
    """Replicates off the others of their series at one size: |own - median(others)| beyond
    log(1 + floor) and the noise, with the noise of the *others* only (leave-one-out: an outlier
    does not widen its own reference), Holm over every replicate and size.
    Returns (series index, replicate index, size index, log deviation, others' log median,
    Interval of exp(deviation), p-value) for each one found."""
    rows, pvals = [], []
    for n, (s, floor) in enumerate(zip(series, floors)):
        for u in range(s.logs.shape[0]):
            rest = Series(s.key, s.sizes, np.delete(s.logs, u, axis=0), np.delete(s.run_se, u, axis=0),
                          [r for i, r in enumerate(s.replicates) if i != u])
            if rest.logs.shape[0] < 2:
                continue
            _, dof, sig, _ = rest.noise()
            ref, k = rest.center(), rest.k
            ok = np.isfinite(s.logs[u]) & (k >= 2)
            se = sig * np.sqrt(1 + math.pi / 2 / np.maximum(k, 1))
            diff = s.logs[u] - ref
            p = excess_pvalue(diff, se, dof, floor)
            for j in np.where(ok)[0]:
                rows.append((n, u, int(j), float(diff[j]), float(ref[j]), float(se[j]), float(dof[j])))
                pvals.append(float(p[j]))
    keep = holm(pvals, alpha)
    return [(n, u, j, diff, ref, t_interval(diff, se, dof), p)
            for (n, u, j, diff, ref, se, dof), p, k in zip(rows, pvals, keep) if k]


def sustained_onset(flags: Sequence[bool]) -> int | None:
    """Index from which every later flag is set, or None."""
    onset = None
    for j in range(len(flags) - 1, -1, -1):
        if not flags[j]:
            break
        onset = j
    return onset


def onset_interval(series: Series, onset: int, flags_of: Callable[[np.ndarray], Sequence[bool]],
                   draws: int = 300) -> Interval:
    """Bootstrap of a sustained onset: each draw of the series is retested by `flags_of` (the same
    tests and multiple-testing rule as the estimate) and its onset size kept."""
    found = []
    for d in series.draws(np.random.default_rng(SEED + 1), draws):
        o = sustained_onset(flags_of(d))
        found.append(series.sizes[o] if o is not None else np.nan)
    sizes = np.array(found, float)
    hit = sizes[np.isfinite(sizes)]
    if len(hit) == 0:
        return Interval.unknown(float(series.sizes[onset]), "bootstrap never finds the onset")
    return Interval(float(series.sizes[onset]), float(np.quantile(hit, 0.025)), float(np.quantile(hit, 0.975)),
                    LEVEL, f"percentile bootstrap over {series.logs.shape[0]} replicates ({draws} draws); the "
                           f"onset is found in {len(hit) / len(sizes):.0%} of draws")
