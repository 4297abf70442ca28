#!/usr/bin/env python3
"""Benchmark loaded latency and core-to-core latency against reference tools, side by side.

Run from the repository root (the tests never run it: its numbers belong to the machine and to
how busy it was):

    .venv/bin/python bench/mlc.py [--rounds 5] [--multichase DIR] [--size 256M]

1. loaded latency: numa_loaded_latency (chase on the first allowed CPU, `--traffic=read` load
   threads on the others) against multichase's multiload (`-c chaseload -l stream-sum`: one
   chase thread on the first CPU, stream-sum load threads on the others, the same buffer size
   per thread, 64-byte stride, TLB locality = the whole buffer); and the idle point against
   `multiload -c simple`. Compared: the chase's best sample (multiload reports its best by
   default; ours latency_ns_min) and the load's bandwidth (multiload LdAvgMibs, MiB/s, against
   our load_gb_s) at full load (our delay 0), and the latency at multiload's bandwidth, read off
   our delay sweep of the same round (the two loads push differently hard).
2. core-to-core: numa_c2c over every pair of the allowed CPUs (up to --c2c-cpus of them)
   against bench/ref_pingpong.c (the same definition, written apart, built under --ref-dir) and
   multichase's `pingpong -u` (its best sample of the one-way time, against half our best round
   trip).

Every comparison interleaves the tools round by round and prints the ratio ours / reference of
the medians over the rounds with the range of the per-round ratios and the load average. A
reference that is not there prints NOT RUN with the reason. Targets (printed, never asserted):
within 3%.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernels import (BIN, REPO, Rounds, build_kernels, fail, interleave, load, multichase_binary,  # noqa: E402
                     print_targets, run, say_error, verdict)

from numasweep.core.errors import NumasweepError  # noqa: E402
from numasweep.core.io import read_csv  # noqa: E402
from numasweep.core.units import format_size, parse_size  # noqa: E402


def allowed_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


SWEEP = "idle,5000,2000,1000,500,200,100,50,20,0"


def ours_sweep(workdir: Path, size: int, chase: int, loads: list[int]) -> list[dict]:
    """numa_loaded_latency over SWEEP: one row per delay (-1 = idle)."""
    csv_path = workdir / "loaded.csv"
    run([BIN / "numa_loaded_latency", f"--size={size // 1024}K", f"--load-size={size // 1024}K", f"--chase-cpu={chase}",
         f"--load-cpus={','.join(map(str, loads))}", "--traffic=read", f"--delay={SWEEP}", "--samples=5",
         "--min-time=0.2", f"--csv={csv_path}", "--quiet"])
    return read_csv(csv_path).to_dict("records")


def at_bandwidth(curve: list[tuple[float, float]], gb_s: float) -> float:
    """Latency of our curve (GB/s, ns) at a bandwidth, linear between the two nearest points
    (the nearest end point outside the range)."""
    curve = sorted(curve)
    if gb_s <= curve[0][0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x0 <= gb_s <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (gb_s - x0) / (x1 - x0)
    return curve[-1][1]


def multiload(binary: Path, size: int, threads: int, chase: str) -> dict[str, float]:
    """multiload's CSV-like summary: ChaseNS (best sample), LdAvgMibs (MiB/s)."""
    args = [binary, "-s", "64", "-m", f"{size // 1024}k", "-T", f"{size // 1024}k", "-n", "5", "-t", str(threads),
            "-c", chase]
    if chase == "chaseload":
        args += ["-l", "stream-sum"]
    proc = run(args)
    lines = [line for line in proc.stdout.splitlines() if "," in line]
    if len(lines) < 2:
        fail(f"{binary}: no summary line in its output")
    header = [c.strip() for c in lines[-2].split(",")]
    values = [c.strip() for c in lines[-1].split(",")]
    row = dict(zip(header, values))
    return {"ns": float(row["ChaseNS"]), "gb_s": float(row["LdAvgMibs"]) * (1 << 20) / 1e9}


