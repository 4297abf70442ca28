"""kernels/wrapper_numa.sh run for real: numactl here, mpirun here, fixture trees for what this
one-node machine cannot show (several nodes), always with --dry-run there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WRAPPER = REPO / "kernels" / "wrapper_numa.sh"
TREES = REPO / "tests" / "fixtures" / "sysfs"
LAUNCHER_VARS = re.compile(r"^(SLURM_|OMPI_|PMI_|PMIX_|MPI_LOCALRANKID|NUMASWEEP_SYSFS)")


def run(*args: str, launcher: list[str] | None = None, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not LAUNCHER_VARS.match(k)}
    clean.update(env)
    return subprocess.run([*(launcher or []), str(WRAPPER), *args], capture_output=True, text=True,
                          env=clean, timeout=120)


def test_shellcheck_clean():
    assert shutil.which("shellcheck"), "shellcheck is not installed (apt-get install shellcheck)"
    proc = subprocess.run(["shellcheck", str(WRAPPER)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_help():
    proc = run("--help")
    assert proc.returncode == 0 and "--numa=N|LIST|auto" in proc.stdout


@pytest.mark.parametrize("args,policy,line", [
    (["--numa=0"], "bind", "membind: 0"),
    (["--numa=0", "--policy=preferred"], "preferred", "preferred node: 0"),
    (["--numa=0", "--policy=interleave"], "interleave", "interleavenode: 0"),
    (["--policy=local"], "local", None),
])
def test_numactl_applies_the_policy(args, policy, line):
    proc = run(*args, "--", "numactl", "--show")
    assert proc.returncode == 0, proc.stderr
    assert f"policy: {policy}" in proc.stdout
    if line:
        assert line in proc.stdout
    assert "[Rank 0] Executing: numactl" in proc.stderr


def test_binding_lines_are_the_seeds():
    proc = run("--numa=0", "--", "true")
    assert proc.stderr.splitlines() == ["[Rank 0] Binding to NUMA domain 0",
                                        "[Rank 0] Executing: numactl --membind=0 true"]
    assert run("--numa=0", "--quiet", "--", "true").stderr == ""


def test_cpus_pin_the_local_rank():
    for local, cpu in (("0", "1"), ("1", "0")):
        proc = run("--cpus=1,0", "--numa=0", "--", "grep", "Cpus_allowed_list", "/proc/self/status",
                   SLURM_LOCALID=local)
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"Cpus_allowed_list:\s*(\S+)", proc.stdout).group(1) == cpu


def test_open_mpi_local_rank_wins_over_a_stale_slurm_one():
    proc = run("--numa=0", "--cpus=0,1", "--dry-run", "--", "k", SLURM_LOCALID="0", OMPI_COMM_WORLD_LOCAL_RANK="1")
    assert "--physcpubind=1 " in proc.stderr
    proc = run("--numa=0", "--cpus=0,1", "--dry-run", "--", "k", PMI_LOCAL_RANK="1")
    assert "--physcpubind=1 " in proc.stderr


def test_mpirun_two_ranks_get_distinct_cpus():
    launcher = ["mpirun", "-n", "2", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    proc = run("--cpus=0,1", "--numa=auto", "--", "grep", "Cpus_allowed_list", "/proc/self/status", launcher=launcher)
    assert proc.returncode == 0, proc.stderr
    assert sorted(re.findall(r"Cpus_allowed_list:\s*(\S+)", proc.stdout)) == ["0", "1"]
    assert sorted(re.findall(r"Binding to NUMA domain (\d+)", proc.stderr)) == ["0", "0"]


def test_missing_node_exits_2_naming_it():
    proc = run("--numa=0,7", "--", "true")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "NUMA node 7 does not exist" in proc.stderr


def test_dry_run_prints_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    proc = run("--numa=0", "--dry-run", "--quiet", "--", "touch", str(marker))
    assert proc.returncode == 0
    assert f"[Rank 0] Would execute: numactl --membind=0 touch {marker}" in proc.stderr
    assert not marker.exists()


def test_auto_round_robins_over_the_machines_nodes():
    sysfs = str(TREES / "lumi-g" / "sys")
    nodes = []
    for local in range(6):
        proc = run("--numa=auto", "--dry-run", "--", "k", SLURM_LOCALID=str(local), NUMASWEEP_SYSFS=sysfs)
        assert proc.returncode == 0, proc.stderr
        nodes.append(re.search(r"--membind=(\d+)", proc.stderr).group(1))
    assert nodes == ["0", "1", "2", "3", "0", "1"]
    proc = run("--numa=auto", "--policy=interleave", "--dry-run", "--", "k",
               NUMASWEEP_SYSFS=str(TREES / "cxl-example" / "sys"))
    assert "numactl --interleave=0,1,3 k" in proc.stderr


def test_node_check_uses_the_tree():
    proc = run("--numa=0,2", "--policy=interleave", "--dry-run", "--", "k",
               NUMASWEEP_SYSFS=str(TREES / "cxl-example" / "sys"))
    assert proc.returncode == 2 and "NUMA node 2 does not exist on this machine (nodes: 0,1,3)" in proc.stderr


def test_weighted_goes_to_the_kernel():
    proc = run("--numa=0", "--policy=weighted", "--weights=3", "--", "echo", "--size=1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "--policy=weighted --mem-nodes=0 --weights=3 --size=1"


def test_seed_form_defaults_to_numa_latency():
    proc = run("--numa=0", "--dry-run", "--", "--size=2048")
    assert proc.returncode == 0
    assert f"numactl --membind=0 {REPO}/build/bin/numa_latency --size=2048" in proc.stderr


def test_weighted_without_weights_keeps_the_kernels_current_ones():
    proc = run("--numa=0", "--policy=weighted", "--dry-run", "--", "--size=2048")
    assert proc.returncode == 0, proc.stderr
    assert f"{REPO}/build/bin/numa_latency --policy=weighted --mem-nodes=0 --size=2048" in proc.stderr
    assert "--weights" not in proc.stderr and "the kernel's current weights" in proc.stderr


@pytest.mark.parametrize("args,message", [
    (["--numa=0,0", "--", "true"], "local rank 3 has no entry in --numa=0,0"),
    (["--cpus=0,99", "--", "true"], "CPU 99 does not exist"),
    (["--numa=0", "--policy=weighted", "--weights=1,2", "--", "true"], "2 weight(s) for 1 node(s)"),
    (["--numa=0", "--policy=weighted", "--weights=256", "--", "true"], "weight '256' is not in 1..255"),
    (["--numa=0", "--weights=1", "--", "true"], "--weights is for --policy=weighted only"),
    (["--numa=zero", "--", "true"], "--numa=zero is not a node list"),
    (["--policy=spread", "--", "true"], "--policy=spread"),
    (["--frobnicate", "--", "true"], "unknown option '--frobnicate'"),
    (["--numa=0"], "no kernel after --"),
    (["--cpus=0", "--cpuset=0-1", "--", "true"], "not both"),
])
def test_bad_invocations_exit_2_in_one_line(args, message):
    proc = run(*args, SLURM_LOCALID="3")
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
