"""Table shaping, in one place for analysis, figures and the report: the aggregated tables
(docs/INTERFACES.md) turned into one row per point of a series (medians over repetitions,
`numasweep.results.series`), split into the configurations that get a figure, a table or a finding
each, and into the lines of one figure or the rows of one table, with the labels that name them.
"""

from __future__ import annotations

import math
import re
import weakref
from typing import Any

import numpy as np
import pandas as pd

from numasweep import benches
from numasweep.results import series
from numasweep.core.units import parse_page_fractions


# ---------------------------------------------------------------------------------------------
# Cells


def nodes(value: Any) -> tuple[int, ...]:
    """'0,3', 3, 3.0 or NaN as a tuple of node ids."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, (int, np.integer, float, np.floating)):
        return (int(value),)
    text = str(value).strip()
    return tuple(int(float(x)) for x in text.split(",") if x.strip()) if text else ()



def _text(value: Any) -> str:
    return "" if pd.isna(value) else re.sub(r"\.0$", "", str(value))


def as_text(values: pd.Series, categorical: bool = False) -> pd.Series:
    """Text cells to group by: NaN -> "", a trailing ".0" dropped (3.0 -> "3"); computed once per
    distinct value; `categorical`: as a categorical column (`series.text_codes`)."""
    if categorical:
        return series.text_codes(values, _text)
    return pd.Series(series.per_value(values, _text), index=values.index, name=values.name, dtype=str)


def _node_list(value: Any) -> str:
    return ",".join(map(str, nodes(value)))


def node_lists(values: pd.Series, categorical: bool = False) -> pd.Series:
    """`nodes` of each cell as a comma list ("0,3", "" for none), once per distinct value;
    `categorical`: as a categorical column (`series.text_codes`)."""
    if categorical:
        return series.text_codes(values, _node_list)
    return pd.Series(series.per_value(values, _node_list), index=values.index, dtype=str)


def locality(cpu_node: int, mem_nodes: str, unplaced: str | None = "local") -> str:
    """"local" where a rank's memory is its own CPU node's, else "<cpu node>-><memory nodes>":
    remote ranks are comparable only with ranks of the same CPU node reaching the same memory.
    Memory of no recorded node reads `unplaced` (None: as a remote node list, "0->")."""
    if mem_nodes == "" and unplaced is not None:
        return unplaced
    return "local" if mem_nodes == str(cpu_node) else f"{cpu_node}->{mem_nodes}"


def as_label(values: pd.Series) -> pd.Series:
    """Text labels from a column pandas may have read as float: 0.0 -> "0", NaN -> ""."""
    return series.labels(values)


def memory_node(page_fractions: object, mem_nodes: object = None) -> int | None:
    """The node holding the buffer: the one with at least 90% of its pages, else the single
    node asked for, else None (spread over nodes)."""
    fractions = parse_page_fractions(page_fractions)
    if fractions:
        node, frac = max(fractions.items(), key=lambda kv: kv[1])
        if frac >= 0.9:
            return node
        return None
    text = str(mem_nodes).strip() if mem_nodes is not None else ""
    if re.fullmatch(r"\d+", text):
        return int(text)
    if re.fullmatch(r"\d+\.0", text):
        return int(float(text))
    return None


def with_memory_node(df: pd.DataFrame, fractions_col: str = "page_fractions") -> pd.DataFrame:
    """A copy with a `memory_node` column (nullable int) derived from page placement."""
    df = df.copy()
    fractions = df[fractions_col] if fractions_col in df else pd.Series([None] * len(df), index=df.index)
    asked = df["mem_nodes"] if "mem_nodes" in df else pd.Series([None] * len(df), index=df.index)
    # Parsed once per distinct (placement, nodes asked): a large table repeats a few of them.
    # (A NaN never equals itself, so its pairs miss the cache and are parsed each time.)
    nodes: dict = {}
    found = []
    for pair in zip(fractions, asked):
        node = nodes.get(pair, ...)
        if node is ...:
            node = nodes[pair] = memory_node(*pair)
        found.append(node)
    df["memory_node"] = pd.array(found, dtype="Int64")
    return df


def rank_label(n: object) -> str:
    n = int(n)
    return "" if n < 0 else (f"{n} rank" if n == 1 else f"{n} ranks")



def l3_position(topo: dict) -> dict[int, int]:
    """Index of each L3 group among the L3 groups of its node (0 = the one with the lowest CPU)."""
    pos: dict[int, int] = {}
    for node in topo.get("nodes", []):
        cpus = set(node.get("cpus", []))
        inside = [i for i, g in enumerate(topo.get("l3_groups") or []) if set(g) & cpus]
        for p, group in enumerate(inside):
            pos[group] = p
    return pos


# ---------------------------------------------------------------------------------------------
# Latency


# The latency table of each aggregated table still in use (by identity): the figures and the
# report draw several things from one table, and a million rows take seconds to reduce.
_LATENCY_TABLES: dict[int, tuple[weakref.ref, pd.DataFrame]] = {}


# A point's sample range: the fastest and slowest sample of its runs, where the kernel recorded them.
SPREAD = ("latency_ns_min", "latency_ns_max")


def latency_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median over repetitions: one row per point of a series (`numasweep.results.series`), of its
    latency and, where recorded, its sample range (SPREAD). Computed once per table object; each
    caller gets its own copy (tables are not changed in place)."""
    hit = _LATENCY_TABLES.get(id(df))
    if hit is not None and hit[0]() is df:
        return hit[1].copy()
    out = series.point_table(df, "latency", ["latency_ns_median", *SPREAD], first=("page_fractions",))
    if "ranks" in out:
        # Rank 0 of a 1-rank run and rank 0 of an 8-rank run are different measurements: the
        # rank count names the configuration (`concurrent-8 ranks`), it is never averaged over.
        out["ranks"] = out["ranks"].map(rank_label)
    _LATENCY_TABLES[id(df)] = (weakref.ref(df, lambda _, key=id(df): _LATENCY_TABLES.pop(key, None)), out)
    return out.copy()


