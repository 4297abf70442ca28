"""The latency figures: latency against size per rank (coloured by L3 group, cache sizes marked),
concurrent over serial, the CPU-node x memory-node matrix, and rank scaling."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from numasweep.benches.latency import findings, levels, plateaus, tables
from numasweep.benches.latency.tables import NAME, SPREAD, WITHIN
from numasweep.core.topology import Topology
from numasweep.core.units import format_size
from numasweep.reporting import figures
from numasweep.running.verdict import COLUMN as VERDICT, VERDICTS
from numasweep.results import series


def cache_markers(topology: Topology | None) -> list[tuple[int, str]]:
    """(size in bytes, label) for each cache level as one core can use it (levels'
    usable capacities: the L3 of the core's own L3 group, never a node's sum of them)."""
    marks: dict[int, str] = {}
    for cap in levels.usable_capacities(topology):
        name, _, where = cap.label.partition(" (")
        marks.setdefault(cap.size_bytes, f"{name} {format_size(cap.size_bytes)}" + (f" ({where}" if where else ""))
    return sorted(marks.items())


def draw_cache_markers(ax, topology: Topology | None, sizes: list[int]) -> None:
    """A dotted line at each cache size inside the sizes drawn, named short ("L2 1MiB") inside
    the axes, just below the top, so no label is cut at the figure's edge."""
    lo, hi = min(sizes), max(sizes)
    for size, label in cache_markers(topology):
        if lo <= size <= hi:
            ax.axvline(size, color="0.4", linestyle=":", linewidth=1)
            ax.text(size, 0.97, label.split(" (")[0], transform=ax.get_xaxis_transform(), rotation=90,
                    va="top", ha="right", fontsize=8, color="0.3", clip_on=True,
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})


def log_latency_axis(ax, label: str = "latency (ns per load)") -> None:
    """Latency on a log axis, so each cache level's step shows beside the DRAM one, its ticks
    written as plain numbers (1, 2, 5, 10, 20, ...)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylabel(label)


def l3_linestyles(topology: Topology | None) -> dict[int, str]:
    """Line style per L3 group by the group's place inside its NUMA node (first solid, second
    dashed, ...), so that one node's L3 groups (CCDs) read as a pair; `linestyle_key` says so."""
    styles: dict[int, str] = {}
    if topology and topology.l3_groups:
        cpu_node = {c: n.id for n in topology.nodes for c in n.cpus}
        seen: dict[int, int] = {}
        for index, cpus in enumerate(topology.l3_groups):
            node = cpu_node.get(min(cpus), -1)
            styles[index] = figures.LINESTYLES[seen.get(node, 0) % len(figures.LINESTYLES)]
            seen[node] = seen.get(node, 0) + 1
    return styles


PLACE_WORDS = ("first", "second", "third", "fourth")


def linestyle_key(used: set[str]) -> str | None:
    """A legend title naming what the line styles `used` (`l3_linestyles`) stand for: "solid: a
    node's first L3 group, dashed: its second"; None where every line is solid."""
    styles = figures.LINESTYLES
    places = [i for i, style in enumerate(styles) if style in used]
    if places in ([], [0]):
        return None
    return ", ".join(f"{figures.STYLE_WORDS[styles[i]]}: " + (f"a node's {PLACE_WORDS[i]} L3 group" if n == 0
                                                      else f"its {PLACE_WORDS[i]}")
                     for n, i in enumerate(places))


def across_hosts(part: pd.DataFrame, value: str, by: tuple[str, ...] = ()) -> tuple[pd.DataFrame, int]:
    """A fleet's configuration (several hosts): per line but for the host, and size, the median
    of `value` over the hosts, with their lowest and highest as the band (SPREAD), and how many
    hosts; the part itself and 1 otherwise. A thousand nodes' lines would hide one another (the
    fleet ranking names the nodes out of line) and take minutes to draw."""
    hosts = part["host"].nunique() if "host" in part else 1
    if hosts <= 1:
        return part, 1
    keys = [*by] + [c for c in WITHIN if c in part and c != "host"] + ["size_bytes"]
    by = part.groupby(keys, sort=True, dropna=False)[value]
    out = by.median().to_frame()
    out[SPREAD[0]], out[SPREAD[1]] = by.min(), by.max()
    return out.reset_index(), hosts


