"""`python -m numasweep run-job`: run one benchmark job from start to provenance.

    python -m numasweep run-job --job-id ID --launch "LINE" --grid JSON --kernel K \
        --topology results/x/topology.json --csv results/x/latency/ID.csv \
        --provenance results/x/latency/ID.json --log results/x/latency/ID.log

What it guarantees (the rule's whole shell is this one command):

- Only a kernel this CPU can run: one compiled for an instruction set this CPU's /proc/cpuinfo
  flags lack (e.g. built with -march=native on a newer login node) is refused in one line naming
  the sets and both CPUs, before anything runs (isa.py reads them from the binary). A kernel that
  still dies of SIGILL (a library it links) is explained after the fact.
- One run of a job at a time: a lock file (`.<id>.lock` next to the CSV, holding the PID) is
  held for the runner's whole life. A second run of the same job, e.g. `--rerun-incomplete`
  right after a killed snakemake while the old job is still ending, waits up to `--lock-wait`
  seconds, then refuses in one line naming the PID that holds the lock.
- One measurement at a time per machine, across workflows: while the launch line runs the job
  holds the host lock (hostlock.py, `/run/lock/numasweep/host.lock`); a job of another campaign
  waits for it up to `--host-lock-wait` seconds, then refuses in one line naming the holder. The
  time waited is the provenance record's `host_lock_wait_s`.
- No orphans: the launch line runs in its own process group (session). The runner ends that
  group on SIGINT, SIGTERM or SIGHUP (SIGTERM, then SIGKILL after a grace period), and asks
  the kernel to be told of its own death (parent death signal): when snakemake is killed
  with -9 the runner gets SIGTERM and takes mpirun and the kernels with it.
- Nothing half-done is published: the kernel writes `<id>.csv.partial`; only when it exited 0
  and the table has a header and rows is it archived and renamed to `<id>.csv`.
- Archive by copy: CSV, provenance record and log are copied (read-only) to
  `archive/<id>.<finish time>.{csv,json,log}` before the result is published, so no later edit,
  failed rerun or deletion reaches an archived result. A disk that fills while publishing leaves
  nothing of the run published (its archive copies are removed, the earlier result stays) and is
  one line naming the folder.
- One progress line per finished job on stderr (Snakemake's console, beside its "n of m steps
  done"): the job, its kernel, how long it measured, how many rows it wrote, its quality verdict
  (verdict.py) and the kernel's warnings summarised. The kernel's own progress, a line per
  finished size or step, goes to the job's log (`tail -f` it); the log is opened before the job
  waits for the host lock and says on whom it waits.
- A disturbed job is measured again after a back-off (`--retry-backoff` seconds times the tries
  so far), up to `--retry-disturbed` more tries (config retry_disturbed); each try is published
  and archived, the last one stands, and its provenance `quality.tries` says how many ran.
- Runs until the interval answers (config repeat_until, `--repeat-until` and `--max-repeats`):
  within one try and one hold of the host lock, the kernel runs again while the widest 95%
  interval of the point's values over its runs is wider than the target (statistics.repeat), up
  to `--max-repeats` more runs. The runs are one result, each row with its run's number in a
  `repetition` column, which stands for the grid's: the sweep's repetition r numbers its runs
  r * (max_repeats + 1) + k, k = 0 for the first, so no two runs of a point share a number. The
  log says why each run was added; the provenance's `repeat_until` and the console line say how
  many ran and how wide the widest interval ended. A run measured while disturbed (verdict) ends
  its try's runs: the try is disturbed whatever follows, and its retry measures again.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import datetime as dt
import json
import math
import os
import shlex
import shutil
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from numasweep.core.errors import DISK_FULL_ERRNOS, DiskFullError, NumasweepError, disk_full
from numasweep.core.io import atomic_write_text
from numasweep.core.units import count_words, ranged
from numasweep.core import isa, registry, system_state, topology
from numasweep.planning.batch import write_manifest
from numasweep.planning.launch import PARTIAL
from numasweep.running import hostlock, provenance, verdict

PR_SET_PDEATHSIG = 1
# Seconds between SIGTERM and SIGKILL to the job's process group.
GRACE_S = 3.0
# Commands a launch line may start with, and the Debian package that provides each.
LAUNCHER_PACKAGES = {
    "mpirun": "openmpi-bin (apt-get install openmpi-bin)",
    "srun": "slurm-client (apt-get install slurm-client), or run with launcher=mpirun",
    "numactl": "numactl (apt-get install numactl)",
    "env": "coreutils",
}
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Tries a disturbed job gets beyond its first (config retry_disturbed), and the back-off before
# try n+1: n times this many seconds.
DEFAULT_RETRY_DISTURBED = 2
DEFAULT_RETRY_BACKOFF_S = 10.0
# The column that numbers the runs of a job measured more than once (repeat_until).
REPETITION = "repetition"


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def set_parent_death_signal(sig: int) -> None:
    """Linux prctl(PR_SET_PDEATHSIG): `sig` arrives when the parent thread ends."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _child_setup() -> None:
    # Runs in the forked child before exec: a session of its own (its process group is the
    # job's), and SIGKILL if the runner dies without having ended it.
    os.setsid()
    set_parent_death_signal(signal.SIGKILL)


