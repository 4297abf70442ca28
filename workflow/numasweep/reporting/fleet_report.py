"""Fleet mode, measured: the nodes of a fleet campaign ranked, and those out of line flagged.

For every point (series identity less the host, and axis value) measured on two or
more hosts, a host's *slowdown* is its value over the median of the other hosts' values at
that point (value / others where less is better, others / value where more is; > 1 is
slower; each benchmark's `metrics` say which). The
leave-one-out median keeps a bad node from moving its own reference, and a median over points
keeps one odd point from moving a node. A node's score is the median of its log slowdowns
over the points of a benchmark, with a 95 % percentile bootstrap interval over those points
(`stats.SEED`, so the same tables give the same interval). Points of one curve are not
independent draws, so the interval says how consistently a node is slower across the sweep,
not how a rerun would vary. A node is *out of line* when the whole interval lies above
1 + tolerance (config `fleet.tolerance`, 10 % by default): faster nodes are listed, never
flagged (with two nodes, one is always faster than the other).

    python -m numasweep fleet --results results/x -o report/x/fleet.md [--json F] [--figures DIR]
        [--tolerance 0.1]
"""

from __future__ import annotations

import argparse
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.core.io import UNREAD, atomic_write_text
from numasweep.core.units import ranged
from numasweep.planning.fleet import DEFAULT_TOLERANCE, NODE_COLUMN
from numasweep.reporting import figures
from numasweep.reporting.markdown import Md, md_table, md_text
from numasweep.results import aggregate, series
from numasweep.statistics import stats

DRAWS = 2000


DRAWS = 2000


@dataclass(frozen=True)
class NodeScore:
    bench: str
    metric: str
    host: str
    points: int
    slowdown: stats.Interval
    out_of_line: bool


def host_column(df: pd.DataFrame) -> str | None:
    for col in ("host", "prov_host", NODE_COLUMN):
        if col in df.columns:
            return col
    return None


def slowdowns(df: pd.DataFrame, bench: str, metric: str, higher_better: bool) -> pd.DataFrame:
    """Points x hosts: each host's log slowdown against the median of the other hosts."""
    host = host_column(df)
    if host is None or metric not in df.columns:
        return pd.DataFrame()
    if host != "host":
        df = df.assign(host=df[host])
    points = series.point_table(df, bench, [metric])
    keys = [c for c in series.point_columns(points, bench) if c not in ("host", "system")]
    if not keys:
        points, keys = points.assign(_point=0), ["_point"]
    wide = points.pivot_table(index=keys, columns="host", values=metric, aggfunc="median")
    if wide.shape[1] < 2:
        return pd.DataFrame()
    logs = np.log(wide.to_numpy(float))
    diff = logs - stats.others_median(logs)
    return pd.DataFrame(-diff if higher_better else diff, index=wide.index,
                        columns=wide.columns).dropna(how="all")


def score(values: np.ndarray, tolerance: float) -> tuple[stats.Interval, bool]:
    values = values[np.isfinite(values)]
    est = float(np.median(values))
    if len(values) < 2:
        return stats.Interval.unknown(math.exp(est), "one point: no interval"), False
    rng = np.random.default_rng(stats.SEED)
    draws = np.median(values[rng.integers(0, len(values), (DRAWS, len(values)))], axis=1)
    low, high = np.quantile(draws, [(1 - stats.LEVEL) / 2, (1 + stats.LEVEL) / 2])
    interval = stats.Interval(math.exp(est), math.exp(low), math.exp(high), stats.LEVEL,
                              f"percentile bootstrap over {len(values)} points ({DRAWS} draws)")
    return interval, bool(interval.low > 1 + tolerance)


def screen(frames: dict[str, pd.DataFrame], tolerance: float = DEFAULT_TOLERANCE) -> list[NodeScore]:
    scores = []
    for bench, df in frames.items():
        for metric, higher_better in registry.get(bench).checks.metrics.items():
            table = slowdowns(df, bench, metric, higher_better)
            for host in table.columns:
                values = table[host].to_numpy(float)
                if not np.isfinite(values).any():
                    continue
                interval, out = score(values, tolerance)
                scores.append(NodeScore(bench, metric, str(host), int(np.isfinite(values).sum()), interval, out))
    return scores


def ranking(scores: list[NodeScore]) -> list[str]:
    """Hosts from the slowest (largest worst slowdown over benchmarks) to the fastest."""
    worst: dict[str, float] = {}
    for s in scores:
        worst[s.host] = max(worst.get(s.host, 0.0), s.slowdown.estimate)
    return sorted(worst, key=lambda h: (-worst[h], h))


