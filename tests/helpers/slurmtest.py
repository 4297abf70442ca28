"""What the SLURM tests share: the cluster's files, run folders, snakemake runs watched through
squeue, and readers for the kernels' CSVs and provenance records."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.kernels import contract_columns
from helpers.workflow import copy_repo
from helpers.workflow import snakemake as run_snakemake

REPO = Path(__file__).resolve().parents[2]
CLUSTER_SH = REPO / "tests" / "slurm" / "cluster.sh"
STATE = Path(os.environ.get("NUMASWEEP_SLURM_STATE", "/run/numasweep-slurm"))
# cluster.sh lists the daemons it starts, "NAME PIDFILE" a line (slurmd@node1: node1's slurmd).
DAEMONS_FILE = STATE / "daemons"
# Every program cluster.sh may start, and the prefix of its network namespaces.
DAEMON_PROGRAMS = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "slurmstepd")
NETNS_PREFIX = "numasweep-"
# The interpreter running the tests has snakemake and numasweep (the project's venv).
BIN = Path(sys.executable).parent
# What a run folder takes from the checkout, so that results, .snakemake and the SLURM logs of
# each test run stay apart from the checkout and from each other. The kernels and their build
# are copied with their times: the build rules run make on the copy's own paths, and only if a
# source is newer than its binary.
LINKED_ENTRIES = ("workflow", "config")
COPIED_ENTRIES = ("kernels", "build")
SNAKEMAKE_LIMIT_S = 300


# The columns the benchmarks' pages (docs/benchmarks/) give, so the tests check the kernels against the documented
# interface rather than a copy of it.
LATENCY_COLUMNS = contract_columns("numa_latency")
BANDWIDTH_COLUMNS = contract_columns("numa_bandwidth")


@dataclass(frozen=True)
class Layout:
    """What `cluster.sh up` starts: this machine as the one node, or N nodes each in a network
    namespace of its own; with or without accounting (slurmdbd on MariaDB)."""

    name: str
    up_args: tuple[str, ...]
    accounting: bool


ONE_NODE = Layout("one node, no accounting", (), accounting=False)
FLEET = Layout("two namespace nodes, slurmdbd and MariaDB", ("--nodes", "2", "--accounting"), accounting=True)
# A compute node of other hardware than this machine: the NUMA guest, whose own slurmd
# (tests/slurm/guest_node.sh) registers it in partition `guest` (tests/numa_vm/test_slurm_guest_node.py).
GUEST_NODE = "numa-vm"
GUEST = Layout("one namespace node and the NUMA guest", ("--nodes", "1", "--guest", f"{GUEST_NODE}:4:1024"),
               accounting=False)


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[str, ...]
    cpus: int  # per node
    workdir: Path  # the tests' snakemake runs live here; nothing may still run in it at the end
    layout: Layout

    @property
    def node(self) -> str:
        return self.nodes[0]


def slurm_env() -> dict[str, str]:
    """The environment for SLURM commands: none of a surrounding job's SLURM_* settings, and the
    project's virtual environment first on PATH, as the job steps need its snakemake."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_"))}
    env["PATH"] = f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def run(argv: list[str], timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=slurm_env(), **kwargs)


# ------------------------------------------------------------------ processes


def pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def daemon_pids() -> dict[str, int]:
    """The daemons of the running cluster, by the pidfiles cluster.sh listed."""
    pids = {}
    try:
        lines = DAEMONS_FILE.read_text().splitlines()
    except OSError:
        return pids
    for line in lines:
        daemon, pidfile = line.split(" ", 1)
        try:
            pids[daemon] = int(Path(pidfile).read_text().strip())
        except (OSError, ValueError):
            pass
    return pids


def our_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(NETNS_PREFIX)]


def processes(comm: str | tuple[str, ...] | None = None, cwd_under: Path | None = None) -> set[int]:
    """PIDs of processes with a given program name (or one of several) or a working directory
    under a folder."""
    names = (comm,) if isinstance(comm, str) else comm
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if names is not None and (proc / "comm").read_text().strip() in names:
                found.add(int(proc.name))
            if cwd_under is not None and Path(os.readlink(proc / "cwd")).is_relative_to(cwd_under):
                found.add(int(proc.name))
        except OSError:
            continue
    return found


def describe(pids: set[int]) -> str:
    lines = []
    for pid in sorted(pids):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            cmd = "(gone)"
        lines.append(f"  {pid}: {cmd[:200]}")
    return "\n".join(lines)


# ------------------------------------------------------------------ run folders


def run_dir(base: Path, name: str) -> Path:
    return copy_repo(REPO, base / name, entries=LINKED_ENTRIES + COPIED_ENTRIES, link=LINKED_ENTRIES)


def detect_topology(target: Path) -> dict:
    """This machine's topology, written to target by the project's own detection."""
    detect = run([str(BIN / "python"), "-m", "numasweep", "topology", "--detect", "-o", str(target)])
    assert detect.returncode == 0, f"topology detection failed: {detect.stderr}"
    return json.loads(target.read_text())


def compute_node_arch(target: Path, node: str) -> Path:
    """A compute node described as docs/slurm.md tells a user on a login node to: the project's
    detection run by srun on the node, its topology.json the campaign's arch file."""
    detect = run(["srun", "-N1", "-w", node, "--exclusive", "-t", "5", str(BIN / "python"), "-m", "numasweep",
                  "topology", "--detect", "-o", str(target)], timeout=300, cwd=REPO)
    assert detect.returncode == 0, f"srun topology detection on {node} failed: {detect.stderr}"
    return target


