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
from helpers.kernels import weights_folder

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
