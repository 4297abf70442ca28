"""The Snakemake workflow end to end: lint, dry runs of every campaign, a real local sweep,
reruns after a change, an interrupted sweep, and config errors. Each test works on a copy of
the repository (tests/workflow/conftest.py), never on its results/."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from numasweep.core import registry, system_state
from numasweep.reporting import hwloc_export
from numasweep.results import aggregate, matrices
from helpers.workflow import TEST_CONFIGS, copy_repo, job_counts, planned_jobs, snakemake, snakemake_env

REPO = Path(__file__).resolve().parents[2]

BENCH_RULES = registry.names()  # a benchmark's name is its Snakemake rule

# Each campaign's grid as the seeds designed it (config/README.md explains the arithmetic).
CAMPAIGNS = {
    # experimentation.md: 1 domain set x 2 modes = 2; scaling suite: 2 strategies x 3 domain
    # sets x 5 rank counts = 30.
    "config/campaigns/lumi-g.yaml": {"latency": 32},
    # stream-ulisse.md: 2 memory sides x 10 thread counts x 3 repetitions.
    "config/campaigns/ulisse.yaml": {"bandwidth": 60},
    # numa-gpu-xfer-bench.md: 2 GPU counts x 4 node sets + 2 GPU counts x 4 weight vectors.
    "config/campaigns/gpu-cxl.yaml": {"gpu_xfer": 16},
    # docs/benchmarks/migrate.md: 3 methods x 2 page sizes + 3 thread counts + 1 socket pair; 3 copy pairs x 3.
    "config/campaigns/tiered.yaml": {"migrate": 10, "copy": 9},
    # The default sweep on this machine: one rank (concurrent only: serial is the same run with
    # one rank) and two ranks in both modes with 4 KiB pages, and one rank with transparent huge
    # pages (left out where THP is off); 2 thread counts; the one node pair (0, 0); no GPU, so
    # gpu_xfer is skipped.
    "config/config.yaml": {"latency": 3 + (system_state.thp_enabled() != "never"), "bandwidth": 2, "copy": 2},
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ static checks


@pytest.mark.workflow
def test_lint_reports_nothing(repo_copy: Path) -> None:
    proc = snakemake(repo_copy, "--lint")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "Lints for" not in out, out[-6000:]


def test_ruff_reports_nothing(repo: Path) -> None:
    """The Python linter (ruff, pinned in requirements-dev.txt; rules in pyproject.toml)."""
    proc = subprocess.run([str(Path(sys.executable).parent / "ruff"), "check", "--no-cache", str(repo)],
                          capture_output=True, text=True, cwd=repo)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr


def test_snakefmt_check_passes(repo: Path) -> None:
    files = [str(repo / "workflow" / "Snakefile"), str(repo / "workflow" / "rules")]
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "snakefmt"), "--check", *files], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ------------------------------------------------------------------ dry runs


@pytest.mark.workflow
@pytest.mark.parametrize("campaign", sorted(CAMPAIGNS))
def test_campaign_dry_run_job_count(repo_copy: Path, campaign: str) -> None:
    proc = snakemake(repo_copy, "-n", "--configfile", campaign)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    counts = job_counts(out)
    benches = {rule: counts[rule] for rule in BENCH_RULES if rule in counts}
    assert benches == CAMPAIGNS[campaign], counts
    # A dry run measures nothing and writes no result.
    assert not (repo_copy / "results").exists()


@pytest.mark.workflow
def test_dry_run_prints_the_seed_launch_line(repo_copy: Path) -> None:
    proc = snakemake(repo_copy, "-n", "-p", "--configfile", "config/campaigns/lumi-g.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    # the LUMI-G latency study, serial run: CPU map, per-rank domains and kernel arguments.
    assert (
        "srun --nodes=1 --ntasks=8 --cpu-bind=map_cpu:1,9,17,25,33,41,49,57 --hint=nomultithread "
        "kernels/wrapper_numa.sh --numa=0,0,1,1,2,2,3,3 -- build/bin/numa_latency --size=1-16384 "
        "--pages=4k --serial --csv=results/lumi-g/latency/lat-interleaved-d0.1.2.3-r2-local-serial-rep0.csv"
    ) in out
    # Every multi-rank job's launch line, run by `numasweep run-job`, starts with srun (the
    # 2 one-rank scaling jobs need no launcher).
    assert out.count("run-job --job-id ") == 32
    assert out.count("--launch 'srun --nodes=1 ") == 32 - 2
    # What the SLURM plugin reads: an MPI job of 8 tasks on a node of its own, one node and its
    # memory (LUMI-G's 512 GiB); a one-rank job with an empty `mpi`, so its shell also runs as
    # is, outside a confining job step.
    assert "mpi=srun, tasks=8, bench_slot=1, nodes=1, slurm_extra='--exclusive'" in out
    assert "mpi=, tasks=1, bench_slot=1, nodes=1, slurm_extra='--exclusive'" in out
    assert any("mem_mb=524288," in line for line in out.splitlines() if "mpi=srun, tasks=8," in line), out[-3000:]


@pytest.mark.workflow
def test_dry_run_prints_local_mpirun_lines(repo_copy: Path) -> None:
    proc = snakemake(repo_copy, "-n", "-p", "--profile", "profiles/local")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "mpirun -n 2 --bind-to none" in out
    assert "kernels/wrapper_numa.sh --cpus=0,1 --numa=0,0 -- build/bin/numa_latency --size=16K-256M" in out
    assert "OMP_NUM_THREADS=2" in out and "--cpuset=0,1" in out or "--cpuset=0-1" in out


@pytest.mark.workflow
def test_dry_run_of_cached_results_plans_no_benchmark(repo_copy: Path) -> None:
    examples = sorted(p for p in (repo_copy / "examples").glob("*") if (p / "topology.json").exists())
    if not examples:
        pytest.fail("examples/ has no cached results folder with topology.json to render from")
    proc = snakemake(repo_copy, "-n", "report", "--config", f"results={examples[0].relative_to(repo_copy)}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    counts = job_counts(out)
    assert not set(counts) & {"build", "build_common", "topology", "aggregate", *BENCH_RULES}, counts


@pytest.mark.workflow
def test_each_example_renders_into_its_own_report_folder(repo_copy: Path) -> None:
    """examples/lumi-g and examples/lumi-g-remote measure one system: their reports must not
    overwrite each other, nor the report of the campaign config/campaigns/lumi-g.yaml."""
    outputs = {}
    for name in ("lumi-g", "lumi-g-remote"):
        proc = snakemake(repo_copy, "-n", "report", "--config", f"results=examples/{name}")
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        outputs[name] = set(re.findall(r"output: (report/\S+?)/experimentation\.md", out))
    assert outputs == {"lumi-g": {"report/example-lumi-g"}, "lumi-g-remote": {"report/example-lumi-g-remote"}}
    proc = snakemake(repo_copy, "-n", "--configfile", "config/campaigns/lumi-g.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert set(re.findall(r"output: (report/\S+?)/experimentation\.md", out)) == {"report/lumi-g"}


def test_a_campaign_own_results_render_into_its_own_report(repo_copy: Path) -> None:
    """results=results/<system> (a cluster campaign's results copied back) renders that
    campaign's report, where the campaign itself writes it."""
    shutil.copytree(repo_copy / "examples" / "lumi-g", repo_copy / "results" / "lumi-g")
    proc = snakemake(repo_copy, "-n", "report", "--config", "results=results/lumi-g")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert set(re.findall(r"output: (report/\S+?)/experimentation\.md", out)) == {"report/lumi-g"}


def test_a_campaign_may_not_take_the_name_of_an_example_report(repo_copy: Path) -> None:
    proc = snakemake(repo_copy, "-n", "--config", "system=example-lumi-g")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "system: 'example-lumi-g'" in out and "Traceback" not in out, out[-2000:]


def test_grid_warns_when_a_set_value_overrides_the_config_file(tmp_path: Path) -> None:
    """A `launcher:` in the user's file that a profile's `config:` replaces: one line naming both."""
    mine = tmp_path / "my.yaml"
    mine.write_text("launcher: mpirun\n")
    proc = subprocess.run([sys.executable, "-m", "numasweep", "grid", "--config", str(mine), "--set", "launcher=srun",
                           "--arch", str(REPO / "config" / "arch" / "lumi-g.yaml"), "--count"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "launcher: mpirun" in warnings[0] and "launcher=srun" in warnings[0]


@pytest.mark.workflow
def test_grid_command_plans_what_snakemake_plans(repo_copy: Path, tmp_path: Path) -> None:
    """A user file that sets only a bandwidth sweep: both layer it over config/config.yaml."""
    mine = tmp_path / "my.yaml"
    mine.write_text("arch: config/arch/lumi-g.yaml\nbandwidth:\n  sweeps:\n    - cpu_nodes: [1]\n      threads: [3]\n")
    proc = subprocess.run([sys.executable, "-m", "numasweep", "grid", "--config", str(mine)], cwd=repo_copy,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split("\t")[1] for line in proc.stdout.splitlines() if not line.startswith("#")}
    dry = snakemake(repo_copy, "-n", "--configfile", str(mine))
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    assert listed == planned_jobs(dry.stdout + dry.stderr)
    assert any(j.startswith("lat-") for j in listed) and "bw-c1-local-t3-rep0" in listed


@pytest.mark.workflow
def test_snakemake_warns_when_the_profile_overrides_the_config_file(repo_copy: Path, tmp_path: Path) -> None:
    mine = tmp_path / "my.yaml"
    mine.write_text("launcher: mpirun\n")
    proc = snakemake(repo_copy, "-n", "--profile", "profiles/slurm", "--configfile", str(mine))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert f"{mine} sets launcher: mpirun" in out and "launcher=srun" in out


# ------------------------------------------------------------------ config errors


BAD_CONFIGS = {
    "unknown key": (
        {"latency": {"sweeps": [{"domains": [[0]], "colour": "red"}]}},
        "latency.sweeps[0]: unknown key 'colour'",
    ),
    "wrong type": (
        {"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": "many"}]}},
        "bandwidth.sweeps[0].threads: wrong type",
    ),
    "domain missing from the arch": (
        {"latency": {"sweeps": [{"domains": [[0, 7]]}]}},
        "latency.sweeps[0].domains[0]: node 7",
    ),
    "empty sweep": (
        {b: {"sweeps": []} for b in BENCH_RULES},
        "the sweep is empty",
    ),
}


