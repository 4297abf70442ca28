"""Fixtures for the report tests: a results folder with every benchmark."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.synthetic import write_results


@pytest.fixture
def full_results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "results" / "twin")