def seed_topology(workdir: Path, system: str, source: Path | None = None) -> None:
    """results/<system>/topology.json written beforehand (copied, or detected here), so a test
    whose subject is not the topology saves that job's round trip through the queue."""
    target = workdir / "results" / system / "topology.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    if source is None:
        detect_topology(target)
    else:
        shutil.copyfile(source, target)


# ------------------------------------------------------------------ snakemake under watch


def rule_of(comment: str) -> str:
    """The rule in the plugin's job comment `rule_<rule>_wildcards_<job id>`."""
    return comment.split("_wildcards_", 1)[0].removeprefix("rule_")


def job_of(comment: str) -> str:
    """The workflow's job id in the plugin's job comment."""
    return comment.split("_wildcards_", 1)[1]


@dataclass
class SnakemakeRun:
    returncode: int
    output: str
    # SLURM job id -> (the plugin's job comment, every state squeue showed for it)
    seen: dict[str, tuple[str, set[str]]]

    def assert_succeeded(self) -> None:
        assert self.returncode == 0, f"snakemake exited {self.returncode}:\n{self.output[-6000:]}"

    def running_rules(self) -> set[str]:
        """Rules of the jobs squeue showed RUNNING at least once."""
        return {rule_of(comment) for comment, states in self.seen.values() if "RUNNING" in states}


def squeue_jobs(workdir: Path) -> list[tuple[str, str, str]]:
    """(job id, state, comment) of every job squeue lists whose working directory is workdir,
    ended ones included (they stay listed for MinJobAge)."""
    out = run(["squeue", "-h", "-t", "all", "-o", "%i|%T|%k|%Z"], timeout=30).stdout
    jobs = []
    for line in out.splitlines():
        job_id, state, comment, cwd = line.split("|", 3)
        if Path(cwd) == workdir:
            jobs.append((job_id, state, comment))
    return jobs


def snakemake(
    workdir: Path, *args: str, on_poll: Callable[[list[tuple[str, str, str]]], None] | None = None,
    timeout: float = SNAKEMAKE_LIMIT_S,
) -> SnakemakeRun:
    """snakemake with the slurm profile in workdir, watching squeue while it runs.

    `on_poll` is called with the jobs squeue shows at each poll (the fault tests cancel one
    from there).
    """
    seen: dict[str, tuple[str, set[str]]] = {}

    def watch() -> None:
        jobs = squeue_jobs(workdir)
        for job_id, state, comment in jobs:
            seen.setdefault(job_id, (comment, set()))[1].add(state)
        if on_poll is not None:
            on_poll(jobs)

    log = workdir / f"snakemake-{len(list(workdir.glob('snakemake-*.out')))}.out"
    proc = run_snakemake(workdir, "--profile", str(REPO / "profiles" / "slurm"),
                         "--slurm-init-seconds-before-status-checks", "2", *args,
                         timeout=timeout, env=slurm_env(), watch=watch, log=log)
    return SnakemakeRun(proc.returncode, proc.stdout, seen)


# ------------------------------------------------------------------ results


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def provenance(csv_path: Path) -> dict:
    return json.loads(csv_path.with_suffix(".json").read_text())


def launch_option(record: dict, name: str) -> str:
    """The value of `name=` on a job's launch line, as its provenance recorded it."""
    for arg in shlex.split(record["command"]):
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    raise AssertionError(f"no {name}= on the launch line: {record['command']}")


# ------------------------------------------------------------------ the session's clusters

# Two test sessions on one machine would fight over one slurm.conf and one set of ports.
LOCK = Path("/run/lock/numasweep-slurm.lock")


class Clusters:
    """At most one cluster at a time: they share /etc/slurm and the ports."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.running: Cluster | None = None
        self.before = processes(comm=DAEMON_PROGRAMS)

    def use(self, layout: Layout) -> Cluster:
        if self.running is not None and self.running.layout == layout:
            return self.running
        self.stop()
        # Installing the packages on a fresh machine takes most of this limit.
        up = run(["bash", str(CLUSTER_SH), "up", *layout.up_args], timeout=900)
        assert up.returncode == 0, (
            f"the SLURM cluster ({layout.name}) did not start (cluster.sh up exited {up.returncode}):\n"
            f"{up.stdout[-4000:]}\n{up.stderr[-6000:]}"
        )
        nodes = tuple(run(["sinfo", "-h", "-N", "-o", "%N"]).stdout.split())
        cpus = int(run(["sinfo", "-h", "-N", "-o", "%c"]).stdout.split()[0])
        self.running = Cluster(nodes=nodes, cpus=cpus, workdir=self.workdir, layout=layout)
        return self.running

    def stop(self) -> None:
        if self.running is None and not STATE.exists():
            return
        pids = daemon_pids()
        down = run(["bash", str(CLUSTER_SH), "down"], timeout=180)
        self.running = None
        left = {f"{d} (PID {p})" for d, p in pids.items() if pid_alive(p)}
        strays = processes(comm=DAEMON_PROGRAMS) - self.before
        in_workdir = processes(cwd_under=self.workdir)
        assert down.returncode == 0, f"cluster.sh down failed:\n{down.stdout}\n{down.stderr}"
        assert not left, f"daemons still running after cluster.sh down: {sorted(left)}"
        assert not strays, f"SLURM, munge or MariaDB processes left running:\n{describe(strays)}"
        assert not in_workdir, f"processes left in {self.workdir}:\n{describe(in_workdir)}"
        assert not our_namespaces(), f"network namespaces left: {our_namespaces()}"
        assert not STATE.exists(), f"cluster.sh down left {STATE} behind"


@pytest.fixture(scope="session")
def slurm_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    """The one cluster of the session (none at first), brought down at its end."""
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        clusters = Clusters(tmp_path_factory.mktemp("slurm-runs"))
        try:
            yield clusters
        finally:
            clusters.stop()
