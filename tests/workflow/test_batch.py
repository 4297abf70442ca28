"""Batches (config key `batch`, numasweep.planning.batch): several grid points in one Snakemake job.

Dry runs of shipped campaigns count the batch jobs against the points grouped here (by the
resources a job depends on); real local sweeps check that a batched run publishes exactly the
per-point files and aggregated rows of an unbatched one, and that a point failing mid-batch
leaves the points before it untouched and a rerun measures only the missing one."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from numasweep.planning import grid
from numasweep.running import runjob
from numasweep.core import registry, topology
from test_runner import SLOW, WRITE, _children_groups, _env, _group_members  # run-job's test helpers
from helpers.workflow import TEST_CONFIGS, copy_repo, job_counts, snakemake

REPO = Path(__file__).resolve().parents[2]

BENCH_RULES = registry.names()  # a benchmark's name is its Snakemake rule


def _plan(campaign: str, sets: list[str] = ()):
    config = grid.layered_config([REPO / campaign], list(sets))
    return grid.expand(config, topology.load(REPO / grid.validate_config(config)["arch"]))


def _expected_batches(jobs: list, size: int) -> Counter:
    """Batch jobs per benchmark: ceil(points / size) for each set of points sharing threads,
    tasks, GPUs, kernel and node."""
    groups = Counter((j.bench, j.threads, j.tasks, j.gpus, j.kernel, j.grid.get("fleet_node")) for j in jobs)
    out: Counter = Counter()
    for (bench, *_), n in groups.items():
        out[bench] += math.ceil(n / size)
    return out


@pytest.mark.workflow
@pytest.mark.parametrize("campaign", ["config/campaigns/lumi-g.yaml", "config/campaigns/ulisse.yaml"])
def test_dry_run_plans_one_job_per_batch_and_grid_counts_agree(repo_copy: Path, campaign: str) -> None:
    size = 4
    plan = _plan(campaign)
    expected = _expected_batches(plan.jobs, size)
    # fewer jobs than points: the campaign has points sharing their resources
    assert sum(expected.values()) < len(plan.jobs)
    proc = snakemake(repo_copy, "-n", "-p", "--configfile", campaign, "--config", f"batch={size}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    counts = job_counts(out)
    assert {r: counts[r] for r in BENCH_RULES if r in counts} == dict(expected), counts
    # every point's own launch line is in the batch's shell command
    for job in plan.jobs:
        assert f"--point {job.id} " in out and f"/{job.id}.csv.partial" in out, job.id
    count = subprocess.run(
        [sys.executable, "-m", "numasweep", "grid", "--config", campaign, "--set", f"batch={size}", "--count"],
        cwd=REPO, capture_output=True, text=True)
    assert count.returncode == 0, count.stderr
    rows = dict(line.split("\t", 1) for line in count.stdout.splitlines() if not line.startswith("#"))
    for bench in BENCH_RULES:
        assert rows[bench] == f"{len(plan.by_bench(bench))}\t{expected[bench]} batches", rows
    assert not (repo_copy / "results").exists()


@pytest.mark.workflow
@pytest.mark.parametrize("size", [1, 4])
def test_grid_counts_what_snakemake_plans_for_a_fleet_of_three_nodes(repo_copy: Path, size: int) -> None:
    """`grid --count` on a fleet of three nodes, one point a job or batched: each benchmark's jobs
    (and batches) are the jobs `snakemake -n` plans for it."""
    campaign, nodes = "config/campaigns/ulisse.yaml", ["n1", "n2", "n3"]
    fleet_set = 'fleet={"nodes": ["n1", "n2", "n3"]}'
    proc = snakemake(repo_copy, "-n", "--configfile", campaign, "--config", f"batch={size}", fleet_set)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    planned = {r: n for r, n in job_counts(out).items() if r in BENCH_RULES}
    count = subprocess.run([sys.executable, "-m", "numasweep", "grid", "--config", campaign, "--set", f"batch={size}",
                            "--set", fleet_set, "--count"], cwd=REPO, capture_output=True, text=True)
    assert count.returncode == 0, count.stderr
    rows = [line.split("\t") for line in count.stdout.splitlines() if not line.startswith("#")]
    counted = {bench: int(cols[-1].split()[0]) for bench, *cols in rows if int(cols[0])}
    assert counted == planned, (counted, planned)
    points = len(_plan(campaign).jobs)
    assert sum(int(cols[0]) for _, *cols in rows) == len(nodes) * points


@pytest.mark.workflow
def test_fleet_batches_hold_one_node_and_name_it(repo_copy: Path) -> None:
    campaign, size = "config/campaigns/lumi-g.yaml", 8
    proc = snakemake(repo_copy, "-n", "--configfile", campaign, "--config", f"batch={size}",
                     'fleet={"nodes": ["nid001", "nid002"]}')
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    per_node = _expected_batches(_plan(campaign).jobs, size)["latency"]
    assert job_counts(out)["latency"] == 2 * per_node
    # each batch job is pinned to the node its id names
    jobs = re.findall(r"wildcards: batch=(b\d+-on-(nid\d+))\n\s+resources: (.*)", out)
    assert len(jobs) == 2 * per_node
    assert all(f"'--nodelist={node}'" in resources for _, node, resources in jobs)


def test_a_batch_shell_stays_under_the_kernel_limit_of_one_argument() -> None:
    """Long launch lines close a batch before its command passes what `bash -c` may take."""
    from numasweep.planning import batch

    jobs = _plan("config/campaigns/lumi-g.yaml").by_bench("latency")
    jobs = [j for j in jobs if j.tasks == jobs[0].tasks]
    options = {j.id: "x" * 30_000 for j in jobs}
    assert len(jobs) >= 4
    found = batch.batches(jobs, 100, options)
    assert [len(b.jobs) for b in found] == [3] * (len(jobs) // 3) + [len(jobs) % 3] * bool(len(jobs) % 3)
    assert all(sum(len(options[j.id]) + len(batch.SEPARATOR) for j in b.jobs) <= 128 * 1024 - 10_000 for b in found)
    assert [len(b.jobs) for b in batch.batches(jobs, 100)] == [len(jobs)]


@pytest.mark.workflow
def test_batch_below_one_is_refused_in_one_line(repo_copy: Path) -> None:
    proc = snakemake(repo_copy, "-n", "--config", "batch=0")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config: batch: 0 is" in out and "Traceback" not in out, out[-2000:]


# ------------------------------------------------------------------ real local sweeps


def _config(tmp_path: Path, name: str, batch: int, bad_args: list[str] | None = None) -> Path:
    """The tiny test sweep with points that share their resources: three one-rank latency points
    (the third from its own sweep, labelled `huge`, given `bad_args`) and two bandwidth
    repetitions."""
    config = yaml.safe_load((TEST_CONFIGS / "tiny.yaml").read_text())
    latency = config["latency"]["sweeps"][0]
    latency.update(ranks_per_domain=[1], mode=["concurrent", "serial"])
    huge = {**latency, "mode": ["concurrent"], "label": "huge"}
    if bad_args:
        huge["extra_args"] = bad_args
    config["latency"]["sweeps"].append(huge)
    config["bandwidth"]["sweeps"][0]["repetitions"] = 2
    config["batch"] = batch
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path


def _sweep(work: Path, config: Path) -> subprocess.CompletedProcess:
    return snakemake(work, "sweep", "--profile", "profiles/local", "--configfile", str(config), timeout=400)


def _points(results: Path) -> dict[str, list[str]]:
    """Per benchmark: the per-point files (archive copies without their time stamp)."""
    out = {}
    for bench in ("latency", "bandwidth", "copy"):
        folder = results / bench
        names = [p.name for p in folder.iterdir() if p.is_file()]
        names += [re.sub(r"\.\d{8}T\d+Z\.", ".STAMP.", p.name) for p in (folder / "archive").iterdir()]
        out[bench] = sorted(names)
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _system(work: Path) -> Path:
    (system,) = [p for p in (work / "results").iterdir() if p.is_dir()]
    return system


@pytest.mark.workflow
def test_batched_sweep_publishes_what_an_unbatched_one_does(repo: Path, tmp_path: Path) -> None:
    work = copy_repo(repo, tmp_path / "numasweep")
    proc = _sweep(work, _config(tmp_path, "one.yaml", 1))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    single = _system(work)
    shutil.move(single, tmp_path / "single")
    proc = _sweep(work, _config(tmp_path, "batched.yaml", 3))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    batched = _system(work)
    assert job_counts(proc.stdout + proc.stderr).get("latency") == 1  # three points, one job
    assert _points(batched) == _points(tmp_path / "single")
    manifest = json.loads((batched / "latency" / "batches" / "b1.json").read_text())
    assert len(manifest["points"]) == 3
    for bench in ("latency", "bandwidth", "copy"):
        one, many = (pd.read_csv(folder / f"{bench}.csv") for folder in (tmp_path / "single", batched))
        assert list(one.columns) == list(many.columns)
        # what the grid and the launch line fix (the measured values differ run to run)
        fixed = ["job_id", "command", *json.loads(next((batched / bench).glob("*.json")).read_text())["grid"]]
        if "size_bytes" in one.columns:
            fixed.append("size_bytes")
        key = [c for c in fixed if c in one.columns]
        assert len(one) == len(many)
        pd.testing.assert_frame_equal(one[key].sort_values(key).reset_index(drop=True),
                                      many[key].sort_values(key).reset_index(drop=True))


@pytest.mark.workflow
def test_point_failing_mid_batch_keeps_the_others_and_rerun_measures_only_it(repo: Path, tmp_path: Path) -> None:
    """The kernel's parser accepts --mem-nodes=7 (the plan checks only that); the run refuses it
    where node 7 does not exist, as on the test machines (one node here, at most four in CI's
    guests)."""
    work = copy_repo(repo, tmp_path / "numasweep")
    proc = _sweep(work, _config(tmp_path, "bad.yaml", 3, bad_args=["--policy=bind", "--mem-nodes=7"]))
    assert proc.returncode != 0
    failed = "lat-huge-sequential-d0-r1-local-concurrent-rep0"
    assert f"numasweep: batch b1: point {failed} failed" in proc.stderr, proc.stderr[-4000:]
    latency = _system(work) / "latency"
    finished = [latency / f"lat-sequential-d0-r1-local-{m}-rep0.{ext}"
                for m in ("concurrent", "serial") for ext in ("csv", "json", "log")]
    before = {p: (p.stat().st_mtime_ns, _sha(p)) for p in finished}
    archived = sorted((latency / "archive").iterdir())
    assert len(archived) == 6  # csv, json and log of each finished point
    assert not (latency / f"{failed}.csv").exists() and not (latency / "batches" / "b1.json").exists()
    # the same points, the bad option dropped: the batch runs again and measures only the third
    proc = _sweep(work, _config(tmp_path, "fixed.yaml", 3))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert {p: (p.stat().st_mtime_ns, _sha(p)) for p in finished} == before
    assert (latency / f"{failed}.csv").exists()
    # the finished points' archive copies are the same; the third point added its own three
    assert set(archived) < set((latency / "archive").iterdir())
    assert len(list((latency / "archive").iterdir())) == 9
    log = (latency / "batches" / "b1.log").read_text().splitlines()
    assert [line.split(": ")[1] for line in log] == ["kept (measured with this launch line, kernel and topology)"] * 2 + ["measured"]
    # a point is kept only as measured with the batch's own launch line, kernel and topology
    point = argparse.Namespace(csv=latency / f"{failed}.csv", provenance=latency / f"{failed}.json")
    record = json.loads(point.provenance.read_text())
    kernel, digest = record["kernel"]["sha256"], record["topology_digest"]
    assert runjob.already_measured(argparse.Namespace(**vars(point), launch=record["command"]), kernel, digest)
    assert not runjob.already_measured(argparse.Namespace(**vars(point), launch=record["command"] + " --x"),
                                       kernel, digest)
    assert not runjob.already_measured(argparse.Namespace(**vars(point), launch=record["command"]), "0", digest)
    assert not runjob.already_measured(argparse.Namespace(**vars(point), launch=record["command"]), kernel, "0")
    table = pd.read_csv(_system(work) / "latency.csv")
    assert set(table["job_id"]) == {failed, "lat-sequential-d0-r1-local-concurrent-rep0",
                                    "lat-sequential-d0-r1-local-serial-rep0"}


@pytest.mark.workflow
def test_deleting_a_point_of_a_finished_batch_measures_it_again(repo: Path, tmp_path: Path) -> None:
    """A point's CSV deleted after its batch finished: the rerun says so in one line, runs the
    batch again, measures only that point and aggregates it again."""
    work = copy_repo(repo, tmp_path / "numasweep")
    config = _config(tmp_path, "batched.yaml", 3)
    proc = _sweep(work, config)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    latency = _system(work) / "latency"
    gone = latency / "lat-sequential-d0-r1-local-serial-rep0.csv"
    kept = latency / "lat-sequential-d0-r1-local-concurrent-rep0.csv"
    before = _sha(kept)
    gone.unlink()
    proc = _sweep(work, config)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "numasweep: warning: batch b1: 1 point(s) lost their result (lat-sequential-d0-r1-local-serial-rep0)" \
        in proc.stderr, proc.stderr[-4000:]
    assert gone.exists() and _sha(kept) == before
    log = (latency / "batches" / "b1.log").read_text().splitlines()
    assert [line.split(": ")[1].split(" ")[0] for line in log] == ["kept", "measured", "kept"]
    assert gone.stem in set(pd.read_csv(_system(work) / "latency.csv")["job_id"])


# ------------------------------------------------------------------ run-batch itself


def _run_batch(tmp: Path, scripts: list[str]) -> list[str]:
    """run-batch argv of points p1, p2, ... whose launch lines are `bash -c SCRIPT --csv=...`."""
    folder = tmp / "bench"
    topo = REPO / "examples" / "lumi-g" / "topology.json"
    argv = [sys.executable, "-m", "numasweep", "run-batch", "--batch", "b1", "--kernel", "/bin/true",
            "--topology", str(topo), "--manifest", str(folder / "batches" / "b1.json"),
            "--log", str(folder / "batches" / "b1.log")]
    for i, script in enumerate(scripts, 1):
        launch = shlex.join(["bash", "-c", script, f"--csv={folder}/p{i}.csv.partial"])
        argv += ["--point", f"p{i}", launch, '{"repetition": 0}']
    return argv


def test_a_stop_signal_mid_batch_ends_the_point_and_a_rerun_measures_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    runner = subprocess.Popen(_run_batch(tmp_path, [WRITE, SLOW, WRITE]), env=_env(), stderr=subprocess.PIPE,
                              text=True)
    deadline = time.time() + 30
    lock = folder / ".p2.lock"  # the second point's runner has its lock, then starts its line
    while time.time() < deadline and not (lock.exists() and lock.read_text().strip()
                                          and _children_groups(runner.pid)):
        time.sleep(0.05)
    (group,) = _children_groups(runner.pid)
    assert (folder / "p1.csv").exists()  # the first point is published before the second starts
    first = {p: _sha(p) for p in (folder / "p1.csv", folder / "p1.json", folder / "p1.log")}
    runner.send_signal(signal.SIGTERM)
    _, err = runner.communicate(timeout=20)
    assert runner.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM" in err and "Traceback" not in err
    deadline = time.time() + 10
    while time.time() < deadline and _group_members(group):
        time.sleep(0.1)
    assert _group_members(group) == []
    assert not (folder / "p2.csv").exists() and not (folder / "p3.log").exists()
    assert not (folder / "batches" / "b1.json").exists()
    rerun = subprocess.run(_run_batch(tmp_path, [WRITE, WRITE, WRITE]), env=_env(), capture_output=True, text=True,
                           timeout=60)
    assert rerun.returncode == 0, rerun.stderr
    assert {p: _sha(p) for p in first} == first
    assert json.loads((folder / "batches" / "b1.json").read_text())["points"] == ["p1", "p2", "p3"]
    assert [line.split(": ")[1] for line in (folder / "batches" / "b1.log").read_text().splitlines()] == [
        "kept (measured with this launch line, kernel and topology)", "measured", "measured"]


def test_a_failing_point_ends_its_batch_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(_run_batch(tmp_path, [WRITE, "echo broken; exit 3", WRITE]), env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert "numasweep: batch b1: point p2 failed (exit 3)" in proc.stderr and "Traceback" not in proc.stderr
    assert "the 1 point(s) before it are kept" in proc.stderr
    folder = tmp_path / "bench"
    assert (folder / "p1.csv").exists() and not (folder / "p2.csv").exists() and not (folder / "p3.log").exists()
    assert not (folder / "batches" / "b1.json").exists()
