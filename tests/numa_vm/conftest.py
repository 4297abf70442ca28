"""The NUMA guest's prerequisites, checked once: a missing piece fails every guest test with
the command that installs it, never a skip."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from numa_guest import GUEST_BUILD, GUEST_CFLAGS, HERE, GuestRun, boot


@pytest.fixture(scope="session")
def guest_kernel() -> Path:
    """The 6.12 guest kernel under tests/numa_vm/cache (fetch_kernel.sh is idempotent)."""
    assert shutil.which("qemu-system-x86_64"), "qemu-system-x86_64 not found: apt-get install qemu-system-x86"
    proc = subprocess.run(["bash", str(HERE / "fetch_kernel.sh")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"fetch_kernel.sh failed:\n{proc.stdout}\n{proc.stderr}"
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def guest_bin(repo: Path) -> Path:
    """The CPU kernels built for the guest's CPU into GUEST_BUILD (make rebuilds only what changed)."""
    proc = subprocess.run(
        ["make", "-C", str(repo / "kernels"), "cpu", f"BUILD={repo / GUEST_BUILD}",
         f"KERNEL_CFLAGS={GUEST_CFLAGS}", "-j2"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, f"the guest's kernel build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return repo / GUEST_BUILD / "bin"


@pytest.fixture(scope="module")
def guest(request: pytest.FixtureRequest, repo: Path, guest_bin: Path, guest_kernel: Path,
          tmp_path_factory: pytest.TempPathFactory) -> GuestRun:
    """One boot per test module, with the module's LAYOUT, STEPS and TIMEOUT (seconds); an
    optional `prepare(repo, out)` fills the shared results folder first."""
    module = request.module
    out = tmp_path_factory.mktemp(module.__name__)
    prepare = getattr(module, "prepare", None)
    if prepare:
        prepare(repo, out)
    return boot(repo, out, module.LAYOUT, module.STEPS, timeout=module.TIMEOUT)