def loaded_section(rounds: int, size: int, multichase: Path | None, why_not: str, workdir: Path) -> list[str]:
    cpus = allowed_cpus()
    if len(cpus) < 2:
        return ["loaded latency: NOT RUN (needs two allowed CPUs)"]
    chase, loads = cpus[0], cpus[1:]
    print(f"\n== loaded latency: chase of {format_size(size)} on CPU {chase}, read load on CPUs "
          f"{','.join(map(str, loads))}, best sample ns and load GB/s, {rounds} rounds, load average {load():.2f} ==")
    multiload_binary = None
    if multichase:
        multiload_binary = multichase_binary(multichase, "multiload")
    record = Rounds()
    curves: list[list[tuple[float, float]]] = []

    def ours() -> None:
        rows = ours_sweep(workdir, size, chase, loads)
        idle = next(r for r in rows if int(r["delay"]) < 0)
        full = next(r for r in rows if int(r["delay"]) == 0)
        record.add("idle", "ours ns", float(idle["latency_ns_min"]))
        record.add("loaded", "ours ns", float(full["latency_ns_min"]))
        record.add("loaded", "ours gb_s", float(full["load_gb_s"]))
        curves.append([(float(r["load_gb_s"]), float(r["latency_ns_min"])) for r in rows])

    tools = [("ours", ours)]
    if multiload_binary:
        ml = multiload_binary
        tools.append(("multiload", lambda: [record.add(p, "multiload " + k, v)
                                            for p, c, t in (("idle", "simple", 1), ("loaded", "chaseload", len(cpus)))
                                            for k, v in multiload(ml, size, t, c).items()]))
    interleave(rounds, tools, record)
    # The loads differ in how hard they push (multiload's stream-sum is a scalar loop): compare
    # the latencies also at the same bandwidth, ours read off our delay sweep of that round.
    if record.has("loaded", "multiload gb_s"):
        for curve, gb_s, ns in zip(curves, record.values[("loaded", "multiload gb_s")],
                                   record.values[("loaded", "multiload ns")]):
            record.add("same GB/s", "ours ns", at_bandwidth(curve, gb_s))
            record.add("same GB/s", "multiload ns", ns)
    out = []
    print(f"  {'point':8} {'figure':8} {'ours':>10} {'multiload':>10} {'ratio [range]':>24}")
    for point in ("idle", "loaded", "same GB/s"):
        for figure in ("ns", "gb_s"):
            if point != "loaded" and figure == "gb_s":
                continue
            if not record.has(point, "ours " + figure):
                continue
            mine = record.median(point, "ours " + figure)
            if not record.has(point, "multiload " + figure):
                print(f"  {point:8} {figure:8} {mine:10.2f} {'NOT RUN':>10}  ({why_not})")
                continue
            ref = record.median(point, "multiload " + figure)
            ratio, lo, hi = record.ratio((point, "ours " + figure), (point, "multiload " + figure))
            print(f"  {point:8} {figure:8} {mine:10.2f} {ref:10.2f} {ratio:8.3f} [{lo:.3f}-{hi:.3f}]")
            out.append(f"loaded latency {point} {figure}: ours/multiload {ratio:.3f} {verdict(ratio)}")
    return out or [f"loaded latency: multiload NOT RUN ({why_not})"]


def build_ref_pingpong(ref_dir: Path) -> Path:
    binary = ref_dir / "ref_pingpong"
    run(["cc", "-O2", "-pthread", "-o", binary, REPO / "bench" / "ref_pingpong.c"])
    return binary


def pingpong_matrix(binary: Path) -> dict[tuple[int, int], float]:
    """multichase `pingpong -u`: a header row of CPU ids, then a row per CPU i with the one-way ns
    to each CPU j > i, in columns 8 characters wide after a 3-character row label."""
    lines = run([binary, "-u"]).stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("   ") and line.strip())
    columns = [int(c) for c in lines[start].split()]
    out = {}
    for line in lines[start + 1:]:
        m = re.match(r"\s*(\d+):", line)
        if not m:
            continue
        for k, col in enumerate(columns):
            cell = line[3 + 8 * k: 3 + 8 * (k + 1)].strip()
            if cell:
                out[(int(m.group(1)), col)] = float(cell)
    return out


