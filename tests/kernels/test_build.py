"""`make -C kernels` builds the CPU kernels without a single warning and records provenance."""

from __future__ import annotations

import re

import pytest

from helpers.kernels import CPU_KERNELS, REPO, run, run_ok


@pytest.mark.slow
def test_cpu_kernels_build_without_warnings(tmp_path):
    proc = run(["make", "-C", REPO / "kernels", f"BUILD={tmp_path}", "cpu"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    output = proc.stdout + proc.stderr
    assert "warning" not in output.lower(), output
    for name in CPU_KERNELS:
        assert (tmp_path / "bin" / name).is_file()
    assert (tmp_path / "lib" / "libnumasweep_common.a").is_file()


def test_make_reports_gpu_build_or_why_it_is_skipped(kernels_bin):
    proc = run_ok(["make", "-C", REPO / "kernels", "gpu"])
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("gpu_xfer skipped:")]
    if skipped:
        assert len(skipped) == 1 and ("nvcc not found" in skipped[0] or "Makefile not found" in skipped[0])
    else:
        assert (kernels_bin / "gpu_xfer").is_file()


def test_version_names_commit_and_flags(kernels_bin):
    for name in CPU_KERNELS:
        out = run_ok([kernels_bin / name, "--version"]).stdout
        assert re.match(rf"{name} numasweep ([0-9a-f]{{7,}}(-dirty)?|unknown)\n", out), out
        assert "-Wall -Wextra" in out and "-O3 -march=native" in out  # the default KERNEL_CFLAGS


def test_help_lists_shared_options(kernels_bin):
    for name in CPU_KERNELS:
        out = run_ok([kernels_bin / name, "--help"]).stdout
        for option in ("--csv=PATH", "--policy=P", "--mem-nodes=LIST", "--weights=LIST", "--pages=4k|thp|2m|1g"):
            assert option in out, (name, option)