ENV_LOCK_WAIT = "NUMASWEEP_LOCK_WAIT"
DEFAULT_LOCK_WAIT_S = 120.0


class JobLock:
    """An flock on a lock file that holds its holder's PID, held for the holder's life: a job's
    `.<id>.lock` next to its CSV, or a report folder's (common.smk) while snakemake renders it."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def acquire(self, wait_s: float | None, name: str) -> None:
        """Take the lock, waiting up to `wait_s` seconds (default $NUMASWEEP_LOCK_WAIT or 120);
        `name` (e.g. "job latency-3") is what the lock is for in the lines it prints."""
        wait_s = lock_wait() if wait_s is None else wait_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait_s
        said = False
        while True:
            if hostlock.try_flock(fd):
                break
            if time.monotonic() >= deadline:
                os.close(fd)
                raise NumasweepError(
                    f"{name} is still held by PID {self.holder()} (lock {self.path}); "
                    f"wait for it to end or stop it with `kill -TERM {self.holder()}`, then rerun"
                )
            if not said:
                print(f"numasweep: {name} is held by PID {self.holder()} ({self.path}); "
                      f"waiting up to {wait_s:g} s for it to end ({ENV_LOCK_WAIT})", file=sys.stderr, flush=True)
                said = True
            time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        if said:
            print(f"numasweep: {name}: PID {os.getpid()} has the lock now", file=sys.stderr, flush=True)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Runner:
    def __init__(self, args: argparse.Namespace, widest_for: Callable | None = None):
        """`widest_for(kernel, facts)` gives repeat_until's measure of a job's runs (statistics.repeat):
        (the widest relative half-width of a value's 95% interval over them, that value)."""
        self.args = args
        self.widest_for = widest_for
        self.repeated: dict = {}
        self.tries_allowed = 1
        self.csv: Path = args.csv
        self.partial = Path(f"{args.csv}{PARTIAL}")
        facts = getattr(args, "bench_facts", None)
        self.checks = registry.checks_of_facts(facts) if facts else verdict.checks_of(args.csv)
        self.proc: subprocess.Popen | None = None
        self.stopped_by: int | None = None
        self.lock: JobLock | None = None
        self.host_lock: hostlock.HostLock | None = None
        self.quality: dict = {}
        self.tiering: dict = {}

    # ------------------------------------------------------------------ signals
    def on_signal(self, signum: int, frame) -> None:
        self.stopped_by = signum
        self.end_group(signal.SIGTERM)

    def end_group(self, sig: int) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def reap_group(self) -> None:
        """SIGTERM to the job's process group, SIGKILL to what is left after the grace period."""
        if self.proc is None:
            return
        self.end_group(signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline and _group_alive(self.proc.pid):
            time.sleep(0.05)
        self.end_group(signal.SIGKILL)

    # ------------------------------------------------------------------ the run
    def launch(self, argv: list[str], log) -> int:
        try:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         preexec_fn=_child_setup)
        except FileNotFoundError:
            raise NumasweepError(missing_program(argv)) from None
        except PermissionError:
            raise NumasweepError(f"{argv[0]}: not executable; run `make -C kernels` or chmod +x it") from None
        if self.stopped_by:
            # A stop signal that came while the group was being started found no group to end.
            self.end_group(signal.SIGTERM)
        while True:
            try:
                rc = self.proc.wait()
                break
            except InterruptedError:
                continue
        # Whatever the launch line left behind (a backgrounded rank, a stuck mpirun child).
        self.reap_group() if self.stopped_by else self.end_group(signal.SIGKILL)
        return rc

    def run(self) -> int:
        a = self.args
        try:
            grid = json.loads(a.grid)
        except json.JSONDecodeError as exc:
            raise NumasweepError(f"--grid is not JSON ({exc}); pass the job's grid values as a JSON object") from None
        argv = shlex.split(a.launch)
        if not argv:
            raise NumasweepError("--launch is empty; pass the job's launch line")
        set_parent_death_signal(signal.SIGTERM)
        for sig in STOP_SIGNALS:
            signal.signal(sig, self.on_signal)
        if os.getppid() == 1:
            raise NumasweepError("the process that started this job is gone; nothing was run")
        self.lock = JobLock(self.csv.parent / f".{a.job_id}.lock")
        self.lock.acquire(a.lock_wait, f"job {a.job_id}")
        if self.stopped_by:
            return 128 + self.stopped_by
        tries_allowed = self.tries_allowed = 1 + max(0, getattr(a, "retry_disturbed", DEFAULT_RETRY_DISTURBED))
        for tries in range(1, tries_allowed + 1):
            rc = self.measure(argv, grid, tries)
            if rc is not None:
                return rc
            if self.quality["verdict"] != "disturbed" or tries == tries_allowed:
                return 0
            # Disturbed with tries left: this try is published and archived; after a back-off the
            # job is measured again, and the last try's result and verdict stand.
            backoff = getattr(a, "retry_backoff", DEFAULT_RETRY_BACKOFF_S) * tries
            print(f"numasweep: {a.job_id}: measuring again in {backoff:g} s (try {tries + 1} of {tries_allowed}, "
                  f"retry_disturbed)", file=sys.stderr, flush=True)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            deadline = time.monotonic() + backoff
            while time.monotonic() < deadline and not self.stopped_by:
                time.sleep(0.1)
            if self.stopped_by:
                return 128 + self.stopped_by
        return 0

    def measure(self, argv: list[str], grid: dict, tries: int) -> int | None:
        """One try: the launch line under the host lock, then the result published with its
        quality verdict (self.quality); None when published, else the exit status."""
        a = self.args
        # A partial table of an earlier, interrupted run is never continued.
        self.partial.unlink(missing_ok=True)
        a.log.parent.mkdir(parents=True, exist_ok=True)
        results = self.csv.parent.parent.resolve()
        self.host_lock = hostlock.HostLock(a.job_id, system=results.name, results=str(results))
        # The log is the job's from here: it says whom the job waits for, then what the kernel
        # prints, so a `tail -f` started while the job waits follows it to the end.
        with open(a.log, "w") as log:
            if not self.host_lock.acquire(getattr(a, "host_lock_wait", None), stopped=lambda: bool(self.stopped_by),
                                          log=log):
                return 128 + (self.stopped_by or signal.SIGTERM)
            try:
                # Tiering as the job found it, and what differs when it ends (no kernel of ours
                # leaves one changed: the weights it writes are written back before it exits).
                tiering = system_state.tiering()
                start, began = now_iso(), time.monotonic()
                rc = self.launch_until(argv, grid, log)
                # The end of the measuring, inside the host lock: no other job's start comes before it.
                end = now_iso()
                load_after = verdict.load_average()
                self.tiering = {"tiering_before": system_state.tiering_words(tiering),
                                "tiering_changed": system_state.tiering_changes(tiering, system_state.tiering())}
            finally:
                self.host_lock.release()
        if self.stopped_by:
            name = signal.Signals(self.stopped_by).name
            print(f"numasweep: job {a.job_id} stopped by {name}; its process group was ended, "
                  f"no result was written", file=sys.stderr)
            self.partial.unlink(missing_ok=True)
            return 128 + self.stopped_by
        if rc != 0:
            text = Path(a.log).read_text(errors="replace")
            for line in text.splitlines()[-5:]:
                print(line, file=sys.stderr)
            if rc in (-signal.SIGILL, 128 + signal.SIGILL) or "Illegal instruction" in text:
                print(f"numasweep: job {a.job_id}: the kernel met an instruction this CPU lacks: it was "
                      f"built for another CPU (build.kernel_cflags, by default -march=native on the "
                      f"build host); build where it runs, or set build.kernel_cflags to flags every "
                      f"node has (e.g. '-O3 -march=x86-64-v3')", file=sys.stderr)
            if rc < 0:
                print(f"numasweep: job {a.job_id}: the launch line died of signal "
                      f"{signal.Signals(-rc).name}; see {a.log}", file=sys.stderr)
                return 128 - rc
            return rc
        check_table(self.partial, a.log)
        # From here the result is finished: a stop signal waits until it is published.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        rows = verdict.read_rows(self.partial)
        self.quality = verdict.record(*verdict.decide(rows, load_after, os.cpu_count() or 1, self.checks), tries)
        publish(a, grid, self.partial, start, end, host_lock_wait_s=self.host_lock.waited_s, quality=self.quality,
                repeated=self.repeated, tiering=self.tiering)
        print(progress_line(a.job_id, time.monotonic() - began)
              + repeat_note(self.repeated)
              + quality_note(self.quality, kernel_warnings(Path(a.log)), self.tries_allowed, bool(self.repeated)
                             and not repeat_met(self.repeated)),
              file=sys.stderr, flush=True)
        return None

    def launch_until(self, argv: list[str], grid: dict, log) -> int:
        """The launch line, run again while repeat_until asks (`--repeat-until`, `--max-repeats`);
        the runs' rows end in the partial table as one, numbered (self.repeated says how many and
        how wide). The exit status of the last run."""
        a = self.args
        target, cap = getattr(a, "repeat_until", None), getattr(a, "max_repeats", 0)
        self.repeated = {}
        if not target or not cap:
            return self.launch(argv, log)
        if self.widest_for is None:
            raise NumasweepError("--repeat-until needs the intervals of statistics.repeat; run it as "
                                 "`python -m numasweep run-job`")
        widest = self.widest_for(Path(a.kernel), getattr(a, "bench_facts", None))
        runs: list[list[dict[str, str]]] = []
        while True:
            rc = self.launch(argv, log)
            if rc != 0 or self.stopped_by:
                return rc
            check_table(self.partial, a.log)
            runs.append(verdict.read_rows(self.partial))
            width, where = widest(runs)
            if width <= target or len(runs) > cap:
                break
            if verdict.decide(runs[-1], None, os.cpu_count() or 1, self.checks)[0] == "disturbed":
                # this try is disturbed whatever follows: its retry measures again, so more runs
                # of it would only lengthen the wait
                print("numasweep: repeat_until: no more runs of this try: the last was measured while disturbed",
                      file=log, flush=True)
                break
            print(f"numasweep: repeat_until: run {len(runs) + 1} of at most {cap + 1}: the widest 95% interval "
                  f"is {half_width_words(width)} ({where}), the target ±{target:.1%}", file=log, flush=True)
        first = int(grid.get(REPETITION, 0)) * (cap + 1)
        write_rows([{**row, REPETITION: str(first + k)} for k, run in enumerate(runs) for row in run], self.partial)
        self.repeated = {"target": target, "max_repeats": cap, "runs": len(runs),
                         "widest_half_width": width if math.isfinite(width) else None, "widest": where}
        return 0


def half_width_words(width: float | None) -> str:
    """A relative half-width as the log and the console say it: "±1.2%", or "unknown" (one run, or
    a value not measured in two)."""
    return f"±{width:.1%}" if width is not None and math.isfinite(width) else "unknown"


def repeat_met(repeated: dict) -> bool:
    width = repeated.get("widest_half_width")
    return width is not None and math.isfinite(width) and width <= repeated["target"]


# A half-width past this says nothing a reader can use ("±10622303.9%" of two runs): too few runs.
MEANINGFUL_HALF_WIDTH = 1.0


def repeat_note(repeated: dict) -> str:
    """What the progress line says of repeat_until: the runs and how wide the widest interval
    ended, against the target; "target missed" where it was, and "too few runs" where the
    interval is unknown or wider than ±100%."""
    if not repeated:
        return ""
    runs, width, target = count_words(repeated["runs"], "run"), repeated["widest_half_width"], repeated["target"]
    if repeat_met(repeated):
        return f"; {runs}, widest 95% interval {half_width_words(width)} (repeat_until ±{target:.1%})"
    if width is None or not math.isfinite(width) or width > MEANINGFUL_HALF_WIDTH:
        return f"; {runs}, too few for an interval: target ±{target:.1%} missed"
    return f"; {runs}, target ±{target:.1%} missed (widest 95% interval {half_width_words(width)})"


def write_rows(rows: list[dict[str, str]], path: Path) -> None:
    """Rows as a CSV table, their columns in the order they first come."""
    with open(path, "w", newline="") as fh:
        out = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(c for row in rows for c in row)))
        out.writeheader()
        out.writerows(rows)