def c2c_section(rounds: int, ncpus: int, ref_dir: Path, multichase: Path | None, why_not: str,
                workdir: Path) -> list[str]:
    cpus = allowed_cpus()[:ncpus]
    if len(cpus) < 2:
        return ["core-to-core: NOT RUN (needs two allowed CPUs)"]
    pairs = [(a, b) for i, a in enumerate(cpus) for b in cpus[i + 1:]]
    print(f"\n== core-to-core: {len(pairs)} pairs of CPUs {','.join(map(str, cpus))}, ns, {rounds} rounds, "
          f"load average {load():.2f} ==")
    ref = build_ref_pingpong(ref_dir)
    pingpong = multichase_binary(multichase, "pingpong") if multichase else None
    record = Rounds()

    def ours() -> None:
        csv_path = workdir / "c2c.csv"
        run([BIN / "numa_c2c", f"--cpus={','.join(map(str, cpus))}", "--samples=5", "--min-time=0.1",
             f"--csv={csv_path}", "--quiet"])
        for row in read_csv(csv_path).to_dict("records"):
            pair = f"{int(row['cpu_a'])}-{int(row['cpu_b'])}"
            record.add(pair, "ours round trip", float(row["round_trip_ns_median"]))
            record.add(pair, "ours one-way best", float(row["round_trip_ns_min"]) / 2)

    def reference() -> None:
        for a, b in pairs:
            figures = dict(re.findall(r"(\w+)=([0-9.]+)", run([ref, a, b, "5", "0.1"]).stdout))
            record.add(f"{a}-{b}", "ref round trip", float(figures["median_ns"]))

    def multichase_pingpong() -> None:
        matrix = pingpong_matrix(pingpong)
        for a, b in pairs:
            if (a, b) in matrix:
                record.add(f"{a}-{b}", "pingpong one-way best", matrix[(a, b)])

    tools = [("ours", ours), ("ref_pingpong", reference)]
    if pingpong:
        tools.append(("pingpong", multichase_pingpong))
    interleave(rounds, tools, record)
    out = []
    print(f"  {'pair':10} {'ours rt':>9} {'ref rt':>9} {'ratio [range]':>22}   {'ours 1w':>9} {'pingpong':>9} "
          f"{'ratio [range]':>22}")
    for a, b in pairs:
        pair = f"{a}-{b}"
        r, lo, hi = record.ratio((pair, "ours round trip"), (pair, "ref round trip"))
        line = (f"  {pair:10} {record.median(pair, 'ours round trip'):9.1f} {record.median(pair, 'ref round trip'):9.1f}"
                f" {r:8.3f} [{lo:.3f}-{hi:.3f}]   {record.median(pair, 'ours one-way best'):9.1f}")
        out.append(f"core-to-core {pair} round trip: ours/ref_pingpong {r:.3f} {verdict(r)}")
        if record.has(pair, "pingpong one-way best"):
            r2, lo2, hi2 = record.ratio((pair, "ours one-way best"), (pair, "pingpong one-way best"))
            line += f" {record.median(pair, 'pingpong one-way best'):9.1f} {r2:8.3f} [{lo2:.3f}-{hi2:.3f}]"
            out.append(f"core-to-core {pair} one-way best: ours/pingpong {r2:.3f} {verdict(r2)}")
        else:
            line += f" {'NOT RUN':>9}  ({why_not})"
        print(line)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of every tool (default 5)")
    parser.add_argument("--size", default="256M", help="chase buffer and each load thread's buffer (default 256M)")
    parser.add_argument("--c2c-cpus", type=int, default=8, help="pair at most this many allowed CPUs (default 8)")
    parser.add_argument("--multichase", type=Path, default=os.environ.get("MULTICHASE"),
                        help="multichase's source folder (or $MULTICHASE), where multiload and pingpong are built; "
                             "without it those columns are NOT RUN")
    parser.add_argument("--ref-dir", type=Path, default=Path.home() / "ref",
                        help="where ref_pingpong is built, outside the repository (default ~/ref)")
    parser.add_argument("--skip", choices=["loaded", "c2c"], action="append", default=[],
                        help="leave a section out (repeatable)")
    args = parser.parse_args(argv)
    try:
        if args.rounds < 1 or args.c2c_cpus < 2:
            fail("--rounds must be at least 1 and --c2c-cpus at least 2")
        size = parse_size(args.size)
        why_not = "no --multichase; bench/README.md says how to get it"
        if args.multichase and not args.multichase.is_dir():
            fail(f"--multichase: no folder '{args.multichase}'; give the clone of github.com/google/multichase")
        build_kernels()
        args.ref_dir.mkdir(parents=True, exist_ok=True)
        print(f"host {os.uname().nodename}, {os.cpu_count()} CPUs, load average {load():.2f} at start; references in "
              f"{args.ref_dir}; multichase: {args.multichase or 'NOT RUN (' + why_not + ')'}")
        verdicts: list[str] = []
        with tempfile.TemporaryDirectory(prefix="numasweep-bench-") as tmp:
            if "loaded" not in args.skip:
                verdicts += loaded_section(args.rounds, size, args.multichase, why_not, Path(tmp))
            if "c2c" not in args.skip:
                verdicts += c2c_section(args.rounds, args.c2c_cpus, args.ref_dir, args.multichase, why_not, Path(tmp))
        print_targets(verdicts)
    except NumasweepError as exc:
        return say_error("mlc.py", exc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