def latency_configs(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Per mode, then per every other configuration column that varies (`numasweep.results.series`)."""
    return series.configurations(df, "latency", first="mode")


def latency_lines(part: pd.DataFrame):
    """(key, rows) per line of one latency configuration: one per rank (and host, CPU)."""
    cols = [c for c in series.WITHIN["latency"] if c in part]
    return part.groupby(cols, sort=True, dropna=False)


def latency_points(latency: pd.DataFrame | None, topo: dict) -> pd.DataFrame:
    """One row per (rank configuration, size): median latency over repetitions, with the keys the
    analyses group by (`locality`, `l3_pos`)."""
    need = {"size_bytes", "latency_ns_median"}
    if latency is None or latency.empty or not need <= set(latency.columns):
        return pd.DataFrame()
    df = latency.copy(deep=False)
    # text columns as categoricals (a million rows group on their codes), text again once grouped
    for col in ("mode", "page_size", "policy", "weights", "strategy", "domains", "memory"):
        df[col] = as_text(df[col], categorical=True) if col in df else ""
    for col, default in (("rank", 0), ("cpu", -1), ("cpu_node", -1), ("l3_group", -1), ("ranks", 1),
                         ("ranks_per_domain", 0)):
        df[col] = pd.to_numeric(df[col], errors="coerce").fillna(default).astype(int) if col in df else default
    df["mem_nodes"] = node_lists(df["mem_nodes"], categorical=True) if "mem_nodes" in df else ""
    df["locality"] = series.row_codes(df[["cpu_node", "mem_nodes"]], lambda c, m: locality(c, m, unplaced=None))
    pos = l3_position(topo)
    df["l3_pos"] = series.per_value(df["l3_group"], lambda g: pos.get(g, 0), dtype=np.int64)
    for col in ("latency_ns_min", "latency_ns_max"):
        df[col] = pd.to_numeric(df[col], errors="coerce") if col in df else np.nan
    keys = ["mode", "page_size", "policy", "weights", "strategy", "domains", "ranks_per_domain", "memory",
            "ranks", "rank", "cpu", "cpu_node", "l3_group", "l3_pos", "mem_nodes", "locality"]
    # every other column of the series identity (label, host, system, pages) keeps series apart
    other = [c for c in series.series_columns(df, "latency") if c not in keys]
    for col in other:
        df[col] = as_text(df[col], categorical=True)
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


# ---------------------------------------------------------------------------------------------
# Bandwidth


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
    """A line's name; lines of one figure differ in what it names (series.WITHIN)."""
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
    cols = [c for c in series.WITHIN["bandwidth"] if c in part] + ["memory_node"]
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


# ---------------------------------------------------------------------------------------------
# GPU transfers

# The directions with a transfer time measured: the figures draw them side by side.
TIMED_DIRECTIONS = [d for d in benches.GPU_DIRECTIONS if d.latency]


def gpu_label(row: pd.Series) -> str:
    parts = [str(row.get("policy", "")), f"nodes {row['numa_nodes']}"]
    if isinstance(row.get("numa_weight"), str) and row["numa_weight"].strip():
        parts.append(f"weights {row['numa_weight']}")
    parts.append(f"{int(row['ngpus'])} GPU{'s' if int(row['ngpus']) > 1 else ''}")
    if int(row.get("gpu", -1)) >= 0:
        parts.append(f"GPU {int(row['gpu'])}")
    return ", ".join(p for p in parts if p)


def gpu_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median over repetitions per point of a series; each GPU of a run is its own series and
    runs with different GPU counts never share one (`numasweep.results.series`)."""
    df = df.copy()
    if "pinned" not in df:
        df["pinned"] = 1
    values = [c for d in TIMED_DIRECTIONS for c in (d.latency, d.bandwidth)]
    return series.point_table(df, "gpu_xfer", values)


def gpu_lines(part: pd.DataFrame):
    cols = [c for c in series.WITHIN["gpu_xfer"] if c in part]
    return part.groupby(cols, sort=True, dropna=False)


def gpu_configurations(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Pinned and pageable host memory apart, then every other configuration that varies."""
    table = table.copy()
    table["pinned"] = ["pinned" if str(p) in ("1", "true", "True") else "pageable" for p in table["pinned"]]
    return series.configurations(table, "gpu_xfer", first="pinned")
