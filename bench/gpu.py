#!/usr/bin/env python3
"""Benchmark gpu_xfer against nvbandwidth, side by side in one run, on a machine with an NVIDIA GPU.

Run from the repository root (the tests never run it: it needs a GPU, and its numbers belong to
the machine and to how busy it was):

    .venv/bin/python bench/gpu.py --nvbandwidth ~/ref/nvbandwidth/build/nvbandwidth [--rounds 3]

For every size, host to device and device to host, pinned host memory, one GPU (`--gpu`, nvidia-smi's
index): gpu_xfer (`--pin_memory=1`, its default batches of 100 copies, 3 timed
batches, the median) and nvbandwidth's copy-engine tests `host_to_device_memcpy_ce` and
`device_to_host_memcpy_ce` (`-b MiB`, its default 16 copies per sample, 3 samples, the median).
Both time the copies with CUDA events and count each byte once; nvbandwidth prints GB/s (10^9
bytes per second), gpu_xfer GiB/s, so ours is converted to GB/s. The tools run interleaved,
round by round, their order rotated each round; printed: ours / nvbandwidth (ratio of the
medians over the rounds) with the range of the per-round ratios, and the load average. Target
(printed, never asserted): within 3% from 64 MiB on. Small copies: our time per copy next to
nvbandwidth's at its smallest buffer (1 MiB: it takes whole MiB) and its `host_device_latency_sm`
(an SM's load from host memory, pointer chase: another quantity, stated for reference).

Both run with the host thread and the host memory on the GPU's NUMA node, as nvbandwidth places
itself (it sets the CPU affinity of the GPU's node through NVML): gpu_xfer under
`numactl --cpunodebind=N --membind=N` where sysfs gives the GPU's node N.
Without a GPU or without nvbandwidth the comparison prints NOT RUN with the reason.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernels import (  # noqa: E402
    BIN,
    Rounds,
    build_kernels,
    fail,
    interleave,
    load,
    print_targets,
    run,
    say_error,
    verdict,
)

from numasweep.core.errors import NumasweepError  # noqa: E402
from numasweep.core.units import format_size, parse_size  # noqa: E402

SIZES = "4K,64K,1M,4M,16M,64M,256M"
TARGET_FROM = 64 << 20           # the 3% target applies from 64 MiB on
MIB = 1 << 20
GIB_TO_GB = 2**30 / 1e9
# (direction word in our CSV, nvbandwidth's test case)
DIRECTIONS = [("read", "host_to_device_memcpy_ce", "host to device"),
              ("write", "device_to_host_memcpy_ce", "device to host")]


def gpus() -> list[dict[str, str]]:
    """The GPUs nvidia-smi lists, with the driver version and each GPU's NUMA node (sysfs)."""
    if shutil.which("nvidia-smi") is None:
        return []
    proc = subprocess.run(["nvidia-smi", "--query-gpu=index,name,pci.bus_id,driver_version,uuid",
                           "--format=csv,noheader"], capture_output=True, text=True)
    if proc.returncode != 0:
        return []
    found = []
    for line in proc.stdout.strip().splitlines():
        index, name, bus, driver, uuid = (field.strip() for field in line.split(","))
        # nvidia-smi writes the PCI domain with 8 hex digits, sysfs with 4.
        domain, rest = bus.lower().split(":", 1)
        node_file = Path(f"/sys/bus/pci/devices/{int(domain, 16):04x}:{rest}/numa_node")
        node = node_file.read_text().strip() if node_file.exists() else "-1"
        found.append({"index": index, "name": name, "bus": bus, "driver": driver, "node": node, "uuid": uuid})
    return found


def numa_nodes() -> int:
    return len(list(Path("/sys/devices/system/node").glob("node[0-9]*")))


