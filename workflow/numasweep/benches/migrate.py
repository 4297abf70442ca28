"""Page migration between nodes (`numa_migrate`): the time and throughput of moving a buffer's
pages from one node to another and back, with move_pages(2) in batches, mbind(2) or
migrate_pages(2), 4 KiB or huge pages, every page verified on its target, and the kernel's
migration counters (/proc/vmstat) before and after each move.

The grid (one job per node pair, method, page size and, for move_pages, threads and batch; the
kernel's `--ntimes` are the repetitions), the plan-time checks (each size fits both nodes), why it
cannot run on a machine with fewer than two memory nodes, the figure (throughput against size, a
line per pair, direction and method), the raw tables (the moves, and the counter deltas), and the
findings, per node pair and method (the largest size measured):

- `migrate_pair`: how long the move takes and its throughput each way, a t interval over the
  repetitions (each a fresh buffer), and whether every page arrived;
- `migrate_asymmetry`: one direction's throughput over the other's, one log ratio per repetition
  (the mean over its sizes: sizes are not independent), a t interval over repetitions; claimed
  past the noise and the floor (`contrasts.MIN_EFFECT`), Benjamini-Hochberg over the pairs, and
  "alike" where the interval lies inside the floor's margin.

The moves sleep in the kernel (per-CPU list drains, TLB shootdowns, RCU grace periods), so the
kernel's `on_cpu_pct` is low by nature: its checks say so (`on_cpu`), and a job's quality
verdict leaves that column out.
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
from numasweep.core.errors import NumasweepError, Unavailable
from numasweep.core.registry import ON_CPU_WAITS, Bench, Checks, Claim, Figure, Launch, Presentation, Tables, register
from numasweep.core.topology import Topology
from numasweep.core.units import count_words, format_size, size_words
from numasweep.findings.analysis import Finding, in_parens, interval_numbers
from numasweep.planning import checks, grid
from numasweep.reporting.figures import anchor_value_axis, line_colours, marked, new_figure, save, size_axis, titled
from numasweep.reporting.markdown import fmt_value, md_table, measured
from numasweep.results import series
from numasweep.statistics import contrasts, stats

NAME, KERNEL = "migrate", "numa_migrate"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
SERIES = ("src", "dst", "direction", "method", "threads", "batch")
WITHIN = ("host", "src", "dst", "direction", "method")
AXIS = "size_bytes"
# The methods in words (titles and legends say words, not the calls' code names).
METHOD_WORDS = {"move_pages": "move pages", "mbind": "mbind", "migrate_pages": "migrate pages"}
# The counters every row has (-1 where the kernel lacks one); `vmstat_deltas` holds the rest.
COUNTERS = ("pgmigrate_success", "pgmigrate_fail", "numa_pages_migrated")
# The bytes of a page of each `pages` kind (numa_migrate's --pages: a transparent huge page is 2 MiB).
PAGE_BYTES = {"4k": 4 << 10, "thp": 2 << 20, "2m": 2 << 20, "1g": 1 << 30}
# A move's configuration: the rows of one finding share these, and its pair.
CONFIG = ("system", "host", "label", "memory", "pages", "method", "threads", "batch")


# ---------------------------------------------------------------- grid and checks

def _pairs(topo: Any, sw: dict) -> list[tuple[int, int]]:
    if sw["pairs"] == "all":
        nodes = _memory_nodes(topo)
        return [(a, b) for a in nodes for b in nodes if a < b]
    return [tuple(p) for p in sw["pairs"]]


def _memory_nodes(topo: Any) -> list[int]:
    return [n.id for n in topo.nodes if n.memory_bytes > 0]


def expand(topo: Any, section: dict) -> list[grid.Job]:
    """The jobs of the sweeps; `Unavailable` where fewer than two nodes have memory (a move needs
    two)."""
    nodes = _memory_nodes(topo)
    if len(nodes) < 2:
        raise Unavailable(f"the topology '{topo.system}' has {count_words(len(nodes), 'node')} with memory and a move "
                          "needs two; run it on a machine with two NUMA nodes or more (numactl -H lists them)")
    return list(_jobs(topo, section))


def _jobs(topo: Any, section: dict) -> Iterator[grid.Job]:
    for i, sw in enumerate(section["sweeps"]):
        where = f"{NAME}.sweeps[{i}]"
        pairs = _pairs(topo, sw)
        for p, (src, dst) in enumerate(pairs):
            grid.check_nodes(topo, [src, dst], f"{where}.pairs[{p}]")
            if src == dst:
                raise NumasweepError(f"{where}.pairs[{p}]: [{src}, {dst}] moves nothing; name two different nodes")
        sizes = grid.sizes_arg(sw["sizes"], f"{where}.sizes")
        for (src, dst), method, pages, threads, batch in itertools.product(
                pairs, sw["methods"], sw["pages"], sw["threads"], sw["batch"]):
            many = method == "move_pages"  # threads and batch are move_pages' alone
            if not many and (threads, batch) != (sw["threads"][0], sw["batch"][0]):
                continue
            threads = threads if many else 1
            cpu_node = common.pair_cpu_node(topo, "src", src, dst)
            cpus = grid.cpus_on(topo, cpu_node, threads, f"{where}.threads")
            yield grid.Job(
                bench=NAME,
                id=(f"{grid.id_prefix(NAME, sw['label'])}-s{src}-d{dst}-{method.replace('_', '')}-{pages}"
                    + (f"-t{threads}-b{batch}" if many else "")),
                kernel=KERNEL,
                grid={"label": sw["label"] or ""},
                kernel_args=tuple(
                    [f"--src={src}", f"--dst={dst}", f"--method={method}", f"--pages={pages}", f"--size={sizes}",
                     f"--ntimes={sw['repetitions']}"]
                    + ([f"--threads={threads}", f"--batch={batch}"] if many else [])
                    + list(sw["extra_args"])),
                threads=threads,
                cpus=cpus,
                memory="local",
            )


def check(topo: Any, section: dict) -> list[str]:
    """Each buffer a whole number of the pages it is made of (numa_migrate refuses others), and
    the largest fits the memory of both nodes of each pair."""
    for where, sw in checks.sweeps(section, NAME):
        sizes = checks.size_list(sw["sizes"])
        for pages, size in itertools.product(sw["pages"], sizes):
            if size % PAGE_BYTES[pages]:
                raise NumasweepError(f"{where}.sizes: {format_size(size)} is not a whole number of the "
                                     f"{format_size(PAGE_BYTES[pages])} pages of pages: {pages}; give a multiple of "
                                     f"{format_size(PAGE_BYTES[pages])}, or other pages")
        nodes = sorted({n for pair in _pairs(topo, sw) for n in pair})
        for n in nodes if sizes else ():
            checks.fit(topo, f"{where}.sizes", max(sizes), f"node:{n}", [n])
    return []


# ---------------------------------------------------------------- the moves, as the findings read them

def _moves(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its pair in the order of the job's forward move (`a`, `b`) and the numbers
    as numbers."""
    df = table.copy()
    for col in ("src", "dst", "size_bytes", "seconds", "gb_s", "pages_total", "pages_moved", *COUNTERS):
        if col in df:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    forward = df["direction"].astype(str) == "forward"
    df["a"] = np.where(forward, df["src"], df["dst"]).astype(int)
    df["b"] = np.where(forward, df["dst"], df["src"]).astype(int)
    if series.REPETITION not in df:
        df[series.REPETITION] = 0
    return df


