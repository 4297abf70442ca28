"""Host-device transfers (`gpu_xfer`, CUDA or HIP): everything particular to this benchmark.

The grid (one job per GPU count, host memory, pinning and repetition, driven from the CPUs of
the GPUs' node), the plan-time checks (sizes against host memory, GPUs and host cores), the
tables (one series per GPU of a run and per GPU count), the figures (bandwidth and transfer
time against size per direction), the raw tables, and the findings:

- a **plateau** per direction and host memory (`gpu_transfers`): the mean over runs of each run's
  median over the plateau sizes, with a t interval over the runs; pinned against pageable and the
  best weights with Welch intervals;
- **aggregate**: what the GPUs of one run move together (the sum over its GPUs at each size, the
  GPUs having started every batch together), next to what each of them moves and to what one GPU
  moves alone with the same host memory. Per-GPU and aggregate figures never share a number.
- **host node**: per GPU, host memory on the GPU's own NUMA node against memory on each other
  single node, same GPU count, pinning and direction.

Ratios come with a t interval over repetitions (`stats.unit_mean_interval`: each repetition's
mean log ratio over the plateau sizes is one replicate; sizes are never counted as independent).
A campaign with one repetition gets the ratio with "no interval" said beside it.
"""

from __future__ import annotations

import functools
import itertools
import math
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from numasweep.core.registry import Bench, COMMON_SERIES, Checks, Figure, Launch, Presentation, Tables, register
from numasweep.core.errors import NumasweepError, Unavailable
from numasweep.core.topology import Topology
from numasweep.core.units import count_words, size_words
from numasweep.findings import analysis
from numasweep.findings.analysis import Finding
from numasweep.planning import checks, grid
from numasweep.reporting.figures import heatmap, line_colours, new_figure, save, size_axis
from numasweep.reporting.markdown import md_table
from numasweep.results import series
from numasweep.results import series as ser
from numasweep.results.tables import as_text as _text
from numasweep.statistics import stats
from numasweep.statistics.stats import Interval

# The transfer size, and the directions; the bidirectional ones are measured with both at once.
GPU_SIZE = "access_size(bytes)"
# What names a series (after registry.COMMON_SERIES), and what tells the lines of one figure apart.
SERIES = ("ngpus", "gpu", "gpu_node", "pinned", "policy", "numa_nodes", "numa_weight")
WITHIN = ("host", "gpu", "gpu_node", "ngpus", "memory", "policy", "numa_nodes", "numa_weight")


class Direction(NamedTuple):
    """One transfer direction of gpu_xfer: its name in findings, its words in figures, its
    bandwidth column and its latency column (None: not measured)."""

    name: str
    words: str
    bandwidth: str
    latency: str | None


GPU_DIRECTIONS = (
    Direction("read", "host to device", "read_bw(gib/s)", "read_latency(ms)"),
    Direction("write", "device to host", "write_bw(gib/s)", "write_latency(ms)"),
    Direction("bidirectional read", "host to device, both at once", "bidir_read_bw(gib/s)", None),
    Direction("bidirectional write", "device to host, both at once", "bidir_write_bw(gib/s)", None),
)
# Direction name -> its bandwidth column, and its words (the summary's "host to device").
GPU_BANDWIDTH = {d.name: d.bandwidth for d in GPU_DIRECTIONS}
DIRECTION_WORDS = {d.name: d.words for d in GPU_DIRECTIONS}
# The two directions of a copy both ways at once: where the kernel timed them as one (the two
# columns equal at every row, as pageable copies are), one finding says both, under the first.
BOTH_AT_ONCE = ("bidirectional read", "bidirectional write")


def _timed_as_one(g: pd.DataFrame) -> bool:
    """Whether a series' two directions at once hold the same value at every row: one
    measurement given twice."""
    a, b = (GPU_BANDWIDTH[d] for d in BOTH_AT_ONCE)
    return a in g and b in g and np.array_equal(g[a].to_numpy(float), g[b].to_numpy(float), equal_nan=True)


# The HIP build of gpu_xfer, which a sweep on AMD GPUs runs instead of the CUDA one.
GPU_XFER_HIP = "gpu_xfer_hip"


def pinning(value: Any) -> str:
    """The seed's and the kernel's spellings of host memory pinning (1/0, true/false, or the
    words) as "pinned" or "pageable"; "" where it says neither. Read once, where a table is."""
    text = str(value).strip().lower()
    return {"1": "pinned", "true": "pinned", "pinned": "pinned",
            "0": "pageable", "false": "pageable", "pageable": "pageable"}.get(text, "")


def gpu_kernel(topo: Any) -> str:
    """The gpu_xfer build for this system's GPUs: gpu_xfer_hip (HIP) for AMD, else gpu_xfer (CUDA)."""
    amd = any(g.vendor == "amd" for g in topo.gpus)
    return GPU_XFER_HIP if amd else "gpu_xfer"


def expand(topo: Any, section: dict) -> list[grid.Job]:
    """The jobs of the sweeps; `Unavailable` where the topology lists no GPU and `force` is off."""
    if not topo.gpus and not section["force"]:
        raise Unavailable(f"the topology '{topo.system}' lists no GPU; gpu_xfer.force: true plans the jobs anyway (dry run); "
            "run it on a machine with GPUs (nvidia-smi or rocm-smi lists them) or name an arch file that lists them")
    return list(_jobs(topo, section))


