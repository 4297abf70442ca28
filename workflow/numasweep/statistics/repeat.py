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

`run-job` and `run-batch` start here: the runner (a floor below) is handed `widest` for its
kernel's benchmark.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import numpy as np

from numasweep.core import registry
from numasweep.running import runjob
from numasweep.statistics import stats

Runs = list[list[dict[str, str]]]


def _number(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan


def widest(runs: Runs, bench: registry.Bench) -> tuple[float, str]:
    """(the widest relative half-width of a value's 95% interval over `runs`, that value in
    words: its column and what tells its row from the run's others); inf while a value has fewer
    than two runs."""
    keys = [c for c in dict.fromkeys((*bench.identity, *((bench.tables.axis,) if bench.tables.axis else ())))
            if len({row.get(c) for row in runs[0]}) > 1]
    values: dict[tuple[str, ...], list[float]] = {}
    for run in runs:
        for row in run:
            for metric in (m for m in bench.checks.metrics if m in row):
                values.setdefault((metric, *(f"{k} {row[k]}" for k in keys)), []).append(_number(row[metric]))
    worst, where = -1.0, ""
    for named, found in values.items():
        logs = np.log([v for v in found if v > 0])
        if len(logs) >= 2 and np.ptp(logs) == 0:
            width = 0.0
        else:
            iv = stats.center_interval(np.exp(logs)) if len(logs) else None
            width = (iv.high - iv.low) / 2 / iv.estimate if iv and np.isfinite(iv.high - iv.low) else math.inf
        if width > worst:
            worst, where = width, ", ".join(named)
    return worst, where


def widest_for(kernel: Path) -> Callable[[Runs], tuple[float, str]]:
    """`widest` for the benchmark whose kernel (or another build of it) is the file `kernel`."""
    bench = registry.of_kernel(kernel.name)
    if bench is None:
        return lambda runs: (math.inf, "values of a kernel no benchmark names")
    return lambda runs: widest(runs, bench)


def run_job(argv: list[str]) -> int:
    """`python -m numasweep run-job` (running.runjob.main) with repeat_until's intervals."""
    return runjob.main(argv, widest_for)


def run_batch(argv: list[str]) -> int:
    """`python -m numasweep run-batch` (running.runjob.run_batch) with repeat_until's intervals."""
    return runjob.run_batch(argv, widest_for)
