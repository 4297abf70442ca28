#!/usr/bin/env python3
"""Benchmark the measurement kernels against the reference tools, side by side in one run.

Run from the repository root (the tests never run it: it takes many minutes and its numbers
belong to the machine and to how busy it was):

    .venv/bin/python bench/kernels.py [--rounds 5] [--stream-src stream.c] [--multichase PATH] [--shapes]

1. bandwidth: numa_bandwidth (regular and non-temporal stores, each kernel in the code shape its
   calibration picks; with --shapes also every shape) against STREAM built two ways (as gcc
   builds it, copy -> memcpy, which streams with non-temporal stores only above glibc's
   threshold; and with its loops kept as loops), and likwid-bench: every flavour of its kernels
   this CPU runs (scalar, SSE, AVX, AVX-512, with FMA where listed), ordinary and `_mem`
   non-temporal, compared with the fastest flavour of each; 1 and 2 threads (--threads).
2. latency: numa_latency against bench/ref_chase.c (the same definition, written apart) and
   multichase (64-byte stride, full-buffer random), 4k and THP pages, 16 KiB to 4 GiB; the
   spread of the samples of each, and the set-up times (first touch, cycle build).
3. cycle: the time to build the pointer-chase cycle over 4 GiB (numa_latency --self-test).
4. sweep: the wall time of the seed's sweep `numa_latency --size=1-1024` for one rank.

Bandwidth runs in pairs: ours and one reference back to back (the order alternating), one
ratio per pair, a 95% interval over the pairs, pairs added until it is within +-2% and decides
the verdict (or, at the border itself, within +-1%) or a cap;
the verdict is "within 3%", "below"/"above" (all of the interval) or "undecided". Latency runs
the tools interleaved, round by round, so that a slow phase of a shared machine falls on all of
them; printed: the ratio ours / reference (of the medians over the rounds) with the range of the
per-round ratios, and the load average. A reference that is not present is reported as NOT RUN.
Targets (printed, never asserted): within 3%; latency spread at or under 2% from 256 MiB on,
under 5% below.

Also: --short (read, copy, triad, regular and non-temporal), --max-pairs, --budget, --ntimes,
--shapes (our kernels in every code shape beside likwid's flavours), --pages 4k|thp|4k,thp
(latency), --baseline DIR (latency: an earlier build's numa_latency in the same rounds, to
compare before and after a change), --bin DIR (our kernels from DIR, not built).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, NoReturn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "workflow"))

from numasweep.core.errors import NumasweepError  # noqa: E402
from numasweep.core.io import read_csv  # noqa: E402
from numasweep.core.units import format_size, parse_size  # noqa: E402
from numasweep.statistics import stats  # noqa: E402

BIN = REPO / "build" / "bin"
LATENCY_SIZES = "16K,64K,256K,1M,4M,16M,64M,256M,1G,4G"
CYCLE_BYTES = 4 << 30
CHASE_SLOT_BYTES = 64
TARGET = 0.03          # within 3% of the reference
SPREAD_TARGET = 0.02   # (max - min) / median from 256 MiB on
SMALL_SPREAD_TARGET = 0.05  # below 256 MiB (on a quiet machine)
OMP_ENV = {"OMP_PLACES": "cores", "OMP_PROC_BIND": "close"}


def fail(message: str) -> NoReturn:
    raise NumasweepError(message)


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=timeout)
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        fail(f"`{' '.join(map(str, cmd))}` exited {proc.returncode}: {last}")
    return proc


def load() -> float:
    return os.getloadavg()[0]


def build_kernels(target: str = "cpu") -> None:
    """make -C kernels TARGET, with the default flags; a failure ends the script in one line."""
    build = subprocess.run(["make", "-C", str(REPO / "kernels"), target], capture_output=True, text=True)
    if build.returncode != 0:
        fail(f"make -C kernels {target} failed: {(build.stderr.strip() or build.stdout.strip()).splitlines()[-1]}")


def print_targets(verdicts: list[str]) -> None:
    print(f"\n== targets (load average {load():.2f} at the end) ==")
    for line in verdicts:
        print(line)


def say_error(script: str, exc: NumasweepError) -> int:
    print(f"{script}: error: {exc}", file=sys.stderr)
    return 2


# ---------------------------------------------------------------- references


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


# likwid-bench's kernels compared: a test, its non-temporal `_mem` form, and their instruction-set
# flavours (copy, copy_sse, copy_avx, copy_avx512, stream_avx_fma, sum_avx512, ...). load_mem is left out:
# its loads, not its stores, are non-temporal.
LIKWID_FLAVOUR = re.compile(r"^(?P<test>copy|stream|load|store|sum)(?P<mem>_mem)?(?P<isa>_sse|_avx512|_avx)?(?P<fma>_fma)?$")
LIKWID_ISA_FLAG = {"_sse": "sse2", "_avx": "avx", "_avx512": "avx512f"}
LIKWID_STREAMS = {"stream": 3, "copy": 2, "load": 1, "sum": 1, "store": 1}


def likwid_flavours() -> dict[str, list[str]]:
    """The flavours `likwid-bench -a` lists that this CPU runs, by group: "copy", "copy_mem",
    "stream", "stream_mem", "load", "store", "store_mem" -> e.g. ["copy", "copy_avx", ...]."""
    flags = cpu_flags()
    groups: dict[str, list[str]] = defaultdict(list)
    for line in run(["likwid-bench", "-a"]).stdout.splitlines():
        m = LIKWID_FLAVOUR.match(line.split(" - ", 1)[0].strip())
        if not m or (m["test"] == "load" and m["mem"]):
            continue
        if (m["isa"] and LIKWID_ISA_FLAG[m["isa"]] not in flags) or (m["fma"] and "fma" not in flags):
            continue
        groups[m["test"] + (m["mem"] or "")].append(m.group(0))
    return dict(groups)


def memcpy_threshold(binary: Path) -> tuple[int | None, str]:
    """glibc's x86_non_temporal_threshold, as the dynamic loader of `binary` reports it here
    (glibc 2.33 or later, GLIBC_TUNABLES included): a memcpy of at least this many bytes streams
    with non-temporal stores, a shorter one uses ordinary stores. glibc derives it from the
    shared cache it detects (3/4 of it in 2.36), so it differs between machines. (None, why)
    where the loader cannot say."""
    interp = re.search(r"program interpreter: (\S+?)\]", run(["readelf", "-l", str(binary)]).stdout)
    if not interp:
        return None, f"glibc's non-temporal threshold unknown ({binary.name} names no loader)"
    out = subprocess.run([interp.group(1), "--list-tunables"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"glibc\.cpu\.x86_non_temporal_threshold:\s*(0x[0-9a-f]+|\d+)", out)
    if not m:
        return None, f"glibc's non-temporal threshold unknown ({interp.group(1)} --list-tunables does not give it)"
    return int(m.group(1), 0), f"glibc's non-temporal threshold {format_size(int(m.group(1), 0))}"


def build_stream(src: Path, ref_dir: Path, elements: int, loops: bool, ntimes: int = 20) -> Path:
    """STREAM as users build it (gcc -O3 -march=native -fopenmp), sized to our arrays. gcc turns
    its copy loop into memcpy, one call per thread's part (glibc streams a call of at least its
    non-temporal threshold with non-temporal stores: `memcpy_threshold`); with loops=True -fno-tree-loop-distribute-patterns keeps every kernel a loop of ordinary stores."""
    name = "stream_loops" if loops else "stream_gcc"
    out = ref_dir / f"{name}_{elements}_{ntimes}"
    if not out.exists():
        cmd = ["gcc", "-O3", "-march=native", "-fopenmp", f"-DSTREAM_ARRAY_SIZE={elements}", f"-DNTIMES={ntimes}",
               *(["-fno-tree-loop-distribute-patterns"] if loops else []), str(src), "-o", str(out)]
        if elements * 8 * 3 >= 2 << 30:
            cmd.insert(-3, "-mcmodel=medium")  # static arrays over 2 GiB
        run(cmd)
    return out


# ---------------------------------------------------------------- bookkeeping


class Rounds:
    """Figures per (row, tool), one per round, and the 1-minute load average of each round."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.loads: list[float] = []
        self.shapes: dict[str, list[str]] = defaultdict(list)  # our code shape per row, one per round

    def add(self, row: str, tool: str, value: float) -> None:
        self.values[(row, tool)].append(value)

    def has(self, row: str, tool: str) -> bool:
        return bool(self.values.get((row, tool)))

    def median(self, row: str, tool: str) -> float:
        return statistics.median(self.values[(row, tool)])

    def ratio(self, ours: tuple[str, str], ref: tuple[str, str]) -> tuple[float, float, float]:
        """Ratio of the medians of two (row, tool) series, and the range of the per-round ratios."""
        a, b = self.values[ours], self.values[ref]
        per_round = [x / y for x, y in zip(a, b)]
        return statistics.median(a) / statistics.median(b), min(per_round), max(per_round)


