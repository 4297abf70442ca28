"""One boot of the NUMA guest runs a batch of steps; tests then read what each step left behind.

A boot costs seconds and, under TCG emulation, every Python start inside it many more, so each
test module boots once and runs all its commands there. The guest runs under KVM where /dev/kvm
can be opened, and under TCG elsewhere (NUMA_VM_ACCEL=tcg or kvm chooses). Each step is a bash snippet run in the
repository with its output in `<out>/<name>.log`, its exit code in `<out>/<name>.rc`, and any
file it writes under `$OUT`, a host folder shared writable with the guest.
"""

from __future__ import annotations

import compileall
import functools
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from numasweep.core.io import read_csv

from helpers.workflow import copy_repo, snakemake

HERE = Path(__file__).resolve().parent
RUN_SH = HERE / "run.sh"
# The wrapper the steps call; pointing this at another script shows that the tests catch a
# wrapper that places memory wrongly.
WRAPPER_ENV = "NUMASWEEP_TEST_WRAPPER"
# The kernels the guest runs, built apart from build/ with flags its emulated CPU has: the
# release build's -march=native may use what TCG does not emulate (AVX-512, FMA), and such a
# kernel dies of SIGILL in the guest (the case of a login node newer than its compute nodes).
GUEST_BUILD = "build/guest"
GUEST_CFLAGS = "-O3 -march=x86-64-v2"
ACCEL_ENV = "NUMA_VM_ACCEL"
KVM_DEVICE = Path("/dev/kvm")
KVM_PROBE_S = 20


@dataclass(frozen=True)
class Step:
    """A bash snippet run inside the guest. It sees $OUT (results folder), $REPO, $BIN (the
    kernels) and $WRAPPER (kernels/wrapper_numa.sh)."""

    name: str
    script: str


@dataclass(frozen=True)
class Layout:
    nodes: int
    memory_only: tuple[int, ...] = ()
    cpus_per_node: int = 1
    l3_groups: int = 1  # groups of each node's CPUs that share an L3 (QEMU dies)
    node_memory_mib: int = 512

    def describe(self) -> str:
        extra = f", node(s) {','.join(map(str, self.memory_only))} memory-only" if self.memory_only else ""
        return f"{self.nodes}-node guest{extra}"


@dataclass(frozen=True)
class StepResult:
    name: str
    rc: int | None
    log: str
    out: Path

    def check(self) -> None:
        """Fail with the step's own output when it did not exit 0."""
        assert self.rc == 0, f"guest step '{self.name}' exited {self.rc}:\n{self.log[-4000:]}"

    def csv(self, name: str | None = None) -> pd.DataFrame:
        self.check()
        return read_csv(self.out / f"{name or self.name}.csv")


@dataclass(frozen=True)
class GuestRun:
    layout: Layout
    out: Path
    seconds: float

    def step(self, name: str) -> StepResult:
        rc_file = self.out / f"{name}.rc"
        log_file = self.out / f"{name}.log"
        rc = int(rc_file.read_text()) if rc_file.exists() else None
        log = log_file.read_text(errors="replace") if log_file.exists() else "(no output: the step never ran)"
        return StepResult(name=name, rc=rc, log=log, out=self.out)


def guest_script(repo: Path, out: Path, steps: list[Step]) -> str:
    wrapper = os.environ.get(WRAPPER_ENV) or str(repo / "kernels" / "wrapper_numa.sh")
    lines = [
        "#!/bin/bash",
        f"export OUT={shlex.quote(str(out))} REPO={shlex.quote(str(repo))}",
        f'export BIN="$REPO/{GUEST_BUILD}/bin"',
        f"export WRAPPER={shlex.quote(wrapper)}",
        # The guest runs everything as root; Open MPI refuses that unless told.
        "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
        'export PATH="$REPO/.venv/bin:$PATH"',
        "step() {",
        '    local start=$SECONDS',
        '    (cd "$REPO" && eval "$2") > "$OUT/$1.log" 2>&1',
        '    echo $? > "$OUT/$1.rc"',
        '    echo "step $1: exit $(cat "$OUT/$1.rc") after $((SECONDS - start))s"',
        "}",
    ]
    lines += [f"step {shlex.quote(s.name)} {shlex.quote(s.script)}" for s in steps]
    return "\n".join(lines) + "\n"


def accel() -> str:
    """`kvm` where this process may open /dev/kvm and a guest boots there, `tcg` (emulation)
    elsewhere; NUMA_VM_ACCEL (tcg or kvm) chooses instead."""
    chosen = os.environ.get(ACCEL_ENV)
    if chosen:
        assert chosen in ("kvm", "tcg"), f"{ACCEL_ENV}={chosen!r}: use kvm or tcg"
        return chosen
    return "kvm" if os.access(KVM_DEVICE, os.R_OK | os.W_OK) and kvm_boots() else "tcg"


@functools.cache
def kvm_boots() -> bool:
    """One small guest under KVM runs `true`, once per test session. Nested under another
    hypervisor KVM may open and then fail early in the guest's boot (QEMU then waits
    without exiting: hence the time limit); TCG runs the guests there."""
    cmd = run_sh_command(Layout(nodes=1), KVM_PROBE_S, "kvm", ["true"])
    return subprocess.run(cmd, capture_output=True, timeout=KVM_PROBE_S + 60).returncode == 0


