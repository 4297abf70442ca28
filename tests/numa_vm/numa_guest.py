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
import math
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.core import topology
from numasweep.core.io import read_csv
from numasweep.core.topology import Topology
from numasweep.findings.firmware import FLOOR
from numasweep.results import aggregate, matrices

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


# Boots again after a guest kernel panic before the command began (boot, below).
BOOT_RETRIES = 3


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
    for failed_boot in range(1, BOOT_RETRIES + 1):
        if proc.returncode != 125 or not panicked_before_command(out / "console.log"):
            break
        # QEMU's TCG now and then meets a guest kernel panic while the emulated CPUs come up
        # (seen: int3 in sched_clock_cpu, a fault in run_timer_softirq, during boot; twice in a
        # row once on the 16-CPU guest), before the guest ran anything: boot again, a few seconds
        # each. A panic after the command began is never retried.
        (out / "console.log").rename(out / f"console-boot-{failed_boot}.log")
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


def render_report(repo: Path, out: Path, system: str, conclude_disturbed: bool = False) -> str:
    """The report rendered here, with the workflow's `report` target, from the results a guest
    wrote under `out/repo` (`--config results=`), as a cluster's report is rendered from its
    results: rendering is Python on the aggregated tables, minutes under emulation and seconds
    here; `conclude_disturbed` as the guest's campaign says it. Its Markdown, or a failure with
    the report log's tail."""
    proc = snakemake(out / "repo", "report", "--profile", "profiles/local", "--cores", "2",
                     "--config", f"results=results/{system}",
                     *(["conclude_disturbed=true"] if conclude_disturbed else []))
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


# One measured cell beside the firmware's claim, as the report's "Measured against the firmware"
# section words it (numasweep.findings.firmware.Pair.words), in the line of its finding.
FIRMWARE_FINDING = re.compile(r"^\*\*Measured (?P<quantity>latency|bandwidth) against (?P<source>HMAT access[01]|SLIT), "
                              r"relative to node (?P<local>\d+)'s local \w+\.\*\* (?P<summary>.*)$", re.M)
FIRMWARE_PAIR = re.compile(r"CPUs of node (?P<cpu>\d+) to memory of node (?P<mem>\d+): (?P<source>HMAT access[01]|SLIT) "
                           r"says (?P<claimed>[\d.]+)x, measured (?P<measured>[\d.]+)x \((?P<interval>[^)]*)\), "
                           r"(?P<verdict>untested, [\d.]+x apart|[^;.]+)")


def firmware_statements(text: str) -> list[dict[str, str]]:
    """Every pair the firmware comparison states, with its finding's quantity (latency or
    bandwidth) and local node: the words of the report, one dict per pair."""
    found = []
    for finding in FIRMWARE_FINDING.finditer(text):
        for pair in FIRMWARE_PAIR.finditer(finding["summary"]):
            found.append({"quantity": finding["quantity"], "local": finding["local"], **pair.groupdict(),
                          "summary": finding["summary"]})
    return found


def hmat_claim(topo: Topology, field: str, cpu: int, mem: int, local: int) -> tuple[str, float] | None:
    """(source, ratio) HMAT gives for memory `mem` from CPUs of `cpu` over the local cell
    (local, local): access class 1 where it has both, else class 0; None where neither has both."""
    for klass in (1, 0):
        pairs = topo.firmware.pairs(klass)
        there, here = pairs.get((cpu, mem)), pairs.get((local, local))
        if there and here and getattr(there, field) and getattr(here, field):
            return f"HMAT access{klass}", getattr(there, field) / getattr(here, field)
    return None


def geometric_ratio(samples: pd.DataFrame, cpu: int, mem: int, local: int) -> float:
    """Geometric mean of the samples of cell (cpu, mem) over that of (local, local)."""
    def mean_log(c: int, m: int) -> float:
        values = samples[(samples["cpu_node"] == c) & (samples["memory_node"] == m)]["value"].to_numpy(float)
        assert len(values), f"no samples of cell ({c}, {m}) in {samples}"
        return float(np.log(values).mean())
    return float(np.exp(mean_log(cpu, mem) - mean_log(local, local)))


# (matrices quantity, the finding's word, the HMAT field of the same quantity)
FIRMWARE_QUANTITIES = {"latency_ns": ("latency", "read_latency_ns"), "bandwidth_mb_s": ("bandwidth", "read_bandwidth_mb_s")}


