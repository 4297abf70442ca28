"""The quality verdict of one job, decided by run-job when the job ends: quiet, noisy or disturbed,
with the reason in words.

The rule, from the kernel's table and the machine's load average:

- disturbed: a rank or thread ran on its CPU under DISTURBED_ON_CPU_PCT (50%) of a sample's
  (or the timed repetitions') wall time, by the kernel's least share columns (`on_cpu_pct`,
  `chase_on_cpu_pct`, `load_on_cpu_pct`): other work had its CPU at least as long as it did;
  or a latency kernel spent every retake it had (`retaken` reached `samples`) and the samples it
  kept still ran under NOISY_ON_CPU_PCT (90%) on the CPU: its CPU stayed shared however often it
  measured again. Retakes spent on samples kept at 95% (RETAKE_BELOW_PCT, the kernels'
  NS_RETAKE_BELOW) or more did their job (ranks measuring together retake together, and a sample
  length tried again for its spread adds samples to lose).
- noisy: a share under NOISY_ON_CPU_PCT (90%); or retakes spent with samples kept between 90%
  and 95% on the CPU (as every CPU of a machine measures at once, and the machine's own work
  takes a few percent of one); or the typical row's spread within the run (the
  median over the rows of high - low over the reference, the benchmark's `checks.spread`:
  max - min over the median for latencies, best - average over the best for bandwidths) above
  its target (2% latency from 256 MiB on and 5% below, as numa_latency's --spread and
  --spread-small; 3% bandwidth); or the
  1-minute load average when the job ended above the machine's CPUs (more runnable work than
  CPUs: something waited).
- quiet otherwise.

The first cause found in that order is the reason. A disturbed job is measured again (run-job's
--retry-disturbed); what a job records is `{"verdict", "reason", "tries"}` in its provenance
(provenance.record's `quality`), and the aggregated tables carry it as `quality`,
`quality_reason` and `quality_tries`.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from numasweep.core import registry
from numasweep.core.registry import Spread
from numasweep.core.units import count_words

VERDICTS = ("quiet", "noisy", "disturbed")
COLUMN = "quality"          # a job's verdict, as its provenance records it and its rows carry it
DISTURBED_ON_CPU_PCT = 50.0
NOISY_ON_CPU_PCT = 90.0
# Share columns a kernel writes, and who ran under it.
ON_CPU_COLUMNS = {"on_cpu_pct": "a thread", "chase_on_cpu_pct": "the chase", "load_on_cpu_pct": "a load thread"}
# Retake columns: (the samples they are counted against, the share of the samples kept)
# (numa_latency, numa_loaded_latency); the share under which a kernel takes a sample again.
RETAKEN_COLUMNS = {"retaken": ("samples", "on_cpu_pct"), "chase_retaken": ("samples", "chase_on_cpu_pct")}
RETAKE_BELOW_PCT = 95.0


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _who(row: dict[str, str], column: str) -> str:
    rank = row.get("rank")
    return f"rank {rank}" if column == "on_cpu_pct" and rank not in (None, "") else ON_CPU_COLUMNS[column]


def least_on_cpu(rows: list[dict[str, str]]) -> tuple[float, str] | None:
    """(least share in percent, who ran under it) over the table's share columns; None when the
    kernel records none (gpu_xfer, tables of before the columns)."""
    found = [(v, _who(row, col)) for row in rows for col in ON_CPU_COLUMNS
             if (v := _number(row.get(col))) is not None]
    return min(found, key=lambda f: f[0]) if found else None


def retakes_spent(rows: list[dict[str, str]], below: float = RETAKE_BELOW_PCT) -> int:
    """Rows whose kernel spent every retake (retaken >= samples) and kept samples still under
    `below` percent on the CPU."""
    spent = 0
    for row in rows:
        for col, (of, share_col) in RETAKEN_COLUMNS.items():
            taken, samples, share = _number(row.get(col)), _number(row.get(of)), _number(row.get(share_col))
            spent += (taken is not None and samples is not None and samples > 0 and taken >= samples
                      and (share is None or share < below))
    return spent


def worst_spread(rows: list[dict[str, str]], spread: Spread | None) -> tuple[float, float] | None:
    """(spread in percent, its target) of the job's typical row: the median over its rows of the
    spread against its target (one size or kernel over it, a cache's edge or a first timed
    iteration, does not make a run noisy; most of them do); None when the benchmark records no
    spread (`spread` None) or the table lacks its columns. A bandwidth's spread is best over
    average (the figure reported is the best; the slowest single iteration says little of the
    others)."""
    if spread is None:
        return None
    found = []
    for row in rows:
        hi, lo, ref = _number(row.get(spread.high)), _number(row.get(spread.low)), _number(row.get(spread.reference))
        if hi is None or lo is None or not ref:
            continue
        target = spread.target_pct
        if spread.small is not None:
            size_col, under, small_target = spread.small
            size = _number(row.get(size_col))
            if size is not None and size < under:
                target = small_target
        found.append((100 * (hi - lo) / ref, target))
    if not found:
        return None
    found.sort(key=lambda f: f[0] / f[1])
    return found[(len(found) - 1) // 2]


def _bench_of(csv: Path) -> registry.Bench | None:
    """The benchmark of a job's table: the table's folder is its benchmark's name (as in
    provenance.record's `bench`); None for a folder no benchmark has."""
    return registry.get(Path(csv).parent.name)