def plot(scores: list[NodeScore], tolerance: float, figdir: Path) -> list[Path]:
    columns = sorted({(s.bench, s.metric) for s in scores}, key=lambda bm: (registry.names().index(bm[0]), bm[1]))
    order = ranking(scores)
    fig, axes = figures.new_figure(ncols=len(columns), width=max(6.0, 4.5 * len(columns)))
    for ax, (bench, metric) in zip(axes, columns):
        mine = {s.host: s for s in scores if (s.bench, s.metric) == (bench, metric)}
        hosts = [h for h in order if h in mine]
        for y, h in enumerate(hosts):
            s = mine[h]
            iv = s.slowdown
            color = figures.PALETTE[3] if s.out_of_line else figures.PALETTE[0]
            if np.isfinite(iv.low):
                ax.plot([iv.low, iv.high], [y, y], color=color, linewidth=2)
            ax.plot([iv.estimate], [y], marker="o", color=color)
        ax.axvline(1.0, color="grey", linewidth=1)
        ax.axvline(1 + tolerance, color="grey", linewidth=1, linestyle="--")
        ax.set_yticks(range(len(hosts)), hosts)
        ax.set_ylim(len(hosts) - 0.5, -0.5)
        ax.set_xlabel(f"slowdown against the other nodes ({metric})")
        ax.set_title(bench)
    return figures.save(fig, figdir, "fleet", "fleet_nodes", "all")


def markdown(scores: list[NodeScore], tolerance: float, figure: str | None) -> str:
    order = ranking(scores)
    columns = sorted({(s.bench, s.metric) for s in scores}, key=lambda bm: (registry.names().index(bm[0]), bm[1]))
    cell = {(s.host, s.bench, s.metric): s for s in scores}
    rows = []
    for i, host in enumerate(order, 1):
        row: list[object] = [i, host]
        for bench, metric in columns:
            s = cell.get((host, bench, metric))
            row.append("" if s is None else s.slowdown.text("{:.2f}x"))
        row.append(Md("**yes**") if any(s.out_of_line for s in scores if s.host == host) else "no")
        rows.append(row)
    header = ["rank", "host"] + [f"{b} ({m})" for b, m in columns] + ["out of line"]
    flagged = [s for s in scores if s.out_of_line]
    lines = [
        "## Fleet: the nodes compared", "",
        f"{len(order)} hosts measured the same sweep: {md_text(', '.join(order))}. A host's slowdown is the median, over "
        "every point measured on two or more hosts, of its value against the median of the other hosts at that "
        "point (> 1: slower), with a 95% percentile bootstrap interval over the points. A host is out of line "
        f"when the whole interval lies above {1 + tolerance:.2f}x. Slowest first.", "",
        md_table(header, rows, right={0}), "",
    ]
    if figure:
        lines += [f"![slowdown of each host against the others]({figure})", "",
                  "*Each host's slowdown against the median of the other hosts, with its 95% interval; "
                  f"red: out of line, dashed: {1 + tolerance:.2f}x.*", ""]
    if flagged:
        lines += ["**Out of line:**", ""]
        lines += [f"- **{md_text(s.host)}**, {s.bench} ({s.metric}): {s.slowdown.text('{:.2f}x')} the other hosts over "
                  f"{s.points} points." for s in flagged] + [""]
    else:
        lines += [f"No host is out of line by more than {tolerance:.0%}.", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m numasweep fleet", description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, type=Path, help="results/<system> of a fleet campaign")
    ap.add_argument("-o", "--output", required=True, type=Path, help="the Markdown section to write")
    ap.add_argument("--json", type=Path, help="the scores as JSON")
    ap.add_argument("--figures", type=Path, help="figure folder (the figure goes to <folder>/fleet/)")
    ap.add_argument("--tolerance", type=ranged(float, 1e-6, 10), default=DEFAULT_TOLERANCE,
                    help="out-of-line threshold, a fraction, above 0 and at most 10")
    args = ap.parse_args(argv)
    if not args.tolerance > 0:
        raise NumasweepError(f"--tolerance {args.tolerance}: give a fraction above 0, e.g. 0.1 for 10%")
    frames = aggregate.load_results(args.results, skip=UNREAD)  # provenance columns it never reads
    scores = screen(frames, args.tolerance)
    figure = None
    if not scores:
        hosts = sorted({str(h) for df in frames.values() for col in [host_column(df)] if col for h in df[col]})
        print(f"numasweep: warning: {args.results}: no point was measured on two or more hosts")
        atomic_write_text(args.output, "\n".join([
            "## Fleet: the nodes compared", "",
            f"No point was measured on two or more hosts (hosts: {md_text(', '.join(hosts) or 'not recorded')}), so no "
            "host is ranked. Fleet jobs run where `--nodelist` puts them under SLURM; without SLURM every "
            "node's copy of a job runs on this machine.", ""]) + "\n")
        if args.json:
            atomic_write_text(args.json, "[]\n")
        if args.figures:
            # The rule's declared figure: an empty panel saying the same.
            fig, (ax,) = figures.new_figure()
            ax.text(0.5, 0.5, "one host measured: nothing to rank", ha="center", va="center")
            ax.set_axis_off()
            figures.save(fig, args.figures, "fleet", "fleet_nodes", "all")
        return 0
    if args.figures:
        png = next(p for p in plot(scores, args.tolerance, args.figures) if p.suffix == ".png")
        figure = os.path.relpath(png, args.output.parent)
    atomic_write_text(args.output, markdown(scores, args.tolerance, figure) + "\n")
    if args.json:
        atomic_write_text(args.json, json.dumps([asdict(s) for s in scores], indent=2) + "\n")
    for s in scores:
        if s.out_of_line:
            print(f"out of line: {s.host} {s.bench} {s.slowdown.text('{:.2f}x')}")
    return 0
