"""The bandwidth figures: bandwidth against threads per CPU node and memory node, and the CPU-node
x memory-node matrix at the most threads; and that matrix's samples, which the firmware and the
weights findings read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from numasweep.benches.bandwidth import tables
from numasweep.core.topology import Topology
from numasweep.core.units import count_words
from numasweep.reporting.figures import count_axis, heatmap, line_colours, marked, new_figure, save, titled
from numasweep.results.tables import as_text, with_memory_node


def plot_bandwidth_vs_threads(bandwidth: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    for variant, part in tables.bandwidth_variants(tables.bandwidth_table(bandwidth)):
        if part["threads"].nunique() < 2:
            continue
        fig, (ax,) = new_figure()
        lines = list(tables.bandwidth_lines(part))
        dashed = False
        for colour, (_, rows) in zip(line_colours(len(lines)), lines):
            rows = rows.sort_values("threads")
            first = rows.iloc[0]
            remote = not pd.isna(first["memory_node"]) and str(int(first["memory_node"])) != first["cpu_nodes"]
            dashed |= remote
            ax.plot(rows["threads"], rows["best_mb_s"] / 1000, marker="o", markersize=3,
                    color=colour, linestyle="--" if remote else "-",
                    label=marked(tables.bandwidth_series_label(first["cpu_nodes"], first), rows))
            if "min_mb_s" in rows and rows["min_mb_s"].notna().any():
                ax.fill_between(rows["threads"], rows["min_mb_s"] / 1000, rows["best_mb_s"] / 1000, color=colour,
                                alpha=0.15, linewidth=0)
        ax.set_xlabel("threads")
        count_axis(ax.xaxis)
        ax.set_ylabel("bandwidth (GB/s, 10^9 bytes/s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set_title(titled("Bandwidth vs threads", variant))
        ax.legend(fontsize=7, loc="lower right", title="dashed: memory on another node" if dashed else None,
                  title_fontsize=7)
        paths += save(fig, figdir, "bandwidth", "bandwidth_vs_threads", variant)
    return paths


def plot_bandwidth_matrix(bandwidth: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    for variant, part in tables.bandwidth_variants(tables.bandwidth_table(bandwidth)):
        part = part.dropna(subset=["memory_node"])
        part = part[part["threads"] == part["threads"].max()] if len(part) else part
        if part.empty:
            continue
        matrix = part.pivot_table(index="cpu_nodes", columns="memory_node", values="best_mb_s",
                                  aggfunc="median") / 1000
        if matrix.size < 2:
            continue
        fig, (ax,) = new_figure(width=6.5)
        heatmap(ax, matrix, "bandwidth (GB/s)", ".1f", "CPU node", "memory node")
        ax.set_title(titled(f"Bandwidth with {count_words(part['threads'].max(), 'thread')}", variant))
        paths += save(fig, figdir, "bandwidth", "bandwidth_matrix", variant)
    return paths


SOURCE = "the best STREAM kernel of each run at the most threads of its CPU node, the median over its runs"


def bandwidth_samples(bandwidth: pd.DataFrame, topology: Topology | None = None) -> pd.DataFrame:
    """MB/s by (CPU node, memory node), one row per run (a job's repetition): threads on one node at
    the most threads that node was measured with, the best of the run's STREAM kernels (what the
    memory can deliver to that node); `attrs["source"]` says so."""
    table = with_memory_node(bandwidth).dropna(subset=["memory_node"])
    table = table[table["cpu_nodes"].astype(str).str.fullmatch(r"\d+")]
    if table.empty:
        return pd.DataFrame(columns=["cpu_node", "memory_node", "value"])
    table = table.assign(cpu_node=table["cpu_nodes"].astype(str).astype(int),
                         memory_node=table["memory_node"].astype(int),
                         job=table["job_id"] if "job_id" in table else range(len(table)),
                         run=as_text(table["repetition"]) if "repetition" in table else "")
    table = table[table["threads"] == table.groupby("cpu_node")["threads"].transform("max")]
    best = table.groupby(["cpu_node", "memory_node", "job", "run"], observed=True)["best_mb_s"].max()
    out = best.rename("value").reset_index()[["cpu_node", "memory_node", "value"]]
    out.attrs["source"] = SOURCE
    return out
