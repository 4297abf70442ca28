"""numasweep.core.workers: the parts of a step (analyse, figures) in forked worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from numasweep.core import workers
from numasweep.core.errors import NumasweepError


def test_parts_run_in_worker_processes_in_order() -> None:
    """Each part in a forked worker (not this process), the findings in the parts' order."""
    parts = [lambda i=i: [(i, os.getpid())] for i in range(5)]
    found = workers.run(parts, jobs=2, step="analyse")
    assert [i for i, _ in found] == list(range(5))
    assert os.getpid() not in {pid for _, pid in found}
    assert workers.run(parts, jobs=1, step="analyse") == [(i, os.getpid()) for i in range(5)]


def test_a_worker_error_or_death_is_one_line() -> None:
    def fails() -> list:
        raise NumasweepError("latency.csv: a row says no; rerun its job")

    with pytest.raises(NumasweepError, match="^latency.csv: a row says no; rerun its job$"):
        workers.run([list, fails], jobs=2, step="analyse")
    with pytest.raises(NumasweepError, match="worker process died .*`--jobs 1`"):
        workers.run([list, lambda: os._exit(9)], jobs=2, step="analyse")


def test_no_fork_means_one_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """Where the system refuses the forks (a process or memory limit), the parts run here, with
    one line saying so."""
    def refused() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    assert workers.run([lambda i=i: [(i, os.getpid())] for i in range(3)], jobs=2, step="analyse") == \
        [(i, os.getpid()) for i in range(3)]
    assert capsys.readouterr().err == ("numasweep: analyse: no worker processes (Resource temporarily "
                                       "unavailable); working in one process\n")


def _children() -> list[int]:
    """This process's children that are still running (not zombies)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == os.getpid() and fields[0] not in ("Z", "X"):
            out.append(int(stat.parent.name))
    return out


def test_a_fork_refused_after_one_worker_leaves_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first worker forked, the second refused: the parts run here and the first worker ends."""
    fork, forks = os.fork, []

    def second_refused() -> int:
        forks.append(1)
        if len(forks) > 1:
            raise OSError(11, "Resource temporarily unavailable")
        return fork()

    before = set(_children())      # a test session may hold other children (a guest, daemons)
    monkeypatch.setattr(os, "fork", second_refused)
    assert workers.run([lambda i=i: [i] for i in range(3)], jobs=2, step="analyse") == [0, 1, 2]
    assert len(forks) == 2
    deadline = time.monotonic() + 10
    while set(_children()) - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(_children()) - before == set()


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def _sleeping_workers(folder: Path, **popen) -> tuple[subprocess.Popen, list[int]]:
    """A process running six parts that sleep a minute in 2 workers (each writes its pid to
    `folder` first), started and waited for until both workers sleep."""
    script = f"""
import os, sys, time
from numasweep.core import workers

def part(i):
    def run():
        open(os.path.join({str(folder)!r}, f"w{{i}}"), "w").write(str(os.getpid()))
        time.sleep(60)
        return []
    return run

try:
    workers.run([part(i) for i in range(6)], jobs=2, step="analyse")
except KeyboardInterrupt:
    sys.exit(130)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], **popen)
    deadline = time.monotonic() + 60
    while sum(1 for w in folder.glob("w*") if w.read_text()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    return proc, [int(w.read_text()) for w in folder.glob("w*")]


def _left(pids: list[int]) -> list[int]:
    """The pids still running after up to 10 s, killed (a failed test leaves none behind)."""
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in pids if not _gone(pid)]
    for pid in left:
        os.kill(pid, 9)
    return left


def test_killing_analyse_ends_its_workers(tmp_path: Path) -> None:
    """kill -9 of the process that forked the workers ends them too: none computes on."""
    proc, pids = _sleeping_workers(tmp_path)
    proc.kill()
    proc.wait()
    assert len(pids) == 2 and not _left(pids), pids


def test_ctrl_c_ends_the_workers_at_once(tmp_path: Path) -> None:
    """SIGINT to the process group (Ctrl-C): the parts still queued are not waited for, the
    workers end, the process exits."""
    proc, pids = _sleeping_workers(tmp_path, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.killpg(proc.pid, signal.SIGINT)
    try:
        assert proc.wait(timeout=10) == 130
    finally:
        proc.kill()
    assert len(pids) == 2 and not _left(pids), pids


def test_workers_only_for_a_large_table() -> None:
    frames = {"latency": pd.DataFrame({"x": range(10)}), "bandwidth": None}
    assert workers.count(frames, 4, min_rows=11) == 1
    assert workers.count(frames, 4, min_rows=10) == 4
    assert workers.count(frames, None, min_rows=10) == len(os.sched_getaffinity(0))
