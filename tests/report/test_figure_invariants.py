"""Every figure shows what it is drawn for, checked on the figure data (not pixels) of every
shipped example, the synthetic results of helpers.synthetic and the default sweep's jobs on a
model workstation (whose bandwidth runs carry each thread count's own CPU list):

- a series along an axis with two or more values is one connected line, never single points;
- legend entries are unique within an axes and read as words (no empty parts);
- no two lines of one axes share colour, marker and line style;
- axes that count (threads, ranks per domain) tick at whole numbers;
- latency against size or ranks is drawn on a log y axis;
- a heat map's colours span at least +-10 % around its median (a small spread looks small);
- where the results hold a spread (repeated runs, a kernel's fastest and slowest sample), every
  line of the figures drawn along size or threads has its band;
- every direction a GPU run measured (both at once included) has its panel;
- the titles of one benchmark's figures are unique.

The figures are recorded where they would be saved (`save`, patched in every module that
imported it) and drawn for real (matplotlib's Agg), so the checks read exactly what the PNGs show.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

from helpers import synthetic as model
from numasweep.benches.gpu_xfer import GPU_DIRECTIONS
from numasweep.reporting import figures

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if (p / "topology.json").exists())
COUNTS = ("threads", "ranks per domain", "ranks", "GPUs")


# Per benchmark: whether its results hold a spread, and the figures that draw it as a band.
def _column_filled(*columns: str):
    return lambda df: set(columns) <= set(df.columns) and df[columns[0]].notna().any()


SPREAD = {"gpu_xfer": (lambda df: "repetition" in df and df["repetition"].nunique() > 1,
                       ("gpu_bandwidth", "gpu_latency")),
          "latency": (_column_filled("latency_ns_min", "latency_ns_max"), ("latency_vs_size",)),
          "bandwidth": (_column_filled("min_mb_s"), ("bandwidth_vs_threads",))}
RESULTS: dict[str, Path] = {}     # each case's results folder, as the fixture wrote it

CASES = {**{f"example-{p.name}": (lambda tmp, p=p: p) for p in EXAMPLES},
         "synthetic": lambda tmp: model.write_results(tmp / "results" / "twin"),
         "default-sweep": lambda tmp: model.write_default_sweep(tmp / "results" / "desk")}


@pytest.fixture(scope="module", params=sorted(CASES))
def drawn(request, tmp_path_factory) -> list[tuple[str, str, str, object]]:
    """(bench, kind, variant, Figure) for every figure the case's results support."""
    tmp = tmp_path_factory.mktemp(request.param)
    results = CASES[request.param](tmp)
    RESULTS[request.param] = Path(results)
    got: list = []
    original = figures.save

    def record(fig, figdir, bench, kind, variant):
        got.append((bench, kind, variant, fig))
        return original(fig, figdir, bench, kind, variant)

    patched = [m for m in list(sys.modules.values())
               if getattr(m, "__name__", "").startswith("numasweep") and getattr(m, "save", None) is original]
    mp = pytest.MonkeyPatch()
    for module in patched:
        mp.setattr(module, "save", record)
    try:
        figures.draw_all(results, tmp / "fig")
    finally:
        mp.undo()
    assert got, f"{request.param}: no figure drawn"
    return got


def data_lines(ax) -> list:
    """The lines that name a series (a legend entry); reference lines have none."""
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def where(bench: str, kind: str, variant: str, ax) -> str:
    return f"{bench}/{kind}--{variant} [{ax.get_title() or ax.get_ylabel()}]"


def every_axes(drawn):
    for bench, kind, variant, fig in drawn:
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                continue
            yield bench, kind, variant, ax


def test_a_series_along_an_axis_is_one_connected_line(drawn) -> None:
    for bench, kind, variant, ax in every_axes(drawn):
        lines = data_lines(ax)
        xs = {float(x) for line in lines for x in np.asarray(line.get_xdata(), dtype=float)}
        if len(xs) < 2:
            continue
        single = [line.get_label() for line in lines if len(line.get_xdata()) == 1]
        assert not single, f"{where(bench, kind, variant, ax)}: single points {single} on an axis of {len(xs)} values"


