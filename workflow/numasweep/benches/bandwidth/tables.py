"""The bandwidth tables: one row per point of a series (medians over repetitions), split into the
configurations that get a figure or a table each and into the lines of one figure, and one row
per run for the statistics (`bandwidth_points`)."""

from __future__ import annotations

import pandas as pd

from numasweep.results import series
from numasweep.results.tables import as_label, as_text, node_lists, with_memory_node

NAME = "bandwidth"
KERNEL = "numa_bandwidth"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
# Only what the user configured: the CPU list follows from the thread count (the axis) and the
# arrays' size is the kernel's own (one per sweep, which its label names), so neither splits a
# thread sweep into single points.
SERIES = ("kernel", "stores", "pattern", "stride", "page_size", "policy", "cpu_node", "cpu_nodes",
                            "mem_nodes", "weights")
WITHIN = ("host", "cpu_node", "cpu_nodes", "memory", "policy", "mem_nodes", "weights")


def bandwidth_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median over repetitions of the best bandwidth (and of the slowest timed iteration,
    `min_mb_s`, where recorded) per point of a series, with the memory node of each row."""
    df = df.copy()
    if "kernel" not in df:
        df["kernel"] = "kernel not recorded"
    df["kernel"] = as_label(df["kernel"]).replace("", "kernel not recorded")
    out = series.point_table(df, "bandwidth", ["best_mb_s", "min_mb_s"], first=("page_fractions",))
    return with_memory_node(out)


def bandwidth_series_label(cpu_nodes: str, row: pd.Series) -> str:
    """A line's name; lines of one figure differ in what it names (WITHIN)."""
    mem = row["memory_node"]
    if pd.isna(mem):
        where = f"memory {row.get('policy', '')} {row.get('mem_nodes', '')}".strip()
        text = f"CPUs on node {cpu_nodes}, {where}"
    else:
        kind = "local" if str(int(mem)) == cpu_nodes else "remote"
        text = f"CPUs on node {cpu_nodes}, memory on node {int(mem)} ({kind})"
    if str(row.get("weights", "")).strip():
        text += f", weights {row['weights']}"
    if str(row.get("host", "")).strip() and str(row.get("memory", "")).strip() not in ("", "local"):
        text += f" [{row['memory']}]"
    return text


def bandwidth_variants(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Per kernel, then per every other configuration column that varies (`numasweep.results.series`)."""
    return series.configurations(table, "bandwidth", first="kernel")


def bandwidth_lines(part: pd.DataFrame):
    """(key, rows) per line of one bandwidth configuration: CPU and memory nodes, policy."""
    cols = [c for c in WITHIN if c in part] + ["memory_node"]
    return part.groupby(cols, sort=True, dropna=False)


def bandwidth_points(bandwidth: pd.DataFrame | None, runs: bool = False) -> tuple[pd.DataFrame, str]:
    """One row per point of a bandwidth series (thread count): `mb_s`, the median over
    repetitions of `best_mb_s` (else `avg_mb_s`), and the name of that column. With runs=True, one
    row per repetition of each point instead, keeping `repetition` ("" when the table has none)
    and each run's spread (`min_mb_s`, `best_mb_s`, `ntimes`) for the statistics."""
    if bandwidth is None or bandwidth.empty or "threads" not in bandwidth:
        return pd.DataFrame(), ""
    metric = next((c for c in ("best_mb_s", "avg_mb_s") if c in bandwidth and bandwidth[c].notna().any()), None)
    if metric is None:
        return pd.DataFrame(), ""
    df = bandwidth.copy(deep=False)
    for col in ("kernel", "pattern", "stride", "policy", "weights", "page_size", "array_bytes"):
        df[col] = as_text(df[col]) if col in df else ""
    for col in ("cpu_nodes", "mem_nodes"):
        df[col] = node_lists(df[col]) if col in df else ""
    keys = ["kernel", "pattern", "stride", "policy", "weights", "page_size", "array_bytes", "cpu_nodes",
            "mem_nodes"]
    other = [c for c in series.series_columns(df, "bandwidth") if c not in keys]
    if runs:
        other.append(series.REPETITION)
        df[series.REPETITION] = df[series.REPETITION] if series.REPETITION in df else ""
    for col in other:
        df[col] = as_text(df[col])
    keys += other + ["threads"]
    values = [metric] + ([c for c in ("min_mb_s", "best_mb_s", "ntimes") if c in df and c != metric] if runs else [])
    for col in values:
        df[col] = pd.to_numeric(df[col], errors="coerce")
    out = df.groupby(keys, as_index=False)[values].median().rename(columns={metric: "mb_s"})
    if runs and metric == "best_mb_s":
        out["best_mb_s"] = out["mb_s"]
    return out, metric