def ours(binary: Path, gpu: dict[str, str], sizes: list[int], out: Path) -> dict[tuple[int, str], tuple[float, float]]:
    """One gpu_xfer run over every size: {(size, read|write): (GB/s, ms per copy)}."""
    cmd = [str(binary), f"--sizes={','.join(f'{s // 1024}K' for s in sizes)}", "--pin_memory=1", f"--csv={out}",
           "--quiet"]
    node = int(gpu["node"])
    if node >= 0 and numa_nodes() > 1:
        if shutil.which("numactl") is None:
            fail("numactl not found: install the numactl package (the host side is placed on the GPU's node)")
        cmd = ["numactl", f"--cpunodebind={node}", f"--membind={node}", *cmd]
    run(cmd, env={"CUDA_VISIBLE_DEVICES": gpu["uuid"]}, timeout=1800)
    figures = {}
    with out.open() as handle:
        for row in csv.DictReader(handle):
            size = int(row["access_size(bytes)"])
            for direction, _, _ in DIRECTIONS:
                figures[(size, direction)] = (float(row[f"{direction}_bw(gib/s)"]) * GIB_TO_GB,
                                              float(row[f"{direction}_latency(ms)"]))
    return figures


def nvbandwidth(binary: Path, gpu: dict[str, str], tests: list[str], mib: int, keep: Path) -> dict:
    """One nvbandwidth run of `tests` at a buffer of `mib` MiB; its JSON document."""
    proc = run([binary, "-j", "-b", str(mib), "-t", *tests], env={"CUDA_VISIBLE_DEVICES": gpu["uuid"]},
               timeout=1800)
    text = proc.stdout[proc.stdout.find("{"):]
    try:
        document = json.loads(text)["nvbandwidth"]
    except (ValueError, KeyError) as exc:
        fail(f"nvbandwidth printed no JSON document ({exc}); its output: {proc.stdout.strip()[:200]}")
    (keep / f"nvbandwidth-{mib}M-{len(list(keep.glob('nvbandwidth-*')))}.json").write_text(text)
    cases = {case["name"]: case for case in document.get("testcases", [])}
    for test in tests:
        case = cases.get(test)
        if not case or case.get("status") != "Passed":
            fail(f"nvbandwidth {test} at {mib} MiB did not pass: {case}")
    return document


