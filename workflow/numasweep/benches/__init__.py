"""The benchmarks, each defined once: what the grid, the rules, aggregation, analysis, figures
and the report know about a benchmark comes from its entry in `BENCHES`.

A benchmark's `name` is its Snakemake rule, its results folder (`results/<system>/<name>/`) and
its aggregated table (`<name>.csv`); `kernel` is the binary under build/bin that measures it.
`required` are the columns its kernel's CSV must have (docs/INTERFACES.md) and `positive` the
measured values and sizes that must be finite numbers above zero. `axis` is the x-axis of its
series (`numasweep.results.series`). `figures` gives one caption sentence per figure kind it draws, in
report order; `category` and `variant` name its figures in Snakemake's HTML report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class Bench:
    name: str
    kernel: str
    title: str  # the report section's heading
    category: str  # the figures' category in `snakemake --report`
    variant: str  # what a figure's variant names there (the label of `{variant}`)
    required: tuple[str, ...]
    positive: tuple[str, ...]
    axis: str | None  # the x-axis of a series; None: a series is a single point
    figures: tuple[tuple[str, str], ...]  # (figure kind, caption sentence), in report order


class Direction(NamedTuple):
    """One transfer direction of gpu_xfer: its name in findings, its words in figures, its
    bandwidth column and its latency column (None: not measured)."""

    name: str
    words: str
    bandwidth: str
    latency: str | None


# gpu_xfer: the transfer size and the directions; the bidirectional ones are measured with both
# directions at once.
GPU_SIZE = "access_size(bytes)"
GPU_DIRECTIONS = (
    Direction("read", "host to device", "read_bw(gib/s)", "read_latency(ms)"),
    Direction("write", "device to host", "write_bw(gib/s)", "write_latency(ms)"),
    Direction("bidirectional read", "host to device, both at once", "bidir_read_bw(gib/s)", None),
    Direction("bidirectional write", "device to host, both at once", "bidir_write_bw(gib/s)", None),
)
# Direction name -> its bandwidth column.
GPU_BANDWIDTH = {d.name: d.bandwidth for d in GPU_DIRECTIONS}

LATENCY = Bench(
    name="latency",
    kernel="numa_latency",
    title="Memory latency",
    category="Memory latency",
    variant="mode",
    required=("rank", "cpu", "size_bytes", "latency_ns_median"),
    positive=("size_bytes", "latency_ns_median"),
    axis="size_bytes",
    figures=(
        ("latency_vs_size", "Load-to-use latency of a random pointer chase against buffer size, "
         "one line per rank coloured by L3 group, with the cache sizes marked; the band around a line "
         "spans its runs' fastest to slowest sample where the kernel recorded them."),
        ("concurrent_vs_serial", "Latency measured with all ranks running at once divided by the "
         "latency of the same rank running alone, against buffer size."),
        ("latency_matrix", "Median latency over ranks by the NUMA node of the CPU (rows) and of the "
         "memory (columns) at the largest size measured."),
        ("rank_scaling", "Median latency over the ranks of a run against ranks per domain at the "
         "largest buffer size, one line per placement and domain set (sequential solid, interleaved "
         "dashed)."),
        ("cross_latency_vs_size", "Median latency over ranks against buffer size on each system, one "
         "panel per mode."),
    ),
)
BANDWIDTH = Bench(
    name="bandwidth",
    kernel="numa_bandwidth",
    title="Memory bandwidth (STREAM)",
    category="Memory bandwidth",
    variant="kernel",
    required=("kernel", "threads", "best_mb_s", "validation"),
    positive=("threads", "best_mb_s"),
    axis="threads",
    figures=(
        ("bandwidth_vs_threads", "Best STREAM bandwidth against thread count, one line per CPU node "
         "and memory node, local and remote; the band below a line reaches down to the slowest of the "
         "kernel's timed iterations where it recorded them."),
        ("bandwidth_matrix", "Best STREAM bandwidth at the highest thread count by CPU node (rows) "
         "and memory node (columns)."),
    ),
)
COPY = Bench(
    name="copy",
    kernel="numa_copy",
    title="Node-to-node copy",
    category="Node-to-node copy",
    variant="threads on",
    required=("src_node", "dst_node", "bytes", "best_gb_s"),
    positive=("bytes", "best_gb_s"),
    axis=None,
    figures=(
        ("copy_matrix", "Copy bandwidth from a source node (rows) to a destination node (columns), "
         "one panel per node running the copying threads."),
    ),
)
GPU_XFER = Bench(
    name="gpu_xfer",
    kernel="gpu_xfer",
    title="Host-device transfers",
    category="Host-device transfers",
    variant="host memory",
    required=("ngpus", GPU_SIZE, "read_bw(gib/s)", "write_bw(gib/s)"),
    positive=("ngpus", GPU_SIZE, "read_bw(gib/s)", "write_bw(gib/s)"),
    axis=GPU_SIZE,
    figures=(
        ("gpu_bandwidth", "Host-device transfer bandwidth against transfer size for each host memory "
         "policy and weights, host to device left, device to host right."),
        ("gpu_latency", "Host-device transfer time against transfer size for each host memory policy "
         "and weights, host to device left, device to host right."),
    ),
)

LOADED_LATENCY = Bench(
    name="loaded_latency",
    kernel="numa_loaded_latency",
    title="Loaded latency",
    category="Loaded latency",
    variant="chase and memory",
    required=("traffic", "delay", "chase_cpu", "load_gb_s", "latency_ns_median"),
    positive=("size_bytes", "latency_ns_median"),
    axis="delay",
    figures=(
        ("loaded_latency", "Pointer-chase latency against the bandwidth the load threads achieved at "
         "once, one line per traffic kind (reads to writes), the idle chase at zero load; bars span "
         "each point's fastest and slowest sample."),
    ),
)
C2C = Bench(
    name="c2c",
    kernel="numa_c2c",
    title="Core-to-core latency",
    category="Core-to-core latency",
    variant="line home",
    required=("cpu_a", "cpu_b", "round_trip_ns_median"),
    positive=("round_trip_ns_median",),
    axis=None,
    figures=(
        ("c2c_heatmap", "Median round trip of a cache line between two CPUs, CPUs ordered by NUMA node "
         "and L3 group; lines mark the L3 groups (thin) and nodes (thick) the kernel found the CPUs on."),
    ),
)
MIX_BANDWIDTH = Bench(
    name="mix_bandwidth",
    kernel="numa_mix_bandwidth",
    title="Peak and mixed bandwidth",
    category="Peak and mixed bandwidth",
    variant="panels",
    required=("traffic", "threads", "gb_s_median"),
    positive=("threads", "gb_s_median"),
    axis=None,
    figures=(
        ("mix_bandwidth_matrix", "Bandwidth of threads on a CPU node (rows) to memory on a node "
         "(columns), one panel per traffic kind."),
    ),
)

# In the order the report presents them.
BENCHES: dict[str, Bench] = {b.name: b for b in (LATENCY, BANDWIDTH, COPY, GPU_XFER, LOADED_LATENCY, C2C,
                                                 MIX_BANDWIDTH)}
NAMES = tuple(BENCHES)
# The HIP build of gpu_xfer, which a sweep on AMD GPUs runs instead of the CUDA one.
GPU_XFER_HIP = "gpu_xfer_hip"
# Every kernel binary a plan may launch.
KERNELS = tuple(b.kernel for b in BENCHES.values()) + (GPU_XFER_HIP,)
# Figure kind -> caption, in report order over all benchmarks.
CAPTIONS: dict[str, str] = {kind: text for b in BENCHES.values() for kind, text in b.figures}