# ---------------------------------------------------------------- grid

def _jobs(topo: Any, section: dict) -> Iterator[grid.Job]:
    for i, sw in enumerate(section["sweeps"]):
        where = f"gpu_xfer.sweeps[{i}]"
        for m, spec in enumerate(sw["memory"]):
            grid.check_memory(topo, spec, f"{where}.memory[{m}]")
        cpu_node = gpu_cpu_node(topo, sw)
        grid.check_nodes(topo, [cpu_node], f"{where}.cpu_node")
        sizes = grid.sizes_arg(sw["sizes"], f"{where}.sizes")
        for ngpus, memory, pinned, rep in itertools.product(
            sw["ngpus"], sw["memory"], sw["pinned"], range(sw["repetitions"])
        ):
            # gpu_xfer drives each GPU from a host thread of its own: one CPU per GPU.
            cpus = grid.cpus_on(topo, cpu_node, ngpus, f"{where}.cpu_node")
            yield grid.Job(
                bench="gpu_xfer",
                id=(
                    f"{grid.id_prefix('gpu', sw['label'])}-g{ngpus}-{grid.memory_word(memory)}-"
                    f"{'pinned' if pinned else 'pageable'}-rep{rep}"
                ),
                kernel=gpu_kernel(topo),
                grid={"label": sw["label"] or "", "memory": memory, "repetition": rep},
                kernel_args=tuple(
                    [
                        f"--ngpus={ngpus}",
                        f"--sizes={sizes}",
                        f"--pin_memory={int(pinned)}",
                        f"--iterations_per_bench={sw['iterations']}",
                    ]
                    + list(sw["extra_args"])
                ),
                threads=ngpus,
                gpus=ngpus,
                cpus=cpus,
                memory=memory,
            )


def gpu_cpu_node(topo: Any, sw: dict) -> int:
    """The node whose cores drive a gpu_xfer sweep's GPUs: its `cpu_node`, else the first GPU's
    node, else (a GPU whose sysfs numa_node is -1, as in most virtual machines) the first node
    with CPUs."""
    if sw["cpu_node"] is not None:
        return sw["cpu_node"]
    if topo.gpus and topo.gpus[0].node is not None:
        return topo.gpus[0].node
    return next((node.id for node in topo.nodes if node.cpus), topo.nodes[0].id)


def check(topo: Any, section: dict) -> list[str]:
    """Sizes that fit the host memory they are placed on; no more GPUs than the topology has, nor
    than host cores to drive them (one thread each)."""
    for where, sw in checks.sweeps(section, "gpu_xfer"):
        for size in checks.size_list(sw["sizes"]):
            for spec in sw["memory"]:
                checks.fit(topo, f"{where}.sizes", size, spec, [gpu_cpu_node(topo, sw)])
    force = bool(section.get("force"))
    if not force and not topo.gpus:
        return []  # skipped (`expand` says why)
    have = len(topo.gpus)
    for where, sw in checks.sweeps(section, "gpu_xfer"):
        wanted = max(sw["ngpus"])
        if wanted > have and not force:  # force: a dry run on purpose, GPUs not checked
            raise NumasweepError(
                f"{where}.ngpus: {wanted} GPUs asked, but the topology '{topo.system}' has {have} GPU"
                f"{'s' if have != 1 else ''}; use ngpus up to {have} (or gpu_xfer.force: true for a dry run)"
            )
        node = gpu_cpu_node(topo, sw)
        try:
            free = len(topo.free_cores(node))
        except NumasweepError:
            continue  # grid.expand names the unknown node
        if wanted > free:
            raise NumasweepError(
                f"{where}.ngpus: {wanted} GPUs need {wanted} host cores (one thread drives each GPU), but "
                f"cpu_node {node} has {free} free; use ngpus up to {free} or a cpu_node with more free cores"
            )
    return []


# ---------------------------------------------------------------- tables

# The directions with a transfer time measured: the figures draw them side by side.
TIMED_DIRECTIONS = [d for d in GPU_DIRECTIONS if d.latency]


def gpu_label(row: pd.Series) -> str:
    """A line's name in words, without the parts a run does not have: "bind policy, memory on
    node 0, GPU 0", "weighted policy, memory on nodes 0,2, weights 1,2, GPU 1 of 2 at once"."""
    policy, nodes = series.label(row.get("policy", "")).strip(), series.label(row.get("numa_nodes", "")).strip()
    weight, gpu = series.label(row.get("numa_weight", "")).strip(), int(row.get("gpu", -1))
    ngpus = int(row["ngpus"])
    parts = [f"{policy} policy" if policy else ""]
    if nodes:
        parts.append(f"memory on node{'s' if ',' in nodes or '-' in nodes else ''} {nodes}")
    if weight:
        parts.append(f"weights {weight}")
    if gpu >= 0:
        parts.append(f"GPU {gpu}" + (f" of {ngpus} at once" if ngpus > 1 else ""))
    else:
        parts.append(f"{ngpus} GPU{'s' if ngpus > 1 else ''}")
    return ", ".join(p for p in parts if p)


