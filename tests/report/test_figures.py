"""Figures: every kind drawn from data that supports it, nothing where the data is absent."""

from __future__ import annotations

import struct
from pathlib import Path

import pandas as pd
import pytest

from helpers.synthetic import latency_frame, topology, write_results
from numasweep.reporting import figures
from numasweep.results import tables
from numasweep.benches.bandwidth import figures as bw_figures
from numasweep.benches.bandwidth import tables as bw_tables
from numasweep.benches import copy as copy_bench
from numasweep.benches.latency import figures as lat_figures
from numasweep.benches.latency import tables as lat_tables
from numasweep.core import registry


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.mark.slow
def test_every_kind_is_drawn_as_png_and_svg(full_results: Path, tmp_path: Path) -> None:
    paths = figures.draw_all(full_results, tmp_path / "fig")
    kinds = {figures.figure_kind(p) for p in paths}
    assert kinds == {
        "latency_vs_size", "concurrent_vs_serial", "latency_matrix", "bandwidth_vs_threads",
        "bandwidth_matrix", "copy_matrix", "gpu_bandwidth", "gpu_latency",
    }
    for png in [p for p in paths if p.suffix == ".png"]:
        width, height = png_size(png)
        assert width >= 600 and height >= 400, f"{png.name} is {width}x{height}"
        svg = png.with_suffix(".svg")
        assert svg in paths and b"<svg" in svg.read_bytes()[:1000]
    # each figure is filed under its benchmark
    assert {p.parent.name for p in paths} == {"latency", "bandwidth", "copy", "gpu_xfer"}
    assert sorted(kind for kind in kinds if kind not in registry.captions()) == []


def test_absent_benchmarks_draw_nothing(tmp_path: Path) -> None:
    results = write_results(tmp_path / "res", benches=("latency",))
    paths = figures.draw_all(results, tmp_path / "fig")
    assert paths and {p.parent.name for p in paths} == {"latency"}
    # a folder for each benchmark with a table (the workflow's outputs), none for the others
    assert [p.name for p in (tmp_path / "fig").iterdir()] == ["latency"]


def test_single_mode_has_no_concurrent_vs_serial(tmp_path: Path) -> None:
    df = latency_frame(modes=("serial",))
    assert lat_figures.plot_concurrent_vs_serial(df, topology(), tmp_path) == []
    assert [figures.figure_kind(p) for p in lat_figures.plot_latency_vs_size(df, topology(), tmp_path)] == [
        "latency_vs_size", "latency_vs_size"]


def test_single_size_has_no_curve_but_a_matrix(tmp_path: Path) -> None:
    df = latency_frame(sizes=[512 << 20])
    assert lat_figures.plot_latency_vs_size(df, topology(), tmp_path) == []
    assert lat_figures.plot_latency_matrix(df, topology(), tmp_path) != []


def test_cache_markers_come_from_the_topology() -> None:
    marks = dict(lat_figures.cache_markers(topology()))
    # a core fills the L3 of its own group (4 MiB), never the 8 MiB of its node's two groups
    assert marks == {32768: "L1d 32KiB (per core)", 512 * 1024: "L2 512KiB (per core)",
                     4 << 20: "L3 4MiB (per L3 group, 2 cores)"}
    assert lat_figures.cache_markers(None) == []


def test_memory_node_from_pages_then_request() -> None:
    assert tables.memory_node("0:0.0000,3:1.0000") == 3
    assert tables.memory_node("0:0.5000,3:0.5000", "0,3") is None
    assert tables.memory_node("", "2") == 2
    assert tables.memory_node(float("nan"), 1.0) == 1


def test_lumi_g_example_curves_and_cache_lines(repo: Path, tmp_path: Path) -> None:
    example = repo / "examples" / "lumi-g"
    assert (example / "latency.csv").exists(), "examples/lumi-g/latency.csv is missing"
    paths = figures.draw_all(example, tmp_path)
    names = sorted(p.name for p in paths if p.suffix == ".png")
    assert "latency_vs_size--concurrent.png" in names and "latency_vs_size--serial.png" in names
    assert "concurrent_vs_serial--all.png" in names
    svg = (tmp_path / "latency" / "latency_vs_size--concurrent.svg").read_text()
    # the 32 MiB L3 a core can use (its own CCD's) is marked on the curve, named short; a node's
    # 64 MiB over two CCDs is no capacity of one core, so it is not
    assert "L3 32MiB" in svg and "L3 64MiB" not in svg and "per node" not in svg


@pytest.mark.slow
def test_cli_writes_figures(repo: Path, full_results: Path, tmp_path: Path) -> None:
    from numasweep.__main__ import main

    assert main(["figures", "--results", str(full_results), "-o", str(tmp_path / "f")]) == 0
    assert list((tmp_path / "f" / "copy").glob("*.png"))
    with pytest.raises(SystemExit):
        main(["figures", "--results", str(full_results)])
    assert main(["figures", "--results", str(tmp_path / "nowhere"), "-o", str(tmp_path / "g")]) == 2


