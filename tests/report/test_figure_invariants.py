"""Every figure shows what it is drawn for, checked on the figure data (not pixels) of every
shipped example, the measured default sweeps of tests/fixtures/measured, the synthetic results of
helpers.synthetic, the LUMI-G campaign's jobs and the default sweep's jobs on a model workstation
(whose bandwidth runs carry each thread count's own CPU list), each modelled by helpers.synthetic:

- a series along an axis with two or more values is one connected line, never single points;
- legend entries are unique within an axes and read as words (no empty parts);
- titles and legends are words, not the results' code words ("..., all", "domains 0",
  "sequential", column names); where an axes' lines differ in style, the legend says what the
  styles stand for;
- no two lines of one axes share a colour;
- every value axis spans at least `figures.ANCHOR` either side of its lines' median, and holds
  their bands: a change smaller than that (or than the noise) never fills the axis as a cliff;
- where 4 KiB and huge pages were both measured, a figure draws them on one axis;
- a figure folder is made only for a benchmark with results (no empty folder for the others);
- axes that count (threads, ranks per domain) tick at whole numbers;
- latency against size or ranks is drawn on a log y axis;
- a heat map's colours span at least +-10 % around its median (a small spread looks small);
- where the results hold a spread (repeated runs, a kernel's fastest and slowest sample), every
  line of the figures drawn along size or threads has its band;
- every direction a GPU run measured (both at once included) has its panel;
- the titles of one benchmark's figures are unique.

The figures are recorded where they would be saved and drawn for real (`helpers.drawn`), so the
checks read exactly what the PNGs show.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_hex

from helpers import synthetic as model
from helpers.drawn import draw_recorded
from numasweep.benches.gpu_xfer.tables import GPU_DIRECTIONS
from numasweep.benches.latency import tables as lat_tables
from numasweep.core import registry, topology
from numasweep.benches.latency import levels
from numasweep.reporting import figures
from numasweep.results import aggregate, disturbed

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if (p / "topology.json").exists())
MEASURED = sorted(p for p in (ROOT / "tests" / "fixtures" / "measured").iterdir() if list(p.glob("*.csv")))
LUMI_G = ROOT / "config" / "campaigns" / "lumi-g.yaml"
TIERED = ROOT / "config" / "campaigns" / "tiered.yaml"
COUNTS = ("threads", "ranks per domain", "ranks", "GPUs")


# Per benchmark: whether its results hold a spread, and the figures that draw it as a band.
def _column_filled(*columns: str):
    return lambda df: set(columns) <= set(df.columns) and df[columns[0]].notna().any()


SPREAD = {"gpu_xfer": (lambda df: "repetition" in df and df["repetition"].nunique() > 1,
                       ("gpu_bandwidth", "gpu_latency")),
          "latency": (_column_filled("latency_ns_min", "latency_ns_max"), ("latency_vs_size",)),
          "bandwidth": (_column_filled("min_mb_s"), ("bandwidth_vs_threads",)),
          "migrate": (lambda df: "repetition" in df and df["repetition"].nunique() > 1, ("migrate_vs_size",))}
RESULTS: dict[str, Path] = {}     # each case's results folder, as the fixture wrote it

CASES = {**{f"example-{p.name}": (lambda tmp, p=p: p) for p in EXAMPLES},
         **{f"measured-{p.name}": (lambda tmp, p=p: p) for p in MEASURED},
         "synthetic": lambda tmp: model.write_results(tmp / "results" / "twin"),
         # LUMI-G's campaign: interleaved and sequential ranks over 1, 2 and 4 nodes, two CCDs a node
         "campaign-lumi-g": lambda tmp: model.write_sweep(tmp / "results" / "lumi-g", LUMI_G,
                                                          topology.load(ROOT / "config" / "arch" / "lumi-g.yaml")),
         "default-sweep": lambda tmp: model.write_default_sweep(tmp / "results" / "desk"),
         # the tiered campaign: page migration between DRAM and CXL, and the copies of the same pairs
         "campaign-tiered": lambda tmp: model.write_sweep(tmp / "results" / "cxl-example", TIERED,
                                                          topology.load(ROOT / "config" / "arch" / "cxl-example.yaml"))}


@pytest.fixture(scope="module", params=sorted(CASES))
def drawn(request, tmp_path_factory) -> list[tuple[str, str, str, object]]:
    """(bench, kind, variant, Figure) for every figure the case's results support."""
    tmp = tmp_path_factory.mktemp(request.param)
    results = CASES[request.param](tmp)
    RESULTS[request.param] = Path(results)
    got = draw_recorded(results, tmp / "fig")
    FOLDERS[request.param] = tmp / "fig"
    assert got, f"{request.param}: no figure drawn"
    return got