def plot_rank_curves(ax, part: pd.DataFrame, value: str, topology: Topology | None,
                     by: tuple[str, ...] = ()) -> None:
    """One line per rank (and value of the columns `by`, named first in its label) against size,
    each its own colour, styled by its L3 group's place in its node (the legend's title says how);
    a band from each point's sample range where the table has one (`tables.SPREAD`). Over several
    hosts, one line per rank: the median over the hosts, the band their range (`across_hosts`)."""
    styles = l3_linestyles(topology)
    part, hosts = across_hosts(part, value, by)
    over = f", median of {hosts} nodes" if hosts > 1 else ""
    lines = list(tables.latency_lines(part, by))
    used: set[str] = set()
    for colour, (_, rows) in zip(figures.line_colours(len(lines)), lines):
        rows = rows.sort_values("size_bytes")
        rank = rows["rank"].iloc[0]
        group = int(rows["l3_group"].iloc[0])
        style = styles.get(group, "-")
        used.add(style)
        kind = series.config_name(rows.iloc[0].to_dict(), list(by))
        ax.plot(rows["size_bytes"], rows[value], marker="o", markersize=3, color=colour, linestyle=style,
                label=figures.marked((f"{kind}, " if kind else "") + f"rank {rank} (CPU {rows['cpu'].iloc[0]}, "
                                     f"L3 group {group}){over}", rows))
        if (value == "latency_ns_median" or hosts > 1) and set(SPREAD) <= set(rows.columns) \
                and rows[SPREAD[0]].notna().any():
            ax.fill_between(rows["size_bytes"], rows[SPREAD[0]], rows[SPREAD[1]], color=colour, alpha=0.15,
                            linewidth=0)
    if hosts > 1:
        ax.text(0.99, 0.01, f"band: lowest to highest of {hosts} nodes", transform=ax.transAxes, fontsize=7,
                ha="right", va="bottom")
    ax.legend(fontsize=7, ncol=2 if part["rank"].nunique() > 8 else 1, loc="best",
              title=linestyle_key(used), title_fontsize=7)


