"""Figures from aggregated results: one PNG and one SVG per figure, under `<figdir>/<bench>/`.

File names are `<kind>--<variant>.png` so that Snakemake's report can take the figure kind and
its variant (mode, kernel, memory kind) from the name. Every drawing function returns the paths
it wrote and writes nothing when the data it needs is absent.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from numasweep import benches
from numasweep.findings import levels
from numasweep.results import series, tables
from numasweep.core import workers
from numasweep.core.errors import NumasweepError
from numasweep.core.io import REPORT_ONLY, UNREAD, read_csv
from numasweep.core.units import format_size

# Okabe & Ito's palette: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
LINESTYLES = ["-", "--", ":", "-."]
HEATMAP = "cividis"  # perceptually uniform and readable without red/green vision

# Report width is about 800 px; 8 x 4.5 in at 100 dpi keeps labels legible without zooming.
FIGSIZE = (8.0, 4.5)
DPI = 100

# ---------------------------------------------------------------------------------------------
# Loading


def load_topology(results_dir: str | os.PathLike) -> dict | None:
    """`topology.json` of a results folder, or None when the folder has none."""
    path = Path(results_dir) / "topology.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise NumasweepError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); "
                             "regenerate it with `python -m numasweep topology`") from None


def load_results(results_dir: str | os.PathLike, skip: tuple[str, ...] = ()) -> dict[str, pd.DataFrame]:
    """The aggregated table of every benchmark present in a results folder, by bench name,
    without the columns in `skip` (`io.UNREAD`: those no report step reads)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise NumasweepError(f"{results_dir}: no such results folder; give the folder that holds "
                             "topology.json and the aggregated <bench>.csv files")
    frames = {}
    for bench in benches.NAMES:
        path = results_dir / f"{bench}.csv"
        if path.exists():
            df = read_csv(path, skip=skip, codes=True)
            if len(df):
                frames[bench] = df
    return frames


def slug(value: object) -> str:
    text = re.sub(r"[^A-Za-z0-9]+", "-", str(value)).strip("-").lower()
    return text or "all"


# ---------------------------------------------------------------------------------------------
# Drawing helpers


def new_figure(ncols: int = 1, width: float | None = None) -> tuple[Any, list]:
    # Figure objects without pyplot: no global figure state, no GUI backend, files only (Agg);
    # imported here, not at the top: the report imports this module for its loaders alone.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width or FIGSIZE[0], FIGSIZE[1]), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)
    return fig, list(axes[0])


def save(fig: Any, figdir: Path, bench: str, kind: str, variant: str) -> list[Path]:
    out = figdir / bench
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        path = out / f"{kind}--{slug(variant)}.{ext}"
        tmp = path.with_name(f".{path.name}.tmp.{ext}")
        fig.savefig(tmp, dpi=DPI, format=ext)
        os.replace(tmp, path)
        paths.append(path)
    return paths


def size_axis(ax, sizes: list[int], label: str = "buffer size") -> None:
    """Log2 size axis with binary labels (1MiB, 2MiB, ...), at most about 12 ticks."""
    ax.set_xscale("log", base=2)
    ticks = sorted({int(s) for s in sizes if s > 0})
    step = max(1, math.ceil(len(ticks) / 12))
    ticks = ticks[::step]
    ax.set_xticks(ticks)
    ax.set_xticklabels([format_size(t) for t in ticks], rotation=45, ha="right")
    ax.minorticks_off()
    ax.set_xlabel(label)
    ax.grid(True, which="major", alpha=0.3)


def cache_markers(topology: dict | None) -> list[tuple[int, str]]:
    """(size in bytes, label) for each cache level as one core can use it (levels'
    usable capacities: the L3 of the core's own L3 group, never a node's sum of them)."""
    marks: dict[int, str] = {}
    for cap in levels.usable_capacities(levels.topology_object(topology)):
        name, _, where = cap.label.partition(" (")
        marks.setdefault(cap.size_bytes, f"{name} {format_size(cap.size_bytes)}" + (f" ({where}" if where else ""))
    return sorted(marks.items())


