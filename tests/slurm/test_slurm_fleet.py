"""The multi-node cluster: two slurmd nodes, each in a network namespace of its own with its own
host name and address, under one slurmctld, with accounting through slurmdbd and MariaDB.

The workflow runs tests/slurm/sweep.yaml through profiles/slurm with the plugin's sacct status
mode; sacct's rows for its jobs are checked against what each job recorded, and the two
benchmark jobs, each taking a node alone, run at once on the two nodes. Then two latency points
meant to be compared run as one Snakemake job group: one SLURM job, one node, one after another.
Last, a fleet campaign runs the sweep on every node of the partition while node2's kernels run
under a CPU quota: the report names both hosts and flags node2.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from helpers.slurmtest import (
    REPO,
    BANDWIDTH_COLUMNS,
    CLUSTER_SH,
    LATENCY_COLUMNS,
    Cluster,
    SnakemakeRun,
    compute_node_arch,
    our_namespaces,
    provenance,
    read_rows,
    rule_of,
    run,
    run_dir,
    seed_topology,
    snakemake,
)

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.slurm, pytest.mark.workflow, pytest.mark.timeout(420)]

SYSTEM = "slurmtest"
SUBMITTED = re.compile(r"Job \d+ has been submitted with SLURM jobid (\d+)")
SACCT_FIELDS = ("JobIDRaw", "JobName", "State", "ExitCode", "NodeList", "Account", "Start", "End")


@dataclass(frozen=True)
class AccountedJob:
    job_id: str
    name: str
    state: str
    exit_code: str
    node: str
    account: str
    start: datetime
    end: datetime


def sacct_jobs(job_ids: list[str]) -> dict[str, AccountedJob]:
    """The accounting database's record of each job (allocation lines only, -X)."""
    out = run(
        ["sacct", "-X", "--parsable2", "--noheader", "-j", ",".join(job_ids), "-o", ",".join(SACCT_FIELDS)],
        timeout=30,
    )
    assert out.returncode == 0, f"sacct failed: {out.stderr}"
    jobs = {}
    for line in out.stdout.splitlines():
        job_id, name, state, exit_code, node, account, start, end = line.split("|")
        jobs[job_id] = AccountedJob(
            job_id, name, state, exit_code, node, account, datetime.fromisoformat(start), datetime.fromisoformat(end)
        )
    return jobs


def test_each_node_is_a_namespace_with_its_own_name_and_address(slurm_fleet: Cluster) -> None:
    assert slurm_fleet.nodes == ("node1", "node2"), f"sinfo lists {slurm_fleet.nodes}"
    assert sorted(our_namespaces()) == ["numasweep-node1", "numasweep-node2"], our_namespaces()
    srun = run(["srun", "-N", "2", "-l", "sh", "-c", "echo $(hostname) $(ip -4 -o addr show eth0)"])
    assert srun.returncode == 0, srun.stderr
    seen = dict(re.findall(r"^\d+: (\S+) \d+: eth0\s+inet (\S+)/", srun.stdout, re.M))
    assert set(seen) == {"node1", "node2"}, f"the tasks saw host names {sorted(seen)}:\n{srun.stdout}"
    assert len(set(seen.values())) == 2, f"both nodes have the address {seen}"
    addresses = run(["scontrol", "show", "node", "-o"]).stdout
    for node, address in seen.items():
        assert f"NodeName={node} " in addresses and f"NodeAddr={address} " in addresses, (
            f"{node} answers from {address}, which slurmctld does not list for it"
        )


def test_status_names_every_daemon_of_the_fleet(slurm_fleet: Cluster) -> None:
    status = run(["bash", str(CLUSTER_SH), "status"])
    assert status.returncode == 0, status.stdout + status.stderr
    for daemon in ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd@node1", "slurmd@node2"):
        assert re.search(rf"^{daemon}: running \(PID \d+\)$", status.stdout, re.M), status.stdout


def test_one_mpi_step_spans_both_nodes(slurm_fleet: Cluster, kernels_bin: Path, tmp_path: Path) -> None:
    """Open MPI under PMIx across two network namespaces: rank 0 on node1, rank 1 on node2."""
    csv_path = tmp_path / "latency.csv"
    srun = run(
        ["srun", "--mpi=pmix", "-N", "2", "-n", "2", str(kernels_bin / "numa_latency"), "--size=64K",
         "--min-time=0.01", "--samples=3", "--quiet", f"--csv={csv_path}"],
        timeout=120,
    )
    assert srun.returncode == 0, srun.stdout + srun.stderr
    _, rows = read_rows(csv_path)
    assert {(r["rank"], r["host"]) for r in rows} == {("0", "node1"), ("1", "node2")}, rows


