"""The summary says a thing once: findings alike but for their series (a kernel, a mode, a rank
count, a page size) are one line, every series' number with its interval listed and the range over
them, and the claims audit (`audit.summary_problems`, run by every report) refuses a composed line
whose numbers are not its findings' own. Data: the measured curves of tests/fixtures/measured
(Zen 2, Zen 4, Xeon guests and a Xeon host); the Zen 4 guest's four bandwidth kernels each rise
with threads."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from numasweep.findings import analysis, audit
from numasweep.reporting import report

MEASURED = Path(__file__).resolve().parents[1] / "fixtures" / "measured"


def lines_of(name: str) -> list[dict]:
    found = report.prepared_findings(analysis.analyse(MEASURED / name))
    return report.summary_lines([f for f in found if f["headline"]])


@pytest.fixture(scope="module")
def zen4() -> list[dict]:
    return lines_of("zen4-vm")


def rise(lines: list[dict]) -> dict:
    found = [x for x in lines if x["title"].startswith("Rise with threads")]
    assert len(found) == 1, [x["title"] for x in lines]
    return found[0]


def test_the_kernels_rise_with_threads_is_one_line_naming_each_with_its_interval(zen4: list[dict]) -> None:
    line = rise(zen4)
    assert line["merged"] == 4
    for kernel in ("add", "copy", "scale", "triad"):
        assert re.search(rf"\b{kernel}: \d+\.\d\dx, 95% interval \d+\.\d\dx to \d+\.\d\dx", line["summary"]), line
    assert audit.summary_problems(zen4) == []


def test_a_number_that_is_not_its_findings_own_is_refused(zen4: list[dict]) -> None:
    line = copy.deepcopy(rise(zen4))
    name, f = line["members"][0]
    own = re.search(rf"{re.escape(name)}: (\d+\.\d\d)x", line["summary"])
    wrong = f"{float(own[1]) + 0.37:.2f}"
    line["summary"] = line["summary"].replace(own.group(0), f"{name}: {wrong}x", 1)
    problems = audit.summary_problems([line])
    assert problems and any(name in p for p in problems), problems


def test_a_range_that_is_not_the_least_to_the_most_is_refused(zen4: list[dict]) -> None:
    line = copy.deepcopy(rise(zen4))
    lo = re.search(r"rises (\d+\.\d\d)x to", line["summary"])
    line["summary"] = line["summary"].replace(lo.group(0), f"rises {float(lo[1]) - 0.2:.2f}x to", 1)
    assert any("least to the most" in p for p in audit.summary_problems([line]))


def test_a_series_left_unsaid_is_refused(zen4: list[dict]) -> None:
    line = copy.deepcopy(rise(zen4))
    gone = re.compile(r"; triad: [^;)]*")
    line["summary"] = gone.sub("", line["summary"])
    assert audit.summary_problems([line]), line["summary"]


def test_every_measured_machine_s_summary_passes_its_own_audit() -> None:
    for folder in sorted(p for p in MEASURED.iterdir() if list(p.glob("*.csv"))):
        assert audit.summary_problems(lines_of(folder.name)) == [], folder.name
