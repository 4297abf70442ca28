"""The latency figures: latency against size per rank (coloured by L3 group, cache sizes marked),
concurrent over serial, the CPU-node x memory-node matrix, and rank scaling."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from numasweep.benches.latency import findings, tables
from numasweep.benches.latency.tables import NAME, SPREAD, WITHIN
from numasweep.core.topology import Topology
from numasweep.core.units import format_size
from numasweep.reporting import figures
from numasweep.results import series
from numasweep.results.tables import with_memory_node


def across_hosts(part: pd.DataFrame, value: str) -> tuple[pd.DataFrame, int]:
    """A fleet's configuration (several hosts): per line but for the host, and size, the median
    of `value` over the hosts, with their lowest and highest as the band (SPREAD), and how many
    hosts; the part itself and 1 otherwise. A thousand nodes' lines would hide one another (the
    fleet ranking names the nodes out of line) and take minutes to draw."""
    hosts = part["host"].nunique() if "host" in part else 1
    if hosts <= 1:
        return part, 1
    keys = [c for c in WITHIN if c in part and c != "host"] + ["size_bytes"]
    by = part.groupby(keys, sort=True, dropna=False)[value]
    out = by.median().to_frame()
    out[SPREAD[0]], out[SPREAD[1]] = by.min(), by.max()
    return out.reset_index(), hosts


def plot_rank_curves(ax, part: pd.DataFrame, value: str, topology: Topology | None) -> None:
    """One line per rank against size, coloured by L3 group, styled by its place in the node;
    a band from each point's sample range where the table has one (`tables.SPREAD`). Over several
    hosts, one line per rank: the median over the hosts, the band their range (`across_hosts`)."""
    styles = figures.l3_styles(topology, part)
    part, hosts = across_hosts(part, value)
    over = f", median of {hosts} nodes" if hosts > 1 else ""
    in_group: dict[int, int] = {}     # lines drawn so far per L3 group: each rank of one its own marker
    for _, rows in tables.latency_lines(part):
        rows = rows.sort_values("size_bytes")
        rank = rows["rank"].iloc[0]
        group = int(rows["l3_group"].iloc[0])
        colour, style = styles.get(group, (figures.PALETTE[0], "-"))
        marker = figures.MARKERS[in_group.get(group, 0) % len(figures.MARKERS)]
        in_group[group] = in_group.get(group, 0) + 1
        ax.plot(rows["size_bytes"], rows[value], marker=marker, markersize=3, color=colour,
                linestyle=style, label=f"rank {rank} (CPU {rows['cpu'].iloc[0]}, L3 group {group}){over}")
        if (value == "latency_ns_median" or hosts > 1) and set(SPREAD) <= set(rows.columns) \
                and rows[SPREAD[0]].notna().any():
            ax.fill_between(rows["size_bytes"], rows[SPREAD[0]], rows[SPREAD[1]], color=colour, alpha=0.15,
                            linewidth=0)
    if hosts > 1:
        ax.text(0.99, 0.01, f"band: lowest to highest of {hosts} nodes", transform=ax.transAxes, fontsize=7,
                ha="right", va="bottom")
    ax.legend(fontsize=7, ncol=2 if part["rank"].nunique() > 8 else 1, loc="best")


def plot_latency_vs_size(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    table = tables.latency_table(latency)
    for variant, part in tables.latency_configs(table):
        sizes = sorted(part["size_bytes"].unique())
        if len(sizes) < 2:
            continue
        fig, (ax,) = figures.new_figure()
        plot_rank_curves(ax, part, "latency_ns_median", topology)
        figures.draw_cache_markers(ax, topology, sizes)
        figures.size_axis(ax, sizes)
        figures.log_latency_axis(ax)
        ax.set_title(f"Latency vs buffer size, {variant}")
        paths += figures.save(fig, figdir, NAME, "latency_vs_size", variant)
    return paths


def plot_concurrent_vs_serial(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    table = tables.latency_table(latency)
    if set(table["mode"].unique()) < {"concurrent", "serial"}:
        return []
    # the same point of the same series, once with all ranks at once and once alone
    keys = [c for c in series.point_columns(table, NAME) if c != "mode"]
    conc = table[table["mode"] == "concurrent"].set_index(keys)["latency_ns_median"]
    ser = table[table["mode"] == "serial"].set_index(keys)["latency_ns_median"]
    ratio = (conc / ser).dropna().rename("ratio").reset_index()
    if ratio.empty or ratio["size_bytes"].nunique() < 2:
        return []
    paths: list[Path] = []
    for variant, part in series.configurations(ratio, "latency"):
        fig, (ax,) = figures.new_figure()
        plot_rank_curves(ax, part, "ratio", topology)
        ax.axhline(1.0, color="0.3", linewidth=1)
        figures.size_axis(ax, sorted(part["size_bytes"].unique()))
        ax.set_ylabel("concurrent / serial latency (ratio)")
        ax.set_title(f"Concurrent vs serial latency, {variant}")
        paths += figures.save(fig, figdir, NAME, "concurrent_vs_serial", variant)
    return paths


def latency_matrix(part: pd.DataFrame) -> pd.DataFrame | None:
    """Median latency by (cpu node, memory node) at the largest size; None with a single cell."""
    rows = with_memory_node(part[part["size_bytes"] == part["size_bytes"].max()])
    rows = rows.dropna(subset=["memory_node"])
    if rows.empty:
        return None
    matrix = rows.pivot_table(index="cpu_node", columns="memory_node",
                              values="latency_ns_median", aggfunc="median")
    return matrix if matrix.size > 1 else None


def node_samples(latency: pd.DataFrame) -> pd.DataFrame:
    """ns per load by (CPU node, memory node), one row per rank and repetition (each run of a rank
    is a unit: a node measured by one rank twice has two values, and an interval), at the largest
    size of the first configuration (latency_configs' order, the memory spec not telling
    configurations apart: runs with local memory and runs with memory on node 3 make one matrix), a
    serial one first where there is one (a rank alone: the idle latency firmware tables state)."""
    configs = [part for _, part in series.configurations(tables.latency_table(latency, per_repetition=True), NAME,
                                                         first="mode", without=("memory",))]
    configs.sort(key=lambda part: "mode" not in part or not (part["mode"] == "serial").all())
    if not configs:
        return pd.DataFrame(columns=["cpu_node", "memory_node", "value"])
    part = configs[0]
    rows = with_memory_node(part[part["size_bytes"] == part["size_bytes"].max()]).dropna(subset=["memory_node"])
    if "cpu_node" not in rows:       # a table that records no CPU node (a legacy or hand-made one)
        return pd.DataFrame(columns=["cpu_node", "memory_node", "value"])
    return pd.DataFrame({"cpu_node": rows["cpu_node"].astype(int), "memory_node": rows["memory_node"].astype(int),
                         "value": rows["latency_ns_median"].astype(float)})


def plot_latency_matrix(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    for variant, part in tables.latency_configs(tables.latency_table(latency)):
        matrix = latency_matrix(part)
        if matrix is None:
            continue
        matrix = figures.full_node_matrix(matrix, topology)
        fig, (ax,) = figures.new_figure(width=6.5)
        figures.heatmap(ax, matrix, "latency (ns per load)", ".1f", "CPU node", "memory node")
        ax.set_title(f"Latency at {format_size(int(part['size_bytes'].max()))}, {variant}")
        paths += figures.save(fig, figdir, NAME, "latency_matrix", variant)
    return paths


def plot_rank_scaling(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    """Median latency over a run's ranks against ranks per domain (`findings.rank_scaling`): one figure
    per configuration other than placement and domain set, one panel per size."""
    points = findings.scaling_points(latency)
    if points.empty:
        return []
    lines = [c for c in ("strategy", "domains") if c in points]
    paths: list[Path] = []
    for variant, part in series.configurations(points, NAME, without=(*lines, "ranks_per_domain", "ranks")):
        sizes = sorted(part["size_bytes"].unique())
        fig, axes = figures.new_figure(ncols=len(sizes), width=max(8.0, 4.5 * len(sizes)))
        for ax, size in zip(axes, sizes):
            rows = part[part["size_bytes"] == size]
            for i, (key, g) in enumerate(rows.groupby(lines, sort=True)):
                key = key if isinstance(key, tuple) else (key,)
                name = dict(zip(lines, key))
                curve = g.groupby("ranks_per_domain")["latency_ns_median"].median()
                ax.plot(curve.index, curve.values, marker="o", markersize=3,
                        color=figures.PALETTE[i % len(figures.PALETTE)],
                        linestyle="--" if name.get("strategy") == "interleaved" else "-",
                        label=f"{name.get('strategy', '')}, domains {name.get('domains', '')}")
            ax.set_xlabel("ranks per domain")
            figures.count_axis(ax.xaxis)
            figures.log_latency_axis(ax, "median latency over ranks (ns per load)")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_title(f"{format_size(int(size))} buffers")
            ax.legend(fontsize=7, loc="best")
        fig.suptitle(f"Latency against ranks per domain, {variant}")
        paths += figures.save(fig, figdir, NAME, "rank_scaling", variant)
    return paths
