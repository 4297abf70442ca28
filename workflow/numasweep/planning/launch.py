"""Launch lines for a plan: srun on a SLURM node, mpirun on a workstation, or one process.

All three end in kernels/wrapper_numa.sh, which applies the memory policy with numactl (and,
for weighted interleave, hands it to the kernel, since numactl 2.0.16 cannot). They differ in
who pins the CPU:

- srun: SLURM pins each task with `--cpu-bind=map_cpu:LIST` (task i gets entry i), exactly as
  the seed's run_numa_benchmarks.sh did. `--mpi=pmix` is emitted by default because Debian's
  Open MPI 4.1 initialises only through PMIx under srun; pass mpi=None where the site's
  default is right (Cray MPICH on LUMI uses its own). `--hint=nomultithread` is kept to
  reproduce the seed's line, but Slurm 22.05 drops it when `--cpu-bind=map_cpu` is given
  (`srun -v` says "mutually exclusive with --hint ... Ignoring --hint"): map_cpu alone
  already puts each task on one hardware thread.
- mpirun: Open MPI is told `--bind-to none` and the wrapper pins local rank i with
  `numactl --physcpubind` to entry i of `--cpus`. A rankfile would also work, but its syntax
  and CPU numbering (logical vs physical, cores vs hardware threads) changed between Open MPI
  4 and 5 and it needs a file on disk; the wrapper uses the same OS CPU numbers as
  srun's map_cpu and the arch file, and shows the binding in its `Executing:` line.
- direct: one multi-threaded process; the wrapper pins it to the CPU set and OpenMP places
  one thread on each CPU in order (OMP_PLACES lists them, OMP_PROC_BIND=close).

Each function returns an argv list; shlex.join(argv) is the line to show.
"""

from __future__ import annotations

import os
import shlex

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.planning.placement import MemorySpec, RankPlacement, parse_memory
from numasweep.core.units import format_cpulist

WRAPPER = "kernels/wrapper_numa.sh"
# A kernel writes its CSV under this suffix; run-job renames it once the run checks out, so an
# interrupted job never leaves a valid but short table.
PARTIAL = ".partial"


def _csv(values: list[int]) -> str:
    return ",".join(str(v) for v in values)


def wrapper_memory_args(placements: list[RankPlacement]) -> list[str]:
    """The wrapper's --numa/--policy/--weights for all ranks of one launch."""
    if not placements:
        raise NumasweepError("no ranks to launch: the plan is empty")
    policies = {p.policy for p in placements}
    if len(policies) > 1:
        raise NumasweepError(f"ranks of one launch mix memory policies ({', '.join(sorted(policies))}); use one")
    policy = policies.pop()
    if policy in ("bind", "preferred"):
        for p in placements:
            if len(p.mem_nodes) != 1:
                raise NumasweepError(f"rank {p.rank}: policy {policy} takes one node, got {_csv(p.mem_nodes)}")
        args = [f"--numa={_csv([p.mem_nodes[0] for p in placements])}"]
        return args if policy == "bind" else args + ["--policy=preferred"]
    sets = {(tuple(p.mem_nodes), tuple(p.weights or ())) for p in placements}
    if len(sets) > 1:
        raise NumasweepError(f"ranks of one launch {policy} over different node sets; give all ranks the same set")
    nodes, weights = sets.pop()
    args = [f"--numa={_csv(list(nodes))}", f"--policy={policy}"]
    if policy == "weighted" and weights:  # none: the kernel's current weights
        args.append(f"--weights={_csv(list(weights))}")
    return args


def srun_argv(placements: list[RankPlacement], kernel_argv: list[str], wrapper: str = WRAPPER,
              nomultithread: bool = True, mpi: str | None = "pmix") -> list[str]:
    argv = ["srun", "--nodes=1", f"--ntasks={len(placements)}"]
    if mpi:
        argv.append(f"--mpi={mpi}")
    argv.append(f"--cpu-bind=map_cpu:{_csv([p.cpu for p in placements])}")
    if nomultithread:
        argv.append("--hint=nomultithread")
    return argv + [wrapper] + wrapper_memory_args(placements) + ["--"] + list(kernel_argv)


def mpirun_argv(placements: list[RankPlacement], kernel_argv: list[str], wrapper: str = WRAPPER,
                as_root: bool | None = None) -> list[str]:
    """Open MPI's mpirun; `as_root` (default: whether we are root) adds --allow-run-as-root."""
    argv = ["mpirun", "-n", str(len(placements)), "--bind-to", "none"]
    if as_root if as_root is not None else os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    cpus = [p.cpu for p in placements]
    return argv + [wrapper, f"--cpus={_csv(cpus)}"] + wrapper_memory_args(placements) + ["--"] + list(kernel_argv)


