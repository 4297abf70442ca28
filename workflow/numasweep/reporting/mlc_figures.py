"""Figures of the loaded-latency, core-to-core and mixed-bandwidth kernels, drawn with the
conventions of `figures` (files `<kind>--<variant>.png/.svg` under `<figdir>/<bench>/`, the
colour-blind-safe palette, nothing written when the data is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.results import series
from numasweep.reporting.figures import LINESTYLES, PALETTE, heatmap, new_figure, save
from numasweep.results.tables import as_text as _text


def loaded_configurations(table: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(file variant, words, rows) per loaded-latency configuration: one figure and one table
    each, its lines the traffic kinds. Every series column but the traffic (and the host: a
    fleet's hosts are pooled per point, as before) tells configurations apart
    (`series.configurations`), so two load thread counts, page sizes or chase buffers never
    share a line."""
    from numasweep.findings.mlc_analysis import PLACED_CPUS, named_cpus

    # where the chase and the load ran and where their memory was name the figure (`cpu0-mem1`)
    place = [c for c in ("chase_node", "mem_nodes", *PLACED_CPUS) if c in table]
    df = table.assign(**{c: _text(table[c]) for c in place})
    cpus = named_cpus(df)
    out = []
    for variant, part in series.configurations(df, "loaded_latency", without=tuple(place)):
        for key, rows in part.groupby(place, sort=True):
            where = dict(zip(place, key))
            name = f"cpu{where['chase_node']}-mem{where['mem_nodes'] or 'default'}"
            words = f"chase on node {where['chase_node']}, memory on node(s) {where['mem_nodes'] or 'default'}"
            if cpus:
                name += f"-chase{where.get('chase_cpu', '')}-load{where.get('load_cpus', '')}"
                words += f" (chase CPU {where.get('chase_cpu', '?')}, load CPUs {where.get('load_cpus', '?')})"
            if variant != "all":
                name, words = f"{name}-{variant}", f"{words}, {variant}"
            out.append((name, words, rows))
    return out


def plot_loaded_latency(table: pd.DataFrame | None, figdir: Path) -> list[Path]:
    if table is None or table.empty or "load_gb_s" not in table:
        return []
    paths: list[Path] = []
    for name, words, part in loaded_configurations(table):
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
        ax.set_title(f"Loaded latency: {words}")
        ax.legend(title="traffic", fontsize=8)
        paths += save(fig, figdir, "loaded_latency", "loaded_latency", name)
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
    from numasweep.findings.mlc_analysis import node_set

    df = table.assign(cpu_nodes=node_set(table["cpu_nodes"]), mem_nodes=node_set(table["mem_nodes"]))
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


# ---------------------------------------------------------------- raw tables of the report

def _md(header: list[str], rows: list[list[object]]) -> str:
    from numasweep.reporting.report import md_table  # report imports this module

    return md_table(header, rows)


def loaded_latency_tables(table: pd.DataFrame) -> list[dict]:
    tables = []
    for _, words, part in loaded_configurations(table):
        med = part.groupby(["traffic", "delay"], sort=False).agg(
            load=("load_gb_s", "median"), ns=("latency_ns_median", "median"), cpus=("load_cpus", "first")).reset_index()
        rows = [[r.traffic, "idle" if r.delay < 0 else int(r.delay), r.cpus, float(r.load), float(r.ns)]
                for r in med.itertuples()]
        tables.append({"title": words[0].upper() + words[1:],
                       "table": _md(["traffic", "delay", "load CPUs", "load GB/s", "latency (ns)"], rows)})
    return tables


def c2c_tables(table: pd.DataFrame) -> list[dict]:
    from numasweep.findings.mlc_analysis import pair_class

    df = table[(pd.to_numeric(table["cpu_a"]) >= 0) & (pd.to_numeric(table["cpu_b"]) >= 0)]
    df = df.assign(pair_class=df.apply(pair_class, axis=1))
    by_nodes = df.pivot_table(index="node_a", columns="node_b", values="round_trip_ns_median", aggfunc="median")
    classes = df.groupby("pair_class")["round_trip_ns_median"].agg(["count", "median", "min", "max"])
    return [
        {"title": "Round trip (ns) by pair class",
         "table": _md(["pair class", "pairs", "median", "min", "max"],
                      [[c, int(r["count"]), float(r["median"]), float(r["min"]), float(r["max"])]
                       for c, r in classes.iterrows()])},
        {"title": "Median round trip (ns) by the nodes of the two CPUs",
         "table": _md(["node"] + [str(c) for c in by_nodes.columns],
                      [[int(n)] + [float(v) for v in row] for n, row in by_nodes.iterrows()])},
    ]


def mix_bandwidth_tables(table: pd.DataFrame) -> list[dict]:
    from numasweep.findings.mlc_analysis import node_set

    df = table.assign(cpu_nodes=node_set(table["cpu_nodes"]), mem_nodes=node_set(table["mem_nodes"]))
    med = df.groupby(["traffic", "threads", "cpu_nodes", "memory", "mem_nodes"], sort=False)["gb_s_median"].median()
    rows = [[t, int(n), c, m, mn, float(v)] for (t, n, c, m, mn), v in med.items()]
    return [{"title": "Bandwidth (GB/s) by traffic kind and placement",
             "table": _md(["traffic", "threads", "CPU nodes", "memory", "memory nodes", "GB/s"], rows)}]


RAW_TABLES = {"loaded_latency": loaded_latency_tables, "c2c": c2c_tables, "mix_bandwidth": mix_bandwidth_tables}
DRAWERS = {"loaded_latency": plot_loaded_latency, "c2c": plot_c2c, "mix_bandwidth": plot_mix_matrix}
