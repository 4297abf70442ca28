"""Figures from aggregated results: one PNG and one SVG per figure, under `<figdir>/<bench>/`.

File names are `<kind>--<variant>.png` so that Snakemake's report can take the figure kind and
its variant (mode, kernel, memory kind) from the name. Every drawing function returns the paths
it wrote and writes nothing when the data it needs is absent.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
# Figure objects without pyplot: no global figure state, no GUI backend, files only (Agg).
from matplotlib.figure import Figure

from numasweep import series
from numasweep.errors import NumasweepError
from numasweep.io import read_csv
from numasweep.units import format_size, parse_page_fractions

BENCHES = ("latency", "bandwidth", "copy", "gpu_xfer", "loaded_latency", "c2c", "mix_bandwidth")

# Okabe & Ito's palette: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
LINESTYLES = ["-", "--", ":", "-."]
HEATMAP = "cividis"  # perceptually uniform and readable without red/green vision

# Report width is about 800 px; 8 x 4.5 in at 100 dpi keeps labels legible without zooming.
FIGSIZE = (8.0, 4.5)
DPI = 100

GPU_SIZE = "access_size(bytes)"
GPU_DIRECTIONS = (
    ("read", "host to device"),
    ("write", "device to host"),
)

# One sentence per figure kind, shown under each figure in the Markdown report.
CAPTIONS = {
    "latency_vs_size": "Load-to-use latency of a random pointer chase against buffer size, "
    "one line per rank coloured by L3 group, with the cache sizes marked; the band around a line "
    "spans its runs' fastest to slowest sample where the kernel recorded them.",
    "concurrent_vs_serial": "Latency measured with all ranks running at once divided by the latency "
    "of the same rank running alone, against buffer size.",
    "latency_matrix": "Median latency over ranks by the NUMA node of the CPU (rows) and of the "
    "memory (columns) at the largest size measured.",
    "bandwidth_vs_threads": "Best STREAM bandwidth against thread count, one line per CPU node and "
    "memory node, local and remote.",
    "bandwidth_matrix": "Best STREAM bandwidth at the highest thread count by CPU node (rows) and "
    "memory node (columns).",
    "copy_matrix": "Copy bandwidth from a source node (rows) to a destination node (columns), one "
    "panel per node running the copying threads.",
    "gpu_bandwidth": "Host-device transfer bandwidth against transfer size for each host memory "
    "policy and weights, both directions.",
    "gpu_latency": "Host-device transfer time against transfer size for each host memory policy "
    "and weights, both directions.",
    "cross_latency_vs_size": "Median latency over ranks against buffer size on each system, one "
    "panel per mode.",
    "loaded_latency": "Pointer-chase latency against the bandwidth the load threads achieved at once, "
    "one line per traffic kind (reads to writes), the idle chase at zero load; bars span each point's "
    "fastest and slowest sample.",
    "c2c_heatmap": "Median round trip of a cache line between two CPUs, CPUs ordered by NUMA node and "
    "L3 group; lines mark the L3 groups (thin) and nodes (thick) the kernel found the CPUs on.",
    "mix_bandwidth_matrix": "Bandwidth of threads on a CPU node (rows) to memory on a node (columns), one "
    "panel per traffic kind.",
}


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


def load_results(results_dir: str | os.PathLike) -> dict[str, pd.DataFrame]:
    """The aggregated table of every benchmark present in a results folder, by bench name."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise NumasweepError(f"{results_dir}: no such results folder; give the folder that holds "
                             "topology.json and the aggregated <bench>.csv files")
    frames = {}
    for bench in BENCHES:
        path = results_dir / f"{bench}.csv"
        if path.exists():
            df = read_csv(path)
            if len(df):
                frames[bench] = df
    return frames


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


def as_label(values: pd.Series) -> pd.Series:
    """Text labels from a column pandas may have read as float: 0.0 -> "0", NaN -> ""."""
    return series.labels(values)


def slug(value: object) -> str:
    text = re.sub(r"[^A-Za-z0-9]+", "-", str(value)).strip("-").lower()
    return text or "all"


