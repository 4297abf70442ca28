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

# sinfo's compact states (%t) of nodes that take no new job: a job pinned to one with
# --nodelist would pend until someone resumes it. A trailing `*` is a node that does not
# respond; `~` (powered down), `#` and `%` (powering up, down) still take jobs.
UNAVAILABLE = ("down", "drain", "drng", "fail", "failg", "futr", "inval", "unk", "boot")


def nodes(fleet: dict) -> tuple[list[str], str]:
    """The nodes a config's `fleet` section names: its list, or every node of its partition that
    can take a job now; and a line naming the partition's nodes left out, with their state
    ("" where none is)."""
    listed = list(fleet.get("nodes") or [])
    partition = fleet.get("partition")
    if listed and partition:
        raise NumasweepError("config: fleet: give nodes or partition, not both")
    if not partition:
        return listed, ""
    try:
        proc = subprocess.run(["sinfo", "-h", "-N", "-p", partition, "-o", "%N %t"], capture_output=True,
                              text=True, timeout=60)
    except FileNotFoundError:
        raise NumasweepError(f"config: fleet.partition: '{partition}' needs sinfo, which is not on the PATH; "
                             "run snakemake on the cluster's login node or list fleet.nodes") from None
    states = dict(line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) >= 2)
    if proc.returncode != 0 or not states:
        why = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "no node"
        raise NumasweepError(f"config: fleet.partition: sinfo lists no node of partition '{partition}' ({why}); "
                             "name a partition of `sinfo -s`")
    out = {node: state for node, state in states.items() if not available(state)}
    found = sorted(set(states) - set(out))
    if not found:
        raise NumasweepError(f"config: fleet.partition: no node of partition '{partition}' can take a job now "
                             f"({_states(out)}); resume them (`scontrol update nodename=... state=resume`) "
                             "or name another partition")
    note = (f"fleet.partition '{partition}': {len(out)} of {len(states)} nodes left out, as they take no job "
            f"now: {_states(out)}; `sinfo -R` says why" if out else "")
    return found, note


def available(state: str) -> bool:
    """Whether a node in this sinfo state (%t) takes a new job."""
    return not state.endswith("*") and state.rstrip("*~#%!$@^-+") not in UNAVAILABLE


def _states(nodes: dict[str, str]) -> str:
    return ", ".join(f"{node} ({state.rstrip('*')}{', not responding' if state.endswith('*') else ''})"
                     for node, state in sorted(nodes.items()))


def spread(plan, fleet_nodes: list[str]):
    """The plan with every job once per node (the plan itself when the list is empty)."""
    if not fleet_nodes:
        return plan
    jobs = [replace(job, id=f"{job.id}-on-{node}", grid={**job.grid, NODE_COLUMN: node},
                    compared=job.compared and f"{job.compared}-on-{node}", setup=on_node(job.setup, node))
            for job in plan.jobs for node in fleet_nodes]
    return replace(plan, jobs=jobs)


def on_node(setup, node: str):
    """A Setup (grid.Setup) run on one fleet node, for that node's points: its own id and files
    (calibration-on-<node>.json, ...), as each host gets its own."""
    if setup is None:
        return None
    tag = f"{setup.id}-on-{node}"
    return replace(setup, id=tag, job=replace(setup.job, id=tag, grid={**setup.job.grid, NODE_COLUMN: node}),
                   outputs=tuple(o.replace(setup.id, tag, 1) for o in setup.outputs))


def slurm_nodelist(grid: dict) -> str:
    """sbatch options that pin a fleet job to its node ("" outside fleet mode)."""
    node = grid.get(NODE_COLUMN)
    return f" '--nodelist={node}'" if node else ""
