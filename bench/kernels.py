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
   non-temporal, compared with the best flavour of each; 1 and 2 threads.
2. latency: numa_latency against bench/ref_chase.c (the same definition, written apart) and
   multichase (64-byte stride, full-buffer random), 4k and THP pages, 16 KiB to 4 GiB; the
   spread of the samples of each, and the set-up times (first touch, cycle build).
3. cycle: the time to build the pointer-chase cycle over 4 GiB (numa_latency --self-test).
4. sweep: the wall time of the seed's sweep `numa_latency --size=1-1024` for one rank.

Every comparison runs the tools interleaved, round by round, so that a slow phase of a shared
machine falls on all of them; printed: the ratio ours / reference (of the medians over the
rounds) with the range of the per-round ratios, and the load average. A reference that is not
present is reported as NOT RUN. Targets (printed, never asserted): within 3%; latency spread
at or under 2% from 256 MiB on, under 5% below.

Also: --shapes (our kernels in every code shape beside likwid's flavours), --pages 4k|thp|4k,thp
(latency), --baseline DIR (latency: an earlier build's numa_latency in the same rounds, to
compare before and after a change), --bin DIR (our kernels from DIR, not built).
"""

from __future__ import annotations

import argparse
import json
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
# flavours (copy, copy_sse, copy_avx, copy_avx512, stream_avx_fma, ...). load_mem is left out:
# its loads, not its stores, are non-temporal.
LIKWID_FLAVOUR = re.compile(r"^(?P<test>copy|stream|load|store)(?P<mem>_mem)?(?P<isa>_sse|_avx512|_avx)?(?P<fma>_fma)?$")
LIKWID_ISA_FLAG = {"_sse": "sse2", "_avx": "avx", "_avx512": "avx512f"}
LIKWID_STREAMS = {"stream": 3, "copy": 2, "load": 1, "store": 1}


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


def build_stream(src: Path, ref_dir: Path, elements: int, loops: bool) -> Path:
    """STREAM as users build it (gcc -O3 -march=native -fopenmp), sized to our arrays. gcc turns
    its copy loop into memcpy, one call per thread's part (glibc streams a call of at least its
    non-temporal threshold with non-temporal stores: `memcpy_threshold`); with loops=True -fno-tree-loop-distribute-patterns keeps every kernel a loop of ordinary stores."""
    name = "stream_loops" if loops else "stream_gcc"
    out = ref_dir / f"{name}_{elements}"
    if not out.exists():
        cmd = ["gcc", "-O3", "-march=native", "-fopenmp", f"-DSTREAM_ARRAY_SIZE={elements}", "-DNTIMES=20",
               *(["-fno-tree-loop-distribute-patterns"] if loops else []), str(src), "-o", str(out)]
        if elements * 8 * 3 >= 2 << 30:
            cmd.insert(-3, "-mcmodel=medium")  # static arrays over 2 GiB
        run(cmd)
    return out


def stream_mb_s(binary: Path, threads: int) -> dict[str, float]:
    """STREAM's best rates (MB/s = 10^6 bytes/s) by function: Copy, Scale, Add, Triad."""
    proc = run([binary], env={"OMP_NUM_THREADS": str(threads), **OMP_ENV})
    rates = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(Copy|Scale|Add|Triad):\s+([0-9.]+)", proc.stdout,
                                                                re.MULTILINE)}
    if "Solution Validates" not in proc.stdout or len(rates) != 4:
        fail(f"{binary}: no validated Copy/Scale/Add/Triad rates in its output")
    return rates


def likwid_mb_s(test: str, working_set_bytes: int, threads: int) -> float:
    """likwid-bench MByte/s (10^6 bytes/s) over its whole run; its kB are 1000 bytes."""
    proc = run(["likwid-bench", "-t", test, "-w", f"S0:{working_set_bytes // 1000}kB:{threads}"])
    match = re.search(r"^MByte/s:\s+([0-9.]+)", proc.stdout, re.MULTILINE)
    if not match:
        fail(f"likwid-bench -t {test}: no 'MByte/s:' line in its output")
    return float(match.group(1))


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


