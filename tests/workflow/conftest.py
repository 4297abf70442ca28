"""Fixtures of the workflow tests: a fresh copy of the repository per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.workflow import copy_repo


@pytest.fixture
def repo_copy(repo: Path, tmp_path: Path) -> Path:
    return copy_repo(repo, tmp_path / "numasweep")