def interleave(rounds: int, tools: list[tuple[str, Callable[[], None]]], record: Rounds) -> None:
    """Every tool once per round, the order rotated each round."""
    for r in range(rounds):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for _, measure in order:
            measure()
        record.loads.append(load())
        print(f"  round {r + 1}/{rounds} done, load average {record.loads[-1]:.2f}", flush=True)


def verdict(ratio: float) -> str:
    return "within 3%" if abs(ratio - 1) <= TARGET else "OUTSIDE 3%"


# ---------------------------------------------------------------- bandwidth

# What a pair compares: (our row, the statistic of ours, reference tool, its figure). Like for
# like, bytes counted the STREAM way by all (no write-allocate traffic). Against STREAM our best
# repetition is compared with its best; likwid reports a whole-run rate, so our average over the
# repetitions is compared with it. A likwid figure is a group of flavours ("stream" = stream,
# stream_sse, stream_avx_fma, ...): the pair runs the group's fastest flavour of a scouting pass.
BANDWIDTH_PAIRS = [
    ("triad regular", "best", "STREAM loops", "Triad"),
    ("copy regular", "best", "STREAM loops", "Copy"),
    ("triad regular", "best", "STREAM gcc", "Triad"),
    ("copy nt", "best", "STREAM gcc", "Copy"),      # or copy regular: `memcpy_threshold`
    ("triad regular", "avg", "likwid", "stream"),
    ("triad nt", "avg", "likwid", "stream_mem"),
    ("copy regular", "avg", "likwid", "copy"),
    ("copy nt", "avg", "likwid", "copy_mem"),
    ("read", "avg", "likwid", "load"),
    ("read", "avg", "likwid", "sum"),      # likwid's form of our read: partial sums of the loads
    ("write regular", "avg", "likwid", "store"),
    ("write nt", "avg", "likwid", "store_mem"),
]
SHORT_ROWS = ("copy regular", "copy nt", "triad regular", "triad nt", "read")   # --short
HALF_WIDTH = 0.02      # pairs are added until every ratio's 95% interval is within +-2% and decides
BORDER_HALF_WIDTH = 0.01   # ...or, where the ratio sits at 0.97 or 1.03 itself, within +-1%...
MIN_PAIRS = 3          # ...with at least this many pairs