data_lines = figures.data_lines
FOLDERS: dict[str, Path] = {}     # each case's figure folder, as draw_all left it


def results_table(request, bench: str) -> pd.DataFrame | None:
    """The case's `<bench>.csv`, None where it has none."""
    path = RESULTS[request.node.callspec.params["drawn"]] / f"{bench}.csv"
    return pd.read_csv(path) if path.exists() else None


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


def test_each_line_has_its_own_colour(drawn) -> None:
    """Two ranks of one L3 group told apart by colour, not by a marker alone."""
    for bench, kind, variant, ax in every_axes(drawn):
        colours = [to_hex(line.get_color()) for line in data_lines(ax)]
        assert len(colours) == len(set(colours)), f"{where(bench, kind, variant, ax)}: two lines share a colour {colours}"


# The results' own names, which a title or a legend says in words: a configuration named "all", a
# domain list as "domains 0", the placement strategies' keys, column names.
CODE_WORDS = re.compile(r"(^|, )all(,|$)|\bdomains \d|(^|, )(sequential|interleaved)(,|$)|\w_\w")


def test_titles_and_legends_are_words(drawn) -> None:
    for bench, kind, variant, fig in drawn:
        texts = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
        for ax in fig.axes:
            if ax.get_legend():
                texts += [t.get_text() for t in ax.get_legend().get_texts()] + [ax.get_legend().get_title().get_text()]
        for text in texts:
            assert not CODE_WORDS.search(text), f"{bench}/{kind}--{variant}: code words in {text!r}"


def test_line_styles_are_explained_in_the_legend(drawn) -> None:
    """LUMI-G's dashed lines (a node's second L3 group) say so in the legend's title."""
    for bench, kind, variant, ax in every_axes(drawn):
        styles = {line.get_linestyle() for line in data_lines(ax)}
        if len(styles) < 2:
            continue
        title = ax.get_legend().get_title().get_text() if ax.get_legend() else ""
        missing = [figures.STYLE_WORDS[s] for s in styles if figures.STYLE_WORDS[s] != "solid"
                   and figures.STYLE_WORDS[s] not in title]
        assert not missing, f"{where(bench, kind, variant, ax)}: {missing} lines, legend title {title!r}"


def test_a_small_change_never_fills_the_axis(drawn) -> None:
    """Rank scaling's 144.79 to 145.60 ns (0.5 %) is not a diagonal across the whole axis: every
    value axis spans ANCHOR around its lines' median at least, bands included."""
    for bench, kind, variant, ax in every_axes(drawn):
        lines = data_lines(ax)
        if not lines:
            continue
        values = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in lines])
        values = values[np.isfinite(values)]
        median = float(np.median(values))
        lo, hi = sorted(ax.get_ylim())
        assert lo <= (1 - figures.ANCHOR) * median + 1e-9 and hi >= (1 + figures.ANCHOR) * median - 1e-9, \
            f"{where(bench, kind, variant, ax)}: axis {lo:.4g}..{hi:.4g} around a median of {median:.4g}"
        for band in (c for c in ax.collections if isinstance(c, PolyCollection)):
            ys = np.concatenate([path.vertices[:, 1] for path in band.get_paths()] or [[]])
            ys = ys[np.isfinite(ys)]
            assert not ys.size or (lo <= ys.min() + 1e-9 and ys.max() <= hi + 1e-9), \
                f"{where(bench, kind, variant, ax)}: a band {ys.min():.4g}..{ys.max():.4g} beyond the axis {lo:.4g}..{hi:.4g}"


def test_4k_and_huge_pages_share_a_figure_where_both_were_measured(drawn, request) -> None:
    latency = results_table(request, "latency")
    if latency is None or "page_size" not in latency:
        return
    pages = {str(p).lower() for p in latency["page_size"].dropna()}
    if not (pages & levels.BASE_PAGES and pages - levels.BASE_PAGES):
        return
    legends = [{t.get_text() for t in fig.axes[0].get_legend().get_texts()}
               for bench, kind, _, fig in drawn if (bench, kind) == ("latency", "latency_pages")]
    assert any(any("4 KiB" in t for t in texts) and any("huge" in t for t in texts) for texts in legends), \
        f"page kinds {sorted(pages)} measured, no figure draws 4 KiB and huge pages together: {legends}"


