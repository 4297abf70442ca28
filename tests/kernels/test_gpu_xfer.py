"""gpu_xfer: built wherever nvcc exists; on a machine without a GPU it refuses with the
documented one-line error; bad invocations are refused before any device is touched; on a
machine with a GPU its CSV follows the contract and reports measured, verified copies."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.kernels import IN_CI, cannot_check
from helpers.workflow import copy_repo, snakemake

CUDA_NVCC = Path("/usr/local/cuda/bin/nvcc")


def nvcc_found() -> bool:
    return shutil.which("nvcc") is not None or CUDA_NVCC.is_file()


def visible_gpus() -> int:
    """GPUs nvidia-smi lists; 0 without the tool or the driver."""
    if shutil.which("nvidia-smi") is None:
        return 0
    proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if proc.returncode != 0:
        return 0
    return sum(1 for line in proc.stdout.splitlines() if line.startswith("GPU "))


# CUDA code must compile and link in CI, so there a missing nvcc fails these tests; on a
# user's machine without the CUDA compiler they are skipped with the reason.
needs_nvcc = pytest.mark.skipif(
    not nvcc_found() and not IN_CI, reason="nvcc not found: gpu_xfer is not built here"
)
needs_no_gpu = pytest.mark.skipif(
    visible_gpus() > 0, reason="this machine has a GPU: the no-device path cannot be exercised"
)
needs_gpu = pytest.mark.skipif(
    visible_gpus() == 0,
    reason="NOT RUN: no NVIDIA GPU here (nvidia-smi -L lists none); real gpu_xfer output is unchecked",
)


@pytest.fixture(scope="module")
def gpu_xfer(kernels_bin: Path) -> Path:
    if not nvcc_found():
        cannot_check("nvcc not found: gpu_xfer is not built here")
    return kernels_bin / "gpu_xfer"


def run(binary: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def contract_columns(repo: Path) -> list[str]:
    """The gpu_xfer column list as its page, docs/benchmarks/gpu_xfer.md, states it."""
    text = (repo / "docs" / "benchmarks" / "gpu_xfer.md").read_text()
    match = re.search(r"^- gpu_xfer: `([^`]+)`", text, re.MULTILINE)
    assert match, "docs/benchmarks/gpu_xfer.md has no gpu_xfer column list"
    return match.group(1).split(",")


@needs_nvcc
def test_built_where_nvcc_exists(gpu_xfer: Path) -> None:
    assert gpu_xfer.is_file() and os.access(gpu_xfer, os.X_OK)


@pytest.mark.slow
@needs_nvcc
def test_builds_without_warnings(gpu_xfer: Path, repo: Path, tmp_path: Path) -> None:
    """A fresh build of gpu_xfer alone (into a scratch folder) prints no compiler warning."""
    proc = subprocess.run(
        ["make", "-C", str(repo / "kernels" / "gpu"), f"-j{os.cpu_count() or 2}", f"BUILD={tmp_path}",
         f"BIN_DIR={tmp_path / 'bin'}", f"COMMON_LIB={gpu_xfer.parent.parent / 'lib' / 'libnumasweep_common.a'}"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "bin" / "gpu_xfer").is_file()
    assert "warning:" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@needs_nvcc
def test_cuda_runtime_linked_statically(gpu_xfer: Path) -> None:
    """The binary must start on machines without the driver, so it may not need libcuda or a
    shared libcudart at load time; the static runtime loads the driver when first called."""
    proc = subprocess.run(["ldd", str(gpu_xfer)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "libcuda" not in proc.stdout, proc.stdout
    assert "libcudart" not in proc.stdout, proc.stdout


@needs_nvcc
@needs_no_gpu
def test_no_device_is_one_line_exit_2(gpu_xfer: Path, tmp_path: Path) -> None:
    previous = tmp_path / "gpu.csv"
    previous.write_text("results of an earlier run\n")
    proc = run(gpu_xfer, "--sizes=1K-4K", "--iterations_per_bench=2", f"--csv={previous}")
    assert proc.returncode == 2, proc
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("gpu_xfer: error: no CUDA device ("), lines[0]
    # The runtime's own reason follows in parentheses, e.g. "CUDA driver version is insufficient".
    assert re.search(r"no CUDA device \([^)]{5,}\)", lines[0]), lines[0]
    assert proc.stdout == ""
    assert previous.read_text() == "results of an earlier run\n"
    assert [p.name for p in tmp_path.iterdir()] == ["gpu.csv"], "a temporary CSV was left behind"


@needs_nvcc
def test_help_lists_seed_and_shared_options(gpu_xfer: Path) -> None:
    proc = run(gpu_xfer, "--help")
    assert proc.returncode == 0, proc.stderr
    for option in ("--ngpus", "--benchmark_bytes", "--iterations_per_bench", "--operation_type",
                   "--pin_memory", "--sizes", "--samples", "--policy", "--mem-nodes", "--weights", "--csv"):
        assert option in proc.stdout, option


BAD_INVOCATIONS = [
    (["--bogus"], "bogus"),
    (["--sizes=12Q"], "12Q"),
    (["--sizes=0"], "--sizes"),
    (["--sizes=4K-1K"], "--sizes"),
    (["--sizes=1K-3K"], "--sizes"),
    (["--benchmark_bytes=0"], "--benchmark_bytes"),
    (["--benchmark_bytes", "1024", "--sizes=1K"], "--sizes"),
    (["--ngpus", "0"], "--ngpus"),
    (["--ngpus=two"], "--ngpus"),
    (["--pin_memory", "2"], "--pin_memory"),
    (["--operation_type=X"], "--operation_type"),
    (["--iterations_per_bench=0"], "--iterations_per_bench"),
    (["--samples=-3"], "--samples"),
    (["--policy=scatter"], "scatter"),
    (["--policy=bind", "--mem-nodes=7"], "7"),
    (["--csv=/nonexistent-folder/gpu.csv"], "nonexistent-folder"),
    (["--ngpus"], "ngpus"),
    (["stray"], "stray"),
    (["--sizes=1K-1048576"], "free memory"),
    (["--ngpus=4096", "--benchmark_bytes=1G"], "free memory"),
    (["--policy=interleave"], "--mem-nodes"),
    (["--weights=1,2"], "--weights"),
    (["--policy=weighted", "--mem-nodes=0", "--weights=256"], "256"),
]


@needs_nvcc
@pytest.mark.parametrize(("args", "named"), BAD_INVOCATIONS, ids=[" ".join(a) for a, _ in BAD_INVOCATIONS])
def test_bad_invocation_is_one_line_exit_2(gpu_xfer: Path, args: list[str], named: str) -> None:
    proc = run(gpu_xfer, *args)
    check_refused(proc, named)


def check_refused(proc: subprocess.CompletedProcess[str], named: str) -> None:
    assert proc.returncode == 2, proc
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("gpu_xfer: error: "), lines[0]
    assert named in lines[0], lines[0]
    # Options are checked before any device is looked for.
    assert "no CUDA device" not in lines[0]


@needs_nvcc
def test_weighted_interleave_refused_where_the_kernel_lacks_it(gpu_xfer: Path) -> None:
    """Never measured as plain interleave: the run-time probe's "unsupported" answer (forced
    through the shared test hook) refuses the run before any device is looked for."""
    proc = subprocess.run([str(gpu_xfer), "--policy=weighted", "--mem-nodes=0", "--sizes=4K"],
                          capture_output=True, text=True, env={**os.environ, "NUMASWEEP_FAKE_NO_WEIGHTED": "1"})
    check_refused(proc, "weighted")


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def sysfs_gpu_nodes() -> list[int]:
    """NUMA node of each GPU in nvidia-smi's order (= CUDA's PCI order by default)."""
    proc = subprocess.run(
        ["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    nodes = []
    for bus_id in proc.stdout.split():
        domain, rest = bus_id.lower().split(":", 1)
        node_file = Path(f"/sys/bus/pci/devices/{int(domain, 16):04x}:{rest}/numa_node")
        nodes.append(int(node_file.read_text()) if node_file.exists() else -1)
    return nodes


def fractions(field: str) -> dict[int, float]:
    return {int(node): float(share) for node, share in (item.split(":") for item in field.split(","))}


@needs_nvcc
@needs_gpu
@pytest.mark.parametrize("pinned", ["1", "0"])
def test_real_gpu_output(gpu_xfer: Path, repo: Path, tmp_path: Path, pinned: str) -> None:
    out = tmp_path / "gpu.csv"
    proc = run(gpu_xfer, "--sizes=4K-1M", "--iterations_per_bench=20", "--samples=3", f"--pin_memory={pinned}",
               "--policy=bind", "--mem-nodes=0", f"--csv={out}")
    assert proc.returncode == 0, proc.stderr
    assert "verification: the data of every timed copy matched" in proc.stdout
    columns, rows = read_rows(out)
    assert columns == contract_columns(repo)
    assert [int(r["access_size(bytes)"]) for r in rows] == [4096 << i for i in range(9)]
    gpu_nodes = sysfs_gpu_nodes()
    for row in rows:
        assert row["ngpus"] == "1" and row["gpu"] == "0" and row["pinned"] == pinned
        assert int(row["gpu_node"]) == gpu_nodes[0]
        assert row["policy"] == "bind" and row["numa_nodes"] == "0"
        for direction in ("read", "write"):
            latency_ms = float(row[f"{direction}_latency(ms)"])
            bandwidth = float(row[f"{direction}_bw(gib/s)"])
            assert latency_ms > 0 and bandwidth > 0
            size = int(row["access_size(bytes)"])
            assert bandwidth == pytest.approx(size / (latency_ms / 1e3) / 2**30, rel=1e-3)
        assert fractions(row["page_fractions"])[0] == pytest.approx(1.0)
        # CPU time over wall time of one thread: at most 100 (and the clocks' rounding)
        assert 0 < float(row["on_cpu_pct"]) <= 101, row


@needs_nvcc
@needs_gpu
def test_real_gpus_concurrently_and_one_direction(gpu_xfer: Path, tmp_path: Path) -> None:
    ngpus = visible_gpus()
    out = tmp_path / "gpu.csv"
    proc = run(gpu_xfer, f"--ngpus={ngpus}", "--benchmark_bytes", "65536", "--iterations_per_bench", "10",
               "--operation_type", "R", "--quiet", f"--csv={out}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    _, rows = read_rows(out)
    assert sorted(int(r["gpu"]) for r in rows) == list(range(ngpus))
    for row in rows:
        assert row["ngpus"] == str(ngpus) and row["access_size(bytes)"] == "65536"
        assert float(row["read_bw(gib/s)"]) > 0
        assert row["write_latency(ms)"] == "" and row["write_bw(gib/s)"] == ""


@needs_nvcc
@needs_gpu
def test_real_gpu_too_many_gpus_refused(gpu_xfer: Path) -> None:
    proc = run(gpu_xfer, f"--ngpus={visible_gpus() + 1}", "--sizes=4K")
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "--ngpus" in lines[0], proc.stderr


@needs_nvcc
@pytest.mark.workflow
def test_workflow_builds_gpu_xfer_for_gpu_campaign(repo: Path, tmp_path: Path) -> None:
    """`snakemake kernels` for the GPU+CXL campaign compiles gpu_xfer with the real nvcc."""
    if not nvcc_found():
        cannot_check("nvcc not found: the workflow cannot build gpu_xfer here")
    work = copy_repo(repo, tmp_path / "repo")
    proc = snakemake(work, "--configfile", "config/campaigns/gpu-cxl.yaml", "--cores", "1", "kernels", timeout=600)
    log = work / "logs" / "build" / "gpu_xfer.log"
    assert proc.returncode == 0, proc.stderr[-3000:] + (log.read_text()[-2000:] if log.exists() else "")
    binary = work / "build" / "bin" / "gpu_xfer"
    assert binary.is_file()
    assert run(binary, "--version").stdout.startswith("gpu_xfer numasweep")


def test_named_gpu_xfer_without_nvcc_fails_in_one_line(repo: Path, tmp_path: Path) -> None:
    """Asking for the binary itself (as the workflow does) where nvcc is absent fails with
    one line naming the compiler and the fix; `make gpu` keeps skipping it instead."""
    proc = subprocess.run(
        ["make", "-s", "-C", str(repo / "kernels"), f"BUILD={tmp_path}", "NVCC=", f"{tmp_path}/bin/gpu_xfer"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gpu_xfer: error:")]
    assert len(errors) == 1 and "nvcc not found" in errors[0] and "CUDA toolkit" in errors[0], proc.stderr
    assert not (tmp_path / "bin" / "gpu_xfer").exists()


def hipcc_found() -> bool:
    return shutil.which("hipcc") is not None or Path("/opt/rocm/bin/hipcc").is_file()


def amd_gpu_present() -> bool:
    """The amdgpu driver's compute interface: without it the HIP runtime finds no device."""
    return Path("/dev/kfd").exists()


