"""Loaded latency (`numa_loaded_latency`): a pointer chase on one CPU while load threads on other
CPUs drive memory traffic of a chosen kind at swept intensities (`delay`), as Intel MLC's
--loaded_latency does, on any CPU.

The finding per series (chase node and CPU, memory node, traffic kind, load threads, buffers, page
size, ...: every series column; those that vary besides the named ones are said in the title) is
the latency-against-achieved-bandwidth curve; its *knee* is the breakpoint of a hinge fit (latency
= a + b x + c max(0, x - knee), x the load's GB/s, the knee at the point that minimises the squared
error with c > 0), with a percentile bootstrap over the curve's points, looked for only where the
rise below is significant and placed only where the curve bends there (latency rising at least
twice as steeply above it as below it: a hinge fit finds a breakpoint in a straight curve too); the rise from idle to the heaviest load is a ratio with a t interval
from each point's within-run spread (`stats.run_standard_error`).
"""

from __future__ import annotations

import functools
import itertools
import math
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from numasweep.benches import common
from numasweep.core.errors import NumasweepError
from numasweep.core.registry import ON_CPU_MEASURES, Bench, Checks, Claim, Figure, Launch, Presentation, Tables, register
from numasweep.core.topology import Topology
from numasweep.findings.analysis import Finding
from numasweep.planning import checks, grid
from numasweep.reporting.figures import line_colours, marked, new_figure, save
from numasweep.reporting.markdown import md_table
from numasweep.results import series
from numasweep.results.tables import as_text as _text
from numasweep.statistics import fits, stats

KERNEL = "numa_loaded_latency"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
SERIES = ("chase_cpu", "chase_node", "load_nodes", "load_threads", "load_cpus", "strategy",
                                 "traffic", "policy", "mem_nodes", "page_size", "size_bytes", "load_bytes")
WITHIN = ("host", "traffic")


# ---------------------------------------------------------------- grid

def expand(topo: Any, section: dict) -> Iterator[grid.Job]:
    sweeps = section["sweeps"]
    for i, sw in enumerate(sweeps):
        where = f"loaded_latency.sweeps[{i}]"
        for key in ("chase_nodes", "memory_nodes"):
            grid.check_nodes(topo, sw[key], f"{where}.{key}")
        for k, nodes in enumerate(sw["load_nodes"]):
            grid.check_nodes(topo, nodes, f"{where}.load_nodes[{k}]")
        size = common.size_word(sw["size"], f"{where}.size")
        delays = ",".join(str(d) for d in sw["delays"])
        for chase_node, mem_node, load_nodes, threads, rep in itertools.product(
            sw["chase_nodes"], sw["memory_nodes"], sw["load_nodes"], sw["load_threads"], range(sw["repetitions"])
        ):
            free = list(topo.free_cores(chase_node))
            if not free:
                raise NumasweepError(f"{where}.chase_nodes: node {chase_node} has no free core for the chase")
            chase = free[0]
            pool = [c for c in common.free_cpus(topo, list(load_nodes)) if c != chase]
            if threads > len(pool):
                raise NumasweepError(
                    f"{where}.load_threads: {threads} load threads asked on node(s) "
                    f"{','.join(map(str, load_nodes))}, which have {len(pool)} free cores besides the chase's; "
                    "lower load_threads or add load_nodes")
            cpus = tuple([chase] + pool)
            yield grid.Job(
                bench="loaded_latency",
                id=(f"{grid.id_prefix('ll', sw['label'])}-c{chase_node}-m{mem_node}-l{grid.nodes_word(load_nodes)}"
                    f"-t{threads}-{sw['strategy']}-rep{rep}"),
                kernel=KERNEL,
                grid={"label": sw["label"] or "", "memory": f"node:{mem_node}",
                      "load_nodes": grid.nodes_word(load_nodes), "repetition": rep},
                kernel_args=tuple([f"--size={size}", f"--chase-cpu={chase}", f"--strategy={sw['strategy']}",
                                   f"--load-threads={threads}", f"--traffic={','.join(sw['traffic'])}",
                                   f"--delay={delays}", "--policy=bind", f"--mem-nodes={mem_node}"]
                                  + list(sw["extra_args"])),
                threads=len(cpus),
                cpus=cpus,
            )


def check(topo: Any, section: dict) -> list[str]:
    """The chase buffer fits the memory node it is bound to (the kernel would otherwise fail
    only once on the node)."""
    for where, sw in checks.sweeps(section, "loaded_latency"):
        size = None if sw["size"] is None else checks.one_size(sw["size"])
        if size is None:
            continue
        for node in sw["memory_nodes"]:
            checks.fit(topo, f"{where}.size", size, f"node:{node}", sw["chase_nodes"])
    return []


# ---------------------------------------------------------------- findings

# A knee bends: latency rises at least this many times as steeply above it as below it.
BEND = 2.0