def quality_note(quality: dict, warnings: list[str], tries_allowed: int = 1, missed: bool = False) -> str:
    """What the progress line adds: the verdict with its first reason ("quiet" only where
    repeat_until's target, if any, was met: `missed` says it was not, which the line says
    already), the try and, on a disturbed job's last, what becomes of it; how many warnings the
    kernel wrote in the log."""
    # its first reason, without the parentheses that detail it (the provenance record keeps them)
    verdict = quality["verdict"]
    reason = re.sub(r" \([^()]*\)", "", str(quality.get("reason") or "").split("; ")[0])
    note = "" if verdict == "quiet" and missed else f"; {verdict}" + (f": {reason}" if verdict != "quiet" else "")
    if verdict == "disturbed" and quality["tries"] >= tries_allowed:
        note += (f" (try {quality['tries']} of {tries_allowed}, last: the report lists it disturbed)"
                 if tries_allowed > 1 else " (the report lists it disturbed)")
    elif quality["tries"] > 1:
        note += f" (try {quality['tries']} of {tries_allowed})"
    if warnings:
        note += f"; {len(warnings)} warning{'s' if len(warnings) != 1 else ''}"    # the kernel's, in its log
    return note


def kernel_warnings(log: Path) -> list[str]:
    """The kernel's `warning:` lines in the job's log, each once, without the program's name."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    return list(dict.fromkeys(ln.split("warning: ", 1)[1].strip() for ln in text.splitlines() if "warning: " in ln))


def progress_line(job_id: str, seconds: float) -> str:
    """The start of the one short line a finished job prints beside Snakemake's "n of m steps
    done": the job and how long it took; its table is results/<system>/<bench>/<job>.csv, its
    kernel, rows and the rest in its log."""
    took = f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
    return f"numasweep: {job_id} measured in {took}"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def missing_program(argv: list[str]) -> str:
    # `env K=V prog ...`: the program env could not find is the first non-assignment.
    prog = argv[0]
    if prog == "env":
        prog = next((w for w in argv[1:] if "=" not in w), prog)
    name = Path(prog).name
    if name in LAUNCHER_PACKAGES:
        return f"{name}: command not found; install {LAUNCHER_PACKAGES[name]}"
    return f"{prog}: no such program; run `make -C kernels` (kernels) or check the config's wrapper and launcher"


def table_rows(path: Path) -> int:
    """The rows of a CSV under its header (blank lines aside)."""
    return max(0, len([ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]) - 1)


def check_table(partial: Path, log: Path) -> None:
    """The kernel said it succeeded: its table must exist and have a header and rows."""
    if not partial.exists():
        raise NumasweepError(f"{partial}: the kernel exited 0 without writing its CSV; see {log}")
    if table_rows(partial) < 1:
        raise NumasweepError(f"{partial}: the kernel's CSV has no rows; see {log} and rerun the job")


# What numa_* kernels print (kernels/common/policy.c) when they find weights that a run killed
# with SIGKILL left changed: written back, or not.
KILLED_RUN_WEIGHTS = "left changed by killed run PID"
KILLED_RUN_UNRESTORED = "left by killed run PID"


def weights_restored(log: Path) -> str | None:
    """The kernel's own line(s) about weights of a killed run, for the provenance's system
    record and so the report's data-quality notes; None when the job met none."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    lines = [ln.split("warning: ", 1)[-1].strip() for ln in text.splitlines()
             if KILLED_RUN_WEIGHTS in ln or KILLED_RUN_UNRESTORED in ln]
    return "; ".join(lines) or None


