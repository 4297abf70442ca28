"""The summary opens with the headline: a table of what a user came for (latency per level and
DRAM, best bandwidth per kernel at each thread count with its scaling), taken from the tables,
then the findings, where findings alike but for their mode or rank count are said once.

On the default sweep of the model workstation (helpers.synthetic): DRAM at 80 ns with huge pages,
12 GB/s a thread (THREAD_MB_S)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from numasweep.benches.bandwidth import report as bw_report
from numasweep.benches.latency import report as lat_report
from numasweep.findings import analysis
from numasweep.reporting import report

from helpers import synthetic as model


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> str:
    results = model.write_default_sweep(tmp_path_factory.mktemp("desk") / "results" / "desk")
    findings = analysis.analyse(results)
    text = report.render(results, findings, None, results.parent / "experimentation.md").read_text()
    return text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]


def rows(summary: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for line in summary.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}


def test_the_headline_table_comes_first(summary) -> None:
    body = [line for line in summary.splitlines() if line.strip()]
    first = next(i for i, line in enumerate(body) if line.startswith("|"))
    assert not any(line.startswith("- ") for line in body[:first])   # no finding before the table
    table = rows(summary)
    (dram,) = [v for k, v in table.items() if k.startswith("DRAM latency, local memory")]
    assert dram[0].endswith(" ns") and float(dram[0][:-3]) == pytest.approx(model.DRAM_NS, rel=0.05)
    assert dram[1] == "one run: no interval"
    levels = [k.split(" ")[0] for k in table if re.match(r"L\d\w? \(.*\) latency", k)]
    assert levels == ["L1d", "L2", "L3"]


def test_bandwidth_at_one_and_two_threads_with_its_scaling(summary) -> None:
    (triad,) = [v for k, v in rows(summary).items() if k.startswith("triad, best bandwidth")]
    match = re.fullmatch(r"([\d.]+) GB/s at 1 thread, ([\d.]+) at 2 threads \(([\d.]+)x\)", triad[0])
    assert match, triad
    one, two, ratio = map(float, match.groups())
    assert one == pytest.approx(model.THREAD_MB_S / 1000, rel=0.05)
    assert two == pytest.approx(2 * model.THREAD_MB_S / 1000, rel=0.05)
    assert ratio == pytest.approx(two / one, abs=0.02)


def test_no_two_summary_lines_say_the_same_thing_about_identical_runs(summary) -> None:
    bullets = [line for line in summary.splitlines() if line.startswith("- **")]
    assert bullets
    # a claim's title without the series it was made on: said once
    claims = [re.sub(r" \([^()]*\)\*\*:.*", "", b) for b in bullets]
    claims = [re.sub(r"\*\*:.*", "", c) for c in claims]
    stated = [c for c in claims if not c.startswith("- **Rank scaling")]   # concurrent 1.30x, serial 1.00x: two claims
    assert len(stated) == len(set(stated)), bullets
    merged = [b for b in bullets if "the same in" in b and "concurrent" in b and "serial" in b]
    assert merged and all(re.search(r"step ratio [\d.]+x( to [\d.]+x| in each)", b) for b in merged)


@pytest.mark.parametrize("example, expect", [
    ("h100-vm", r"GPU copies host to device, pinned host memory, GPU 0 \(GiB/s, 2\^30 bytes/s\) \| [\d.]+ GiB/s \| [\d.]+ to [\d.]+ GiB/s \(3 runs\)"),
    ("ulisse", r"STREAM, best bandwidth, local memory \| [\d.]+ GB/s at 1 thread, peak [\d.]+ at \d+ threads \([\d.]+x\)"),
    ("ulisse", r"NUMA ratio, STREAM bandwidth threads on node 0, memory on node 1 / local"),
    # the L3 read on its plateau (2 to 8 MiB), over the 8 ranks of one run each
    ("lumi-g", r"L3 \(32 MiB per L3 group, 8 cores\) latency, at 8 MiB \(its plateau from 2 MiB\) \| [\d.]+ ns \| "
               r"[\d.]+ to [\d.]+ ns \(8 ranks\)"),
    ("lumi-g-remote", r"DRAM latency, CPUs on node 0, memory on node 3, at 512 MiB, 4 KiB pages \| [\d.]+ ns"),
])
def test_every_example_has_its_headline(repo, tmp_path, example, expect) -> None:
    text = report.render(repo / "examples" / example, {"findings": []}, None, tmp_path / "r.md").read_text()
    assert re.search(expect, text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0])


def test_the_summary_says_ranks_pages_and_caches_in_words(summary) -> None:
    assert "L2 (1 MiB per core)" in summary and "(per core) (" not in summary
    assert "4 KiB pages" in summary and "with 4k pages" not in summary
    assert "2 ranks, 2 per domain" in summary and "1 per domain, 1 rank" not in summary
    assert not re.search(r"\b1 threads\b", summary)


def test_a_level_the_curve_passes_by_at_memory_latency_has_no_plateau() -> None:
    """A VM's curve reaches memory latency at 4 MiB, far below the 32 MiB L3 the topology reports:
    the L3's row says it has no plateau, and why, with no value; no cache row carries a memory
    value; the levels whose one size lies between two rises (a coarse grid) are said unread."""
    curve = {16 << 10: 1.2, 512 << 10: 4.95, 4 << 20: 108.0, 16 << 20: 150.0, 256 << 20: 165.0}
    table = pd.DataFrame([{"rank": 0, "ranks": 1, "mode": "concurrent", "page_size": "4k", "memory": "local",
                           "cpu_node": 0, "mem_nodes": "0", "repetition": rep, "size_bytes": size,
                           "latency_ns_median": ns * (1 + 0.01 * rep)} for rep in range(3) for size, ns in curve.items()])
    table_rows = {r[0]: r[1:] for r in lat_report.headline(table, model.workstation())}
    (l3,) = [v for k, v in table_rows.items() if k.startswith("L3")]
    assert l3[0] == "no plateau" and "reaches memory latency" in l3[1] and "far below the 32 MiB" in l3[1], l3
    for k, (value, _) in table_rows.items():
        if k.startswith(("L1d", "L2", "L3")):
            assert not value.endswith(" ns") or float(value.removesuffix(" ns")) < 60, (k, value)
    assert all(v[0] == "no plateau" for k, v in table_rows.items() if k.startswith(("L1d", "L2"))), table_rows


def test_each_level_is_read_on_its_plateau_never_at_a_size_from_the_topology() -> None:
    """The L2 (1 MiB) of a curve whose plateau is 3.9 ns from 64 to 256 KiB, rising on to 8 ns at
    512 KiB: read on the plateau, not at half the L2; an L3 plateau that ends at 4 MiB (memory
    from 8 MiB, far below the 32 MiB reported) read there and said cut short."""
    curve = {16 << 10: 1.1, 32 << 10: 1.2, 64 << 10: 3.9, 128 << 10: 3.9, 256 << 10: 3.95, 512 << 10: 5.6,
             1 << 20: 10.0, 2 << 20: 14.3, 4 << 20: 16.0, 8 << 20: 150.0, 16 << 20: 158.0, 64 << 20: 170.0,
             256 << 20: 176.0}
    table_rows = {r[0]: r[1:] for r in lat_report.headline(_curve_table(curve), model.workstation())}
    (l2,) = [(k, v) for k, v in table_rows.items() if k.startswith("L2")]
    assert "at 256 KiB (its plateau from 64 KiB)" in l2[0] and float(l2[1][0].removesuffix(" ns")) < 4.1, l2
    (l3,) = [(k, v) for k, v in table_rows.items() if k.startswith("L3")]
    assert "at 4 MiB (its plateau from 2 MiB)" in l3[0] and "leaves it at 4 MiB to 8 MiB" in l3[0], l3
    assert 14 <= float(l3[1][0].removesuffix(" ns")) <= 17
    (dram,) = [(k, v) for k, v in table_rows.items() if k.startswith("DRAM")]
    assert "at 256 MiB (its plateau from 8 MiB)" in dram[0] and float(dram[1][0].removesuffix(" ns")) > 170


def test_bandwidth_headline_from_categorical_columns() -> None:
    """A table read back from its .npz holds text as categoricals; the weights campaign's (memory
    on node 0, on node 3, and weighted over both) gives its rows, not a TypeError."""
    rows = [{"kernel": "triad", "threads": 1, "best_mb_s": bw + rep, "avg_mb_s": bw, "min_mb_s": bw - 10,
             "ntimes": 2, "cpu_node": 0, "cpu_nodes": "0", "memory": memory, "mem_nodes": mem,
             "policy": "weighted" if "," in mem else "bind", "repetition": rep, "job_id": f"{memory}-{rep}"}
            for rep in range(2)
            for memory, mem, bw in (("node:0", "0", 1500.0), ("node:3", "3", 800.0), ("weighted:0,3@2,1", "0,3", 1100.0))]
    df = pd.DataFrame(rows).astype({c: "category" for c in ("kernel", "cpu_nodes", "memory", "mem_nodes", "policy")})
    table = {row[0]: row[1:] for row in bw_report.headline(df, None)}
    assert table["triad, best bandwidth, local memory"][0] == "1.5 GB/s at 1 thread"
    assert table["NUMA ratio, triad bandwidth threads on node 0, memory on node 3 / local, 1 thread"][0] == "0.53x"
    # memory spread over nodes is no NUMA ratio: the row says what it is, a ratio to local
    weighted = "threads on node 0, memory weighted on nodes 0,3, weights 2,1 / local, 1 thread"
    assert table[f"ratio to local, triad bandwidth {weighted}"][0] == "0.73x", sorted(table)
    assert not any(k.startswith("NUMA ratio") and " on nodes " in k for k in table), sorted(table)


REPO = report.TEMPLATES.parents[1]
# the shipped examples and the measured fixtures that hold an aggregated table
SHIPPED = sorted({(str(p.parent.parent.relative_to(REPO)), p.parent.name)
                  for p in [*REPO.glob("examples/*/*.csv"), *REPO.glob("tests/fixtures/measured/*/*.csv")]})


@pytest.mark.parametrize("folder, name", SHIPPED)
def test_every_summary_row_is_in_a_unit_its_preamble_defines(repo, tmp_path, folder, name) -> None:
    """One convention per unit, said once above the table: every row's bandwidth is in a unit the
    preamble defines, as the preamble counts it, or the row says how it counts instead."""
    text = report.render(repo / folder / name, {"findings": []}, None, tmp_path / "r.md").read_text()
    summary = text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]
    preamble = summary.split("\n| ", 1)[0]
    table = rows(summary)
    table = {k: v for k, v in table.items() if k != "measured" and not k.startswith(":---")}
    assert table
    for quantity, (value, _) in table.items():
        unit = report.row_unit(value)
        if unit == "ns" or unit is None:
            assert unit or value.endswith("x") or value in ("unknown", "no plateau"), (quantity, value)
            continue
        assert report.UNIT_CONVENTIONS[unit] in " ".join(preamble.split()), (quantity, unit)
        assert "GiB/s" not in value or "GiB/s" in quantity, quantity   # said in the row and the preamble alike
        if quantity.startswith("node-to-node copy"):                   # numa_copy counts a byte once
            assert "counted once" in quantity and "as STREAM counts a copy" in value, quantity
    for unit, words in report.UNIT_CONVENTIONS.items():
        if words in preamble:
            assert any(report.row_unit(v) == unit for v, _ in table.values()), unit


def test_gpu_rates_are_those_of_large_copies_with_the_peak_named(repo, tmp_path) -> None:
    """h100-vm: pageable copies peak near 1 MiB and fall to about half at 256 MiB; the headline
    gives the 256 MiB rate, the peak beside it by name, directions in words, and copies both ways
    at once timed as one (pageable) in one row."""
    text = report.render(repo / "examples" / "h100-vm", {"findings": []}, None, tmp_path / "r.md").read_text()
    table = rows(text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0])
    (pageable,) = [v for k, v in table.items() if k.startswith("GPU copies host to device, pageable")]
    match = re.fullmatch(r"([\d.]+) GiB/s at 256 MiB; peak ([\d.]+) at 512 KiB to 1 MiB", pageable[0])
    # the peak: the median over the 3 runs of each run's median over 512 KiB and 1 MiB
    assert match and 8 < float(match[1]) < 10 and float(match[2]) == pytest.approx(16.4), pageable
    assert not any(" read" in k or " write" in k for k in table)
    both = [k for k in table if "both at once, pageable" in k]
    assert both == ["GPU copies each direction, both at once, pageable host memory, GPU 0 (GiB/s, 2^30 bytes/s)"]


def test_dram_latency_is_read_on_the_memory_plateau_before_the_page_walk_rise(repo, tmp_path) -> None:
    """LUMI-G: serial latency levels off at 104-113 ns from 1 GiB to 8 GiB and rises to about 130 ns
    at 16 GiB, a rise no cache explains (page-table walks): DRAM is read at 8 GiB, and the 16 GiB
    value is given as what it is."""
    text = report.render(repo / "examples" / "lumi-g", {"findings": []}, None, tmp_path / "r.md").read_text()
    table = rows(text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0])
    dram = {k: v for k, v in table.items() if k.startswith("DRAM latency, local memory")}
    assert len(dram) == 4 and all(k.endswith("at 8 GiB (its plateau from 256 MiB)") for k in dram), sorted(dram)
    # each node's value over its two ranks (its two L3 groups): ranks, not runs
    assert all(v[1].endswith("(2 ranks)") for v in dram.values()), dram
    assert all(104 <= float(v[0].removesuffix(" ns")) <= 116 for v in dram.values()), dram
    (walks,) = [(k, v) for k, v in table.items() if k.startswith("DRAM latency past the memory plateau")]
    assert "at 16 GiB" in walks[0] and "TLB-affected" in walks[0] and float(walks[1][0].removesuffix(" ns")) > 125


def _curve_table(curve: dict[int, float], remote: float | None = None) -> pd.DataFrame:
    """Three repetitions of one local latency curve (size -> ns), and the same on node 1's
    memory times `remote` where given."""
    return pd.DataFrame([{"rank": 0, "ranks": 1, "mode": "concurrent", "page_size": "4k", "memory": memory,
                          "cpu_node": 0, "mem_nodes": mem, "repetition": rep, "size_bytes": size,
                          "latency_ns_median": ns * factor * (1 + 0.01 * rep)}
                         for rep in range(3) for size, ns in curve.items()
                         for memory, mem, factor in [("local", "0", 1.0)] + ([("node:1", "1", remote)] if remote else [])])


def test_a_sweep_that_stops_inside_the_caches_claims_no_dram() -> None:
    """The model workstation's curve to 2 MiB (its L3 is 32 MiB): no row says DRAM or memory
    latency, the L2 is read on its plateau, the one size past its exit reads no L3, and no remote
    row gives a NUMA ratio of cache hits."""
    curve = {16 << 10: 1.5, 256 << 10: 3.9, 512 << 10: 4.0, 1 << 20: 6.0, 2 << 20: 12.0}
    table_rows = {r[0]: r[1:] for r in lat_report.headline(_curve_table(curve, remote=1.02), model.workstation())}
    assert not any("DRAM" in k or "memory latency" in k or k.startswith("NUMA ratio") for k in table_rows), table_rows
    (l2,) = [k for k in table_rows if k.startswith("L2")]
    assert l2.startswith("L2 (1 MiB per core) latency, at 512 KiB (its plateau from 256 KiB)"), l2
    assert not any(k.startswith("L3") and v[0].endswith(" ns") for k, v in table_rows.items()), table_rows
    (remote,) = [k for k in table_rows if "memory on node 1" in k]
    assert remote.startswith("Latency,") and "inside the caches" in remote, remote


def test_past_the_last_cache_the_memory_plateau_is_dram() -> None:
    """The same curve continued to 256 MiB, past the 32 MiB L3: DRAM on memory's plateau and the
    NUMA ratio from the two values printed beside it; to 1 MiB nothing is called memory."""
    curve = {16 << 10: 1.5, 512 << 10: 4.0, 2 << 20: 12.0, 16 << 20: 14.0, 64 << 20: 80.0, 256 << 20: 82.0}
    table_rows = {r[0]: r[1:] for r in lat_report.headline(_curve_table(curve, remote=1.5), model.workstation())}
    (local,) = [v for k, v in table_rows.items() if k.startswith("DRAM latency, local memory, at 256 MiB")]
    (remote,) = [v for k, v in table_rows.items() if k.startswith("DRAM latency, CPUs on node 0, memory on node 1")]
    ratio = table_rows["NUMA ratio, latency node 0 to node 1 / local"][0]
    assert ratio == "1.50x" and float(ratio[:-1]) == pytest.approx(
        float(remote[0].removesuffix(" ns")) / float(local[0].removesuffix(" ns")), abs=0.01)
    inside = {s: ns for s, ns in curve.items() if s <= 512 << 10} | {1 << 20: 6.0}
    table_rows = {r[0]: r[1:] for r in lat_report.headline(_curve_table(inside), model.workstation())}
    assert not any("DRAM" in k or "memory latency" in k for k in table_rows), table_rows
