"""The bandwidth parts of the report: the raw tables (best bandwidth per thread count, the STREAM
layout), the bytes each kernel counts, the headline rows and two systems side by side."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from numasweep.benches.bandwidth import tables
from numasweep.benches.bandwidth.calibration import PREFERENCE
from numasweep.benches.bandwidth.findings import bandwidth_peak, thread_points, thread_values
from numasweep.core.topology import Topology
from numasweep.core.units import count_words
from numasweep.reporting.markdown import interval_cells, md_table, ratio_cells
from numasweep.statistics import stats
from numasweep.results import series


def bandwidth_raw_tables(bandwidth: pd.DataFrame, topology: Topology | None = None, findings: list[dict] = ()) -> list[dict]:
    """Per kernel: threads down, one column per (CPU node, memory node), like the STREAM table:
    all it writes in the report (`Presentation.report`)."""
    out = []
    for variant, part in tables.bandwidth_variants(tables.bandwidth_table(bandwidth)):
        part = part.copy()
        part["series"] = [tables.bandwidth_series_label(r["cpu_nodes"], r) for _, r in part.iterrows()]
        wide = part.pivot_table(index="threads", columns="series", values="best_mb_s", aggfunc="median") / 1000
        rows = [[int(t)] + [float(v) for v in row] for t, row in wide.iterrows()]
        out.append({"title": f"Best bandwidth (GB/s, 10^9 bytes/s; the median over runs), {variant}",
                    "table": md_table(["threads"] + list(wide.columns), rows)})
    counted = byte_counting(bandwidth)
    if counted:
        out.append(counted)
    # The code shape each kernel ran and how it was chosen (the kernel's shape_choice: with the
    # machine's calibration, its sentence, rates and the plain loop's, STREAM's shape).
    if {"variant", "shape_choice", "kernel", "stores"} <= set(bandwidth):
        rows = bandwidth[bandwidth["pattern"].astype(str) == "sequential"] if "pattern" in bandwidth else bandwidth
        shapes = rows[["kernel", "stores", "variant", "shape_choice"]].dropna().astype(str).drop_duplicates()
        if not shapes.empty:
            order = sorted(shapes.itertuples(index=False), key=lambda r: (r.stores != "regular", _stream_order(r.kernel)))
            out.append({"title": "Code shapes the sequential kernels ran and how each was chosen (the calibration "
                                 "decides once per host and kernel build: python -m numasweep calibrate); "
                                 "the plain loop is STREAM's own shape, the figure to set against STREAM",
                        "table": md_table(["kernel", "stores", "shape", "how it was chosen"],
                                          [[r.kernel, r.stores, PREFERENCE.get(r.variant, r.variant), r.shape_choice]
                                           for r in order])})
    return out


def byte_counting(bandwidth: pd.DataFrame) -> dict | None:
    """What each kernel's MB/s counts, from the kernel's own `bytes_per_element` column, stated
    beside the figures as STREAM states it: every element loaded or stored once per iteration;
    the write-allocate read that a regular store causes is not counted, so regular and
    non-temporal stores of one kernel count the same bytes."""
    if "bytes_per_element" not in bandwidth or "kernel" not in bandwidth:
        return None
    per = bandwidth.dropna(subset=["bytes_per_element"])
    if per.empty:
        return None
    rows = []
    for kernel, g in per.groupby("kernel", sort=False):
        stores = sorted({str(v) for v in g["stores"].dropna()}) if "stores" in g else []
        rows.append([kernel, int(pd.to_numeric(g["bytes_per_element"]).max()), ", ".join(stores)])
    return {"title": "Bytes counted per element, as STREAM counts them (each load and store once; "
                     "the write-allocate read of a regular store not counted)",
            "table": md_table(["kernel", "bytes per element", "stores"], rows, right={1})}


STREAM_ORDER = ("copy", "scale", "add", "triad")


def _stream_order(kernel: str) -> tuple:
    return STREAM_ORDER.index(kernel) if kernel in STREAM_ORDER else len(STREAM_ORDER), kernel


def cross(bandwidths: list[pd.DataFrame], names: list[str], figdir: Path | None) -> tuple[list[dict], list[Path]]:
    """Two systems side by side: per kernel, the best bandwidth with memory on the threads' node
    (the median over such series) at each thread count both systems measured, and the ratio."""
    best = []
    for bandwidth in bandwidths:
        table = tables.bandwidth_table(bandwidth)
        if {"cpu_nodes", "mem_nodes"} <= set(table):
            table = table[table["mem_nodes"].astype(str) == table["cpu_nodes"].astype(str)]
        best.append({kernel: part.groupby("threads")["best_mb_s"].median() / 1000
                     for kernel, part in table.groupby(table["kernel"].astype(str))})
    out = []
    for kernel in sorted(set(best[0]) & set(best[1]), key=_stream_order):
        first, second = best[0][kernel], best[1][kernel]
        rows = [[int(t), float(first[t]), float(second[t]), float(second[t] / first[t])]
                for t in sorted(set(first.index) & set(second.index))]
        if rows:
            out.append({"title": f"Best {kernel} bandwidth (GB/s, 10^9 bytes/s), memory on the threads' node",
                        "table": md_table(["threads", names[0], names[1], f"{names[1]} / {names[0]}"], rows)})
    return out, []



def headline(bandwidth: pd.DataFrame, topology: Topology | None) -> list[list[str]]:
    """Best bandwidth per kernel and thread count, local memory, with its scaling from the fewest
    to the most threads; remote / local at the most threads where remote memory was measured. GB/s
    are 10^9 bytes/s, as STREAM counts them (the kernel's MB/s / 1000); one run per repetition."""
    df = bandwidth.copy()
    if df.empty:
        return []
    for column in ("pattern", "stores", "memory", "kernel", "cpu_node"):     # text, "" where not recorded
        if column in df:
            df[column] = df[column].astype(object).where(df[column].notna(), "").map(series.label)
    for column, first in (("pattern", "sequential"), ("stores", "regular")):
        if column in df and (df[column].astype(str) == first).any():
            df = df[df[column].astype(str) == first]
    if "cpu_node" in df:
        df = df[df["cpu_node"].astype(str) == sorted(df["cpu_node"].astype(str).unique())[0]]
    memory = df["memory"] if "memory" in df else pd.Series("", index=df.index)
    cpu = df["cpu_node"] if "cpu_node" in df else (df["cpu_nodes"].map(series.label) if "cpu_nodes" in df
                                                   else pd.Series("", index=df.index))
    mem = df["mem_nodes"].map(series.label) if "mem_nodes" in df else pd.Series("", index=df.index)
    memory, cpu, mem = (part.astype(object).astype(str) for part in (memory, cpu, mem))   # text, not categories
    # local: said so, or memory on the threads' node; remote memory named by its node
    memory = memory.where(~((mem == cpu) & (cpu != "")), "local").replace("", "local")
    # spread memory (interleaved, weighted) keeps its spec, so that each weighting is its own row
    spread = memory.str.startswith(("interleave", "weighted"))
    memory = memory.where(memory == "local", "threads on node " + cpu + ", memory "
                          + memory.where(spread, "on node " + mem).str.replace(":", " on nodes ").str.replace("@", ", weights "))
    df["kernel"] = df["kernel"].replace("", "STREAM")
    kernels = sorted(df["kernel"].astype(str).unique(),
                     key=_stream_order)
    rows: list[list[str]] = []
    for kernel in kernels:
        mine = df[df["kernel"].astype(str) == kernel]
        local = mine[memory[mine.index] == "local"]
        if local.empty:
            continue
        est, texts, intervals = {}, {}, {}
        for t, (iv, runs) in thread_values(local).items():
            est[t] = iv.estimate
            texts[t], intervals[t] = interval_cells(iv, "GB/s", count_words(runs, "run"))
        lo, hi = min(est), max(est)
        peak = max(est, key=est.get)
        shown = list(dict.fromkeys([lo, peak, hi]))     # the fewest threads, the best, the most
        value = ", ".join(("peak " if t == peak and len(est) > 2 else "")
                          + (texts[t] if i == 0 else texts[t].replace(" GB/s", "")) + f" at {count_words(t, 'thread')}"
                          + (f" ({est[t] / est[lo]:.2f}x)" if t == peak and t != lo else "")
                          for i, t in enumerate(shown))
        same = {intervals[t] for t in shown}
        rows.append([f"{kernel}, best bandwidth, local memory", value,
                     same.pop() if len(same) == 1 and "no interval" in next(iter(same))
                     else "; ".join(f"{count_words(t, 'thread')}: {intervals[t]}" for t in shown)])
        remote = mine[~mine.index.isin(local.index) & (mine["threads"] == hi)]
        for name, part in remote.groupby(memory[remote.index]):
            iv, runs = thread_values(part)[hi]
            value, interval = interval_cells(iv, "GB/s", count_words(runs, "run"))
            rows.append([f"{kernel}, best bandwidth, {name}, {count_words(hi, 'thread')}", value, interval])
            # one remote node: a NUMA ratio; memory spread over nodes: that spread against local
            label = "ratio to local" if " on nodes " in name else "NUMA ratio"
            ratio = stats.quotient(thread_points(part)[hi], thread_points(local)[hi])
            rows.append([f"{label}, {kernel} bandwidth {name} / local, {count_words(hi, 'thread')}",
                         f"{ratio.estimate:.2f}x", ratio_cells(ratio)])
    for f in bandwidth_peak(bandwidth, topology):
        n = f.numbers
        rows.append(["theoretical memory bandwidth, all channels", "unknown", n["unknown"]]
                    if n["peak_gb_s"] is None else
                    ["theoretical memory bandwidth, all channels", f"{n['peak_gb_s']:.1f} GB/s",
                     f"the best measured, {n['best_gb_s']:.1f} GB/s, is {n['fraction']:.2f}x of it"])
    return rows
