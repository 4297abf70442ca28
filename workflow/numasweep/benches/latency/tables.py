"""The latency tables: one row per point of a series (medians over repetitions), split into the
configurations that get a figure, a table or a finding each, and into the lines of one figure."""

from __future__ import annotations

import pandas as pd

from numasweep.results import series, tables

NAME = "latency"
KERNEL = "numa_latency"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
SERIES = ("strategy", "domains", "ranks_per_domain", "ranks", "mode", "policy",
                          "mem_nodes", "weights", "page_size", "rank", "cpu", "cpu_node", "l3_group")
WITHIN = ("host", "rank", "cpu", "cpu_node", "l3_group", "mem_nodes")


# A point's sample range: the fastest and slowest sample of its runs, where the kernel recorded them.
SPREAD = ("latency_ns_min", "latency_ns_max")


def latency_table(df: pd.DataFrame, per_repetition: bool = False) -> pd.DataFrame:
    """Median over repetitions: one row per point of a series (`numasweep.results.series`), of its
    latency and, where recorded, its sample range (SPREAD); `per_repetition`: one row per run
    instead (each repetition its own row, `repetition` kept)."""
    out = series.point_table(df, NAME, ["latency_ns_median", *SPREAD], first=("page_fractions",),
                             keep=("repetition",) if per_repetition else ())
    if "ranks" in out:
        # Rank 0 of a 1-rank run and rank 0 of an 8-rank run are different measurements: the
        # rank count names the configuration (`concurrent-8 ranks`), it is never averaged over.
        out["ranks"] = out["ranks"].map(tables.rank_label)
    return out


def latency_configs(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Per mode, then per every other configuration column that varies (`numasweep.results.series`)."""
    return series.configurations(df, NAME, first="mode")


def latency_lines(part: pd.DataFrame, by: tuple[str, ...] = ()):
    """(key, rows) per line of one latency configuration: one per rank (and host, CPU), and per
    value of the columns `by` (the page kinds of one figure)."""
    cols = [*by] + [c for c in WITHIN if c in part]
    return part.groupby(cols, sort=True, dropna=False)
