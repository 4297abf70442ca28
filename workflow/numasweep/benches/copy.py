"""Node-to-node copy (`numa_copy`): threads on one node copying a buffer from a source node to a
destination node, for every pair asked.

The grid, the plan-time check (the buffer fits each node), the copy matrices (figure and raw
tables), and the finding: per configuration (threads, bytes, label, ...), cross-node over
within-node copies as the ratio of geometric means over cells, one log ratio per repetition, t
interval over repetitions; claimed past the floor and the noise, Benjamini-Hochberg over the
configurations of the call.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from numasweep.benches import common
from numasweep.core.registry import ON_CPU_MEASURES, Bench, Checks, Claim, Figure, Launch, Presentation, Spread, Tables, register
from numasweep.core.topology import Topology
from numasweep.core.units import count_words, format_size, size_words
from numasweep.findings.analysis import Finding, in_parens, interval_numbers
from numasweep.planning import checks, grid
from numasweep.reporting.figures import count_axis, heatmap, line_colours, marked, new_figure, save, titled
from numasweep.reporting.markdown import fmt_value, interval_cells, md_table
from numasweep.results import series
from numasweep.results.tables import as_text
from numasweep.statistics import contrasts, stats

KERNEL = "numa_copy"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
SERIES = ("cpu_node", "src_node", "dst_node", "threads", "bytes")
WITHIN = ("host", "src_node", "dst_node", "cpu_node")
COPY = stats.Measure("best_gb_s", "min_gb_s", "best_gb_s", "ntimes", "bytes")


# ---------------------------------------------------------------- grid and checks

def expand(topo: Any, section: dict) -> Iterator[grid.Job]:
    sweeps = section["sweeps"]
    nodes = topo.node_ids()
    for i, sw in enumerate(sweeps):
        where = f"copy.sweeps[{i}]"
        pairs = (
            [(s, d) for s in nodes for d in nodes]
            if sw["pairs"] == "all"
            else [tuple(p) for p in sw["pairs"]]
        )
        for p, pair in enumerate(pairs):
            grid.check_nodes(topo, list(pair), f"{where}.pairs[{p}]")
        size = grid.one_size(sw["size"], f"{where}.size")
        for (src, dst), threads, rep in itertools.product(pairs, sw["threads"], range(sw["repetitions"])):
            cpu_node = common.pair_cpu_node(topo, sw["cpu_node"], src, dst)
            grid.check_nodes(topo, [cpu_node], f"{where}.cpu_node")
            cpus = grid.cpus_on(topo, cpu_node, threads, f"{where}.threads")
            yield grid.Job(
                bench="copy",
                id=f"{grid.id_prefix('copy', sw['label'])}-s{src}-d{dst}-c{cpu_node}-t{threads}-{format_size(size)}-rep{rep}",
                kernel=KERNEL,
                grid={"label": sw["label"] or "", "repetition": rep},
                kernel_args=tuple(
                    [
                        f"--src={src}",
                        f"--dst={dst}",
                        f"--cpu-node={cpu_node}",
                        f"--size={format_size(size)}",
                        f"--ntimes={sw['ntimes']}",
                    ]
                    + list(sw["extra_args"])
                ),
                threads=threads,
                cpus=cpus,
                memory="local",
            )


def check(topo: Any, section: dict) -> list[str]:
    """The copy's buffer fits the memory of each node it is placed on."""
    for where, sw in checks.sweeps(section, "copy"):
        size = checks.one_size(sw["size"])
        pairs = topo.node_ids() if sw["pairs"] == "all" else sorted({n for p in sw["pairs"] for n in p})
        if size is not None:
            for n in pairs:
                checks.fit(topo, f"{where}.size", size, f"node:{n}", [n])
    return []


# ---------------------------------------------------------------- figures and tables