def test_legend_entries_are_unique_words(drawn) -> None:
    for bench, kind, variant, ax in every_axes(drawn):
        legend = ax.get_legend()
        if legend is None:
            continue
        texts = [t.get_text() for t in legend.get_texts()]
        assert len(texts) == len(set(texts)), f"{where(bench, kind, variant, ax)}: repeated entries {texts}"
        for text in texts:
            parts = [p.strip() for p in text.split(",")]
            assert all(parts) and "  " not in text and " ," not in text, \
                f"{where(bench, kind, variant, ax)}: an empty part in {text!r}"


def test_lines_differ_in_colour_or_marker(drawn) -> None:
    for bench, kind, variant, ax in every_axes(drawn):
        styles = [(str(line.get_color()), line.get_marker(), line.get_linestyle()) for line in data_lines(ax)]
        assert len(styles) == len(set(styles)), f"{where(bench, kind, variant, ax)}: two lines look alike {styles}"


def test_count_axes_tick_at_whole_numbers(drawn) -> None:
    for bench, kind, variant, ax in every_axes(drawn):
        for axis, label, lim in ((ax.xaxis, ax.get_xlabel(), ax.get_xlim()), (ax.yaxis, ax.get_ylabel(), ax.get_ylim())):
            if label not in COUNTS or axis.get_scale() != "linear":
                continue
            lo, hi = sorted(lim)
            ticks = [t for t in axis.get_majorticklocs() if lo - 1e-9 <= t <= hi + 1e-9]
            assert ticks and all(float(t).is_integer() for t in ticks), \
                f"{where(bench, kind, variant, ax)}: {label} ticks {ticks}"


def test_latency_is_drawn_on_a_log_axis(drawn) -> None:
    for bench, kind, variant, ax in every_axes(drawn):
        if bench == "latency" and "ns per load" in ax.get_ylabel() and data_lines(ax):
            assert ax.get_yscale() == "log", f"{where(bench, kind, variant, ax)}: linear latency axis"


def test_heat_map_colours_are_anchored(drawn) -> None:
    for bench, kind, variant, ax in every_axes(drawn):
        for image in ax.get_images():
            values = np.ma.compressed(image.get_array())
            if values.size < 2:
                continue
            middle = float(np.median(values))
            lo, hi = image.norm.vmin, image.norm.vmax
            assert lo == 0 or (lo <= 0.9 * middle and hi >= 1.1 * middle), \
                f"{where(bench, kind, variant, ax)}: colours {lo:.4g}..{hi:.4g} around a median of {middle:.4g}"


def test_titles_are_unique_per_benchmark(drawn) -> None:
    seen: dict[tuple[str, str], str] = {}
    for bench, kind, variant, fig in drawn:
        title = fig.get_suptitle() or \
            " | ".join(ax.get_title() for ax in fig.axes if ax.get_title())
        assert title, f"{bench}/{kind}--{variant}: no title"
        assert (bench, title) not in seen, f"{bench}: {kind}--{variant} and {seen[bench, title]} share {title!r}"
        seen[bench, title] = f"{kind}--{variant}"


def test_lines_with_a_spread_have_their_band(drawn, request) -> None:
    """Three runs of a GPU transfer, a latency run's sample range, STREAM's slowest iteration:
    each line of the figures drawn from them carries its band (a filled area per line)."""
    results = RESULTS[request.node.callspec.params["drawn"]]
    spread = {bench: kinds for bench, (has, kinds) in SPREAD.items()
              if (results / f"{bench}.csv").exists() and has(pd.read_csv(results / f"{bench}.csv"))}
    for bench, kind, variant, ax in every_axes(drawn):
        if kind not in spread.get(bench, ()):
            continue
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert len(bands) >= len(data_lines(ax)), \
            f"{where(bench, kind, variant, ax)}: {len(data_lines(ax))} lines, {len(bands)} bands"


def test_every_measured_gpu_direction_is_drawn(drawn, request) -> None:
    """Each direction a gpu_xfer run measured (both at once included) has its panel."""
    results = RESULTS[request.node.callspec.params["drawn"]]
    if not (results / "gpu_xfer.csv").exists():
        return
    df = pd.read_csv(results / "gpu_xfer.csv")
    measured = {d.words for d in GPU_DIRECTIONS if d.bandwidth in df and df[d.bandwidth].notna().any()}
    for bench, kind, variant, fig in drawn:
        if (bench, kind) == ("gpu_xfer", "gpu_bandwidth"):
            panels = {ax.get_title() for ax in fig.axes}
            assert measured <= panels, f"{kind}--{variant}: {sorted(measured - panels)} not drawn"