def test_user_without_an_account_is_refused(slurm_fleet: Cluster) -> None:
    """AccountingStorageEnforce=associations: slurmdbd's associations decide who may submit."""
    sbatch = run(["sbatch", "-A", "no-such-account", "--wrap", "true"], timeout=30)
    assert sbatch.returncode != 0, f"sbatch accepted a job for an account that does not exist: {sbatch.stdout}"
    assert "Invalid account" in sbatch.stderr, sbatch.stderr


@pytest.fixture(scope="module")
def arch(slurm_fleet: Cluster) -> Path:
    """The arch file of the campaigns below: node1 described by a job on it, as docs/slurm.md
    shows for a campaign that keeps one."""
    return compute_node_arch(slurm_fleet.workdir / "compute-node.json", "node1")


@pytest.fixture(scope="module")
def sacct_sweep(slurm_fleet: Cluster, kernels_bin: Path) -> tuple[Path, SnakemakeRun, dict[str, AccountedJob]]:
    """The sweep with `arch: auto` from this machine, which is no node of the cluster (a login
    node): the plan is a compute node's, detected by a job on it, and the kernels are built by
    a job on a compute node (no build folder is copied in)."""
    workdir = run_dir(slurm_fleet.workdir, "fleet-sacct")
    shutil.rmtree(workdir / "build")
    result = snakemake(workdir, "--configfile", str(HERE / "sweep.yaml"), "--slurm-status-command", "sacct",
                       "--verbose")
    submitted = SUBMITTED.findall(result.output)
    return workdir, result, sacct_jobs(submitted) if submitted else {}


def test_arch_auto_on_a_login_node_plans_from_a_compute_node_detected_by_a_job(
    sacct_sweep: tuple[Path, SnakemakeRun, dict]
) -> None:
    workdir, result, _ = sacct_sweep
    lines = [line for line in result.output.splitlines() if "arch: auto: planned from" in line]
    detected = workdir / "results" / ".compute-nodes" / "partition-default.json"
    assert lines and all(line == lines[0] for line in lines) and str(detected.relative_to(workdir)) in lines[0], (
        result.output[-3000:])
    node = json.loads(detected.read_text())["system"]
    assert node in ("node1", "node2") and f"compute node {node} " in lines[0], lines[0]
    # The topology job's record is the plan's topology, set against the node it ran on.
    record = json.loads((workdir / "results" / SYSTEM / "topology.json").read_text())
    assert record["nodes"] == json.loads(detected.read_text())["nodes"], record
    out = run(["sacct", "-X", "--parsable2", "--noheader", "--name", "numasweep-topology", "-o", "JobIDRaw,State,NodeList"])
    assert any(r.split("|")[1:] == ["COMPLETED", node] for r in out.stdout.split()), out.stdout
    # A second dry run reads the file: no job, the same line.
    again = snakemake(workdir, "-n", "--configfile", str(HERE / "sweep.yaml"))
    assert again.returncode == 0 and "detecting the compute node" not in again.output, again.output[-3000:]
    assert "detected by an earlier run" in again.output, again.output[-3000:]


def test_the_kernels_are_built_by_one_job_on_a_compute_node(sacct_sweep: tuple[Path, SnakemakeRun, dict]) -> None:
    workdir, result, _ = sacct_sweep
    build = re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*/group_build", result.output)
    assert len(build) == 1, f"one build job (group build) expected:\n{result.output[-3000:]}"
    job = sacct_jobs(build)[build[0]]
    assert job.node in ("node1", "node2") and job.state == "COMPLETED", job
    for kernel in ("numa_latency", "numa_bandwidth"):
        assert (workdir / "build" / "bin" / kernel).is_file(), kernel


def test_sweep_runs_with_the_sacct_status_mode(sacct_sweep: tuple[Path, SnakemakeRun, dict]) -> None:
    _, result, _ = sacct_sweep
    result.assert_succeeded()
    # The plugin's per-cycle timing line (--verbose) names the command each status query used.
    used = set(re.findall(r"Status query timing \(cycle\): command=(\w+)", result.output))
    assert used == {"sacct"}, f"status queries used {used or 'nothing'}"


