"""The workflow through profiles/slurm on the real cluster: every job an sbatch job seen in
squeue, every CSV complete, each rank on the CPU its srun map named, the report written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.slurmtest import (
    BANDWIDTH_COLUMNS,
    LATENCY_COLUMNS,
    REPO,
    Cluster,
    SnakemakeRun,
    launch_option,
    provenance,
    read_rows,
    rule_of,
    run_dir,
    slurm_env,
    snakemake,
)
from helpers.workflow import snakemake as run_snakemake

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.slurm, pytest.mark.workflow, pytest.mark.timeout(420)]

SWEEP = HERE / "sweep.yaml"
SYSTEM = "slurmtest"
# tests/slurm/sweep.yaml: one 2-rank latency job at two sizes, one bandwidth job of two kernels.
EXPECTED = {
    "latency": (LATENCY_COLUMNS, "size_bytes", {"65536", "1048576"}, "latency_ns_median"),
    "bandwidth": (BANDWIDTH_COLUMNS, "kernel", {"copy", "triad"}, "best_mb_s"),
}


@pytest.fixture(scope="module")
def sweep(slurm_cluster: Cluster, kernels_bin: Path) -> tuple[Path, SnakemakeRun]:
    workdir = run_dir(slurm_cluster.workdir, "sweep")
    return workdir, snakemake(workdir, "--configfile", str(SWEEP))


def test_sweep_runs_through_the_slurm_profile(sweep: tuple[Path, SnakemakeRun]) -> None:
    sweep[1].assert_succeeded()


def test_squeue_showed_each_benchmark_job_running(sweep: tuple[Path, SnakemakeRun]) -> None:
    result = sweep[1]
    assert {"topology", "latency", "bandwidth"} <= result.running_rules(), f"squeue showed: {result.seen}"


def test_every_csv_is_complete_and_came_from_a_slurm_job(sweep: tuple[Path, SnakemakeRun]) -> None:
    workdir, result = sweep
    results = workdir / "results" / SYSTEM
    for bench, (columns, key, keys, measure) in EXPECTED.items():
        csvs = sorted((results / bench).glob("*.csv"))
        assert len(csvs) == 1, f"{bench}: {csvs}"
        header, rows = read_rows(csvs[0])
        assert header == columns, f"{csvs[0].name}: columns {header}"
        assert {r[key] for r in rows} == keys, f"{csvs[0].name}: {key} {[r[key] for r in rows]}"
        assert all(float(r[measure]) > 0 for r in rows), f"{csvs[0].name}: {[r[measure] for r in rows]}"
        record = provenance(csvs[0])
        assert record["slurm_job_id"] in result.seen, (
            f"{csvs[0].name} names SLURM job {record['slurm_job_id']}; squeue showed {sorted(result.seen)}"
        )
        aggregated_header, aggregated = read_rows(results / f"{bench}.csv")
        assert "job_id" in aggregated_header and len(aggregated) == len(rows), f"aggregated {bench}.csv"
    _, bandwidth_rows = read_rows(next((results / "bandwidth").glob("*.csv")))
    assert {r["validation"] for r in bandwidth_rows} == {"pass"}
    _, latency_rows = read_rows(next((results / "latency").glob("*.csv")))
    assert sorted(int(r["rank"]) for r in latency_rows) == [0, 0, 1, 1], "2 ranks x 2 sizes"


def test_each_rank_ran_on_the_cpu_its_map_named(sweep: tuple[Path, SnakemakeRun]) -> None:
    path = next((sweep[0] / "results" / SYSTEM / "latency").glob("*.csv"))
    record = provenance(path)
    assert record["argv"][0] == "srun", record["command"]
    cpu_map = [int(c) for c in launch_option(record, "--cpu-bind").removeprefix("map_cpu:").split(",")]
    _, rows = read_rows(path)
    ranks = sorted({int(r["rank"]) for r in rows})
    assert ranks == list(range(len(cpu_map))), f"ranks {ranks} for map {cpu_map}"
    for row in rows:
        rank = int(row["rank"])
        assert int(row["cpu"]) == cpu_map[rank], f"rank {rank} on CPU {row['cpu']}, map {cpu_map}"


def test_report_is_written(sweep: tuple[Path, SnakemakeRun]) -> None:
    report = sweep[0] / "report" / SYSTEM / "experimentation.md"
    assert report.is_file() and report.stat().st_size > 0, f"no report at {report}"


def test_dry_run_prints_sbatch_resources_and_srun_lines_for_lumi_g(tmp_path: Path) -> None:
    """`-n` needs no cluster: the LUMI-G campaign's jobs with their resources and launch lines."""
    workdir = run_dir(tmp_path, "lumi-g")
    dry = run_snakemake(workdir, "--profile", str(REPO / "profiles" / "slurm"),
                        "--configfile", "config/campaigns/lumi-g.yaml", "-n", env=slurm_env(), timeout=120)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    out = dry.stdout + dry.stderr
    assert re.search(r"^latency\s+32$", out, re.M), "the campaign has 32 latency jobs"
    # the LUMI-G latency study: interleaved, domains 0-3, 2 ranks each.
    # The runner launches it: the srun line is run-job's --launch argument.
    seed_line = re.search(r"--launch 'srun --nodes=1 --ntasks=8 .*--cpu-bind=map_cpu:1,9,17,25,33,41,49,57 .*"
                          r"--numa=0,0,1,1,2,2,3,3 .*numa_latency --size=1-16384", out)
    assert seed_line, "no srun line with the seed's CPU map"
    resources = re.findall(r"^\s+resources: (.*)$", out, re.M)
    latency_resources = [r for r in resources if "tasks=8" in r]
    assert latency_resources and all(
        "mpi=srun" in r and "slurm_extra='--exclusive" in r and "runtime=" in r for r in latency_resources
    ), latency_resources


@pytest.fixture(scope="module")
def batched(slurm_cluster: Cluster, kernels_bin: Path) -> tuple[Path, SnakemakeRun]:
    """tests/slurm/batch.yaml over sweep.yaml: two latency points in one batch."""
    workdir = run_dir(slurm_cluster.workdir, "batched")
    return workdir, snakemake(workdir, "sweep", "--configfile", str(SWEEP), str(HERE / "batch.yaml"))


def test_a_batch_is_one_slurm_job_running_each_point_under_srun(batched: tuple[Path, SnakemakeRun]) -> None:
    workdir, result = batched
    result.assert_succeeded()
    results = workdir / "results" / SYSTEM / "latency"
    manifests = sorted((results / "batches").glob("*.json"))
    assert len(manifests) == 1, f"one batch of 2 points: {manifests}"
    csvs = sorted(results.glob("*.csv"))
    assert [c.stem.split("-")[-2] for c in csvs] == ["concurrent", "serial"], csvs
    jobs = {provenance(c)["slurm_job_id"] for c in csvs}
    latency_jobs = {j for j, (comment, _) in result.seen.items() if rule_of(comment) == "latency"}
    assert len(jobs) == 1 and jobs == latency_jobs, (
        f"points ran in SLURM jobs {jobs}; squeue showed latency jobs {latency_jobs}")
    for csv in csvs:
        record = provenance(csv)
        assert record["argv"][0] == "srun", record["command"]
        _, rows = read_rows(csv)
        assert sorted(int(r["rank"]) for r in rows) == [0, 1] and all(
            float(r["latency_ns_median"]) > 0 for r in rows), f"{csv.name}: {rows}"
    _, aggregated = read_rows(workdir / "results" / SYSTEM / "latency.csv")
    assert len(aggregated) == 4, "2 points x 2 ranks in the aggregated table"
