"""The CPU kernels built with AddressSanitizer and UndefinedBehaviorSanitizer run the small
test sizes of their files in tests/benches/ clean: no memory error, no undefined behaviour, no leak in our code."""

from __future__ import annotations

import re

import pytest

from benches import SANITIZED
from helpers.kernels import CPU_KERNELS, REPO, assert_covers, run, run_ok

SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    "OMP_NUM_THREADS": "2",
}


@pytest.fixture(scope="module")
def sanitize_bin():
    """Every kernel built again with the sanitizers (its tests are `slow`)."""
    proc = run(["make", "-C", REPO / "kernels", "sanitize"], timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "warning" not in (proc.stdout + proc.stderr).lower()
    return REPO / "build" / "sanitize" / "bin"


def assert_clean(stderr: str) -> None:
    assert "ERROR: AddressSanitizer" not in stderr, stderr
    assert "runtime error" not in stderr, stderr


def test_every_cpu_kernel_runs_under_the_sanitizers():
    assert_covers({cmd[0] for cmd in SANITIZED.values()}, CPU_KERNELS, "tests/benches/: SANITIZED of each kernel")


@pytest.mark.slow
@pytest.mark.parametrize("cmd", SANITIZED.values(), ids=SANITIZED.keys())
def test_sanitized_kernel_runs_clean(sanitize_bin, tmp_path, cmd):
    proc = run_ok([sanitize_bin / cmd[0], *cmd[1:], f"--csv={tmp_path / 'out.csv'}"] if cmd[0] != "numa_latency"
                  else [sanitize_bin / cmd[0], *cmd[1:]], env=SANITIZER_ENV)
    assert_clean(proc.stderr)
    assert "leak" not in proc.stderr.lower(), proc.stderr


@pytest.mark.slow
def test_sanitized_latency_measurement_runs_clean(sanitize_bin, tmp_path):
    """Open MPI's own start-up allocations are never freed and its plug-ins are unloaded before
    the leak check, so leaks are reported but must not trace back to kernels/."""
    csv_path = tmp_path / "latency.csv"
    proc = run(
        [sanitize_bin / "numa_latency", "--size=16K,1M", "--min-time=0.01", "--samples=2", "--policy=bind",
         "--mem-nodes=0", "--quiet", f"--csv={csv_path}"],
        env={**SANITIZER_ENV, "LSAN_OPTIONS": "exitcode=0"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_clean(proc.stderr)
    ours = [line for line in proc.stderr.splitlines() if re.search(r"/kernels/\S+\.c:\d+", line)]
    assert not ours, "\n".join(ours)
    assert len(csv_path.read_text().splitlines()) == 3