def _bends(x: np.ndarray, y: np.ndarray, knee: float) -> bool:
    """Whether the curve is flatter below `knee` than above it by BEND (least-squares slopes of the
    points on either side, each side holding the knee's point): a hinge fit finds a breakpoint in
    any curve, a straight one too."""
    below, above = x <= knee, x >= knee
    if below.sum() < 2 or above.sum() < 2:
        return False
    slope_below = float(np.polyfit(x[below], y[below], 1)[0])
    slope_above = float(np.polyfit(x[above], y[above], 1)[0])
    return slope_above > 0 and slope_above >= BEND * max(slope_below, 0.0)


def loaded_latency(table: pd.DataFrame | None) -> list[Finding]:
    if table is None or table.empty or "load_gb_s" not in table:
        return []
    df = table.copy()
    # one curve per series (`Bench.identity`): two chase buffers, load sizes, policies or CPUs are
    # never one curve; those of them that vary are named in the finding
    keys = series.series_columns(df, "loaded_latency")
    for col in keys:
        df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    named = ("host", "chase_node", "mem_nodes", "traffic", "strategy", "load_threads", "label")
    cpus = common.named_cpus(df)
    varying = [c for c in series.config_columns(df, "loaded_latency", without=named)
               if c not in common.PLACED_CPUS or c in cpus]
    findings = []
    for key, g in df.groupby(keys):
        row = dict(zip(keys, key))
        idle = g[pd.to_numeric(g["delay"], errors="coerce") < 0]
        loaded = g[pd.to_numeric(g["delay"], errors="coerce") >= 0]
        if idle.empty or len(loaded) < 1:
            continue
        heaviest = loaded.loc[pd.to_numeric(loaded["load_gb_s"], errors="coerce").idxmax()]
        pair = pd.DataFrame([idle.iloc[0], heaviest])
        se = stats.run_standard_error(pair, common.LATENCY)
        logs = np.log(common.numbers(pair, "latency_ns_median"))
        dof = max(1.0, float(np.nanmin(common.numbers(pair, "samples"))) - 1)
        rise = stats.t_interval(logs[1] - logs[0], float(np.hypot(*se)), dof,
                                method=f"t interval from the two points' within-run spread ({dof:.0f} df)")
        x = np.concatenate([[0.0], common.numbers(loaded, "load_gb_s")])
        y = np.concatenate([[float(idle.iloc[0]["latency_ns_median"])], common.numbers(loaded, "latency_ns_median")])
        memory = f"memory on node(s) {row['mem_nodes']}" if row.get("mem_nodes") else "memory by the default policy"
        load = f"{row['load_threads']} load threads" + (f" ({row['strategy']})" if row.get("strategy") else "") \
            if row.get("load_threads") else "load threads"
        where = (f"chase on node {row.get('chase_node', '?')}, {memory}, {load}, {row.get('traffic', '?')} traffic"
                 + (f", {row['label']}" if row.get("label") else "")
                 + "".join(f", {c} {row[c]}" for c in varying if row.get(c)))
        summary = (f"With {where}, latency goes from {y[0]:.0f} ns idle to {float(heaviest['latency_ns_median']):.0f} ns "
                   f"at {float(heaviest['load_gb_s']):.1f} GB/s of load: {rise.text('{:.2f}x')}.")
        numbers: dict[str, Any] = {"idle_ns": y[0], "peak_load_gb_s": float(heaviest["load_gb_s"]),
                                   "loaded_ns": float(heaviest["latency_ns_median"]),
                                   "rise": {"estimate": rise.estimate, "low": rise.low, "high": rise.high}}
        # A bend is looked for only where latency demonstrably rises under load.
        if len(x) >= 4 and rise.low > 1:
            points = np.column_stack([x, y])
            knee = fits.bootstrap([points], lambda p: fits.hinge_knee(p[:, 0], p[:, 1]), "curve points")
            if math.isfinite(knee.estimate) and _bends(x, y, knee.estimate):
                numbers["knee_gb_s"] = {"estimate": knee.estimate, "low": knee.low, "high": knee.high,
                                        "method": knee.method}
                summary += (f" The curve bends at {knee.text('{:.1f}')} GB/s, "
                            f"{knee.estimate / float(heaviest['load_gb_s']):.0%} of the highest load reached.")
            elif math.isfinite(knee.estimate):
                numbers["no_bend"] = True
                summary += (" Latency rises about as steeply below the best bend of a two-segment fit as above it: "
                            "no knee is placed.")
        if "chase_on_cpu_pct" in g and np.nanmin(common.numbers(g, "chase_on_cpu_pct")) < common.SHARED_CPU_PCT:
            share = float(np.nanmin(common.numbers(g, "chase_on_cpu_pct")))
            numbers["chase_on_cpu_pct_min"] = share
            summary += (f" The chase ran only {share:.0f}% of some samples on its CPU: the CPU was shared with other "
                        f"work, and those latencies are inflated.")
        findings.append(Finding(
            id="loaded_latency", bench="loaded_latency", title=f"Loaded latency: {where}", summary=summary,
            numbers={**row, **numbers},
            evidence=[{"load_gb_s": float(a), "latency_ns": float(b)} for a, b in sorted(zip(x, y))],
        ))
    return findings


