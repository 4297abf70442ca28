"""Series identity (numasweep.results.series): runs that differ in any series column stay apart in every
table, figure and finding; only repetitions are pooled."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.synthetic import MiB, bandwidth_frame, gpu_frame, latency_frame, write_results
from numasweep.core import registry
from numasweep.findings import analysis
from numasweep.reporting import figures, report
from numasweep.results import series, tables
from numasweep.benches.bandwidth import tables as bw_tables
from numasweep.benches.latency import tables as lat_tables


def render(results: Path, out: Path) -> tuple[str, dict, list[Path]]:
    findings = analysis.analyse(results)
    paths = figures.draw_all(results, out / "figures")
    md = report.render(results, findings, out / "figures", out / "report.md")
    return md.read_text(), findings, paths


def titles_unique(findings: dict) -> None:
    titles = [f["title"] for f in findings["findings"]]
    assert len(titles) == len(set(titles)), sorted(t for t in titles if titles.count(t) > 1)


def render_bandwidth(tmp_path: Path, frames: list[pd.DataFrame]) -> tuple[str, dict, list[Path]]:
    """Render a results folder whose bandwidth.csv holds `frames`; every finding title unique."""
    folder = tmp_path / "results" / "twin"
    write_results(folder, benches=())
    pd.concat(frames).to_csv(folder / "bandwidth.csv", index=False)
    out = render(folder, tmp_path / "out")
    titles_unique(out[1])
    return out


def latency_tables(text: str) -> list[list[list[str]]]:
    """Each "Latency (ns per load; ...)" raw table of the report, as rows of cells."""
    tables = []
    for block in re.split(r"\n(?=\*\*|#+ )", text):
        if "Latency (ns per load;" not in block:
            continue
        rows = [[c.strip() for c in line.strip("|").split("|")]
                for line in block.splitlines() if line.startswith("| ") and "---" not in line]
        tables.append(rows[1:])
    return tables


def test_strategies_with_one_rank_count_render_apart(tmp_path):
    """Same rank count, different CPUs (sequential vs interleaved, one vs two domains): one raw
    table per configuration, each rank once, and the report renders."""
    frames = []
    for strategy, domains, cpus in (("sequential", "0", [1, 2]), ("interleaved", "0,1", [1, 5])):
        df = latency_frame(modes=("concurrent",))
        df = df[df["rank"] < 2].copy()
        df["cpu"] = df["rank"].map(dict(enumerate(cpus)))
        df["cpu_node"] = (df["cpu"] >= 4).astype(int)
        df["ranks"], df["strategy"], df["domains"] = 2, strategy, domains
        df["latency_ns_median"] += 5.0 * (strategy == "interleaved")
        frames.append(df)
    folder = tmp_path / "results" / "twin"
    write_results(folder, benches=())
    pd.concat(frames).to_csv(folder / "latency.csv", index=False)
    text, findings, paths = render(folder, tmp_path / "out")
    tables = latency_tables(text)
    assert len(tables) == 2
    for rows in tables:
        ranks = [r[0] for r in rows]
        assert len(ranks) == len(set(ranks)) == 2
    assert len([p for p in paths if p.name.startswith("latency_vs_size") and p.suffix == ".png"]) == 2
    titles_unique(findings)


def test_rank_counts_stay_apart(tmp_path):
    """The default sweep's 1-rank and 2-rank runs, both modes: every table, figure and finding
    names one rank count."""
    frames = []
    for ranks in (1, 2):
        df = latency_frame()
        df = df[df["rank"] < ranks].copy()
        df["ranks"] = ranks
        # sharing the machine costs the 2-rank runs 20% in concurrent mode
        if ranks == 2:
            df.loc[df["mode"] == "concurrent", "latency_ns_median"] *= 1.2
        frames.append(df)
    folder = tmp_path / "results" / "twin"
    write_results(folder, benches=())
    pd.concat(frames).to_csv(folder / "latency.csv", index=False)
    text, findings, paths = render(folder, tmp_path / "out")
    titles_unique(findings)
    for rows in latency_tables(text):
        ranks = [r[0] for r in rows]
        assert len(ranks) == len(set(ranks))
    ratio = [p for p in paths if p.name.startswith("concurrent_vs_serial") and p.suffix == ".png"]
    assert sorted(p.stem.split("--")[1] for p in ratio) == ["1-rank", "2-ranks"]
    steps = [f for f in findings["findings"] if f["id"] == "cache_threshold"]
    assert steps and all(f["numbers"]["config"] in f["title"] for f in steps)
    # the planted 20% appears for the 2-rank runs only (on top of the formula tables' 1.5x on the
    # first L3 group from 64 MiB on)
    modes = {(f["numbers"]["config"], f["numbers"]["l3_position"]): f["numbers"]["max_ratio"]
             for f in findings["findings"] if f["id"] == "mode_divergence" and "config" in f["numbers"]}
    assert modes == pytest.approx({("1 rank", 0): 1.5, ("2 ranks", 0): 1.8, ("2 ranks", 1): 1.2}, rel=0.01)


def test_bandwidth_array_sizes_stay_apart(tmp_path):
    """A second bandwidth sweep with another array size is its own series everywhere: the plan
    gives it a label of its own (two sweeps of one job id need one), and the label names it."""
    small = bandwidth_frame().assign(label="64MiB")
    big = bandwidth_frame().assign(label="256MiB")
    big["array_bytes"] = 256 * MiB
    big["best_mb_s"] *= 0.5
    text, findings, paths = render_bandwidth(tmp_path, [small, big])
    table = bw_tables.bandwidth_table(pd.concat([small, big]))
    assert len(table) == len(small) + len(big)
    peaks = sorted(f["numbers"]["peak_mb_s"] for f in findings["findings"] if f["id"] == "bandwidth_saturation")
    assert peaks == sorted([8000.0 * 3, 10000.0 * 3, 4000.0 * 3, 5000.0 * 3])
    assert len([p for p in paths if p.name.startswith("bandwidth_vs_threads") and p.suffix == ".png"]) == 2


def test_gpu_counts_stay_apart(tmp_path):
    """1 GPU at 20 GiB/s and 2 GPUs at 10 GiB/s each: two plateaus, not one of 10."""
    one = gpu_frame()
    one = one[one["policy"] == "bind"].copy()
    one["read_bw(gib/s)"] = 20.0
    two = pd.concat([one.assign(gpu=g) for g in (0, 1)])
    two["ngpus"], two["read_bw(gib/s)"] = 2, 10.0
    folder = tmp_path / "results" / "twin"
    write_results(folder, benches=())
    pd.concat([one, two]).to_csv(folder / "gpu_xfer.csv", index=False)
    text, findings, _ = render(folder, tmp_path / "out")
    titles_unique(findings)
    reads = {(f["numbers"]["ngpus"], f["numbers"]["gpu"]): f["numbers"]["plateau_gib_s"]
             for f in findings["findings"] if f["id"] == "gpu_plateau" and f["numbers"]["direction"] == "read"}
    assert reads == {("1", "0"): 20.0, ("2", "0"): 10.0, ("2", "1"): 10.0}


def test_point_table_pools_repetitions_only():
    df = latency_frame(modes=("serial",))
    again = df.assign(repetition=1, latency_ns_median=df["latency_ns_median"] + 2)
    other = df.assign(label="second")
    table = series.point_table(pd.concat([df, again, other]), "latency", ["latency_ns_median"])
    assert len(table) == 2 * len(df)
    assert "repetition" not in registry.get("latency").identity
    assert series.REPETITION not in series.point_columns(table, "latency")


@pytest.mark.slow
def test_bandwidth_store_variants_stay_apart_and_are_named(tmp_path):
    """Regular and non-temporal stores of one kernel are two series: two figures, two findings,
    both named in the report."""
    regular = bandwidth_frame().assign(stores="regular")
    nt = bandwidth_frame().assign(stores="nt")
    nt["best_mb_s"] *= 1.4
    text, findings, paths = render_bandwidth(tmp_path, [regular, nt])
    assert len(bw_tables.bandwidth_table(pd.concat([regular, nt]))) == len(regular) + len(nt)
    peaks = sorted(f["numbers"]["peak_mb_s"] for f in findings["findings"] if f["id"] == "bandwidth_saturation")
    assert peaks == sorted(p * s for p in (8000.0 * 3, 10000.0 * 3) for s in (1.0, 1.4))
    assert len([p for p in paths if p.name.startswith("bandwidth_vs_threads") and p.suffix == ".png"]) == 2
    assert re.search(r"\bnt\b", text) and "regular" in text


def test_configuration_names_say_what_each_number_counts() -> None:
    """Ranks per domain and the rank count both vary: a variant reads "2 ranks, 1 per domain", never
    "1-2 ranks" (whose first number says nothing of what it counts), and one rank says no more; the
    domains are the NUMA nodes they are ("nodes 0,1", not "domains 0,1")."""
    rows = [{"mode": "concurrent", "ranks_per_domain": per, "ranks": per * domains, "domains": "0,1"[:2 * domains - 1],
             "rank": 0, "size_bytes": MiB, "latency_ns_median": 90.0}
            for per in (1, 2) for domains in (1, 2)]
    names = [v for v, _ in lat_tables.latency_configs(lat_tables.latency_table(pd.DataFrame(rows)))]
    assert sorted(names) == ["concurrent, node 0, 1 rank", "concurrent, node 0, 2 ranks, 2 per domain",
                             "concurrent, nodes 0,1, 2 ranks, 1 per domain",
                             "concurrent, nodes 0,1, 4 ranks, 2 per domain"], names


def test_each_benchmarks_own_columns_are_named_as_its_record_says() -> None:
    """A benchmark's own series columns are read and named from its record (`Tables.numeric`,
    `sizes`, `words`): a node pair, a GPU count and a size say what their numbers are."""
    assert series.value_name("src_node", 3) == "source node 3"
    assert series.value_name("dst_node", 1.0) == "destination node 1"
    assert series.value_name("ngpus", 2) == "2 GPUs"
    assert series.value_name("chase_node", 0) == "chase node 0"
    assert series.value_name("load_bytes", str(1 << 30)) == "1 GiB"
    assert series.value_name("threads", 1) == "1 thread"
    assert "src_node" in series.numeric("copy") and "src_node" not in series.numeric("latency")
    table = series.normalise(pd.DataFrame({"src_node": ["1", None], "dst_node": [0, 1], "bytes": [4096, 4096]}), "copy")
    assert table["src_node"].tolist() == [1, -1]


def test_categorical_identities_hold_the_same_text_and_group_in_the_same_order():
    """normalise's text columns are categorical; they and the joined or per-row categoricals read
    as the text columns they replace, and group in text order (as text would)."""
    df = pd.DataFrame({"mode": ["serial", "concurrent", None, "serial", "b"],
                       "mem_nodes": ["0,1", 1.0, float("nan"), "1", "10"],
                       "repetition": [0, 1, 2, 0, 1], "frac": [0.5, 1.0, float("nan"), 0.1 + 0.2, 2.0],
                       "size_bytes": [1, 2, 3, 4, 5], "latency_ns_median": [1.0, 2, 3, 4, 5]})
    norm = series.normalise(df, "latency")
    assert isinstance(norm["mode"].dtype, pd.CategoricalDtype)
    assert norm["mode"].astype(object).tolist() == series.labels(df["mode"]).tolist()
    assert norm["mem_nodes"].astype(object).tolist() == ["0,1", "1", "", "1", "10"]
    assert list(norm.groupby("mem_nodes").groups) == sorted({"0,1", "1", "", "10"})
    cols = ["mode", "repetition", "frac", "mem_nodes"]
    keyed = norm.assign(frac=df["frac"].fillna(-1.5))    # keys as groupings have them: no NaN
    assert series.joined(keyed, cols, categorical=True).astype(object).tolist() == \
        series.joined(keyed, cols).tolist()
    assert tables.node_lists(df["mem_nodes"], categorical=True).astype(object).tolist() == \
        tables.node_lists(df["mem_nodes"]).tolist()
    local = series.row_codes(pd.DataFrame({"cpu_node": [0, 1, 1, 0, 1], "mem_nodes": ["0", "0", "", "0", "1"]}),
                             tables.locality)
    assert local.astype(object).tolist() == ["local", "1->0", "local", "local", "local"]
    points = series.point_table(df, "latency", ["latency_ns_median"])
    assert all(not isinstance(points[c].dtype, pd.CategoricalDtype) for c in points)


def test_keys_of_one_value_come_back_as_the_grouped_keys_would():
    """point_table leaves out of its grouping the keys with one value in the table
    (`series.constant_keys`) and puts them back: the rows, columns, their order and types are
    those of the same rows taken from a table where those keys vary."""
    df = latency_frame(modes=("serial", "concurrent")).assign(label="first")
    wider = pd.concat([df, df.assign(label="second", ranks=df["ranks"] + 1, policy="interleave")], ignore_index=True)

    def own(table: pd.DataFrame) -> pd.DataFrame:
        return table[table["label"].astype(str) != "second"].reset_index(drop=True)

    for one, many in ((series.point_table(df, "latency", ["latency_ns_median"]),
                       series.point_table(wider, "latency", ["latency_ns_median"])),):
        many = own(many)
        assert list(one.columns) == list(many.columns)
        assert [str(t) for t in one.dtypes] == [str(t) for t in many.dtypes]
        pd.testing.assert_frame_equal(one, many)
    # nothing varies: one group, the keys still there
    single = df[(df["mode"] == "serial") & (df["size_bytes"] == df["size_bytes"].min())].head(1)
    point = series.point_table(single, "latency", ["latency_ns_median"])
    assert len(point) == 1 and point["mode"].tolist() == ["serial"]
