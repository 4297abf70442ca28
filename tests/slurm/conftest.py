"""Real SLURM clusters for the test session, one at a time, always brought down at the end.

Two layouts (slurmtest.Layout): ONE_NODE, this machine as the only node without accounting
(the cluster the profile's squeue status mode is for), and FLEET, two slurmd nodes each in a
network namespace of its own under one slurmctld, with slurmdbd on a private MariaDB (sacct).
A module asks for one through the `slurm_cluster` or `slurm_fleet` fixture; switching layouts
brings the running cluster down first, and the tests are ordered so that each layout starts
once. `cluster.sh up` installs Debian's packages if needed; if it fails, every test that needs
the cluster fails with the daemons' log tails; nothing is skipped. Each `cluster.sh down` is
checked: no daemon (munged, mariadbd, slurmdbd, slurmctld, slurmd), job step, namespace or
process working in the tests' folders is left.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmtest import (
    CLUSTER_SH,
    DAEMON_PROGRAMS,
    FLEET,
    ONE_NODE,
    STATE,
    Cluster,
    Layout,
    daemon_pids,
    describe,
    our_namespaces,
    pid_alive,
    processes,
    run,
)

# Two test sessions on one machine would fight over one slurm.conf and one set of ports.
LOCK = Path("/run/lock/numasweep-slurm.lock")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the same layout run together (stable order otherwise): one start per layout."""
    items.sort(key=lambda item: "slurm_fleet" in getattr(item, "fixturenames", ()))


class Clusters:
    """At most one cluster at a time: they share /etc/slurm and the ports."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.running: Cluster | None = None
        self.before = processes(comm=DAEMON_PROGRAMS)

    def use(self, layout: Layout) -> Cluster:
        if self.running is not None and self.running.layout == layout:
            return self.running
        self.stop()
        # Installing the packages on a fresh machine takes most of this limit.
        up = run(["bash", str(CLUSTER_SH), "up", *layout.up_args], timeout=900)
        assert up.returncode == 0, (
            f"the SLURM cluster ({layout.name}) did not start (cluster.sh up exited {up.returncode}):\n"
            f"{up.stdout[-4000:]}\n{up.stderr[-6000:]}"
        )
        nodes = tuple(run(["sinfo", "-h", "-N", "-o", "%N"]).stdout.split())
        cpus = int(run(["sinfo", "-h", "-N", "-o", "%c"]).stdout.split()[0])
        self.running = Cluster(nodes=nodes, cpus=cpus, workdir=self.workdir, layout=layout)
        return self.running

    def stop(self) -> None:
        if self.running is None and not STATE.exists():
            return
        pids = daemon_pids()
        down = run(["bash", str(CLUSTER_SH), "down"], timeout=180)
        self.running = None
        left = {f"{d} (PID {p})" for d, p in pids.items() if pid_alive(p)}
        strays = processes(comm=DAEMON_PROGRAMS) - self.before
        in_workdir = processes(cwd_under=self.workdir)
        assert down.returncode == 0, f"cluster.sh down failed:\n{down.stdout}\n{down.stderr}"
        assert not left, f"daemons still running after cluster.sh down: {sorted(left)}"
        assert not strays, f"SLURM, munge or MariaDB processes left running:\n{describe(strays)}"
        assert not in_workdir, f"processes left in {self.workdir}:\n{describe(in_workdir)}"
        assert not our_namespaces(), f"network namespaces left: {our_namespaces()}"
        assert not STATE.exists(), f"cluster.sh down left {STATE} behind"


@pytest.fixture(scope="session")
def slurm_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        clusters = Clusters(tmp_path_factory.mktemp("slurm-runs"))
        try:
            yield clusters
        finally:
            clusters.stop()


@pytest.fixture(scope="module")
def slurm_cluster(slurm_clusters: Clusters) -> Cluster:
    """This machine as the one node, no accounting."""
    return slurm_clusters.use(ONE_NODE)


@pytest.fixture(scope="module")
def slurm_fleet(slurm_clusters: Clusters) -> Cluster:
    """Two nodes in network namespaces of their own, slurmdbd on MariaDB."""
    return slurm_clusters.use(FLEET)
