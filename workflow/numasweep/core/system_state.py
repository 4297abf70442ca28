"""The machine's state where it can change what a benchmark measures, and the data-quality
notes it calls for.

`read(proc, sys)` takes the procfs and sysfs roots (tests hand it constructed trees);
`tool_versions()` asks the MPI launcher, the C compiler and CUDA for their versions;
`collect()` is both, for this machine. `quality_notes(state, placement_measured)` names each
state that distorts a measurement, with the setting to change.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from numasweep.core import firmware


@dataclass(frozen=True)
class SystemState:
    """None: the machine does not say (no such file, no such tool)."""

    kernel_release: str | None
    numa_balancing: str | None  # kernel.numa_balancing: 0 off, 1 on, 2 memory tiering
    thp_enabled: str | None  # the selected word of transparent_hugepage/enabled
    thp_defrag: str | None
    cpu_governors: tuple[str, ...]  # distinct scaling_governor values over the CPUs
    cpufreq_driver: str | None
    smt: str | None  # smt/control: on, off, forceoff, notsupported, notimplemented
    hypervisor: str | None  # its type or vendor where known, "present" where only the CPU flag says so
    mpi_version: str | None = None
    compiler_version: str | None = None
    cuda_driver: str | None = None
    cuda_runtime: str | None = None
    # Set by the job runner, not read from the machine: what a kernel said when it wrote back
    # the weighted-interleave weights that a killed (SIGKILL) run had left changed.
    weights_restored: str | None = None
    # Set by the job runner: what a kernel said when the kernel refused to restore a setting it had
    # changed (a weight, or the automatic-weights mode), with the command that sets it back.
    settings_left_changed: str | None = None
    # reclaim may demote pages to a lower memory tier (/sys/kernel/mm/numa/demotion_enabled)
    demotion_enabled: str | None = None
    # Set by the job runner: the tiering settings as the job found them (`tiering_words`), and
    # those that were different when it ended ("name: before -> after; ..."), which no kernel of
    # ours changes for good: the weights a kernel writes are written back before it exits.
    tiering_before: str | None = None
    tiering_changed: str | None = None

    def as_record(self) -> dict[str, Any]:
        record = asdict(self)
        record["cpu_governors"] = list(self.cpu_governors)
        return record


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _selected(text: str | None) -> str | None:
    """`always [madvise] never` -> `madvise`."""
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else text


def _hypervisor(proc: Path, sys: Path) -> str | None:
    kind = _text(sys / "hypervisor" / "type")
    if kind:
        return kind
    cpuinfo = _text(proc / "cpuinfo") or ""
    if not re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.M):
        return None
    vendor = " ".join(v for v in (_text(sys / "class" / "dmi" / "id" / n) for n in ("sys_vendor", "product_name")) if v)
    return vendor or "present"


def thp_enabled(sys: Path = Path("/sys")) -> str | None:
    """The selected word of transparent_hugepage/enabled (always, madvise, never), or None."""
    return _selected(_text(sys / "kernel" / "mm" / "transparent_hugepage" / "enabled"))


def read(proc: Path = Path("/proc"), sys: Path = Path("/sys")) -> SystemState:
    cpus = sys / "devices" / "system" / "cpu"
    governors = sorted({g for g in (_text(p) for p in cpus.glob("cpu[0-9]*/cpufreq/scaling_governor")) if g})
    drivers = {d for d in (_text(p) for p in cpus.glob("cpu[0-9]*/cpufreq/scaling_driver")) if d}
    thp = sys / "kernel" / "mm" / "transparent_hugepage"
    return SystemState(
        kernel_release=_text(proc / "sys" / "kernel" / "osrelease"),
        numa_balancing=_text(proc / "sys" / "kernel" / "numa_balancing"),
        thp_enabled=thp_enabled(sys),
        thp_defrag=_selected(_text(thp / "defrag")),
        cpu_governors=tuple(governors),
        cpufreq_driver=",".join(sorted(drivers)) or None,
        smt=_text(cpus / "smt" / "control"),
        hypervisor=_hypervisor(proc, sys),
        cuda_driver=_cuda_driver(proc),
        demotion_enabled=_text(sys / "kernel" / "mm" / "numa" / "demotion_enabled"),
    )


MODE = {True: "auto", False: "manual", None: "no automatic mode"}


def tiering(proc: Path = Path("/proc"), sys: Path = Path("/sys")) -> dict[str, str]:
    """The settings that decide where pages go between memory tiers, each as text ("not
    provided" where the kernel has none): NUMA balancing (2 promotes hot pages to a faster tier),
    demotion by reclaim, and the weighted-interleave weights with their mode."""
    fw = firmware.read(sys)
    weights = ", ".join(f"node {n}: {w}" for n, w in sorted(fw.weights.items()))
    return {
        "kernel.numa_balancing": _text(proc / "sys" / "kernel" / "numa_balancing") or firmware.NOT_PROVIDED,
        "demotion_enabled": _text(sys / "kernel" / "mm" / "numa" / "demotion_enabled") or firmware.NOT_PROVIDED,
        "weighted-interleave weights": f"{weights} ({MODE[fw.weights_auto]})" if weights else firmware.NOT_PROVIDED,
    }


def tiering_words(settings: dict[str, str]) -> str:
    """`kernel.numa_balancing 0; demotion_enabled false; weighted-interleave weights node 0: 1 (...)`."""
    return "; ".join(f"{name} {value}" for name, value in settings.items())


def tiering_changes(before: dict[str, str], after: dict[str, str]) -> str | None:
    """The settings that differ after a job from before it, "name: before -> after; ...", or None."""
    changed = [f"{name}: {before[name]} -> {after.get(name)}" for name in before if after.get(name) != before[name]]
    return "; ".join(changed) or None


def _cuda_driver(proc: Path) -> str | None:
    """`NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15 ...` -> `550.54.15`, and the
    open module's `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04 ...` ->
    `580.159.04`: the first dotted number after "Kernel Module"."""
    text = _text(proc / "driver" / "nvidia" / "version")
    match = re.search(r"Kernel Module\b.*?\s(\d+(?:\.\d+)+)\b", text or "")
    return match.group(1) if match else None


def _first_line(argv: list[str], pattern: str | None = None) -> str | None:
    """The first line of a tool's output (or the first matching `pattern`); None without it."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    if pattern is not None:
        lines = [line for line in lines if re.search(pattern, line)]
    return lines[0].strip() if lines else None


def tool_versions() -> dict[str, str | None]:
    return {
        "mpi_version": _first_line(["mpirun", "--version"]),
        "compiler_version": _first_line(["cc", "--version"]),
        "cuda_runtime": _first_line(["nvcc", "--version"], r"release"),
    }


def collect() -> SystemState:
    return replace(read(), **tool_versions())


def quality_notes(state: SystemState, placement_measured: bool) -> list[str]:
    """One sentence per state that distorts the measurements, with the setting that fixes it.
    `placement_measured`: the results depend on where pages were first touched (latency and
    bandwidth under a memory policy)."""
    notes = []
    if placement_measured and state.numa_balancing not in (None, "0"):
        notes.append(
            f"NUMA balancing was on (kernel.numa_balancing={state.numa_balancing}): the kernel may "
            "migrate pages during a run, so memory placement is not what first touch set; "
            "measure with `sysctl kernel.numa_balancing=0`."
        )
    if state.thp_enabled == "always":
        notes.append(
            "Transparent huge pages were 'always': buffers meant for 4 KiB pages may be backed by "
            "2 MiB pages, hiding TLB misses; measure with THP 'madvise'."
        )
    slow = [g for g in state.cpu_governors if g != "performance"]
    if slow:
        notes.append(
            f"CPU frequency governor {', '.join(slow)}: clock speed may change during a run; "
            "measure with the 'performance' governor."
        )
    if state.hypervisor is not None:
        notes.append(
            f"Measured under a hypervisor ({state.hypervisor}): NUMA nodes, distances and latencies "
            "are the guest's view, not the hardware's."
        )
    if state.weights_restored:
        notes.append(
            "Weighted-interleave weights left changed by a killed run were written back from its "
            f"state file when a job started ({state.weights_restored}): any weighted-interleave "
            "measurement made on that host between the kill and that job ran under the changed "
            "weights; rerun those jobs."
        )
    if state.tiering_changed:
        notes.append(
            f"A tiering setting was different after a job from before it ({state.tiering_changed}): "
            "something on the host changed it while the job measured, so pages may have moved "
            "between tiers during the run; set it back and rerun the job."
        )
    if state.settings_left_changed:
        notes.append(
            "The machine was left changed after a run: the kernel refused to restore a "
            f"weighted-interleave setting ({state.settings_left_changed})."
        )
    return notes
