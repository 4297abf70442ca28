"""`python -m numasweep plan`: what a placement will do, before anything runs.

    python -m numasweep plan --arch config/arch/lumi-g.yaml --interleaved 0,1,2,3 --ranks-per-domain 2
    python -m numasweep plan --arch config/arch/lumi-g.yaml --sequential 0,1 --scaling -- --size=16

prints the launch line(s) and a table of rank, CPU, CPU node, L3 group and memory node(s):
the line is the one the workflow runs for such a latency job (launch.job_argv, so one rank runs
without a launcher), the answer the seed's `run_numa_benchmarks.sh --arch ... --dry-run` gave. With --scaling it
walks 1..N ranks per domain and names each run's CSV the way the seed did
(sequential_domain0_8ranks_16MB.csv); the workflow's job ids replace those names in results/.
"""

from __future__ import annotations

import argparse
import os
import shlex

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.planning.grid import Job
from numasweep.planning.launch import WRAPPER, job_argv
from numasweep.planning.placement import RankPlacement, plan, rank_scaling, scaling_name
from numasweep.core.topology import load
from numasweep.core.units import MAX_CPUS, parse_sizes, ranged




def _domains(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise NumasweepError(f"domains '{text}' is not a comma list of NUMA node ids, e.g. 0,1") from None


def _lists(values: list[int] | None) -> str:
    return "-" if values is None else ",".join(str(v) for v in values)


def table(placements: list[RankPlacement]) -> str:
    head = ("rank", "cpu", "cpu_node", "l3_group", "policy", "mem_nodes", "weights")
    rows = [head] + [(str(p.rank), str(p.cpu), str(p.cpu_node), str(p.l3_group), p.policy,
                      _lists(p.mem_nodes), _lists(p.weights)) for p in placements]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows)


def _size_of(kernel_argv: list[str]) -> int | None:
    """The one size a seed-style name carries, when the kernel is given exactly one."""
    for arg in kernel_argv:
        if arg.startswith("--size="):
            sizes = parse_sizes(arg.split("=", 1)[1])
            return sizes[0] if len(sizes) == 1 else None
    return None


def main(argv: list[str]) -> int:
    kernel_argv: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, kernel_argv = argv[:cut], argv[cut + 1:]
    # The benchmark whose ranks a placement is for: the registry's MPI benchmark.
    mpi_bench = next(b for b in registry.all_benches().values() if b.launch.by == "mpi")
    default_kernel = f"build/bin/{mpi_bench.launch.kernel}"
    ap = argparse.ArgumentParser(prog="python -m numasweep plan",
                                 description="Preview a placement: per-rank table and launch lines.",
                                 epilog="Arguments after -- go to the kernel; if the first one starts with "
                                        f"'-' the kernel is {default_kernel}.")
    ap.add_argument("--arch", required=True, help="arch YAML (config/arch/) or topology.json")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--sequential", metavar="DOMAINS", help="fill each domain's free cores in order")
    how.add_argument("--interleaved", metavar="DOMAINS", help="one core from each L3 group of a domain in turn")
    ap.add_argument("--ranks-per-domain", type=ranged(int, 1, MAX_CPUS),
                    help="ranks in each domain (the largest with --scaling)")
    ap.add_argument("--memory", default="local", help="memory spec: local, node:N, nodes:..., preferred:N, "
                                                      "interleave:..., weighted:N,M@W,V (default local)")
    ap.add_argument("--launcher", choices=("srun", "mpirun"), default="srun")
    ap.add_argument("--mpi", default="pmix", help="srun --mpi plugin; 'none' leaves it out (default pmix)")
    ap.add_argument("--wrapper", default=WRAPPER)
    ap.add_argument("--scaling", action="store_true", help="every ranks-per-domain from 1 up")
    args = ap.parse_args(argv)

    topo = load(args.arch)
    strategy = "sequential" if args.sequential else "interleaved"
    domains = _domains(args.sequential or args.interleaved)
    if not kernel_argv or kernel_argv[0].startswith("-"):
        kernel_argv = [default_kernel] + kernel_argv

    def line(placements: list[RankPlacement]) -> str:
        # The workflow's own launch line for a job of the MPI benchmark with these ranks (one
        # rank runs without a launcher there, and so here).
        job = Job(bench=mpi_bench.name, id="plan", kernel=os.path.basename(kernel_argv[0]), grid={},
                  kernel_args=tuple(kernel_argv[1:]), tasks=len(placements), placements=tuple(placements))
        return shlex.join(job_argv(job, None, launcher=args.launcher, wrapper=args.wrapper,
                                   bin_dir=os.path.dirname(kernel_argv[0]),
                                   srun_mpi=None if args.mpi == "none" else args.mpi))

    if not args.scaling:
        if args.ranks_per_domain is None:
            raise NumasweepError("--ranks-per-domain N is required (or --scaling for 1..N)")
        placements = plan(topo, strategy, domains, args.ranks_per_domain, args.memory)
        print(f"# {topo.system}: {strategy} over domains {','.join(map(str, domains))}, "
              f"{args.ranks_per_domain} rank(s) each, memory {args.memory}")
        print(line(placements))
        print()
        print(table(placements))
        return 0

    size = _size_of(kernel_argv)
    print(f"# {topo.system}: {strategy} rank scaling over domains {','.join(map(str, domains))}, memory {args.memory}")
    for n in rank_scaling(topo, strategy, domains, args.ranks_per_domain):
        placements = plan(topo, strategy, domains, n, args.memory)
        print(f"{scaling_name(strategy, domains, len(placements), size)}: {line(placements)}")
    return 0
