"""Launch lines: the seed's srun line exactly, and mpirun / direct lines that really bind here."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from numasweep.core.errors import NumasweepError
from numasweep.planning.launch import direct_argv, mpirun_argv, srun_argv
from numasweep.planning.placement import RankPlacement, plan
from numasweep.core.topology import detect, load_arch

REPO = Path(__file__).resolve().parents[2]
LUMI = load_arch(REPO / "config" / "arch" / "lumi-g.yaml")
CXL = load_arch(REPO / "config" / "arch" / "cxl-example.yaml")
LAUNCHER_VARS = re.compile(r"^(SLURM_|OMPI_|PMI_|PMIX_|MPI_LOCALRANKID)")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not LAUNCHER_VARS.match(k)}
    env.update(extra)
    return env


def test_srun_line_is_the_seeds():
    argv = srun_argv(plan(LUMI, "interleaved", [0, 1, 2, 3], 2), ["build/bin/numa_latency", "--size=1-16384"])
    assert argv == ["srun", "--nodes=1", "--ntasks=8", "--mpi=pmix", "--cpu-bind=map_cpu:1,9,17,25,33,41,49,57",
                    "--hint=nomultithread", "kernels/wrapper_numa.sh", "--numa=0,0,1,1,2,2,3,3", "--",
                    "build/bin/numa_latency", "--size=1-16384"]


def test_srun_options_and_policies():
    ranks = plan(CXL, "sequential", [0], 2, "weighted:0,3@1,2")
    argv = srun_argv(ranks, ["k"], wrapper="w.sh", nomultithread=False, mpi=None)
    assert argv == ["srun", "--nodes=1", "--ntasks=2", "--cpu-bind=map_cpu:0,1", "w.sh", "--numa=0,3",
                    "--policy=weighted", "--weights=1,2", "--", "k"]
    argv = srun_argv(plan(CXL, "sequential", [0], 2, "weighted:0,3"), ["k"], wrapper="w.sh")
    assert argv[-4:] == ["--numa=0,3", "--policy=weighted", "--", "k"]  # the kernel's current weights
    argv = srun_argv(plan(LUMI, "sequential", [2], 2, "preferred:1"), ["k"])
    assert argv[-5:] == ["kernels/wrapper_numa.sh", "--numa=1,1", "--policy=preferred", "--", "k"]
    argv = srun_argv(plan(LUMI, "sequential", [2], 2, "interleave:0,1,2,3"), ["k"])
    assert "--numa=0,1,2,3" in argv and "--policy=interleave" in argv


def test_mpirun_line():
    ranks = plan(LUMI, "sequential", [0], 3)
    argv = mpirun_argv(ranks, ["k", "--size=16"], as_root=False)
    assert argv == ["mpirun", "-n", "3", "--bind-to", "none", "kernels/wrapper_numa.sh", "--cpus=1,2,3",
                    "--numa=0,0,0", "--", "k", "--size=16"]
    assert "--allow-run-as-root" in mpirun_argv(ranks, ["k"], as_root=True)


def test_direct_line():
    env, argv = direct_argv([33, 34, 41], "interleave:2,3", ["numa_bandwidth", "--threads=3"])
    assert env == {"OMP_NUM_THREADS": "3", "OMP_PLACES": "{33},{34},{41}", "OMP_PROC_BIND": "close"}
    assert argv == ["kernels/wrapper_numa.sh", "--cpuset=33-34,41", "--numa=2,3", "--policy=interleave", "--",
                    "numa_bandwidth", "--threads=3"]
    env, argv = direct_argv([1, 2], "local", ["k"], threads=1)
    assert env["OMP_PLACES"] == "{1}" and argv[1:3] == ["--cpuset=1", "--policy=local"]
    rank = plan(CXL, "sequential", [0], 1, "weighted:0,3@1,4")[0]
    _, argv = direct_argv([rank.cpu], rank, ["k"])
    assert argv[2:5] == ["--numa=0,3", "--policy=weighted", "--weights=1,4"]


def test_launch_refusals():
    with pytest.raises(NumasweepError, match="empty"):
        srun_argv([], ["k"])
    mixed = [RankPlacement(0, 1, 0, 0, "bind", [0]), RankPlacement(1, 2, 0, 0, "interleave", [0, 1])]
    with pytest.raises(NumasweepError, match="mix memory policies"):
        srun_argv(mixed, ["k"])
    with pytest.raises(NumasweepError, match="3 threads on 2 CPUs"):
        direct_argv([0, 1], "local", ["k"], threads=3)
    with pytest.raises(NumasweepError, match="one process"):
        direct_argv([0, 1], "nodes:0,1", ["k"])


def _allowed(stdout: str) -> list[str]:
    return re.findall(r"Cpus_allowed_list:\s*(\S+)", stdout)


def test_mpirun_line_binds_two_ranks_to_distinct_cpus_here():
    here = detect()
    free = here.free_cores(here.nodes[0].id)
    assert len(free) >= 2, "this test needs a machine with two cores"
    ranks = plan(here, "sequential", [here.nodes[0].id], 2)
    argv = mpirun_argv(ranks, ["grep", "Cpus_allowed_list", "/proc/self/status"],
                       wrapper=str(REPO / "kernels" / "wrapper_numa.sh"))
    proc = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(_allowed(proc.stdout)) == sorted(str(r.cpu) for r in ranks)


def test_direct_line_pins_the_process_here():
    here = detect()
    cpus = here.free_cores(here.nodes[0].id)[:2]
    env, argv = direct_argv(cpus, "local", ["sh", "-c", 'echo "places=$OMP_PLACES"; grep Cpus_allowed_list /proc/self/status'])
    argv[0] = str(REPO / argv[0])
    proc = subprocess.run(argv, capture_output=True, text=True, env=clean_env(**env), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"places={env['OMP_PLACES']}" in proc.stdout
    assert _allowed(proc.stdout) == [argv[1].split("=", 1)[1]]


def test_plan_command_shows_the_workflow_launch_line():
    """`python -m numasweep plan` and the workflow build a latency job's line with one function."""
    import shlex
    import sys

    from numasweep.planning import grid
    from numasweep.planning.launch import job_argv

    for domains, rpd in (("0", 1), ("0,1", 2)):
        config = {"latency": {"sweeps": [{"domains": [[int(d) for d in domains.split(",")]],
                                          "strategy": ["interleaved"], "ranks_per_domain": [rpd], "sizes": 16}]}}
        job = grid.expand(config, LUMI).jobs[0]
        for launcher in ("srun", "mpirun"):
            proc = subprocess.run([sys.executable, "-m", "numasweep", "plan", "--arch", "config/arch/lumi-g.yaml",
                                   "--interleaved", domains, "--ranks-per-domain", str(rpd), "--launcher", launcher,
                                   "--", *job.kernel_args], capture_output=True, text=True, cwd=REPO)
            assert proc.returncode == 0, proc.stderr
            line = shlex.join(job_argv(job, None, launcher=launcher))
            assert proc.stdout.splitlines()[1] == line
            assert ("srun" in line) == (launcher == "srun" and job.tasks > 1)
