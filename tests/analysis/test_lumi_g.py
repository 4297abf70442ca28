"""The LUMI-G example (examples/lumi-g), read through levels and contrasts: the findings of the
seed's tables, each now with an interval."""

from __future__ import annotations

import pandas as pd
import pytest

from numasweep.statistics import contrasts
from numasweep.benches.common import LATENCY
from numasweep.benches.latency import levels
from numasweep.core import topology

GiB = 1 << 30


@pytest.fixture(scope="module")
def lumi(repo):
    topo = topology.load(repo / "examples/lumi-g/topology.json")
    table = pd.read_csv(repo / "examples/lumi-g/latency.csv")
    # each rank's L3 group as its place among its node's groups: the first CCD of every node alike
    position = topo.l3_positions()
    return topo, table.assign(l3_position=[position.get(int(g), -1) for g in table["l3_group"]])


def test_l3_transition_found_once_per_mode_and_no_per_node_l3(lumi):
    topo, table = lumi
    caps = levels.usable_capacities(topo)
    assert max(c.size_bytes for c in caps) == 32 << 20          # one CCD's L3, not 2 x 32 MiB
    lv = levels.latency_levels(table, topo, ["mode", "page_size"], ["rank"], where="latency.csv")
    for curve in lv.curves:
        l3 = [t for t in curve.transitions if t.capacity_bytes == 32 << 20]
        assert len(l3) == 1, curve.series
        t = l3[0]
        assert t.label.startswith("L3 (per L3 group")
        assert t.from_size_bytes <= 16 << 20 and t.to_size_bytes >= 64 << 20    # 16 -> 32 -> 64 MiB is one rise
        assert t.ratio.low > 1.2 and t.location_bytes.low < 64 << 20 < t.location_bytes.high * 2
        assert all(x.capacity_bytes != 64 << 20 for x in curve.transitions)


def test_concurrent_ccd_asymmetry_serial_symmetry_and_the_node0_inversion(lumi):
    _, table = lumi
    asym = {c.series["mode"]: c for c in contrasts.contrast(table, "l3_position", 0, 1, ["cpu_node"], ["mode"],
                                                            measure=LATENCY, where="latency.csv")}
    conc = asym["concurrent"]
    assert (conc.plateau_from_bytes, conc.plateau_to_bytes) == (1 * GiB, 8 * GiB)
    iv = conc.plateau_ratio
    assert 1.40 < iv.estimate < 1.55 and iv.low > 1.3      # the seed: about 47 % from 1 to 8 GiB
    ser = asym["serial"]
    assert not ser.differs and ser.equivalent
    inv = [d for d in contrasts.deviations(list(asym.values())) if d.inversion]
    assert [(d.series["mode"], d.unit["cpu_node"], d.size_bytes) for d in inv] == [("concurrent", "0", 16 * GiB)]
    assert inv[0].ratio < 1 < inv[0].others_ratio and inv[0].relative.high < 1


def test_divergence_onset_on_the_first_ccd_only(lumi):
    _, table = lumi
    div = {c.series["l3_position"]: c
           for c in contrasts.contrast(table, "mode", "concurrent", "serial", ["rank"], ["l3_position"],
                                       measure=LATENCY, where="latency.csv")}
    first, second = div[0], div[1]
    assert first.onset_bytes is not None and 256 << 20 <= first.onset_bytes <= 2 * GiB
    assert first.onset.low <= first.onset_bytes <= first.onset.high
    assert first.plateau_ratio.low > 1.3
    assert not second.differs and second.equivalent