def test_a_figure_folder_only_for_a_benchmark_with_results(drawn, request) -> None:
    """No empty folder for the benchmarks that did not run (c2c, gpu_xfer, ... on a desktop)."""
    case = request.node.callspec.params["drawn"]
    folders = {p.name for p in FOLDERS[case].iterdir()}
    tables = {b for b in registry.names() if (RESULTS[case] / f"{b}.csv").exists()}
    assert folders == tables, f"figure folders {sorted(folders)}, results of {sorted(tables)}"


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
    df = results_table(request, "gpu_xfer")
    if df is None:
        return
    measured = {d.words for d in GPU_DIRECTIONS if d.bandwidth in df and df[d.bandwidth].notna().any()}
    for bench, kind, variant, fig in drawn:
        if (bench, kind) == ("gpu_xfer", "gpu_bandwidth"):
            panels = {ax.get_title() for ax in fig.axes}
            assert measured <= panels, f"{kind}--{variant}: {sorted(measured - panels)} not drawn"


def test_gpu_panels_share_one_scale(drawn) -> None:
    """Both directions at once read against one alone (pageable bidirectional is about half)."""
    for bench, kind, variant, fig in drawn:
        if (bench, kind) in (("gpu_xfer", "gpu_bandwidth"), ("gpu_xfer", "gpu_latency")):
            limits = {tuple(np.round(ax.get_ylim(), 9)) for ax in fig.axes}
            assert len(limits) == 1, f"{kind}--{variant}: panels on {sorted(limits)}"


def test_a_matrix_cell_without_a_value_says_not_measured(drawn) -> None:
    for bench, kind, variant, ax in every_axes(drawn):
        for image in ax.get_images():
            values = image.get_array()
            if max(values.shape) > 16:      # colours only: no cell has text
                continue
            said = sum(t.get_text().replace("\n", " ") == figures.NOT_MEASURED for t in ax.texts)
            assert said == int(np.ma.getmaskarray(values).sum()), \
                f"{where(bench, kind, variant, ax)}: {int(np.ma.getmaskarray(values).sum())} empty cells, {said} say so"


def test_a_latency_matrix_cell_never_mixes_l3_groups(drawn, request) -> None:
    """LUMI-G: a node's two CCDs (1.5x apart when all ranks run) are rows of their own wherever
    one node's ranks of a configuration sit in two L3 groups."""
    latency = results_table(request, "latency")
    if latency is None or not {"cpu_node", "mem_nodes", "l3_group"} <= set(latency.columns):
        return
    mixed = {variant for variant, part in lat_tables.latency_configs(lat_tables.latency_table(latency))
             if (part.groupby(["cpu_node", "mem_nodes"])["l3_group"].nunique() > 1).any()}
    for bench, kind, variant, ax in every_axes(drawn):
        if (bench, kind) == ("latency", "latency_matrix") and variant in mixed:
            rows = [t.get_text() for t in ax.get_yticklabels()]
            assert rows and all("L3 group" in r for r in rows), f"{where(bench, kind, variant, ax)}: rows {rows}"


def test_a_figure_says_what_it_left_out_and_marks_what_is_noisy(drawn, request) -> None:
    """Each figure draws what the findings rest on: where its benchmark had jobs measured while
    disturbed, it says under it that it left them out (and none says so otherwise); a figure
    with a line marked noisy says what the mark means."""
    frames = aggregate.load_results(RESULTS[request.node.callspec.params["drawn"]])
    _, left = disturbed.split(frames)
    for bench, kind, variant, fig in drawn:
        note = fig._supxlabel.get_text() if fig._supxlabel else ""
        mine = [r for r in left if r.bench == bench]
        assert ("Left out: the jobs measured while disturbed" in note) == bool(mine), f"{bench}/{kind}--{variant}"
        labels = [line.get_label() for ax in fig.axes for line in data_lines(ax)]
        assert (figures.NOISY_NOTE in note) == any(label.endswith(figures.NOISY_MARK) for label in labels), \
            f"{bench}/{kind}--{variant}"