# ---------------------------------------------------------------------------------------------
# Drawing helpers


def new_figure(ncols: int = 1, width: float | None = None) -> tuple[Figure, list]:
    fig = Figure(figsize=(width or FIGSIZE[0], FIGSIZE[1]), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)
    return fig, list(axes[0])


def save(fig: Figure, figdir: Path, bench: str, kind: str, variant: str) -> list[Path]:
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
    """(size in bytes, label) for each cache level, plus the L3 capacity of one NUMA node."""
    if not topology:
        return []
    marks: dict[int, str] = {}
    for cache in topology.get("caches", []):
        if cache.get("type") == "Instruction":
            continue
        size = int(cache.get("size_bytes", 0))
        name = f"L{cache.get('level')}{'d' if cache.get('type') == 'Data' else ''}"
        if size:
            marks.setdefault(size, f"{name} {format_size(size)}")
    l3 = [c for c in topology.get("caches", []) if c.get("level") == 3]
    nodes = [n for n in topology.get("nodes", []) if n.get("cpus")]
    if l3 and nodes:
        node_cpus = set(nodes[0]["cpus"])
        per_node = sum(
            int(c["size_bytes"])
            for c in l3
            for inst in c.get("instances", [])
            if node_cpus & set(inst)
        )
        if per_node and per_node not in marks:
            marks[per_node] = f"L3 per node {format_size(per_node)}"
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


def rank_label(n: object) -> str:
    n = int(n)
    return "" if n < 0 else (f"{n} rank" if n == 1 else f"{n} ranks")


def latency_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median over repetitions: one row per point of a series (`numasweep.series`)."""
    out = series.point_table(df, "latency", ["latency_ns_median"], first=("page_fractions",))
    if "ranks" in out:
        # Rank 0 of a 1-rank run and rank 0 of an 8-rank run are different measurements: the
        # rank count names the configuration (`concurrent-8 ranks`), it is never averaged over.
        out["ranks"] = out["ranks"].map(rank_label)
    return out


def latency_configs(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Per mode, then per every other configuration column that varies (`numasweep.series`)."""
    return series.configurations(df, "latency", first="mode")


def latency_lines(part: pd.DataFrame):
    """(key, rows) per line of one latency configuration: one per rank (and host, CPU)."""
    cols = [c for c in series.WITHIN["latency"] if c in part]
    return part.groupby(cols, sort=True, dropna=False)


SPREAD = ("latency_ns_min", "latency_ns_max")


def with_spread(table: pd.DataFrame, latency: pd.DataFrame) -> pd.DataFrame:
    """`table` (latency_table) with each point's sample range: the fastest and slowest sample of
    its runs (median over repetitions), where the kernel recorded them."""
    if not set(SPREAD) <= set(latency.columns):
        return table
    band = series.point_table(latency, "latency", list(SPREAD))
    if "ranks" in band:
        band["ranks"] = band["ranks"].map(rank_label)
    keys = series.point_columns(table, "latency")
    return table.merge(band[keys + list(SPREAD)], on=keys, how="left")


def plot_rank_curves(ax, part: pd.DataFrame, value: str, topology: dict | None) -> None:
    """One line per rank against size, coloured by L3 group, styled by its place in the node;
    a band from each point's sample range where the table has one (`with_spread`)."""
    styles = l3_styles(topology, part)
    for _, rows in latency_lines(part):
        rows = rows.sort_values("size_bytes")
        rank = rows["rank"].iloc[0]
        group = int(rows["l3_group"].iloc[0])
        colour, style = styles.get(group, (PALETTE[0], "-"))
        ax.plot(rows["size_bytes"], rows[value], marker="o", markersize=3, color=colour,
                linestyle=style, label=f"rank {rank} (CPU {rows['cpu'].iloc[0]}, L3 group {group})")
        if value == "latency_ns_median" and set(SPREAD) <= set(rows.columns) and rows[SPREAD[0]].notna().any():
            ax.fill_between(rows["size_bytes"], rows[SPREAD[0]], rows[SPREAD[1]], color=colour, alpha=0.15,
                            linewidth=0)
    ax.legend(fontsize=7, ncol=2 if part["rank"].nunique() > 8 else 1, loc="upper left")


