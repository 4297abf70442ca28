"""What a reader takes away from the summary of each measured sweep (tests/fixtures/measured,
with the physical truth of each in its README): every level read on its own curve's plateau on
three CPU families (Zen 2, Zen 4, Xeon), never at a size the topology alone names, no cache row
carrying a memory-level value, DRAM on memory's plateau, and nothing drawn or concluded from a
job measured while disturbed. The rules are the same for every family; none is tuned to one."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from numasweep.findings import analysis
from numasweep.reporting import figures, report
from numasweep.results import aggregate

from helpers.drawn import draw_recorded

MEASURED = Path(__file__).resolve().parents[1] / "fixtures" / "measured"


def headline(folder: Path, tmp_path: Path) -> dict[str, tuple[str, str]]:
    text = report.render(folder, analysis.analyse(folder), None, tmp_path / "r.md").read_text()
    summary = text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in summary.splitlines()
            if line.startswith("| ") and not line.startswith(("| measured", "| :---"))]
    return {r[0]: (r[1], r[2]) for r in rows}


def ns(value: str) -> float:
    return float(value.split()[0].replace(",", ""))


def level(rows: dict[str, tuple[str, str]], name: str) -> tuple[str, tuple[str, str]]:
    (found,) = [(k, v) for k, v in rows.items() if k.startswith(name)]
    return found


def no_cache_row_is_memory(rows: dict[str, tuple[str, str]]) -> None:
    for quantity, (value, _) in rows.items():
        if re.match(r"L\d\w? \(", quantity) and value.endswith(" ns"):
            assert ns(value) < 60, (quantity, value)


@pytest.fixture(scope="module")
def latency_only(tmp_path_factory):
    """A fixture folder of job files only (xeon-host), aggregated as the workflow does."""
    def make(name: str) -> Path:
        folder = tmp_path_factory.mktemp(name)
        shutil.copy(MEASURED / name / "topology.json", folder / "topology.json")
        csvs = sorted(str(p) for p in (MEASURED / name / "latency").glob("*.csv"))
        assert aggregate.main(["--bench", "latency", "-o", str(folder / "latency.csv"), *csvs]) == 0
        return folder
    return make


def test_zen4_levels_are_read_on_their_plateaus(tmp_path) -> None:
    rows = headline(MEASURED / "zen4-vm", tmp_path)
    no_cache_row_is_memory(rows)
    name, (value, interval) = level(rows, "L1d (32 KiB per core) latency")
    assert "32 KiB" in name and 1.0 <= ns(value) <= 1.3 and "(3 runs)" in interval
    name, (value, _) = level(rows, "L2 (1 MiB per core) latency")
    assert "at 256 KiB (its plateau from 64 KiB)" in name and 3.6 <= ns(value) <= 4.3, (name, value)
    name, (value, _) = level(rows, "L3 (32 MiB per L3 group, 2 cores) latency")
    assert "its plateau from 2 MiB" in name and 14 <= ns(value) <= 17, (name, value)
    # the short plateau said in words, where the curve leaves it
    assert "leaves it at 4 MiB to 8 MiB, far below the 32 MiB" in name, name
    name, (value, _) = level(rows, "DRAM latency, local memory")
    assert "transparent huge pages" in name and 160 <= ns(value) <= 180, (name, value)


def test_zen4_rise_out_of_the_l3_share_is_not_the_tlb(tmp_path) -> None:
    """Huge pages rise from 4 to 8 MiB as 4 KiB pages do: no rise is given to the TLB, and the
    4 KiB curve's says the huge-page run rises alike, never that one would tell them apart."""
    found = analysis.analyse(MEASURED / "zen4-vm")["findings"]
    steps = [f for f in found if f["id"] == "cache_threshold" and f["numbers"]["from_size_bytes"] == 4 << 20]
    assert steps and not any(f["numbers"]["kind"] == "tlb" for f in steps)
    small = [f for f in steps if f["numbers"]["page_size"] == "4k" and "1 rank" in f["title"]]
    assert small and all("rises alike at these sizes, so it is not the TLB's reach" in f["summary"] for f in small)
    assert not any("tells the two apart" in f["summary"] for f in small)


