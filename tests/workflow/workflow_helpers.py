"""Running snakemake on a copy of the repository, so tests never touch its results/."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# What a fresh clone does not have, or what a run writes.
NOT_COPIED = {".venv", ".git", ".snakemake", ".pytest_cache", "__pycache__"}
# what a run writes at the repository's top (workflow/report holds the report's templates)
NOT_COPIED_AT_TOP = {"build", "results", "report", "logs", "tests"}  # tests: the workflow never reads them
TEST_CONFIGS = Path(__file__).resolve().parent / "config"


def copy_repo(repo: Path, dest: Path) -> Path:
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

    shutil.copytree(repo, dest, ignore=ignore, symlinks=True)
    return dest


def snakemake_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def snakemake(cwd: Path, *args: str, timeout: int = 300, **popen) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,
    )


def job_counts(output: str) -> dict[str, int]:
    """The `Job stats:` table of a dry run as {rule: count}."""
    counts: dict[str, int] = {}
    if "Job stats:" not in output:
        return counts
    table = output.split("Job stats:", 1)[1]
    for line in table.splitlines()[3:]:
        m = re.match(r"^(\S+)\s+(\d+)$", line.strip())
        if not m:
            break
        counts[m.group(1)] = int(m.group(2))
    return counts


def planned_jobs(output: str) -> set[str]:
    """The benchmark job ids a dry run would run (from `wildcards: job=...`)."""
    return set(re.findall(r"wildcards: job=(\S+)", output))
