#!/usr/bin/env python3
"""Benchmark the measurement kernels against a reference and against their own targets.

Run from the repository root (the tests never run it: it takes minutes and its numbers
depend on the machine):

    .venv/bin/python bench/kernels.py [--reps 3] [--array-bytes 160000000] [--keep DIR]

1. numa_bandwidth vs likwid-bench (Debian's `likwid`): STREAM triad, copy and read-only,
   1 and 2 threads, the same bytes touched by both; prints ours/likwid.
2. numa_latency at 16 KiB, 1 MiB, 16 MiB, 256 MiB and 1 GiB with 4k and THP pages: median
   ns per load and the spread of the samples, (max - min) / median.
3. The time to build the pointer-chase cycle over 4 GiB (numa_latency --self-test).
4. The wall time of the seed's sweep `numa_latency --size=1-1024` for one rank.

Targets (printed, never asserted): bandwidth within 3% of likwid-bench; latency spread under
2% at 256 MiB and above; the 4 GiB cycle built in under 3 s; the seed sweep under 60 s.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "workflow"))

from numasweep.errors import NumasweepError  # noqa: E402
from numasweep.io import read_csv  # noqa: E402
from numasweep.units import format_size  # noqa: E402

BIN = REPO / "build" / "bin"
LATENCY_SIZES = ["16K", "1M", "16M", "256M", "1G"]
CYCLE_BYTES = 4 << 30
CHASE_SLOT_BYTES = 64


@dataclass(frozen=True)
class StreamKernel:
    """One of our kernels and its likwid-bench counterpart, with the arrays each touches.

    Both count bytes the STREAM way (every load and store once, no write-allocate), so the
    two MB/s figures are comparable as they stand."""

    ours: str           # numa_bandwidth --kernels value and CSV `kernel`
    likwid: str         # likwid-bench test without the SIMD suffix
    arrays: int         # arrays touched per iteration = likwid streams
    formula: str


KERNELS = [
    StreamKernel("triad", "stream", 3, "a = b + s*c"),   # likwid's `triad` is the 4-array a = b*c + d
    StreamKernel("copy", "copy", 2, "a = b"),
    StreamKernel("read", "load", 1, "sum += a"),
]


def fail(message: str) -> NoReturn:
    raise NumasweepError(message)


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout)
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        fail(f"`{' '.join(cmd)}` exited {proc.returncode}: {last}")
    return proc


def likwid_variants() -> list[str]:
    """SIMD flavours of likwid's kernels this CPU runs, scalar first; the faster is the reference."""
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    variants = [""]
    if "avx" in flags:
        variants.append("_avx")
    elif "sse2" in flags:
        variants.append("_sse")
    return variants


def likwid_mb_s(test: str, working_set_bytes: int, threads: int) -> float:
    """likwid-bench MByte/s (10^6 bytes/s) over the whole run; likwid's kB are 1000 bytes."""
    if working_set_bytes % 1000:
        fail(f"working set {working_set_bytes} bytes is not a whole number of likwid kB (1000 bytes)")
    proc = run(["likwid-bench", "-t", test, "-w", f"S0:{working_set_bytes // 1000}kB:{threads}"])
    match = re.search(r"^MByte/s:\s+([0-9.]+)", proc.stdout, re.MULTILINE)
    if not match:
        fail(f"likwid-bench -t {test}: no 'MByte/s:' line in its output")
    return float(match.group(1))


def ours_mb_s(kernel: StreamKernel, array_bytes: int, threads: int, workdir: Path) -> tuple[float, float]:
    """numa_bandwidth's best and average MB/s (10^6 bytes/s) for one kernel, sequential pattern."""
    out = workdir / f"bw-{kernel.ours}-{threads}.csv"
    env = {"OMP_NUM_THREADS": str(threads), "OMP_PLACES": "cores", "OMP_PROC_BIND": "close"}
    run([str(BIN / "numa_bandwidth"), f"--kernels={kernel.ours}", "--pattern=sequential",
         f"--array-size={array_bytes // 1024}K", "--ntimes=20", "--quiet", f"--csv={out}"], env=env)
    table = read_csv(out, required=["kernel", "pattern", "threads", "array_bytes", "best_mb_s", "avg_mb_s", "validation"])
    rows = table[(table["kernel"] == kernel.ours) & (table["pattern"] == "sequential")]
    if len(rows) != 1:
        fail(f"{out}: expected one sequential {kernel.ours} row, found {len(rows)}")
    row = rows.iloc[0]
    if int(row["array_bytes"]) != array_bytes or int(row["threads"]) != threads:
        fail(f"{out}: ran {row['array_bytes']} bytes x {row['threads']} threads, asked {array_bytes} x {threads}")
    if row["validation"] != "pass":
        fail(f"{out}: numa_bandwidth {kernel.ours} failed its own validation")
    return float(row["best_mb_s"]), float(row["avg_mb_s"])


