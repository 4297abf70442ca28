"""One measurement at a time per machine, across workflows: the host lock.

Every benchmark job takes it while its kernel measures (run-job, and run-batch for each point:
`Runner.launch` in runjob.py); light jobs (aggregate, analyse, figures, report) never do. It is
an flock on `host.lock` in the first writable of

    $NUMASWEEP_HOST_LOCK_DIR, /run/lock/numasweep, /var/lock/numasweep, /tmp/numasweep,
    $XDG_RUNTIME_DIR/numasweep

(/tmp before the per-user $XDG_RUNTIME_DIR, so that two users of one machine still meet). The
file holds its holder as text: PID, job, system, results folder and start time. A job that finds
it held prints one line naming the holder and waits up to `NUMASWEEP_HOST_LOCK_WAIT` seconds
(default 3600), then refuses in one line naming the holder. The kernel drops an flock when its
holder dies, so a lock left by a killed job is free: the file still names the dead PID, and the
next job takes it over with a warning. A holder that ends normally empties the file first.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import math
import os
import sys
import time
from pathlib import Path
from typing import Callable, TextIO

from numasweep.core.errors import NumasweepError

ENV_DIR = "NUMASWEEP_HOST_LOCK_DIR"
ENV_WAIT = "NUMASWEEP_HOST_LOCK_WAIT"
DEFAULT_WAIT_S = 3600.0
NAME = "host.lock"
POLL_S = 0.2


def _candidates() -> list[Path]:
    places = [Path("/run/lock/numasweep"), Path("/var/lock/numasweep"), Path("/tmp/numasweep")]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        places.append(Path(runtime) / "numasweep")
    return places


def _usable(folder: Path) -> bool:
    """`folder` exists or can be made, and a lock file in it can be opened."""
    try:
        if not folder.is_dir():
            folder.mkdir(parents=False)
            # Shared by every user of the machine, like /tmp.
            os.chmod(folder, 0o1777)
    except OSError:
        return False
    lock = folder / NAME
    return os.access(lock, os.R_OK) if lock.exists() else os.access(folder, os.W_OK | os.X_OK)


def lock_dir() -> Path:
    """Where the host lock lives: $NUMASWEEP_HOST_LOCK_DIR (made if missing), else the first usable
    of the shared places."""
    chosen = os.environ.get(ENV_DIR)
    if chosen:
        folder = Path(chosen)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise NumasweepError(f"{ENV_DIR}={chosen}: cannot make the folder ({exc.strerror}); "
                                 f"set it to a writable folder or unset it") from None
        return folder
    for folder in _candidates():
        if _usable(folder):
            return folder
    raise NumasweepError("no writable folder for the host lock (/run/lock, /var/lock, /tmp); "
                         f"set {ENV_DIR} to a folder every campaign on this machine can write")


def wait_default() -> float:
    return env_seconds(ENV_WAIT, DEFAULT_WAIT_S)


def env_seconds(name: str, default: float) -> float:
    """A wait in seconds from the environment variable `name` (`default` when unset or empty):
    a value that is not a number, or one below 0, is one NumasweepError saying the rule."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise NumasweepError(f"{name}={text!r}: not a number of seconds; set it to e.g. {default:g} or unset it")
    if value < 0:
        raise NumasweepError(f"{name}={text!r}: a wait must be at least 0 seconds; set it to 0 (do not wait), "
                             f"e.g. {default:g}, or unset it")
    return value


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse(text: str) -> dict[str, str]:
    """The holder's fields from the lock file's `key=value` lines."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def describe(fields: dict[str, str]) -> str:
    """`PID 12, job latency-3 of system b (results/b), since T` from a holder's fields."""
    if not fields.get("pid"):
        return "an unknown process"
    text = f"PID {fields['pid']}"
    if fields.get("job"):
        text += f", job {fields['job']}"
    if fields.get("system"):
        text += f" of system {fields['system']}"
    if fields.get("results"):
        text += f" ({fields['results']})"
    if fields.get("start"):
        text += f", since {fields['start']}"
    return text


