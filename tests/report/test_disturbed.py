"""A job measured while disturbed never becomes a finding, a headline value or an export: the
report opens with it, lists its series as not concluded, and compare passes or fails nothing on
it (numasweep.results.disturbed). The Zen 2 sweep (tests/fixtures/measured/zen2-vm) with one job
marked as its provenance verdict would mark it, and with the kernel's own CPU share alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from numasweep.findings import analysis
from numasweep.reporting import compare, report
from numasweep.results import aggregate, disturbed, store

REPO = Path(__file__).resolve().parents[2]
ZEN2 = REPO / "tests" / "fixtures" / "measured" / "zen2-vm"
ONE_RANK = "lat-sequential-d0-r1-local-concurrent-rep0"


def _marked(tmp_path: Path, how: str) -> Path:
    folder = tmp_path / how
    shutil.copytree(ZEN2, folder)
    table = pd.read_csv(folder / "latency.csv")
    hit = table["job_id"] == ONE_RANK
    if how == "verdict":
        table["quality"] = ["disturbed" if h else "quiet" for h in hit]
        table["quality_reason"] = ["rank 0 ran on its CPU 3% of a sample's time" if h else "" for h in hit]
    else:
        table.loc[hit, "on_cpu_pct"] = 3.0
    table.to_csv(folder / "latency.csv", index=False)
    return folder


@pytest.mark.parametrize("how", ["verdict", "cpu share"])
def test_a_disturbed_job_is_not_concluded_and_the_report_opens_with_it(tmp_path: Path, how: str) -> None:
    folder = _marked(tmp_path, how)
    found = analysis.analyse(folder)["findings"]
    (left,) = [f for f in found if f["id"] == "not_concluded"]
    assert ONE_RANK in left["summary"] and "3% of a sample's time" in left["summary"] and not left["numbers"]["claim"]
    # no finding of the disturbed series: its L3 exit and the TLB pair it made are gone
    assert not [f for f in found if f["id"] == "tlb_cost"]
    assert not [f for f in found if f["id"] == "cache_threshold" and f["numbers"]["config"] == "1 rank"
                and f["numbers"]["page_size"] == "4k"]
    text = report.render(folder, {"findings": found}, None, tmp_path / f"{how}.md").read_text()
    head = "\n".join(text.splitlines()[:14])
    assert "Measured while disturbed: not concluded" in head and "1 rank, concurrent, 4 KiB pages" in head, head
    assert "3% of a sample's time" in head


def test_a_quiet_sweep_says_nothing_of_disturbance(tmp_path: Path) -> None:
    found = analysis.analyse(ZEN2)["findings"]
    assert not [f for f in found if f["id"] == "not_concluded"]
    text = report.render(ZEN2, {"findings": found}, None, tmp_path / "quiet.md").read_text()
    assert "disturbed" not in text.split("## Summary")[0]
    frames, left = disturbed.split({"latency": pd.read_csv(ZEN2 / "latency.csv")})
    assert not left and len(frames["latency"]) == len(pd.read_csv(ZEN2 / "latency.csv"))


def test_compare_passes_or_fails_nothing_measured_while_disturbed(tmp_path: Path) -> None:
    folder = _marked(tmp_path, "verdict")
    db = tmp_path / "store.db"
    store.record(ZEN2, db, "zen2")
    result = compare.compare(folder, [], db, "previous", 0.1, None, "zen2")
    assert result["disturbed"] and "3% of a sample's time" in result["disturbed"][0]
    assert "Measured while disturbed, so neither passed nor failed" in result["markdown"]
    assert all("1 rank" not in r["series"] or "4 KiB" not in r["series"] or r["bench"] != "latency"
               for r in result["series"]), result["series"]


def test_conclude_disturbed_draws_the_findings_and_says_so(tmp_path: Path) -> None:
    """config conclude_disturbed (an emulated machine, a test rig): the findings come from every
    job, and the report's first lines name the disturbed ones all the same."""
    folder = _marked(tmp_path, "verdict")
    found = analysis.analyse(folder, conclude_disturbed=True)["findings"]
    assert not [f for f in found if f["id"] == "not_concluded"] and [f for f in found if f["id"] == "tlb_cost"]
    text = report.render(folder, {"findings": found}, None, tmp_path / "concluded.md", conclude_disturbed=True)
    head = "\n".join(text.read_text().splitlines()[:14])
    assert "concluded all the same" in head and "3% of a sample's time" in head, head