def gpu_table(df: pd.DataFrame) -> pd.DataFrame:
    """Median over repetitions per point of a series; each GPU of a run is its own series and
    runs with different GPU counts never share one (`numasweep.results.series`)."""
    df = df.copy()
    if "pinned" not in df:
        df["pinned"] = 1
    values = [c for d in GPU_DIRECTIONS for c in (d.latency, d.bandwidth) if c]
    return series.point_table(df, "gpu_xfer", values, spread=True)


def gpu_lines(part: pd.DataFrame):
    cols = [c for c in WITHIN if c in part]
    return part.groupby(cols, sort=True, dropna=False)


def gpu_configurations(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Pinned and pageable host memory apart, then every other configuration that varies."""
    table = table.copy()
    table["pinned"] = [pinning(p) or "pageable" for p in table["pinned"]]
    return series.configurations(table, "gpu_xfer", first="pinned")


def gpu_raw_tables(gpu: pd.DataFrame, topology: Topology | None = None, findings: list[dict] = ()) -> list[dict]:
    """Its raw tables, all it writes in the report (`Presentation.report`)."""
    table = gpu_table(gpu)
    out = []
    for variant, part in gpu_configurations(table):
        part = part.copy()
        part["series"] = [gpu_label(r) for _, r in part.iterrows()]
        for direction in TIMED_DIRECTIONS:
            wide = part.pivot_table(index=GPU_SIZE, columns="series",
                                    values=direction.bandwidth, aggfunc="median")
            rows = [[size_words(int(s))] + [float(v) for v in row] for s, row in wide.iterrows()]
            out.append({
                "title": f"Bandwidth (GiB/s) {direction.words}, {variant} host memory",
                "table": md_table(["size"] + list(wide.columns), rows),
            })
    return out


# ---------------------------------------------------------------- figures

# Figure kind -> (the direction's attribute it draws, y-axis label, log y-axis, title).
GPU_PLOTS = {"gpu_bandwidth": ("bandwidth", "bandwidth (GiB/s)", False, "Host-device bandwidth"),
             "gpu_latency": ("latency", "transfer time (ms)", True, "Host-device transfer time")}


def plot_gpu_bandwidth(gpu: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    return plot_gpu(gpu, figdir, "gpu_bandwidth")


def plot_gpu_latency(gpu: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    return plot_gpu(gpu, figdir, "gpu_latency")


def plot_gpu(gpu: pd.DataFrame, figdir: Path, kind: str) -> list[Path]:
    """The figures of `kind`, gpu_bandwidth or gpu_latency: one panel per direction measured."""
    table = gpu_table(gpu)
    paths: list[Path] = []
    for variant, part in gpu_configurations(table):
        sizes = sorted(part[GPU_SIZE].unique())
        if len(sizes) < 2:
            continue
        # every direction measured: the bidirectional ones have a bandwidth and no transfer time
        measured = [d for d in GPU_DIRECTIONS if d.bandwidth in part and part[d.bandwidth].notna().any()]
        column, unit, log_y, title = GPU_PLOTS[kind]
        directions = [d for d in measured if getattr(d, column)]
        if not directions:
            continue
        # one y scale for the panels: each direction's rate read against the others'
        fig, axes = new_figure(ncols=len(directions), width=max(11.0, 4.0 * len(directions)), sharey=True)
        lines = list(gpu_lines(part))
        for ax, direction in zip(axes, directions):
            value = getattr(direction, column)
            for colour, (_, rows) in zip(line_colours(len(lines)), lines):
                rows = rows.sort_values(GPU_SIZE)
                ax.plot(rows[GPU_SIZE], rows[value], marker="o", markersize=3, color=colour,
                        label=gpu_label(rows.iloc[0]))
                if (rows[f"{value}_hi"] > rows[f"{value}_lo"]).any():   # several runs: their range
                    ax.fill_between(rows[GPU_SIZE], rows[f"{value}_lo"], rows[f"{value}_hi"], color=colour,
                                    alpha=0.2, linewidth=0)
            size_axis(ax, sizes, "transfer size")
            if log_y:
                ax.set_yscale("log")
            else:
                ax.set_ylim(bottom=0)
            ax.set_ylabel(unit)
            ax.set_title(direction.words)
        axes[-1].legend(fontsize=7, loc="best")
        memory = variant.replace("pinned-", "pinned, ", 1).replace("pageable-", "pageable, ", 1)
        fig.suptitle(f"{title}, {memory} host memory")
        paths += save(fig, figdir, "gpu_xfer", kind, variant)
    return paths


# ---------------------------------------------------------------- findings

SATURATION = 0.95        # a GPU transfer plateau: the sizes reaching 95 % of the largest bandwidth


def plateau_sizes(curve: pd.Series) -> list[int]:
    """The sizes at which a bandwidth curve reaches SATURATION of its maximum, ascending."""
    curve = curve.dropna()
    return [int(s) for s in curve[curve >= SATURATION * curve.max()].index]


def _gpu_memory(policy: str, nodes: str, weight: str) -> tuple[str, str]:
    """A gpu_xfer run's host memory in words, short (titles) and long (summaries). A run under
    the local policy names no node: its memory is on the node of the thread that touches it."""
    name = policy or "default"
    if not nodes:
        where = ", memory on the host thread's node" if policy == "local" else ""
        return name, f"{name} policy{where}"
    weights = f" weights {weight}" if weight else ""
    return f"{name} {nodes}{weights}", f"{name} policy, memory on node(s) {nodes}" + (f" with{weights}" if weight else "")


def _gpu_level(g: pd.DataFrame, column: str, sizes: list[int]) -> tuple[Interval, np.ndarray]:
    """A GPU series' plateau with its interval, and each run's level: each run (repetition) gives
    the median of its log bandwidths over the plateau sizes of the median curve, the plateau is
    their mean, with a t interval over the runs (sizes are never counted as independent); one run
    gives its level with no interval."""
    reps = g[series.REPETITION] if series.REPETITION in g else pd.Series("0", index=g.index)
    per_run = (g.assign(_run=_text(reps)).groupby(["_run", GPU_SIZE])[column].median()
               .unstack(GPU_SIZE).reindex(columns=sizes))
    logs = np.log(per_run.to_numpy(float))
    levels = np.nanmedian(logs[np.isfinite(logs).any(axis=1)], axis=1)
    n = len(levels)
    if n < 2:
        return Interval.unknown(math.exp(levels.mean()), "one run: no interval"), np.exp(levels)
    interval = stats.t_interval(float(levels.mean()), float(levels.std(ddof=1) / math.sqrt(n)), n - 1,
                                method=f"t interval over {n} runs' median log level ({n - 1} df)")
    return interval, np.exp(levels)


def _gpu_interval_text(level: Interval, runs: str, fmt: str) -> str:
    """'51.1 GiB/s (95% interval 50.8 to 51.4, 3 runs)', or '(one run: no interval)'."""
    if not (np.isfinite(level.low) and np.isfinite(level.high)):
        return f"{fmt.format(level.estimate)} (one run: no interval)"
    return (f"{fmt.format(level.estimate)} ({level.level * 100:.0f}% interval {fmt.format(level.low)} to "
            f"{fmt.format(level.high)}, {runs})")


def gpu_transfers(gpu: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """GPU transfer bandwidth plateau per direction and policy, pinned vs pageable, best weights."""
    if gpu is None or gpu.empty or GPU_SIZE not in gpu:
        return []
    df = gpu.copy()
    for col in ("policy", "numa_nodes", "numa_weight", "gpu", "ngpus", "label", "memory", "host"):
        df[col] = _text(df[col]) if col in df else ""
    df["pinned"] = df["pinned"].map(pinning) if "pinned" in df else ""
    findings = []
    plateaus = []
    for direction, column in GPU_BANDWIDTH.items():
        if column not in df or df[column].isna().all():
            continue
        # one series per GPU of a run and per GPU count: 2 GPUs sharing a link are not 1 GPU
        for (policy, nodes, weight, pinned, ngpus, gpu_id, label, host), g in df.groupby(
                ["policy", "numa_nodes", "numa_weight", "pinned", "ngpus", "gpu", "label", "host"]):
            curve = g.groupby(GPU_SIZE)[column].median().dropna().sort_index()
            if len(curve) < 2:
                continue
            band = plateau_sizes(curve)
            start, band_end = band[0], band[-1]
            # "from S on" only where every larger size stays in the band: a curve that falls
            # back at the large sizes (pageable copies often do) peaks, and says where it ends.
            holds = band == [int(s) for s in curve.index if s >= start]
            level, run_levels = _gpu_level(g, column, band)
            value, runs = level.estimate, len(run_levels)
            # what large copies get: the plateau where it holds, else the rate at the largest size
            largest = int(curve.index[-1])
            large, large_runs = (level, run_levels) if holds else _gpu_level(g, column, [largest])
            plateaus.append({"direction": direction, "policy": policy, "numa_nodes": nodes, "numa_weight": weight,
                             "pinned": pinned, "ngpus": ngpus, "gpu": gpu_id, "label": label, "host": host,
                             "plateau_gib_s": value, "from_size_bytes": start, "run_levels": run_levels,
                             "large_gib_s": large.estimate, "large_runs": large_runs})
            as_one = direction in BOTH_AT_ONCE and _timed_as_one(g)
            if as_one and direction == BOTH_AT_ONCE[-1]:
                continue        # said by the first direction of the two, for both
            words = "each direction, both at once" if as_one else DIRECTION_WORDS[direction]
            who = f"{ngpus} GPU{'s' if ngpus not in ('', '1') else ''}, GPU {gpu_id}" + (f", {label}" if label else "")
            short, mem = _gpu_memory(policy, nodes, weight)
            pin = pinned
            runs_text = f"{runs} runs"
            findings.append(Finding(
                id="gpu_plateau", bench="gpu_xfer",
                title=f"GPU copies {words}: {short}, {pin or 'pinning unknown'} ({who})",
                summary=(f"GPU copies {words} ({who}, {pin or 'pinning unknown'}, {mem}) "
                         + (f"reach a plateau of {_gpu_interval_text(level, runs_text, '{:.1f} GiB/s')} from "
                            f"{analysis.size_text(start)} on." if holds else
                            f"move {_gpu_interval_text(large, runs_text, '{:.1f} GiB/s')} at the largest size, "
                            f"{analysis.size_text(largest)}, and peak at "
                            f"{_gpu_interval_text(level, runs_text, '{:.1f} GiB/s')} "
                            + (f"over {analysis.size_text(start)} to {analysis.size_text(band_end)}, the sizes" if band_end != start
                               else f"at {analysis.size_text(start)}, the only size")
                            + f" within {(1 - SATURATION) * 100:.0f}% of the highest.")),
                numbers={"direction": direction, "policy": policy, "numa_nodes": nodes, "numa_weight": weight,
                         "pinned": pinned, "ngpus": ngpus, "gpu": gpu_id, "plateau_gib_s": value,
                         "low": level.low, "high": level.high, "runs": runs, "from_size_bytes": start,
                         "to_size_bytes": band_end, "plateau_holds": holds,
                         "largest_size_gib_s": float(curve.iloc[-1]), "large_size_bytes": largest,
                         "large_gib_s": large.estimate, "large_low": large.low, "large_high": large.high,
                         "words": words},
                evidence=[{"size_bytes": int(s), "gib_s": v} for s, v in curve.items()],
            ))
    table = pd.DataFrame(plateaus)
    if table.empty:
        return findings
    for (direction, policy, nodes, weight, ngpus, gpu_id, label, host), g in table.groupby(
            ["direction", "policy", "numa_nodes", "numa_weight", "ngpus", "gpu", "label", "host"]):
        pins = {p: (v, r) for p, v, r in zip(g["pinned"], g["large_gib_s"], g["large_runs"])}
        pinned, pinned_runs = pins.get("pinned", (None, None))
        pageable, pageable_runs = pins.get("pageable", (None, None))
        if pinned is None or pageable is None:
            continue
        # the runs of each side are independent jobs: a Welch interval over their levels
        ratio, _, _ = stats.welch(pinned_runs, pageable_runs, method="Welch t interval over runs on the log ratio")
        runs = f"{len(pinned_runs)} and {len(pageable_runs)} runs"
        short, mem = _gpu_memory(policy, nodes, weight)
        words = DIRECTION_WORDS[direction]
        findings.append(Finding(
            id="gpu_pinned", bench="gpu_xfer",
            title=f"Pinned vs pageable GPU copies {words} ({short}, {count_words(ngpus, 'GPU')}, GPU {gpu_id})",
            summary=(f"Pinned host memory gives {_gpu_interval_text(ratio, runs, '{:.2f}x')} the bandwidth of "
                     f"pageable memory for large copies {words} ({pinned:.1f} vs {pageable:.1f} GiB/s, each at its "
                     f"plateau where the curve holds one, else at the largest size; {mem})."),
            numbers={"direction": direction, "policy": policy, "numa_nodes": nodes, "pinned_gib_s": pinned,
                     "pageable_gib_s": pageable, "ratio": ratio.estimate, "low": ratio.low, "high": ratio.high,
                     "method": ratio.method},
        ))
    weighted = table[table["numa_weight"] != ""]
    for (direction, nodes, pinned, ngpus, gpu_id, label, host), g in weighted.groupby(
            ["direction", "numa_nodes", "pinned", "ngpus", "gpu", "label", "host"]):
        if len(g) < 2:
            continue
        g = g.sort_values("plateau_gib_s", ascending=False)
        best, worst = g.iloc[0], g.iloc[-1]
        ratio, _, _ = stats.welch(best["run_levels"], worst["run_levels"],
                                  method="Welch t interval over runs on the log ratio")
        runs = f"{len(best['run_levels'])} and {len(worst['run_levels'])} runs"
        findings.append(Finding(
            id="gpu_weights", bench="gpu_xfer",
            title=(f"Best weights for GPU copies {DIRECTION_WORDS[direction]} over nodes {nodes} "
                   f"({pinned or 'pinning unknown'}, {count_words(ngpus, 'GPU')}, GPU {gpu_id})"),
            summary=(f"Weights {best['numa_weight']} over nodes {nodes} give the highest plateau of copies {DIRECTION_WORDS[direction]} "
                     f"({best['plateau_gib_s']:.1f} GiB/s), {_gpu_interval_text(ratio, runs, '{:.2f}x')} "
                     f"weights {worst['numa_weight']}."),
            numbers={"direction": direction, "numa_nodes": nodes, "best_weights": best["numa_weight"],
                     "best_gib_s": best["plateau_gib_s"], "worst_weights": worst["numa_weight"],
                     "worst_gib_s": worst["plateau_gib_s"], "ratio": ratio.estimate, "low": ratio.low,
                     "high": ratio.high, "method": ratio.method},
            evidence=[{"numa_weight": r["numa_weight"], "plateau_gib_s": r["plateau_gib_s"]} for _, r in g.iterrows()],
        ))
    return findings


SIZE = GPU_SIZE
DIRECTIONS = GPU_BANDWIDTH
# What makes two runs the same but for the GPU: the series identity less the GPU's own columns.
RUN = tuple(c for c in COMMON_SERIES + SERIES if c not in ("gpu", "gpu_node"))
# Host memory and transfer settings that must agree between two runs compared by GPU count.
SETTINGS = tuple(c for c in RUN if c != "ngpus")


def _prepare(gpu: pd.DataFrame) -> pd.DataFrame:
    df = gpu.copy()
    for col in RUN + ("gpu", "gpu_node", "numa_nodes", "policy", ser.REPETITION):
        df[col] = _text(df[col]) if col in df else ""
    df[SIZE] = pd.to_numeric(df[SIZE], errors="coerce")
    return df


def _ratio(a: pd.DataFrame, b: pd.DataFrame, sizes: list[int]) -> stats.Interval:
    """a / b over `sizes`: per repetition the mean log ratio, a t interval over repetitions."""
    logs = []
    for rep in sorted(set(a.index.get_level_values(0)) & set(b.index.get_level_values(0))):
        ra, rb = a.loc[rep].reindex(sizes), b.loc[rep].reindex(sizes)
        logs.append(np.log(ra.to_numpy(float) / rb.to_numpy(float)))
    return stats.unit_mean_interval(np.array(logs)) if logs else stats.Interval.unknown(np.nan, "no common repetition")


def _who(row: dict) -> str:
    pin = pinning(row["pinned"])
    mem = f"{row['policy'] or 'default'} {row['numa_nodes']}" + (f" weights {row['numa_weight']}" if row["numa_weight"] else "")
    return ", ".join(x for x in (mem, pin, row.get("label", "")) if x)


def aggregate(gpu: pd.DataFrame | None) -> list[Finding]:
    """Runs of several GPUs at once: their sum against each GPU and against one GPU alone."""
    if gpu is None or gpu.empty or SIZE not in gpu:
        return []
    df = _prepare(gpu)
    run_cols = [c for c in RUN if c in gpu.columns]
    findings = []
    for direction, column in DIRECTIONS.items():
        if column not in df or df[column].isna().all():
            continue
        df[column] = pd.to_numeric(df[column], errors="coerce")
        for key, g in df[pd.to_numeric(df["ngpus"], errors="coerce") > 1].groupby(run_cols):
            row = dict(zip(run_cols, key))
            ngpus = int(row["ngpus"])
            per_gpu = g.groupby([ser.REPETITION, SIZE, "gpu"])[column].median().unstack("gpu")
            if per_gpu.shape[1] != ngpus:
                continue  # a run whose table lacks some of its GPUs is no aggregate
            total = per_gpu.sum(axis=1, min_count=ngpus)  # (repetition, size)
            curve = total.groupby(SIZE).median()
            sizes = plateau_sizes(curve)
            if len(curve) < 2 or not sizes:
                continue
            together = float(curve.reindex(sizes).median())
            each = per_gpu.groupby(SIZE).median().reindex(sizes).median()
            numbers: dict[str, Any] = {
                "direction": direction, "ngpus": ngpus, "aggregate_gib_s": together,
                "per_gpu_gib_s": {str(k): float(v) for k, v in each.items()},
                "from_size_bytes": sizes[0]}
            text = (f"Together the {ngpus} GPUs move {together:.1f} GiB/s (copies {DIRECTION_WORDS[direction]}, {_who(row)}, "
                    f"from {analysis.size_text(sizes[0])} on); each GPU {each.min():.1f} to {each.max():.1f} GiB/s.")
            alone = df[(df["ngpus"] == "1")]
            for col in SETTINGS:
                if col in gpu.columns:
                    alone = alone[alone[col] == row[col]]
            if not alone.empty:
                single = alone.groupby([ser.REPETITION, SIZE])[column].median()
                scaling = _ratio(total.unstack(SIZE), (single * ngpus).unstack(SIZE), sizes)
                numbers["one_gpu_gib_s"] = float(single.groupby(SIZE).median().reindex(sizes).median())
                numbers["scaling"] = {"estimate": scaling.estimate, "low": scaling.low, "high": scaling.high,
                                      "method": scaling.method}
                text += (f" One GPU alone moves {numbers['one_gpu_gib_s']:.1f} GiB/s, so {ngpus} GPUs give "
                         f"{scaling.text()} of {ngpus}x one GPU's.")
            findings.append(Finding(
                id="gpu_aggregate", bench="gpu_xfer",
                title=f"{ngpus} GPUs at once, copies {DIRECTION_WORDS[direction]} ({_who(row)})",
                summary=text, numbers=numbers,
                evidence=[{"size_bytes": int(s), "aggregate_gib_s": float(v)} for s, v in curve.items()],
            ))
    return findings


def host_node(gpu: pd.DataFrame | None) -> list[Finding]:
    """Per GPU: host memory on its own NUMA node against each other single node."""
    if gpu is None or gpu.empty or SIZE not in gpu or "gpu_node" not in gpu:
        return []
    df = _prepare(gpu)
    single = df[~df["numa_nodes"].str.contains(",") & (df["numa_nodes"] != "")]
    findings = []
    for direction, column in DIRECTIONS.items():
        if column not in single or single[column].isna().all():
            continue
        values = single.assign(v=pd.to_numeric(single[column], errors="coerce"))
        keys = [c for c in ("system", "host", "label", "pages", "ngpus", "pinned", "gpu", "gpu_node") if c in gpu]
        for key, g in values.groupby(keys):
            row = dict(zip(keys, key))
            own_node = row["gpu_node"]
            by_node = {n: h.groupby([ser.REPETITION, SIZE])["v"].median().unstack(SIZE)
                       for n, h in g.groupby("numa_nodes")}
            if own_node not in by_node or len(by_node) < 2:
                continue
            own = by_node.pop(own_node)
            sizes = plateau_sizes(own.median())
            if not sizes:
                continue
            ratios = {n: _ratio(own, other, sizes) for n, other in by_node.items()}
            worst = max(ratios, key=lambda n: ratios[n].estimate)
            r = ratios[worst]
            own_gib = float(own.median().reindex(sizes).median())
            findings.append(Finding(
                id="gpu_host_node", bench="gpu_xfer",
                title=f"GPU {row['gpu']}'s host node, copies {DIRECTION_WORDS[direction]} ({count_words(row['ngpus'], 'GPU')})",
                summary=(f"GPU {row['gpu']} (on node {own_node}) moves {own_gib:.1f} GiB/s (copies {DIRECTION_WORDS[direction]}) with host "
                         f"memory on its own node, {r.text('{:.2f}x')} what it moves with memory on node {worst}"
                         + (f"; nodes {', '.join(sorted(n for n in ratios if n != worst))} lie between"
                            if len(ratios) > 1 else "") + "."),
                numbers={"direction": direction, "gpu": row["gpu"], "gpu_node": own_node, "ngpus": row["ngpus"],
                         "own_gib_s": own_gib, "farthest_node": worst,
                         "ratio": {n: {"estimate": i.estimate, "low": i.low, "high": i.high} for n, i in ratios.items()}},
                evidence=[{"numa_node": n, "ratio": i.estimate, "low": i.low, "high": i.high, "method": i.method}
                          for n, i in ratios.items()],
            ))
    return findings


def node_cells(gpu: pd.DataFrame | None) -> dict[str, dict[tuple[int, int], tuple[Interval, int, int]]]:
    """Direction -> (host node, GPU) -> (plateau with its interval over runs, the GPU's own node
    (-1: not known), the number of runs): host memory on one node, pinned runs where there are any, each GPU alone
    (the fewest GPUs at once measured), the plateau sizes of each cell's own median curve."""
    if gpu is None or gpu.empty or SIZE not in gpu or "gpu" not in gpu:
        return {}
    df = _prepare(gpu)
    df = df[~df["numa_nodes"].str.contains(",") & (df["numa_nodes"] != "")]
    if "pinned" in df and (df["pinned"] == "1").any():
        df = df[df["pinned"] == "1"]
    if df.empty:
        return {}
    df = df[pd.to_numeric(df["ngpus"]) == pd.to_numeric(df["ngpus"]).min()]
    out: dict[str, dict[tuple[int, int], tuple[Interval, int, int]]] = {}
    for direction, column in DIRECTIONS.items():
        if column not in df or df[column].isna().all():
            continue
        values = df.assign(**{column: pd.to_numeric(df[column], errors="coerce")})
        for (node, gpu_id, own), g in values.groupby(["numa_nodes", "gpu", "gpu_node"]):
            sizes = plateau_sizes(g.groupby(SIZE)[column].median())
            if sizes:
                level, runs = _gpu_level(g, column, sizes)
                out.setdefault(direction, {})[(int(node), int(gpu_id))] = (level, int(own or -1), len(runs))
    return {d: cells for d, cells in out.items() if len(cells) > 1}


def node_matrix(gpu: pd.DataFrame | None) -> list[Finding]:
    """The host node x GPU matrix of plateaus per direction, each GPU's own node marked."""
    found = []
    for direction, cells in node_cells(gpu).items():
        gpus = sorted({g for _, g in cells})
        parts = []
        for g in gpus:
            own = next(o for (_, gg), (_, o, _) in cells.items() if gg == g)
            where = f"on node {own}" if own >= 0 else "node not known"
            row = ", ".join(f"node {n}{' (own)' if n == own else ''} "
                            + _gpu_interval_text(level, count_words(runs, "run"), "{:.1f}")
                            for (n, gg), (level, _, runs) in sorted(cells.items()) if gg == g)
            parts.append(f"GPU {g} ({where}): {row}")
        found.append(Finding(
            id="gpu_node_matrix", bench="gpu_xfer",
            title=f"Host memory node by GPU, copies {DIRECTION_WORDS[direction]}",
            summary=f"Plateau bandwidth in GiB/s by host memory node, copies {DIRECTION_WORDS[direction]}, each GPU alone: "
                    + "; ".join(parts) + ".",
            numbers={"direction": direction, "claim": False},
            evidence=[{"numa_node": n, "gpu": g, "own_node": own, **analysis.interval_numbers("gib_s", level)}
                      for (n, g), (level, own, _) in sorted(cells.items())],
        ))
    return found


def plot_node_matrix(gpu: pd.DataFrame, topology: Topology | None, figdir: Path) -> list[Path]:
    """One panel per direction: plateau by host node (rows) and GPU (columns), own node boxed."""
    cells = node_cells(gpu)
    if not cells:
        return []
    fig, axes = new_figure(ncols=len(cells), width=max(6.5, 4.5 * len(cells)))
    for ax, (direction, by_cell) in zip(axes, cells.items()):
        own = {g: o for (_, g), (_, o, _) in by_cell.items()}
        matrix = pd.Series({cell: level.estimate for cell, (level, _, _) in by_cell.items()}).unstack()
        matrix.columns = [f"GPU {g}" + (f" (node {own[g]})" if own[g] >= 0 else "") for g in matrix.columns]
        heatmap(ax, matrix, "plateau (GiB/s)", ".1f", "host memory node", "GPU")
        for j, g in enumerate(sorted(own)):
            if own[g] in matrix.index:
                i = list(matrix.index).index(own[g])
                ax.add_patch(Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False, linewidth=2.5, edgecolor="crimson"))
        ax.set_title(direction)
    fig.suptitle("Host-device plateau by host memory node and GPU (each GPU's own node boxed)")
    return save(fig, figdir, "gpu_xfer", "gpu_node_matrix", "pinned")