def test_sacct_lists_every_submitted_job_completed_on_a_node(sacct_sweep: tuple[Path, SnakemakeRun, dict]) -> None:
    _, result, jobs = sacct_sweep
    submitted = SUBMITTED.findall(result.output)
    assert submitted and sorted(jobs) == sorted(submitted), f"submitted {submitted}, sacct lists {sorted(jobs)}"
    names = {job.name for job in jobs.values()}
    assert len(names) == 1, f"one run, one job name (the plugin's run id), sacct: {names}"
    for job in jobs.values():
        assert (job.state, job.exit_code) == ("COMPLETED", "0:0"), job
        assert job.node in ("node1", "node2"), job
        assert job.account == "numasweep", f"job {job.job_id} charged to {job.account!r}"
    rules = {rule_of(result.seen[j][0]) for j in jobs if j in result.seen}
    assert {"topology", "latency", "bandwidth"} <= rules, f"squeue saw rules {rules}"


def test_each_result_names_the_job_and_host_sacct_lists(sacct_sweep: tuple[Path, SnakemakeRun, dict]) -> None:
    workdir, _, jobs = sacct_sweep
    results = workdir / "results" / SYSTEM
    for bench, columns in (("latency", LATENCY_COLUMNS), ("bandwidth", BANDWIDTH_COLUMNS)):
        csvs = sorted((results / bench).glob("*.csv"))
        assert len(csvs) == 1, f"{bench}: {csvs}"
        header, rows = read_rows(csvs[0])
        assert header == columns and rows, f"{csvs[0].name}: columns {header}, {len(rows)} rows"
        record = provenance(csvs[0])
        # The nodes share this machine's kernel; the record says so from inside the node.
        assert record["system"]["kernel_release"] == os.uname().release, record["system"]
        job = jobs.get(str(record["slurm_job_id"]))
        assert job is not None, f"{csvs[0].name} names a SLURM job sacct does not list"
        assert {r["host"] for r in rows} == {job.node}, (
            f"{csvs[0].name}: the kernel saw host {sorted({r['host'] for r in rows})}, sacct says {job.node}"
        )
    assert (workdir / "report" / SYSTEM / "experimentation.md").is_file()