def run_sh_command(layout: Layout, timeout: int, accel: str, command: list[str],
                   out: Path | None = None) -> list[str]:
    """The run.sh command line that boots `layout` and runs `command` in it, sharing `out`
    writable and keeping the console log there."""
    cmd = [
        "bash", str(RUN_SH),
        f"--nodes={layout.nodes}",
        f"--cpus-per-node={layout.cpus_per_node}",
        f"--l3-groups={layout.l3_groups}",
        f"--node-memory={layout.node_memory_mib}",
        f"--timeout={timeout}",
        f"--accel={accel}",
    ]
    if out is not None:
        cmd += [f"--rw={out}", f"--log={out / 'console.log'}"]
    if layout.memory_only:
        cmd.append(f"--memory-only={','.join(map(str, layout.memory_only))}")
    return cmd + ["--", *command]


def boot(repo: Path, out: Path, layout: Layout, steps: list[Step], timeout: int) -> GuestRun:
    """Run every step in one guest. A guest that cannot start, dies or runs out of time fails
    the calling fixture with run.sh's message and the console tail; it is never a skip."""
    names = [s.name for s in steps]
    assert len(set(names)) == len(names), f"step names repeat: {names}"
    out.mkdir(parents=True, exist_ok=True)
    script = out / "guest.sh"
    script.write_text(guest_script(repo, out, steps))
    cmd = run_sh_command(layout, timeout, accel(), ["bash", str(script)], out)
    start = time.monotonic()
    # run.sh enforces the limit itself; this outer one only catches run.sh hanging.
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=timeout + 60)
    if proc.returncode == 125 and panicked_before_command(out / "console.log"):
        # QEMU's TCG now and then meets a guest kernel panic while the emulated CPUs come up
        # (seen: int3 in sched_clock_cpu during boot), before the guest ran anything: boot again,
        # once. A panic after the command began is never retried.
        (out / "console.log").rename(out / "console-first-boot.log")
        proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=timeout + 60)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, (
        f"the {layout.describe()} failed (run.sh exit {proc.returncode} after {seconds:.0f}s):\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )
    return GuestRun(layout=layout, out=out, seconds=seconds)


def panicked_before_command(console: Path) -> bool:
    """The guest kernel panicked before run.sh's begin marker: nothing of the command ran."""
    text = console.read_text(errors="replace") if console.exists() else ""
    return "Kernel panic" in text and "NUMA_VM_BEGIN" not in text


def copy_repo_with_kernels(repo: Path, out: Path) -> None:
    """A copy of the repository under `out/repo` for the guest's workflow runs, with the
    kernels built for the guest's CPU (GUEST_BUILD) as its build folder, copied with their
    times kept, so the guest's build jobs find them up to date, and its Python byte-compiled
    here: the guest would compile it at its first import, seconds under emulation."""
    copy_repo(repo, out / "repo")
    shutil.copytree(repo / GUEST_BUILD, out / "repo" / "build", symlinks=True)
    compileall.compile_dir(out / "repo" / "workflow", quiet=1)


def render_report(repo: Path, out: Path, system: str) -> str:
    """The report rendered here, with the workflow's `report` target, from the results a guest
    wrote under `out/repo` (`--config results=`), as a cluster's report is rendered from its
    results: rendering is Python on the aggregated tables, minutes under emulation and seconds
    here. Its Markdown, or a failure with the report log's tail."""
    proc = snakemake(out / "repo", "report", "--profile", "profiles/local", "--cores", "2",
                     "--config", f"results=results/{system}")
    log = out / "repo" / "logs" / system / "report" / "report_md.log"
    assert proc.returncode == 0, (
        f"the report did not render:\n{proc.stderr[-3000:]}\n{log.read_text()[-3000:] if log.exists() else ''}")
    path = out / "repo" / "report" / system / "experimentation.md"
    assert path.exists(), f"the report target finished without {path}"
    return path.read_text()


def page_fractions(field: str) -> dict[int, float]:
    """`"0:0.7500,3:0.2500"` -> {0: 0.75, 3: 0.25} (docs/INTERFACES.md)."""
    fractions: dict[int, float] = {}
    for part in str(field).split(","):
        node, _, fraction = part.partition(":")
        fractions[int(node)] = float(fraction)
    return fractions


def section(markdown: str, title: str) -> str:
    """The text under a heading of any level, up to the next heading of that level or above."""
    match = re.search(rf"^(#+) {re.escape(title)}\n", markdown, re.M)
    assert match, f"the report has no '{title}' heading"
    rest = markdown[match.end():]
    end = re.search(rf"^#{{1,{len(match.group(1))}}} ", rest, re.M)
    return rest[:end.start()] if end else rest


def md_tables(text: str) -> list[tuple[str, list[dict[str, str]]]]:
    """Each Markdown table with the line of text above it (its title), as rows of {header: cell}."""
    tables: list[tuple[str, list[dict[str, str]]]] = []
    title, lines = "", text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() and not lines[i].startswith("|"):
            title = lines[i].strip("*")
        if lines[i].startswith("|") and i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: "):
            header = [c.strip() for c in lines[i].strip("|").split("|")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(dict(zip(header, (c.strip() for c in lines[i].strip("|").split("|")))))
                i += 1
            tables.append((title, rows))
            continue
        i += 1
    return tables