# What a kernel prints when the kernel refused to take back a setting it changed (a weight, or
# the automatic-weights mode), with the command that sets it back.
LEFT_CHANGED = ("the machine is left", "could not restore")


def settings_left_changed(log: Path) -> str | None:
    """The kernel's line(s) about settings it could not restore, each with the command to run;
    None when everything was restored."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    lines = [ln.split("warning: ", 1)[-1].strip() for ln in text.splitlines()
             if any(marker in ln for marker in LEFT_CHANGED)]
    return "; ".join(dict.fromkeys(lines)) or None


def _archive_copy(src: Path, dest: Path) -> None:
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o444)
    os.replace(tmp, dest)


def publish(a: argparse.Namespace, grid: dict, partial: Path, start: str, end: str | None = None,
            host_lock_wait_s: float | None = None, quality: dict | None = None, repeated: dict | None = None,
            tiering: dict | None = None) -> None:
    """Provenance, archive copies, then the result under its final name (rename last); `tiering`
    the settings the job found and those it ended with changed (SystemState's tiering fields)."""
    end = end or now_iso()
    rec = provenance.record(a.job_id, start, a.launch, grid, a.kernel, a.topology, partial, end=end,
                            csv_name=a.csv, host_lock_wait_s=host_lock_wait_s, quality=quality)
    if repeated:
        rec["repeat_until"] = repeated
    ran_after = provenance.setups(getattr(a, "setup", None) or [], a.launch)
    if ran_after:
        rec["setup"] = ran_after
    rec.setdefault("system", {}).update({k: v for k, v in (tiering or {}).items() if v})
    restored = weights_restored(Path(a.log))
    if restored:
        rec.setdefault("system", {})["weights_restored"] = restored
    left = settings_left_changed(Path(a.log))
    if left:
        rec.setdefault("system", {})["settings_left_changed"] = left
    text = json.dumps(rec, indent=2) + "\n"
    archive = a.csv.parent / "archive"
    archive.mkdir(parents=True, exist_ok=True)
    stamp = end.replace("-", "").replace(":", "").replace(".", "")
    base = archive / f"{a.job_id}.{stamp}"
    try:
        _archive_copy(partial, Path(f"{base}.csv"))
        atomic_write_text(f"{base}.json", text)
        os.chmod(f"{base}.json", 0o444)
        _archive_copy(a.log, Path(f"{base}.log"))
        atomic_write_text(a.provenance, text)
    except (OSError, NumasweepError) as exc:
        # Nothing of this run is published: its archive copies go; the result it would replace,
        # and the archive of earlier runs, stay as they were.
        for copy in archive.glob(f"*{a.job_id}.{stamp}.*"):
            copy.unlink(missing_ok=True)
        if isinstance(exc, DiskFullError) or getattr(exc, "errno", None) in DISK_FULL_ERRNOS:
            raise disk_full(a.csv.parent, f"job {a.job_id}'s new result was not published (its table stays in "
                                          f"{partial} until the job runs again; earlier results are kept)") from None
        raise
    os.replace(partial, a.csv)


def end_runners(parent: int) -> list[int]:
    """SIGTERM to every `numasweep run-job` or `run-batch` process whose parent is `parent` (snakemake's
    handler for SIGINT/SIGTERM); each ends its own job's process group. psutil lists them: Snakemake,
    whose process calls this, needs it itself; it is imported here so that the runner, which may
    run on another python, keeps to the standard library."""
    import psutil

    ended = []
    try:
        children = psutil.Process(parent).children()
    except psutil.NoSuchProcess:
        return ended
    for child in children:
        try:
            cmd = child.cmdline()
            if "numasweep" in cmd and ("run-job" in cmd or "run-batch" in cmd):
                child.terminate()
                ended.append(child.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return ended


def check_launch(args: argparse.Namespace) -> None:
    if f"--csv={args.csv}{PARTIAL}" not in shlex.split(args.launch):
        raise NumasweepError(f"--launch must write --csv={args.csv}{PARTIAL}; pass the line the plan built")


def lock_wait() -> float:
    """Seconds a `JobLock` waits for its holder: $NUMASWEEP_LOCK_WAIT (at least 0), default 120."""
    return hostlock.env_seconds(ENV_LOCK_WAIT, DEFAULT_LOCK_WAIT_S)


def bench_facts(text: str) -> dict:
    """--bench-facts' JSON (core.registry.runner_facts), its keys checked."""
    try:
        facts = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg} at character {exc.pos})") from None
    missing = [k for k in ("on_cpu", "spread", "metrics", "rows") if not isinstance(facts, dict) or k not in facts]
    if missing:
        raise argparse.ArgumentTypeError(f"lacks {', '.join(missing)}: give what core.registry.runner_facts writes")
    return facts


