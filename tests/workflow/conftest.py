"""Fixtures of the workflow tests: a fresh copy of the repository per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from workflow_helpers import copy_repo


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: minutes long (a documented command that installs and measures the default sweep, "
        "or runs on a SLURM cluster)")


@pytest.fixture
def repo_copy(repo: Path, tmp_path: Path) -> Path:
    return copy_repo(repo, tmp_path / "numasweep")
