"""System state: read from constructed procfs/sysfs trees with known answers, and from this
machine; the data-quality notes name exactly the states that distort a measurement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from numasweep.core import system_state
from numasweep.core.system_state import SystemState, quality_notes


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def tuned_badly(tmp_path: Path) -> tuple[Path, Path]:
    """A KVM guest with NUMA balancing on, THP always and a mixed governor."""
    proc, sys = tmp_path / "proc", tmp_path / "sys"
    write(proc, {
        "sys/kernel/osrelease": "6.9.0-test",
        "sys/kernel/numa_balancing": "1",
        "cpuinfo": "processor\t: 0\nflags\t\t: fpu sse2 hypervisor avx2\n",
        "driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 2024",
    })
    write(sys, {
        "kernel/mm/transparent_hugepage/enabled": "[always] madvise never",
        "kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never",
        "devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave",
        "devices/system/cpu/cpu1/cpufreq/scaling_governor": "performance",
        "devices/system/cpu/cpu0/cpufreq/scaling_driver": "intel_pstate",
        "devices/system/cpu/cpu1/cpufreq/scaling_driver": "intel_pstate",
        "devices/system/cpu/smt/control": "on",
        "class/dmi/id/sys_vendor": "QEMU",
    })
    return proc, sys


def test_constructed_tree_reads_back_every_field(tmp_path: Path) -> None:
    state = system_state.read(*tuned_badly(tmp_path))
    assert state == SystemState(
        kernel_release="6.9.0-test", numa_balancing="1", thp_enabled="always", thp_defrag="madvise",
        cpu_governors=("performance", "powersave"), cpufreq_driver="intel_pstate", smt="on",
        hypervisor="QEMU", cuda_driver="550.54.15",
    )


@pytest.mark.parametrize("line, version", [
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 2024", "550.54.15"),
    # the open kernel module's line, as an H100 guest's /proc/driver/nvidia/version read (the old
    # pattern took "for" from it)
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  ",
     "580.159.04"),
    ("NVRM version: something else entirely", None),
])
def test_cuda_driver_version_of_both_kernel_modules(tmp_path: Path, line: str, version: str | None) -> None:
    write(tmp_path / "proc", {"driver/nvidia/version": line})
    assert system_state._cuda_driver(tmp_path / "proc") == version


def test_missing_files_read_as_unknown(tmp_path: Path) -> None:
    state = system_state.read(tmp_path / "proc", tmp_path / "sys")
    assert state == SystemState(None, None, None, None, (), None, None, None)
    assert quality_notes(state, placement_measured=True) == []


def test_each_distorting_state_gets_one_note_naming_its_fix(tmp_path: Path) -> None:
    state = system_state.read(*tuned_badly(tmp_path))
    notes = quality_notes(state, placement_measured=True)
    assert len(notes) == 4, notes
    assert "kernel.numa_balancing=1" in notes[0] and "sysctl kernel.numa_balancing=0" in notes[0]
    assert "'always'" in notes[1] and "powersave" in notes[2] and "performance, " not in notes[2]
    assert "QEMU" in notes[3]
    # NUMA balancing only matters where placement is what is measured.
    assert not any("numa_balancing" in n for n in quality_notes(state, placement_measured=False))


def test_a_quiet_machine_gets_no_note() -> None:
    quiet = SystemState("6.9.0", "0", "madvise", "madvise", ("performance",), "acpi-cpufreq", "off", None)
    assert quality_notes(quiet, placement_measured=True) == []


def test_this_machine() -> None:
    state = system_state.collect()
    assert state.kernel_release == os.uname().release
    balancing = Path("/proc/sys/kernel/numa_balancing")
    assert state.numa_balancing == (balancing.read_text().strip() if balancing.exists() else None)
    assert state.compiler_version and state.as_record()["kernel_release"] == state.kernel_release


def test_a_setting_the_kernel_refused_to_restore_is_one_note_with_its_command(tmp_path):
    from numasweep.running.runjob import settings_left_changed

    log = tmp_path / "job.log"
    auto = "/sys/kernel/mm/mempolicy/weighted_interleave/auto"
    log.write_text("Latency: fine\nnuma_latency: warning: weights restored, but "
                   f"{auto} could not be set back to true (No such device); the machine is left in "
                   f"manual weights: run `echo true | sudo tee {auto}`\n")
    left = settings_left_changed(log)
    assert left is not None and f"echo true | sudo tee {auto}" in left and "warning" not in left
    state = system_state.SystemState(None, None, None, None, (), None, None, None, settings_left_changed=left)
    (note,) = system_state.quality_notes(state, placement_measured=False)
    assert "left changed" in note and f"sudo tee {auto}" in note
    log.write_text("all restored\n")
    assert settings_left_changed(log) is None


def test_tiering_settings_read_from_a_constructed_tree_and_their_changes(tmp_path: Path) -> None:
    """NUMA balancing, demotion and the weighted-interleave weights with their mode, as text; a
    change between before and after a job is named with both values."""
    proc, sys = tmp_path / "proc", tmp_path / "sys"
    write(proc, {"sys/kernel/numa_balancing": "2"})
    write(sys, {"kernel/mm/numa/demotion_enabled": "true",
                "kernel/mm/mempolicy/weighted_interleave/node0": "2",
                "kernel/mm/mempolicy/weighted_interleave/node3": "1",
                "kernel/mm/mempolicy/weighted_interleave/auto": "false"})
    before = system_state.tiering(proc, sys)
    assert system_state.tiering_words(before) == ("kernel.numa_balancing 2; demotion_enabled true; "
                                                  "weighted-interleave weights node 0: 2, node 3: 1 (manual)")
    assert system_state.tiering_changes(before, before) is None
    write(sys, {"kernel/mm/numa/demotion_enabled": "false"})
    assert system_state.tiering_changes(before, system_state.tiering(proc, sys)) == "demotion_enabled: true -> false"
    assert system_state.read(proc, sys).demotion_enabled == "false"
    bare = system_state.tiering(tmp_path / "none", tmp_path / "none")
    assert set(bare.values()) == {"not provided"}


def test_a_tiering_setting_changed_during_a_job_is_a_data_quality_note() -> None:
    state = SystemState(None, "0", None, None, (), None, None, None, tiering_changed="kernel.numa_balancing: 0 -> 2")
    notes = quality_notes(state, placement_measured=False)
    assert len(notes) == 1 and "kernel.numa_balancing: 0 -> 2" in notes[0] and "rerun" in notes[0]