# ---------------------------------------------------------------- figures and tables

def loaded_configurations(table: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(file variant, words, rows) per loaded-latency configuration: one figure and one table
    each, its lines the traffic kinds. Every series column but the traffic (and the host: a
    fleet's hosts are pooled per point, as before) tells configurations apart
    (`series.configurations`), so two load thread counts, page sizes or chase buffers never
    share a line."""


    # where the chase and the load ran and where their memory was name the figure (`cpu0-mem1`)
    place = [c for c in ("chase_node", "mem_nodes", *common.PLACED_CPUS) if c in table]
    df = table.assign(**{c: _text(table[c]) for c in place})
    cpus = common.named_cpus(df)
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


def plot_loaded_latency(table: pd.DataFrame | None, topology: Topology | None, figdir: Path) -> list[Path]:
    if table is None or table.empty or "load_gb_s" not in table:
        return []
    paths: list[Path] = []
    for name, words, part in loaded_configurations(table):
        fig, (ax,) = new_figure()
        lines = list(part.groupby("traffic", sort=False))
        for colour, (traffic, line) in zip(line_colours(len(lines)), lines):
            label = marked(str(traffic), line)
            line = line.assign(x=pd.to_numeric(line["load_gb_s"]), y=pd.to_numeric(line["latency_ns_median"]))
            line = line.groupby("x", as_index=False).agg(y=("y", "median"), lo=("latency_ns_min", "min"),
                                                         hi=("latency_ns_max", "max")).sort_values("x")
            ax.errorbar(line["x"], line["y"], yerr=[line["y"] - line["lo"], line["hi"] - line["y"]],
                        color=colour, marker="o",
                        markersize=3, capsize=2, label=label)
        ax.set_xlabel("load bandwidth achieved (GB/s)")
        ax.set_ylabel("chase latency (ns)")
        ax.set_title(f"Loaded latency: {words}")
        ax.legend(title="traffic", fontsize=8)
        paths += save(fig, figdir, "loaded_latency", "loaded_latency", name)
    return paths


def loaded_latency_tables(table: pd.DataFrame, topology: Topology | None = None, findings: list[dict] = ()) -> list[dict]:
    """Its raw tables, all it writes in the report (`Presentation.report`)."""
    tables = []
    for _, words, part in loaded_configurations(table):
        med = part.groupby(["traffic", "delay"], sort=False).agg(
            load=("load_gb_s", "median"), ns=("latency_ns_median", "median"), cpus=("load_cpus", "first")).reset_index()
        rows = [[r.traffic, "idle" if r.delay < 0 else int(r.delay), r.cpus, float(r.load), float(r.ns)]
                for r in med.itertuples()]
        tables.append({"title": words[0].upper() + words[1:],
                       "table": md_table(["traffic", "delay", "load CPUs", "load GB/s", "latency (ns)"], rows)})
    return tables


BENCH = register(Bench(
    name="loaded_latency",
    title="Loaded latency",
    launch=Launch(
        kernels=(KERNEL,),
        by="threads",
        expand=expand,
        check=check,
    ),
    tables=Tables(
        required=("traffic", "delay", "chase_cpu", "load_gb_s", "latency_ns_median"),
        positive=("size_bytes", "latency_ns_median"),
        axis="delay",
        series=SERIES,
        within=WITHIN,
        numeric=("size_bytes",),
        sizes=("size_bytes", "load_bytes"),
        words={"chase_node": "chase node"},
    ),
    analyse=lambda table, topo: [functools.partial(loaded_latency, table)],
    presentation=Presentation(
        category="Loaded latency",
        variant="chase and memory",
        figures=(
            Figure("loaded_latency", "Pointer-chase latency against the bandwidth the load threads achieved at "
                   "once, one line per traffic kind (reads to writes), the idle chase at zero load; bars span "
                   "each point's fastest and slowest sample.",
                   draw=plot_loaded_latency),
        ),
        report=loaded_latency_tables,
        subjects={"Contention and concurrency": (("loaded_latency",), ("loaded_latency",))},
    ),
    checks=Checks(
        on_cpu=ON_CPU_MEASURES,
        metrics={"latency_ns_median": False},
        not_checked="its within-run spread and the chase's time on CPU are read by its finding (a chase that shared its CPU is said there), not yet by the data-quality table",
        spread=common.LATENCY_SPREAD,
        claims={"loaded_latency": Claim(states=("rise", "peak_load_gb_s"))},
    ),
))