def firmware_beside_measured(report: str, results: Path, quantities: tuple[str, ...]) -> list[dict[str, str]]:
    """Check the report's "Measured against the firmware" section against the guest's results:
    the firmware's view as detection read it is in the report; every measured remote cell that
    HMAT has numbers for (with a local cell to relate it to) is stated, with HMAT's ratio and the
    measured one (the geometric means' ratio over the cells' samples), and a verdict that says
    how they compare: with an interval, "disagrees" wherever the interval lies beyond FLOOR of the
    claim, "agrees" only where it lies within FLOOR, else disagrees or undecided; without one (one value a side), "untested" with how far apart they lie, never
    "agrees". The statements checked, for the caller's own checks."""
    topo = topology.load(results / "topology.json")
    assert topo.firmware.access, "the guest boots with HMAT (run.sh --memory-only): detection read none"
    for line in topo.firmware.summary():  # the firmware's view as read, in the report's configuration
        assert line in report, f"'{line}' not in the report:\n{section(report, 'System')[:3000]}"
    samples = matrices.samples(aggregate.load_results(results), aggregate.load_topology(results))
    stated = firmware_statements(section(report, "Measured against the firmware"))
    checked = []
    for quantity in quantities:
        word, field = FIRMWARE_QUANTITIES[quantity]
        rows = samples[quantity]
        measured = {(int(c), int(m)) for c, m in rows[["cpu_node", "memory_node"]].itertuples(index=False)}
        expected = {}
        for cpu, mem in sorted(measured):
            local = cpu if (cpu, cpu) in measured else mem if (mem, mem) in measured else None
            claim = None if cpu == mem or local is None else hmat_claim(topo, field, cpu, mem, local)
            if claim:
                expected[(cpu, mem)] = (local, *claim)
        said = {(int(s["cpu"]), int(s["mem"])): s for s in stated if s["quantity"] == word and s["source"].startswith("HMAT")}
        assert expected and set(said) == set(expected), (
            f"{word}: HMAT pairs stated {sorted(said)}, measured with HMAT numbers {sorted(expected)}:\n{stated}")
        for cell, (local, source, claimed) in expected.items():
            s = said[cell]
            ratio = geometric_ratio(rows, *cell, local)
            assert s["source"] == source and int(s["local"]) == local, (source, local, s)
            assert s["claimed"] == f"{claimed:.2f}", f"{word} {cell}: HMAT's ratio is {claimed:.2f}x, stated {s}"
            assert abs(float(s["measured"]) - ratio) <= 0.006, f"{word} {cell}: measured {ratio:.3f}x, stated {s}"
            apart = abs(math.log(ratio / claimed)) > math.log1p(FLOOR)
            if s["interval"].startswith("no interval"):
                if apart:
                    factor = re.fullmatch(r"untested, ([\d.]+)x apart", s["verdict"])
                    assert factor and abs(float(factor[1]) - max(ratio / claimed, claimed / ratio)) < 0.05, (
                        f"{word} {cell}: {ratio:.2f}x measured, {claimed:.2f}x claimed: {s['summary']}")
                else:
                    assert s["verdict"] == f"untested, within {FLOOR:.0%} of each other", f"{word} {cell}: {s}"
            else:
                low, high = map(float, re.findall(r"([\d.]+)x", s["interval"])[:2])
                inside = claimed / (1 + FLOOR) <= low and high <= claimed * (1 + FLOOR)
                if low > claimed * (1 + FLOOR) or high < claimed / (1 + FLOOR):
                    assert s["verdict"] == "disagrees", f"{word} {cell}: {s['summary']}"
                elif inside:
                    assert s["verdict"] == "agrees", f"{word} {cell}: {s['summary']}"
                else:  # the interval reaches past the floor: never "agrees"
                    assert s["verdict"] == "disagrees" or s["verdict"].startswith("undecided, its interval reaching"), (
                        f"{word} {cell}: {s['summary']}")
            checked.append(s)
    return checked


# `lstopo --memattrs -p`: a memory attribute's name, then its values, one per target and initiator.
MEMATTR_NAME = re.compile(r"^Memory attribute #\d+ name `(?P<name>\w+)' flags \d+$")
MEMATTR_VALUE = re.compile(r"^\s+NUMANode P#(?P<node>\d+) = (?P<value>\d+)(?: from cpuset (?P<cpuset>0x[0-9a-f,]+))?")


def memattrs(text: str) -> dict[str, dict[tuple[int, str | None], int]]:
    """attribute name -> {(NUMA node's OS index, initiator cpuset or None): value}."""
    out: dict[str, dict[tuple[int, str | None], int]] = {}
    current = None
    for line in text.splitlines():
        if m := MEMATTR_NAME.match(line):
            current = out.setdefault(m["name"], {})
        elif (m := MEMATTR_VALUE.match(line)) and current is not None:
            current[(int(m["node"]), m["cpuset"])] = int(m["value"])
    return out


def hwloc_cpuset(cpus: list[int]) -> str:
    """The cpuset hwloc prints for these CPUs (a mask of up to 32 CPUs, 8 hex digits)."""
    assert max(cpus) < 32, f"the guest's CPUs {cpus}: this helper writes one 32-bit word"
    return f"0x{sum(1 << c for c in cpus):08x}"