def _config(df: pd.DataFrame) -> list[str]:
    return [c for c in CONFIG if c in df]


def _config_words(df: pd.DataFrame, key: dict) -> str:
    """The configuration of a move in words: its method, then what varies in the table."""
    varying = [c for c in _config(df) if c != "method" and df[c].astype(str).nunique() > 1]
    words = [METHOD_WORDS.get(str(key["method"]), str(key["method"]))]
    if str(key["method"]) == "move_pages":
        words.append(f"{count_words(int(key['threads']), 'thread')}, {int(key['batch'])} pages a call")
    words += [series.value_name(c, key[c]) for c in varying if c not in ("threads", "batch")]
    return ", ".join(w for w in words if w)


def _groups(df: pd.DataFrame) -> Iterator[tuple[dict, pd.DataFrame]]:
    keys = _config(df) + ["a", "b"]
    for key, g in df.groupby(keys, sort=True, dropna=False):
        yield dict(zip(keys, key)), g


def _per_repetition(g: pd.DataFrame, direction: str) -> pd.DataFrame:
    """Log throughput per repetition (rows) and size (columns) of one direction."""
    part = g[g["direction"].astype(str) == direction]
    return np.log(part.pivot_table(index=["job_id", series.REPETITION] if "job_id" in part else series.REPETITION,
                                   columns="size_bytes", values="gb_s", aggfunc="median"))


