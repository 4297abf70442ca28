"""repeat_until: run-job runs a point's kernel again while the widest 95% interval of its values
over its runs is wider than the target, up to --max-repeats more runs; the runs are one result,
numbered in its `repetition` column, which the aggregated table and the report's headline read as
runs. The launch lines are bash scripts that write the next of a list of values each run, under a
kernel file named numa_bandwidth, so the bandwidth benchmark's columns and target are the ones
read; nothing is mocked."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import numasweep
from helpers.workflow import TEST_CONFIGS, copy_repo, snakemake, snakemake_env
from numasweep.benches import bandwidth
from numasweep.benches.bandwidth import report as bw_report
from numasweep.core import registry
from numasweep.results import aggregate
from numasweep.statistics import repeat, stats

TOPO = Path(__file__).resolve().parents[2] / "examples" / "lumi-g" / "topology.json"
FACTS = (registry.runner_facts(bandwidth.BENCH)["metrics"], registry.runner_facts(bandwidth.BENCH)["rows"])
# Each run takes the first line of VALUES (and removes it) as its triad's best MB/s.
SCRIPT = ('v=$(head -n1 "$VALUES"); sed -i 1d "$VALUES"; echo "run with $v MB/s"; '
          'printf "kernel,threads,best_mb_s,avg_mb_s,validation\\ncopy,1,9000,8990,ok\\ntriad,1,%s,%s,ok\\n" "$v" "$v" > "${0#--csv=}"')


# ... and the second field of the line as its threads' share of time on their CPUs.
SCRIPT_ON_CPU = ('read v share < "$VALUES"; sed -i 1d "$VALUES"; echo "run with $v MB/s"; '
                 'printf "kernel,threads,best_mb_s,avg_mb_s,validation,on_cpu_pct\ncopy,1,9000,8990,ok,%s\n'
                 'triad,1,%s,%s,ok,%s\n" "$share" "$v" "$v" "$share" > "${0#--csv=}"')


def _runjob(tmp: Path, values: list, *extra: str, repetition: int = 0, batch: bool = False,
            script: str = SCRIPT, env: dict | None = None) -> subprocess.CompletedProcess:
    """run-job (or run-batch with this one point) of job j1 whose runs write `values` in turn."""
    (tmp / "values").write_text("".join(f"{v}\n" for v in values))
    kernel = tmp / "numa_bandwidth"
    shutil.copy("/bin/true", kernel)
    csv = tmp / "bandwidth" / "j1.csv"
    launch = shlex.join(["env", f"VALUES={tmp / 'values'}", "bash", "-c", script, f"--csv={csv}.partial"])
    grid = json.dumps({"repetition": repetition})
    common = ["--kernel", str(kernel), "--topology", str(TOPO), "--retry-disturbed", "0", *extra]
    if batch:
        argv = [sys.executable, "-m", "numasweep", "run-batch", "--batch", "b1", "--point", "j1", launch, grid,
                "--manifest", str(tmp / "bandwidth" / "batches" / "b1.json"),
                "--log", str(tmp / "bandwidth" / "batches" / "b1.log"), *common]
    else:
        argv = [sys.executable, "-m", "numasweep", "run-job", "--job-id", "j1", "--launch", launch, "--grid", grid,
                "--csv", str(csv), "--provenance", str(csv.with_suffix(".json")), "--log", str(csv.with_suffix(".log")),
                *common]
    if env is None:
        env = snakemake_env()
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "workflow")
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def _runs(tmp: Path) -> list[tuple[str, str]]:
    table = (tmp / "bandwidth" / "j1.csv").read_text().splitlines()
    header = table[0].split(",")
    return [(row["repetition"], row["best_mb_s"]) for row in
            (dict(zip(header, line.split(","))) for line in table[1:]) if row["kernel"] == "triad"]


def test_runs_that_agree_end_after_two(tmp_path: Path) -> None:
    proc = _runjob(tmp_path, [10000, 10001, 20000], "--repeat-until", "0.03", "--max-repeats", "4")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert _runs(tmp_path) == [("0", "10000"), ("1", "10001")]
    record = json.loads((tmp_path / "bandwidth" / "j1.json").read_text())["repeat_until"]
    assert record["runs"] == 2 and record["target"] == 0.03 and record["widest_half_width"] < 0.03, record
    # one progress line, with the runs and how wide the widest interval ended
    (line,) = proc.stderr.strip().splitlines()
    assert re.search(r"measured in .*; 2 runs, widest 95% interval ±0\.[01]% \(repeat_until ±3\.0%\)", line), line
    log = (tmp_path / "bandwidth" / "j1.log").read_text()
    assert "repeat_until: run 2 of at most 5: the widest 95% interval is unknown (best_mb_s, kernel copy" in log, log


def test_runs_that_disagree_go_on_to_the_cap_numbered_after_the_sweeps_repetitions(tmp_path: Path) -> None:
    proc = _runjob(tmp_path, [10000, 14000, 8000, 12000], "--repeat-until", "0.03", "--max-repeats", "2",
                   repetition=1)
    assert proc.returncode == 0, proc.stderr
    # repetition 1 of the sweep: its runs are 1 * (2 + 1) + 0, 1, 2
    assert _runs(tmp_path) == [("3", "10000"), ("4", "14000"), ("5", "8000")]
    log = (tmp_path / "bandwidth" / "j1.log").read_text()
    assert log.count("run with") == 3 and "run 3 of at most 3: the widest 95% interval is ±" in log
    assert "(best_mb_s, kernel triad)" in log, log
    record = json.loads((tmp_path / "bandwidth" / "j1.json").read_text())["repeat_until"]
    assert record["runs"] == 3 and record["widest_half_width"] > 0.03
    # the aggregated table reads each run as a repetition of the point, the grid's number left
    table = aggregate.read_job(tmp_path / "bandwidth" / "j1.csv", "bandwidth")
    assert sorted(table["repetition"].astype(int).unique()) == [3, 4, 5]
    # the report's headline gives the point an interval over its three runs
    (row, *_) = [r for r in bw_report.headline(table, None) if r[0].startswith("triad")]
    assert "(3 runs)" in row[2], row


def test_a_run_measured_while_disturbed_ends_its_trys_repetitions(tmp_path: Path) -> None:
    """The first run had its CPU 30% of the time: the try is disturbed whatever follows, so no
    more runs of it (its retry, off here, would measure again)."""
    proc = _runjob(tmp_path, ["10000 30", "14000 99", "8000 99"], "--repeat-until", "0.03", "--max-repeats", "2",
                   script=SCRIPT_ON_CPU)
    assert proc.returncode == 0, proc.stderr
    assert _runs(tmp_path) == [("0", "10000")]
    log = (tmp_path / "bandwidth" / "j1.log").read_text()
    assert log.count("run with") == 1 and "no more runs of this try: the last was measured while disturbed" in log
    record = json.loads((tmp_path / "bandwidth" / "j1.json").read_text())
    assert record["quality"]["verdict"] == "disturbed" and record["repeat_until"]["runs"] == 1, record
    # a quiet first run goes on as before
    proc = _runjob(tmp_path, ["10000 99", "14000 99", "8000 99"], "--repeat-until", "0.03", "--max-repeats", "2",
                   script=SCRIPT_ON_CPU)
    assert proc.returncode == 0 and [v for _, v in _runs(tmp_path)] == ["10000", "14000", "8000"], proc.stderr


def test_without_repeat_until_a_point_runs_once_and_its_table_is_the_kernels(tmp_path: Path) -> None:
    proc = _runjob(tmp_path, [10000, 10001])
    assert proc.returncode == 0, proc.stderr
    assert "repetition" not in (tmp_path / "bandwidth" / "j1.csv").read_text()
    assert "repeat_until" not in json.loads((tmp_path / "bandwidth" / "j1.json").read_text())
    assert (tmp_path / "values").read_text() == "10001\n"


@pytest.mark.parametrize("values, width", [([100.0], float("inf")), ([100.0, 100.0], 0.0)])
def test_one_run_has_no_interval_and_runs_alike_one_of_no_width(values: list[float], width: float) -> None:
    runs = [[{"kernel": "triad", "threads": "1", "best_mb_s": str(v)}] for v in values]
    assert repeat.widest(runs, *FACTS) == (width, "best_mb_s")


def test_the_widest_interval_is_the_models_of_the_point_alone() -> None:
    values = [100.0, 104.0, 97.0]
    runs = [[{"kernel": "copy", "best_mb_s": "50"}, {"kernel": "triad", "best_mb_s": str(v)}] for v in values]
    width, where = repeat.widest(runs, *FACTS)
    iv = stats.center_interval(values)
    assert where == "best_mb_s, kernel triad" and width == pytest.approx((iv.high - iv.low) / 2 / iv.estimate)


def test_the_runners_interval_is_scipys() -> None:
    """The runner's standard-library interval (Student t's quantile in closed form) against the
    report's (`stats.center_interval`, scipy's quantile) on draws of 2 to 101 runs, and the
    quantile itself at every whole dof repeat_until can reach and beyond."""
    from scipy.stats import t

    assert (repeat.SHAMOS, repeat.MEDIAN_EFFICIENCY, repeat.LEVEL) == (stats.SHAMOS, stats.MEDIAN_EFFICIENCY, stats.LEVEL)
    for dof in (*range(1, 102), 150, 400):
        for p in (0.5, 0.8, 0.975, 0.995):
            assert repeat.t_quantile(p, dof) == pytest.approx(float(t.ppf(p, dof)), rel=1e-10, abs=1e-12), (p, dof)
    rng = np.random.default_rng(58)
    for k in (*range(2, 12), 40, 101):
        values = list(np.exp(rng.normal(9.0, rng.uniform(0.001, 0.3), k)))
        iv, (estimate, low, high) = stats.center_interval(values), repeat.center_interval(values)
        assert (estimate, low, high) == pytest.approx((iv.estimate, iv.low, iv.high), rel=1e-9), k


BLOCKER = """import sys, importlib.abc
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("numpy", "pandas", "scipy", "yaml", "jinja2", "matplotlib"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: a compute node's bare python)", name=name)
sys.meta_path.insert(0, _Block())
"""


@pytest.mark.parametrize("batch", [False, True], ids=["run-job", "run-batch"])
def test_the_runner_needs_nothing_beyond_the_standard_library(tmp_path: Path, batch: bool) -> None:
    """With numpy, pandas, scipy and yaml blocked (a compute node's python without them), a job
    with repeat_until runs, decides its verdict and its runs from the workflow's --bench-facts."""
    (tmp_path / "block").mkdir()
    (tmp_path / "block" / "sitecustomize.py").write_text(BLOCKER)
    env = snakemake_env()
    env["PYTHONPATH"] = f"{tmp_path / 'block'}:{Path(__file__).resolve().parents[2] / 'workflow'}"
    facts = json.dumps(registry.runner_facts(bandwidth.BENCH))
    proc = _runjob(tmp_path, [10000, 14000, 8000, 11000], "--repeat-until", "0.03", "--max-repeats", "2",
                   "--bench-facts", facts, batch=batch, env=env)
    assert proc.returncode == 0, proc.stderr
    assert [v for _, v in _runs(tmp_path)] == ["10000", "14000", "8000"]
    record = json.loads((tmp_path / "bandwidth" / "j1.json").read_text())
    assert record["quality"]["verdict"] in ("quiet", "noisy") and record["repeat_until"]["runs"] == 3, record
    assert record["numasweep_version"] == numasweep.__version__
    # without the facts, the runner reads the registry, which imports the benchmarks and numpy
    (tmp_path / "bandwidth" / "j1.csv").unlink()
    proc = _runjob(tmp_path, [10000, 14000], "--repeat-until", "0.03", "--max-repeats", "1", env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().endswith("as the workflow does, which needs nothing but Python's standard library")


def test_a_batchs_point_runs_until_its_interval_answers_too(tmp_path: Path) -> None:
    proc = _runjob(tmp_path, [10000, 14000, 8000], "--repeat-until", "0.03", "--max-repeats", "1", batch=True)
    assert proc.returncode == 0, proc.stderr
    assert _runs(tmp_path) == [("0", "10000"), ("1", "14000")]
    assert json.loads((tmp_path / "bandwidth" / "j1.json").read_text())["repeat_until"]["runs"] == 2


@pytest.mark.slow
def test_a_sweep_with_repeat_until_gives_each_point_its_runs_and_the_headline_intervals(repo: Path,
                                                                                       tmp_path: Path) -> None:
    """Through snakemake: each benchmark's rule hands its own target to its jobs (rules made in
    one loop share one shell line), and the report's headline values come with intervals."""
    work = copy_repo(repo, tmp_path / "numasweep")
    config = yaml.safe_load((TEST_CONFIGS / "tiny.yaml").read_text())
    config.update(latency={"sweeps": []}, repeat_until={"bandwidth": 0.5, "copy": 0.001, "max_repeats": 1})
    (tmp_path / "repeat.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(work, "--profile", "profiles/local", "--configfile", str(tmp_path / "repeat.yaml"),
                     "--config", "system=repeat", timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    results = work / "results" / "repeat"
    for bench, target in (("bandwidth", 0.5), ("copy", 0.001)):
        (record,) = [json.loads(p.read_text()) for p in (results / bench).glob("*.json")]
        # one run has no interval: with max_repeats 1 every point runs twice
        assert record["repeat_until"]["target"] == target and record["repeat_until"]["runs"] == 2, record
        table = pd.read_csv(results / f"{bench}.csv")
        assert sorted(table["repetition"].unique()) == [0, 1]
    report = (work / "report" / "repeat" / "experimentation.md").read_text()
    headline = report.split("| measured | value | 95% interval |", 1)[1].split("\n\n", 1)[0]
    assert "(2 runs)" in headline and "one run: no interval" not in headline, headline


def test_a_missed_target_is_said_and_never_called_quiet(tmp_path: Path) -> None:
    """Runs that never agree: the line says the target was missed, with the width where it means
    something, and "too few" where it does not; it never says "quiet" beside a missed target."""
    proc = _runjob(tmp_path, [10000, 12000, 9000, 11500], "--repeat-until", "0.01", "--max-repeats", "3")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert re.search(r"; 4 runs, target ±1\.0% missed \(widest 95% interval ±\d+\.\d%\)", line), line
    assert "quiet" not in line and len(line) < 160, line
    (tmp_path / "two").mkdir()
    proc = _runjob(tmp_path / "two", [10000, 30000], "--repeat-until", "0.01", "--max-repeats", "1")
    (line,) = proc.stderr.strip().splitlines()
    assert "; 2 runs, too few for an interval: target ±1.0% missed" in line and "quiet" not in line, line