def draw_cache_markers(ax, topology: dict | None, sizes: list[int]) -> None:
    lo, hi = min(sizes), max(sizes)
    for size, label in cache_markers(topology):
        if lo <= size <= hi:
            ax.axvline(size, color="0.4", linestyle=":", linewidth=1)
            ax.annotate(label, (size, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                        va="top", ha="right", fontsize=8, color="0.3")


def heatmap(ax, matrix: pd.DataFrame, unit: str, fmt: str, row_label: str, col_label: str) -> None:
    """A cpu-node x memory-node style matrix, each cell annotated with its value."""
    values = matrix.to_numpy(dtype=float)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=HEATMAP, aspect="auto")
    ax.set_xticks(range(len(matrix.columns)), [str(c) for c in matrix.columns])
    ax.set_yticks(range(len(matrix.index)), [str(r) for r in matrix.index])
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    finite = values[np.isfinite(values)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0
    if max(values.shape) > 16:  # a CPU x CPU map of a large machine: colours only, text unreadable
        ax.set_xticks([]), ax.set_yticks([])
        ax.figure.colorbar(image, ax=ax, label=unit)
        return
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values[i, j]
            if np.isfinite(v):
                ax.text(j, i, format(v, fmt), ha="center", va="center", fontsize=8,
                        color="white" if v < middle else "black")
    ax.figure.colorbar(image, ax=ax, label=unit)


def l3_styles(topology: dict | None, df: pd.DataFrame) -> dict[int, tuple[str, str]]:
    """Colour per L3 group, line style by the group's position inside its NUMA node (first CCD
    solid, second dashed, ...), so that same-node CCDs read as pairs."""
    groups = sorted(int(g) for g in df["l3_group"].dropna().unique())
    position: dict[int, int] = {}
    if topology and topology.get("l3_groups"):
        cpu_node = {c: n["id"] for n in topology.get("nodes", []) for c in n.get("cpus", [])}
        seen: dict[int, int] = {}
        for index, cpus in enumerate(topology["l3_groups"]):
            node = cpu_node.get(min(cpus), -1)
            position[index] = seen.get(node, 0)
            seen[node] = position[index] + 1
    return {
        g: (PALETTE[i % len(PALETTE)], LINESTYLES[position.get(g, 0) % len(LINESTYLES)])
        for i, g in enumerate(groups)
    }


# ---------------------------------------------------------------------------------------------
# Latency


SPREAD = tables.SPREAD


def across_hosts(part: pd.DataFrame, value: str) -> tuple[pd.DataFrame, int]:
    """A fleet's configuration (several hosts): per line but for the host, and size, the median
    of `value` over the hosts, with their lowest and highest as the band (SPREAD), and how many
    hosts; the part itself and 1 otherwise. A thousand nodes' lines would hide one another (the
    fleet ranking names the nodes out of line) and take minutes to draw."""
    hosts = part["host"].nunique() if "host" in part else 1
    if hosts <= 1:
        return part, 1
    keys = [c for c in series.WITHIN["latency"] if c in part and c != "host"] + ["size_bytes"]
    by = part.groupby(keys, sort=True, dropna=False)[value]
    out = by.median().to_frame()
    out[SPREAD[0]], out[SPREAD[1]] = by.min(), by.max()
    return out.reset_index(), hosts


def plot_rank_curves(ax, part: pd.DataFrame, value: str, topology: dict | None) -> None:
    """One line per rank against size, coloured by L3 group, styled by its place in the node;
    a band from each point's sample range where the table has one (`tables.SPREAD`). Over several
    hosts, one line per rank: the median over the hosts, the band their range (`across_hosts`)."""
    styles = l3_styles(topology, part)
    part, hosts = across_hosts(part, value)
    over = f", median of {hosts} nodes" if hosts > 1 else ""
    for _, rows in tables.latency_lines(part):
        rows = rows.sort_values("size_bytes")
        rank = rows["rank"].iloc[0]
        group = int(rows["l3_group"].iloc[0])
        colour, style = styles.get(group, (PALETTE[0], "-"))
        ax.plot(rows["size_bytes"], rows[value], marker="o", markersize=3, color=colour,
                linestyle=style, label=f"rank {rank} (CPU {rows['cpu'].iloc[0]}, L3 group {group}){over}")
        if (value == "latency_ns_median" or hosts > 1) and set(SPREAD) <= set(rows.columns) \
                and rows[SPREAD[0]].notna().any():
            ax.fill_between(rows["size_bytes"], rows[SPREAD[0]], rows[SPREAD[1]], color=colour, alpha=0.15,
                            linewidth=0)
    if hosts > 1:
        ax.text(0.99, 0.01, f"band: lowest to highest of {hosts} nodes", transform=ax.transAxes, fontsize=7,
                ha="right", va="bottom")
    ax.legend(fontsize=7, ncol=2 if part["rank"].nunique() > 8 else 1, loc="upper left")


def plot_latency_vs_size(latency: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    table = tables.latency_table(latency)
    for variant, part in tables.latency_configs(table):
        sizes = sorted(part["size_bytes"].unique())
        if len(sizes) < 2:
            continue
        fig, (ax,) = new_figure()
        plot_rank_curves(ax, part, "latency_ns_median", topology)
        draw_cache_markers(ax, topology, sizes)
        size_axis(ax, sizes)
        ax.set_ylabel("latency (ns per load)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"Latency vs buffer size, {variant}")
        paths += save(fig, figdir, "latency", "latency_vs_size", variant)
    return paths


def plot_concurrent_vs_serial(latency: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    table = tables.latency_table(latency)
    if set(table["mode"].unique()) < {"concurrent", "serial"}:
        return []
    # the same point of the same series, once with all ranks at once and once alone
    keys = [c for c in series.point_columns(table, "latency") if c != "mode"]
    conc = table[table["mode"] == "concurrent"].set_index(keys)["latency_ns_median"]
    ser = table[table["mode"] == "serial"].set_index(keys)["latency_ns_median"]
    ratio = (conc / ser).dropna().rename("ratio").reset_index()
    if ratio.empty or ratio["size_bytes"].nunique() < 2:
        return []
    paths: list[Path] = []
    for variant, part in series.configurations(ratio, "latency"):
        fig, (ax,) = new_figure()
        plot_rank_curves(ax, part, "ratio", topology)
        ax.axhline(1.0, color="0.3", linewidth=1)
        size_axis(ax, sorted(part["size_bytes"].unique()))
        ax.set_ylabel("concurrent / serial latency (ratio)")
        ax.set_title("Concurrent vs serial latency")
        paths += save(fig, figdir, "latency", "concurrent_vs_serial", variant)
    return paths


def latency_matrix(part: pd.DataFrame) -> pd.DataFrame | None:
    """Median latency by (cpu node, memory node) at the largest size; None with a single cell."""
    rows = tables.with_memory_node(part[part["size_bytes"] == part["size_bytes"].max()])
    rows = rows.dropna(subset=["memory_node"])
    if rows.empty:
        return None
    matrix = rows.pivot_table(index="cpu_node", columns="memory_node",
                              values="latency_ns_median", aggfunc="median")
    return matrix if matrix.size > 1 else None


def plot_latency_matrix(latency: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    for variant, part in tables.latency_configs(tables.latency_table(latency)):
        matrix = latency_matrix(part)
        if matrix is None:
            continue
        matrix = full_node_matrix(matrix, topology)
        fig, (ax,) = new_figure(width=6.5)
        heatmap(ax, matrix, "latency (ns per load)", ".1f", "CPU node", "memory node")
        ax.set_title(f"Latency at {format_size(int(part['size_bytes'].max()))}, {variant}")
        paths += save(fig, figdir, "latency", "latency_matrix", variant)
    return paths


def plot_rank_scaling(latency: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    """Median latency over a run's ranks against ranks per domain (numasweep.findings.scaling): one figure
    per configuration other than placement and domain set, one panel per size."""
    from numasweep.findings import scaling

    points = scaling.scaling_points(latency)
    if points.empty:
        return []
    lines = [c for c in ("strategy", "domains") if c in points]
    paths: list[Path] = []
    for variant, part in series.configurations(points, "latency", without=(*lines, "ranks_per_domain", "ranks")):
        sizes = sorted(part["size_bytes"].unique())
        fig, axes = new_figure(ncols=len(sizes), width=max(8.0, 4.5 * len(sizes)))
        for ax, size in zip(axes, sizes):
            rows = part[part["size_bytes"] == size]
            for i, (key, g) in enumerate(rows.groupby(lines, sort=True)):
                key = key if isinstance(key, tuple) else (key,)
                name = dict(zip(lines, key))
                curve = g.groupby("ranks_per_domain")["latency_ns_median"].median()
                ax.plot(curve.index, curve.values, marker="o", markersize=3,
                        color=PALETTE[i % len(PALETTE)],
                        linestyle="--" if name.get("strategy") == "interleaved" else "-",
                        label=f"{name.get('strategy', '')}, domains {name.get('domains', '')}")
            ax.set_xlabel("ranks per domain")
            ax.set_ylabel("median latency over ranks (ns per load)")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{format_size(int(size))} buffers")
            ax.legend(fontsize=7, loc="upper left")
        fig.suptitle(f"Latency against ranks per domain, {variant}")
        paths += save(fig, figdir, "latency", "rank_scaling", variant)
    return paths


def full_node_matrix(matrix: pd.DataFrame, topology: dict | None) -> pd.DataFrame:
    """Every node of the system as a row and column, so a missing cell shows as blank."""
    if not topology or not topology.get("nodes"):
        return matrix
    ids = [n["id"] for n in topology["nodes"]]
    rows = [n["id"] for n in topology["nodes"] if n.get("cpus")] or ids
    return matrix.reindex(index=rows, columns=ids)


# ---------------------------------------------------------------------------------------------
# Bandwidth and copy


def plot_bandwidth_vs_threads(bandwidth: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    for variant, part in tables.bandwidth_variants(tables.bandwidth_table(bandwidth)):
        if part["threads"].nunique() < 2:
            continue
        fig, (ax,) = new_figure()
        for i, (_, rows) in enumerate(tables.bandwidth_lines(part)):
            rows = rows.sort_values("threads")
            first = rows.iloc[0]
            remote = not pd.isna(first["memory_node"]) and str(int(first["memory_node"])) != first["cpu_nodes"]
            colour = PALETTE[i % len(PALETTE)]
            ax.plot(rows["threads"], rows["best_mb_s"] / 1000, marker="o", markersize=3,
                    color=colour, linestyle="--" if remote else "-",
                    label=tables.bandwidth_series_label(first["cpu_nodes"], first))
            if "min_mb_s" in rows and rows["min_mb_s"].notna().any():
                ax.fill_between(rows["threads"], rows["min_mb_s"] / 1000, rows["best_mb_s"] / 1000, color=colour,
                                alpha=0.15, linewidth=0)
        ax.set_xlabel("threads")
        ax.set_ylabel("bandwidth (GB/s, 10^9 bytes/s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"Bandwidth vs threads, {variant}")
        ax.legend(fontsize=7, loc="lower right")
        paths += save(fig, figdir, "bandwidth", "bandwidth_vs_threads", variant)
    return paths


def plot_bandwidth_matrix(bandwidth: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
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
        ax.set_title(f"Bandwidth with {int(part['threads'].max())} threads, {variant}")
        paths += save(fig, figdir, "bandwidth", "bandwidth_matrix", variant)
    return paths


def plot_copy_matrix(copy: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    """Per configuration (label, memory, ... : `series.configurations`), the copies of its largest
    thread count and size, one panel per node the threads ran on."""
    keys = ["cpu_node", "src_node", "dst_node"]
    paths: list[Path] = []
    for variant, config in series.configurations(copy, "copy", without=("threads", "bytes")):
        rows = config[config["threads"] == config["threads"].max()]
        rows = rows[rows["bytes"] == rows["bytes"].max()]
        table = rows.groupby(keys)["best_gb_s"].median().reset_index()
        if len(table) < 2:
            continue
        cpu_nodes = sorted(table["cpu_node"].unique())
        fig, axes = new_figure(ncols=len(cpu_nodes), width=max(6.5, 4.2 * len(cpu_nodes)))
        for ax, node in zip(axes, cpu_nodes):
            matrix = table[table["cpu_node"] == node].pivot_table(
                index="src_node", columns="dst_node", values="best_gb_s", aggfunc="median")
            heatmap(ax, matrix, "bandwidth (GB/s)", ".1f", "source node", "destination node")
            ax.set_title(f"threads on node {node}")
        fig.suptitle(f"Copy bandwidth, {int(rows['threads'].max())} threads, "
                     f"{format_size(int(rows['bytes'].max()))}" + ("" if variant == "all" else f", {variant}"))
        paths += save(fig, figdir, "copy", "copy_matrix", variant)
    return paths


# ---------------------------------------------------------------------------------------------
# GPU transfers


def plot_gpu(gpu: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    table = tables.gpu_table(gpu)
    paths: list[Path] = []
    for variant, part in tables.gpu_configurations(table):
        sizes = sorted(part[benches.GPU_SIZE].unique())
        if len(sizes) < 2:
            continue
        for kind, column, unit, log_y in (
            ("gpu_bandwidth", "bandwidth", "bandwidth (GiB/s)", False),
            ("gpu_latency", "latency", "transfer time (ms)", True),
        ):
            fig, axes = new_figure(ncols=len(tables.TIMED_DIRECTIONS), width=11)
            for ax, direction in zip(axes, tables.TIMED_DIRECTIONS):
                for i, (_, rows) in enumerate(tables.gpu_lines(part)):
                    rows = rows.sort_values(benches.GPU_SIZE)
                    ax.plot(rows[benches.GPU_SIZE], rows[getattr(direction, column)], marker="o", markersize=3,
                            color=PALETTE[i % len(PALETTE)],
                            linestyle=LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)],
                            label=tables.gpu_label(rows.iloc[0]))
                size_axis(ax, sizes, "transfer size")
                if log_y:
                    ax.set_yscale("log")
                else:
                    ax.set_ylim(bottom=0)
                ax.set_ylabel(unit)
                ax.set_title(f"{direction.words} ({variant} host memory)".replace("(pinned-", "(pinned, ").replace("(pageable-", "(pageable, "))
            axes[-1].legend(fontsize=7, loc="best")
            paths += save(fig, figdir, "gpu_xfer", kind, variant)
    return paths


# ---------------------------------------------------------------------------------------------
# Entry points

DRAWERS = {
    "latency": (plot_latency_vs_size, plot_concurrent_vs_serial, plot_latency_matrix, plot_rank_scaling),
    "bandwidth": (plot_bandwidth_vs_threads, plot_bandwidth_matrix),
    "copy": (plot_copy_matrix,),
    "gpu_xfer": (plot_gpu,),
}


def draw_all(results_dir: str | os.PathLike, figdir: str | os.PathLike, jobs: int | None = 1,
             min_rows: int = workers.PARALLEL_ROWS) -> list[Path]:
    """Every figure the results support; each bench gets its folder even when it has none. From
    `min_rows` rows, the drawers run in up to `jobs` forked worker processes (None: one per CPU);
    the same files."""
    from numasweep.reporting import mlc_figures  # it builds on this module

    figdir = Path(figdir)
    topology = load_topology(results_dir)
    frames = load_results(results_dir, UNREAD + REPORT_ONLY)
    parts = []
    for bench, drawers in DRAWERS.items():
        (figdir / bench).mkdir(parents=True, exist_ok=True)
        if bench in frames:
            parts += [functools.partial(draw, frames[bench], topology, figdir) for draw in drawers]
    for bench, draw in mlc_figures.DRAWERS.items():
        (figdir / bench).mkdir(parents=True, exist_ok=True)
        if bench in frames:
            parts.append(functools.partial(draw, frames[bench], figdir))
    jobs = workers.count(frames, jobs, min_rows)
    if jobs > 1:
        # What every worker needs, worked out once before the forks: matplotlib imported, the
        # latency table reduced (tables.latency_table keeps it for the table it came from).
        import matplotlib.figure  # noqa: F401
        if "latency" in frames:
            tables.latency_table(frames["latency"])
    return workers.run(parts, jobs, "figures")


def figure_kind(path: Path) -> str:
    return path.name.split("--")[0]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m numasweep figures",
                                     description="draw the figures from aggregated results")
    parser.add_argument("--results", required=True, help="folder with topology.json and <bench>.csv")
    parser.add_argument("-o", "--output", required=True, help="figure folder (one subfolder per bench)")
    parser.add_argument("--jobs", type=int, default=None,
                        help=f"at most this many worker processes, used from {workers.PARALLEL_ROWS:,} rows of "
                             "results (default: one per CPU); the same figures")
    args = parser.parse_args(argv)
    paths = draw_all(args.results, args.output, args.jobs)
    for path in paths:
        print(path)
    return 0