def compare(args: argparse.Namespace, gpu: dict[str, str], workdir: Path) -> list[str]:
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    if any(s % 1024 for s in sizes):
        fail(f"--sizes {args.sizes}: give whole KiB")
    nvb_sizes = [s for s in sizes if s % MIB == 0]
    if not nvb_sizes:
        fail(f"--sizes {args.sizes}: nvbandwidth takes whole MiB; give at least one such size")
    record = Rounds()
    info: dict = {}
    small: dict[int, list[float]] = {s: [] for s in sizes}

    def measure_ours() -> None:
        figures = ours(args.gpu_xfer, gpu, sizes, workdir / f"gpu_xfer-{len(record.loads)}.csv")
        for (size, direction), (gb_s, ms) in figures.items():
            record.add(f"{format_size(size)} {direction}", "ours", gb_s)
            if direction == "read":
                small[size].append(ms * 1e3)

    def measure_reference() -> None:
        for size in nvb_sizes:
            doc = nvbandwidth(args.nvbandwidth, gpu, [test for _, test, _ in DIRECTIONS], size // MIB, workdir)
            info.update({key: doc.get(key) for key in ("CUDA Runtime Version", "Driver Version", "git_version")})
            for direction, test, _ in DIRECTIONS:
                case = next(c for c in doc["testcases"] if c["name"] == test)
                record.add(f"{format_size(size)} {direction}", "nvbandwidth", float(case["sum"]))

    interleave(args.rounds, [("gpu_xfer", measure_ours), ("nvbandwidth", measure_reference)], record)
    latency = nvbandwidth(args.nvbandwidth, gpu, ["host_device_latency_sm"], 2, workdir)
    latency_case = next(c for c in latency["testcases"] if c["name"] == "host_device_latency_sm")

    print(f"\n== host <-> GPU {gpu['index']} ({gpu['name']}, PCI {gpu['bus']}, NUMA node {gpu['node']}), "
          f"pinned: ours / nvbandwidth {info.get('git_version')} ({args.rounds} rounds) ==")
    print(f"driver {gpu['driver']}; nvbandwidth reports CUDA runtime {info.get('CUDA Runtime Version')}, "
          f"driver {info.get('Driver Version')}")
    print(f"{'size':>6} {'direction':<15} {'ours GB/s':>10} {'nvbw GB/s':>10} {'ratio':>7} {'[range]':>15}  verdict")
    verdicts = []
    for size in nvb_sizes:
        for direction, _, words in DIRECTIONS:
            row = f"{format_size(size)} {direction}"
            ratio, low, high = record.ratio((row, "ours"), (row, "nvbandwidth"))
            judged = verdict(ratio) if size >= TARGET_FROM else "(below 64 MiB: not judged)"
            print(f"{format_size(size):>6} {words:<15} {record.median(row, 'ours'):10.2f} "
                  f"{record.median(row, 'nvbandwidth'):10.2f} {ratio:7.3f} [{low:.3f}-{high:.3f}]  {judged}")
            if size >= TARGET_FROM:
                verdicts.append(f"gpu {words} {format_size(size)}: ours/nvbandwidth {ratio:.3f} "
                                f"[{low:.3f}-{high:.3f}] {judged}")
    print("\nsmall copies, host to device, time per copy (median over the rounds; ours: batches of 100 "
          "copies on one stream, so below a few hundred KiB this is the runtime's issue rate):")
    for size in sizes:
        line = f"  {format_size(size):>6}: ours {statistics.median(small[size]):9.2f} us"
        if size in nvb_sizes:
            gb_s = record.median(f"{format_size(size)} read", "nvbandwidth")
            line += f"; nvbandwidth {size / (gb_s * 1e9) * 1e6:9.2f} us (its {gb_s:.2f} GB/s)"
        print(line)
    print(f"  nvbandwidth host_device_latency_sm: {latency_case.get('sum')} ns (one SM's dependent loads "
          "from host memory, not a copy: for reference)")
    return verdicts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nvbandwidth", type=Path, default=os.environ.get("NVBANDWIDTH"),
                        help="the nvbandwidth binary (or $NVBANDWIDTH); bench/README.md says how to build it")
    parser.add_argument("--gpu-xfer", type=Path, default=BIN / "gpu_xfer", help="default build/bin/gpu_xfer")
    parser.add_argument("--gpu", default="0", help="which GPU (nvidia-smi's index; default 0)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of both tools (default 3)")
    parser.add_argument("--sizes", default=SIZES, help=f"copy sizes (default {SIZES}); nvbandwidth runs the whole MiB")
    parser.add_argument("--keep", type=Path, help="keep our CSVs and nvbandwidth's JSON in this folder")
    args = parser.parse_args(argv)
    try:
        if args.rounds < 1:
            fail("--rounds must be at least 1")
        found = gpus()
        print(f"host {os.uname().nodename}, {os.cpu_count()} CPUs, {numa_nodes()} NUMA nodes, "
              f"load average {load():.2f} at start")
        gpu = next((g for g in found if g["index"] == args.gpu), None)
        if gpu is None:
            print(f"gpu_xfer against nvbandwidth: NOT RUN: no NVIDIA GPU {args.gpu} here (nvidia-smi lists "
                  f"{len(found)})")
            return 0
        if not args.nvbandwidth or not args.nvbandwidth.is_file():
            where = args.nvbandwidth or "give --nvbandwidth or set NVBANDWIDTH"
            print(f"gpu_xfer against nvbandwidth: NOT RUN: no nvbandwidth binary ({where}); bench/README.md "
                  "says how to build it")
            return 0
        if not args.gpu_xfer.is_file():
            build_kernels(str(args.gpu_xfer.resolve()))
        print(run([args.gpu_xfer, "--version"]).stdout.strip().replace("\n", ";"))
        workdir = args.keep or Path(tempfile.mkdtemp(prefix="numasweep-bench-gpu-"))
        workdir.mkdir(parents=True, exist_ok=True)
        print_targets(compare(args, gpu, workdir))
        if not args.keep:
            shutil.rmtree(workdir)
    except NumasweepError as exc:
        return say_error("gpu.py", exc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
