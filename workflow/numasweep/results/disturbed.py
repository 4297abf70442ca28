"""Which jobs were measured while disturbed, so that no finding, headline or export rests on them.

Each job carries a quality verdict, decided when it ended: `quiet`, `noisy` or `disturbed`, with
its reason in words (the aggregated columns `quality`, `quality_reason`, `quality_tries`, from
the job's provenance record). Tables written before jobs had a verdict fall back on what the
kernel recorded of its own runs: the least share of a sample's wall time a rank ran on its CPU
(`on_cpu_pct`, `chase_on_cpu_pct`), under DISTURBED_CPU_PCT disturbed, under NOISY_CPU_PCT
noisy. A table with neither has no verdict: its jobs count as quiet, as they always have.

`split(frames)` gives the frames without their disturbed jobs (what the analysis, the headline
and the exports use) and one record per benchmark and series left out (what the report lists
as "not concluded: measured while disturbed"); `noisy(frames)` the noisy ones, carried with
their verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.core.units import count_words
from numasweep.running import verdict
from numasweep.results import series

VERDICT, REASON, TRIES = verdict.COLUMN, "quality_reason", "quality_tries"
# The mark of a value, a line or a headline row that rests on a noisy job.
NOISY_MARK = "†"
QUIET, NOISY, DISTURBED = verdict.VERDICTS
# tables of before the verdict: the share rule of `running.verdict` on the kernel's own columns
DISTURBED_CPU_PCT = verdict.DISTURBED_ON_CPU_PCT
NOISY_CPU_PCT = verdict.NOISY_ON_CPU_PCT
ON_CPU = tuple(verdict.ON_CPU_COLUMNS)
READ = (VERDICT, REASON, TRIES) + ON_CPU     # the columns a verdict is read from


@dataclass
class Left:
    """Jobs of one series with one verdict: the benchmark, the series in words, the jobs and the
    reasons (each once)."""
    bench: str
    series: str
    verdict: str
    jobs: list[str]
    reasons: list[str]

    def sentence(self) -> str:
        return (f"{self.bench}, {self.series or 'all series'}: {count_words(len(self.jobs), 'job')} {self.verdict} "
                f"({'; '.join(self.reasons[:3])}{' ...' if len(self.reasons) > 3 else ''})")


def job_verdicts(df: pd.DataFrame, bench: str) -> pd.DataFrame:
    """Per row: its job's verdict and reason (columns VERDICT, REASON), from the recorded verdict
    or, without one, from the kernel's own CPU share (not where the threads of `bench` wait in the
    kernel by design, `checks.on_cpu`); quiet where neither was recorded."""
    out = pd.DataFrame({VERDICT: QUIET, REASON: ""}, index=df.index)
    if VERDICT in df:
        # no verdict recorded (an empty cell): quiet, as for a table without the column
        verdict = df[VERDICT].astype(object).where(df[VERDICT].notna() & (df[VERDICT].astype(str) != ""),
                                                   QUIET).astype(str)
        unknown = ~verdict.isin([QUIET, NOISY, DISTURBED])
        if unknown.any():     # never read as quiet: a hand-edited or foreign word is refused
            row = df[unknown].iloc[0]
            job = row.get("job_id", "?")
            raise NumasweepError(f"{bench}: job {job}: quality verdict {verdict[unknown].iloc[0]!r} is none of "
                                 f"{QUIET}, {NOISY}, {DISTURBED}; correct it in the job's row of {bench}.csv and its "
                                 f"{job}.json, or delete the job's CSV and measure it again")
        out[VERDICT] = verdict
        if REASON in df:
            out[REASON] = df[REASON].astype(object).where(df[REASON].notna(), "").astype(str)
        return out
    spec = registry.get(bench)
    present = [c for c in ON_CPU if c in df and not (spec and spec.checks.on_cpu == registry.ON_CPU_WAITS)]
    if not present:
        return out
    share = df[present].apply(pd.to_numeric, errors="coerce").min(axis=1)
    job = df["job_id"].astype(str) if "job_id" in df else pd.Series("", index=df.index)
    least = share.groupby(job).transform("min")
    who = "rank " + df["rank"].astype(str) if "rank" in df else pd.Series("a thread", index=df.index)
    at = who.groupby(job).transform(lambda w: w.loc[share.loc[w.index].idxmin()] if share.loc[w.index].notna().any()
                                    else "")
    for name, below in ((NOISY, NOISY_CPU_PCT), (DISTURBED, DISTURBED_CPU_PCT)):
        hit = least < below
        out.loc[hit, VERDICT] = name
        out.loc[hit, REASON] = [f"{w} ran on its CPU {v:.0f}% of a sample's time" for w, v in zip(at[hit], least[hit])]
    return out


def _series_words(df: pd.DataFrame, bench: str) -> pd.Series:
    """Each row's series in words, by what varies over the whole table; and its point on the
    series' axis where its job measured one point of several (a bandwidth job's thread count),
    so that a series' disturbed and noisy jobs are told apart."""
    spec = registry.get(bench)
    cols = [c for c in (spec.tables.series if spec else ()) if c in df and df[c].nunique() > 1
            and c not in ("rank", "cpu", "cpu_node", "l3_group")]
    axis = spec.tables.axis if spec else None
    if axis in df and "job_id" in df and df[axis].nunique() > 1 and \
            (df.groupby("job_id")[axis].transform("nunique") == 1).all():
        cols.append(axis)
    if not cols:
        return pd.Series("", index=df.index)
    return df[cols].astype(str).apply(lambda r: series.config_name(dict(r), cols), axis=1)


def _records(df: pd.DataFrame, bench: str, verdicts: pd.DataFrame, verdict: str) -> list[Left]:
    hit = verdicts[VERDICT] == verdict
    if not hit.any():
        return []
    words = _series_words(df, bench)[hit]      # named by what varies over the whole table
    jobs = df.loc[hit, "job_id"].astype(str) if "job_id" in df else pd.Series("", index=words.index)
    out = []
    for name, idx in words.groupby(words, sort=True).groups.items():
        out.append(Left(bench, str(name), verdict, sorted(set(jobs.loc[idx])),
                        list(dict.fromkeys(verdicts.loc[idx, REASON]))))
    return out


def split(frames: dict[str, pd.DataFrame], conclude: bool = False) -> tuple[dict[str, pd.DataFrame], list[Left]]:
    """(the frames without their disturbed jobs, a benchmark left out when all its jobs were; the
    series measured while disturbed, one record each). `conclude` (config conclude_disturbed, for
    emulated machines and test rigs whose timings are not the point): the frames whole, the
    records still given, for the report to say so."""
    clean, left = {}, []
    for bench, df in frames.items():
        verdicts = job_verdicts(df, bench)
        left += _records(df, bench, verdicts, DISTURBED)
        keep = (verdicts[VERDICT] != DISTURBED).to_numpy() | conclude
        if keep.all():
            clean[bench] = df
        elif keep.any():
            clean[bench] = df[keep].reset_index(drop=True)
    return clean, left


def noisy(frames: dict[str, pd.DataFrame]) -> list[Left]:
    """The noisy series of each benchmark, one record each."""
    return [r for bench, df in frames.items() for r in _records(df, bench, job_verdicts(df, bench), NOISY)]