# ---------------------------------------------------------------- findings

def pair_findings(table: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """Per node pair and move configuration, at its largest size: the time and throughput each
    way, with intervals over the repetitions, and the pages verified on their target."""
    if table is None or table.empty:
        return []
    df = _moves(table)
    out = []
    for key, g in _groups(df):
        size = g["size_bytes"].max()
        at = g[g["size_bytes"] == size]
        ways = {}
        for direction in ("forward", "back"):
            part = at[at["direction"].astype(str) == direction]
            if part.empty:
                continue
            gb_s = stats.unit_mean_interval(np.log(part["gb_s"].to_numpy(float)).reshape(-1, 1))
            ways[direction] = (gb_s, float(part["seconds"].median()), len(part))
        if "forward" not in ways:
            continue
        a, b, words = int(key["a"]), int(key["b"]), _config_words(df, key)
        gb_s, secs, runs = ways["forward"]
        text = (f"Moving {size_words(int(size))} from node {a} to node {b} ({words}) takes {secs:.3g} s, "
                f"{_rate(gb_s, runs)}")
        if "back" in ways:
            text += f"; back from node {b} to node {a} {ways['back'][1]:.3g} s, {_rate(ways['back'][0], ways['back'][2])}"
        moved_all, total_all = int(g["pages_moved"].sum()), int(g["pages_total"].sum())
        text += (f"; every page of every move verified on its target ({moved_all} of {total_all})."
                 if moved_all == total_all else
                 f"; {total_all - moved_all} of {total_all} pages of its moves were not on the target after the move.")
        out.append(Finding(
            id="migrate_pair", bench=NAME, title=f"Page migration between node {a} and node {b}{in_parens(words)}",
            summary=text,
            numbers={"src_node": a, "dst_node": b, "size_bytes": int(size), "config": words,
                     "seconds": secs, **interval_numbers("gb_s", gb_s),
                     "back_seconds": ways["back"][1] if "back" in ways else None,
                     **interval_numbers("back_gb_s", ways["back"][0] if "back" in ways else None),
                     "pages_moved": moved_all, "pages_total": total_all},
            evidence=[{"direction": d, "gb_s": w[0].estimate, "seconds": w[1], "runs": w[2]} for d, w in ways.items()],
        ))
    return out


def _rate(gb_s: stats.Interval, runs: int) -> str:
    if runs < 2:
        return f"{gb_s.estimate:.2f} GB/s (one run: no interval)"
    return f"{gb_s.text('{:.2f} GB/s')} over {runs} runs"


def asymmetry(table: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """Per node pair and move configuration: the forward throughput over the back one, one log
    ratio per repetition (mean over its sizes), a t interval over repetitions."""
    if table is None or table.empty:
        return []
    df = _moves(table)
    fits = []
    for key, g in _groups(df):
        fwd, back = _per_repetition(g, "forward"), _per_repetition(g, "back")
        both = fwd.index.intersection(back.index)
        cols = fwd.columns.intersection(back.columns)
        if not len(both) or not len(cols):
            continue
        d = np.nanmean((fwd.loc[both, cols] - back.loc[both, cols]).to_numpy(float), axis=1)
        ratio, se, dof = stats.unit_interval(d, np.full(len(d), math.nan), "ratio")
        p = stats.excess_pvalue(math.log(ratio.estimate), se, dof, contrasts.MIN_EFFECT) if np.isfinite(se) else None
        fits.append((key, g, ratio, p, len(d)))
    claims = stats.benjamini_hochberg([f[3] if f[3] is not None else math.nan for f in fits])
    out = []
    for (key, g, ratio, p, runs), claim in zip(fits, claims):
        a, b, words = int(key["a"]), int(key["b"]), _config_words(df, key)
        floor = f"{contrasts.MIN_EFFECT * 100:.0f}%"
        margin = (1 / (1 + contrasts.MIN_EFFECT), 1 + contrasts.MIN_EFFECT)
        alike = bool(np.isfinite(ratio.low) and margin[0] <= ratio.low and ratio.high <= margin[1])
        slower = f"node {b} to node {a}" if ratio.estimate > 1 else f"node {a} to node {b}"
        verdict = (f"beyond the noise and the {floor} floor: moves from {slower} are slower" if claim else
                   f"inside the {floor} margin: the two directions are alike" if alike else
                   "noise unknown: nothing claimed" if not np.isfinite(ratio.low) else
                   f"not beyond the noise and the {floor} floor: indistinguishable")
        out.append(Finding(
            id="migrate_asymmetry", bench=NAME, title=f"Page migration, one direction against the other{in_parens(words)}",
            summary=(f"Moving pages from node {a} to node {b} ({words}) reaches {ratio.text('{:.2f}x')} the throughput "
                     f"of moving them back from node {b} to node {a} ({count_words(runs, 'repetition')}, "
                     f"{verdict})."),
            numbers={"src_node": a, "dst_node": b, "config": words, "claim": bool(claim), "alike": alike,
                     **interval_numbers("forward_to_back", ratio), "p_value": p, "floor": contrasts.MIN_EFFECT},
            evidence=[{"size_bytes": int(s), "direction": str(d), "gb_s": float(v)}
                      for (s, d), v in g.groupby(["size_bytes", "direction"])["gb_s"].median().items()],
        ))
    return out


def headline(table: pd.DataFrame, topology: Topology | None) -> list[list[str]]:
    """Per sweep, node pair (each way) and page size, the fastest move's throughput at the largest
    size (GB/s, 10^9 bytes of the buffer moved per second), with its interval over the runs."""
    df = _moves(table)
    rows = []
    keys = [c for c in ("label", "src", "dst", "pages") if c in df]
    for key, part in df.groupby(keys, sort=True, dropna=False):
        named = dict(zip(keys, key))
        part = part[part["size_bytes"] == part["size_bytes"].max()]
        move = ["method", "threads", "batch"]
        best = part.groupby(move)["gb_s"].median().idxmax()
        _, value, interval = measured(part[(part[move] == pd.Series(best, index=move)).all(axis=1)]["gb_s"], "GB/s", 2)
        words = _config_words(df, {**dict(zip(move, best)), **named})
        pages = series.value_name("pages", named["pages"])
        words += "" if pages in words else f", {pages}"
        rows.append([f"page migration, node {int(named['src'])} to node {int(named['dst'])}, "
                     f"{size_words(int(part['size_bytes'].max()))}, {words} (the fastest move), each byte moved counted once",
                     value, interval])
    return rows


# ---------------------------------------------------------------- figures and tables

def plot_migrate(table: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    """Per configuration (page size, threads, ...): each pair's throughput against the size moved,
    a line per direction and method, the runs' range (slowest to fastest) as a band."""
    paths: list[Path] = []
    df = _moves(table)
    for variant, config in series.configurations(df, NAME, without=("method", "threads", "batch")):
        points = config.groupby(["src", "dst", "method", "threads", "batch", "size_bytes"])["gb_s"].agg(
            ["median", "min", "max"]).reset_index()
        lines = list(points.groupby(["src", "dst", "method", "threads", "batch"], sort=True))
        fig, (ax,) = new_figure()
        named = {k: _line_words(config, k) for k, _ in lines}
        for colour, (k, line) in zip(line_colours(len(lines)), lines):
            raw = config[(config[["src", "dst", "method", "threads", "batch"]] == pd.Series(k, index=[
                "src", "dst", "method", "threads", "batch"])).all(axis=1)]
            ax.plot(line["size_bytes"], line["median"], marker="o", markersize=3, color=colour,
                    label=marked(named[k], raw))
            ax.fill_between(line["size_bytes"], line["min"], line["max"], color=colour, alpha=0.15, linewidth=0)
        size_axis(ax, sorted(points["size_bytes"].unique()), "size moved")
        ax.set_ylabel("throughput (GB/s of the buffer moved)")
        ax.set_ylim(bottom=0)
        anchor_value_axis(ax)
        ax.grid(True, alpha=0.3)
        ax.set_title(titled("Page migration throughput vs size moved", variant))
        ax.legend(fontsize=7, loc="best")
        paths += save(fig, figdir, NAME, "migrate_vs_size", variant)
    return paths


def _line_words(df: pd.DataFrame, key: tuple) -> str:
    src, dst, method, threads, batch = key
    words = f"node {int(src)} to node {int(dst)}, {METHOD_WORDS.get(method, method)}"
    moves = df[df["method"] == "move_pages"]
    if method == "move_pages" and (moves["threads"].nunique() > 1 or moves["batch"].nunique() > 1):
        words += f" ({count_words(int(threads), 'thread')}, {int(batch)} pages a call)"
    return words


def raw_tables(table: pd.DataFrame, topology: Topology | None = None, findings: list[dict] = ()) -> list[dict]:
    """Its raw tables, all it writes in the report (`Presentation.report`): per sweep, the moves
    (median over repetitions) and the kernel's counter deltas per move."""
    out = []
    for variant, config in series.configurations(_moves(table), NAME, without=("pages", "threads", "batch")):
        other = "" if variant == "all" else f", {variant}"
        moves, counters = [], []
        for key, g in config.groupby(["src", "dst", "method", "pages", "threads", "batch", "size_bytes"], sort=True):
            src, dst, method, pages, threads, batch, size = key
            many = method == "move_pages"
            where = [int(src), int(dst), METHOD_WORDS.get(method, method), series.value_name("pages", pages)]
            moves.append(where + [int(threads) if many else "one call", int(batch) if many else "all",
                                  size_words(int(size)), fmt_value(g["seconds"].median(), 4),
                                  fmt_value(g["gb_s"].median(), 2), len(g),
                                  f"{int(g['pages_moved'].sum())} of {int(g['pages_total'].sum())}"])
            counters.append(where + [size_words(int(size)), int(g["pages_moved"].median())]
                            + [_counter(g[c]) for c in COUNTERS if c in g] + [_other_counters(g) or "none"])
        out += [
            {"title": f"Page migration (median over the repetitions){other}",
             "table": md_table(["from node", "to node", "method", "pages", "threads", "pages a call", "size", "seconds",
                                "GB/s", "runs", "pages on the target, all runs"], moves)},
            {"title": f"Page migration: the kernel's counter deltas per move (/proc/vmstat, median over the "
                      f"repetitions; system-wide, other work's moves included){other}",
             "table": md_table(["from node", "to node", "method", "pages", "size", "pages moved"]
                               + [c for c in COUNTERS if c in config] + ["other counters"], counters)},
        ]
    return out


def _counter(values: pd.Series) -> int | str:
    v = pd.to_numeric(values, errors="coerce")
    return "not counted" if (v < 0).all() else int(v[v >= 0].median())


def _other_counters(g: pd.DataFrame) -> str:
    """The median delta of each counter in `vmstat_deltas` beyond COUNTERS, "name delta, ..."."""
    if "vmstat_deltas" not in g:
        return ""
    parsed = [dict((k, float(v)) for k, _, v in (p.partition(":") for p in str(t).split(",") if ":" in p))
              for t in g["vmstat_deltas"].fillna("")]
    names = sorted({k for d in parsed for k in d} - set(COUNTERS))
    return ", ".join(f"{k} {int(np.median([d.get(k, 0) for d in parsed]))}" for k in names)


BENCH = register(Bench(
    name=NAME,
    title="Page migration between nodes",
    launch=Launch(
        kernels=(KERNEL,),
        by="threads",
        expand=expand,
        check=check,
    ),
    tables=Tables(
        required=("direction", "src", "dst", "method", "size_bytes", "seconds", "gb_s", "pages_total", "pages_moved"),
        positive=("size_bytes", "seconds", "gb_s"),
        axis=AXIS,
        series=SERIES,
        within=WITHIN,
        numeric=("src", "dst", "batch", "size_bytes"),
        sizes=("size_bytes",),
        words={"src": "from node", "dst": "to node"},
    ),
    analyse=lambda table, topo: [functools.partial(pair_findings, table, topo), functools.partial(asymmetry, table, topo)],
    presentation=Presentation(
        category="Page migration",
        variant="configuration",
        figures=(
            Figure("migrate_vs_size", "Page migration throughput against the size moved, a line per node pair, "
                   "direction and method (10^9 bytes of the buffer moved per second); the band spans the runs.",
                   draw=plot_migrate),
        ),
        report=raw_tables,
        subjects={"Page migration": (("migrate_pair", "migrate_asymmetry"), ("migrate_vs_size",))},
        headline=headline,
    ),
    checks=Checks(
        on_cpu=ON_CPU_WAITS,
        metrics={"gb_s": True},
        claims={"migrate_pair": Claim(states=("gb_s",)),
                "migrate_asymmetry": Claim("forward_to_back")},
        not_checked=("numa_migrate records no within-run spread or timer columns to check; every move verifies "
                     "its pages instead (pages_moved of pages_total, said in its finding)"),
    ),
))
