"""The summary's latency levels against planted truth (helpers.synthetic's `plant`): on datasets of
every processor family, noise level and grid the generator draws, each level the headline reads
is read where the planted curve holds that level (its noiseless latency there within reach of the
planted level's), with the value the runs give; no cache row carries a memory-level value; DRAM is
read on memory's plateau; and a last level that the core gets only a share of (a virtual
machine's, `llc_bytes`) is said cut short or passed by, never given memory's latency."""

from __future__ import annotations

import re

import numpy as np
import pytest

from numasweep.benches.latency import report as lat_report
from helpers import synthetic as truth

LEVELS = {"L1d": 0, "L2": 1, "L3": 2}
SIZE = re.compile(r"at (\d+(?:\.\d+)?) ([KMGT])iB")
SHIFT = {"K": 10, "M": 20, "G": 30, "T": 40}


def _rows(p) -> list[tuple[str, str, float | None, int | None]]:
    """(level, quantity, value in ns or None, size read in bytes or None) of each latency row."""
    out = []
    for quantity, value, _ in lat_report.headline(p.table, p.topology):
        name = quantity.split(" ", 1)[0]
        if name not in LEVELS and not quantity.startswith("DRAM latency, local memory"):
            continue
        size = SIZE.search(quantity)
        out.append(("DRAM" if name == "DRAM" else name, quantity,
                    float(value.split()[0].replace(",", "")) if value.endswith(" ns") else None,
                    round(float(size.group(1)) * (1 << SHIFT[size.group(2)])) if size else None))
    return out


def _truth_at(p, quantity: str, size: int) -> float:
    """The planted noiseless latency of the serial curve the row names (its page kind) at a size."""
    page = "4k" if "4 KiB pages" in quantity else "2m"
    curve = p.curves[("serial", page, 0)]
    return float(np.interp(np.log2(size), np.log2(p.sizes.astype(float)), curve))


@pytest.mark.parametrize("seed", range(35))
def test_each_level_is_read_on_the_planted_plateau(seed) -> None:
    family = truth.FAMILIES[seed % len(truth.FAMILIES)]
    p = truth.plant(np.random.default_rng(500 + seed), family)
    rows = _rows(p)
    assert any(level == "DRAM" for level, *_ in rows), rows
    lat = family.latency_ns
    for level, quantity, value, size in rows:
        if value is None:
            continue
        planted = _truth_at(p, quantity, size)
        # the value is the runs' at that size (within the noise), and the size is on the level's plateau
        assert value == pytest.approx(planted, rel=max(0.08, 4 * p.noise)), (family.name, quantity, value, planted)
        if level == "DRAM":
            assert planted >= 0.8 * lat[3], (family.name, quantity, planted)
        else:
            i = LEVELS[level]
            assert planted <= lat[i] + 0.35 * (lat[i + 1] - lat[i]), (family.name, quantity, planted, lat)
            assert value < 60, (family.name, quantity, value)


@pytest.mark.parametrize("seed", range(6))
def test_a_share_of_the_last_level_is_said_and_never_given_memorys_latency(seed) -> None:
    """The core gets 4 or 8 x its L2 of the last level while the topology reports the whole L3:
    the L3 row is cut short (read on the share's plateau, said to leave it far below the reported
    size) or has no plateau; either way no memory-level value."""
    family = truth.FAMILIES[seed % 3]          # Zen 2 to Zen 4: an L3 per CCX/CCD a VM gets part of
    p = truth.plant(np.random.default_rng(700 + seed), family, llc_bytes=(4 if seed % 2 else 8) * family.l2,
                    max_bytes=1 << 30)
    found = [(q, v, size) for level, q, v, size in _rows(p) if level == "L3"]
    assert found, _rows(p)
    ((quantity, value, _),) = found
    # read on the share's plateau, said to leave it far below the reported size; or no plateau
    assert value is None or (value < 60 and "far below" in quantity), (family.name, quantity, value)
