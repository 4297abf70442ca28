"""The test cluster itself: the node is up, srun CPU maps bind, Open MPI starts under PMIx."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from helpers.slurmtest import CLUSTER_SH, Cluster, read_rows, run

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]


def reversed_map(cluster: Cluster) -> list[int]:
    """CPUs 1,0: rank 0 on CPU 1 cannot be a coincidence of SLURM's default placement."""
    assert cluster.cpus >= 2, f"node {cluster.node} has {cluster.cpus} CPU; the map tests need 2"
    return [1, 0]


def test_node_is_idle_with_the_machines_cpus(slurm_cluster: Cluster) -> None:
    out = run(["sinfo", "-h", "-N", "-o", "%N %t %c"]).stdout.split()
    assert out[0] == slurm_cluster.node
    assert out[1] == "idle", f"node state {out[1]}, expected idle"
    assert int(out[2]) == os.cpu_count(), "the node line does not come from this machine"


def test_status_names_each_daemon_running(slurm_cluster: Cluster) -> None:
    status = run(["bash", str(CLUSTER_SH), "status"])
    assert status.returncode == 0, status.stdout + status.stderr
    for daemon in ("munged", "slurmctld", f"slurmd@{slurm_cluster.node}"):
        assert re.search(rf"^{daemon}: running \(PID \d+\)$", status.stdout, re.M), status.stdout


def test_cpu_map_binds_each_rank(slurm_cluster: Cluster) -> None:
    cpu_map = reversed_map(slurm_cluster)
    srun = run(
        ["srun", "-n", "2", "-l", f"--cpu-bind=map_cpu:{','.join(map(str, cpu_map))}",
         "grep", "Cpus_allowed_list", "/proc/self/status"],
    )
    assert srun.returncode == 0, srun.stderr
    allowed = dict(re.findall(r"^(\d+): Cpus_allowed_list:\s+(\S+)$", srun.stdout, re.M))
    assert allowed == {"0": str(cpu_map[0]), "1": str(cpu_map[1])}, srun.stdout


def test_mpi_kernel_starts_under_pmix_with_each_rank_on_its_mapped_cpu(
    slurm_cluster: Cluster, kernels_bin: Path, tmp_path: Path
) -> None:
    cpu_map = reversed_map(slurm_cluster)
    csv_path = tmp_path / "latency.csv"
    srun = run(
        ["srun", "--mpi=pmix", "-n", "2", f"--cpu-bind=map_cpu:{','.join(map(str, cpu_map))}",
         str(kernels_bin / "numa_latency"), "--size=64K", "--min-time=0.01", "--samples=3", "--quiet",
         f"--csv={csv_path}"],
        timeout=120,
    )
    assert srun.returncode == 0, srun.stdout + srun.stderr
    _, rows = read_rows(csv_path)
    placed = {(int(r["rank"]), int(r["ranks"]), int(r["cpu"])) for r in rows}
    assert placed == {(0, 2, cpu_map[0]), (1, 2, cpu_map[1])}, f"(rank, ranks, cpu): {sorted(placed)}"


def test_job_larger_than_the_node_is_refused_at_submission(slurm_cluster: Cluster) -> None:
    # EnforcePartLimits=ALL: without it this job would pend forever and hang a workflow.
    sbatch = run(["sbatch", "-n", str(slurm_cluster.cpus + 1), "--wrap", "true"], timeout=30)
    assert sbatch.returncode != 0, f"sbatch accepted an impossible job: {sbatch.stdout}"
    assert "Batch job submission failed" in sbatch.stderr, sbatch.stderr