@pytest.mark.workflow
@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_config_error_stops_before_any_job(repo_copy: Path, case: str) -> None:
    config, message = BAD_CONFIGS[case]
    bad = repo_copy / "bad.yaml"
    bad.write_text(yaml.safe_dump(config))
    proc = snakemake(repo_copy, "--cores", "1", "--configfile", "bad.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert message in out, out[-3000:]
    assert not (repo_copy / "results").exists() and not (repo_copy / "build").exists()


@pytest.mark.workflow
def test_a_yaml_error_in_the_default_config_names_its_line(repo_copy: Path) -> None:
    """config/config.yaml edited into invalid YAML: one line naming the file, line and column,
    not Snakemake's "Config file is not valid JSON or YAML", and no job."""
    default = repo_copy / "config" / "config.yaml"
    lines = default.read_text().splitlines()
    default.write_text("\n".join(lines + ["latency:", "  sweeps: [", ""]))
    proc = snakemake(repo_copy, "-n", "--profile", "profiles/local")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(rf"config/config.yaml:{len(lines) + 3}:1: YAML syntax error in the config file \(.*\); "
                     "correct that line", out), out[-3000:]
    assert "not valid JSON or YAML" not in out and "Traceback" not in out, out[-3000:]


@pytest.mark.workflow
@pytest.mark.parametrize("case", ["anchor bomb in a --configfile", "key twice in a --configfile",
                                  "key twice in config/config.yaml"])
def test_a_config_that_yaml_would_misread_is_one_line_naming_its_line(repo_copy: Path, tmp_path: Path,
                                                                      case: str) -> None:
    """Read by the project's loader before Snakemake uses it: an anchor bomb refused at once
    (expanding it never ends), a key given twice refused naming both lines (YAML keeps the last
    silently); no job, no traceback."""
    default = repo_copy / "config" / "config.yaml"
    latency_line = default.read_text().splitlines().index("latency:") + 1
    if case == "anchor bomb in a --configfile":
        args, says = ["--configfile", str(TEST_CONFIGS / "anchor-bomb.yaml")], (
            f"{TEST_CONFIGS / 'anchor-bomb.yaml'}:8: in the config file, aliases (*name) under 'e' expand to more "
            "than 10000 values; write the values out")
    elif case == "key twice in a --configfile":
        (tmp_path / "campaign.yaml").write_text("latency:\n  sweeps: []\nsystem: x\nlatency:\n  sweeps: []\n")
        args, says = ["--configfile", str(tmp_path / "campaign.yaml")], (
            f"{tmp_path / 'campaign.yaml'}:4: in the config file, key 'latency' is given twice in one mapping "
            "(lines 1 and 4), and YAML would keep only the last; merge them into one")
    else:
        lines = default.read_text().splitlines()
        default.write_text("\n".join(lines + ["latency:", "  sweeps: []", ""]))
        args, says = [], (f"config/config.yaml:{len(lines) + 1}: in the config file, key 'latency' is given twice "
                          f"in one mapping (lines {latency_line} and {len(lines) + 1})")
    start = time.monotonic()
    proc = snakemake(repo_copy, "-n", "--profile", "profiles/local", *args, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert says in out, out[-3000:]
    assert "Traceback" not in out and "Job stats" not in out, out[-3000:]
    # Snakemake's own start-up is most of it; the loader itself takes milliseconds.
    assert time.monotonic() - start < 30


@pytest.mark.workflow
def test_a_read_only_results_folder_is_refused_at_plan_time(repo_copy: Path) -> None:
    """results/ on a read-only file system (a tmpfs mounted read-only, as root): one line before
    any job, not Snakemake's traceback when it first creates an output folder."""
    results = repo_copy / "results"
    results.mkdir()
    if os.geteuid() != 0:
        pytest.fail("NOT RUN: a read-only file system is a tmpfs mounted read-only, which only root can mount "
                    "(run the tests as root)")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(results)],
                           capture_output=True, text=True)
    assert mount.returncode == 0, f"cannot mount a read-only tmpfs at {results}: {mount.stderr.strip()}"
    try:
        proc = snakemake(repo_copy, "-n", "--config", "system=probe")
    finally:
        subprocess.run(["umount", str(results)], check=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "results/probe: the results folder is on a read-only file system" in out, out[-3000:]
    assert "remount it read-write" in out and "Traceback" not in out, out[-3000:]


@pytest.mark.workflow
@pytest.mark.parametrize("make, says", [
    (lambda folder: folder.symlink_to(folder.name), "is a symbolic link to probe, which leads nowhere"),
    (lambda folder: folder.write_text("not a folder\n"), "the results folder is a file, not a folder"),
])
def test_a_results_folder_that_is_a_link_loop_or_a_file_is_one_line(repo_copy: Path, make, says: str) -> None:
    """results/<system> a symbolic link to itself, or a regular file: one line before any job,
    not Snakemake's traceback from its inventory of the outputs."""
    (repo_copy / "results").mkdir()
    make(repo_copy / "results" / "probe")
    proc = snakemake(repo_copy, "-n", "--config", "system=probe")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"results/probe: {says}" in out or says in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


@pytest.mark.workflow
def test_a_failed_report_step_shows_its_own_line_on_the_console(repo_copy: Path) -> None:
    """A report step's error is in its log; the console shows that line too (the onerror handler),
    not only Snakemake's "check log file(s)"."""
    broken = repo_copy / "examples" / "broken"
    shutil.copytree(repo_copy / "examples" / "lumi-g", broken)
    lines = (broken / "latency.csv").read_text().splitlines()
    cols = lines[0].split(",")
    cells = lines[2].split(",")
    cells[cols.index("latency_ns_median")] = "fast"
    lines[2] = ",".join(cells)
    (broken / "latency.csv").write_text("\n".join(lines) + "\n")
    proc = snakemake(repo_copy, "report", "--cores", "1", "--config", "results=examples/broken")
    assert proc.returncode != 0
    shown = [line for line in proc.stderr.splitlines() if line.startswith("numasweep: logs/example-broken/")]
    assert shown and "line 3" in shown[0] and "correct that cell" in shown[0], proc.stderr[-3000:]


@pytest.mark.workflow
def test_a_target_that_names_no_job_says_so_without_a_traceback(repo_copy: Path) -> None:
    """A mistyped job id as a target: Snakemake's missing-input report carries our sentence with
    the fix, and no traceback of the workflow's input functions."""
    proc = snakemake(repo_copy, "-n", "--config", "system=probe", "--", "results/probe/latency/no-such-job.csv")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no job 'no-such-job' in the configured sweep: `python -m numasweep grid --config FILE` lists the ids" \
        in out, out[-3000:]
    assert "Traceback" not in out and "common.smk" not in out, out[-3000:]


@pytest.mark.workflow
def test_a_target_that_names_no_batch_says_so_without_a_traceback(repo_copy: Path) -> None:
    """The same for a batch id that the configured sweep does not have (config `batch` > 1)."""
    proc = snakemake(
        repo_copy, "-n", "--config", "system=probe", "batch=4", "--", "results/probe/latency/batches/b999.json"
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no batch 'b999' in the configured sweep (batch: 4): " \
        "`python -m numasweep grid --config FILE --count` counts the batches" in out, out[-3000:]
    assert "Traceback" not in out and "common.smk" not in out, out[-3000:]


# ------------------------------------------------------------------ a real local sweep


@pytest.fixture(scope="module")
def swept(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny sweep run for real with the local profile, report included."""
    work = copy_repo(repo, tmp_path_factory.mktemp("sweep") / "numasweep")
    proc = snakemake(
        work, "--profile", "profiles/local", "--configfile", str(TEST_CONFIGS / "tiny.yaml"), timeout=400
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    (work.parent / "console.txt").write_text(proc.stderr)
    return work


def _results(work: Path) -> Path:
    (system,) = [p for p in (work / "results").iterdir() if p.is_dir()]
    return system


def _dry(work: Path) -> str:
    proc = snakemake(
        work, "-n", "--profile", "profiles/local", "--configfile", str(TEST_CONFIGS / "tiny.yaml")
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout + proc.stderr


@pytest.mark.workflow
def test_local_sweep_writes_results_provenance_and_report(swept: Path) -> None:
    results = _results(swept)
    system = results.name
    assert (swept / "report" / system / "experimentation.md").stat().st_size > 0
    for bench, jobs in (("latency", 2), ("bandwidth", 1), ("copy", 1)):
        csvs = sorted((results / bench).glob("*.csv"))
        assert len(csvs) == jobs, csvs
        for csv in csvs:
            record = json.loads(csv.with_suffix(".json").read_text())
            assert record["job_id"] == csv.stem and record["command"].split()[0] in ("env", "mpirun")
            assert (
                record["kernel"]["version"] and record["topology_digest"] and record["start"] <= record["end"]
            )
            assert csv.with_suffix(".log").exists()
        table = pd.read_csv(results / f"{bench}.csv")
        assert set(table["job_id"]) == {c.stem for c in csvs}
        assert {"repetition", "label", "topology_digest", "start", "end"} <= set(table.columns)
    latency = pd.read_csv(results / "latency.csv")
    assert set(latency["ranks_per_domain"]) == {1, 2} and set(latency["size_bytes"]) == {1 << 20, 2 << 20}
    skipped = json.loads((results / "skipped.json").read_text())
    assert "no GPU" in skipped["gpu_xfer"]


@pytest.mark.workflow
def test_the_console_says_each_job_in_a_short_line_and_ends_with_the_report(swept: Path) -> None:
    """Every numasweep line under 160 characters; the run ends with the report's path, three
    headline rows (the report's own numbers) and what was not concluded."""
    console = (swept.parent / "console.txt").read_text()
    ours = [line for line in console.splitlines() if line.startswith("numasweep: ")]
    assert [line for line in ours if " measured in " in line], console[-3000:]
    assert not [line for line in ours if len(line) >= 160], [line for line in ours if len(line) >= 160]
    system = _results(swept).name
    report = f"report/{system}/experimentation.md"
    (start,) = [i for i, line in enumerate(ours) if line.startswith(f"numasweep: report: {report}")]
    block = ours[start:]
    assert len(block) >= 3 and all(line.startswith("numasweep:   ") for line in block[1:-1]), block
    text = (swept / report).read_text()
    for row in block[1:-1]:      # each headline row's value as the report's table prints it
        value = row.split(": ", 2)[2].split("; ")[0] if row.count(": ") > 1 else row
        assert value.split(" †")[0] in text, (row, value)
    assert block[-1].startswith(("numasweep: every series concluded", "numasweep: to measure them again")), block


@pytest.mark.workflow
def test_second_run_has_nothing_to_do(swept: Path) -> None:
    out = _dry(swept)
    assert "Nothing to be done" in out, out[-3000:]


REPORT_RULES = {"analyse", "figures", "report_md", "report", "comparison", "compare", "hwloc_export", "fleet"}


@pytest.mark.workflow
def test_copied_results_are_reported_on_in_a_fresh_clone_without_measuring(swept: Path, repo: Path,
                                                                           tmp_path: Path) -> None:
    """A fresh checkout (no build, sources newer than the results) with a campaign's folder copied
    back: the report and a comparison plan report jobs only, and say why; deleting a job's CSV
    there asks for that job again (the folder is then incomplete)."""
    results = _results(swept)
    fresh = copy_repo(repo, tmp_path / "fresh")
    shutil.copytree(results, fresh / "results" / results.name)
    later = time.time() + 5
    for source in (fresh / "kernels").rglob("*"):
        os.utime(source, (later, later))
    config = ("--profile", "profiles/local", "--configfile", str(TEST_CONFIGS / "tiny.yaml"))
    for target in ("report", "compare"):
        proc = snakemake(fresh, target, "-n", *config)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        assert set(job_counts(out)) and set(job_counts(out)) <= REPORT_RULES, job_counts(out)
        assert f"results/{results.name} holds every job's results: reporting on them" in out, out[-3000:]
    next(iter(sorted((fresh / "results" / results.name / "copy").glob("*.csv")))).unlink()
    proc = snakemake(fresh, "report", "-n", *config)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and job_counts(out).get("copy") == 1, out[-3000:]
    assert "holds every job's results" not in out


@pytest.mark.workflow
def test_hwloc_export_writes_the_measured_matrices_into_this_machines_topology(swept: Path) -> None:
    """`snakemake hwloc_export` after a sweep: the machine's own hwloc XML, taken where the
    benchmarks ran (rule hwloc_topology), with the measured bandwidth as its memory attribute;
    the real `lstopo --input FILE --memattrs` reads it and prints those values. The tiny sweep's
    latency stops at 2 MiB, inside the caches: no memory latency, so no Latency attribute, and the
    command says why (tests/report/test_hwloc_export.py exports a memory latency)."""
    proc = snakemake(swept, "hwloc_export", "--profile", "profiles/local", "--configfile",
                     str(TEST_CONFIGS / "tiny.yaml"), timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert set(job_counts(out)) == {"hwloc_topology", "hwloc_export"}, job_counts(out)
    results = _results(swept)
    xml = swept / "report" / results.name / "measured-hwloc.xml"
    shown = subprocess.run(["lstopo", "--input", str(xml), "--memattrs"], capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    measured = matrices.measured(aggregate.load_results(results), aggregate.load_topology(results))
    assert {hwloc_export.attribute(q)[0] for q in measured} == {"Bandwidth"}, list(measured)
    log = (swept / "logs" / results.name / "report" / "hwloc_export.log").read_text()
    assert "no Latency: latency measured no node-to-node cell of memory" in log, log
    for quantity, matrix in measured.items():
        name, factor = hwloc_export.attribute(quantity)
        (value,) = matrices.cells(matrix).values()  # one node here: the (0, 0) cell
        block = shown.stdout.split(f"name `{name}'", 1)[1].split("Memory attribute", 1)[0]
        assert re.search(rf"NUMANode L#0 = {max(1, round(value * factor))} from cpuset", block), shown.stdout


@pytest.mark.workflow
def test_deleting_one_result_reruns_exactly_that_job(swept: Path) -> None:
    results = _results(swept)
    victim, *others = sorted((results / "latency").glob("*.csv")) + sorted((results / "copy").glob("*.csv"))
    before = {p: (p.stat().st_mtime_ns, _sha(p)) for p in others}
    victim.unlink()
    out = _dry(swept)
    assert planned_jobs(out) == {victim.stem}
    counts = job_counts(out)
    assert counts.get("latency") == 1 and counts.get("aggregate") == 1, counts
    assert not {"build", "build_common", "bandwidth", "copy", "topology"} & set(counts), counts
    proc = snakemake(
        swept, "--profile", "profiles/local", "--configfile", str(TEST_CONFIGS / "tiny.yaml"), timeout=300
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert victim.exists()
    assert {p: (p.stat().st_mtime_ns, _sha(p)) for p in others} == before


def _shapes_ran(results: Path) -> dict[tuple[str, str], str]:
    """(kernel, stores) -> the shape each bandwidth row ran, over every bandwidth job."""
    out: dict[tuple[str, str], set[str]] = {}
    for csv in sorted((results / "bandwidth").glob("*.csv")):
        for _, r in pd.read_csv(csv).iterrows():
            out.setdefault((r["kernel"], r["stores"]), set()).add(r["variant"])
    assert all(len(v) == 1 for v in out.values()), out
    return {k: v.pop() for k, v in out.items()}


@pytest.mark.workflow
def test_bandwidth_jobs_run_the_shapes_the_calibration_decided(swept: Path) -> None:
    """One calibration per results folder and build: its shapes file is what every bandwidth job
    ran, each job's provenance records the decision, the report's bandwidth section shows it, and
    measuring a point again runs the same shapes without calibrating again."""
    results = _results(swept)
    rec = json.loads((results / "calibration.json").read_text())
    decided = {(d["kernel"], d["stores"]): d["shape"] for d in rec["decisions"]}
    shapes = {tuple(line.split()[:2]): line.split()[2]
              for line in (results / "calibration.shapes").read_text().splitlines() if not line.startswith("#")}
    assert shapes == decided and rec["rounds"] == 7 and rec["threads"] == 1
    ran = _shapes_ran(results)
    assert ran and all(decided[k] == v for k, v in ran.items()), (ran, decided)
    for job in (results / "bandwidth").glob("*.json"):
        (setup,) = json.loads(job.read_text())["setup"]
        assert setup["reads"].endswith("calibration.shapes") and setup["kernel_sha256"] == rec["kernel_sha256"]
        assert {(d["kernel"], d["stores"]): d["shape"] for d in setup["decisions"]} == decided
    report = (swept / "report" / results.name / "experimentation.md").read_text()
    assert "Code shapes the sequential kernels ran and how each was chosen" in report
    table = pd.read_csv(results / "bandwidth.csv")
    for _, r in table.iterrows():   # each row says how its shape was chosen, in the calibration's words
        assert " in the calibration" in r["shape_choice"] and ("chosen over" in r["shape_choice"]
                                                               or "fixed order" in r["shape_choice"]), r
    # The same point measured again: the same shapes, the calibration kept.
    for csv in (results / "bandwidth").glob("*.csv"):
        csv.unlink()
    out = _dry(swept)
    counts = job_counts(out)
    assert counts.get("bandwidth") == 1 and "calibrate" not in counts, counts
    proc = snakemake(
        swept, "--profile", "profiles/local", "--configfile", str(TEST_CONFIGS / "tiny.yaml"), timeout=300
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert _shapes_ran(results) == ran


@pytest.mark.workflow
def test_changing_a_kernel_source_reruns_only_its_benchmarks(swept: Path) -> None:
    # Snakemake compares the content of a newer input with the one it last used, so the
    # change must be real, not only a new mtime.
    source = swept / "kernels" / "numa_copy.c"
    original = source.read_bytes()
    source.write_bytes(original + b"\n/* changed */\n")
    try:
        out = _dry(swept)
    finally:
        source.write_bytes(original)
    counts = job_counts(out)
    assert counts.get("build") == 1 and counts.get("copy") == 1, counts
    assert not {"latency", "bandwidth", "build_common"} & set(counts), counts
    assert "wildcards: kernel=numa_copy" in out


# ------------------------------------------------------------------ an interrupted sweep


@pytest.mark.workflow
def test_kill_mid_job_leaves_no_partial_csv_and_resumes(repo: Path, tmp_path: Path) -> None:
    work = copy_repo(repo, tmp_path / "numasweep")
    args = ["sweep", "--profile", "profiles/local", "--configfile", str(TEST_CONFIGS / "slow.yaml")]
    sm = subprocess.Popen(
        [sys.executable, "-m", "snakemake", *args],
        cwd=work,
        env=snakemake_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    results = work / "results"
    deadline = time.time() + 240
    try:
        # Wait until one job has finished and the next one has written part of its table.
        while time.time() < deadline:
            done = list(results.glob("*/latency/*.json"))
            partial = list(results.glob("*/latency/*.csv.partial"))
            if done and partial:
                break
            assert sm.poll() is None, "the sweep ended before it could be interrupted"
            time.sleep(0.1)
        else:
            pytest.fail("no job finished within 240 s")
        finished = {c: (c.stat().st_mtime_ns, _sha(c)) for c in (p.with_suffix(".csv") for p in done)}
    finally:
        os.killpg(sm.pid, signal.SIGKILL)
        sm.wait()
    interrupted = {p.name[: -len(".csv.partial")] for p in partial}
    for csv in results.glob("*/latency/*.csv"):
        assert csv.stem not in interrupted or csv in finished, f"{csv}: written by a killed job"
        assert pd.read_csv(csv)["size_bytes"].nunique() == 5, f"{csv} is short"  # slow.yaml: 1-16 MiB
    assert snakemake(work, "--unlock", *args).returncode == 0
    proc = snakemake(work, "--rerun-incomplete", *args, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    csvs = list(results.glob("*/latency/*.csv"))
    assert len(csvs) == 3 and all(c.with_suffix(".json").exists() for c in csvs)
    assert {c: (c.stat().st_mtime_ns, _sha(c)) for c in finished} == finished


def _job_intervals(work: Path) -> list[tuple[str, float, float]]:
    """(rule, start, end) of every job of the run, from snakemake's record of each output: the
    start it noted when the job began, the output's modification time as its end."""
    jobs: dict[tuple, list[float]] = {}
    for path in (work / ".snakemake" / "metadata").rglob("*"):
        if not path.is_file():
            continue
        record = json.loads(path.read_text())
        if record.get("starttime") is None or record.get("endtime") is None:
            continue
        key = (record["rule"], record.get("job_hash"))
        span = jobs.setdefault(key, [record["starttime"], record["endtime"]])
        span[0], span[1] = min(span[0], record["starttime"]), max(span[1], record["endtime"])
    return [(rule, start, end) for (rule, _), (start, end) in jobs.items()]


@pytest.mark.workflow
def test_no_other_job_runs_beside_a_benchmark(swept: Path) -> None:
    """Under the local profile every job takes the benchmark slot: no build, aggregate or report
    job overlaps a benchmark job in time (nor two benchmarks each other)."""
    jobs = _job_intervals(swept)
    benches = [j for j in jobs if j[0] in BENCH_RULES]
    assert len(benches) == 4 and len(jobs) > len(benches), jobs
    for bench in benches:
        for other in jobs:
            if other is bench:
                continue
            overlap = min(bench[2], other[2]) - max(bench[1], other[1])
            assert overlap <= 0, f"{other[0]} ran {overlap:.2f} s beside the benchmark {bench[0]}: {jobs}"
