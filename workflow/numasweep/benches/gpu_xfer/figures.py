"""gpu_xfer's figures: bandwidth and transfer time against size per direction, and the plateau
by host memory node and GPU."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from numasweep.core.topology import Topology
from numasweep.reporting.figures import heatmap, line_colours, marked, new_figure, save, size_axis
from numasweep.benches.gpu_xfer.findings import node_cells
from numasweep.benches.gpu_xfer.tables import GPU_DIRECTIONS, GPU_SIZE, gpu_configurations, gpu_label, gpu_lines, gpu_table


# ---------------------------------------------------------------- figures

# Figure kind -> (the direction's attribute it draws, y-axis label, log y-axis, title).
GPU_PLOTS = {"gpu_bandwidth": ("bandwidth", "bandwidth (GiB/s)", False, "Host-device bandwidth"),
             "gpu_latency": ("latency", "transfer time (ms)", True, "Host-device transfer time")}


def plot_gpu_bandwidth(gpu: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    return plot_gpu(gpu, figdir, "gpu_bandwidth")


def plot_gpu_latency(gpu: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    return plot_gpu(gpu, figdir, "gpu_latency")


def plot_gpu(gpu: pd.DataFrame, figdir: Path, kind: str) -> list[Path]:
    """The figures of `kind`, gpu_bandwidth or gpu_latency: one panel per direction measured."""
    table = gpu_table(gpu)
    paths: list[Path] = []
    for variant, part in gpu_configurations(table):
        sizes = sorted(part[GPU_SIZE].unique())
        if len(sizes) < 2:
            continue
        # every direction measured: the bidirectional ones have a bandwidth and no transfer time
        measured = [d for d in GPU_DIRECTIONS if d.bandwidth in part and part[d.bandwidth].notna().any()]
        column, unit, log_y, title = GPU_PLOTS[kind]
        directions = [d for d in measured if getattr(d, column)]
        if not directions:
            continue
        # one y scale for the panels: each direction's rate read against the others'
        fig, axes = new_figure(ncols=len(directions), width=max(11.0, 4.0 * len(directions)), sharey=True)
        lines = list(gpu_lines(part))
        for ax, direction in zip(axes, directions):
            value = getattr(direction, column)
            for colour, (_, rows) in zip(line_colours(len(lines)), lines):
                rows = rows.sort_values(GPU_SIZE)
                ax.plot(rows[GPU_SIZE], rows[value], marker="o", markersize=3, color=colour,
                        label=marked(gpu_label(rows.iloc[0]), rows))
                if (rows[f"{value}_hi"] > rows[f"{value}_lo"]).any():   # several runs: their range
                    ax.fill_between(rows[GPU_SIZE], rows[f"{value}_lo"], rows[f"{value}_hi"], color=colour,
                                    alpha=0.2, linewidth=0)
            size_axis(ax, sizes, "transfer size")
            if log_y:
                ax.set_yscale("log")
            else:
                ax.set_ylim(bottom=0)
            ax.set_ylabel(unit)
            ax.set_title(direction.words)
        axes[-1].legend(fontsize=7, loc="best")
        memory = variant.replace("pinned-", "pinned, ", 1).replace("pageable-", "pageable, ", 1)
        fig.suptitle(f"{title}, {memory} host memory")
        paths += save(fig, figdir, "gpu_xfer", kind, variant)
    return paths




def plot_node_matrix(gpu: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    """One panel per direction: plateau by host node (rows) and GPU (columns), own node boxed."""
    # matplotlib is loaded where a figure is drawn, as reporting.figures does: the registry
    # imports every figures module, and each snakemake start reads the registry.
    from matplotlib.patches import Rectangle

    cells = node_cells(gpu)
    if not cells:
        return []
    fig, axes = new_figure(ncols=len(cells), width=max(6.5, 4.5 * len(cells)))
    for ax, (direction, by_cell) in zip(axes, cells.items()):
        own = {g: o for (_, g), (_, o, _) in by_cell.items()}
        matrix = pd.Series({cell: level.estimate for cell, (level, _, _) in by_cell.items()}).unstack()
        matrix.columns = [f"GPU {g}" + (f" (node {own[g]})" if own[g] >= 0 else "") for g in matrix.columns]
        heatmap(ax, matrix, "plateau (GiB/s)", ".1f", "host memory node", "GPU")
        for j, g in enumerate(sorted(own)):
            if own[g] in matrix.index:
                i = list(matrix.index).index(own[g])
                ax.add_patch(Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False, linewidth=2.5, edgecolor="crimson"))
        ax.set_title(direction)
    fig.suptitle("Host-device plateau by host memory node and GPU (each GPU's own node boxed)")
    return save(fig, figdir, "gpu_xfer", "gpu_node_matrix", "pinned")
