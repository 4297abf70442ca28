"""repeat_until (config): a grid point's kernel run again until the 95% interval of each value it
measures is as narrow as the campaign asks, or the cap on runs is reached.

A point's values are its benchmark's measured columns (`Bench.checks.metrics`) at each of its rows, a
row named by the benchmark's series and axis columns that tell a run's rows apart (a latency job's
rank and size, a bandwidth job's STREAM kernel). After each run, each value's interval over the runs so
far is the one the report's headline gives a point it reads alone (`stats.center_interval` on one
value per run: the median with the model's t interval on it); while the widest relative
half-width, (high - low) / 2 / estimate, is above the benchmark's target, the kernel runs again
(running.runjob), up to `max_repeats` more runs. One run has no interval, so a point with a
target runs twice at least; runs that agree to the last digit have an interval of no width.

`run-job` and `run-batch` start here: the runner (a floor below) is handed `widest_for` for its
kernel's benchmark. A job's runner needs nothing but Python's standard library (a compute node's
`python` may have no numpy, and the kernels' environment has no python of its own): this module
imports none, takes the benchmark's columns from the job's `--bench-facts` (`registry.runner_facts`,
which the workflow writes), and works the interval out with `statistics.median` and Student t's
quantile from its closed form for whole degrees of freedom (Abramowitz and Stegun 26.7.3-4);
`tests/workflow/test_repeat_until.py` checks it against `stats.center_interval`, scipy's.
"""

from __future__ import annotations

import itertools
import math
import statistics
from pathlib import Path
from typing import Callable

from numasweep.core import registry
from numasweep.running import runjob
from numasweep.statistics.constants import LEVEL, MEDIAN_EFFICIENCY, SHAMOS

Runs = list[list[dict[str, str]]]


def _number(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan


def t_cdf(t: float, dof: int) -> float:
    """Student t's distribution function at `t` for whole `dof`, in closed form: with
    theta = atan(t / sqrt(dof)), A = P(|T| < t) is a finite sum of powers of cos(theta)
    (Abramowitz and Stegun 26.7.3 for odd dof, 26.7.4 for even)."""
    theta = math.atan(abs(t) / math.sqrt(dof))
    c, s = math.cos(theta), math.sin(theta)
    if dof % 2:
        term, total = c, c if dof > 1 else 0.0
        for j in range(1, (dof - 3) // 2 + 1):
            term *= c * c * (2 * j) / (2 * j + 1)
            total += term
        a = 2 / math.pi * (theta + s * total)
    else:
        term, total = 1.0, 1.0
        for j in range(1, (dof - 2) // 2 + 1):
            term *= c * c * (2 * j - 1) / (2 * j)
            total += term
        a = s * total
    return 0.5 + math.copysign(a / 2, t)


def t_quantile(p: float, dof: int) -> float:
    """Student t's quantile for whole `dof` (`t_cdf` inverted by bisection to the float's last bits)."""
    low, high = -1.0, 1.0
    while t_cdf(low, dof) > p:
        low *= 2
    while t_cdf(high, dof) < p:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        low, high = (mid, high) if t_cdf(mid, dof) < p else (low, mid)
    return (low + high) / 2


def center_interval(values: list[float]) -> tuple[float, float, float]:
    """(estimate, low, high) of one point's value over its runs, as `stats.center_interval` gives
    it: the median of the logs with the model's t interval (Shamos' sigma of the pairwise
    differences; sqrt(pi/2) sigma / sqrt(k) for k >= 3 runs; k - 1 degrees of freedom); NaN
    bounds with fewer than two runs or no spread."""
    logs = [math.log(v) for v in values if v > 0 and math.isfinite(v)]
    if not logs:
        return math.nan, math.nan, math.nan
    k, y = len(logs), statistics.median(logs)
    if k < 2:
        return math.exp(y), math.nan, math.nan
    sigma = SHAMOS * statistics.median(abs(a - b) for a, b in itertools.combinations(logs, 2))
    se = (MEDIAN_EFFICIENCY if k >= 3 else 1.0) * sigma / math.sqrt(k)
    if not se > 0:
        return math.exp(y), math.nan, math.nan
    q = t_quantile(0.5 + LEVEL / 2, k - 1)
    return math.exp(y), math.exp(y - q * se), math.exp(y + q * se)


def widest(runs: Runs, metrics: list[str], rows: list[str]) -> tuple[float, str]:
    """(the widest relative half-width of a value's 95% interval over `runs`, that value in
    words: its column and what tells its row from the run's others); inf while a value has fewer
    than two runs. `metrics`: the benchmark's measured columns; `rows`: its series and axis
    columns, of which those that vary within a run name a row."""
    keys = [c for c in dict.fromkeys(rows) if len({row.get(c) for row in runs[0]}) > 1]
    values: dict[tuple[str, ...], list[float]] = {}
    for run in runs:
        for row in run:
            for metric in (m for m in metrics if m in row):
                values.setdefault((metric, *(f"{k} {row[k]}" for k in keys)), []).append(_number(row[metric]))
    worst, where = -1.0, ""
    for named, found in values.items():
        kept = [v for v in found if v > 0]
        if len(kept) >= 2 and min(kept) == max(kept):
            width = 0.0
        else:
            estimate, low, high = center_interval(kept)
            width = (high - low) / 2 / estimate if math.isfinite(high - low) else math.inf
        if width > worst:
            worst, where = width, ", ".join(named)
    return worst, where


def widest_for(kernel: Path, facts: dict | None = None) -> Callable[[Runs], tuple[float, str]]:
    """`widest` for the benchmark of a job: its `facts` (run-job --bench-facts), else the one whose
    kernel (or another build of it) is the file `kernel`, read from the registry (which imports
    every benchmark, and numpy with them)."""
    if facts is None:
        bench = registry.of_kernel(kernel.name)
        if bench is None:
            return lambda runs: (math.inf, "values of a kernel no benchmark names")
        facts = registry.runner_facts(bench)
    return lambda runs: widest(runs, facts["metrics"], facts["rows"])


def run_job(argv: list[str]) -> int:
    """`python -m numasweep run-job` (running.runjob.main) with repeat_until's intervals."""
    return runjob.main(argv, widest_for)


def run_batch(argv: list[str]) -> int:
    """`python -m numasweep run-batch` (running.runjob.run_batch) with repeat_until's intervals."""
    return runjob.run_batch(argv, widest_for)