def findings(gpu: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    return aggregate(gpu) + host_node(gpu) + node_matrix(gpu)


def headline(gpu: pd.DataFrame, topology: Topology | None = None) -> list[list[str]]:
    """Host-device rates per direction and host memory (pinned, pageable), in GiB/s as the kernel
    measures them, for host memory local to the GPU (or the first policy measured) and the fewest
    GPUs: what large copies get (the plateau where the curve holds one, else the rate at the
    largest size, with the peak of the smaller sizes beside it, named), the `gpu_transfers`
    findings' numbers, one row each."""
    found = [f.numbers for f in gpu_transfers(gpu, topology) if f.numbers.get("large_gib_s") is not None]
    if not found:
        return []
    policies = sorted({str(n.get("policy", "")) for n in found}, key=lambda p: p != "local")
    ngpus = sorted({str(n.get("ngpus", "")) for n in found}, key=lambda n: (len(n), n))
    gpus = sorted({str(n.get("gpu", "")) for n in found}, key=lambda n: (len(n), n))
    rows = []
    for n in found:
        if (str(n.get("policy", "")), str(n.get("ngpus", "")), str(n.get("gpu", ""))) != (policies[0], ngpus[0], gpus[0]):
            continue
        value = n["large_gib_s"]
        if not np.isfinite(value):
            continue
        low, high, runs = n.get("large_low"), n.get("large_high"), int(n.get("runs") or 1)
        interval = (f"{low:.1f} to {high:.1f} GiB/s ({runs} runs)" if runs > 1 and low is not None
                    and np.isfinite(low) and np.isfinite(high) else "one run: no interval")
        text = f"{value:.1f} GiB/s"
        if not n.get("plateau_holds"):
            peak_at = size_words(n["from_size_bytes"]) + (f" to {size_words(n['to_size_bytes'])}"
                                                         if n["to_size_bytes"] != n["from_size_bytes"] else "")
            text += f" at {size_words(n['large_size_bytes'])}; peak {n['plateau_gib_s']:.1f} at {peak_at}"
        rows.append([f"GPU copies {n['words']}, {n.get('pinned')} host memory, GPU {n.get('gpu')} "
                     f"(GiB/s, 2^30 bytes/s)", text, interval])
    return rows


BENCH = register(Bench(
    name="gpu_xfer",
    title="Host-device transfers",
    launch=Launch(
        kernels=("gpu_xfer", GPU_XFER_HIP),
        by="gpus",
        expand=expand,
        check=check,
    ),
    tables=Tables(
        required=("ngpus", GPU_SIZE, "read_bw(gib/s)", "write_bw(gib/s)"),
        positive=("ngpus", GPU_SIZE, "read_bw(gib/s)", "write_bw(gib/s)"),
        axis=GPU_SIZE,
        series=SERIES,
        within=WITHIN,
        numeric=("ngpus", "gpu", "gpu_node", GPU_SIZE),
        sizes=(GPU_SIZE,),
        words={"ngpus": "#GPU", "gpu": "GPU", "gpu_node": "GPU node"},
    ),
    analyse=lambda table, topo: [functools.partial(gpu_transfers, table, topo),
                                 functools.partial(findings, table, topo)],
    presentation=Presentation(
        category="Host-device transfers",
        variant="host memory",
        figures=(
            Figure("gpu_bandwidth", "Host-device transfer bandwidth against transfer size for each host memory "
                   "policy and weights, one panel per direction measured (host to device, device to host, then each "
                   "of the two when both run at once); the band spans the runs' lowest to highest where there are "
                   "several.",
                   draw=plot_gpu_bandwidth),
            Figure("gpu_latency", "Host-device transfer time against transfer size for each host memory policy "
                   "and weights, host to device left, device to host right; the band spans the runs' lowest to "
                   "highest where there are several.",
                   draw=plot_gpu_latency),
            Figure("gpu_node_matrix", "Host-device plateau bandwidth by host memory node (rows) and GPU (columns), "
                   "one panel per direction, each GPU alone, the GPU's own node boxed.",
                   draw=plot_node_matrix),
        ),
        report=gpu_raw_tables,
        subjects={"Bandwidth": (("gpu_plateau", "gpu_pinned", "gpu_weights", "gpu_aggregate", "gpu_host_node",
                                 "gpu_node_matrix"), ("gpu_bandwidth", "gpu_latency", "gpu_node_matrix"))},
        headline=headline,
    ),
    checks=Checks(
        metrics={"read_bw(gib/s)": True, "write_bw(gib/s)": True},
        not_checked="gpu_xfer records no within-run spread, timer or first-touch columns to check; its "
                    "threads' share of time on their CPUs (on_cpu_pct) goes into each job's quality verdict",
    ),
))
