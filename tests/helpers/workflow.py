"""Copies of the repository and snakemake runs in them, so tests never touch its results/: the
one copier (`copy_repo`) and the one snakemake runner (`snakemake`) of the tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What a fresh clone does not have, or what a run writes. The bytecode under __pycache__ is
# copied: it stays valid beside sources copied with their file times, and spares every Python
# start in the copy compiling the package (tests/conftest.py writes it once per session).
NOT_COPIED = {".venv", ".git", ".snakemake", ".pytest_cache"}
# what a run writes at the repository's top (workflow/report holds the report's templates)
NOT_COPIED_AT_TOP = {"build", "results", "report", "logs", "tests"}  # tests: the workflow never reads them
TEST_CONFIGS = REPO / "tests" / "workflow" / "config"
# An arch file every machine the tests run on has (CPUs 0 and 1 on node 0, which the default
# sweep's two ranks need), for a test that runs the topology job on an arch file: that job sets
# the file against the node it runs on and refuses one naming CPUs or nodes the node lacks.
ANY_MACHINE = {"system": "any", "cpu_model": "any", "hypervisor": None, "threads_per_core": 1,
               "nodes": [{"id": 0, "cpus": "0-1", "memory": "1G"}], "distances": [[10]]}


def copy_repo(repo: Path, dest: Path, entries: tuple[str, ...] | None = None, link: tuple[str, ...] = ()) -> Path:
    """The repository copied to `dest` without what a run writes; or, with `entries`, only those
    top-level entries (build included, with its file times), the ones in `link` as links."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n in NOT_COPIED}
        # Sockets and pipes (a running test cluster's) cannot be copied and are not sources.
        skip |= {
            n
            for n in names
            if not (os.path.isdir(os.path.join(folder, n)) or os.path.isfile(os.path.join(folder, n)))
        }
        if Path(folder) == repo:
            skip |= NOT_COPIED_AT_TOP & set(names)  # test configs are used in place
        return skip

    if entries is None:
        shutil.copytree(repo, dest, ignore=ignore, symlinks=True)
        return dest
    dest.mkdir()
    for entry in entries:
        if entry in link:
            (dest / entry).symlink_to(repo / entry)
        elif (repo / entry).is_dir():
            shutil.copytree(repo / entry, dest / entry, ignore=ignore, symlinks=True)
        elif (repo / entry).exists():
            shutil.copy2(repo / entry, dest / entry)
    return dest


def snakemake_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def snakemake(cwd: Path, *args: str, timeout: int = 300, env: dict[str, str] | None = None, check: bool = False,
              watch: Callable[[], None] | None = None, log: Path | None = None,
              **popen) -> subprocess.CompletedProcess:
    """`snakemake ARGS` in `cwd` with this interpreter (its environment first on PATH unless `env`
    is given); `check` fails the test with the output's tail when it does not exit 0.

    With `watch`, the output goes to `log` and `watch()` is called every 0.3 s while snakemake
    runs; the time limit is `timeout -k`'s, as a snakemake stuck in a status loop ignores SIGTERM.
    The CompletedProcess then holds the log as stdout."""
    argv = [sys.executable, "-m", "snakemake", *args]
    env = snakemake_env() if env is None else env
    if watch is None:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **popen)
    else:
        assert log is not None, "snakemake(watch=...) writes its output to a log: pass log="
        argv = ["timeout", "-k", "10", str(timeout), *argv]
        with open(log, "w") as out:
            child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, **popen)
            while child.poll() is None:
                watch()
                time.sleep(0.3)
        proc = subprocess.CompletedProcess(argv, child.returncode, log.read_text(), "")
    if check:
        assert proc.returncode == 0, (f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n"
                                      f"{(proc.stderr or '')[-3000:]}")
    return proc


def job_counts(output: str) -> dict[str, int]:
    """The `Job stats:` table of a dry run as {rule: count}, without its `total` line."""
    counts: dict[str, int] = {}
    if "Job stats:" not in output:
        return counts
    table = output.split("Job stats:", 1)[1]
    for line in table.splitlines()[3:]:
        m = re.match(r"^(\S+)\s+(\d+)$", line.strip())
        if not m or m.group(1) == "total":
            break
        counts[m.group(1)] = int(m.group(2))
    return counts


def planned_jobs(output: str) -> set[str]:
    """The benchmark job ids a dry run would run (from `wildcards: job=...`)."""
    return set(re.findall(r"wildcards: job=(\S+)", output))
