"""One quantity, one value (helpers.quantities): every shipped example and measured fixture,
rendered with its findings, prints each point it gives twice with the same value, and each
headline ratio is the quotient of the values beside it; a planted mismatch is found."""

from __future__ import annotations

from pathlib import Path

import pytest

from numasweep.findings import analysis
from numasweep.reporting import report

from helpers import quantities

REPO = Path(__file__).resolve().parents[2]
FOLDERS = sorted({p.parent for p in [*REPO.glob("examples/*/*.csv"), *REPO.glob("tests/fixtures/measured/*/*.csv")]})
ZEN4 = REPO / "tests" / "fixtures" / "measured" / "zen4-vm"


def rendered(folder: Path, tmp_path: Path) -> str:
    return report.render(folder, analysis.analyse(folder), None, tmp_path / "r.md").read_text()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_report_prints_one_value_per_quantity(folder: Path, tmp_path: Path) -> None:
    text = rendered(folder, tmp_path)
    assert quantities.disagreements(text) == []


def test_the_check_covers_the_quantities_a_sweep_repeats(tmp_path: Path) -> None:
    """The Zen 4 sweep prints its bandwidth and copy points, and its one-rank latency levels, in
    two places or more: all are compared."""
    assert quantities.compared(rendered(ZEN4, tmp_path)) >= 4 * 2 + 2 + 4


def test_a_planted_mismatch_is_found(tmp_path: Path) -> None:
    text = rendered(ZEN4, tmp_path)
    (triad,) = [line for line in text.splitlines() if line.startswith("| triad, best bandwidth, local memory |")]
    value = triad.split("|")[2]
    planted = text.replace(triad, triad.replace(value, value.replace("37.0", "36.4", 1), 1))
    found = quantities.disagreements(planted)
    assert any("('bandwidth', 'triad', 2)" in line and "36.4" in line for line in found), found
    # a raw table's latency cell changed: the headline and the step beside it disagree with it
    row = next(line for line in text.splitlines() if line.startswith("| 0 | 0 | 0 | 0 | 1.12 |"))
    found = quantities.disagreements(text.replace(row, row.replace("| 16.36 |", "| 17.36 |")))
    assert any("'4 MiB'" in line for line in found), found