def plot_latency_vs_size(latency: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    table = with_spread(latency_table(latency), latency)
    for variant, part in latency_configs(table):
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
    table = latency_table(latency)
    if set(table["mode"]) < {"concurrent", "serial"}:
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
    rows = with_memory_node(part[part["size_bytes"] == part["size_bytes"].max()])
    rows = rows.dropna(subset=["memory_node"])
    if rows.empty:
        return None
    matrix = rows.pivot_table(index="cpu_node", columns="memory_node",
                              values="latency_ns_median", aggfunc="median")
    return matrix if matrix.size > 1 else None


def plot_latency_matrix(latency: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    for variant, part in latency_configs(latency_table(latency)):
        matrix = latency_matrix(part)
        if matrix is None:
            continue
        matrix = full_node_matrix(matrix, topology)
        fig, (ax,) = new_figure(width=6.5)
        heatmap(ax, matrix, "latency (ns per load)", ".1f", "CPU node", "memory node")
        ax.set_title(f"Latency at {format_size(int(part['size_bytes'].max()))}, {variant}")
        paths += save(fig, figdir, "latency", "latency_matrix", variant)
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


def bandwidth_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median over repetitions of the best bandwidth per point of a series, with the memory
    node of each row."""
    df = df.copy()
    if "kernel" not in df:
        df["kernel"] = "kernel not recorded"
    df["kernel"] = as_label(df["kernel"]).replace("", "kernel not recorded")
    out = series.point_table(df, "bandwidth", ["best_mb_s"], first=("page_fractions",))
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
    """Per kernel, then per every other configuration column that varies (`numasweep.series`)."""
    return series.configurations(table, "bandwidth", first="kernel")


def bandwidth_lines(part: pd.DataFrame):
    """(key, rows) per line of one bandwidth configuration: CPU and memory nodes, policy."""
    cols = [c for c in series.WITHIN["bandwidth"] if c in part] + ["memory_node"]
    return part.groupby(cols, sort=True, dropna=False)


def plot_bandwidth_vs_threads(bandwidth: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    for variant, part in bandwidth_variants(bandwidth_table(bandwidth)):
        if part["threads"].nunique() < 2:
            continue
        fig, (ax,) = new_figure()
        for i, (_, rows) in enumerate(bandwidth_lines(part)):
            rows = rows.sort_values("threads")
            first = rows.iloc[0]
            remote = not pd.isna(first["memory_node"]) and str(int(first["memory_node"])) != first["cpu_nodes"]
            ax.plot(rows["threads"], rows["best_mb_s"] / 1000, marker="o", markersize=3,
                    color=PALETTE[i % len(PALETTE)], linestyle="--" if remote else "-",
                    label=bandwidth_series_label(first["cpu_nodes"], first))
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
    for variant, part in bandwidth_variants(bandwidth_table(bandwidth)):
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
    keys = ["cpu_node", "src_node", "dst_node"]
    rows = copy[copy["threads"] == copy["threads"].max()]
    rows = rows[rows["bytes"] == rows["bytes"].max()]
    table = rows.groupby(keys)["best_gb_s"].median().reset_index()
    if len(table) < 2:
        return []
    cpu_nodes = sorted(table["cpu_node"].unique())
    fig, axes = new_figure(ncols=len(cpu_nodes), width=max(6.5, 4.2 * len(cpu_nodes)))
    for ax, node in zip(axes, cpu_nodes):
        matrix = table[table["cpu_node"] == node].pivot_table(
            index="src_node", columns="dst_node", values="best_gb_s", aggfunc="median")
        heatmap(ax, matrix, "bandwidth (GB/s)", ".1f", "source node", "destination node")
        ax.set_title(f"threads on node {node}")
    fig.suptitle(f"Copy bandwidth, {int(rows['threads'].max())} threads, "
                 f"{format_size(int(rows['bytes'].max()))}")
    return save(fig, figdir, "copy", "copy_matrix", "all")


# ---------------------------------------------------------------------------------------------
# GPU transfers


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
    runs with different GPU counts never share one (`numasweep.series`)."""
    df = df.copy()
    if "pinned" not in df:
        df["pinned"] = 1
    values = ["read_latency(ms)", "read_bw(gib/s)", "write_latency(ms)", "write_bw(gib/s)"]
    return series.point_table(df, "gpu_xfer", values)


def gpu_lines(part: pd.DataFrame):
    cols = [c for c in series.WITHIN["gpu_xfer"] if c in part]
    return part.groupby(cols, sort=True, dropna=False)


def gpu_configurations(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Pinned and pageable host memory apart, then every other configuration that varies."""
    table = table.copy()
    table["pinned"] = ["pinned" if str(p) in ("1", "true", "True") else "pageable" for p in table["pinned"]]
    return series.configurations(table, "gpu_xfer", first="pinned")


def plot_gpu(gpu: pd.DataFrame, topology: dict | None, figdir: Path) -> list[Path]:
    table = gpu_table(gpu)
    paths: list[Path] = []
    for variant, part in gpu_configurations(table):
        sizes = sorted(part[GPU_SIZE].unique())
        if len(sizes) < 2:
            continue
        for kind, column, unit, log_y in (
            ("gpu_bandwidth", "bw(gib/s)", "bandwidth (GiB/s)", False),
            ("gpu_latency", "latency(ms)", "transfer time (ms)", True),
        ):
            fig, axes = new_figure(ncols=2, width=11)
            for ax, (direction, words) in zip(axes, GPU_DIRECTIONS):
                for i, (_, rows) in enumerate(gpu_lines(part)):
                    rows = rows.sort_values(GPU_SIZE)
                    ax.plot(rows[GPU_SIZE], rows[f"{direction}_{column}"], marker="o", markersize=3,
                            color=PALETTE[i % len(PALETTE)],
                            linestyle=LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)],
                            label=gpu_label(rows.iloc[0]))
                size_axis(ax, sizes, "transfer size")
                if log_y:
                    ax.set_yscale("log")
                else:
                    ax.set_ylim(bottom=0)
                ax.set_ylabel(unit)
                ax.set_title(f"{words} ({variant} host memory)".replace("(pinned-", "(pinned, ").replace("(pageable-", "(pageable, "))
            axes[-1].legend(fontsize=7, loc="best")
            paths += save(fig, figdir, "gpu_xfer", kind, variant)
    return paths


# ---------------------------------------------------------------------------------------------
# Entry points

DRAWERS = {
    "latency": (plot_latency_vs_size, plot_concurrent_vs_serial, plot_latency_matrix),
    "bandwidth": (plot_bandwidth_vs_threads, plot_bandwidth_matrix),
    "copy": (plot_copy_matrix,),
    "gpu_xfer": (plot_gpu,),
}


def draw_all(results_dir: str | os.PathLike, figdir: str | os.PathLike) -> list[Path]:
    """Every figure the results support; each bench gets its folder even when it has none."""
    figdir = Path(figdir)
    topology = load_topology(results_dir)
    frames = load_results(results_dir)
    paths: list[Path] = []
    for bench, drawers in DRAWERS.items():
        (figdir / bench).mkdir(parents=True, exist_ok=True)
        if bench in frames:
            for draw in drawers:
                paths += draw(frames[bench], topology, figdir)
    from numasweep import mlc_figures  # it builds on this module

    for bench, draw in mlc_figures.DRAWERS.items():
        (figdir / bench).mkdir(parents=True, exist_ok=True)
        if bench in frames:
            paths += draw(frames[bench], figdir)
    return paths


def figure_kind(path: Path) -> str:
    return path.name.split("--")[0]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m numasweep figures",
                                     description="draw the figures from aggregated results")
    parser.add_argument("--results", required=True, help="folder with topology.json and <bench>.csv")
    parser.add_argument("-o", "--output", required=True, help="figure folder (one subfolder per bench)")
    args = parser.parse_args(argv)
    paths = draw_all(args.results, args.output)
    for path in paths:
        print(path)
    return 0
