"""Every figure `figures.draw_all` draws for a results folder, recorded where it is saved (`save`,
patched in every module that imported it) and drawn for real (matplotlib's Agg), so that a test
reads exactly what the PNGs show."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from numasweep.reporting import figures


def draw_recorded(results: Path, figdir: Path, **options) -> list[tuple[str, str, str, object]]:
    """(bench, kind, variant, Figure) of every figure drawn from `results` into `figdir`."""
    got: list = []
    original = figures.save

    def record(fig, where, bench, kind, variant):
        got.append((bench, kind, variant, fig))
        return original(fig, where, bench, kind, variant)

    patched = [m for m in list(sys.modules.values())
               if getattr(m, "__name__", "").startswith("numasweep") and getattr(m, "save", None) is original]
    mp = pytest.MonkeyPatch()
    for module in patched:
        mp.setattr(module, "save", record)
    try:
        figures.draw_all(results, figdir, **options)
    finally:
        mp.undo()
    return got
