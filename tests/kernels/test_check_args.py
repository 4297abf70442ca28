"""--check-args: a kernel parses and checks its options, then exits 0 before looking at the machine
(the workflow runs each sweep's extra_args through it at plan time, often on a login node)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benches import PLACE_ARGS
from helpers.kernels import CPU_KERNELS


@pytest.mark.parametrize("kernel", CPU_KERNELS)
def test_check_args_parses_and_stops_before_the_machine(kernel: str, kernels_bin: Path, tmp_path: Path) -> None:
    csv = tmp_path / "no" / "folder" / "k.csv"
    # node 63 exists nowhere here, nor does the CSV's folder: both are checks of the machine.
    extra = PLACE_ARGS.get(kernel, ["--policy=bind", "--mem-nodes=63"])
    ok = subprocess.run([str(kernels_bin / kernel), "--check-args", *extra, f"--csv={csv}"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "" and not csv.parent.exists()
    bad = subprocess.run([str(kernels_bin / kernel), "--check-args", "--bogus"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.strip() == f"{kernel}: error: unknown option '--bogus'; see --help"
