"""Fleet mode, planned: the same sweep on every node of a list or partition.

Planning: `spread(plan, nodes)` copies each job once per node (`<id>-on-<node>`, grid column
`fleet_node`), and the benchmark rules pin each copy to its node (`--nodelist`). Each node is
then its own series, because the host a kernel ran on is part of the series identity
(`numasweep.results.series`).

The nodes are ranked once measured: `numasweep.reporting.fleet_report`.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace

from numasweep.core.errors import NumasweepError

DEFAULT_TOLERANCE = 0.10
NODE_COLUMN = "fleet_node"


# ---------------------------------------------------------------- planning

def nodes(fleet: dict) -> list[str]:
    """The nodes a config's `fleet` section names: its list, or every node of its partition."""
    listed = list(fleet.get("nodes") or [])
    partition = fleet.get("partition")
    if listed and partition:
        raise NumasweepError("config: fleet: give nodes or partition, not both")
    if not partition:
        return listed
    try:
        proc = subprocess.run(["sinfo", "-h", "-N", "-p", partition, "-o", "%N"], capture_output=True,
                              text=True, timeout=60)
    except FileNotFoundError:
        raise NumasweepError(f"config: fleet.partition: '{partition}' needs sinfo, which is not on the PATH; "
                             "run snakemake on the cluster's login node or list fleet.nodes") from None
    found = sorted(set(proc.stdout.split()))
    if proc.returncode != 0 or not found:
        why = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "no node"
        raise NumasweepError(f"config: fleet.partition: sinfo lists no node of partition '{partition}' ({why}); "
                             "name a partition of `sinfo -s`")
    return found


def spread(plan, fleet_nodes: list[str]):
    """The plan with every job once per node (the plan itself when the list is empty)."""
    if not fleet_nodes:
        return plan
    jobs = [replace(job, id=f"{job.id}-on-{node}", grid={**job.grid, NODE_COLUMN: node},
                    compared=job.compared and f"{job.compared}-on-{node}")
            for job in plan.jobs for node in fleet_nodes]
    return replace(plan, jobs=jobs)


def slurm_nodelist(grid: dict) -> str:
    """sbatch options that pin a fleet job to its node ("" outside fleet mode)."""
    node = grid.get(NODE_COLUMN)
    return f" '--nodelist={node}'" if node else ""