def bandwidth_section(array_bytes: int, reps: int, workdir: Path) -> list[str]:
    print(f"\n== numa_bandwidth vs likwid-bench: {format_size(array_bytes)} per array "
          f"({array_bytes} bytes), best of {reps} runs each, MB/s = 10^6 bytes/s ==")
    print("ours: best and average of 20 iterations (STREAM); likwid: its whole-run average, "
          "best SIMD flavour; ratio = ours / likwid")
    header = f"{'kernel':<20} {'thr':>3} {'ours best':>10} {'ours avg':>10} {'likwid':>10} {'flavour':>12} " \
             f"{'best/lk':>8} {'avg/lk':>8}"
    print(header)
    verdicts = []
    variants = likwid_variants()
    for kernel in KERNELS:
        working_set = kernel.arrays * array_bytes
        for threads in (1, 2):
            best = avg = 0.0
            reference = {v: 0.0 for v in variants}
            # Alternating ours and likwid spreads slow phases of a shared machine over both.
            for _ in range(reps):
                b, a = ours_mb_s(kernel, array_bytes, threads, workdir)
                best, avg = max(best, b), max(avg, a)
                for variant in variants:
                    reference[variant] = max(reference[variant],
                                             likwid_mb_s(kernel.likwid + variant, working_set, threads))
            flavour = max(reference, key=reference.get)
            lk = reference[flavour]
            name = f"{kernel.ours} ({kernel.formula})"
            print(f"{name:<20} {threads:>3} {best:>10.0f} {avg:>10.0f} {lk:>10.0f} "
                  f"{kernel.likwid + flavour:>12} {best / lk:>8.3f} {avg / lk:>8.3f}")
            # STREAM reports the best repetition; the average is shown beside it because
            # likwid's figure is a whole-run average.
            verdicts.append(f"bandwidth {kernel.ours} {threads}T: best/likwid {best / lk:.3f} "
                            f"({'within' if abs(best / lk - 1) <= 0.03 else 'OUTSIDE'} 3%), "
                            f"avg/likwid {avg / lk:.3f}")
    return verdicts


def pinned_rank() -> list[str]:
    """numactl prefix binding the single rank to one CPU (the last one allowed, usually the
    quieter), so that it neither migrates between samples nor shares its cache with another rank."""
    if shutil.which("numactl") is None:
        fail("numactl not found: apt-get install numactl")
    return ["numactl", f"--physcpubind={max(os.sched_getaffinity(0))}", "--"]


def latency_section(workdir: Path) -> list[str]:
    print(f"\n== numa_latency, one rank: median ns per dependent load, spread = (max - min) / median ==")
    print(f"{'pages':<5} {'size':>6} {'median ns':>10} {'min ns':>9} {'max ns':>9} {'spread':>8} {'samples':>7}")
    verdicts = []
    for pages in ("4k", "thp"):
        out = workdir / f"lat-{pages}.csv"
        run([*pinned_rank(), str(BIN / "numa_latency"), f"--size={','.join(LATENCY_SIZES)}", f"--pages={pages}", "--quiet",
             f"--csv={out}"])
        table = read_csv(out, required=["size_bytes", "latency_ns_median", "latency_ns_min", "latency_ns_max",
                                        "samples", "page_size"])
        for _, row in table.sort_values("size_bytes").iterrows():
            median, low, high = (float(row[c]) for c in ("latency_ns_median", "latency_ns_min", "latency_ns_max"))
            spread = (high - low) / median
            size = int(row["size_bytes"])
            print(f"{pages:<5} {format_size(size):>6} {median:>10.2f} {low:>9.2f} {high:>9.2f} "
                  f"{spread:>7.2%} {int(row['samples']):>7}")
            if size >= 256 << 20:
                verdicts.append(f"latency spread {pages} {format_size(size)}: {spread:.2%} "
                                f"({'under' if spread < 0.02 else 'NOT under'} 2%)")
    return verdicts


