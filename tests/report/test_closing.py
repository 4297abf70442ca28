"""The block a run that wrote the report ends with (numasweep.reporting.closing): the report's
path, three rows of its headline table with the report's own numbers, memory's latency first,
and what was not concluded with how to measure it again; every line under 160 characters. Data:
the measured curves of the Zen 4 guest (one job disturbed) and the Xeon guest (none)."""

from __future__ import annotations

from pathlib import Path

from numasweep.findings import analysis
from numasweep.reporting import closing, report

MEASURED = Path(__file__).resolve().parents[1] / "fixtures" / "measured"


def block(name: str, tmp_path: Path) -> tuple[list[str], str]:
    results = MEASURED / name
    md = report.render(results, analysis.analyse(results), None, tmp_path / "experimentation.md")
    return closing.lines(md, f"results/{name}"), md.read_text()


def test_the_closing_block_says_the_report_s_numbers_and_what_it_left_unconcluded(tmp_path: Path) -> None:
    lines, text = block("zen4-vm", tmp_path)
    assert lines[0] == f"numasweep: report: {tmp_path / 'experimentation.md'}" and all(len(x) < 160 for x in lines)
    rows = lines[1:4]
    assert rows[0].startswith("numasweep:   DRAM latency, local memory: ") and all(" GB/s" in r for r in rows[1:]), rows
    assert "| 176 ns |" in text and "176 ns; 171 to 182 ns (3 runs)" in rows[0], rows[0]
    assert lines[4].startswith("numasweep: not concluded, measured while disturbed: latency, 2 ranks"), lines
    assert lines[5].startswith("numasweep: to measure them again, delete their CSVs under results/zen4-vm/")


def test_a_report_without_disturbed_jobs_says_every_series_was_concluded(tmp_path: Path) -> None:
    lines, _ = block("xeon-vm", tmp_path)
    assert len(lines) == 5 and lines[-1] == "numasweep: every series concluded: none was measured while disturbed"
