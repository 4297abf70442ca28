"""gpu_xfer's columns, transfer directions and tables: what names a series, the directions'
bandwidth and time columns, host memory pinning in words, and the table a figure or raw table reads."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from numasweep.results import series


# The transfer size, and the directions; the bidirectional ones are measured with both at once.
GPU_SIZE = "access_size(bytes)"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
SERIES = ("ngpus", "gpu", "gpu_node", "pinned", "policy", "numa_nodes", "numa_weight")
WITHIN = ("host", "gpu", "gpu_node", "ngpus", "memory", "policy", "numa_nodes", "numa_weight")


class Direction(NamedTuple):
    """One transfer direction of gpu_xfer: its name in findings, its words in figures, its
    bandwidth column and its latency column (None: not measured)."""

    name: str
    words: str
    bandwidth: str
    latency: str | None


GPU_DIRECTIONS = (
    Direction("read", "host to device", "read_bw(gib/s)", "read_latency(ms)"),
    Direction("write", "device to host", "write_bw(gib/s)", "write_latency(ms)"),
    Direction("bidirectional read", "host to device, both at once", "bidir_read_bw(gib/s)", None),
    Direction("bidirectional write", "device to host, both at once", "bidir_write_bw(gib/s)", None),
)
# Direction name -> its bandwidth column, and its words (the summary's "host to device").
GPU_BANDWIDTH = {d.name: d.bandwidth for d in GPU_DIRECTIONS}
DIRECTION_WORDS = {d.name: d.words for d in GPU_DIRECTIONS}
# The two directions of a copy both ways at once: where the kernel timed them as one (the two
# columns equal at every row, as pageable copies are), one finding says both, under the first.
BOTH_AT_ONCE = ("bidirectional read", "bidirectional write")


def timed_as_one(g: pd.DataFrame) -> bool:
    """Whether a series' two directions at once hold the same value at every row: one
    measurement given twice."""
    a, b = (GPU_BANDWIDTH[d] for d in BOTH_AT_ONCE)
    return a in g and b in g and np.array_equal(g[a].to_numpy(float), g[b].to_numpy(float), equal_nan=True)


def pinning(value: Any) -> str:
    """The seed's and the kernel's spellings of host memory pinning (1/0, true/false, or the
    words) as "pinned" or "pageable"; "" where it says neither. Read once, where a table is."""
    text = str(value).strip().lower()
    return {"1": "pinned", "true": "pinned", "pinned": "pinned",
            "0": "pageable", "false": "pageable", "pageable": "pageable"}.get(text, "")



# ---------------------------------------------------------------- tables

# The directions with a transfer time measured: the figures draw them side by side.
TIMED_DIRECTIONS = [d for d in GPU_DIRECTIONS if d.latency]


def gpu_label(row: pd.Series) -> str:
    """A line's name in words, without the parts a run does not have: "bind policy, memory on
    node 0, GPU 0", "weighted policy, memory on nodes 0,2, weights 1,2, GPU 1 of 2 at once"."""
    policy, nodes = series.label(row.get("policy", "")).strip(), series.label(row.get("numa_nodes", "")).strip()
    weight, gpu = series.label(row.get("numa_weight", "")).strip(), int(row.get("gpu", -1))
    ngpus = int(row["ngpus"])
    parts = [f"{policy} policy" if policy else ""]
    if nodes:
        parts.append(f"memory on node{'s' if ',' in nodes or '-' in nodes else ''} {nodes}")
    if weight:
        parts.append(f"weights {weight}")
    if gpu >= 0:
        parts.append(f"GPU {gpu}" + (f" of {ngpus} at once" if ngpus > 1 else ""))
    else:
        parts.append(f"{ngpus} GPU{'s' if ngpus > 1 else ''}")
    return ", ".join(p for p in parts if p)


def gpu_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median over repetitions per point of a series; each GPU of a run is its own series and
    runs with different GPU counts never share one (`numasweep.results.series`)."""
    df = df.copy()
    if "pinned" not in df:
        df["pinned"] = 1
    values = [c for d in GPU_DIRECTIONS for c in (d.latency, d.bandwidth) if c]
    return series.point_table(df, "gpu_xfer", values, spread=True)


def gpu_lines(part: pd.DataFrame):
    cols = [c for c in WITHIN if c in part]
    return part.groupby(cols, sort=True, dropna=False)


def gpu_configurations(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Pinned and pageable host memory apart, then every other configuration that varies."""
    table = table.copy()
    table["pinned"] = [pinning(p) or "pageable" for p in table["pinned"]]
    return series.configurations(table, "gpu_xfer", first="pinned")