@pytest.fixture(scope="module")
def gpu_xfer_hip(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The HIP build of the same sources, made with the real hipcc into a scratch build folder."""
    if not hipcc_found():
        cannot_check("hipcc not found: install hipcc and libamdhip64-dev to build gpu_xfer_hip")
    build = tmp_path_factory.mktemp("hip-build")
    scratch = tmp_path_factory.mktemp("hip-tmpdir")
    proc = subprocess.run(
        ["make", "-C", str(repo / "kernels"), f"BUILD={build}", "hip"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "TMPDIR": str(scratch)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # hipcc's driver leaves a folder in TMPDIR per compile: the build must leave none behind.
    assert not list(scratch.iterdir()), sorted(p.name for p in scratch.iterdir())
    assert not list((build / "obj" / "gpu_hip").glob("tmp-*"))
    return build / "bin" / "gpu_xfer_hip", proc.stdout + proc.stderr


@pytest.mark.slow
def test_hip_build_without_warnings(gpu_xfer_hip: tuple[Path, str]) -> None:
    binary, output = gpu_xfer_hip
    assert binary.is_file()
    assert "warning" not in output.lower() and "Traceback" not in output, output
    version = run(binary, "--version").stdout
    assert version.startswith("gpu_xfer numasweep") and "hipcc" in version and "-DNS_GPU_HIP" in version, version


@pytest.mark.slow
def test_hip_no_device_is_one_line_exit_2(gpu_xfer_hip: tuple[Path, str], tmp_path: Path) -> None:
    if amd_gpu_present():
        pytest.skip("this machine has an AMD GPU (/dev/kfd): the no-device path cannot be exercised")
    binary, _ = gpu_xfer_hip
    csv_path = tmp_path / "out.csv"
    proc = run(binary, "--ngpus=1", "--sizes=4K", f"--csv={csv_path}")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.match(r"gpu_xfer: error: no HIP device \([^)]{5,}\); .*AMD GPU.*HIP_VISIBLE_DEVICES", lines[0]), lines[0]
    assert "CUDA" not in lines[0]
    assert not csv_path.exists()


@pytest.mark.workflow
def test_workflow_builds_hip_gpu_xfer_for_amd_gpus(repo: Path, tmp_path: Path) -> None:
    """An arch file whose GPUs are AMD makes the workflow build and run gpu_xfer_hip (hipcc)."""
    if not hipcc_found():
        cannot_check("hipcc not found: install hipcc and libamdhip64-dev to build gpu_xfer_hip")
    work = copy_repo(repo, tmp_path / "repo")
    arch = work / "config" / "arch" / "cxl-example.yaml"
    text = arch.read_text().replace("name: NVIDIA A100 80GB PCIe,", "name: AMD Instinct MI250X, vendor: amd,")
    assert text.count("vendor: amd") == 2
    arch.write_text(text)
    args = ["--configfile", "config/campaigns/gpu-cxl.yaml", "--cores", "1"]
    plan = snakemake(work, *args, "-n", "-p")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "build/bin/gpu_xfer_hip --ngpus=" in plan.stdout and "build/bin/gpu_xfer --ngpus=" not in plan.stdout
    # The benchmark jobs depend on the HIP build only.
    assert "output: build/bin/gpu_xfer_hip" in plan.stdout and "output: build/bin/gpu_xfer\n" not in plan.stdout
    proc = snakemake(work, *args, "kernels", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (work / "build" / "bin" / "gpu_xfer_hip").is_file()
    assert not (work / "build" / "bin" / "gpu_xfer").exists()


@needs_nvcc
@needs_gpu
def test_real_gpu_bidirectional_copies(gpu_xfer: Path, repo: Path, tmp_path: Path) -> None:
    """B: both directions at once on each GPU; each is verified, and each alone is no slower
    than when sharing the link with the other (within the samples' spread)."""
    out = tmp_path / "gpu.csv"
    proc = run(gpu_xfer, "--sizes=64M", "--iterations_per_bench=10", "--samples=5", "--operation_type=R,W,B",
               f"--csv={out}")
    assert proc.returncode == 0, proc.stderr
    assert "verification: the data of every timed copy matched" in proc.stdout
    columns, rows = read_rows(out)
    assert columns == contract_columns(repo)
    for row in rows:
        both_read, both_write = float(row["bidir_read_bw(gib/s)"]), float(row["bidir_write_bw(gib/s)"])
        assert both_read > 0 and both_write > 0
        assert both_read <= float(row["read_bw(gib/s)"]) * 1.1
        assert both_write <= float(row["write_bw(gib/s)"]) * 1.1


@needs_nvcc
def test_bidirectional_option_refusals(gpu_xfer: Path) -> None:
    proc = run(gpu_xfer, "--operation_type=R,B,X")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "'R,B,X' is not a list of R, W and B" in proc.stderr
