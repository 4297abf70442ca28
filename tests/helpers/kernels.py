"""Running the compiled kernels in tests: environment, CSV reading, the column contract."""

from __future__ import annotations

import csv
import os
import re
import subprocess
from pathlib import Path

import pytest

from numasweep.core import registry

REPO = Path(__file__).resolve().parents[2]

# The kernels `make -C kernels cpu` builds: one per benchmark whose jobs drive no GPU.
CPU_KERNELS = tuple(b.launch.kernel for b in registry.all_benches().values() if b.launch.by != "gpus")

# Open MPI refuses root without these; the test machine runs as root.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **MPI_ENV, **(env or {})}
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=full_env, timeout=timeout)


def run_ok(cmd: list[str], env: dict[str, str] | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    proc = run(cmd, env, timeout)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def build_kernel(build: Path, kernel: str, cflags: str | None = None) -> Path:
    """`make -C kernels BUILD=build build/bin/KERNEL` (KERNEL_CFLAGS=cflags when given): one kernel
    and the shared library, built away from build/; the binary's path."""
    binary = build / "bin" / kernel
    flags = [f"KERNEL_CFLAGS={cflags}"] if cflags is not None else []
    run_ok(["make", "-C", REPO / "kernels", f"-j{os.cpu_count() or 2}", f"BUILD={build}", *flags, binary], timeout=300)
    return binary


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def assert_covers(data, names, where: str) -> None:
    """What a test keeps per benchmark or per kernel (commands, rows, arguments) has an entry for
    each of `names` (the registry's): a new benchmark fails here, saying what to add, rather than
    being left out of the test without a word."""
    missing = [name for name in names if name not in data]
    assert not missing, f"{where} has no entry for {', '.join(missing)}: add one for each"


def contract_columns(kernel: str) -> list[str]:
    """The CSV columns a kernel's benchmark page (docs/benchmarks/) promises: its line
    "- KERNEL: `columns`"."""
    for page in sorted((REPO / "docs" / "benchmarks").glob("*.md")):
        m = re.search(rf"^- {re.escape(kernel)}: `([^`]+)`", page.read_text(), re.MULTILINE)
        if m:
            return m.group(1).split(",")
    raise AssertionError(f"no page of docs/benchmarks/ lists the columns of {kernel}: add its page")


def fractions(text: str) -> dict[int, float]:
    """'0:0.7500,1:0.2500' -> {0: 0.75, 1: 0.25}."""
    out = {}
    for part in text.split(","):
        node, frac = part.split(":")
        out[int(node)] = float(frac)
    return out


def online_nodes() -> list[int]:
    path = Path("/sys/devices/system/node/online")
    nodes: list[int] = []
    for part in path.read_text().strip().split(","):
        lo, _, hi = part.partition("-")
        nodes.extend(range(int(lo), int(hi or lo) + 1))
    return nodes


def l3_group(cpu: int) -> int:
    """The numbering of ns_topo.h: distinct level-3 shared_cpu_list values sorted by lowest CPU."""
    groups = set()
    mine = None
    for entry in os.listdir("/sys/devices/system/cpu"):
        if not (entry.startswith("cpu") and entry[3:].isdigit()):
            continue
        cache = f"/sys/devices/system/cpu/{entry}/cache"
        for index in os.listdir(cache) if os.path.isdir(cache) else []:
            try:
                with open(f"{cache}/{index}/level") as f:
                    if f.read().strip() != "3":
                        continue
                with open(f"{cache}/{index}/shared_cpu_list") as f:
                    shared = f.read().strip()
            except OSError:
                continue
            groups.add(shared)
            if entry == f"cpu{cpu}":
                mine = shared
    if mine is None:
        return -1

    def lowest(text: str) -> int:
        return int(text.split(",")[0].split("-")[0])
    return sorted(groups, key=lowest).index(mine)


def node_of(cpu: int) -> int:
    for entry in os.listdir(f"/sys/devices/system/cpu/cpu{cpu}"):
        if entry.startswith("node") and entry[4:].isdigit():
            return int(entry[4:])
    return 0


IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def cannot_check(reason: str) -> None:
    """A check this machine cannot make: skipped with the reason on a user's machine, a failure
    in CI, whose machine is set up to make every required check."""
    if IN_CI:
        pytest.fail(f"{reason} (CI must be able to run this check)")
    pytest.skip(reason)


def weights_folder(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A constructed weighted-interleave folder in the kernel's layout (node0 at 1, `auto` true, as
    on Linux 6.16 on) and the environment that points the kernels at it and at a state file of its
    own: no test writes the host's weights, since on 6.16 on writing one turns the automatic mode
    off and writing `auto` back may be refused until a reboot. The kernels still set weighted
    interleave for real (mbind), so a kernel without it cannot make the check."""
    if not Path("/sys/kernel/mm/mempolicy/weighted_interleave").is_dir():
        cannot_check("no weighted interleave on this kernel (Linux >= 6.9): weights cannot be checked")
    folder = tmp_path / "weighted_interleave"
    folder.mkdir()
    (folder / "node0").write_text("1\n")
    (folder / "auto").write_text("true\n")
    return folder, {"NUMASWEEP_WEIGHTS_DIR": str(folder), "NUMASWEEP_WEIGHTS_STATE": str(tmp_path / "w.state")}