def checks_of(csv: Path) -> registry.Checks | None:
    """The checks the benchmark of a job's table states (its spread, what its CPU share means)."""
    bench = _bench_of(csv)
    return bench.checks if bench else None


def decide(rows: list[dict[str, str]], load_after: float | None, cpus: int,
           checks: registry.Checks | None) -> tuple[str, str]:
    """(verdict, reason) of a job from its table's rows, the 1-minute load average when it ended
    (None: unknown), the machine's CPUs and its benchmark's checks: the spread it records
    (`checks.spread`), and whether its share on the CPU says anything (`checks.on_cpu`: not where
    its threads wait in the kernel by design)."""
    waits = checks is not None and checks.on_cpu == registry.ON_CPU_WAITS
    share = None if waits else least_on_cpu(rows)
    if share and share[0] < DISTURBED_ON_CPU_PCT:
        return "disturbed", f"{share[1]} on its CPU {share[0]:.0f}% of the time"
    spent = retakes_spent(rows, NOISY_ON_CPU_PCT)
    if spent:
        return "disturbed", (f"{count_words(spent, 'row')} took every sample again and stayed "
                             f"under {NOISY_ON_CPU_PCT:.0f}% on the CPU")
    if share and share[0] < NOISY_ON_CPU_PCT:
        return "noisy", f"{share[1]} on its CPU {share[0]:.0f}% of the time"
    spent = retakes_spent(rows)
    if spent:
        return "noisy", (f"{count_words(spent, 'row')} took every sample again and stayed "
                         f"under {RETAKE_BELOW_PCT:.0f}% on the CPU"
                         + (f" (at least {share[0]:.0f}%)" if share else ""))
    worst = worst_spread(rows, checks.spread if checks else None)
    if worst and worst[0] > worst[1]:
        return "noisy", f"spread within the run {worst[0]:.1f}%, above the target of {worst[1]:g}%"
    if load_after is not None and load_after > cpus:
        return "noisy", f"load average {load_after:.1f} on {cpus} CPUs when the job ended"
    return "quiet", "every thread on its CPU, spread within target"


def read_rows(path: Path) -> list[dict[str, str]]:
    """A job's table as the verdict reads it."""
    with open(path, newline="", errors="replace") as fh:
        return list(csv.DictReader(fh))


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def record(verdict: str, reason: str, tries: int) -> dict[str, object]:
    """The provenance record's `quality`."""
    return {"verdict": verdict, "reason": reason, "tries": tries}


def columns(quality: dict) -> dict[str, object]:
    """The aggregated tables' columns of a provenance record's `quality`."""
    return {"quality": quality.get("verdict"), "quality_reason": quality.get("reason"),
            "quality_tries": quality.get("tries")}
