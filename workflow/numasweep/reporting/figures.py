"""Figures from aggregated results: one PNG and one SVG per figure, under `<figdir>/<bench>/`.

Each benchmark draws its own figures (`Bench.presentation.figures`, each a `Figure` with its drawer, in its module under `numasweep.benches`);
this module holds the conventions they share: the colour-blind-safe palette and a colour per
line, figure size, value axes that span at least ANCHOR around their median, the size axis,
cache markers, heat maps, and file names `<kind>--<variant>.png`, from which
Snakemake's report takes the figure kind and its variant (mode, kernel, memory kind). Every
drawing function returns the paths it wrote and writes nothing when the data it needs is absent.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from numasweep.core import registry
from numasweep.core.topology import Topology
from numasweep.core.io import REPORT_ONLY, UNREAD, atomic_write_files
from numasweep.core.units import format_size
from numasweep.results import aggregate, disturbed

# Okabe & Ito's palette: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
LINESTYLES = ["-", "--", ":", "-."]
STYLE_WORDS = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dotted"}   # the line styles in words
HEATMAP = "cividis"  # perceptually uniform and readable without red/green vision

# Report width is about 800 px; 8 x 4.5 in at 100 dpi keeps labels legible without zooming.
FIGSIZE = (8.0, 4.5)
DPI = 100

def slug(value: object) -> str:
    text = re.sub(r"[^A-Za-z0-9]+", "-", str(value)).strip("-").lower()
    return text or "all"


# ---------------------------------------------------------------------------------------------
# Drawing helpers


def new_figure(ncols: int = 1, width: float | None = None, sharey: bool = False) -> tuple[Any, list]:
    """A figure of `ncols` panels side by side; `sharey`: on one y scale, for panels whose values
    are compared (a GPU's directions: both at once reads as half of one alone)."""
    # Figure objects without pyplot: no global figure state, no GUI backend, files only (Agg);
    # imported here, not at the top: the report imports this module for its loaders alone.
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width or FIGSIZE[0], FIGSIZE[1]), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False, sharey=sharey)
    return fig, list(axes[0])


@dataclass
class Drawn:
    """Figures drawn and not yet written, by path: `draw_all` draws every figure into one, so that
    a full disk is found before a figure folder is half written, with the space they all need;
    `notes`: per benchmark, what each of its figures says under it of the data it rests on (the
    jobs measured while disturbed that it leaves out)."""
    folder: Path
    files: dict[Path, bytes] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)

    def write(self) -> None:
        atomic_write_files(self.folder, self.files, "the figures")


def save(fig: Any, figdir: Path | Drawn, bench: str, kind: str, variant: str) -> list[Path]:
    """The figure as PNG and SVG under `figdir/bench/`: written now, or kept in a `Drawn`. Every
    value axis is widened to `ANCHOR` around its lines' median first (`anchor_value_axis`)."""
    for ax in fig.axes:
        anchor_value_axis(ax)
    drawn = figdir if isinstance(figdir, Drawn) else Drawn(Path(figdir))
    notes = list(drawn.notes.get(bench, []))
    if any(line.get_label().endswith(NOISY_MARK) for ax in fig.axes for line in data_lines(ax)):
        notes.append(NOISY_NOTE)
    if notes:
        # under the axes, inside the image: a figure is read on its own, on a slide or in Snakemake's report
        fig.supxlabel("\n".join(notes), fontsize=7, color="0.25")
    paths = []
    for ext in ("png", "svg"):
        path = drawn.folder / bench / f"{kind}--{slug(variant)}.{ext}"
        image = io.BytesIO()
        fig.savefig(image, dpi=DPI, format=ext)
        drawn.files[path] = image.getvalue()
        paths.append(path)
    if drawn is not figdir:
        drawn.write()
    return paths


# A value axis (and a heat map's colours) spans at least this fraction either side of its data's
# median: a change of 0.5 % (rank scaling's 144.8 to 145.6 ns) is drawn as the flat line it is,
# never as a cliff filling the axis; a change larger than that keeps the axis it fills.
ANCHOR = 0.10


def anchored_range(values: np.ndarray) -> tuple[float, float] | None:
    """(lowest, highest) of the finite `values`, widened to ANCHOR around their median; None
    when there are none."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return None
    median = float(np.median(finite))
    return min(float(finite.min()), (1 - ANCHOR) * median), max(float(finite.max()), (1 + ANCHOR) * median)


def anchor_value_axis(ax) -> None:
    """The y axis of the lines drawn (`data_lines`) widened to span `anchored_range` at least."""
    values = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in data_lines(ax)] or [[]])
    span = anchored_range(values)
    if span is None:
        return
    lo, hi = ax.get_ylim()
    ax.set_ylim(min(lo, span[0]), max(hi, span[1]))


NOISY_MARK = disturbed.NOISY_MARK
NOISY_NOTE = f"{NOISY_MARK} noisy: other work shared the CPUs of its jobs part of the time; kept, with wider intervals"
DISTURBED_WORDS = "measured while disturbed"


def marked(label: str, rows: pd.DataFrame) -> str:
    """A line's legend entry with what its points rest on (the worst verdict of their runs,
    `series.point_table`'s quality column): NOISY_MARK after a noisy line's, "measured while
    disturbed" after one the report concludes all the same (config conclude_disturbed)."""
    if disturbed.VERDICT not in rows:
        return label
    found = set(rows[disturbed.VERDICT].astype(str))
    if disturbed.DISTURBED in found:
        return f"{label} ({DISTURBED_WORDS})"
    return f"{label} {NOISY_MARK}" if disturbed.NOISY in found else label


