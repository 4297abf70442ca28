"""Plan-time checks against the topology (numasweep/planning/checks.py) that warn rather than refuse."""

from __future__ import annotations

from pathlib import Path

from numasweep.planning import checks, grid
from numasweep.core import topology

REPO = Path(__file__).resolve().parents[2]
LUMI = topology.load(REPO / "config" / "arch" / "lumi-g.yaml")


def _bandwidth(array_size):
    return grid.validate_config(
        {"bandwidth": {"sweeps": [{"cpu_nodes": [0, 1], "threads": [1], "array_size": array_size}]}}
    )


def test_llc_of_a_node_is_its_l3_instances():
    # LUMI-G: two 32M L3 instances per node.
    assert LUMI.llc_bytes(LUMI.node(0).cpus) == 2 * 32 * 2**20
    assert LUMI.llc_bytes([1]) == 32 * 2**20


def test_array_under_four_llc_is_warned_per_node_and_still_planned(capsys):
    warnings = checks.against_topology(_bandwidth("1K"), LUMI)
    assert [w.split(":")[0] for w in warnings] == ["bandwidth.sweeps[0].array_size"] * 2
    assert "node 0's last-level cache (64MiB)" in warnings[0] and "give 256MiB or more" in warnings[0]
    plan = grid.expand(_bandwidth("1K"), LUMI)
    assert len(plan.jobs) == 2
    assert capsys.readouterr().err.count("numasweep: warning: bandwidth.sweeps[0].array_size") == 2


def test_arrays_of_four_llc_or_the_default_are_not_warned():
    assert checks.against_topology(_bandwidth("256M"), LUMI) == []
    assert checks.against_topology(_bandwidth(None), LUMI) == []


def test_extra_args_of_an_unbuilt_kernel_are_left_to_run_time(tmp_path):
    config = grid.validate_config({"latency": {"sweeps": [{"domains": [[0]], "extra_args": ["--bogus"]}]}})
    jobs = grid.expand({**config, "latency": {"sweeps": [{"domains": [[0]]}]}}, LUMI).jobs
    jobs = [grid.Job(**{**j.__dict__, "kernel_args": j.kernel_args + ("--bogus",)}) for j in jobs]
    checks.extra_args(config, jobs, bin_dir=tmp_path)  # nothing to run: no error