def plot_copy_matrix(copy: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
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
        fig.suptitle(f"Copy bandwidth, {count_words(rows['threads'].max(), 'thread')}, "
                     f"{format_size(int(rows['bytes'].max()))}" + ("" if variant == "all" else f", {variant}"))
        paths += save(fig, figdir, "copy", "copy_matrix", variant)
    return paths


def plot_copy_vs_threads(copy: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    """Per configuration measured at two thread counts or more, each node pair's copy bandwidth
    (median over runs, largest size) against threads, a line per pair and node of the threads,
    with its runs' range (slowest to fastest repetition) as a band."""
    paths: list[Path] = []
    for variant, config in series.configurations(copy, "copy", without=("threads", "bytes")):
        if config["threads"].nunique() < 2:
            continue
        rows = config[config["bytes"] == config["bytes"].max()]
        table = rows.groupby(["cpu_node", "src_node", "dst_node", "threads"])["best_gb_s"].agg(
            ["median", "min", "max"]).reset_index()
        lines = list(table.groupby(["cpu_node", "src_node", "dst_node"], sort=True))
        fig, (ax,) = new_figure()
        for colour, ((cpu, src, dst), line) in zip(line_colours(len(lines)), lines):
            raw = rows[(rows["cpu_node"] == cpu) & (rows["src_node"] == src) & (rows["dst_node"] == dst)]
            ax.plot(line["threads"], line["median"], marker="o", markersize=3, color=colour,
                    label=marked(f"node {src} to node {dst}, threads on node {cpu}", raw))
            ax.fill_between(line["threads"], line["min"], line["max"], color=colour, alpha=0.15, linewidth=0)
        ax.set_xlabel("threads")
        count_axis(ax.xaxis)
        ax.set_ylabel("copy bandwidth (GB/s, each byte copied counted once)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set_title(titled(f"Copy bandwidth vs threads, {size_words(int(rows['bytes'].max()))}", variant))
        ax.legend(fontsize=7, loc="lower right")
        paths += save(fig, figdir, "copy", "copy_vs_threads", variant)
    return paths


def copy_raw_tables(copy: pd.DataFrame, topology: Topology | None = None, findings: list[dict] = ()) -> list[dict]:
    """Its raw tables, all it writes in the report (`Presentation.report`)."""
    out = []
    for variant, config in series.configurations(copy, "copy", without=("threads", "bytes")):
        other = "" if variant == "all" else f", {variant}"
        for (node, threads, nbytes), part in config.groupby(["cpu_node", "threads", "bytes"], sort=True):
            wide = part.pivot_table(index="src_node", columns="dst_node", values="best_gb_s", aggfunc="median")
            rows = [[int(s)] + [float(v) for v in row] for s, row in wide.iterrows()]
            out.append({
                "title": f"Copy bandwidth (GB/s; the median over runs), threads on node {node}, {count_words(threads, 'thread')}, "
                         f"{size_words(int(nbytes))}{other}",
                "table": md_table(["source \\ destination"] + [str(c) for c in wide.columns], rows),
            })
    return out


# ---------------------------------------------------------------- findings

def copy_matrix(copy: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """Per copy configuration: fastest and slowest cells, and cross-node over within-node copies
    (geometric means over cells, one log ratio per repetition)."""
    need = {"src_node", "dst_node", "best_gb_s"}
    if copy is None or copy.empty or not need <= set(copy.columns):
        return []
    stats.check_values(copy, "copy.csv", COPY)
    df = series.normalise(copy, "copy")
    df[series.REPETITION] = as_text(df[series.REPETITION]) if series.REPETITION in df else ""
    df["_log"] = np.log(pd.to_numeric(df["best_gb_s"], errors="coerce"))
    df["_se"] = stats.run_standard_error(df, COPY)
    cell = [c for c in ("src_node", "dst_node", "cpu_node") if c in df]
    config = [c for c in series.series_columns(df, "copy") if c not in cell]
    varying = [c for c in config if df[c].astype(str).nunique() > 1]
    fits = []
    for key, g in (df.groupby(config) if config else [((), df)]):
        cells = g.groupby(cell)["best_gb_s"].median()
        if len(cells) < 2:
            continue
        inside_cells = (g["src_node"] == g["dst_node"]).to_numpy()
        d, se_d = [], []
        for _, r in g.groupby(series.REPETITION):
            inside = r[r["src_node"] == r["dst_node"]].groupby(cell)[["_log", "_se"]].median()
            across = r[r["src_node"] != r["dst_node"]].groupby(cell)[["_log", "_se"]].median()
            if inside.empty or across.empty:
                continue
            d.append(across["_log"].mean() - inside["_log"].mean())
            se_d.append(math.hypot(math.sqrt((across["_se"] ** 2).sum()) / len(across),
                                   math.sqrt((inside["_se"] ** 2).sum()) / len(inside)))
        ratio = p = None
        if inside_cells.any() and (~inside_cells).any() and d:
            ratio, se, dof = stats.unit_interval(np.array(d), np.array(se_d), "ratio")
            p = stats.excess_pvalue(math.log(ratio.estimate), se, dof, contrasts.MIN_EFFECT)
        fits.append((key, g, cells, ratio, p))
    flags = stats.benjamini_hochberg([f[-1] if f[-1] is not None else math.nan for f in fits])
    findings = []
    for (key, g, cells, ratio, p), claim in zip(fits, flags):
        fast, slow = cells.idxmax(), cells.idxmin()
        name = ", ".join(f"{c} {g.iloc[0][c]}" for c in varying)
        local = cells[[i[0] == i[1] for i in cells.index]]
        cross = cells[[i[0] != i[1] for i in cells.index]]
        ratio_text = ""
        if ratio is not None:
            verdict = ("beyond the noise and the {f} floor" if claim else
                       "noise unknown: nothing claimed" if not np.isfinite(ratio.low) else
                       "inside the {f} margin: equivalent" if np.isfinite(ratio.low) and 1 / (1 + contrasts.MIN_EFFECT)
                       <= ratio.low and ratio.high <= 1 + contrasts.MIN_EFFECT else
                       "not beyond the noise and the {f} floor: indistinguishable").format(f=f"{contrasts.MIN_EFFECT * 100:.0f}%")
            ratio_text = (f"; copies across nodes reach {ratio.text('{:.2f}x')} the bandwidth of copies within a node "
                          f"(geometric means over cells, {verdict}; within a node {local.median():.1f} GB/s, across "
                          f"nodes {cross.median():.1f} GB/s, medians)")

        def where(i: tuple) -> str:
            return f"from node {i[0]} to node {i[1]}" + (f" (threads on node {i[2]})" if len(i) > 2 and i[2] >= 0
                                                         else "")
        findings.append(Finding(
            id="copy_matrix", bench="copy", title="Copy bandwidth between nodes" + in_parens(name),
            summary=(f"Copies{' (' + name + ')' if name else ''} are fastest {where(fast)} ({cells[fast]:.1f} GB/s) "
                     f"and slowest {where(slow)} ({cells[slow]:.1f} GB/s){ratio_text}."),
            numbers={"claim": bool(claim), "config": name,
                     "fastest": {"src_node": fast[0], "dst_node": fast[1], "gb_s": cells[fast]},
                     "slowest": {"src_node": slow[0], "dst_node": slow[1], "gb_s": cells[slow]},
                     **interval_numbers("cross_to_local", ratio), "p_value": p, "floor": contrasts.MIN_EFFECT,
                     "local_median_gb_s": local.median() if len(local) else None,
                     "cross_median_gb_s": cross.median() if len(cross) else None},
            evidence=[{**dict(zip(cell, i)), "gb_s": v} for i, v in cells.items()],
        ))
    return findings


def headline(copy: pd.DataFrame, topology: Topology | None) -> list[list[str]]:
    """Best copy bandwidth per source and destination node and thread count (GB/s, 10^9 bytes/s).
    numa_copy counts each byte copied once, where STREAM's copy counts it read and written: the
    row says so, with the number as STREAM would count it beside."""
    rows = []
    keys = [c for c in ("src_node", "dst_node") if c in copy]
    for key, part in (copy.groupby(keys) if keys else [((), copy)]):
        named = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        for threads, (iv, runs) in _thread_values(part).items():
            value, interval = interval_cells(iv, "GB/s", count_words(runs, "run"))
            rows.append([f"node-to-node copy, node {named.get('src_node')} to node {named.get('dst_node')}, "
                         f"{count_words(threads, 'thread')}, {COUNTED_ONCE}",
                         f"{value} ({fmt_value(2 * iv.estimate, 1)} GB/s as STREAM counts a copy)", interval])
    return rows


def _thread_values(rows: pd.DataFrame) -> dict[int, tuple[stats.Interval, int]]:
    """Thread count -> (value with the model's interval, repetitions) of one node pair's copies
    taken as a series over thread counts: the median over repetitions (the raw tables' value),
    its noise pooled over a band of thread counts."""
    runs = rows.assign(threads=pd.to_numeric(rows["threads"]) if "threads" in rows else 1,
                       **{series.REPETITION: rows[series.REPETITION].astype(str) if series.REPETITION in rows else "0"})
    (s,) = stats.series_table(runs, [], (series.REPETITION,), dataclasses.replace(COPY, axis="threads"))
    return {int(t): (s.at(j), int(s.k[j])) for j, t in enumerate(s.sizes)}


COUNTED_ONCE = "each byte copied counted once"


BENCH = register(Bench(
    name="copy",
    title="Node-to-node copy",
    launch=Launch(
        kernels=(KERNEL,),
        by="threads",
        expand=expand,
        check=check,
    ),
    tables=Tables(
        required=("src_node", "dst_node", "bytes", "best_gb_s"),
        positive=("bytes", "best_gb_s"),
        axis=None,
        series=SERIES,
        within=WITHIN,
        numeric=("src_node", "dst_node", "bytes"),
        sizes=("bytes",),
        words={"src_node": "source node", "dst_node": "destination node"},
        placement=(("src_page_fractions", "src_node", "job_id", "copy sources"),
                   ("dst_page_fractions", "dst_node", "job_id", "copy destinations")),
    ),
    analyse=lambda table, topo: [functools.partial(copy_matrix, table, topo)],
    presentation=Presentation(
        category="Node-to-node copy",
        variant="threads on",
        figures=(
            Figure("copy_matrix", "Copy bandwidth from a source node (rows) to a destination node (columns), "
                   "one panel per node running the copying threads.",
                   draw=plot_copy_matrix),
            Figure("copy_vs_threads", "Copy bandwidth of each node pair against the number of copying threads "
                   "(the median over runs), each byte copied counted once; the band spans the runs.",
                   draw=plot_copy_vs_threads),
        ),
        report=copy_raw_tables,
        subjects={"Bandwidth": (("copy_matrix",), ("copy_matrix", "copy_vs_threads"))},
        headline=headline,
    ),
    checks=Checks(
        on_cpu=ON_CPU_MEASURES,
        metrics={"best_gb_s": True},
        not_checked="numa_copy records no within-run spread or timer columns to check",
        spread=Spread("best_gb_s", "avg_gb_s", "best_gb_s", common.RATE_SPREAD_PCT),
        claims={"copy_matrix": Claim("cross_to_local", states=("cross_to_local",))},
    ),
))
