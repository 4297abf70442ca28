"""A benchmark of the test's own, added as docs/ARCHITECTURE.md's "Adding a kernel" says, in a
copy of the repository: its C source (numa_toy.c) under kernels/, which the Makefile builds with
no line of its own, its module (toy.py, named by NUMASWEEP_BENCHES instead of an entry in
MODULES) and its config section (toy.schema.yaml) in the schema. Then planned (`python -m numasweep grid`) and run through the
real workflow: build, its job, aggregate, analyse, figures and report, which must show its
section, figure and finding. Nothing outside its own temporary folder changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.workflow import copy_repo, snakemake, snakemake_env

HERE = Path(__file__).resolve().parent


def add_kernel(work: Path) -> None:
    """numa_toy's source, which kernels/Makefile builds as it builds every kernels/numa_*.c, and
    the toy section of the config schema."""
    (work / "kernels" / "numa_toy.c").write_text((HERE / "numa_toy.c").read_text())
    schema_path = work / "workflow" / "schemas" / "config.schema.yaml"
    schema = yaml.safe_load(schema_path.read_text())
    schema["properties"]["toy"] = yaml.safe_load((HERE / "toy.schema.yaml").read_text())
    schema_path.write_text(yaml.safe_dump(schema, sort_keys=False))


def git_status(repo: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.slow
def test_a_benchmark_added_from_outside_runs_through_plan_workflow_and_report(repo: Path, tmp_path: Path) -> None:
    before = git_status(repo)
    work = copy_repo(repo, tmp_path / "numasweep")
    add_kernel(work)
    env = {**snakemake_env(), "NUMASWEEP_BENCHES": str(HERE / "toy.py"),
           "PYTHONPATH": os.pathsep.join([str(work / "workflow"), os.environ.get("PYTHONPATH", "")])}
    # Only the toy benchmark: every other one the registry has gets no sweep.
    names = subprocess.run([sys.executable, "-c", "from numasweep.core import registry; print(*registry.names())"],
                           cwd=work, env=env, check=True, capture_output=True, text=True).stdout.split()
    assert names[-1] == "toy", names
    config = {name: {"sweeps": []} for name in names[:-1]}
    # A busy test machine disturbs the job: its finding is drawn all the same.
    config.update(system="toybox", retry_disturbed=0, repeat_until={"max_repeats": 0}, conclude_disturbed=True,
                  toy={"sweeps": [{"sizes": [4096, 65536, 1048576], "samples": 3}]})
    config_file = tmp_path / "toy.yaml"
    config_file.write_text(yaml.safe_dump(config))

    plan = subprocess.run([sys.executable, "-m", "numasweep", "grid", "--config", str(config_file)],
                          cwd=work, env=env, capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.split() == ["toy", "toy-0-rep0"], plan.stdout

    snakemake(work, "--profile", "profiles/local", "--configfile", str(config_file), env=env, timeout=400,
              check=True)

    results, report = work / "results" / "toybox", work / "report" / "toybox"
    assert len((results / "toy.csv").read_text().splitlines()) == 1 + 3  # a row per size
    findings = json.loads((report / "findings.json").read_text())
    found = [f for f in findings["findings"] if f["id"] == "toy_rate"]
    assert found and found[0]["numbers"]["sizes"] == 3, findings
    figure = next(report.rglob("toy_rate--all.png"))
    markdown = (report / "experimentation.md").read_text()
    assert "\n### Toy buffer writes\n" in markdown  # its section
    assert found[0]["summary"].split(" (")[0] in markdown
    assert figure.name in markdown
    assert git_status(repo) == before


@pytest.mark.parametrize("entry, says", [
    ("no_such_module_here", "NUMASWEEP_BENCHES: no_such_module_here: cannot be imported"),
    ("missing.py", "cannot be imported (no such file)"),
    ("empty.py", "registers no benchmark"),
    ("raises.py", "its import raised RuntimeError (half set up) at"),
    ("twice.py", "benchmark 'latency' is registered twice"),
    (str(HERE / "toy.py"), "has no section 'toy'"),   # a valid benchmark, its schema section not added
])
def test_a_benchmark_module_that_cannot_be_loaded_is_one_line(repo: Path, tmp_path: Path, entry: str,
                                                               says: str) -> None:
    (tmp_path / "empty.py").write_text("VALUE = 1\n")  # a module that registers nothing
    (tmp_path / "raises.py").write_text("raise RuntimeError('half set up')\n")
    (tmp_path / "twice.py").write_text("import dataclasses\nfrom numasweep.core import registry\n"
                                       "registry.register(dataclasses.replace(registry.get('latency')))\n")
    entry = str(tmp_path / entry) if entry.endswith(".py") and "/" not in entry else entry
    proc = subprocess.run([sys.executable, "-m", "numasweep", "grid", "--config", "config/config.yaml", "--count"],
                          cwd=repo, env={**os.environ, "NUMASWEEP_BENCHES": entry}, capture_output=True, text=True)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