def test_the_two_exclusive_benchmark_jobs_ran_at_once_on_the_two_nodes(
    sacct_sweep: tuple[Path, SnakemakeRun, dict]
) -> None:
    """The measuring jobs take a node alone each: the latency job, the bandwidth calibration
    (calibration_run) and the bandwidth job, which waits for the calibration. Those that ran at
    once ran on the two nodes."""
    _, result, jobs = sacct_sweep
    # the rule of each submitted job, from the log path the plugin prints (.../rule_<rule>/...)
    rules = dict(re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_([a-z_]+)/", result.output))
    measuring = ("latency", "bandwidth", "calibration_run")
    bench = [jobs[j] for j, rule in rules.items() if rule in measuring and j in jobs]
    assert sorted(rules[b.job_id] for b in bench) == sorted(measuring), f"measuring jobs in sacct: {bench}"
    at_once = [(a, b) for a in bench for b in bench if a is not b and a.start <= b.start < a.end]
    assert at_once, f"the measuring jobs ran one after the other: {bench}"
    assert all({a.node, b.node} == {"node1", "node2"} for a, b in at_once), at_once


def test_each_benchmark_job_asks_for_one_node_and_its_memory(
    sacct_sweep: tuple[Path, SnakemakeRun, dict]
) -> None:
    """--nodes=1 and --mem of the node's memory (the topology's, at most what sinfo gives a node
    of as many CPUs): an exclusive job gets only the memory it asks for where a site sets
    DefMemPerCPU."""
    workdir, result, jobs = sacct_sweep
    bench = [j for j in jobs if j in result.seen and rule_of(result.seen[j][0]) in ("latency", "bandwidth")]
    assert len(bench) == 2, bench
    topo = json.loads((workdir / "results" / SYSTEM / "topology.json").read_text())
    total = sum(int(n["memory_bytes"]) for n in topo["nodes"]) // (1 << 20)
    cpus = sum(len(n["cpus"]) for n in topo["nodes"])
    sinfo = run(["sinfo", "-h", "-N", "-o", "%c %m"]).stdout.split("\n")
    configured = [int(m) for c, m in (line.split() for line in sinfo if line.strip()) if int(c) == cpus]
    expected = min([total, *configured])
    asked = run(["sacct", "-X", "--parsable2", "--noheader", "-j", ",".join(bench), "-o", "JobIDRaw,ReqMem,NNodes"])
    assert asked.returncode == 0, asked.stderr
    rows = [line.split("|") for line in asked.stdout.split()]
    assert sorted(r[0] for r in rows) == sorted(bench) and all(r[1:] == [f"{expected}M", "1"] for r in rows), (
        f"each benchmark job should ask for {expected}M on 1 node: {rows}")


@pytest.fixture(scope="module")
def compared(slurm_fleet: Cluster, kernels_bin: Path, arch: Path) -> tuple[Path, SnakemakeRun]:
    """Concurrent and serial latency, the seed's comparison, as one job group (config
    `group_compared`: the group is named by the comparison, and its `compared` job lists them).

    `--resources tasks=2` is the constraint Snakemake's group layering needs to place the two
    2-rank points one after another; without it the group would ask for their sum (4 tasks),
    more than a node has."""
    workdir = run_dir(slurm_fleet.workdir, "fleet-group")
    config = yaml.safe_load((HERE / "sweep.yaml").read_text())
    config["latency"]["sweeps"][0]["mode"] = ["concurrent", "serial"]
    config["bandwidth"]["sweeps"] = []
    config["arch"] = str(arch)
    (workdir / "compare.yaml").write_text(yaml.safe_dump(config))
    seed_topology(workdir, SYSTEM)
    result = snakemake(
        workdir, "--configfile", "compare.yaml", "--slurm-status-command", "sacct",
        "--config", "group_compared=true", "--resources", "tasks=2",
    )
    return workdir, result


def test_compared_points_run_in_one_allocation_on_one_node_one_after_another(
    compared: tuple[Path, SnakemakeRun]
) -> None:
    workdir, result = compared
    result.assert_succeeded()
    csvs = sorted((workdir / "results" / SYSTEM / "latency").glob("*.csv"))
    assert len(csvs) == 2, f"two points, one CSV each: {csvs}"
    records = [provenance(path) for path in csvs]
    job_ids = {str(r["slurm_job_id"]) for r in records}
    assert len(job_ids) == 1, f"the points ran in SLURM jobs {sorted(job_ids)}, not one allocation"
    (job,) = sacct_jobs(sorted(job_ids)).values()
    assert job.state == "COMPLETED", job
    hosts = {r["host"] for path in csvs for r in read_rows(path)[1]}
    assert hosts == {job.node}, f"rows name hosts {sorted(hosts)}; the group's job ran on {job.node}"
    assert {r["mode"] for path in csvs for r in read_rows(path)[1]} == {"concurrent", "serial"}
    first, second = sorted(records, key=lambda r: r["start"])
    assert first["end"] <= second["start"], (
        f"the points overlapped: {first['start']}..{first['end']} and {second['start']}..{second['end']}"
    )
    # The plugin files a group job's log under group_<group>, here the comparison's name.
    group = "lat-sequential-d0-local-rep0"
    assert re.search(rf"submitted with SLURM jobid {job.job_id} \(log: \S*/group_{group}", result.output), (
        f"SLURM job {job.job_id} was not submitted as the group job"
    )
    listed = (workdir / "logs" / SYSTEM / "groups" / f"{group}.txt").read_text().split()
    assert sorted(listed) == sorted(str(p.relative_to(workdir)) for p in csvs), listed


# On node2 the kernels run under a CPU quota: 1 ms of CPU time per 10 ms period for all of them
# together (a cgroup v1 CFS quota). The campaign's wrapper joins that group on node2 only, then
# execs the project's wrapper, so only the measurement is slowed, not snakemake or the job steps.
SLOW_NODE = "node2"
QUOTA = Path("/sys/fs/cgroup/cpu/numasweep-slow-node")
QUOTA_US, PERIOD_US = 1000, 10000
SLOW_WRAPPER = """#!/bin/sh
[ "$(hostname)" = {node} ] && echo $$ > {procs}
exec {wrapper} "$@"
"""


def remove_quota_group() -> None:
    """Every process still in the group back to the root group, then the group removed."""
    if not QUOTA.exists():
        return
    for _ in range(50):
        for pid in (QUOTA / "cgroup.procs").read_text().split():
            try:
                (QUOTA.parent / "cgroup.procs").write_text(pid)
            except OSError:
                pass  # ended meanwhile
        try:
            QUOTA.rmdir()
            return
        except OSError:
            time.sleep(0.2)  # a process that just exited is still counted for a moment
    QUOTA.rmdir()


@pytest.fixture(scope="module")
def fleet_campaign(slurm_fleet: Cluster, kernels_bin: Path, arch: Path) -> tuple[Path, SnakemakeRun]:
    """The sweep on every node of the partition (fleet.partition), node2's kernels slowed."""
    workdir = run_dir(slurm_fleet.workdir, "fleet-campaign")
    wrapper = workdir / "slow_on_node2.sh"
    wrapper.write_text(SLOW_WRAPPER.format(node=SLOW_NODE, procs=QUOTA / "cgroup.procs",
                                           wrapper=workdir / "kernels" / "wrapper_numa.sh"))
    wrapper.chmod(0o755)
    config = yaml.safe_load((HERE / "sweep.yaml").read_text())
    config["fleet"] = {"partition": "debug"}
    config["arch"] = str(arch)
    config["wrapper"] = f"./{wrapper.name}"  # a path, so env finds it without PATH
    # More points than the shared sweep, so each node's interval rests on 14 latency points.
    config["latency"]["sweeps"][0]["sizes"] = "16K-1M"
    (workdir / "fleet.yaml").write_text(yaml.safe_dump(config))
    seed_topology(workdir, SYSTEM)
    assert QUOTA.parent.is_dir(), f"no cgroup v1 cpu controller at {QUOTA.parent}: cannot slow {SLOW_NODE}"
    QUOTA.mkdir(exist_ok=True)
    try:
        (QUOTA / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (QUOTA / "cpu.cfs_quota_us").write_text(str(QUOTA_US))
        result = snakemake(workdir, "--configfile", "fleet.yaml", "--slurm-status-command", "sacct")
    finally:
        remove_quota_group()
    return workdir, result


def test_fleet_campaign_runs_each_point_on_each_node(fleet_campaign: tuple[Path, SnakemakeRun]) -> None:
    workdir, result = fleet_campaign
    result.assert_succeeded()
    for bench in ("latency", "bandwidth"):
        csvs = sorted((workdir / "results" / SYSTEM / bench).glob("*.csv"))
        hosts = {path.stem.rsplit("-on-", 1)[1]: {r["host"] for r in read_rows(path)[1]} for path in csvs}
        # One copy of the job per node, each measured on the node its id names.
        assert hosts == {"node1": {"node1"}, "node2": {"node2"}}, f"{bench}: {hosts}"


def test_fleet_report_names_each_host_and_flags_the_slowed_node(fleet_campaign: tuple[Path, SnakemakeRun]) -> None:
    workdir, result = fleet_campaign
    result.assert_succeeded()
    report = (workdir / "report" / SYSTEM / "experimentation.md").read_text()
    section = report.split("## Fleet: the nodes compared", 1)[1].split("\n## ", 1)[0]
    # The quota slows latency (each sample is >= 10 ms of wall time, so it spans throttled periods);
    # STREAM's best of N can fit one iteration inside a quota window, and the two nodes share this
    # machine's CPUs, so bandwidth may rank either way: only latency is asserted.
    ranked = re.findall(r"^\| (\d) \| (node\d) \| (\d+\.\d\d)x \(95% interval", section, re.M)
    assert [(rank, host) for rank, host, _ in ranked] == [("1", "node2"), ("2", "node1")], section
    flagged = re.findall(r"^- \*\*(node\d)\*\*, (\w+) \(\w+\): \d+\.\d\dx \(95% interval", section, re.M)
    assert ("node2", "latency") in flagged and ("node1", "latency") not in flagged, section
    assert (workdir / "report" / SYSTEM / "figures" / "fleet" / "fleet_nodes--all.png").stat().st_size > 0


def test_a_drained_node_is_left_out_of_the_fleet_in_one_line(slurm_fleet: Cluster) -> None:
    """A node that takes no job (drained) is not planned: a job pinned to it would pend until
    someone resumed it. The plan is the other node's, and one line names the one left out."""
    drain = run(["scontrol", "update", f"nodename={SLOW_NODE}", "state=drain", "reason=numasweep-test"])
    assert drain.returncode == 0, drain.stderr
    try:
        config = yaml.safe_load((HERE / "sweep.yaml").read_text())
        config["fleet"] = {"partition": "debug"}
        workdir = run_dir(slurm_fleet.workdir, "fleet-drained")
        (workdir / "fleet.yaml").write_text(yaml.safe_dump(config))
        count = run([sys.executable, "-m", "numasweep", "grid", "--config", str(workdir / "fleet.yaml"),
                     "--detect"], cwd=REPO)
    finally:
        resume = run(["scontrol", "update", f"nodename={SLOW_NODE}", "state=resume"])
    assert resume.returncode == 0, resume.stderr
    assert count.returncode == 0, count.stderr
    jobs = [line.split("\t")[1] for line in count.stdout.splitlines() if not line.startswith("#")]
    assert jobs and all(job.endswith("-on-node1") for job in jobs), jobs
    warned = [line for line in count.stderr.splitlines() if "left out" in line]
    assert len(warned) == 1 and f"{SLOW_NODE} (drain" in warned[0] and "node1" not in warned[0], count.stderr
