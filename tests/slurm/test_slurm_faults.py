"""Failures on the real cluster, and where single-process kernels get their CPUs.

One campaign of two single-process jobs, a one-rank latency job and a bandwidth job, both bound
to the node's last CPU (every other CPU reserved in the topology): the second job is cancelled
while it runs, then the same command is rerun.
A second campaign hands the latency kernel an argument it refuses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from numasweep.core.units import parse_cpulist
from helpers.slurmtest import (
    Cluster,
    SnakemakeRun,
    detect_topology,
    job_of,
    launch_option,
    provenance,
    read_rows,
    run,
    run_dir,
    seed_topology,
    snakemake,
)

HERE = Path(__file__).resolve().parent

# Above two snakemake runs' own limits, so that their `timeout -k` always fires first.
pytestmark = [pytest.mark.slurm, pytest.mark.workflow, pytest.mark.timeout(720)]

SYSTEM = "slurmtest"
BENCH_RULES = ("rule_latency", "rule_bandwidth")
SUBMITTED = re.compile(r"Job \d+ has been submitted with SLURM jobid (\d+)")


def write_sweep(workdir: Path, settings: dict | None = None, **changes: dict | None) -> str:
    """tests/slurm/sweep.yaml in workdir, with top-level settings replaced and a benchmark's
    first sweep changed (a dict of keys) or left out (None)."""
    config = yaml.safe_load((HERE / "sweep.yaml").read_text()) | (settings or {})
    for bench, sweep_changes in changes.items():
        if sweep_changes is None:
            config[bench]["sweeps"] = []
        else:
            config[bench]["sweeps"][0].update(sweep_changes)
    (workdir / "sweep.yaml").write_text(yaml.safe_dump(config))
    return "sweep.yaml"


@dataclass
class CancelledCampaign:
    workdir: Path
    last_cpu: int
    cancelled_id: str  # SLURM job id
    cancelled_job: str  # workflow job id
    first: SnakemakeRun
    finished: dict[Path, int]  # CSV -> mtime after the first run
    rerun: SnakemakeRun


@pytest.fixture(scope="module")
def cancelled(slurm_cluster: Cluster, kernels_bin: Path) -> CancelledCampaign:
    workdir = run_dir(slurm_cluster.workdir, "cancel")
    topology = detect_topology(workdir / "detected.json")
    cpus = topology["nodes"][0]["cpus"]
    assert len(cpus) >= 2, f"node 0 has CPUs {cpus}; these tests need two"
    # Every CPU but the last reserved: the jobs' one CPU is not the one SLURM would hand out first.
    topology["reserved_cpus"] = cpus[:-1]
    (workdir / "last-cpu.json").write_text(json.dumps(topology))
    seed_topology(workdir, SYSTEM, workdir / "last-cpu.json")
    sweep = write_sweep(workdir, {"arch": "last-cpu.json"}, latency={"ranks_per_domain": [1]})

    target: list[tuple[str, str]] = []

    def cancel_second_benchmark(jobs: list[tuple[str, str, str]]) -> None:
        """Once one benchmark job has completed, cancel the next one squeue shows running."""
        bench = [(i, s, c) for i, s, c in jobs if c.startswith(BENCH_RULES)]
        if target or not any(s == "COMPLETED" for _, s, _ in bench):
            return
        for job_id, state, comment in bench:
            if state == "RUNNING":
                scancel = run(["scancel", job_id], timeout=30)
                assert scancel.returncode == 0, scancel.stderr
                target.append((job_id, comment))
                return

    first = snakemake(workdir, "--configfile", sweep, on_poll=cancel_second_benchmark)
    assert target, f"no benchmark job was seen running after another completed: {first.seen}"
    finished = {p: p.stat().st_mtime_ns for p in (workdir / "results" / SYSTEM).glob("*/*.csv")}
    rerun = snakemake(workdir, "--configfile", sweep)
    job_id, comment = target[0]
    return CancelledCampaign(workdir, cpus[-1], job_id, job_of(comment), first, finished, rerun)


def test_cancelled_job_fails_the_run(cancelled: CancelledCampaign) -> None:
    first = cancelled.first
    assert first.returncode != 0, "snakemake reported success although a job was cancelled"
    assert f"SLURM-job '{cancelled.cancelled_id}' failed, SLURM status is: 'CANCELLED'" in first.output, (
        first.output[-5000:]
    )


def test_finished_result_is_kept_and_not_rewritten(cancelled: CancelledCampaign) -> None:
    names = sorted(p.stem for p in cancelled.finished)
    assert len(names) == 1 and cancelled.cancelled_job not in names, (
        f"after the cancel: CSVs {names}, cancelled {cancelled.cancelled_job}"
    )
    after = {p: p.stat().st_mtime_ns for p in cancelled.finished}
    assert after == cancelled.finished, "the rerun rewrote a finished result"


def test_rerun_submits_only_the_cancelled_job(cancelled: CancelledCampaign) -> None:
    rerun = cancelled.rerun
    rerun.assert_succeeded()
    submitted = SUBMITTED.findall(rerun.output)
    jobs = [job_of(rerun.seen[j][0]) if j in rerun.seen else f"SLURM job {j}, unseen" for j in submitted]
    assert jobs == [cancelled.cancelled_job], f"the rerun submitted {jobs}, not the cancelled job alone"


@pytest.mark.parametrize("bench, cpu_column", [("latency", "cpu"), ("bandwidth", "cpus")])
def test_single_process_kernel_ran_on_the_cpu_its_binding_names(
    cancelled: CancelledCampaign, bench: str, cpu_column: str
) -> None:
    """In the plugin's `srun -n1 --cpus-per-task=1` step the job would be confined to the first
    CPU and numactl would refuse the binding; these jobs run in the batch step instead."""
    csvs = sorted((cancelled.workdir / "results" / SYSTEM / bench).glob("*.csv"))
    assert len(csvs) == 1, csvs
    _, rows = read_rows(csvs[0])
    assert rows and {r[cpu_column] for r in rows} == {str(cancelled.last_cpu)}, (
        f"{csvs[0].name}: ran on {sorted({r[cpu_column] for r in rows})}, bound to {cancelled.last_cpu}"
    )
    assert parse_cpulist(launch_option(provenance(csvs[0]), "--cpuset")) == [cancelled.last_cpu]


def test_kernel_error_line_reaches_snakemakes_own_output(slurm_cluster: Cluster, kernels_bin: Path) -> None:
    workdir = run_dir(slurm_cluster.workdir, "bad-argument")
    # An argument only the node can judge: the plan-time check (--check-args) parses it, the
    # kernel refuses it on the node, where node 7 does not exist.
    sweep = write_sweep(workdir, latency={"extra_args": ["--policy=bind", "--mem-nodes=7"]}, bandwidth=None)
    seed_topology(workdir, SYSTEM)
    result = snakemake(workdir, "sweep", "--configfile", sweep)
    assert result.returncode != 0, "a kernel refusing its arguments did not fail the run"
    assert re.search(r"^numa_latency: error: .*mem-nodes", result.output, re.M), (
        f"the kernel's one-line error is not in snakemake's output:\n{result.output[-6000:]}"
    )