def test_zen4_disturbed_job_is_in_no_finding_and_no_figure(tmp_path) -> None:
    """The 2-rank concurrent job (rank 1 on its CPU 32% of the time): no finding rests on it, no
    figure draws it, and every latency figure says it left it out; the noisy bandwidth lines are
    marked, and so are their headline values, each with its interval."""
    found = analysis.analyse(MEASURED / "zen4-vm")["findings"]
    assert [f for f in found if f["id"] == "not_concluded"]
    assert not [f for f in found if f["id"] != "not_concluded" and "2 ranks, 2 per domain" in f["title"]
                and "concurrent" in f["title"]]
    got = draw_recorded(MEASURED / "zen4-vm", tmp_path / "fig")
    assert not [v for b, _, v, _ in got if b == "latency" and "concurrent" in v and "2 ranks" in v]
    assert not [k for b, k, _, _ in got if b == "latency" and k in ("concurrent_vs_serial", "rank_scaling")]
    for bench, kind, variant, fig in got:
        note = fig._supxlabel.get_text() if fig._supxlabel else ""
        if bench == "latency":
            assert "Left out: the jobs measured while disturbed (2 ranks, 2 per domain, concurrent" in note, variant
        if bench in ("bandwidth", "copy"):
            labels = [line.get_label() for ax in fig.axes for line in figures.data_lines(ax)]
            assert labels and all(label.endswith(figures.NOISY_MARK) for label in labels), (kind, labels)
            assert figures.NOISY_NOTE in note
    rows = headline(MEASURED / "zen4-vm", tmp_path)
    (add,) = [v for k, v in rows.items() if k.startswith("add, best bandwidth")]
    assert add[0].endswith(report.NOISY_MARK) and "(3 runs)" in add[1]


def test_zen2_levels_are_read_on_their_plateaus(tmp_path) -> None:
    rows = headline(MEASURED / "zen2-vm", tmp_path)
    no_cache_row_is_memory(rows)
    name, (value, _) = level(rows, "L3 (16 MiB per L3 group, 2 cores) latency")
    assert 12 <= ns(value) <= 14.5 and "4 MiB" in name, (name, value)
    # the reference chase and multichase gave 131-133 ns at 256 MiB with huge pages
    name, (value, _) = level(rows, "DRAM latency, local memory")
    assert "transparent huge pages" in name and 125 <= ns(value) <= 140, (name, value)


def test_xeon_guest_l3_has_no_plateau_and_dram_is_memorys(tmp_path) -> None:
    """The Xeon guest reaches memory by 32 MiB under a reported 480 MiB L3: the L3 row has no
    value and says why; DRAM about 170-180 ns with huge pages."""
    rows = headline(MEASURED / "xeon-vm", tmp_path)
    no_cache_row_is_memory(rows)
    _, (value, why) = level(rows, "L3 (480 MiB per L3 group, 2 cores) latency")
    assert value == "no plateau" and "far below the 480 MiB" in why, (value, why)
    name, (value, _) = level(rows, "L1d (48 KiB per core) latency")
    assert ns(value) < 2
    name, (value, _) = level(rows, "DRAM latency, local memory")
    assert "transparent huge pages" in name and 165 <= ns(value) <= 190, (name, value)


def test_xeon_host_l3_share_and_the_tlb_rise(tmp_path, latency_only) -> None:
    """The host guest: huge pages hold near 40 ns from 2 to 8 MiB under a reported 300 MiB L3 (cut
    short, said so), memory 120-130 ns from 16 MiB; the 4 KiB curve's rise from 1 to 2 GiB, which
    its huge-page twin does not show, is the TLB's, never unexplained."""
    folder = latency_only("xeon-host")
    rows = headline(folder, tmp_path)
    no_cache_row_is_memory(rows)
    name, (value, _) = level(rows, "L3 (300 MiB per L3 group, 16 cores) latency")
    assert 35 <= ns(value) <= 50 and "leaves it at 8 MiB to 16 MiB" in name, (name, value)
    name, (value, _) = level(rows, "DRAM latency, local memory")
    assert 120 <= ns(value) <= 135, (name, value)
    found = analysis.analyse(folder)["findings"]
    (walks,) = [f for f in found if f["id"] == "cache_threshold" and f["numbers"]["from_size_bytes"] == 1 << 30]
    assert walks["numbers"]["kind"] == "tlb" and "nothing in the topology explains" not in walks["summary"]