def direct_argv(cpus: list[int], memory: str | MemorySpec | RankPlacement, kernel_argv: list[str],
                threads: int | None = None, wrapper: str = WRAPPER) -> tuple[dict[str, str], list[str]]:
    """(environment additions, argv) for one OpenMP process on `cpus`.

    `memory` is a spec or a RankPlacement. For one process `local` means each thread's pages
    go to its own node (numactl --localalloc), which is what first touch gives per thread.
    """
    if not cpus:
        raise NumasweepError("no CPUs for the process: give at least one")
    threads = len(cpus) if threads is None else threads
    if not 1 <= threads <= len(cpus):
        raise NumasweepError(f"{threads} threads on {len(cpus)} CPUs: use 1..{len(cpus)} threads, one per CPU")
    if isinstance(memory, RankPlacement):
        policy, nodes, weights = memory.policy, memory.mem_nodes, memory.weights
    else:
        spec = memory if isinstance(memory, MemorySpec) else parse_memory(memory)
        if spec.kind == "nodes" and len(set(spec.nodes)) > 1:
            raise NumasweepError(f"memory spec '{spec}' gives ranks different nodes, but this is one process")
        policy = {"local": "local", "node": "bind", "nodes": "bind"}.get(spec.kind, spec.kind)
        nodes, weights = list(spec.nodes[:1] if spec.kind == "nodes" else spec.nodes), spec.weights
    mem_args = [f"--policy={policy}"]
    if nodes and policy != "local":
        mem_args.insert(0, f"--numa={_csv(list(nodes))}")
    if policy == "weighted" and weights:  # none: the kernel's current weights
        mem_args.append(f"--weights={_csv(list(weights))}")
    env = {
        "OMP_NUM_THREADS": str(threads),
        "OMP_PLACES": ",".join(f"{{{c}}}" for c in cpus[:threads]),
        "OMP_PROC_BIND": "close",
    }
    argv = [wrapper, f"--cpuset={format_cpulist(cpus[:threads])}"] + mem_args + ["--"] + list(kernel_argv)
    return env, argv


def job_argv(job, csv: str | None, launcher: str = "mpirun", wrapper: str = WRAPPER, bin_dir: str = "build/bin",
             srun_mpi: str | None = "pmix", setup: list[str] = ()) -> list[str]:
    """The command that runs one planned job (grid.Job): MPI launcher + wrapper for ranks,
    the wrapper alone otherwise, with OpenMP's environment as an `env` prefix. The workflow's
    rules, `python -m numasweep run-job` and `python -m numasweep plan` all show and run exactly
    this line (plan gives no CSV, and an empty bin_dir for a kernel named without a folder);
    `setup`: the option naming the file its Setup wrote (result_line)."""
    kernel = f"{bin_dir}/{job.kernel}" if bin_dir else job.kernel
    kernel_argv = [kernel, *job.kernel_args, *setup, *([f"--csv={csv}"] if csv is not None else [])]
    mpi = registry.get(job.bench).launch.by == "mpi"
    if mpi and job.tasks > 1:
        if launcher == "srun":
            return srun_argv(job.placements, kernel_argv, wrapper=wrapper, mpi=srun_mpi)
        return mpirun_argv(job.placements, kernel_argv, wrapper=wrapper)
    if mpi:
        # One rank needs no launcher (an MPI singleton), and no srun inside the job step.
        only = job.placements[0]
        env, argv = direct_argv([only.cpu], only, kernel_argv, 1, wrapper=wrapper)
    else:
        env, argv = direct_argv(list(job.cpus), job.memory, kernel_argv, job.threads, wrapper=wrapper)
    prefix = ["env", *(f"{k}={v}" for k, v in sorted(env.items()))] if env else []
    return prefix + list(argv)


def result_line(job, results_dir: str, launcher: str = "mpirun", wrapper: str = WRAPPER, bin_dir: str = "build/bin",
                srun_mpi: str | None = "pmix") -> str:
    """The line the workflow runs for a job (single or in a batch): its kernel writes
    `<results_dir>/<bench>/<id>.csv.partial`, which run-job renames once it checks out."""
    csv = f"{results_dir}/{job.bench}/{job.id}.csv{PARTIAL}"
    setup = [f"{job.setup.option}={results_dir}/{job.setup.reads}"] if job.setup else []
    return shlex.join(job_argv(job, csv, launcher=launcher, wrapper=wrapper, bin_dir=bin_dir, srun_mpi=srun_mpi,
                               setup=setup))


def setup_line(setup, results_dir: str, wrapper: str = WRAPPER, bin_dir: str = "build/bin") -> str:
    """The launch line of a Setup (grid.Setup): its job, one process, writing its table (as
    TABLE.partial, which `python -m numasweep run-setup` renames once the kernel exits 0)."""
    return shlex.join(job_argv(setup.job, f"{results_dir}/{setup.table}{PARTIAL}", wrapper=wrapper, bin_dir=bin_dir))