def interleave(rounds: int, tools: list[tuple[str, Callable[[], None]]], record: Rounds,
               after_round: Callable[[int], None] | None = None) -> None:
    """Every tool once per round, the order rotated each round. `after_round(r)` (when given) runs
    after each round but the last, so that a run stopped early still leaves its tables so far."""
    for r in range(rounds):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for _, measure in order:
            measure()
        record.loads.append(load())
        print(f"  round {r + 1}/{rounds} done, load average {record.loads[-1]:.2f}", flush=True)
        if after_round and r + 1 < rounds:
            after_round(r + 1)


def verdict(ratio: float) -> str:
    return "within 3%" if abs(ratio - 1) <= TARGET else "OUTSIDE 3%"


# ---------------------------------------------------------------- bandwidth

# (our row, reference tool, its figure) - like for like, bytes counted the STREAM way by all (no
# write-allocate traffic). A likwid figure is a group of flavours: the comparison is with the
# group's best flavour, the one of the highest median over the rounds.
BANDWIDTH_PAIRS = [
    ("triad regular", "STREAM loops", "Triad"),
    ("triad regular", "STREAM gcc", "Triad"),
    ("triad regular", "likwid", "stream"),
    ("triad nt", "likwid", "stream_mem"),
    ("copy regular", "STREAM loops", "Copy"),
    ("copy regular", "likwid", "copy"),
    ("copy nt", "STREAM gcc", "Copy"),      # or copy regular: `memcpy_threshold`
    ("copy nt", "likwid", "copy_mem"),
    ("read", "likwid", "load"),
    ("write regular", "likwid", "store"),
    ("write nt", "likwid", "store_mem"),
]