def lock_wait_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--lock-wait", type=ranged(float, 0, 86400), default=None,
                    help="seconds to wait for another run of the same job (default "
                         f"{DEFAULT_LOCK_WAIT_S:g}, env {ENV_LOCK_WAIT})")
    ap.add_argument("--host-lock-wait", type=ranged(float, 0, 86400), default=None,
                    help="seconds to wait for another campaign's measurement on this machine (the host "
                         f"lock; default {hostlock.DEFAULT_WAIT_S:g}, env {hostlock.ENV_WAIT})")
    ap.add_argument("--retry-disturbed", type=ranged(int, 0, 20), default=DEFAULT_RETRY_DISTURBED,
                    help="tries a job whose quality verdict is disturbed gets beyond its first (config "
                         f"retry_disturbed, default {DEFAULT_RETRY_DISTURBED}; 0: none)")
    ap.add_argument("--retry-backoff", type=ranged(float, 0, 3600), default=DEFAULT_RETRY_BACKOFF_S,
                    help="seconds before the second try, twice that before the third, and so on "
                         f"(default {DEFAULT_RETRY_BACKOFF_S:g})")
    ap.add_argument("--repeat-until", type=ranged(float, 0.001, 1), default=None, metavar="HALF_WIDTH",
                    help="run the kernel again while the widest 95%% interval of the point's values over its runs "
                         "is wider than this relative half-width (config repeat_until; 0.02: ±2%%)")
    ap.add_argument("--max-repeats", type=ranged(int, 0, 100), default=0,
                    help="runs beyond the first, at most, with --repeat-until (default 0: none)")
    ap.add_argument("--bench-facts", type=bench_facts, default=None, metavar="JSON",
                    help="what the runner needs of the job's benchmark (core.registry.runner_facts, which "
                         "the workflow passes), so that it imports no benchmark; default: read from the registry")
    ap.add_argument("--setup", type=Path, action="append", default=[], metavar="RECORD",
                    help="the record of a step run once before the job (a calibration: results/<system>/"
                         "calibration.json), kept in its provenance where its launch line names its file")


