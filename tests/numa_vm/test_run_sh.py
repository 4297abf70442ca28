"""run.sh itself: the command's exit code and output come back, and a guest that cannot start
or runs out of time fails loudly with the console tail instead of passing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from numa_guest import RUN_SH, panicked_before_command

pytestmark = pytest.mark.numa_vm


def run_sh(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(RUN_SH), *args], capture_output=True, text=True, timeout=timeout)


def test_command_exit_code_and_output_come_back(guest_kernel: Path) -> None:
    proc = run_sh("--nodes=2", "--", "sh", "-c", "cat /sys/devices/system/node/online; exit 7")
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout.splitlines() == ["0-1"], proc.stdout


def test_time_limit_fails_with_console_tail(guest_kernel: Path) -> None:
    proc = run_sh("--timeout=2", "--", "sleep", "600")
    assert proc.returncode == 124, proc.stderr
    assert "numa_vm: error: the guest did not finish within 2s" in proc.stderr
    assert "last 40 lines of the guest console" in proc.stderr


def test_qemu_that_cannot_start_fails_with_its_message(guest_kernel: Path) -> None:
    # 2 x 95 TiB of guest RAM: QEMU refuses to allocate it and exits before booting.
    proc = run_sh("--node-memory=99999999", "--", "true")
    assert proc.returncode == 125, proc.stderr
    assert "numa_vm: error: the guest stopped without an exit code" in proc.stderr
    assert "qemu: " in proc.stderr and "mem0" in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--nodes=2", "--memory-only=2", "--", "true"], "names node '2', the guest has nodes 0-1"),
    (["--memory-only=0", "--", "true"], "cannot include node 0"),
    (["--nodes=two", "--", "true"], "'two' is not a positive integer"),
    (["--nodes=2"], "no command given"),
    (["--cpus-per-node=3", "--l3-groups=2", "--", "true"], "--l3-groups=2 does not divide --cpus-per-node=3"),
    (["--l3-groups=0", "--", "true"], "'0' is not a positive integer"),
    (["--accel=hvf", "--", "true"], "--accel=hvf: use tcg or kvm"),
    (["--tap=nsw-absent", "--", "true"], "--tap needs --ip=ADDR/PREFIX"),
    (["--tap=nsw-absent", "--ip=10.0.0.9/24", "--", "true"], "--tap=nsw-absent: no such network device"),
])
def test_bad_options_name_the_problem(args: list[str], message: str) -> None:
    proc = run_sh(*args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_only_a_panic_before_the_command_began_is_booted_again(tmp_path: Path) -> None:
    """A guest kernel that panics while its CPUs come up ran nothing: boot() boots once more. A
    panic after the begin marker is the command's own failure, never retried."""
    console = tmp_path / "console.log"
    console.write_text("[    2.89] Oops: int3: 0000 [#2] PREEMPT SMP PTI\n[    2.89] Kernel panic - not syncing\n")
    assert panicked_before_command(console)
    console.write_text("NUMA_VM_BEGIN\nrunning\n[  300.1] Kernel panic - not syncing: Out of memory\n")
    assert not panicked_before_command(console)
    console.write_text("NUMA_VM_BEGIN\nNUMA_VM_EXIT=1\n")
    assert not panicked_before_command(console)
    assert not panicked_before_command(tmp_path / "absent.log")