def try_flock(fd: int) -> bool:
    """An exclusive flock on `fd` if free now: True, or False when another process holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has ended
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _say(line: str, log: TextIO | None) -> None:
    for out in (sys.stderr, log) if log is not None else (sys.stderr,):
        print(line, file=out, flush=True)


class HostLock:
    """The machine's measurement lock for one job: `acquire` (waits, refuses or takes over) then
    `release`; `waited_s` is how long `acquire` waited."""

    def __init__(self, job_id: str, system: str = "", results: str = "", folder: Path | None = None):
        self.job_id = job_id
        self.system = system
        self.results = results
        self.path = (folder or lock_dir()) / NAME
        self.fd: int | None = None
        self.writable = False
        self.waited_s = 0.0

    def holder(self) -> dict[str, str]:
        try:
            return parse(self.path.read_text(errors="replace"))
        except OSError:
            return {}

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            self.writable = True
            try:
                os.fchmod(fd, 0o666)  # another user's campaign writes its holder here too
            except OSError:
                pass
            return fd
        except PermissionError:
            pass
        except OSError as exc:
            raise NumasweepError(f"{self.path}: cannot open the host lock ({exc.strerror}); "
                                 f"set {ENV_DIR} to a writable folder") from None
        try:
            # flock needs no write access: another user's file still locks.
            return os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise NumasweepError(f"{self.path}: cannot open the host lock ({exc.strerror}); "
                                 f"set {ENV_DIR} to a writable folder") from None

    def acquire(self, wait_s: float | None = None, stopped: Callable[[], bool] = lambda: False,
                log: TextIO | None = None) -> bool:
        """Take the lock, waiting up to `wait_s` seconds (default $NUMASWEEP_HOST_LOCK_WAIT or 3600);
        False when `stopped()` became true while waiting; NumasweepError past the wait. The lines
        about waiting go to stderr and to `log` (the job's log) too."""
        wait_s = wait_default() if wait_s is None else wait_s
        fd = self._open()
        began = time.monotonic()
        said = False
        while True:
            try:
                if try_flock(fd):
                    break
            except OSError:
                os.close(fd)
                raise
            waited = time.monotonic() - began
            if waited >= wait_s or stopped():
                os.close(fd)
                self.waited_s = waited
                if stopped():
                    return False
                raise NumasweepError(
                    f"job {self.job_id}: this machine is measuring for another job, "
                    f"{describe(self.holder())} (host lock {self.path}); gave up after {wait_s:g} s "
                    f"({ENV_WAIT}); rerun when it has ended")
            # The holder writes its name just after it takes the lock: a job that finds the lock
            # in those moments says so once the name is there (or after a second without one).
            if not said and (self.holder() or waited >= 1.0):
                _say(f"numasweep: job {self.job_id} waits for the machine: {describe(self.holder())} "
                     f"is measuring (host lock {self.path}); waiting up to {wait_s:g} s", log)
                said = True
            time.sleep(POLL_S)
        self.waited_s = time.monotonic() - began
        left = self.holder()
        if left.get("pid", "").isdigit() and int(left["pid"]) != os.getpid() and not pid_alive(int(left["pid"])):
            print(f"numasweep: warning: the host lock {self.path} named {describe(left)}, which is gone "
                  f"without releasing it (killed?); job {self.job_id} takes it over",
                  file=sys.stderr, flush=True)
        if self.writable:
            text = (f"pid={os.getpid()}\njob={self.job_id}\nsystem={self.system}\n"
                    f"results={self.results}\nstart={_now()}\n")
            os.ftruncate(fd, 0)
            os.pwrite(fd, text.encode(), 0)
        self.fd = fd
        if said:
            _say(f"numasweep: job {self.job_id} has the machine now, after {self.waited_s:.1f} s", log)
        return True

    def release(self) -> None:
        if self.fd is None:
            return
        if self.writable:
            try:
                os.ftruncate(self.fd, 0)  # an empty file: released, not abandoned
            except OSError:
                pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "HostLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