def main(argv: list[str], widest_for: Callable | None = None) -> int:
    """run-job; `widest_for` as Runner takes it (statistics.repeat.run_job gives it)."""
    ap = argparse.ArgumentParser(prog="python -m numasweep run-job", description=__doc__.splitlines()[0])
    ap.add_argument("--job-id", required=True)
    ap.add_argument("--launch", required=True, help="the launch line, as `snakemake -n -p` shows it")
    ap.add_argument("--grid", required=True, help="the job's grid values as JSON")
    ap.add_argument("--kernel", required=True, type=Path)
    ap.add_argument("--topology", required=True, type=Path)
    ap.add_argument("--csv", required=True, type=Path, help="the result; the kernel writes CSV.partial")
    ap.add_argument("--provenance", required=True, type=Path)
    ap.add_argument("--log", required=True, type=Path)
    lock_wait_option(ap)
    args = ap.parse_args(argv)
    check_launch(args)
    isa.check(args.kernel, f"job {args.job_id}")
    return Runner(args, widest_for).run()


def already_measured(point: argparse.Namespace, kernel_sha256: str, topology_digest: str) -> bool:
    """A point's published result is the one this batch would measure: CSV and provenance exist,
    and the provenance names the same launch line, kernel build and topology (what makes
    snakemake rerun a single job: its params and inputs)."""
    if not point.csv.exists():
        return False
    try:
        rec = json.loads(point.provenance.read_text())
        return (rec["command"] == point.launch and rec["kernel"]["sha256"] == kernel_sha256
                and rec["topology_digest"] == topology_digest)
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        return False


