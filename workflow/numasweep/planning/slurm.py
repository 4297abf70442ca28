"""The workflow under SLURM: the machine a plan is made for, and what each benchmark job asks
for beyond its CPUs (one node, and that node's memory).

With `arch: auto` the plan is the topology of the machine the kernels run on. Under the srun
launcher outside an allocation they run on the cluster's compute nodes, and snakemake on a login
node that is none of them (`login_node`) would plan their launch lines from its own CPUs and NUMA
nodes. So `compute_node_arch` has a job on the partition detect a compute node (`srun ...
python -m numasweep topology --detect`), once, into a file under results/.compute-nodes/ that
later runs, dry runs and the jobs' own parses of the workflow reuse: the plan, the launch lines
and the topology job's record are that node's. A fleet detects each of its nodes and refuses one
whose CPUs, NUMA nodes or caches differ from the first's. The plan stays where snakemake reads
the workflow (not a checkpoint), so that `snakemake -n -p` prints every real launch line.

`--exclusive` gives a job every CPU of its node but, on a site that sets DefMemPerCPU or
DefMemPerNode, only the memory it requests: a latency sweep's largest buffers would be killed
by the job's cgroup. So each benchmark job asks for its node's memory (`mem_mb`, which the
executor plugin turns into `--mem`; it refuses `--mem` in slurm_extra and drops a zero), and for
one node (`nodes`: the ranks of one latency job share its memory system).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from numasweep.core import topology
from numasweep.core.errors import NumasweepError

MIB = 1 << 20
# Where the compute nodes' detected topologies are kept (one file per partition, or per fleet
# node), beside the results: delete one to detect again.
DETECTED = "results/.compute-nodes"
# The detection job's wall-time limit, minutes (sbatch -t): it runs for a second or two.
DETECT_MINUTES = 5


def login_node(launcher: str, environ: dict | None = None) -> str:
    """Why `arch: auto` cannot plan here ("" where it can): the srun launcher outside a SLURM
    allocation, on a machine that is no node of the cluster (sinfo's NodeName and NodeHostname)."""
    environ = os.environ if environ is None else environ
    if launcher != "srun" or environ.get("SLURM_JOB_ID"):
        return ""
    try:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %n"], capture_output=True, text=True, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return ""
    host = socket.gethostname().split(".")[0]
    names = {name.split(".")[0] for line in proc.stdout.splitlines() for name in line.split()}
    if proc.returncode != 0 or not names or host in names:
        return ""
    return f"this machine ({host}) is no node of the SLURM cluster the jobs run on"


def planned_arch(arch: str, launcher: str, resources: dict, fleet_nodes: list[str]) -> tuple[str, str, str]:
    """(arch to plan from, line to print or "", login_node's reason or ""): the config's `arch`,
    where it is `auto` the compute node's detection (compute_node_arch) on a login node. The
    workflow and `grid` plan through this one call."""
    on_login = login_node(launcher)
    if arch != "auto":
        return arch, "", on_login
    detected, line = compute_node_arch(on_login, resources, fleet_nodes)
    return detected or arch, line, on_login


def compute_node_arch(on_login: str, resources: dict, fleet_nodes: list[str], folder: str | Path = DETECTED,
                      environ: dict | None = None) -> tuple[str, str]:
    """(arch file, line to print) that `arch: auto` plans from under the srun launcher: the
    compute node's topology, detected by a job on the partition (`resources`: the profile's
    slurm_partition, slurm_account and constraint) or on each fleet node, once, then read from
    `folder`. ("", "") where snakemake runs on a node of the cluster or in a job without such a
    file (the machine itself is then the node). `on_login`: login_node's reason, "" on a node."""
    environ = os.environ if environ is None else environ
    folder = Path(folder)
    key = "-".join(_word(resources.get(k) or "") for k in ("slurm_partition", "constraint") if resources.get(k))
    files = ({node: folder / f"node-{_word(node)}.json" for node in fleet_nodes} if fleet_nodes
             else {"": folder / f"partition-{key or 'default'}.json"})
    missing = [node for node, path in files.items() if not path.exists()]
    if missing and (environ.get("SLURM_JOB_ID") or not on_login):
        return "", ""
    if missing:
        _detect(missing, files, resources, on_login, environ)
    detected = "detected now by a job on it" if missing else "detected by an earlier run"
    topos = {node: topology.load(path) for node, path in files.items()}
    first, *others = files
    differ = [node for node in others if _shape(topos[node]) != _shape(topos[first])]
    if differ:
        raise NumasweepError(
            f"fleet: node(s) {', '.join(differ)} have another CPU model, other CPUs, NUMA nodes or caches than {first} ({files[first]}), "
            "so one plan cannot run on all: list nodes of one kind in fleet.nodes (`sinfo -N -o \"%N %c %m %f\"` "
            "shows them) or select one kind with a constraint")
    where = (f"fleet node {first}" + (f" and {len(others)} alike" if others else "") if fleet_nodes
             else f"compute node {topos[first].system} of partition {resources.get('slurm_partition') or '(the default)'}")
    line = (f"arch: auto: planned from {where}, {detected} ({files[first]}; delete it to detect again, or keep it "
            "as an arch file), not from this login node")
    return str(files[first]), line


def _word(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text))