def cycle_section() -> list[str]:
    print(f"\n== pointer-chase cycle over {format_size(CYCLE_BYTES)} (numa_latency --self-test) ==")
    verdicts = []
    for pages in ("4k", "thp"):
        proc = run([*pinned_rank(), str(BIN / "numa_latency"), f"--self-test={CYCLE_BYTES // CHASE_SLOT_BYTES}", f"--pages={pages}"])
        match = re.search(r"build time ([0-9.]+) s", proc.stdout)
        if not match or "returns to start: ok" not in proc.stdout:
            fail(f"numa_latency --self-test ({pages}): no successful build time in its output")
        seconds = float(match.group(1))
        print(f"{pages:<5} build {seconds:.3f} s   ({proc.stdout.strip().splitlines()[0]})")
        verdicts.append(f"cycle build 4 GiB {pages}: {seconds:.2f} s ({'under' if seconds < 3 else 'NOT under'} 3 s)")
    return verdicts


def sweep_section(workdir: Path) -> list[str]:
    print("\n== seed sweep: numa_latency --size=1-1024, one rank ==")
    start = time.monotonic()
    run([*pinned_rank(), str(BIN / "numa_latency"), "--size=1-1024", "--quiet", f"--csv={workdir / 'sweep.csv'}"])
    seconds = time.monotonic() - start
    rows = len(read_csv(workdir / "sweep.csv", required=["size_bytes"]))
    print(f"wall time {seconds:.1f} s for {rows} sizes")
    return [f"seed sweep --size=1-1024: {seconds:.1f} s ({'under' if seconds < 60 else 'NOT under'} 60 s)"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="runs of each bandwidth pair; the best counts")
    parser.add_argument("--array-bytes", type=int, default=160_000_000,
                        help="bytes per array; a multiple of 1000 and 1024 so both tools get it exactly "
                             "(default 160000000: over 4x a 32 MiB L3)")
    parser.add_argument("--keep", type=Path, help="keep the kernels' CSVs in this folder")
    parser.add_argument("--skip", choices=["bandwidth", "latency", "cycle", "sweep"], action="append", default=[],
                        help="leave a section out (repeatable)")
    args = parser.parse_args(argv)
    try:
        if args.reps < 1 or args.array_bytes <= 0 or args.array_bytes % 8000:
            fail("--reps must be >= 1 and --array-bytes a positive multiple of 8000 (whole likwid kB, "
                 "whole doubles)")
        if args.array_bytes % 1024:
            fail(f"--array-bytes {args.array_bytes} is not a whole number of KiB; numa_bandwidth takes K units")
        if shutil.which("likwid-bench") is None and "bandwidth" not in args.skip:
            fail("likwid-bench not found: apt-get install likwid (or --skip bandwidth)")
        build = subprocess.run(["make", "-C", str(REPO / "kernels"), "cpu"], capture_output=True, text=True)
        if build.returncode != 0:
            fail(f"make -C kernels cpu failed: {(build.stderr.strip() or build.stdout.strip()).splitlines()[-1]}")
        workdir = args.keep or Path(tempfile.mkdtemp(prefix="numasweep-bench-"))
        workdir.mkdir(parents=True, exist_ok=True)
        # Every figure below is only as good as the machine was quiet: say how busy it was.
        print(f"host {os.uname().nodename}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} "
              f"at start; CSVs in {workdir}")
        verdicts: list[str] = []
        if "bandwidth" not in args.skip:
            verdicts += bandwidth_section(args.array_bytes, args.reps, workdir)
        if "latency" not in args.skip:
            verdicts += latency_section(workdir)
        if "cycle" not in args.skip:
            verdicts += cycle_section()
        if "sweep" not in args.skip:
            verdicts += sweep_section(workdir)
        print(f"\n== targets (load average {os.getloadavg()[0]:.2f} at the end) ==")
        for line in verdicts:
            print(line)
        if not args.keep:
            shutil.rmtree(workdir)
    except NumasweepError as exc:
        print(f"kernels.py: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