def run_batch(argv: list[str], widest_for: Callable | None = None) -> int:
    """`python -m numasweep run-batch`: the points of one batch (numasweep.planning.batch), one after
    another through Runner, each published as a single job's; then the batch's manifest."""
    ap = argparse.ArgumentParser(prog="python -m numasweep run-batch",
                                 description="run the grid points of one batch, then write its manifest")
    ap.add_argument("--batch", required=True, help="the batch id")
    ap.add_argument("--kernel", required=True, type=Path)
    ap.add_argument("--topology", required=True, type=Path)
    ap.add_argument("--manifest", required=True, type=Path,
                    help="results/<system>/<bench>/batches/<batch>.json; the points' files go two folders up")
    ap.add_argument("--log", required=True, type=Path, help="one line per point: measured or kept")
    ap.add_argument("--point", nargs=3, action="append", required=True, metavar=("ID", "LAUNCH", "GRID"),
                    help="a point: its job id, launch line and grid values as JSON (repeat per point)")
    lock_wait_option(ap)
    args = ap.parse_args(argv)
    folder = args.manifest.parent.parent
    points = []
    for job_id, launch, grid in args.point:
        csv = folder / f"{job_id}.csv"
        points.append(argparse.Namespace(job_id=job_id, launch=launch, grid=grid, kernel=args.kernel,
                                         topology=args.topology, csv=csv, provenance=folder / f"{job_id}.json",
                                         log=folder / f"{job_id}.log", lock_wait=args.lock_wait,
                                         host_lock_wait=args.host_lock_wait, retry_disturbed=args.retry_disturbed,
                                         retry_backoff=args.retry_backoff, repeat_until=args.repeat_until,
                                         max_repeats=args.max_repeats, setup=args.setup,
                                         bench_facts=args.bench_facts))
        check_launch(points[-1])
    kernel_sha256 = provenance.sha256(args.kernel) if args.kernel.exists() else ""
    digest = topology.load(args.topology).digest()
    args.log.parent.mkdir(parents=True, exist_ok=True)
    runner: Runner | None = None
    with open(args.log, "w") as log:
        for done, point in enumerate(points):
            if runner is not None and runner.stopped_by:
                return 128 + runner.stopped_by
            if already_measured(point, kernel_sha256, digest):
                print(f"{point.job_id}: kept (measured with this launch line, kernel and topology)",
                      file=log, flush=True)
                continue
            if runner is None:  # the first point to measure: can this CPU run the kernel at all?
                isa.check(args.kernel, f"batch {args.batch}")
            runner = Runner(point, widest_for)
            try:
                rc = runner.run()
            except NumasweepError as exc:
                raise NumasweepError(f"batch {args.batch}: point {point.job_id}: {exc}") from None
            finally:
                if runner.lock is not None:
                    runner.lock.release()
                if runner.host_lock is not None:
                    runner.host_lock.release()
                # Runner.run blocks stop signals while it publishes: one that came is handled now.
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            if rc != 0:
                print(f"numasweep: batch {args.batch}: point {point.job_id} failed (exit {rc}), see {point.log}; "
                      f"the {done} point(s) before it are kept and a rerun measures the rest", file=sys.stderr)
                return rc
            print(f"{point.job_id}: measured", file=log, flush=True)
    if runner is not None and runner.stopped_by:
        return 128 + runner.stopped_by
    write_manifest(args.manifest, args.batch, [p.job_id for p in points])
    return 0


