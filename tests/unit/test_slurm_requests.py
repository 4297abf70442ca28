"""What the workflow asks of SLURM where it plans (numasweep.planning.slurm): the memory of a
benchmark job's node, and where `arch: auto` may not plan. The cluster's side (sinfo's
configured memory, a login node that is no node) is tested on the test cluster, tests/slurm."""

from __future__ import annotations

from pathlib import Path

from numasweep.core.topology import load_arch
from numasweep.planning import slurm

ARCH = Path(__file__).resolve().parents[2] / "config" / "arch"


def test_a_job_asks_for_its_nodes_memory_in_mib() -> None:
    lumi = load_arch(ARCH / "lumi-g.yaml")
    assert slurm.memory_mb(lumi, ask_slurm=False) == 4 * 128 * 1024


def test_arch_auto_plans_here_outside_srun_and_inside_an_allocation() -> None:
    """Only the srun launcher outside an allocation runs the kernels elsewhere."""
    assert slurm.login_node("mpirun", {}) == ""
    assert slurm.login_node("srun", {"SLURM_JOB_ID": "12"}) == ""
