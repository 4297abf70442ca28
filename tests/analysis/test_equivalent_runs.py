"""Equivalent experiments agree before an effect is claimed (benches/latency/equivalent.py), on the
default sweep of the model workstation (helpers.synthetic: the 1-rank runs and the serial 2-rank
runs chase alone on the same CPUs, with 4 KiB pages alike), once as the model writes it and once
with the 1-rank 4 KiB job doctored 1.6x slower from 8 MiB up (a neighbour on the memory bus: its CPU
share untouched, so no verdict sees it)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from numasweep.findings import analysis
from numasweep.reporting import report

from helpers import synthetic as model


def _three_runs(folder) -> pd.DataFrame:
    """The model's latency table with each job run three times (repeat_until's runs), each run
    off by a log-normal 1 %."""
    table = pd.read_csv(folder / "latency.csv")
    rng = np.random.default_rng(5)
    runs = [table.assign(repetition=r, latency_ns_median=table["latency_ns_median"] * rng.lognormal(0, 0.01, len(table)))
            for r in range(3)]
    return pd.concat(runs, ignore_index=True)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    honest = model.write_default_sweep(tmp_path_factory.mktemp("honest") / "results" / "desk")
    _three_runs(honest).to_csv(honest / "latency.csv", index=False)
    doctored = model.write_default_sweep(tmp_path_factory.mktemp("doctored") / "results" / "desk")
    table = _three_runs(doctored)
    odd = (table["ranks"] == 1) & (table["page_size"] == "4k") & (table["size_bytes"] >= 8 << 20)
    table.loc[odd, "latency_ns_median"] *= 1.6
    for col in ("latency_ns_min", "latency_ns_max"):
        if col in table:
            table.loc[odd, col] *= 1.6
    table.to_csv(doctored / "latency.csv", index=False)
    return honest, doctored


def test_equivalent_runs_that_agree_say_nothing(sweeps):
    honest, _ = sweeps
    assert not [f for f in analysis.analyse(honest)["findings"] if f["id"] == "equivalent_runs"]


def test_a_doctored_job_is_said_and_nothing_rests_on_it(sweeps, tmp_path):
    _, doctored = sweeps
    found = analysis.analyse(doctored)["findings"]
    (odd,) = [f for f in found if f["id"] == "equivalent_runs"]
    n = odd["numbers"]
    assert n["claim"] and min(n["sizes_set_aside"]) >= 8 << 20 and n["plateau_ratio_low"] > 1.3
    assert "set aside" in odd["summary"] and "1.6" in odd["summary"]
    # the TLB cost of that 4 KiB curve against huge pages no longer rests on the doctored sizes
    for f in found:
        if f["id"] == "tlb_cost" and f["numbers"]["claim"]:
            assert f["numbers"]["max_ratio"] < 1.5, f["summary"]
    text = report.render(doctored, {"findings": found}, None, tmp_path / "r.md").read_text()
    summary = text.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]
    (dram,) = [line for line in summary.splitlines() if line.startswith("| DRAM latency, local memory")]
    assert float(dram.split("|")[2].split()[0]) == pytest.approx(model.DRAM_NS, rel=0.08), dram
