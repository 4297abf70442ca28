"""Real SLURM clusters for the test session, one at a time, always brought down at the end.

Two layouts (slurmtest.Layout): ONE_NODE, this machine as the only node without accounting
(the cluster the profile's squeue status mode is for), and FLEET, two slurmd nodes each in a
network namespace of its own under one slurmctld, with slurmdbd on a private MariaDB (sacct).
A module asks for one through the `slurm_cluster` or `slurm_fleet` fixture; switching layouts
brings the running cluster down first, and the tests are ordered so that each layout starts
once (the session fixture `slurm_clusters`, in helpers/slurmtest.py, is shared with the
documented-commands test, whose blocks start a cluster of their own). `cluster.sh up` installs Debian's packages if needed; if it fails, every test that needs
the cluster fails with the daemons' log tails; nothing is skipped. Each `cluster.sh down` is
checked: no daemon (munged, mariadbd, slurmdbd, slurmctld, slurmd), job step, namespace or
process working in the tests' folders is left.
"""

from __future__ import annotations

import pytest
from helpers.slurmtest import FLEET, ONE_NODE, Cluster, Clusters


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the same layout run together (stable order otherwise): one start per layout."""
    items.sort(key=lambda item: "slurm_fleet" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="module")
def slurm_cluster(slurm_clusters: Clusters) -> Cluster:
    """This machine as the one node, no accounting."""
    return slurm_clusters.use(ONE_NODE)


@pytest.fixture(scope="module")
def slurm_fleet(slurm_clusters: Clusters) -> Cluster:
    """Two nodes in network namespaces of their own, slurmdbd on MariaDB."""
    return slurm_clusters.use(FLEET)
