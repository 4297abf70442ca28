"""The provenance record of one benchmark job: what ran, where, with which build, when.

Written next to the job's CSV as `<job-id>.json` once the kernel has exited successfully, by
`python -m numasweep run-job` (runjob.py), which also archives a copy; by hand:

    python -m numasweep.running.provenance --job-id ID --start ISO --launch "LINE" --grid JSON \
        --kernel build/bin/numa_latency --topology results/x/topology.json \
        --csv results/x/latency/ID.csv -o results/x/latency/ID.json

The record is written to a temporary name and renamed, like the kernels' CSVs, so an
interrupted job never leaves a half-written record.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from numasweep.core.version import __version__
from numasweep.core import firmware, system_state, topology
from numasweep.core.errors import NumasweepError
from numasweep.core.io import atomic_write_text
from numasweep.core import isa

# Environment variables that change what a benchmark measures or where it ran.
ENV_PREFIXES = ("OMP_", "GOMP_", "SLURM_", "OMPI_", "PMI_", "NUMASWEEP_")
# Columns the aggregated tables take from the record (see aggregate.py).
# `command` is the launch line: the report lists the distinct ones from the tables alone.
COLUMNS = ("command", "host", "start", "end", "slurm_job_id", "kernel_commit", "topology_digest")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def kernel_build(kernel: Path) -> dict[str, Any]:
    """The kernel's own account of its build (`--version`: commit and flags) plus its hash, and
    the CPU it was built for (isa.target: the build host's CPU model and the instruction sets
    compiled for; None for a kernel without them, e.g. gpu_xfer)."""
    built = isa.target(kernel)
    info: dict[str, Any] = {"path": str(kernel), "sha256": sha256(kernel),
                            "build_cpu": built["cpu"] if built else None, "isa": built["isa"] if built else None}
    try:
        proc = subprocess.run([str(kernel), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        info["version"] = None
        info["version_error"] = str(exc)
        return info
    text = (proc.stdout or proc.stderr).strip()
    info["version"] = text if proc.returncode == 0 else None
    if proc.returncode != 0:
        info["version_error"] = text.splitlines()[0] if text else f"exit {proc.returncode}"
    info["commit"], info["flags"] = parse_version(text) if proc.returncode == 0 else (None, None)
    return info


def parse_version(text: str) -> tuple[str | None, str | None]:
    """(commit, flags) from a kernel's --version: `NAME numasweep COMMIT` then `built with: FLAGS`."""
    lines = text.splitlines()
    first = lines[0].split() if lines else []
    commit = first[-1] if len(first) >= 3 else None
    flags = next((ln.split(":", 1)[1].strip() for ln in lines if ln.strip().startswith("built with:")), None)
    return commit, flags


def repo_commit(root: Path) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except OSError:
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def setups(records: list[Path], launch: str) -> list[dict[str, Any]]:
    """What a job's provenance keeps of the Setups it ran after (planning.grid.Setup, e.g.
    bandwidth's calibration): each record whose file (`reads`) its launch line names, whole,
    with the record's path and digest; an unreadable record in one line."""
    words = set(shlex.split(launch))
    out = []
    for path in records:
        try:
            rec = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise NumasweepError(f"{path}: not a readable setup record ({exc}); delete it and rerun snakemake, "
                                 "which makes it again") from None
        reads = rec.get("reads") if isinstance(rec, dict) else None
        if reads is None or any(w.endswith(f"={reads}") or w == reads for w in words):
            out.append({"record": str(path), "sha256": sha256(Path(path)), **(rec if isinstance(rec, dict) else {})})
    return out


def record(
    job_id: str,
    start: str,
    launch: str,
    grid: dict[str, Any],
    kernel: Path,
    topology_path: Path,
    csv: Path,
    end: str | None = None,
    csv_name: Path | None = None,
    host_lock_wait_s: float | None = None,
    sys_root: Path = Path("/sys"),
    quality: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of one finished job; `csv` is the table as written (it may still carry its
    temporary name), `csv_name` the name it is published under (default: `csv`);
    `host_lock_wait_s` the seconds the job waited for the machine before `start` (run-job's host
    lock; None when not run through it); `sys_root` the sysfs the firmware's view is read from;
    `quality` the job's verdict, reason and tries (verdict.py; run-job decides it)."""
    csv_name = csv_name or csv
    if not csv.exists():
        raise NumasweepError(
            f"{csv}: the kernel exited without writing its CSV; see the job's .log next to it"
        )
    if not kernel.exists():
        raise NumasweepError(f"{kernel}: no such kernel; run `make -C kernels`")
    build = kernel_build(kernel)
    return {
        "job_id": job_id,
        "bench": csv_name.parent.name,
        "grid": grid,
        "command": launch,
        "argv": shlex.split(launch),
        "host": socket.gethostname(),
        "start": start,
        "end": end
        or dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "host_lock_wait_s": None if host_lock_wait_s is None else round(host_lock_wait_s, 3),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "environment": {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)},
        "kernel": build,
        "kernel_commit": build.get("commit"),
        "repo_commit": repo_commit(Path(__file__).resolve().parent),
        "numasweep_version": __version__,
        "topology": str(topology_path),
        "topology_digest": topology.load(topology_path).digest(),
        "csv": str(csv_name),
        "csv_sha256": sha256(csv),
        "python": sys.version.split()[0],
        # What the machine was set to while it measured (numasweep.core.system_state).
        "system": system_state.collect().as_record(),
        # HMAT, memory tiers and the weighted-interleave weights and mode while it measured: the
        # weights are a setting, so each job records its own (numasweep.core.firmware).
        "firmware": firmware.read(sys_root).to_dict(),
        **({"quality": quality} if quality is not None else {}),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m numasweep.running.provenance", description=__doc__.splitlines()[0])
    ap.add_argument("--job-id", required=True)
    ap.add_argument("--start", required=True, help="ISO time the job started")
    ap.add_argument("--launch", required=True, help="the launch line, as run")
    ap.add_argument("--grid", required=True, help="the job's grid values as JSON")
    ap.add_argument("--kernel", required=True, type=Path)
    ap.add_argument("--topology", required=True, type=Path)
    ap.add_argument("--csv", required=True, type=Path)
    ap.add_argument("-o", "--output", required=True, type=Path)
    args = ap.parse_args(argv)
    try:
        grid = json.loads(args.grid)
    except json.JSONDecodeError as exc:
        raise NumasweepError(f"--grid is not JSON ({exc})") from None
    rec = record(args.job_id, args.start, args.launch, grid, args.kernel, args.topology, args.csv)
    atomic_write_text(args.output, json.dumps(rec, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except NumasweepError as exc:
        print(f"numasweep: error: {exc}", file=sys.stderr)
        sys.exit(2)