def run_setup(argv: list[str]) -> int:
    """`python -m numasweep run-setup`: a set-up step's launch line (planning.grid.Setup, e.g. a
    calibration's timings) under the machine's measurement lock; its table, which the kernel
    writes as TABLE.partial, is renamed to TABLE once the kernel exits 0. The standard library
    only, as run-job: it runs in the kernels' environment."""
    ap = argparse.ArgumentParser(prog="python -m numasweep run-setup",
                                 description="run a set-up step's launch line under the host lock")
    ap.add_argument("--launch", required=True, help="the set-up's launch line, as `snakemake -n -p` shows it")
    ap.add_argument("--table", required=True, type=Path, help="its table; the kernel writes TABLE.partial")
    ap.add_argument("--log", required=True, type=Path)
    args = ap.parse_args(argv)
    argv_ = shlex.split(args.launch)
    partial = Path(f"{args.table}{PARTIAL}")
    if f"--csv={partial}" not in argv_:
        raise NumasweepError(f"--launch must write --csv={partial}; pass the line the plan built")
    partial.unlink(missing_ok=True)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    results = args.table.parent.resolve()
    name = args.table.stem
    with open(args.log, "w") as log:
        lock = hostlock.HostLock(name, system=results.name, results=str(results))
        if not lock.acquire(log=log):
            raise NumasweepError(f"{name}: the machine's measurement lock was not taken; nothing was run")
        try:
            try:
                rc = subprocess.run(argv_, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
            except FileNotFoundError:
                raise NumasweepError(missing_program(argv_)) from None
        finally:
            lock.release()
    if rc != 0 or not partial.exists():
        last = (args.log.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
        partial.unlink(missing_ok=True)
        raise NumasweepError(f"{name}: the kernel exited {rc} ({last[:100]}); see {args.log}")
    os.replace(partial, args.table)
    return 0
