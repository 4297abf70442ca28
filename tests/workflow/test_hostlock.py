"""One measurement at a time per machine, across workflows (numasweep.running.hostlock): run-job
of two campaigns at once, a lock left by a killed job, a wait past the limit; and two snakemake
campaigns started a few seconds apart. Each test has a private host lock folder
(NUMASWEEP_HOST_LOCK_DIR, tests/conftest.py); the launch lines are real commands."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.workflow import TEST_CONFIGS, copy_repo, snakemake_env
from numasweep.running import hostlock

TOPO = Path(__file__).resolve().parents[2] / "examples" / "lumi-g" / "topology.json"
# A kernel stand-in: records when it started and ended measuring, in the CSV run-job expects.
MEASURE = ('s=$(date +%s.%N); sleep 1.5; e=$(date +%s.%N); '
           'printf "start,end\\n%s,%s\\n" "$s" "$e" > "${0#--csv=}"')


def _env() -> dict[str, str]:
    env = snakemake_env()
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "workflow")
    return env


def _runjob(results: Path, script: str, *extra: str, job: str = "j1") -> list[str]:
    csv = results / "bench" / f"{job}.csv"
    launch = shlex.join(["bash", "-c", script, f"--csv={csv}.partial"])
    return [sys.executable, "-m", "numasweep", "run-job", "--job-id", job, "--launch", launch,
            "--grid", '{"repetition": 0}', "--kernel", "/bin/true", "--topology", str(TOPO),
            "--csv", str(csv), "--provenance", str(csv.with_suffix(".json")),
            "--log", str(csv.with_suffix(".log")), *extra]


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _overlaps(periods: list[tuple[float, float]]) -> list[tuple]:
    periods = sorted(periods)
    return [(a, b) for a, b in zip(periods, periods[1:]) if b[0] < a[1]]


def test_jobs_of_two_campaigns_started_at_once_never_measure_together(tmp_path: Path) -> None:
    procs = [subprocess.Popen(_runjob(tmp_path / name, MEASURE), env=_env(), stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    errs = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    periods, waits = [], []
    for name in ("a", "b"):
        lines = (tmp_path / name / "bench" / "j1.csv").read_text().splitlines()
        periods.append(tuple(float(x) for x in lines[1].split(",")))
        waits.append(json.loads((tmp_path / name / "bench" / "j1.json").read_text())["host_lock_wait_s"])
    assert _overlaps(periods) == [], periods
    # The second waited about one measurement, said so in one line naming the first by PID.
    first, second = (0, 1) if periods[0] < periods[1] else (1, 0)
    assert waits[first] < 1.0 and waits[second] >= 1.0, waits
    said = [ln for ln in errs[second].splitlines() if "waits for the machine" in ln]
    assert len(said) == 1 and f"PID {procs[first].pid}" in said[0]
    assert f"of system {'ab'[first]}" in said[0], said
    assert (hostlock.lock_dir() / hostlock.NAME).read_text() == "", "a released lock names no holder"


def test_a_lock_left_by_a_dead_job_is_taken_over_with_a_warning(tmp_path: Path) -> None:
    dead = _dead_pid()
    lock = hostlock.lock_dir() / hostlock.NAME
    lock.write_text(f"pid={dead}\njob=latency-7\nsystem=other\nresults=/x/results/other\nstart=2026-01-01T00:00:00Z\n")
    proc = subprocess.run(_runjob(tmp_path, MEASURE, "--host-lock-wait", "0"), env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    warned = [ln for ln in proc.stderr.splitlines() if "warning" in ln]
    assert len(warned) == 1 and f"PID {dead}" in warned[0] and "takes it over" in warned[0], proc.stderr
    assert (tmp_path / "bench" / "j1.csv").exists()


def test_a_wait_past_the_limit_refuses_in_one_line_naming_the_holder(tmp_path: Path) -> None:
    held = hostlock.HostLock("copy-3", system="other", results="/x/results/other")
    assert held.acquire(0)
    try:
        proc = subprocess.run(_runjob(tmp_path, MEASURE, "--host-lock-wait", "0"), env=_env(),
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert f"PID {os.getpid()}, job copy-3 of system other" in lines[0], lines[0]
        assert hostlock.ENV_WAIT in lines[0]
        # With a wait, one line says on whom it waits, then the refusal; from the environment.
        env = _env() | {hostlock.ENV_WAIT: "0.5"}
        began = time.monotonic()
        proc = subprocess.run(_runjob(tmp_path, MEASURE), env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and time.monotonic() - began >= 0.5
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 2 and "waits for the machine" in lines[0] and "gave up after 0.5 s" in lines[1]
        assert not (tmp_path / "bench" / "j1.csv.partial").exists() and not (tmp_path / "bench" / "j1.csv").exists()
    finally:
        held.release()


@pytest.mark.parametrize("text,says", [("an hour", "not a number of seconds"), ("nan", "not a number of seconds"),
                                       ("-1", "a wait must be at least 0 seconds; set it to 0 (do not wait)")],
                         ids=["words", "nan", "below 0"])
def test_the_wait_in_the_environment_must_be_seconds(monkeypatch: pytest.MonkeyPatch, text: str, says: str) -> None:
    monkeypatch.setenv(hostlock.ENV_WAIT, text)
    with pytest.raises(hostlock.NumasweepError, match="^" + re.escape(f"{hostlock.ENV_WAIT}={text!r}: {says}")):
        hostlock.wait_default()
    monkeypatch.setenv(hostlock.ENV_WAIT, "0")
    assert hostlock.wait_default() == 0


def _iso(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.mark.slow
@pytest.mark.workflow
def test_two_campaigns_started_seconds_apart_never_measure_together(repo: Path, tmp_path: Path) -> None:
    runs = []
    for name in ("campaign-a", "campaign-b"):
        work = copy_repo(repo, tmp_path / name / "numasweep")
        argv = [sys.executable, "-m", "snakemake", "sweep", "--profile", "profiles/local",
                "--configfile", str(TEST_CONFIGS / "tiny.yaml"), "--config", f"system={name}"]
        out = open(tmp_path / f"{name}.out", "w")
        runs.append((name, work, subprocess.Popen(argv, cwd=work, env=snakemake_env(), stdout=out,
                                                  stderr=subprocess.STDOUT)))
        time.sleep(3)
    try:
        for name, _, proc in runs:
            assert proc.wait(timeout=900) == 0, (tmp_path / f"{name}.out").read_text()[-4000:]
    finally:
        for _, _, proc in runs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    periods = []
    for name, work, _ in runs:
        records = [json.loads(p.read_text()) for p in (work / "results" / name).glob("*/*.json")
                   if p.parent.name != "archive"]
        records = [r for r in records if "host_lock_wait_s" in r]
        assert records, f"no provenance records under {work / 'results' / name}"
        periods += [(_iso(r["start"]), _iso(r["end"]), name, r["job_id"]) for r in records]
    assert {p[2] for p in periods} == {"campaign-a", "campaign-b"}
    assert _overlaps(periods) == [], periods


def test_the_lock_folder_falls_back_to_the_first_usable_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hostlock.ENV_DIR)
    (tmp_path / "a-file").write_text("")
    # A folder that cannot be made (under a file, under a missing folder), then one that can.
    places = [tmp_path / "a-file" / "numasweep", tmp_path / "missing" / "numasweep", tmp_path / "numasweep"]
    monkeypatch.setattr(hostlock, "_candidates", lambda: places)
    assert hostlock.lock_dir() == places[2]
    assert places[2].stat().st_mode & 0o1777 == 0o1777, "every user's campaign meets in it"