def plot_latency_vs_size(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    paths: list[Path] = []
    for variant, part in tables.latency_configs(tables.latency_table(latency)):
        if part["size_bytes"].nunique() >= 2:
            paths += size_figure(part, topology, figdir, "latency_vs_size", variant, "Latency vs buffer size")
    return paths


def size_figure(part: pd.DataFrame, topology: Topology | None, figdir: Path, kind: str, variant: str,
                title: str, by: tuple[str, ...] = ()) -> list[Path]:
    """Latency against size, one line per rank (and value of `by`: `plot_rank_curves`), the cache
    sizes marked, on a log axis."""
    sizes = sorted(part["size_bytes"].unique())
    fig, (ax,) = figures.new_figure()
    plot_rank_curves(ax, part, "latency_ns_median", topology, by)
    draw_cache_markers(ax, topology, sizes)
    figures.size_axis(ax, sizes)
    log_latency_axis(ax)
    ax.set_title(figures.titled(title, variant))
    return figures.save(fig, figdir, NAME, kind, variant)


def plot_concurrent_vs_serial(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    table = tables.latency_table(latency)
    if set(table["mode"].unique()) < {"concurrent", "serial"}:
        return []
    # the same point of the same series, once with all ranks at once and once alone
    keys = [c for c in series.point_columns(table, NAME) if c != "mode"]
    conc = table[table["mode"] == "concurrent"].set_index(keys)
    ser = table[table["mode"] == "serial"].set_index(keys)
    ratio = (conc["latency_ns_median"] / ser["latency_ns_median"]).dropna().rename("ratio").reset_index()
    if VERDICT in table:       # a ratio is as noisy as the noisier of its two points
        worst = pd.concat([conc[VERDICT], ser[VERDICT]], axis=1).reindex(
            pd.MultiIndex.from_frame(ratio[keys]) if len(keys) > 1 else ratio[keys[0]])
        ratio[VERDICT] = [next((v for v in reversed(VERDICTS) if v in set(map(str, pair))), VERDICTS[0])
                          for pair in worst.to_numpy()]
    if ratio.empty or ratio["size_bytes"].nunique() < 2:
        return []
    paths: list[Path] = []
    for variant, part in series.configurations(ratio, "latency"):
        fig, (ax,) = figures.new_figure()
        plot_rank_curves(ax, part, "ratio", topology)
        ax.axhline(1.0, color="0.3", linewidth=1)
        figures.size_axis(ax, sorted(part["size_bytes"].unique()))
        ax.set_ylabel("concurrent / serial latency (ratio)")
        ax.set_title(figures.titled("Concurrent vs serial latency", variant))
        paths += figures.save(fig, figdir, NAME, "concurrent_vs_serial", variant)
    return paths


def latency_matrix(rows: pd.DataFrame, topology: Topology | None = None) -> pd.DataFrame | None:
    """The median latency by (cpu node, memory node) of `plateaus.samples`, every node of the
    system a row and a column (`figures.full_node_matrix`); a row per L3 group of a node instead
    where one cell holds ranks of two or more L3 groups (a median of two CCDs hides their
    asymmetry). None with a single cell."""
    if rows.empty:
        return None
    split = bool((rows.groupby(["cpu_node", "memory_node"])["l3_group"].nunique() > 1).any())
    if not split:
        matrix = rows.pivot_table(index="cpu_node", columns="memory_node", values="value", aggfunc="median")
        return figures.full_node_matrix(matrix, topology) if matrix.size > 1 else None
    matrix = rows.pivot_table(index=["cpu_node", "l3_group"], columns="memory_node", values="value", aggfunc="median")
    matrix.index = [f"node {int(node)}, L3 group {int(group)}" for node, group in matrix.index]
    if topology and topology.nodes:
        matrix = matrix.reindex(columns=topology.node_ids())
    return matrix


SOURCE = ("the median over runs at the end of each CPU node and memory node's memory plateau, on the curves of the "
          "fewest ranks measuring alone")


def node_samples(latency: pd.DataFrame, topology: Topology | None = None) -> pd.DataFrame:
    """ns per load by (CPU node, memory node), one row per replicate (rank and repetition) of the
    curves the headline reads idle latency from (`plateaus.idle`: the fewest ranks, alone), each
    at the size the headline reads memory's plateau at: the matrix these make (median per cell)
    is the headline's DRAM values, which the firmware comparison, the weights and the hwloc
    export read too (`attrs["source"]` says so)."""
    every, _ = plateaus.curves(latency, topology)
    rows = plateaus.samples(plateaus.memory_readings(plateaus.idle(every)))
    sizes = sorted(set(rows["size_bytes"]))
    rows.attrs["source"] = SOURCE + (f" ({', '.join(format_size(int(s)) for s in sizes)})" if sizes else "")
    return rows[["cpu_node", "l3_group", "memory_node", "value"]].assign(size_bytes=rows["size_bytes"])


def _config_curves(every: list[plateaus.Curve], part: pd.DataFrame, cols: list[str]) -> list[plateaus.Curve]:
    """The curves of one configuration of `latency_configs` (its values of `cols`; one rank's
    concurrent and serial runs, pooled by the analysis, belong to both modes)."""
    want = {c: str(part[c].iloc[0]) for c in cols if c in part}

    def matches(curve: plateaus.Curve, column: str, value: str) -> bool:
        got = str(curve.key.get(column, ""))
        return got == value or (column == "mode" and got == findings.POOLED_MODE and value in ("concurrent", "serial"))
    return [c for c in every if all(matches(c, col, v) for col, v in want.items())]


def plot_latency_matrix(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    """Per configuration, the CPU node x memory node matrix where the headline reads DRAM: each
    curve at the end of its memory plateau (`plateaus`), never past it where page walks add."""
    every, _ = plateaus.curves(latency, topology)
    table = tables.latency_table(latency)
    cols = ["mode"] + [c for c in series.config_columns(table, NAME) if c != "mode"]
    paths: list[Path] = []
    for variant, part in tables.latency_configs(table):
        rows = plateaus.samples(plateaus.memory_readings(_config_curves(every, part, cols)))
        matrix = latency_matrix(rows, topology)
        if matrix is None:
            continue
        per_group = not pd.api.types.is_numeric_dtype(matrix.index)   # rows named "node 0, L3 group 1"
        fig, (ax,) = figures.new_figure(width=8.0 if per_group else 6.5)
        figures.heatmap(ax, matrix, "latency (ns per load)", ".1f",
                        "CPU: NUMA node and L3 group" if per_group else "CPU node", "memory node")
        sizes = ", ".join(format_size(int(s)) for s in sorted(set(rows["size_bytes"])))
        ax.set_title(figures.titled(f"Latency on the memory plateau, at {sizes}", variant))
        paths += figures.save(fig, figdir, NAME, "latency_matrix", variant)
    return paths


def plot_rank_scaling(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    """Median latency over a run's ranks against ranks per domain (`findings.rank_scaling`), its band
    the fastest to the slowest rank: one figure per configuration other than placement and domain
    set, one panel per size."""
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
            groups = list(rows.groupby(lines, sort=True))
            for colour, (key, g) in zip(figures.line_colours(len(groups)), groups):
                key = key if isinstance(key, tuple) else (key,)
                name = dict(zip(lines, key))
                curve = g.groupby("ranks_per_domain")["latency_ns_median"].agg(["median", "min", "max"])
                ax.plot(curve.index, curve["median"], marker="o", markersize=3, color=colour,
                        linestyle="--" if name.get("strategy") == "interleaved" else "-",
                        label=figures.marked(series.config_name(name, lines), g))
                ax.fill_between(curve.index, curve["min"], curve["max"], color=colour, alpha=0.15, linewidth=0)
            ax.set_xlabel("ranks per domain")
            figures.count_axis(ax.xaxis)
            log_latency_axis(ax, "median latency over ranks (ns per load)")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_title(f"{format_size(int(size))} buffers")
            interleaved = "strategy" in rows and (rows["strategy"] == "interleaved").any()
            dashed = f"dashed: {series.STRATEGY_WORDS['interleaved']}, " if interleaved else ""
            ax.legend(fontsize=7, loc="best", title=f"{dashed}band: fastest to slowest rank", title_fontsize=7)
        fig.suptitle(figures.titled("Latency against ranks per domain", variant))
        paths += figures.save(fig, figdir, NAME, "rank_scaling", variant)
    return paths


# The columns naming a run's page kind: the sweep's `pages` and the kernel's `page_size`.
PAGES = ("pages", "page_size")


def plot_pages(latency: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    """4 KiB and huge pages on one axis (where the TLB's reach shows): per configuration but the
    page kind, measured with two or more kinds, each rank's line per page kind against size."""
    table = tables.latency_table(latency)
    by = tuple(c for c in PAGES if c in table)
    paths: list[Path] = []
    for variant, part in series.configurations(table, NAME, first="mode", without=by):
        if by and len(part.groupby(list(by), dropna=False)) >= 2 and part["size_bytes"].nunique() >= 2:
            paths += size_figure(part, topology, figdir, "latency_pages", variant, "4 KiB against huge pages", by)
    return paths
