"""`python -m numasweep store list`: per run its jobs, its kernel commit and the worst quality
verdict of its jobs, each line under 160 characters whatever the names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from numasweep.results import store
from numasweep.running import verdict


def write_run(folder: Path, verdicts: dict[str, str | None], commits: dict[str, str | None],
              hosts: list[str] | None = None, system: str = "model") -> Path:
    """A results folder as aggregation leaves it: one bandwidth row per job, with its provenance
    and, where given, its verdict (`quality`)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "topology.json").write_text(json.dumps({"system": system, "threads_per_core": 1, "distances": [[10]],
                                                      "nodes": [{"id": 0, "cpus": [0, 1], "memory_bytes": 1 << 30}]}))
    rows = []
    for i, job in enumerate(verdicts):
        host = (hosts or ["node1"])[i % len(hosts or ["node1"])]
        rows.append({"job_id": job, "kernel": "triad", "threads": 1, "host": host, "best_mb_s": 1000.0 + i,
                     "validation": "pass",
                     "command": f"numa_bandwidth {job}", "start": f"2026-01-01T00:00:{i:02d}Z",
                     "end": f"2026-01-01T00:01:{i:02d}Z", "kernel_commit": commits[job],
                     **({"quality": verdicts[job]} if any(verdicts.values()) else {})})
    pd.DataFrame(rows).to_csv(folder / "bandwidth.csv", index=False)
    return folder


def list_cli(db: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "numasweep", "store", "list", "--store", str(db)],
                          capture_output=True, text=True)


def test_store_list_shows_jobs_commit_and_worst_verdict(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    quiet, _ = store.record(write_run(tmp_path / "a", {"bw-1": "quiet", "bw-2": "quiet"},
                                      {"bw-1": "6de563cc4342", "bw-2": "6de563cc4342"}), db, "a")
    mixed, _ = store.record(write_run(tmp_path / "b", {"bw-1": "quiet", "bw-2": "disturbed", "bw-3": "noisy"},
                                      {"bw-1": "0123456789ab-dirty", "bw-2": "0123456789ab-dirty",
                                       "bw-3": "fedcba987654"}), db, "b")
    unknown, _ = store.record(write_run(tmp_path / "c", {"bw-1": None}, {"bw-1": None}), db, "c")
    proc = list_cli(db)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.split() == ["run", "campaign", "system", "started", "jobs", "commit", "verdict", "from", "hosts"]
    cells = [row.split("  ") for row in rows]
    cells = [[c.strip() for c in row if c.strip()] for row in cells]
    where = {name: store._tail_cell(str((tmp_path / name).resolve()), 20) for name in "abc"}
    assert cells == [
        [quiet.short, "a", "model", "2026-01-01T00:00:00Z", "2", "6de563c", "quiet", where["a"], "node1"],
        [mixed.short, "b", "model", "2026-01-01T00:00:00Z", "3", "0123456-dirty (+1)", "disturbed", where["b"], "node1"],
        [unknown.short, "c", "model", "2026-01-01T00:00:00Z", "1", "-", "-", where["c"], "node1"]]
    assert all(w.endswith(f"/{name}") for name, w in where.items()), where
    # each column starts where its header does
    for name in ("jobs", "commit", "verdict", "from", "hosts"):
        at = header.index(name)
        assert all(row[at] != " " and row[at - 1] == " " for row in rows), (name, rows)
    assert set(verdict.VERDICTS) >= {"quiet", "noisy", "disturbed"}


def test_store_list_lines_stay_under_160_characters(tmp_path: Path) -> None:
    """A campaign and a topology named with 100 characters each, a fleet of 500 hosts: every
    line under 160 characters, the hosts said by their number."""
    db = tmp_path / "store.sqlite"
    hosts = [f"nid{i:06d}" for i in range(500)]
    jobs = {f"bw-{i}": "noisy" for i in range(500)}
    run, _ = store.record(write_run(tmp_path / "f", jobs, dict.fromkeys(jobs, "abcdef0123456789abcdef0123456789abcdef01"),
                                    hosts, system="s" * 100), db, "c" * 100)
    proc = list_cli(db)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(len(line) < 160 for line in lines), [len(line) for line in lines]
    row = lines[1]
    assert row.startswith(run.short) and " 500 " in row and " abcdef0 " in row and " noisy " in row
    assert row.endswith("(500 hosts)") and "nid000000," in row and "ccc..." in row and "sss..." in row


def test_store_list_of_an_empty_store_is_its_header(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    store.connect(db).close()
    proc = list_cli(db)
    assert proc.returncode == 0 and proc.stdout.split() == [
        "run", "campaign", "system", "started", "jobs", "commit", "verdict", "from", "hosts"], proc.stdout


def test_short_commit() -> None:
    assert store.short_commit("6de563cc4342-dirty") == "6de563c-dirty"
    assert store.short_commit("6de563cc4342") == "6de563c"
    assert store.short_commit("unknown") == "unknown"