def _shape(topo) -> str:
    """What a plan is made from: the topology but for names, memory sizes and firmware."""
    d = topo.to_dict()
    for key in ("system", "source", "memory_peak", "memory_peak_unknown", "firmware"):
        d.pop(key, None)
    for node in d["nodes"]:
        node.pop("memory_bytes", None)
    return json.dumps(d, sort_keys=True)


def _detect(nodes: list[str], files: dict[str, Path], resources: dict, on_login: str, environ: dict) -> None:
    """One srun step that runs the project's detection on each node (or on one node of the
    partition), each writing its own file."""
    folder = next(iter(files.values())).parent
    folder.mkdir(parents=True, exist_ok=True)
    cmd = ["srun", "-J", "numasweep-topology", "-t", str(DETECT_MINUTES), "--exclusive"]
    for option, key in (("-p", "slurm_partition"), ("-A", "slurm_account"), ("-C", "constraint")):
        if resources.get(key):
            cmd += [option, str(resources[key])]
    fleet = "" not in files
    cmd += (["-N", str(len(nodes)), "--ntasks-per-node=1", "-w", ",".join(nodes)] if fleet else ["-N1", "-n1"])
    # Each task writes the file its node's name gives; one node of a partition writes the one file.
    script = ('exec "$0" -m numasweep topology --detect -o "$1$SLURMD_NODENAME.json"' if fleet
              else 'exec "$0" -m numasweep topology --detect -o "$1"')
    cmd += ["sh", "-c", script, sys.executable, str(folder / "node-") if fleet else str(files[""])]
    print(f"numasweep: {on_login}: detecting the compute node's topology with `{' '.join(cmd[:-5])} ...` "
          "(it waits for a node)", file=sys.stderr)
    env = {k: v for k, v in environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lost = [node for node in nodes if not files[node].exists()]
    if proc.returncode != 0 or lost:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise NumasweepError(
            f"config: arch: auto: the detection job on the compute node failed ({why}); set the profile's "
            "slurm_partition (and slurm_account) to a partition you may use, or describe a node yourself with "
            "`srun -p PARTITION -N1 --exclusive python -m numasweep topology --detect -o FILE` and set arch: FILE "
            "(docs/slurm.md)")


def memory_mb(topology, ask_slurm: bool = True) -> int:
    """The memory a benchmark job asks for, in MiB (SLURM's MB): its node's, as the topology the
    plan was made from holds it (the kernel's MemTotal of each NUMA node), at most what SLURM lets
    a job on a node of as many CPUs ask for (sinfo's configured memory: sites set RealMemory below
    MemTotal, and sbatch refuses a request above it). The topology's alone where sinfo does not
    answer (no SLURM here, or a machine whose CPU count no node of the cluster has), or is not
    asked (`ask_slurm` false: jobs that SLURM does not place)."""
    total = sum(n.memory_bytes for n in topology.nodes) // MIB
    if not ask_slurm:
        return total
    try:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%c %m"], capture_output=True, text=True, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return total
    cpus = len(topology.all_cpus())
    configured = [int(m) for c, m in (line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) >= 2)
                  if c.isdigit() and m.isdigit() and int(c) == cpus and int(m) > 0]
    return min([total, *configured]) if proc.returncode == 0 else total