def default_array_bytes() -> int:
    """numa_bandwidth's own default (4x the last-level cache), read from a dry run of its CSV."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probe.csv"
        run([BIN / "numa_bandwidth", "--kernels=read", "--ntimes=2", "--quiet", f"--csv={out}"],
            env={"OMP_NUM_THREADS": "1"})
        return int(read_csv(out, required=["array_bytes"])["array_bytes"].iloc[0])


OUR_ROWS = ("copy regular", "copy nt", "triad regular", "triad nt", "read", "write regular", "write nt")


def our_rows(table, record: Rounds, suffix: str = "") -> None:
    """Our figures by row ("copy regular", "copy nt", "read", ...; with suffix, e.g. " avx2"):
    best and average MB/s, and the code shape each row ran."""
    for _, r in table.iterrows():
        row = (f"{r['kernel']} {r['stores']}" if r["kernel"] != "read" else "read") + suffix
        record.add(row, "ours", float(r["best_mb_s"]))
        record.add(row, "ours avg", float(r["avg_mb_s"]))
        record.shapes[row].append(str(r.get("variant", "unknown")))  # (builds before the column: unknown)


def bandwidth_section(array_bytes: int, rounds: int, threads_list: list[int], stream_src: Path | None,
                      ref_dir: Path, workdir: Path, shapes: bool, likwid_groups: list[str] | None = None) -> list[str]:
    elements = array_bytes // 8
    print(f"\n== bandwidth: {format_size(array_bytes)} per array ({array_bytes} bytes), {rounds} interleaved rounds, "
          f"MB/s = 10^6 bytes/s counted as STREAM does, load average {load():.2f} ==")
    print("against STREAM: best of 20 repetitions (the first not counted) on both sides; against likwid, whose "
          "figure is its whole-run rate: our average over the repetitions, against the best of likwid's "
          "flavours (the highest median over the rounds)")
    streams: dict[str, Path] = {}
    if stream_src:
        streams["STREAM gcc"] = build_stream(stream_src, ref_dir, elements, loops=False)
        streams["STREAM loops"] = build_stream(stream_src, ref_dir, elements, loops=True)
        calls = "<memcpy@plt>" in run(["objdump", "-d", streams["STREAM gcc"]]).stdout
        print(f"STREAM gcc {'calls memcpy' if calls else 'does NOT call memcpy here'} for copy; STREAM loops keeps "
              "every kernel a loop")
    threshold, source = memcpy_threshold(streams["STREAM gcc"]) if streams else (None, "")
    flavours = likwid_flavours() if shutil.which("likwid-bench") else {}
    if likwid_groups is not None:
        flavours = {g: f for g, f in flavours.items() if g in likwid_groups}
    if flavours:
        print("likwid-bench flavours this CPU runs: " + "; ".join(f"{g}: {' '.join(f)}" for g, f in flavours.items()))
    verdicts = []
    for threads in threads_list:
        record = Rounds()
        env = {"OMP_NUM_THREADS": str(threads), **OMP_ENV}
        ours_cmd = [BIN / "numa_bandwidth", "--kernels=copy,triad,read,write", "--stores=regular,nt",
                    f"--array-size={array_bytes // 1024}K", "--ntimes=20", "--quiet"]

        def ours_table(out: Path, *extra: str):
            run([*ours_cmd, *extra, f"--csv={out}"], env=env)
            table = read_csv(out, required=["kernel", "stores", "best_mb_s", "avg_mb_s", "validation", "array_bytes"])
            if (table["validation"] != "pass").any() or int(table["array_bytes"].iloc[0]) != array_bytes:
                fail(f"{out}: numa_bandwidth failed its validation or ran another size")
            return table

        def ours() -> None:
            our_rows(ours_table(workdir / f"bw-{threads}.csv"), record)

        def ours_shapes() -> None:
            table = ours_table(workdir / f"bw-shapes-{threads}.csv", "--variant=all")
            for variant, part in table.groupby("variant"):
                our_rows(part, record, f" {variant}")

        tools: list[tuple[str, Callable[[], None]]] = [("ours", ours)]
        if shapes:
            tools.append(("ours shapes", ours_shapes))
        for name, binary in streams.items():
            def stream(name: str = name, binary: Path = binary) -> None:
                for function, rate in stream_mb_s(binary, threads).items():
                    record.add(function, name, rate)
            tools.append((name, stream))
        failed: dict[str, str] = {}  # a flavour that fails once (likwid 5.2.2's stream_mem crashes) is left out
        for group, names in flavours.items():
            for test in names:
                def likwid(test: str = test, nstreams: int = LIKWID_STREAMS[group.split("_")[0]]) -> None:
                    if test in failed:
                        return
                    try:
                        record.add(test, "likwid", likwid_mb_s(test, nstreams * array_bytes, threads))
                    except NumasweepError as exc:
                        failed[test] = str(exc)
                tools.append((f"likwid {test}", likwid))
        print(f"-- {threads} thread{'s' if threads > 1 else ''}")

        def tables() -> list[str]:
            """The comparison tables over the rounds so far, and their target lines."""
            found = []
            print("our code shapes, as each round's calibration chose them: " + "; ".join(
                f"{row} {'/'.join(sorted(set(record.shapes[row])))}" for row in OUR_ROWS if row in record.shapes))
            print(f"{'ours':<14} {'stat':<4} {'reference':<30} {'ours MB/s':>10} {'ref MB/s':>10} {'ratio':>7} "
                  f"{'[min-max]':>15}  target")
            # STREAM's copy loop runs as one memcpy per thread's part of the arrays: it streams with
            # non-temporal stores only from glibc's threshold on, and is compared with our copy of
            # the same stores (unknown threshold: with the non-temporal copy, as on most machines
            # at 4x the last-level cache)
            part = array_bytes // threads
            streamed = threshold is None or part >= threshold
            if "STREAM gcc" in streams:
                print(f"STREAM gcc copy: memcpy of {format_size(part)} per thread, "
                      f"{'at or over' if streamed else 'under'} {source}: "
                      f"{'non-temporal' if streamed else 'regular'} stores, compared with our copy "
                      f"{'nt' if streamed else 'regular'}")
            for row, tool, figure in BANDWIDTH_PAIRS:
                if (tool, figure) == ("STREAM gcc", "Copy") and not streamed:
                    row = "copy regular"
                if tool == "likwid":
                    group = [f for f in flavours.get(figure, []) if record.has(f, tool) and f not in failed]
                    figure = max(group, key=lambda f: record.median(f, tool)) if group else figure
                    ref_name = f"likwid best {figure}"
                else:
                    ref_name = f"{tool} {figure}"
                if not record.has(figure, tool):
                    why = ("no --stream-src given" if tool != "likwid" else "likwid-bench not installed"
                           if not shutil.which("likwid-bench") else "left out by --likwid")
                    print(f"{row:<14} {'':<4} {ref_name:<30} {'':>10} {'NOT RUN':>10}  ({why})")
                    continue
                stat = "ours" if tool.startswith("STREAM") else "ours avg"
                ratio, low, high = record.ratio((row, stat), (figure, tool))
                print(f"{row:<14} {stat[5:] or 'best':<4} {ref_name:<30} {record.median(row, stat):>10.0f} "
                      f"{record.median(figure, tool):>10.0f} {ratio:>7.3f} [{low:.3f}-{high:.3f}]  {verdict(ratio)}")
                found.append(f"bandwidth {row} {threads}T ({'/'.join(sorted(set(record.shapes[row])))}) vs "
                         f"{ref_name}: {ratio:.3f} [{low:.3f}-{high:.3f}] {verdict(ratio)} "
                         f"(load {min(record.loads):.2f}-{max(record.loads):.2f})")
            # Every flavour and shape, for the record: which code shape gives this machine's best.
            print(f"{'':<14} {'every flavour: median MB/s over the rounds [min-max]; ours: average over the repetitions'}")
            for group, names in flavours.items():
                cells = [f"{f} {record.median(f, 'likwid'):.0f} [{min(record.values[(f, 'likwid')]):.0f}-"
                         f"{max(record.values[(f, 'likwid')]):.0f}]" for f in names if record.has(f, "likwid")]
                cells += [f"{f} FAILED ({(re.findall(r'exited -?[0-9]+', failed[f]) or [failed[f][:60]])[0]})"
                          for f in names if f in failed]
                print(f"  likwid {group:<11} " + ", ".join(cells))
            # Every round's figures and load, for a closer look (e.g. at the quietest round).
            (workdir / f"bw-rounds-{threads}.json").write_text(json.dumps(
                {"loads": record.loads, "shapes": record.shapes,
                 "values": {f"{row} | {tool}": v for (row, tool), v in record.values.items()}}, indent=1))
            if shapes:
                for base in OUR_ROWS:
                    cells = [f"{row[len(base) + 1:]} {record.median(row, 'ours avg'):.0f} "
                             f"[{min(record.values[(row, 'ours avg')]):.0f}-{max(record.values[(row, 'ours avg')]):.0f}]"
                             for row in sorted({r for r, t in record.values if t == "ours avg" and r.startswith(base + " ")
                                                and r.count(" ") == base.count(" ") + 1})]
                    print(f"  ours {base:<13} " + ", ".join(cells))
            sys.stdout.flush()
            return found

        def so_far(done: int) -> None:
            print(f"-- {threads} thread{'s' if threads > 1 else ''}, the first {done} of {rounds} rounds "
                  "(kept in case the run is stopped before the last)", flush=True)
            tables()

        interleave(rounds, tools, record, after_round=so_far)
        verdicts += tables()
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
                        "store_mem (default all; fewer make the rounds shorter)")
    parser.add_argument("--shapes", action="store_true",
                        help="bandwidth: also run our kernels in every code shape (--variant=all) and print them "
                             "beside likwid's flavours")
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
            groups = args.likwid.split(",") if args.likwid else None
            if groups and set(groups) - {"copy", "copy_mem", "stream", "stream_mem", "load", "store", "store_mem"}:
                fail(f"--likwid {args.likwid}: give groups of copy,copy_mem,stream,stream_mem,load,store,store_mem")
            verdicts += bandwidth_section(array_bytes, args.rounds, threads, args.stream_src, args.ref_dir, workdir,
                                          args.shapes, groups)
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
