"""The calibration under noise: with a CPU hog on the calibration's own CPU, `python -m numasweep
calibrate` either keeps the choice a quiet calibration makes or says it could not decide and
falls back to the fixed order; a shape the quiet machine told apart is never replaced by another
decided one. The real kernel on this machine; nothing here asserts a rate."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.kernels import run_ok

pytestmark = pytest.mark.slow


def _calibrate(kernels_bin, tmp_path, name: str, cpu: int) -> list[dict]:
    """`python -m numasweep run-setup` then `calibrate`, as the workflow's two calibration rules."""
    folder = tmp_path / name
    folder.mkdir()
    csv = folder / "calibration.csv"
    launch = (f"env OMP_NUM_THREADS=1 OMP_PLACES={{{cpu}}} OMP_PROC_BIND=close taskset -c {cpu} "
              f"{kernels_bin / 'numa_bandwidth'} --array-size=32M --calibrate=7 --kernels=copy,triad,read "
              f"--csv={csv}.partial")
    env = {"NUMASWEEP_HOST_LOCK_DIR": str(tmp_path / "lock")}
    run_ok([sys.executable, "-m", "numasweep", "run-setup", "--launch", launch, "--table", csv,
            "--log", folder / "calibration.log"], env=env)
    run_ok([sys.executable, "-m", "numasweep", "calibrate", "--table", csv, "--launch", launch,
            "--kernel", kernels_bin / "numa_bandwidth", "--outputs", folder / "calibration.json",
            folder / "calibration.shapes"], env=env)
    return json.loads((folder / "calibration.json").read_text())["decisions"]


def test_a_hog_on_the_calibrations_cpu_keeps_the_quiet_choice_or_falls_back(kernels_bin, tmp_path):
    cpu = sorted(os.sched_getaffinity(0))[0]
    quiet = {(d["kernel"], d["stores"]): d for d in _calibrate(kernels_bin, tmp_path, "quiet", cpu)}
    hog = subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])
    try:
        busy = _calibrate(kernels_bin, tmp_path, "hog", cpu)
    finally:
        hog.kill()
        hog.wait()
    assert {(d["kernel"], d["stores"]) for d in busy} == set(quiet)
    for d in busy:
        q = quiet[(d["kernel"], d["stores"])]
        if d["decided"]:
            assert d["shape"] == q["shape"], (d, q)
        else:   # said: the first in the fixed order of the shapes it could not tell apart
            assert d["shape"] == d["tied"][0], d
