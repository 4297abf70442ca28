"""The latency tables: one row per point of a series (medians over repetitions), split into the
configurations that get a figure, a table or a finding each, and into the lines of one figure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from numasweep.core.topology import Topology
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


def latency_points(latency: pd.DataFrame | None, topo: Topology | None) -> pd.DataFrame:
    """One row per (rank configuration, size): median latency over repetitions, with the keys the
    analyses group by (`locality`, `l3_position`)."""
    need = {"size_bytes", "latency_ns_median"}
    if latency is None or latency.empty or not need <= set(latency.columns):
        return pd.DataFrame()
    df = latency.copy(deep=False)
    # text columns as categoricals (a million rows group on their codes), text again once grouped
    for col in ("mode", "page_size", "policy", "weights", "strategy", "domains", "memory"):
        df[col] = tables.as_text(df[col], categorical=True) if col in df else ""
    for col, default in (("rank", 0), ("cpu", -1), ("cpu_node", -1), ("l3_group", -1), ("ranks", 1),
                         ("ranks_per_domain", 0)):
        df[col] = pd.to_numeric(df[col], errors="coerce").fillna(default).astype(int) if col in df else default
    df["mem_nodes"] = tables.node_lists(df["mem_nodes"], categorical=True) if "mem_nodes" in df else ""
    df["locality"] = series.row_codes(df[["cpu_node", "mem_nodes"]], lambda c, m: tables.locality(c, m, unplaced=None))
    pos = topo.l3_positions() if topo else {}
    df["l3_position"] = series.per_value(df["l3_group"], lambda g: pos.get(g, 0), dtype=np.int64)
    for col in ("latency_ns_min", "latency_ns_max"):
        df[col] = pd.to_numeric(df[col], errors="coerce") if col in df else np.nan
    keys = ["mode", "page_size", "policy", "weights", "strategy", "domains", "ranks_per_domain", "memory",
            "ranks", "rank", "cpu", "cpu_node", "l3_group", "l3_position", "mem_nodes", "locality"]
    # every other column of the series identity (label, host, system, pages) keeps series apart
    other = [c for c in series.series_columns(df, NAME) if c not in keys]
    for col in other:
        df[col] = tables.as_text(df[col], categorical=True)
    keys += other
    same = series.constant_keys(df, keys)
    out = df.groupby([k for k in keys if k not in same] + ["size_bytes"], as_index=False).agg(
        latency_ns=("latency_ns_median", "median"),
        lo=("latency_ns_min", "min"),
        hi=("latency_ns_max", "max"),
    )
    out = series.with_constants(out, df, same, keys + ["size_bytes"])
    series.text_again(out, str)
    return out
