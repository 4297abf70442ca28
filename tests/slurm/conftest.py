"""A real one-node SLURM cluster for the whole test session, always brought down at the end.

`cluster.sh up` installs Debian's packages if needed and starts munged, slurmctld and slurmd.
If it fails, every test that needs the cluster fails with the daemons' log tails; nothing is
skipped. At the end `cluster.sh down` stops the daemons by their pidfiles, and the teardown
checks that none of them, no job step and no process working in the tests' folders is left.
"""

from __future__ import annotations

import fcntl
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmtest import CLUSTER_SH, STATE, Cluster, daemon_pids, describe, pid_alive, processes, run

# Two test sessions on one machine would fight over one slurm.conf and one pair of ports.
LOCK = Path("/run/lock/numasweep-slurm.lock")


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        steps_before = processes(comm="slurmstepd")
        workdir = tmp_path_factory.mktemp("slurm-runs")
        try:
            # Installing the packages on a fresh machine takes most of this limit.
            up = run(["bash", str(CLUSTER_SH), "up"], timeout=900)
            assert up.returncode == 0, (
                f"the SLURM cluster did not start (cluster.sh up exited {up.returncode}):\n"
                f"{up.stdout[-4000:]}\n{up.stderr[-6000:]}"
            )
            cpus = int(run(["sinfo", "-h", "-N", "-o", "%c"]).stdout.split()[0])
            yield Cluster(node=socket.gethostname().split(".")[0], cpus=cpus, workdir=workdir)
        finally:
            pids = daemon_pids()
            down = run(["bash", str(CLUSTER_SH), "down"], timeout=120)
            left = {f"{d} (PID {p})" for d, p in pids.items() if pid_alive(p)}
            steps_left = processes(comm="slurmstepd") - steps_before
            in_workdir = processes(cwd_under=workdir)
            assert down.returncode == 0, f"cluster.sh down failed:\n{down.stdout}\n{down.stderr}"
            assert not left, f"daemons still running after cluster.sh down: {sorted(left)}"
            assert not steps_left, f"job steps left running:\n{describe(steps_left)}"
            assert not in_workdir, f"processes left in {workdir}:\n{describe(in_workdir)}"
            assert not STATE.exists(), f"cluster.sh down left {STATE} behind"