def default_array_bytes() -> int:
    """numa_bandwidth's own default (4x the last-level cache), read from a dry run of its CSV."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probe.csv"
        run([BIN / "numa_bandwidth", "--kernels=read", "--ntimes=2", "--quiet", f"--csv={out}"],
            env={"OMP_NUM_THREADS": "1"})
        return int(read_csv(out, required=["array_bytes"])["array_bytes"].iloc[0])


OUR_ROWS = ("copy regular", "copy nt", "triad regular", "triad nt", "read", "write regular", "write nt")


def row_name(kernel: str, stores: str) -> str:
    return kernel if kernel == "read" else f"{kernel} {stores}"


def pair_verdict(ratio: stats.Interval) -> str:
    """Within 3% only when the whole 95% interval is; below or above only when all of it is."""
    if not (math.isfinite(ratio.low) and math.isfinite(ratio.high)):
        return "undecided (one pair: no interval)"
    span = f"{ratio.estimate:.3f} [{ratio.low:.3f}-{ratio.high:.3f}]"
    if 1 - TARGET <= ratio.low and ratio.high <= 1 + TARGET:
        return f"within 3%: {span}"
    if ratio.high < 1 - TARGET:
        return f"below by {1 - ratio.estimate:.1%}: {span}"
    if ratio.low > 1 + TARGET:
        return f"above by {ratio.estimate - 1:.1%}: {span}"
    return f"undecided: {span}"


def pair_interval(ratios: list[float]) -> stats.Interval:
    """The ratio's 95% interval over the pairs: a t interval on the mean log ratio (pairs - 1 df);
    the pairs are independent (each runs both tools afresh, back to back)."""
    logs = [math.log(r) for r in ratios]
    if len(logs) < 2:
        return stats.Interval.unknown(ratios[0], "one pair")
    return stats.t_interval(statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(len(logs)), len(logs) - 1)


def frequency_behaviour() -> str:
    """How the CPUs' clock may move, where Linux says: cpufreq driver, governor and the range of
    the current frequencies, turbo/boost; else the 'cpu MHz' of /proc/cpuinfo (a VM's is usually
    its host's nominal clock)."""
    cpufreq = Path("/sys/devices/system/cpu/cpu0/cpufreq")
    parts = []
    if cpufreq.is_dir():
        for name in ("scaling_driver", "scaling_governor"):
            if (cpufreq / name).exists():
                parts.append(f"{name.split('_')[1]} {(cpufreq / name).read_text().strip()}")
        cur = [int(p.read_text()) for p in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq")]
        if cur:
            parts.append(f"current {min(cur) / 1e6:.2f}-{max(cur) / 1e6:.2f} GHz over {len(cur)} CPUs")
        for knob, on in (("intel_pstate/no_turbo", "0"), ("cpufreq/boost", "1")):
            path = Path("/sys/devices/system/cpu") / knob
            if path.exists():
                parts.append(f"turbo {'on' if path.read_text().strip() == on else 'off'}")
    else:
        mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([0-9.]+)", Path("/proc/cpuinfo").read_text(), re.M)]
        parts.append("no cpufreq (frequency not controlled by this OS)" + (
            f", /proc/cpuinfo {min(mhz):.0f}-{max(mhz):.0f} MHz" if mhz else ""))
    return "; ".join(parts)


def omp_cpus(proc: subprocess.CompletedProcess[str]) -> str:
    """The CPU list of each OpenMP thread, from libgomp's OMP_DISPLAY_AFFINITY lines."""
    cpus = dict(re.findall(r"^omp thread (\d+) on CPUs (\S+)$", proc.stderr + proc.stdout, re.M))
    return " ".join(f"{t}:{cpus[t]}" for t in sorted(cpus, key=int)) or "not printed"


OMP_AFFINITY = {"OMP_DISPLAY_AFFINITY": "TRUE", "OMP_AFFINITY_FORMAT": "omp thread %n on CPUs %A"}


def likwid_run(test: str, working_set_bytes: int, threads: int, iterations: int | None = None) -> dict[str, str]:
    """likwid-bench's result lines ("MByte/s", "Time", "Data volume (Byte)", ...; MByte/s is
    10^6 bytes/s over its whole run, its kB are 1000 bytes) and the hardware threads it ran on."""
    proc = run(["likwid-bench", "-t", test, "-w", f"S0:{working_set_bytes // 1000}kB:{threads}",
                *(["-i", str(iterations)] if iterations else [])])
    out = dict(re.findall(r"^([A-Za-z][^:\n]*):\s+(\S+)", proc.stdout, re.M))
    if "MByte/s" not in out:
        fail(f"likwid-bench -t {test}: no 'MByte/s:' line in its output")
    out["cpus"] = ",".join(re.findall(r"Thread \d+ running on hwthread (\d+)", proc.stdout))
    return out


def likwid_wall_check(test: str, working_set_bytes: int, threads: int, rate_mb_s: float) -> str:
    """Does likwid-bench's own clock agree with the wall clock? Two runs, of 10 iterations per
    thread and of enough more to stream for about 3 s at the scouted rate: the extra bytes over the
    extra wall time is a rate no thread's timing can raise (start-up and initialisation cancel
    out, and their jitter, a second of first touch on a shared host, is small against 3 s); a
    reported rate far above it means the threads did not all stream for the whole of the reported
    time."""
    extra = max(20, math.ceil(3.0 * rate_mb_s * 1e6 / working_set_bytes))
    walls, volumes, reported = [], [], []
    for iterations in (10, 10 + extra):
        start = time.monotonic()
        out = likwid_run(test, working_set_bytes, threads, iterations)
        walls.append(time.monotonic() - start)
        volumes.append(float(out["Data volume (Byte)"]))
        reported.append(float(out["MByte/s"]))
    wall_rate = (volumes[1] - volumes[0]) / (walls[1] - walls[0]) / 1e6
    # Counting: every iteration moves the whole working set once, split among the threads.
    counted = volumes[1] / (float(out["Iterations per thread"]) * working_set_bytes)
    return (f"likwid-bench {test} clock check: reported {reported[1]:.0f} MB/s, wall clock over the extra "
            f"{extra} iterations ({walls[1] - walls[0]:.1f} s) {wall_rate:.0f} MB/s (reported / wall {reported[1] / wall_rate:.3f}); bytes counted "
            f"per iteration / working set {counted:.3f}")


class Pairs:
    """Per comparison (our row, our statistic, reference, figure): one ratio ours / reference per
    pair, and what each pair saw (load, our code shape)."""

    def __init__(self) -> None:
        self.ratios: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
        self.ours: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.refs: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.shapes: dict[str, list[str]] = defaultdict(list)
        self.loads: list[float] = []

    def interval(self, key: tuple[str, str, str, str]) -> stats.Interval:
        return pair_interval(self.ratios[key])

    def settled(self, key: tuple[str, str, str, str]) -> bool:
        values = self.ratios[key]
        if len(values) < MIN_PAIRS:
            return False
        ratio = self.interval(key)
        half = max(ratio.high / ratio.estimate - 1, 1 - ratio.low / ratio.estimate)
        decided = not pair_verdict(ratio).startswith("undecided")
        return half <= BORDER_HALF_WIDTH or (half <= HALF_WIDTH and decided)


def calibrate(array_bytes: int, workdir: Path) -> Path:
    """The workflow's calibration (numasweep.benches.bandwidth.calibration, rule calibrate): every
    shape in 7 interleaved rounds on one thread and these arrays, each kernel's shape decided with
    its interval; printed, and its shapes file returned for --shapes."""
    from numasweep.benches.bandwidth import calibration

    csv, out = workdir / "calibration.csv", workdir / "calibration.json"
    launch = (f"env OMP_NUM_THREADS=1 OMP_PLACES=cores OMP_PROC_BIND=close {BIN / 'numa_bandwidth'} --calibrate=7 "
              f"--array-size={array_bytes // 1024}K --csv={csv}.partial")
    env = {"PYTHONPATH": str(REPO / "workflow")}
    run([sys.executable, "-m", "numasweep", "run-setup", "--launch", launch, "--table", str(csv),
         "--log", str(workdir / "calibration.log")], env=env)
    run([sys.executable, "-m", "numasweep", "calibrate", "--table", str(csv), "--launch", launch,
         "--kernel", str(BIN / "numa_bandwidth"), "--outputs", str(out), str(workdir / "calibration.shapes")], env=env)
    rec = json.loads(out.read_text())
    print(f"calibration (7 rounds, 1 thread, as the workflow decides once per machine; load average {load():.2f}):")
    for d in rec["decisions"]:
        print(f"  {calibration.words(d)}")
    return workdir / "calibration.shapes"


def bandwidth_section(array_bytes: int, threads_list: list[int], stream_src: Path | None, ref_dir: Path,
                      workdir: Path, shapes: bool, likwid_groups: list[str] | None, rows: tuple[str, ...],
                      max_pairs: int, budget_s: float, ntimes: int, variant: str = "calibrated") -> list[str]:
    elements = array_bytes // 8
    print(f"\n== bandwidth: {format_size(array_bytes)} per array ({array_bytes} bytes), MB/s = 10^6 bytes/s "
          f"counted as STREAM does, load average {load():.2f} ==")
    print(f"each reference is paired with a run of ours just before or after it (the order alternates), so both "
          f"see the same seconds of the machine; pairs are added until every ratio's 95% interval is within "
          f"+-{HALF_WIDTH:.0%} and decides its verdict, or is within +-{BORDER_HALF_WIDTH:.0%} "
          f"({MIN_PAIRS} pairs at least), {max_pairs} pairs or {budget_s:.0f} s per thread count. "
          f"Against STREAM: best of {ntimes} repetitions on both sides; against likwid (a whole-run rate): "
          "our average over the repetitions, against likwid's fastest flavour of a scouting pass")
    print(f"CPU frequency: {frequency_behaviour()}")
    streams: dict[str, Path] = {}
    if stream_src:
        streams["STREAM gcc"] = build_stream(stream_src, ref_dir, elements, loops=False, ntimes=ntimes)
        streams["STREAM loops"] = build_stream(stream_src, ref_dir, elements, loops=True, ntimes=ntimes)
        calls = "<memcpy@plt>" in run(["objdump", "-d", streams["STREAM gcc"]]).stdout
        print(f"STREAM gcc {'calls memcpy' if calls else 'does NOT call memcpy here'} for copy; STREAM loops keeps "
              "every kernel a loop")
    threshold, source = memcpy_threshold(streams["STREAM gcc"]) if streams else (None, "")
    flavours = likwid_flavours() if shutil.which("likwid-bench") else {}
    if likwid_groups is not None:   # a group's name keeps the group, a flavour's name that flavour
        flavours = {g: [f for f in names if g in likwid_groups or f in likwid_groups] for g, names in flavours.items()}
        flavours = {g: names for g, names in flavours.items() if names}
    if flavours:
        print("likwid-bench flavours this CPU runs: " + "; ".join(f"{g}: {' '.join(f)}" for g, f in flavours.items()))
    verdicts = []
    shape_args = [f"--variant={variant}"]
    if variant == "calibrated":   # as the workflow runs them: one calibration, its shapes at every thread count
        shape_args = [f"--shapes={calibrate(array_bytes, workdir)}"]
    for threads in threads_list:
        env = {"OMP_NUM_THREADS": str(threads), **OMP_ENV}
        record = Pairs()
        # STREAM's copy is one memcpy per thread's part of the arrays: it streams with non-temporal
        # stores only from glibc's threshold on, and is compared with our copy of the same stores
        # (unknown threshold: with the non-temporal copy, as on most machines at 4x the LLC)
        part = array_bytes // threads
        streamed = threshold is None or part >= threshold
        pairs = [(row if (tool, figure) != ("STREAM gcc", "Copy") or streamed else "copy regular", stat, tool, figure)
                 for row, stat, tool, figure in BANDWIDTH_PAIRS]
        pairs = [p for p in pairs if p[0] in rows and (p[2] in streams or p[2] == "likwid" and p[3] in flavours)]
        print(f"\n-- {threads} thread{'s' if threads > 1 else ''}, load average {load():.2f}")
        if "STREAM gcc" in streams:
            print(f"STREAM gcc copy: memcpy of {format_size(part)} per thread, {'at or over' if streamed else 'under'} "
                  f"{source}: {'non-temporal' if streamed else 'regular'} stores, compared with our copy "
                  f"{'nt' if streamed else 'regular'}")

        def ours(needed: list[str], tag: str, *extra: str) -> tuple[dict[str, dict[str, float]], str]:
            kernels = sorted({r.split()[0] for r in needed})
            stores = sorted({r.split()[1] if " " in r else "regular" for r in needed})
            out = workdir / f"bw-{threads}-{tag}.csv"
            proc = run([BIN / "numa_bandwidth", f"--kernels={','.join(kernels)}", f"--stores={','.join(stores)}",
                        f"--array-size={array_bytes // 1024}K", f"--ntimes={ntimes}", "--quiet", f"--csv={out}",
                        *(extra or shape_args)], env={**env, **OMP_AFFINITY})
            table = read_csv(out, required=["kernel", "stores", "best_mb_s", "avg_mb_s", "validation", "array_bytes"])
            if (table["validation"] != "pass").any() or int(table["array_bytes"].iloc[0]) != array_bytes:
                fail(f"{out}: numa_bandwidth failed its validation or ran another size")
            got = {}
            for _, r in table.iterrows():
                name = row_name(r["kernel"], r["stores"]) + (f" {r['variant']}" if "--variant=all" in extra else "")
                got[name] = {"best": float(r["best_mb_s"]), "avg": float(r["avg_mb_s"])}
                record.shapes[name].append(str(r.get("variant", "unknown")))
            where = omp_cpus(proc)
            if where == "not printed" and "cpus" in table:   # libgomp prints no affinity for one thread
                where = f"cpus {table['cpus'].iloc[0]} (its CSV)"
            return got, where

        def reference(tool: str, figure: str) -> tuple[dict[str, float], str]:
            if tool == "likwid":
                nstreams = LIKWID_STREAMS[figure.split("_")[0]]
                out = likwid_run(figure, nstreams * array_bytes, threads)
                return {figure: float(out["MByte/s"])}, out["cpus"]
            proc = run([streams[tool]], env={"OMP_NUM_THREADS": str(threads), **OMP_ENV, **OMP_AFFINITY})
            rates = {m.group(1): float(m.group(2))
                     for m in re.finditer(r"^(Copy|Scale|Add|Triad):\s+([0-9.]+)", proc.stdout, re.M)}
            if "Solution Validates" not in proc.stdout or len(rates) != 4:
                fail(f"{streams[tool]}: no validated Copy/Scale/Add/Triad rates in its output")
            return rates, omp_cpus(proc)

        # Scouting: every likwid flavour once (the fastest of each group is the one paired), and
        # where each tool's threads run.
        best: dict[str, str] = {}
        scouted: dict[str, float] = {}
        for group in sorted({f for _, _, t, f in pairs if t == "likwid"}):
            for test in flavours[group]:
                try:
                    rate, cpus = reference("likwid", test)
                except NumasweepError as exc:   # likwid 5.2.2's stream_mem crashes on some CPUs
                    print(f"  likwid {test}: FAILED ({(re.findall(r'exited -?[0-9]+', str(exc)) or [str(exc)[:60]])[0]})")
                    continue
                scouted[test] = rate[test]
            ok = [t for t in flavours[group] if t in scouted]
            if ok:
                best[group] = max(ok, key=scouted.__getitem__)
                print(f"  likwid {group:<11} " + ", ".join(f"{t} {scouted[t]:.0f}" for t in ok) + f"  -> {best[group]}")
        pairs = [(r, s, t, best.get(f, f)) for r, s, t, f in pairs if t != "likwid" or f in best]
        placed = [f"ours {ours([pairs[0][0]], 'cpus')[1] if pairs else '-'}"]
        placed += [f"{tool} {reference(tool, 'Copy')[1]}" for tool in streams]
        placed += [f"likwid {likwid_run(next(iter(best.values())), 2 * array_bytes, threads)['cpus']}" if best else ""]
        print("  threads on CPUs (thread:CPUs): " + "; ".join(p for p in placed if p))
        for group, test in best.items():   # every paired flavour: a clock that runs ahead inflates its rate
            print("  " + likwid_wall_check(test, LIKWID_STREAMS[group.split("_")[0]] * array_bytes, threads,
                                           scouted[test]))
        if shapes:
            got, _ = ours(list(rows), "shapes", "--variant=all")
            print("  every shape of ours once, average MB/s: " + ", ".join(f"{k} {v['avg']:.0f}" for k, v in got.items()))

        # The pairs: one per reference run, grouped by the run (one STREAM run gives Copy and Triad).
        by_run: dict[tuple[str, str], list[tuple[str, str, str, str]]] = defaultdict(list)
        for key in pairs:
            by_run[(key[2], key[3])].append(key)
        started = time.monotonic()
        step = 0
        while step < max_pairs and time.monotonic() - started < budget_s:
            todo = [(run_key, keys) for run_key, keys in by_run.items() if not all(record.settled(k) for k in keys)]
            if not todo:
                break
            for i, ((tool, figure), keys) in enumerate(todo[step % len(todo):] + todo[:step % len(todo)]):
                order = ("ours", "ref") if (step + i) % 2 == 0 else ("ref", "ours")
                got: dict[str, dict[str, float]] = {}
                ref: dict[str, float] = {}
                for side in order:
                    if side == "ours":
                        got = ours([k[0] for k in keys], "pair")[0]
                    else:
                        ref = reference(tool, figure)[0]
                for row, stat, _, fig in keys:
                    record.ratios[(row, stat, tool, fig)].append(got[row][stat] / ref[fig])
                    record.ours[(row, stat)].append(got[row][stat])
                    record.refs[(tool, fig)].append(ref[fig])
            record.loads.append(load())
            step += 1
            print(f"  pair {step} done ({time.monotonic() - started:.0f} s), load average {record.loads[-1]:.2f}",
                  flush=True)

        print(f"{'ours':<14} {'stat':<4} {'reference':<28} {'ours MB/s':>10} {'ref MB/s':>10} {'pairs':>5}  "
              "verdict: ratio ours / reference [95% interval]")
        for key in pairs:
            row, stat, tool, figure = key
            if not record.ratios[key]:
                continue
            ref_name = f"likwid {figure}" if tool == "likwid" else f"{tool} {figure}"
            said = pair_verdict(record.interval(key))
            shape = "/".join(sorted(set(record.shapes[row])))
            print(f"{row:<14} {stat:<4} {ref_name:<28} {statistics.median(record.ours[(row, stat)]):>10.0f} "
                  f"{statistics.median(record.refs[(tool, figure)]):>10.0f} {len(record.ratios[key]):>5}  {said}")
            verdicts.append(f"bandwidth {row} {threads}T ({shape}) vs {ref_name}: {said} "
                            f"({len(record.ratios[key])} pairs, load {min(record.loads):.2f}-{max(record.loads):.2f})")
        (workdir / f"bw-pairs-{threads}.json").write_text(json.dumps(
            {"loads": record.loads, "shapes": record.shapes, "scouted": scouted,
             "ratios": {" | ".join(k): v for k, v in record.ratios.items()}}, indent=1))
        sys.stdout.flush()
    return verdicts


# ---------------------------------------------------------------- latency

def pinned_rank() -> list[str]:
    """numactl prefix binding the single rank to one CPU (the last one allowed, usually the
    quieter), so that it neither migrates between samples nor shares its cache with another rank."""
    if shutil.which("numactl") is None:
        fail("numactl not found: apt-get install numactl")
    return ["numactl", f"--physcpubind={max(os.sched_getaffinity(0))}", "--"]


def build_ref_chase(ref_dir: Path) -> Path:
    out = ref_dir / "ref_chase"
    src = REPO / "bench" / "ref_chase.c"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        run(["gcc", "-O2", "-o", out, src])
    return out


def multichase_binary(path: Path, program: str = "multichase") -> Path:
    """A built multichase (or its multiload, pingpong), or its source folder (a clone of
    github.com/google/multichase), built there with its own Makefile."""
    if path.is_dir():
        run(["make", "-C", path, program])
        path = path / program
    if not os.access(path, os.X_OK):
        fail(f"--multichase: '{path}' is not an executable; give the binary or its source folder")
    return path


def multichase_ns(binary: Path, size: int, pages: str) -> tuple[float, float, float]:
    """multichase -v: one line per 0.5 s sample (its first, warm, sample already dropped);
    returns median, min, max ns per load. 64-byte stride, TLB locality = the whole buffer
    (full-buffer random, like ours)."""
    proc = run([*pinned_rank(), binary, "-m", f"{size // 1024}k", "-s", "64", "-T", f"{size // 1024}k", "-n", "5",
                "-v", *(["-H"] if pages == "thp" else [])])
    samples = [float(m.group(1)) for m in re.finditer(r"avg=([0-9.]+)", proc.stdout)]
    if not samples:
        fail(f"{binary}: no 'avg=' sample lines in its -v output")
    return statistics.median(samples), min(samples), max(samples)


def ref_chase_ns(binary: Path, size: int, pages: str) -> dict[str, float]:
    proc = run([*pinned_rank(), binary, str(size), pages, "5", "0.5"])
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", proc.stdout)}


def latency_section(sizes: list[int], rounds: int, ref_dir: Path, multichase: Path | None, workdir: Path,
                    pages_list: list[str], baseline: Path | None = None) -> list[str]:
    print(f"\n== latency: median ns per dependent load, {rounds} interleaved rounds, one pinned thread, "
          f"load average {load():.2f} ==")
    print("spread = (max - min) / median of one run's samples (ours: 5 adaptive samples; reference chase and "
          "multichase: 5 of 0.5 s)")
    ref = build_ref_chase(ref_dir)
    verdicts = []
    for pages in pages_list:
        record = Rounds()
        for size in sizes:
            row = format_size(size)

            def ours(size: int = size, row: str = row, binary: Path = BIN, tool: str = "ours") -> None:
                out = workdir / f"lat-{pages}-{size}-{tool}.csv"
                run([*pinned_rank(), binary / "numa_latency", f"--size={size // 1024}K", f"--pages={pages}", "--quiet",
                     f"--csv={out}"])
                r = read_csv(out, required=["latency_ns_median", "latency_ns_min", "latency_ns_max",
                                            "first_touch_s", "cycle_build_s", "sample_s"]).iloc[0]
                record.add(row, tool, float(r["latency_ns_median"]))
                record.add(row, f"{tool} spread", (float(r["latency_ns_max"]) - float(r["latency_ns_min"]))
                           / float(r["latency_ns_median"]))
                record.add(row, f"{tool} setup", float(r["first_touch_s"]) + float(r["cycle_build_s"]))
                record.add(row, f"{tool} sample", float(r["sample_s"]))

            def reference(size: int = size, row: str = row) -> None:
                r = ref_chase_ns(ref, size, pages)
                record.add(row, "ref", r["median_ns"])
                record.add(row, "ref spread", (r["max_ns"] - r["min_ns"]) / r["median_ns"])
                record.add(row, "ref setup", r["first_touch_s"] + r["build_s"])

            tools: list[tuple[str, Callable[[], None]]] = [("ours", ours), ("ref", reference)]
            if baseline:
                def base(size: int = size, row: str = row) -> None:
                    ours(size, row, baseline, "base")
                tools.append(("base", base))
            if multichase:
                def multi(size: int = size, row: str = row) -> None:
                    median, low, high = multichase_ns(multichase, size, pages)
                    record.add(row, "multichase", median)
                    record.add(row, "multichase spread", (high - low) / median)
                tools.append(("multichase", multi))
            print(f"-- {pages} {row}")
            interleave(rounds, tools, record)
        print(f"{'pages':<5} {'size':>5} {'ours ns':>8} {'ref ns':>8} {'ours/ref':>8} {'[min-max]':>15} "
              f"{'multich.':>8} {'ours/mc':>8} {'spread ours':>17} {'ref':>6} {'mc':>6} {'sample s':>8} "
              f"{'setup ours s':>12} {'ref s':>6}")
        for size in sizes:
            row = format_size(size)
            ratio, low, high = record.ratio((row, "ours"), (row, "ref"))
            if record.has(row, "multichase"):
                mc_ratio = record.ratio((row, "ours"), (row, "multichase"))[0]
                mc = f"{record.median(row, 'multichase'):>8.2f} {mc_ratio:>8.3f}"
                mc_spread = f"{record.median(row, 'multichase spread'):>6.1%}"
            else:
                mc, mc_spread = f"{'NOT RUN':>8} {'':>8}", f"{'-':>6}"
            spreads = record.values[(row, "ours spread")]
            print(f"{pages:<5} {row:>5} {record.median(row, 'ours'):>8.2f} {record.median(row, 'ref'):>8.2f} "
                  f"{ratio:>8.3f} [{low:.3f}-{high:.3f}] {mc} {statistics.median(spreads):>6.1%} "
                  f"[{min(spreads):.1%}-{max(spreads):.1%}] {record.median(row, 'ref spread'):>6.1%} {mc_spread} "
                  f"{record.median(row, 'ours sample'):>8.2f} {record.median(row, 'ours setup'):>12.3f} "
                  f"{record.median(row, 'ref setup'):>6.3f}")
            verdicts.append(f"latency {pages} {row}: ours/ref {ratio:.3f} [{low:.3f}-{high:.3f}] {verdict(ratio)}")
            if baseline:
                b_ratio, b_low, b_high = record.ratio((row, "base"), (row, "ref"))
                b_spreads = record.values[(row, "base spread")]
                print(f"{'':<5} {row:>5} baseline {baseline}: {record.median(row, 'base'):.2f} ns, base/ref "
                      f"{b_ratio:.3f} [{b_low:.3f}-{b_high:.3f}], spread {statistics.median(b_spreads):.1%} "
                      f"[{min(b_spreads):.1%}-{max(b_spreads):.1%}]")
                verdicts.append(f"latency {pages} {row}: baseline/ref {b_ratio:.3f} [{b_low:.3f}-{b_high:.3f}], "
                                f"spread {statistics.median(b_spreads):.1%} [{min(b_spreads):.1%}-{max(b_spreads):.1%}]")
            if size < 256 << 20:
                worst = max(spreads)
                verdicts.append(f"latency spread {pages} {row}: median {statistics.median(spreads):.1%}, worst "
                                f"{worst:.1%} ({'under' if worst < SMALL_SPREAD_TARGET else 'NOT under'} 5%; "
                                f"reference chase {record.median(row, 'ref spread'):.1%})")
            if size >= 256 << 20:
                worst = max(spreads)
                verdicts.append(f"latency spread {pages} {row}: median {statistics.median(spreads):.1%}, worst "
                                f"{worst:.1%} ({'at or under' if worst <= SPREAD_TARGET else 'NOT at or under'} 2%; "
                                f"reference chase {record.median(row, 'ref spread'):.1%})")
        verdicts.append(f"latency {pages}: load average {min(record.loads):.2f}-{max(record.loads):.2f} over the rounds")
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
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of every tool (default 5)")
    parser.add_argument("--array-bytes", type=int,
                        help="bytes per array (default: numa_bandwidth's own, 4x the last-level cache); a "
                             "multiple of 128000 so every tool gets it exactly")
    parser.add_argument("--threads", default="1,2", help="thread counts of the bandwidth section (default 1,2)")
    parser.add_argument("--sizes", default=LATENCY_SIZES, help=f"latency sizes (default {LATENCY_SIZES})")
    parser.add_argument("--stream-src", type=Path, default=os.environ.get("STREAM_SRC"),
                        help="McCalpin's stream.c (or $STREAM_SRC); without it the STREAM columns are NOT RUN")
    parser.add_argument("--multichase", type=Path, default=os.environ.get("MULTICHASE"),
                        help="multichase's source folder or binary (or $MULTICHASE); without it that column is "
                             "NOT RUN")
    parser.add_argument("--ref-dir", type=Path, default=Path.home() / "ref",
                        help="where the references are built, outside the repository (default ~/ref)")
    parser.add_argument("--keep", type=Path, help="keep the kernels' CSVs in this folder")
    parser.add_argument("--pages", default="4k,thp", help="page sizes of the latency section (default 4k,thp)")
    parser.add_argument("--likwid", help="likwid-bench groups to run, of copy,copy_mem,stream,stream_mem,load,store,"
                        "store_mem (default all; fewer make the runs shorter), or single flavours of them "
                        "(e.g. copy_avx512,stream_sse)")
    parser.add_argument("--short", action="store_true",
                        help="bandwidth: only read, copy and triad, regular and non-temporal, against likwid's copy, "
                             "copy_mem, stream, stream_mem and load and STREAM (the 3%% question in minutes)")
    parser.add_argument("--max-pairs", type=int, default=12,
                        help="bandwidth: at most this many pairs per comparison (default 12)")
    parser.add_argument("--budget", type=float, default=600,
                        help="bandwidth: stop adding pairs after this many seconds per thread count (default 600)")
    parser.add_argument("--ntimes", type=int, default=20,
                        help="bandwidth: repetitions per run of ours and of STREAM (default 20)")
    parser.add_argument("--shapes", action="store_true",
                        help="bandwidth: also run our kernels in every code shape (--variant=all) and print them "
                             "beside likwid's flavours")
    parser.add_argument("--variant", default="calibrated",
                        help="bandwidth: our code shape in the pairs (default calibrated: one calibration first, "
                             "as the workflow's, its shapes at every thread count; auto: the kernel's one-timing "
                             "pick per run), e.g. avx512 to compare one shape with the references")
    parser.add_argument("--baseline", type=Path,
                        help="latency: also run numa_latency from this folder (e.g. an earlier build) as a fourth "
                             "tool in the same rounds, and print its ratio to the reference chase beside ours")
    parser.add_argument("--bin", type=Path,
                        help="our kernels from this folder as they are (e.g. an earlier build, to compare before "
                             "and after a change), instead of building build/bin")
    parser.add_argument("--skip", choices=["bandwidth", "latency", "cycle", "sweep"], action="append", default=[],
                        help="leave a section out (repeatable)")
    args = parser.parse_args(argv)
    try:
        if args.rounds < 1:
            fail("--rounds must be at least 1")
        if args.stream_src and not args.stream_src.is_file():
            fail(f"--stream-src: no file '{args.stream_src}'; bench/README.md says how to get stream.c")
        if args.multichase and not args.multichase.exists():
            fail(f"--multichase: no '{args.multichase}'; bench/README.md says how to get multichase")
        try:
            threads = [int(t) for t in args.threads.split(",")]
            sizes = [parse_size(s) for s in args.sizes.split(",")]
        except (ValueError, NumasweepError) as exc:
            fail(f"--threads/--sizes: {exc}")
        pages = args.pages.split(",")
        if not pages or set(pages) - {"4k", "thp"}:
            fail(f"--pages {args.pages}: give 4k, thp or both, e.g. 4k,thp")
        global BIN
        if args.bin:
            if not (args.bin / "numa_bandwidth").is_file():
                fail(f"--bin {args.bin}: no numa_bandwidth there")
            BIN = args.bin
        else:
            build_kernels()
        args.ref_dir.mkdir(parents=True, exist_ok=True)
        workdir = args.keep or Path(tempfile.mkdtemp(prefix="numasweep-bench-"))
        workdir.mkdir(parents=True, exist_ok=True)
        version = [line.strip() for line in run([BIN / "numa_bandwidth", "--version"]).stdout.splitlines()]
        flags = " ".join(line for line in version if line.startswith(("built with:", "code shapes:")))
        # Every figure below is only as good as the machine was quiet: say how busy it was.
        print(f"host {os.uname().nodename}, {os.cpu_count()} CPUs, load average {load():.2f} at start; "
              f"kernels in {BIN} ({version[0]}) {flags}; references in {args.ref_dir}; CSVs in {workdir}")
        print(f"STREAM: {args.stream_src or 'NOT RUN (no --stream-src)'}; multichase: "
              f"{args.multichase or 'NOT RUN (no --multichase)'}; likwid-bench: "
              f"{shutil.which('likwid-bench') or 'NOT RUN (apt-get install likwid)'}")
        verdicts: list[str] = []
        if "bandwidth" not in args.skip:
            array_bytes = args.array_bytes or default_array_bytes() // 128000 * 128000
            if array_bytes <= 0 or array_bytes % 128000:
                fail(f"--array-bytes {array_bytes}: give a positive multiple of 128000 (whole likwid kB of 1000 "
                     "bytes, whole KiB, whole doubles), e.g. 128000000")
            groups = args.likwid.split(",") if args.likwid else (
                ["copy", "copy_mem", "stream", "stream_mem", "load", "sum"] if args.short else None)
            if groups and not all(LIKWID_FLAVOUR.match(g) for g in groups):
                fail(f"--likwid {args.likwid}: give groups of copy,copy_mem,stream,stream_mem,load,sum,store,store_mem "
                     "or flavours of them (copy_avx512, stream_mem_sse, ...)")
            if args.max_pairs < 1 or args.ntimes < 2:
                fail("--max-pairs must be at least 1 and --ntimes at least 2")
            verdicts += bandwidth_section(array_bytes, threads, args.stream_src, args.ref_dir, workdir, args.shapes,
                                          groups, SHORT_ROWS if args.short else OUR_ROWS, args.max_pairs,
                                          args.budget, args.ntimes, args.variant)
        if "latency" not in args.skip:
            multichase = multichase_binary(args.multichase) if args.multichase else None
            if args.baseline and not (args.baseline / "numa_latency").is_file():
                fail(f"--baseline {args.baseline}: no numa_latency there")
            verdicts += latency_section(sizes, args.rounds, args.ref_dir, multichase, workdir, pages, args.baseline)
        if "cycle" not in args.skip:
            verdicts += cycle_section()
        if "sweep" not in args.skip:
            verdicts += sweep_section(workdir)
        print_targets(verdicts)
        if not args.keep:
            shutil.rmtree(workdir)
    except NumasweepError as exc:
        return say_error("kernels.py", exc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
