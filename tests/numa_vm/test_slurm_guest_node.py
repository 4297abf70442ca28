"""A SLURM cluster whose compute node is not the machine snakemake runs on: the four-node NUMA
guest joins the test cluster as node `numa-vm` (its own munged and slurmd, on the cluster's
bridge through a TAP device: tests/slurm/cluster.sh up --guest, run.sh --tap), while
slurmctld and snakemake stay on this machine, which is no node of the cluster: a login node.

The default config's `arch: auto` under profiles/slurm (tests/slurm/guest.yaml: one bandwidth
job on CPU 3 bound to NUMA node 3) must then plan, build, run and report for the guest: its topology detected
by a job on it, launch lines that name a CPU and a NUMA node this machine lacks, the kernels
compiled there for its CPU, the report's system the guest's. A campaign whose arch file names
CPUs the node lacks fails in its topology job with one line naming both machines."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.slurmtest import GUEST, GUEST_NODE, STATE, Clusters, SnakemakeRun, provenance, read_rows, run, run_dir, snakemake
from numa_guest import BOOT_RETRIES, Layout, accel, panicked_before_command, run_sh_command

from numasweep.core import topology

pytestmark = [pytest.mark.numa_vm, pytest.mark.slurm, pytest.mark.workflow, pytest.mark.timeout(3000)]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CAMPAIGN = REPO / "tests" / "slurm" / "guest.yaml"
LAYOUT = Layout(nodes=4)
# The guest's address on the cluster's bridge (cluster.sh: guest_addr) and its TAP device.
ADDRESS, TAP = "10.213.77.21/24", "nsw-guest"
GUEST_LIMIT_S = 2400
IDLE_WAIT_S = 240
# Under emulation every job step starts Python and snakemake there: minutes for the campaign.
SWEEP_LIMIT_S = 1800   # 19 minutes once on a busy 2-core host (four SLURM jobs, each starting snakemake under TCG)
PARTITION = ("--default-resources", "runtime=60", "mem_mb=0", "slurm_partition=guest")


@dataclass(frozen=True)
class GuestNode:
    out: Path      # shared writable with the guest: the run folder and the guest's logs
    workdir: Path  # the campaign's run folder (a copy of the repository, no build)


def guest_state(node: str) -> str:
    out = run(["sinfo", "-h", "-n", node, "-o", "%t"])
    return out.stdout.strip()


def boot_guest(out: Path) -> subprocess.Popen:
    cmd = run_sh_command(LAYOUT, GUEST_LIMIT_S, accel(), ["bash", str(REPO / "tests" / "slurm" / "guest_node.sh"), str(out)], out)
    cut = cmd.index("--")
    cmd[cut:cut] = [f"--tap={TAP}", f"--ip={ADDRESS}"]
    return subprocess.Popen(cmd, cwd=REPO, stdout=open(out / "run.out", "w"), stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def guest_node(slurm_clusters: Clusters, guest_kernel: Path) -> Iterator[GuestNode]:
    cluster = slurm_clusters.use(GUEST)
    out = cluster.workdir / "guest-node"
    out.mkdir()
    shutil.copyfile(STATE / "munge" / "munge.key", out / "munge.key")
    workdir = run_dir(out, "repo")
    shutil.rmtree(workdir / "build")  # the kernels are built by a job on the guest
    proc = None
    try:
        for attempt in range(1, BOOT_RETRIES + 2):
            proc = boot_guest(out)
            deadline = time.monotonic() + IDLE_WAIT_S
            while time.monotonic() < deadline and proc.poll() is None and guest_state(GUEST_NODE) != "idle":
                time.sleep(2)
            if proc.poll() is None or attempt > BOOT_RETRIES:
                break
            # A guest kernel panic while its CPUs come up (numa_guest.boot): boot again.
            if proc.returncode != 125 or not panicked_before_command(out / "console.log"):
                break
            (out / "console.log").rename(out / f"console-boot-{attempt}.log")
        state = guest_state(GUEST_NODE)
        assert state == "idle", (
            f"the guest node {GUEST_NODE} is '{state}', not idle, after {IDLE_WAIT_S}s:\n{(out / 'run.out').read_text()[-3000:]}")
        yield GuestNode(out=out, workdir=workdir)
    finally:
        (out / "stop").touch()
        if proc is not None:
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def runs(guest_node: GuestNode) -> tuple[SnakemakeRun, SnakemakeRun]:
    """The campaign's sweep, and beside it, in a run folder of its own, the topology job of a
    campaign whose arch file (LUMI-G's, CPUs 0-127) the guest contradicts. Every SLURM job on the
    guest spends minutes starting snakemake under emulation: run one after the other, the two
    would wait for each other's starts."""
    other = run_dir(guest_node.out, "contradicted")
    with ThreadPoolExecutor(max_workers=1) as pool:
        contradicted = pool.submit(snakemake, other, "--configfile", str(CAMPAIGN), *PARTITION, "--config",
                                   "arch=config/arch/lumi-g.yaml", "system=contradicted", "--",
                                   "results/contradicted/topology.json", timeout=SWEEP_LIMIT_S)
        sweep = snakemake(guest_node.workdir, "--configfile", str(CAMPAIGN), *PARTITION, timeout=SWEEP_LIMIT_S)
        return sweep, contradicted.result()


@pytest.fixture(scope="module")
def sweep(runs: tuple[SnakemakeRun, SnakemakeRun]) -> SnakemakeRun:
    return runs[0]


def test_the_guest_node_is_other_hardware_than_this_machine(guest_node: GuestNode) -> None:
    here = topology.detect()
    assert 3 not in here.all_cpus() and 3 not in here.node_ids(), (
        f"this machine has CPU 3 or NUMA node 3 ({here.node_ids()}, CPUs {here.all_cpus()}): the test's point, a launch "
        "line only the compute node can run, needs a machine with fewer")


def test_the_plan_is_the_compute_nodes_detected_by_a_job_on_it(guest_node: GuestNode, sweep: SnakemakeRun) -> None:
    sweep.assert_succeeded()
    detected = guest_node.workdir / "results" / ".compute-nodes" / "partition-guest.json"
    assert f"planned from compute node {GUEST_NODE} of partition guest" in sweep.output, sweep.output[-3000:]
    guest = topology.load(detected)
    assert guest.system == GUEST_NODE and guest.node_ids() == [0, 1, 2, 3], guest.to_json()[:600]
    # The launch line binds to CPU 3 and node 3's memory: the guest's, not this machine's; so
    # does the calibration of the code shapes, on CPU 3 with its local memory.
    lines = [line for line in sweep.output.splitlines() if "numa_bandwidth" in line and "--cpuset=" in line]
    calibration = [line for line in lines if "--calibrate=" in line]
    points = [line for line in lines if line not in calibration]
    assert points and all("--cpuset=3 --numa=3 --policy=bind" in line for line in points), points
    assert calibration and all("--cpuset=3 --policy=local" in line for line in calibration), calibration
    csvs = sorted((guest_node.workdir / "results" / "guestnode" / "bandwidth").glob("*.csv"))
    assert len(csvs) == 1, csvs
    _, rows = read_rows(csvs[0])
    seen = {(r["host"], r["cpus"], r["cpu_nodes"], r["policy"], r["mem_nodes"]) for r in rows}
    assert rows and seen == {(GUEST_NODE, "3", "3", "bind", "3")}, rows[:2]


def test_the_kernels_were_built_by_a_job_on_the_compute_node(guest_node: GuestNode, sweep: SnakemakeRun) -> None:
    sweep.assert_succeeded()
    assert re.search(r"submitted with SLURM jobid \d+ \(log: \S*/group_build", sweep.output), sweep.output[-3000:]
    csv = next((guest_node.workdir / "results" / "guestnode" / "bandwidth").glob("*.csv"))
    kernel = provenance(csv)["kernel"]
    guest, here = topology.load(guest_node.workdir / "results" / "guestnode" / "topology.json"), topology.detect()
    assert kernel["build_cpu"] == guest.cpu_model != here.cpu_model, (kernel["build_cpu"], guest.cpu_model, here.cpu_model)


def test_the_report_is_the_compute_nodes(guest_node: GuestNode, sweep: SnakemakeRun) -> None:
    sweep.assert_succeeded()
    report = (guest_node.workdir / "report" / "guestnode" / "experimentation.md").read_text()
    guest = topology.load(guest_node.workdir / "results" / "guestnode" / "topology.json")
    assert guest.system == GUEST_NODE and f"- **CPU**: {guest.cpu_model}" in report and "- **NUMA nodes**: 4" in report, (
        report[:2000])


def test_an_arch_file_the_node_contradicts_is_refused_in_one_line(guest_node: GuestNode,
                                                                  runs: tuple[SnakemakeRun, SnakemakeRun]) -> None:
    """LUMI-G's arch file names CPUs 0-127: its topology job on the guest fails, naming both."""
    result = runs[1]
    assert result.returncode != 0, result.output[-3000:]
    lines = {line for line in result.output.splitlines() if line.startswith("numasweep: error:")}
    assert len(lines) == 1, result.output[-3000:]
    line = lines.pop()
    assert "config/arch/lumi-g.yaml describes lumi-g" in line and f"this job runs on {GUEST_NODE}" in line, line
    assert "CPU(s) 4-127 are not here" in line and "Traceback" not in result.output, line
    assert not (guest_node.out / "contradicted" / "results" / "contradicted" / "topology.json").exists()


def test_grid_counts_from_the_same_compute_node(guest_node: GuestNode, sweep: SnakemakeRun) -> None:
    """`grid --count` on the login node plans as the workflow did: from the kept detection."""
    sweep.assert_succeeded()
    proc = subprocess.run([sys.executable, "-m", "numasweep", "grid", "--config", str(CAMPAIGN), "--count",
                           "--partition", "guest"], cwd=guest_node.workdir, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"planned from compute node {GUEST_NODE} of partition guest, detected by an earlier run" in proc.stderr
    counts = dict(line.split("\t")[:2] for line in proc.stdout.splitlines() if "\t" in line)
    assert counts["bandwidth"] == "1" and counts["latency"] == "0", proc.stdout
