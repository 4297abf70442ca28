"""Core-to-core latency (`numa_c2c`): the round trip of a cache line between two CPUs, for every
pair of a CPU set, as Intel MLC's --c2c_latency does.

Pairs are classed by the topology the kernel found them on (same L3 group, other L3 group of the
same node, other node); each class's median round trip and the ratio of each outer class to the L3
class come with a percentile bootstrap over pairs (pairs are the units); whether every pair inside
an L3 group is faster than every pair outside it (the heatmap shows the topology's groups) is said
with the counts.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from numasweep.benches import common
from numasweep.core.errors import NumasweepError
from numasweep.core.registry import ON_CPU_MEASURES, Bench, Checks, Claim, Figure, Launch, Presentation, Spread, Tables, register
from numasweep.core.topology import Topology
from numasweep.core.units import format_cpulist, parse_cpulist
from numasweep.findings.analysis import Finding
from numasweep.planning import grid
from numasweep.reporting.figures import heatmap, new_figure, save
from numasweep.reporting.markdown import md_table
from numasweep.results.tables import as_text as _text
from numasweep.statistics import fits

KERNEL = "numa_c2c"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
SERIES = ("cpu_set", "cpu_a", "cpu_b", "node_a", "node_b", "l3_group_a", "l3_group_b", "policy",
                      "mem_nodes")
WITHIN = ("host", "cpu_a", "cpu_b")


# ---------------------------------------------------------------- grid

def c2c_cpus(topo: Any, choice: str, where: str) -> list[int]:
    """`all` free cores, `per_l3` the first free core of each L3 group, or a CPU list."""
    free = common.free_cpus(topo, topo.node_ids())
    if choice == "all":
        return free
    if choice == "per_l3":
        picked = [next((c for c in group if c in free), None) for group in topo.l3_groups]
        if not topo.l3_groups or None in picked:
            raise NumasweepError(f"{where}: per_l3 needs every L3 group of the topology to have a free core")
        return sorted(picked)

    try:
        cpus = parse_cpulist(choice)
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None
    missing = sorted(set(cpus) - set(topo.all_cpus()))
    if missing:
        raise NumasweepError(f"{where}: CPU(s) {format_cpulist(missing)} are not in the topology '{topo.system}' "
                             f"(CPUs {format_cpulist(sorted(topo.all_cpus()))}); pick CPUs it has")
    return cpus


def expand(topo: Any, section: dict) -> Iterator[grid.Job]:
    sweeps = section["sweeps"]
    for i, sw in enumerate(sweeps):
        where = f"c2c.sweeps[{i}]"
        grid.check_nodes(topo, sw["line_nodes"], f"{where}.line_nodes")
        # a YAML list of CPUs is the CPU list written with commas
        choice = ",".join(map(str, sw["cpus"])) if isinstance(sw["cpus"], list) else str(sw["cpus"])
        cpus = c2c_cpus(topo, choice, f"{where}.cpus")
        if len(cpus) < 2:
            raise NumasweepError(f"{where}.cpus: {len(cpus)} CPU gives no pair; give at least two CPUs")
        for line_node, rep in itertools.product(sw["line_nodes"], range(sw["repetitions"])):
            yield grid.Job(
                bench="c2c",
                id=f"{grid.id_prefix('c2c', sw['label'])}-{choice}-line{line_node}-rep{rep}".replace(",", "."),
                kernel=KERNEL,
                grid={"label": sw["label"] or "", "memory": f"node:{line_node}", "cpu_set": choice,
                      "repetition": rep},
                kernel_args=tuple([f"--cpus={format_cpulist(cpus)}", f"--pairs={sw['pairs']}",
                                   f"--round-trips={sw['round_trips']}", "--policy=bind", f"--mem-nodes={line_node}"]
                                  + list(sw["extra_args"])),
                threads=len(cpus),
                cpus=tuple(cpus),
            )


# ---------------------------------------------------------------- findings

CLASSES = ("same L3 group", "other L3 group, same node", "other node")


def pair_class(row: pd.Series) -> str:
    if row["node_a"] != row["node_b"]:
        return CLASSES[2]
    return CLASSES[0] if row["l3_group_a"] == row["l3_group_b"] else CLASSES[1]


def _pairs(n: int) -> str:
    return f"{n} pair" + ("" if n == 1 else "s")


def core_to_core(table: pd.DataFrame | None) -> list[Finding]:
    if table is None or table.empty or "round_trip_ns_median" not in table:
        return []
    df = table[(pd.to_numeric(table["cpu_a"], errors="coerce") >= 0)
               & (pd.to_numeric(table["cpu_b"], errors="coerce") >= 0)].copy()
    if df.empty:
        return []
    df["class"] = df.apply(pair_class, axis=1)
    keys = [c for c in ("system", "host", "label", "mem_nodes") if c in df]
    for col in keys:
        df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    findings = []
    for key, g in (df.groupby(keys) if keys else [((), df)]):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        values = {c: common.numbers(g[g["class"] == c], "round_trip_ns_median") for c in CLASSES}
        present = [c for c in CLASSES if len(values[c])]
        if not present:
            continue
        base = present[0]
        parts = [f"{base}: {np.median(values[base]):.0f} ns ({_pairs(len(values[base]))})"]
        numbers: dict[str, Any] = {c: {"median_ns": float(np.median(values[c])), "pairs": len(values[c])}
                                   for c in present}
        for c in present[1:]:
            ratio = fits.bootstrap([values[c], values[base]], lambda a, b: np.median(a) / np.median(b), "pairs")
            numbers[c]["ratio_to_" + base.replace(" ", "_")] = {"estimate": ratio.estimate, "low": ratio.low,
                                                               "high": ratio.high}
            parts.append(f"{c}: {np.median(values[c]):.0f} ns ({_pairs(len(values[c]))}), "
                         f"{ratio.text('{:.2f}x')} the {base} round trip")
        summary = "Round trips of a cache line between two CPUs, median per pair class: " + "; ".join(parts) + "."
        if len(present) > 1:
            inside, outside = values[base], np.concatenate([values[c] for c in present[1:]])
            apart = int(np.sum(inside[:, None] < outside[None, :]))
            numbers["pairs_ordered"] = {"faster": apart, "of": int(inside.size * outside.size)}
            summary += (f" {apart} of {inside.size * outside.size} (inside, outside) pair comparisons put the "
                        f"{base} pair faster" + (": the heatmap shows the topology's groups." if
                                                  apart == inside.size * outside.size else "."))
        findings.append(Finding(
            id="core_to_core", bench="c2c", title="Core-to-core latency by pair class", summary=summary,
            numbers={**row, **numbers},
            evidence=[{"cpu_a": int(r.cpu_a), "cpu_b": int(r.cpu_b), "class": r["class"],
                       "round_trip_ns": float(r.round_trip_ns_median)} for _, r in g.iterrows()],
        ))
    return findings


# ---------------------------------------------------------------- figures and tables

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


def plot_c2c(table: pd.DataFrame | None, topology: Topology | None, figdir: Path) -> list[Path]:
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
        heatmap(ax, matrix, "round trip (ns)", ".0f", "CPU", "CPU", diagonal="same CPU")
        for k in range(1, len(cpus)):
            if cpus[k][1] != cpus[k - 1][1] or cpus[k][2] != cpus[k - 1][2]:
                width = 2.0 if cpus[k][1] != cpus[k - 1][1] else 0.6
                ax.axhline(k - 0.5, color="black", linewidth=width)
                ax.axvline(k - 0.5, color="black", linewidth=width)
        ax.set_title(f"Core-to-core round trip, line on node {home or 'of the first CPU'}")
        paths += save(fig, figdir, "c2c", "c2c_heatmap", f"line-{home or 'first-touch'}")
    return paths


def c2c_tables(table: pd.DataFrame, topology: Topology | None = None, findings: list[dict] = ()) -> list[dict]:
    """Its raw tables, all it writes in the report (`Presentation.report`)."""

    df = table[(pd.to_numeric(table["cpu_a"]) >= 0) & (pd.to_numeric(table["cpu_b"]) >= 0)]
    df = df.assign(pair_class=df.apply(pair_class, axis=1))
    by_nodes = df.pivot_table(index="node_a", columns="node_b", values="round_trip_ns_median", aggfunc="median")
    classes = df.groupby("pair_class")["round_trip_ns_median"].agg(["count", "median", "min", "max"])
    return [
        {"title": "Round trip (ns) by pair class",
         "table": md_table(["pair class", "pairs", "median", "min", "max"],
                      [[c, int(r["count"]), float(r["median"]), float(r["min"]), float(r["max"])]
                       for c, r in classes.iterrows()])},
        {"title": "Median round trip (ns) by the nodes of the two CPUs",
         "table": md_table(["node"] + [str(c) for c in by_nodes.columns],
                      [[int(n)] + [float(v) for v in row] for n, row in by_nodes.iterrows()])},
    ]


BENCH = register(Bench(
    name="c2c",
    title="Core-to-core latency",
    launch=Launch(
        kernels=(KERNEL,),
        by="threads",
        expand=expand,
    ),
    tables=Tables(
        required=("cpu_a", "cpu_b", "round_trip_ns_median"),
        positive=("round_trip_ns_median",),
        axis=None,
        series=SERIES,
        within=WITHIN,
    ),
    analyse=lambda table, topo: [functools.partial(core_to_core, table)],
    presentation=Presentation(
        category="Core-to-core latency",
        variant="line home",
        figures=(
            Figure("c2c_heatmap", "Median round trip of a cache line between two CPUs, CPUs ordered by NUMA node "
                   "and L3 group; lines mark the L3 groups (thin) and nodes (thick) the kernel found the CPUs on.",
                   draw=plot_c2c),
        ),
        report=c2c_tables,
        subjects={"DRAM and NUMA locality": (("core_to_core",), ("c2c_heatmap",))},
    ),
    checks=Checks(
        on_cpu=ON_CPU_MEASURES,
        metrics={"round_trip_ns_median": False},
        not_checked="numa_c2c records no within-run spread, timer or first-touch columns beyond each pair's sample range, which its heatmap and tables show",
        spread=Spread("round_trip_ns_max", "round_trip_ns_min", "round_trip_ns_median", common.TIME_SPREAD_PCT),
        claims={"core_to_core": Claim(nothing="a median round trip per pair class, each class's ratio to the "
                                              "nearest with its interval in numbers by class")},
    ),
))