def left_out(left: list[disturbed.Left]) -> list[str]:
    """The note a benchmark's figures carry for the jobs measured while disturbed they leave out."""
    if not left:
        return []
    series_words = "; ".join(r.series or "all series" for r in left)
    return [f"Left out: the jobs {DISTURBED_WORDS} ({series_words}): not concluded"]


def data_lines(ax) -> list:
    """The lines that name a series (a legend entry); reference lines (`_`-labelled) have none."""
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def line_colours(count: int) -> list[str]:
    """`count` distinct colours, one per line of a figure: the palette's, then (more lines than
    it has) as many evenly spaced along a perceptually uniform map."""
    if count <= len(PALETTE):
        return PALETTE[:count]
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps["viridis"]
    return [to_hex(cmap(i / (count - 1))) for i in range(count)]


def titled(text: str, variant: str) -> str:
    """A figure's title: `text`, then its configuration in words; `text` alone where the results
    hold one configuration (the variant `series.configurations` names "all")."""
    return text if variant == "all" else f"{text}, {variant}"


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


def count_axis(axis) -> None:
    """Ticks at whole numbers only, for an axis that counts (threads, ranks, GPUs)."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


NOT_MEASURED = "not measured"


def heatmap(ax, matrix: pd.DataFrame, unit: str, fmt: str, row_label: str, col_label: str,
            diagonal: str = NOT_MEASURED) -> None:
    """A cpu-node x memory-node style matrix, each cell annotated with its value, or with "not
    measured" where it has none (`diagonal` on the diagonal: "same CPU" in a CPU x CPU map); the
    colours span at least ANCHOR either side of the median, so that a small spread looks small."""
    values = matrix.to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    # colours anchored around the median (ANCHOR) at least: a spread of 1 % looks small
    lo, hi = anchored_range(values) or (None, None)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=HEATMAP, aspect="auto", vmin=lo, vmax=hi)
    ax.set_xticks(range(len(matrix.columns)), [str(c) for c in matrix.columns])
    ax.set_yticks(range(len(matrix.index)), [str(r) for r in matrix.index])
    ax.set_xlabel(col_label)
    ax.set_ylabel(row_label)
    middle = (lo + hi) / 2 if finite.size else 0
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
            else:   # on two lines in the narrow cells of a wide matrix
                empty = diagonal if i == j else NOT_MEASURED
                ax.text(j, i, empty if values.shape[1] <= 6 else empty.replace(" ", "\n"), ha="center",
                        va="center", fontsize=7, color="0.4")
    ax.figure.colorbar(image, ax=ax, label=unit)


# ---------------------------------------------------------------------------------------------
# Latency


def full_node_matrix(matrix: pd.DataFrame, topology: Topology | None) -> pd.DataFrame:
    """Every node of the system as a row and column, so a missing cell says "not measured"."""
    if not topology or not topology.nodes:
        return matrix
    ids = topology.node_ids()
    rows = [n.id for n in topology.nodes if n.cpus] or ids
    return matrix.reindex(index=rows, columns=ids)


# ---------------------------------------------------------------------------------------------
# Entry points


def draw_all(results_dir: str | os.PathLike, figdir: str | os.PathLike, conclude_disturbed: bool = False) -> list[Path]:
    """Every figure the results support, each benchmark's drawers (`Figure.draw`) in turn, from
    the jobs the findings rest on: those measured while disturbed are left out, each figure of
    their benchmark saying so under it (`conclude_disturbed`: drawn, their lines marked); each
    row carries its job's verdict, so a noisy line is marked. The folder of each benchmark with
    a table (`<bench>.csv`: the workflow's outputs) is made even where it has no figure, that of
    a benchmark without one never."""
    figdir = Path(figdir)
    topology = aggregate.load_topology(results_dir)
    frames = aggregate.load_results(results_dir, UNREAD + REPORT_ONLY)
    frames = {name: df.assign(**{disturbed.VERDICT: disturbed.job_verdicts(df, name)[disturbed.VERDICT].to_numpy()})
              for name, df in frames.items()}
    clean, left = disturbed.split(frames, conclude_disturbed)
    drawn = Drawn(figdir, notes={} if conclude_disturbed else
                  {name: left_out([r for r in left if r.bench == name]) for name in frames})
    paths: list[Path] = []
    for bench in registry.all_benches().values():
        if bench.name in clean:
            for figure in bench.presentation.figures:
                if figure.draw:
                    paths += figure.draw(clean[bench.name], topology, drawn)
    drawn.write()
    for bench in registry.names():
        if (Path(results_dir) / f"{bench}.csv").exists():
            (figdir / bench).mkdir(parents=True, exist_ok=True)
    return paths


def figure_kind(path: Path) -> str:
    return path.name.split("--")[0]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m numasweep figures",
                                     description="draw the figures from aggregated results")
    parser.add_argument("--results", required=True, help="folder with topology.json and <bench>.csv")
    parser.add_argument("-o", "--output", required=True, help="figure folder (one subfolder per bench)")
    parser.add_argument("--conclude-disturbed", action="store_true",
                        help="draw the jobs measured while disturbed too, their lines marked (config conclude_disturbed)")
    args = parser.parse_args(argv)
    paths = draw_all(args.results, args.output, args.conclude_disturbed)
    for path in paths:
        print(path)
    return 0
