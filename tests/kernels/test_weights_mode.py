"""The automatic-weights mode of weighted interleave is left as found: a kernel that sets node
weights records the mode (`auto`, which writing a weight turns off on 6.x kernels) with the
weights, writes both back at exit and, after a SIGKILL, in the next weighted run; where a setting
cannot be written back, one line says so with the command that does it.

The weight files are a constructed folder (NUMASWEEP_WEIGHTS_DIR): a regular file does not turn
`auto` off when a weight is written, so the tests do that themselves, as the kernel would."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from helpers.kernels import cannot_check, weights_folder

FAST = ["--min-time=0.02", "--samples=3", "--max-time=0.08"]


@pytest.fixture
def weights(tmp_path: Path) -> tuple[Path, dict]:
    folder, env = weights_folder(tmp_path)
    return folder, {**os.environ, **env}


def _start_and_flip(kernels_bin: Path, folder: Path, env: dict, ntimes: int) -> subprocess.Popen:
    """A weighted run that sets node0 to 3; once it has, `auto` is turned off as the kernel does."""
    proc = subprocess.Popen([kernels_bin / "numa_bandwidth", "--policy=weighted", "--mem-nodes=0", "--weights=3",
                             "--array-size=4M", f"--ntimes={ntimes}", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while (folder / "node0").read_text().strip() != "3" and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    if proc.poll() is not None:
        pytest.fail(f"the weighted run ended before it set the weight: {proc.stderr.read()}")
    (folder / "auto").write_text("false\n")
    return proc


def test_a_killed_runs_automatic_mode_is_restored_by_the_next_run(kernels_bin, weights, tmp_path):
    folder, env = weights
    proc = _start_and_flip(kernels_bin, folder, env, 100_000)
    proc.kill()
    proc.wait()
    assert "auto true" in (tmp_path / "w.state").read_text()
    nxt = subprocess.run([kernels_bin / "numa_latency", "--size=1M", *FAST, "--policy=weighted", "--mem-nodes=0",
                          "--quiet", f"--csv={tmp_path / 'l.csv'}"], capture_output=True, text=True, env=env)
    assert nxt.returncode == 0, nxt.stderr
    assert (folder / "node0").read_text().strip() == "1" and (folder / "auto").read_text().strip() == "true"
    assert f"killed run PID {proc.pid}" in nxt.stderr and not (tmp_path / "w.state").exists()


def test_a_mode_that_cannot_be_restored_is_one_line_with_its_command(kernels_bin, weights):
    folder, env = weights
    proc = _start_and_flip(kernels_bin, folder, env, 200)
    # The kernel refuses the write back (here: the file became a folder).
    (folder / "auto").unlink()
    (folder / "auto").mkdir()
    try:
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert (folder / "node0").read_text().strip() == "1"
    (line,) = [ln for ln in err.splitlines() if "auto" in ln]
    assert "left in manual weights" in line and f"echo true | sudo tee {folder / 'auto'}" in line


def test_an_automatic_mode_the_kernel_refuses_is_said_before_the_run(kernels_bin, weights, tmp_path):
    """Where the kernel refuses `auto = true` (ENODEV on a 6.16+ kernel without HMAT/CDAT
    bandwidth), writing a weight would leave the machine in manual weights: one line says so
    before any weight is written, and none after the run. Here `auto` is a read-only bind mount."""
    folder, env = weights
    auto = folder / "auto"
    mounted = subprocess.run(["mount", "--bind", auto, auto], capture_output=True, text=True)
    if mounted.returncode != 0:
        cannot_check(f"NOT RUN: cannot bind-mount a file here (root only): {mounted.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", auto], check=True)
        err_path = tmp_path / "err"
        with open(err_path, "w") as err:
            proc = subprocess.Popen([kernels_bin / "numa_bandwidth", "--policy=weighted", "--mem-nodes=0",
                                     "--weights=3", "--array-size=4M", "--ntimes=200", "--quiet"],
                                    stdout=subprocess.DEVNULL, stderr=err, text=True, env=env)
            deadline = time.monotonic() + 60
            while (folder / "node0").read_text().strip() != "3" and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            said_before = err_path.read_text()
            assert proc.wait(timeout=120) == 0, err_path.read_text()
    finally:
        subprocess.run(["umount", auto], check=True)
    (line,) = said_before.splitlines()
    assert f"{auto} is true but the kernel refuses to set it" in line and "the machine is left in manual" in line
    assert f"echo true | sudo tee {auto}" in line
    # nothing more about the weights after the run (a busy machine may add the kernel's CPU-share warning)
    assert [ln for ln in err_path.read_text().splitlines() if "weight" in ln or "auto" in ln] == [line]
    assert (folder / "node0").read_text().strip() == "1" and not (tmp_path / "w.state").exists()


@pytest.mark.parametrize("boot", ["boot 00000000-0000-0000-0000-000000000000\n", ""])
def test_a_state_file_of_another_boot_restores_nothing(kernels_bin, weights, tmp_path, boot):
    """A reboot resets the weights, and a guest sharing the host's /var/tmp sees the host's file:
    a state file that does not name this boot is removed in one line, and nothing written (its
    weights would turn this boot's automatic mode off)."""
    folder, env = weights
    state = tmp_path / "w.state"
    state.write_text(f"pid 999999\n{boot}{folder / 'node0'} 7\n{folder / 'auto'} true\n")
    nxt = subprocess.run([kernels_bin / "numa_latency", "--size=1M", *FAST, "--policy=weighted", "--mem-nodes=0",
                          "--quiet", f"--csv={tmp_path / 'l.csv'}"], capture_output=True, text=True, env=env)
    assert nxt.returncode == 0, nxt.stderr
    assert (folder / "node0").read_text().strip() == "1" and not state.exists()
    (line,) = [ln for ln in nxt.stderr.splitlines() if str(state) in ln]
    assert f"removed {state}, written by run PID 999999 of another boot" in line