def test_a_headline_value_that_rests_on_a_noisy_job_is_marked_and_footnoted(tmp_path: Path) -> None:
    """The one-thread bandwidth job of the Zen 2 sweep noisy: the bandwidth rows that use it carry
    the mark, and a footnote under the table says what it means; the latency rows, on quiet jobs
    only, carry none."""
    folder = tmp_path / "noisy"
    shutil.copytree(ZEN2, folder)
    table = pd.read_csv(folder / "bandwidth.csv")
    hit = table["job_id"] == "bw-c0-local-t1-rep0"
    table["quality"] = ["noisy" if h else "quiet" for h in hit]
    table["quality_reason"] = ["a thread ran on its CPU 70% of a sample's time" if h else "" for h in hit]
    table.to_csv(folder / "bandwidth.csv", index=False)
    text = report.render(folder, {"findings": []}, None, tmp_path / "noisy.md").read_text()
    summary = text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in summary.splitlines() if line.startswith("| ")]
    marked = [r for r in rows if report.NOISY_MARK in r]
    assert marked and all(", best bandwidth, local memory |" in r for r in marked), marked
    assert not any(report.NOISY_MARK in r for r in rows if "latency" in r)
    assert f"\n{report.NOISY_MARK} Rests on a noisy series" in summary
    quiet = report.render(ZEN2, {"findings": []}, None, tmp_path / "quiet.md").read_text()
    assert report.NOISY_MARK not in quiet


def test_every_bandwidth_job_noisy_marks_the_measured_rows_not_an_unknown_peak(tmp_path: Path) -> None:
    """All bandwidth jobs noisy: every measured row carries the mark; the theoretical bandwidth of a
    machine whose DIMMs are not listed, unknown, rests on no series and carries none."""
    folder = tmp_path / "all-noisy"
    shutil.copytree(ZEN2, folder)
    table = pd.read_csv(folder / "bandwidth.csv")
    table["quality"], table["quality_reason"] = "noisy", "a thread ran on its CPU 70% of a sample's time"
    table.to_csv(folder / "bandwidth.csv", index=False)
    topology = aggregate.load_topology(ZEN2)
    rows = [r for r in report.headline_rows({"bandwidth": table}, topology) if r[0].startswith(("triad", "theoretical"))]
    assert rows and all(report.NOISY_MARK in r[1] for r in rows if r[1] != "unknown"), rows
    assert ["unknown"] == [r[1] for r in rows if r[0].startswith("theoretical")], rows


def test_a_disturbed_point_of_a_series_is_named_by_its_point() -> None:
    """The two-thread job of the Zen 2 bandwidth series disturbed and the one-thread job noisy: the
    two lists name each job's point, not only the series both belong to."""
    table = pd.read_csv(ZEN2 / "bandwidth.csv")
    two = table["job_id"] == "bw-c0-local-t2-rep0"
    table["quality"] = ["disturbed" if h else "noisy" for h in two]
    table["quality_reason"] = "a thread ran on its CPU 30% of a sample's time"
    _, left = disturbed.split({"bandwidth": table})
    noisy = disturbed.noisy({"bandwidth": table})
    assert left and all(r.series.endswith("2 threads") for r in left), [r.sentence() for r in left]
    assert noisy and all(r.series.endswith("1 thread") for r in noisy), [r.sentence() for r in noisy]
    assert "1 job disturbed" in left[0].sentence()


def test_a_benchmark_every_job_of_which_was_disturbed_is_said_in_the_headline(tmp_path: Path) -> None:
    folder = tmp_path / "all-disturbed"
    shutil.copytree(ZEN2, folder)
    table = pd.read_csv(folder / "latency.csv")
    table["quality"], table["quality_reason"] = "disturbed", "rank 0 ran on its CPU 3% of a sample's time"
    table.to_csv(folder / "latency.csv", index=False)
    text = report.render(folder, {"findings": []}, None, tmp_path / "all.md").read_text()
    summary = text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]
    assert "| memory latency | not concluded | every job measured while disturbed" in summary, summary
    assert "best bandwidth" in summary


def test_figures_and_raw_tables_of_a_disturbed_series_say_it_beside_them(tmp_path: Path) -> None:
    """The figures leave a disturbed job out (each of its benchmark's figures says so under it,
    tests/analysis/test_measured_headlines.py), the raw tables list it as measured: the section
    that shows the figures and the raw tables say which series were left out of what; a quiet
    sweep says nothing of it."""
    from numasweep.reporting import figures

    folder = _marked(tmp_path, "verdict")
    figdir = tmp_path / "figures"
    figures.draw_all(folder, figdir)
    assert not list((figdir / "latency").glob("latency_vs_size--concurrent-1-rank-4-kib*.png"))
    text = report.render(folder, analysis.analyse(folder), figdir, tmp_path / "r.md").read_text()
    said = [part.split("\n", 1)[0] for part in text.split("\n## ")[1:]
            if "leave out the jobs measured while disturbed (1 rank, concurrent, 4 KiB pages)" in part
            and "the raw tables list them as measured" in part]
    assert "Caches" in said and "Raw results" in said, said
    quiet = report.render(ZEN2, analysis.analyse(ZEN2), figdir, tmp_path / "q.md").read_text()
    assert "measured while disturbed" not in quiet
