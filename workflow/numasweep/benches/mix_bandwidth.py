"""Peak and mixed bandwidth (`numa_mix_bandwidth`): threads on chosen CPUs streaming reads and
writes in a given ratio, and with --matrix the bandwidth of every CPU node to every memory node,
as Intel MLC's --peak_injection_bandwidth and --bandwidth_matrix do.

The finding (--matrix): per traffic kind, local cells (CPU node = memory node) against remote
cells, a ratio of medians with a percentile bootstrap over cells.
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
from numasweep.core.units import format_size
from numasweep.core.registry import ON_CPU_MEASURES, Bench, Checks, Claim, Figure, Launch, Presentation, Spread, Tables, register
from numasweep.core.topology import Topology
from numasweep.findings.analysis import Finding
from numasweep.planning import checks, grid
from numasweep.reporting.figures import heatmap, new_figure, save
from numasweep.reporting.markdown import md_table
from numasweep.statistics import fits

KERNEL = "numa_mix_bandwidth"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
SERIES = ("memory_spec", "traffic", "threads", "cpus", "cpu_nodes", "strategy", "mem_nodes", "weights",
                                "page_size", "size_bytes")
WITHIN = ("host", "traffic", "cpu_nodes", "mem_nodes")


# ---------------------------------------------------------------- grid

def expand(topo: Any, section: dict) -> Iterator[grid.Job]:
    sweeps = section["sweeps"]
    for i, sw in enumerate(sweeps):
        where = f"mix_bandwidth.sweeps[{i}]"
        size = [] if sw["size"] is None else [f"--size={common.size_word(sw['size'], where + '.size')}"]
        memories = ["matrix"] if sw["matrix"] else sw["memory"]
        for k, nodes in enumerate(sw["cpu_nodes"]):
            grid.check_nodes(topo, nodes, f"{where}.cpu_nodes[{k}]")
        for nodes, threads, memory, rep in itertools.product(
            sw["cpu_nodes"], sw["threads"], memories, range(sw["repetitions"])
        ):
            pool = common.free_cpus(topo, list(nodes))
            need = threads * (len(nodes) if sw["matrix"] else 1)
            if need > len(pool):
                raise NumasweepError(f"{where}.threads: {threads} threads asked on node(s) "
                                     f"{','.join(map(str, nodes))}, which have {len(pool)} free cores; lower threads")
            mem = ["--matrix"] if memory == "matrix" else common.memory_args(topo, memory, f"{where}.memory")
            yield grid.Job(
                bench="mix_bandwidth",
                id=(f"{grid.id_prefix('mix', sw['label'])}-c{grid.nodes_word(nodes)}-t{threads}-"
                    f"{grid.memory_word(memory)}-rep{rep}"),
                kernel=KERNEL,
                # the kernel writes its own `memory` column (local, bind, ...): the spec goes apart
                grid={"label": sw["label"] or "", "memory_spec": memory, "repetition": rep},
                kernel_args=tuple([f"--cpu-nodes={','.join(map(str, nodes))}", f"--strategy={sw['strategy']}",
                                   f"--threads={threads}", f"--traffic={','.join(sw['traffic'])}"] + size + mem
                                  + list(sw["extra_args"])),
                threads=len(pool),
                cpus=tuple(pool),
            )


MIN_SIZE = 16 << 10  # numa_mix_bandwidth refuses less per thread


def check(topo: Any, section: dict) -> list[str]:
    """A buffer below the kernel's 16K refused; warnings: a buffer under 4x the last-level cache of its CPUs (the bandwidth is
    then partly the cache's); `memory` given with `matrix: true`, which measures every memory
    node and ignores it."""
    warnings = []
    for where, sw in checks.sweeps(section, "mix_bandwidth"):
        if sw["matrix"] and list(sw["memory"]) != ["local"]:
            warnings.append(f"{where}.memory: {', '.join(sw['memory'])} is ignored with matrix: true, which "
                            "measures every CPU node against every memory node; drop memory, or set matrix: false")
        size = None if sw["size"] is None else checks.one_size(sw["size"])
        if size is None:
            continue
        if size < MIN_SIZE:
            raise NumasweepError(f"{where}.size: {format_size(size)} is below the kernel's {format_size(MIN_SIZE)} "
                                 "per thread; use at least 16K, or leave size unset for the kernel's default")
        nodes = sorted({node for node_set in sw["cpu_nodes"] for node in node_set})
        warnings += [w for w in (checks.under_cache(topo, where, size, node, "size") for node in nodes) if w][:1]
    return warnings


# ---------------------------------------------------------------- findings

def bandwidth_matrix(table: pd.DataFrame | None) -> list[Finding]:
    if table is None or table.empty or "gb_s_median" not in table:
        return []
    df = table.assign(cpu_nodes=common.node_set(table["cpu_nodes"]), mem_nodes=common.node_set(table["mem_nodes"]))
    cells = df[~df["cpu_nodes"].str.contains(",") & ~df["mem_nodes"].str.contains(",") & (df["mem_nodes"] != "")]
    keys = [c for c in ("system", "host", "label", "traffic", "threads", "size_bytes") if c in cells]
    findings = []
    for key, g in (cells.groupby(keys) if keys else [((), cells)]):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        local = common.numbers(g[g["cpu_nodes"] == g["mem_nodes"]], "gb_s_median")
        remote = common.numbers(g[g["cpu_nodes"] != g["mem_nodes"]], "gb_s_median")
        if not len(local) or not len(remote):
            continue
        ratio = fits.bootstrap([remote, local], lambda a, b: np.median(a) / np.median(b), "cells")
        best = g.loc[pd.to_numeric(g["gb_s_median"], errors="coerce").idxmax()]
        worst = g.loc[pd.to_numeric(g["gb_s_median"], errors="coerce").idxmin()]
        findings.append(Finding(
            id="bandwidth_matrix", bench="mix_bandwidth",
            title=f"CPU node x memory node bandwidth, {row.get('traffic', '')} traffic",
            summary=(f"Remote memory gives {ratio.text('{:.2f}x')} the bandwidth of local memory "
                     f"(medians {np.median(remote):.1f} vs {np.median(local):.1f} GB/s over {len(remote)} remote and "
                     f"{len(local)} local cells); the best cell is CPU node {best['cpu_nodes']} to memory node "
                     f"{best['mem_nodes']} ({float(best['gb_s_median']):.1f} GB/s), the worst CPU node "
                     f"{worst['cpu_nodes']} to memory node {worst['mem_nodes']} ({float(worst['gb_s_median']):.1f} GB/s)."),
            numbers={**row, "remote_to_local": {"estimate": ratio.estimate, "low": ratio.low, "high": ratio.high},
                     "local_median_gb_s": float(np.median(local)), "remote_median_gb_s": float(np.median(remote))},
            evidence=[{"cpu_node": r["cpu_nodes"], "mem_node": r["mem_nodes"], "gb_s": float(r["gb_s_median"])}
                      for _, r in g.iterrows()],
        ))
    return findings


# ---------------------------------------------------------------- figures and tables

def plot_mix_matrix(table: pd.DataFrame | None, topology: Topology | None, figdir: Path) -> list[Path]:
    if table is None or table.empty or "gb_s_median" not in table:
        return []

    df = table.assign(cpu_nodes=common.node_set(table["cpu_nodes"]), mem_nodes=common.node_set(table["mem_nodes"]))
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


def mix_bandwidth_tables(table: pd.DataFrame, topology: Topology | None = None, findings: list[dict] = ()) -> list[dict]:
    """Its raw tables, all it writes in the report (`Presentation.report`)."""

    df = table.assign(cpu_nodes=common.node_set(table["cpu_nodes"]), mem_nodes=common.node_set(table["mem_nodes"]))
    med = df.groupby(["traffic", "threads", "cpu_nodes", "memory", "mem_nodes"], sort=False)["gb_s_median"].median()
    rows = [[t, int(n), c, m, mn, float(v)] for (t, n, c, m, mn), v in med.items()]
    return [{"title": "Bandwidth (GB/s) by traffic kind and placement",
             "table": md_table(["traffic", "threads", "CPU nodes", "memory", "memory nodes", "GB/s"], rows)}]


BENCH = register(Bench(
    name="mix_bandwidth",
    title="Peak and mixed bandwidth",
    launch=Launch(
        kernels=(KERNEL,),
        by="threads",
        expand=expand,
        check=check,
    ),
    tables=Tables(
        required=("traffic", "threads", "gb_s_median"),
        positive=("threads", "gb_s_median"),
        axis=None,
        series=SERIES,
        within=WITHIN,
        numeric=("size_bytes",),
        sizes=("size_bytes",),
    ),
    analyse=lambda table, topo: [functools.partial(bandwidth_matrix, table)],
    presentation=Presentation(
        category="Peak and mixed bandwidth",
        variant="panels",
        figures=(
            Figure("mix_bandwidth_matrix", "Bandwidth of threads on a CPU node (rows) to memory on a node "
                   "(columns), one panel per traffic kind.",
                   draw=plot_mix_matrix),
        ),
        report=mix_bandwidth_tables,
        subjects={"Bandwidth": (("bandwidth_matrix",), ("mix_bandwidth_matrix",))},
    ),
    checks=Checks(
        on_cpu=ON_CPU_MEASURES,
        metrics={"gb_s_median": True},
        not_checked="numa_mix_bandwidth records no timer or first-touch columns; each cell's sample range is in its raw tables",
        spread=Spread("gb_s_max", "gb_s_min", "gb_s_median", common.RATE_SPREAD_PCT),
        claims={"bandwidth_matrix": Claim(states=("remote_to_local", "local_median_gb_s", "remote_median_gb_s"))},
    ),
))
