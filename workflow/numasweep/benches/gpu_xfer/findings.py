"""gpu_xfer's findings: the plateau per direction and host memory, pinned against pageable, the
best weights, what the GPUs of one run move together, and host memory on the GPU's own node
against each other node (the package's docstring says how each is read)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from numasweep.core.registry import COMMON_SERIES
from numasweep.core.topology import Topology
from numasweep.core.units import count_words
from numasweep.findings import analysis
from numasweep.findings.analysis import Finding
from numasweep.results import series
from numasweep.results import series as ser
from numasweep.results.tables import as_text as _text
from numasweep.statistics import stats
from numasweep.statistics.stats import Interval
from numasweep.benches.gpu_xfer.tables import BOTH_AT_ONCE, DIRECTION_WORDS, GPU_BANDWIDTH, GPU_SIZE, SERIES, pinning, timed_as_one


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
    the median over the runs, with the model's interval on it (`stats.center_interval`: sizes are
    never counted as independent); at one size that is the value every table gives the point; one
    run gives its level with no interval."""
    reps = g[series.REPETITION] if series.REPETITION in g else pd.Series("0", index=g.index)
    per_run = (g.assign(_run=_text(reps)).groupby(["_run", GPU_SIZE])[column].median()
               .unstack(GPU_SIZE).reindex(columns=sizes))
    logs = np.log(per_run.to_numpy(float))
    levels = np.exp(np.nanmedian(logs[np.isfinite(logs).any(axis=1)], axis=1))
    if len(levels) < 2:
        return Interval.unknown(float(np.median(levels)), "one run: no interval"), levels
    return stats.center_interval(levels), levels


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
            as_one = direction in BOTH_AT_ONCE and timed_as_one(g)
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
        # the runs of each side are independent jobs: the quotient of the two levels printed
        # beside it, its interval from each side's spread
        ratio = stats.quotient(stats.center_point(pinned_runs), stats.center_point(pageable_runs))
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




def across_gpus_and_nodes(gpu: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    return aggregate(gpu) + host_node(gpu) + node_matrix(gpu)
