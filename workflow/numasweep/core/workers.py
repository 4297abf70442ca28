"""Independent parts of one step (analyse's analyses, the figures' drawers) run side by side in
forked worker processes on a large table, each part on the first worker free, their results in
the parts' order.

A part is a callable returning a list; it is inherited through the fork, never pickled (it holds
the whole table). The workers end with the process that forked them (Linux's parent-death
signal), a part's error reaches the caller as it was raised, Ctrl-C stops them at once, and
where the system refuses the forks the parts run in this process, with one line saying so.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

from numasweep.core.errors import NumasweepError

# From this many rows of aggregated results, a step runs its parts side by side (one worker per
# CPU it may use, at most one per part); below, the forks cost more than they save.
PARALLEL_ROWS = 200_000

_PARTS: list[Callable[[], list]] = []
_PARENT = 0        # the process that forks them


def _run_part(index: int) -> list:
    return _PARTS[index]()


def _worker_start() -> None:
    """A worker ends with the process that forked it: a killed step leaves no worker computing
    on, on a login node or a workstation."""
    import signal

    from numasweep.running.runjob import set_parent_death_signal

    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != _PARENT:      # the parent died before the signal was set
        os._exit(1)


def _stop(pool: Any) -> None:
    """A process pool's queued parts cancelled and its workers ended, without waiting for them."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()


def run(parts: list[Callable[[], list]], jobs: int, step: str) -> list:
    """The parts' results in order: in this process (jobs 1), or in up to `jobs` forked workers.
    `step` names the command in its messages (`numasweep <step>`, Snakemake's rule)."""
    global _PARTS, _PARENT
    if jobs <= 1 or len(parts) <= 1:
        return [r for part in parts for r in part()]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    _PARTS, _PARENT = parts, os.getpid()
    pool = ProcessPoolExecutor(min(jobs, len(parts)), mp_context=multiprocessing.get_context("fork"),
                               initializer=_worker_start)
    try:
        try:
            futures = [pool.submit(_run_part, i) for i in range(len(parts))]     # the forks
        except OSError as exc:      # no fork (a memory limit, a process limit): the same work here
            _stop(pool)
            print(f"numasweep: {step}: no worker processes ({exc.strerror or exc}); working in one process",
                  file=sys.stderr)
            return [r for part in parts for r in part()]
        try:
            found = [r for future in futures for r in future.result()]
        except BaseException:       # a part's error, Ctrl-C: the other parts are not waited for
            _stop(pool)
            raise
        pool.shutdown()
        return found
    except BrokenProcessPool:
        raise NumasweepError(f"{step}: a worker process died (killed, or out of memory); rerun it in one process: "
                             f"`--jobs 1` (under Snakemake: `--set-threads {step}=1`)") from None
    finally:
        _PARTS = []


def count(frames: dict[str, Any], jobs: int | None, min_rows: int = PARALLEL_ROWS) -> int:
    """Worker processes: none below `min_rows` rows in all, else `jobs` (None: one per CPU this
    process may use)."""
    if sum(len(f) for f in frames.values() if f is not None) < min_rows:
        return 1
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, jobs)
