"""Fixtures for the report tests: a results folder with every benchmark."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_data import write_results  # noqa: E402


@pytest.fixture
def full_results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "results" / "twin")