def test_corrupt_csv_names_the_file(tmp_path: Path, capsys) -> None:
    from numasweep.__main__ import main

    results = write_results(tmp_path / "res", benches=("latency",))
    (results / "copy.csv").write_text('src_node,dst_node\n1,"2\n')
    assert main(["figures", "--results", str(results), "-o", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("numasweep: error:") and "copy.csv" in err and len(err.splitlines()) == 1


def test_bandwidth_without_kernel_name_still_plots(tmp_path: Path) -> None:
    from helpers.synthetic import bandwidth_frame

    df = bandwidth_frame()
    df["kernel"] = float("nan")
    paths = bw_figures.plot_bandwidth_vs_threads(df, None, tmp_path)
    assert [p.name for p in paths] == ["bandwidth_vs_threads--kernel-not-recorded.png",
                                       "bandwidth_vs_threads--kernel-not-recorded.svg"]


def test_latency_curves_carry_a_band_from_the_sample_range() -> None:
    import matplotlib.pyplot as plt

    df = latency_frame()
    df["latency_ns_min"] = df["latency_ns_median"] * 0.9
    df["latency_ns_max"] = df["latency_ns_median"] * 1.2
    table = lat_tables.latency_table(df)           # the sample range, median over repetitions, with each point
    assert (table["latency_ns_max"] / table["latency_ns_median"]).round(6).eq(1.2).all()
    (_, part), *_ = lat_tables.latency_configs(table)
    fig, ax = plt.subplots()
    lat_figures.plot_rank_curves(ax, part, "latency_ns_median", None)
    assert len(ax.collections) == part["rank"].nunique()           # one band per rank's line
    fig2, ax2 = plt.subplots()
    lat_figures.plot_rank_curves(ax2, lat_tables.latency_table(df.drop(columns=list(lat_tables.SPREAD))), "latency_ns_median",
                             None)
    assert not ax2.collections
    plt.close(fig)
    plt.close(fig2)


def test_a_fleet_draws_each_rank_once_its_median_over_the_nodes_and_their_range() -> None:
    """Three hosts of one configuration (model data: the same curves, host b 10 % slower, host c
    20 % faster): one line per rank at the hosts' median (host a's values), the band from the
    fastest host to the slowest, and the legend says over how many nodes."""
    import matplotlib.pyplot as plt

    base = latency_frame(modes=("concurrent",))
    hosts = [base.assign(host=h, latency_ns_median=base["latency_ns_median"] * f) for h, f in
             (("a", 1.0), ("b", 1.1), ("c", 0.8))]
    part = lat_tables.latency_table(pd.concat(hosts, ignore_index=True))
    fig, ax = plt.subplots()
    lat_figures.plot_rank_curves(ax, part, "latency_ns_median", None)
    ranks = base["rank"].nunique()
    assert len(ax.lines) == ranks and len(ax.collections) == ranks
    by_rank = base.sort_values("size_bytes").groupby("rank")["latency_ns_median"]
    for line, (rank, values) in zip(ax.lines, by_rank):
        assert line.get_label().startswith(f"rank {rank} ") and line.get_label().endswith("median of 3 nodes")
        assert list(line.get_ydata()) == pytest.approx(list(values))
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    first = by_rank.get_group(0)
    assert band.min() == pytest.approx(first.min() * 0.8) and band.max() == pytest.approx(first.max() * 1.1)
    plt.close(fig)


def test_bandwidth_lines_carry_a_band_down_to_the_slowest_iteration(tmp_path: Path) -> None:
    """numa_bandwidth's min_mb_s (slowest timed iteration) gives each line a band below it."""
    from helpers.synthetic import bandwidth_frame

    df = bandwidth_frame()
    table = bw_tables.bandwidth_table(df)
    assert (table["min_mb_s"] / table["best_mb_s"]).round(6).eq(0.9).all()
    for name, frame in (("with", df), ("without", df.drop(columns=["min_mb_s"]))):
        paths = bw_figures.plot_bandwidth_vs_threads(frame, None, tmp_path / name)
        svgs = [p.read_text() for p in paths if p.suffix == ".svg"]
        assert svgs and all(("PolyCollection" in svg) == (name == "with") for svg in svgs), name


def test_copies_of_two_configurations_never_share_a_matrix(tmp_path: Path) -> None:
    """Two labelled sweeps of the same copies (or memory specs, systems): a matrix each, figure
    and raw table, never one median over both."""
    from helpers.synthetic import copy_frame


    fast, slow = copy_frame().assign(label="fast"), copy_frame().assign(label="slow")
    slow["best_gb_s"] /= 2
    both = pd.concat([fast, slow], ignore_index=True)
    paths = copy_bench.plot_copy_matrix(both, None, tmp_path)
    assert sorted(p.name for p in paths if p.suffix == ".png") == ["copy_matrix--fast.png", "copy_matrix--slow.png"]
    tables = copy_bench.copy_raw_tables(both)
    assert [t["title"] for t in tables] == ["Copy bandwidth (GB/s; the median over runs), threads on node 0, 4 threads, 256 MiB, fast",
                                            "Copy bandwidth (GB/s; the median over runs), threads on node 0, 4 threads, 256 MiB, slow"]
    assert "| 0 | 20.00 | 12.50 |" in tables[0]["table"] and "| 0 | 10.00 | 6.25 |" in tables[1]["table"]
    # one configuration: the file and titles as before
    assert [p.name for p in copy_bench.plot_copy_matrix(fast, None, tmp_path / "one")][0] == "copy_matrix--all.png"


def test_a_figure_of_one_configuration_is_named_without_all(tmp_path: Path) -> None:
    """Its text in the report reads "concurrent vs serial", never "concurrent vs serial, all"."""
    from numasweep.reporting import report

    (tmp_path / "fig" / "latency").mkdir(parents=True)
    for name in ("concurrent_vs_serial--all.png", "latency_vs_size--serial-4-kib-pages.png"):
        (tmp_path / "fig" / "latency" / name).write_bytes(b"")
    alts = sorted(e["alt"] for e in report.figure_entries(tmp_path / "fig", "latency", tmp_path / "report.md"))
    assert alts == ["concurrent vs serial", "latency vs size, serial 4 kib pages"]
