"""`make -C kernels` builds the CPU kernels without a single warning and records provenance."""

from __future__ import annotations

import platform
import re

import pytest

from numasweep.core import isa
from numasweep.running import provenance

from helpers.kernels import CPU_KERNELS, REPO, build_kernel, run, run_ok


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


def test_kernel_records_the_build_cpu_and_the_instruction_sets_it_was_compiled_for(tmp_path):
    """A default (-march=native) build records this CPU's model and instruction sets this CPU has,
    among them each of the common vector sets lscpu lists; the provenance keeps both."""
    built = provenance.kernel_build(build_kernel(tmp_path, "numa_c2c"))
    model, flags = isa.this_cpu()
    assert built["build_cpu"] == model, built
    if platform.machine() not in ("x86_64", "i686"):
        assert built["isa"] == [], built  # isa.FLAGS is x86's: nothing to list, nothing is checked
        return
    assert set(built["isa"]) <= flags, set(built["isa"]) - flags
    lscpu = run_ok(["lscpu"], env={"LC_ALL": "C"}).stdout
    listed = next((line.split(":", 1)[1].split() for line in lscpu.splitlines() if line.startswith("Flags:")), [])
    common = [f for f in ("sse4_2", "popcnt", "avx", "avx2", "fma", "bmi2", "avx512f", "avx512bw", "avx512vl")
              if f in listed]
    assert listed and all(f in built["isa"] for f in common), (common, built["isa"])
