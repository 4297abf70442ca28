"""The workflow under SLURM: the machine a plan is made for, and what each benchmark job asks
for beyond its CPUs (one node, and that node's memory).

With `arch: auto` the plan is made from the machine snakemake runs on. Under the srun launcher
outside an allocation the kernels run on the cluster's compute nodes, and snakemake on a login
node that is none of them would plan their launch lines from its own CPUs and NUMA nodes:
`login_node` says so, and how to describe a compute node instead.

`--exclusive` gives a job every CPU of its node but, on a site that sets DefMemPerCPU or
DefMemPerNode, only the memory it requests: a latency sweep's largest buffers would be killed
by the job's cgroup. So each benchmark job asks for its node's memory (`mem_mb`, which the
executor plugin turns into `--mem`; it refuses `--mem` in slurm_extra and drops a zero), and for
one node (`nodes`: the ranks of one latency job share its memory system).
"""

from __future__ import annotations

import os
import socket
import subprocess

MIB = 1 << 20


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
    return (f"config: arch: auto would plan the launch lines from this machine ({host}), which is not a node of "
            "the SLURM cluster the jobs run on: describe a compute node once with `srun -p PARTITION -N1 "
            "--exclusive python -m numasweep topology --detect -o config/arch/NAME.json` and set arch: "
            "config/arch/NAME.json (docs/slurm.md)")


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
