"""Figures of the loaded-latency, core-to-core and mixed-bandwidth kernels, drawn with the
conventions of `figures` (files `<kind>--<variant>.png/.svg` under `<figdir>/<bench>/`, the
colour-blind-safe palette, nothing written when the data is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.figures import LINESTYLES, PALETTE, heatmap, new_figure, save

CAPTIONS = {
    "loaded_latency": "Pointer-chase latency against the bandwidth the load threads achieved at once, "
    "one line per traffic kind (reads to writes), the idle chase at zero load; bars span each point's "
    "fastest and slowest sample.",
    "c2c_heatmap": "Median round trip of a cache line between two CPUs, CPUs ordered by NUMA node and "
    "L3 group; lines mark the L3 groups (thin) and nodes (thick) the kernel found the CPUs on.",
    "mix_bandwidth_matrix": "Bandwidth of threads on a CPU node (rows) to memory on a node (columns), one "
    "panel per traffic kind.",
}


def _text(col: pd.Series) -> pd.Series:
    return col.astype(object).where(col.notna(), "").astype(str)


def plot_loaded_latency(table: pd.DataFrame | None, figdir: Path) -> list[Path]:
    if table is None or table.empty or "load_gb_s" not in table:
        return []
    df = table.assign(chase_node=_text(table["chase_node"]), mem_nodes=_text(table["mem_nodes"]))
    paths: list[Path] = []
    for (chase, mem), part in df.groupby(["chase_node", "mem_nodes"]):
        fig, (ax,) = new_figure()
        for i, (traffic, line) in enumerate(part.groupby("traffic", sort=False)):
            line = line.assign(x=pd.to_numeric(line["load_gb_s"]), y=pd.to_numeric(line["latency_ns_median"]))
            line = line.groupby("x", as_index=False).agg(y=("y", "median"), lo=("latency_ns_min", "min"),
                                                         hi=("latency_ns_max", "max")).sort_values("x")
            ax.errorbar(line["x"], line["y"], yerr=[line["y"] - line["lo"], line["hi"] - line["y"]],
                        color=PALETTE[i % len(PALETTE)], linestyle=LINESTYLES[i % len(LINESTYLES)], marker="o",
                        markersize=3, capsize=2, label=str(traffic))
        ax.set_xlabel("load bandwidth achieved (GB/s)")
        ax.set_ylabel("chase latency (ns)")
        ax.set_title(f"Loaded latency: chase on node {chase}, memory on node(s) {mem or 'default'}")
        ax.legend(title="traffic", fontsize=8)
        paths += save(fig, figdir, "loaded_latency", "loaded_latency", f"cpu{chase}-mem{mem or 'default'}")
    return paths


def c2c_matrix(table: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[int, int, int]]]:
    """Symmetric CPU x CPU matrix of median round trips, ordered by (node, L3 group, CPU), and
    each CPU's (cpu, node, L3 group) in that order."""
    ends = pd.concat([
        table[["cpu_a", "node_a", "l3_group_a"]].set_axis(["cpu", "node", "l3"], axis=1),
        table[["cpu_b", "node_b", "l3_group_b"]].set_axis(["cpu", "node", "l3"], axis=1),
    ]).drop_duplicates("cpu")
    ends = ends[ends["cpu"] >= 0].sort_values(["node", "l3", "cpu"])
    order = [int(c) for c in ends["cpu"]]
    pairs = table.groupby(["cpu_a", "cpu_b"])["round_trip_ns_median"].median()
    matrix = pd.DataFrame(np.nan, index=order, columns=order)
    for (a, b), v in pairs.items():
        if a in matrix.index and b in matrix.index:
            matrix.loc[a, b] = matrix.loc[b, a] = v
    return matrix, [(int(r.cpu), int(r.node), int(r.l3)) for r in ends.itertuples()]


def plot_c2c(table: pd.DataFrame | None, figdir: Path) -> list[Path]:
    if table is None or table.empty or "round_trip_ns_median" not in table:
        return []
    paths: list[Path] = []
    mem = _text(table["mem_nodes"]) if "mem_nodes" in table else pd.Series("", index=table.index)
    for home, part in table.groupby(mem):
        matrix, cpus = c2c_matrix(part)
        if matrix.shape[0] < 2:
            continue
        fig, (ax,) = new_figure(width=7.0)
        fig.set_figheight(6.0)
        heatmap(ax, matrix, "round trip (ns)", ".0f", "CPU", "CPU")
        for k in range(1, len(cpus)):
            if cpus[k][1] != cpus[k - 1][1] or cpus[k][2] != cpus[k - 1][2]:
                width = 2.0 if cpus[k][1] != cpus[k - 1][1] else 0.6
                ax.axhline(k - 0.5, color="black", linewidth=width)
                ax.axvline(k - 0.5, color="black", linewidth=width)
        ax.set_title(f"Core-to-core round trip, line on node {home or 'of the first CPU'}")
        paths += save(fig, figdir, "c2c", "c2c_heatmap", f"line-{home or 'first-touch'}")
    return paths


def plot_mix_matrix(table: pd.DataFrame | None, figdir: Path) -> list[Path]:
    if table is None or table.empty or "gb_s_median" not in table:
        return []
    df = table.assign(cpu_nodes=_text(table["cpu_nodes"]), mem_nodes=_text(table["mem_nodes"]))
    df = df[~df["cpu_nodes"].str.contains(",") & ~df["mem_nodes"].str.contains(",") & (df["mem_nodes"] != "")]
    kinds = list(dict.fromkeys(df["traffic"])) if "traffic" in df else []
    if not kinds:
        return []
    fig, axes = new_figure(ncols=len(kinds), width=max(6.5, 4.0 * len(kinds)))
    drawn = 0
    for ax, kind in zip(axes, kinds):
        matrix = df[df["traffic"] == kind].pivot_table(index="cpu_nodes", columns="mem_nodes", values="gb_s_median",
                                                        aggfunc="median")
        if matrix.size < 2:
            ax.set_visible(False)
            continue
        heatmap(ax, matrix, "bandwidth (GB/s)", ".1f", "CPU node", "memory node")
        ax.set_title(str(kind))
        drawn += 1
    return save(fig, figdir, "mix_bandwidth", "mix_bandwidth_matrix", "all") if drawn else []
