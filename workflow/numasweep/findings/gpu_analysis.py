"""GPU transfers by GPU count and by GPU, beyond each GPU's own plateau (analysis.gpu_transfers):

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

from typing import Any

import numpy as np
import pandas as pd

from numasweep.findings import analysis
from numasweep import benches
from numasweep.statistics import stats
from numasweep.results import tables
from numasweep.results import series as ser
from numasweep.findings.analysis import Finding

SIZE = benches.GPU_SIZE
DIRECTIONS = benches.GPU_BANDWIDTH
# What makes two runs the same but for the GPU: the series identity less the GPU's own columns.
RUN = tuple(c for c in ser.SERIES["gpu_xfer"] if c not in ("gpu", "gpu_node"))
# Host memory and transfer settings that must agree between two runs compared by GPU count.
SETTINGS = tuple(c for c in RUN if c != "ngpus")


def _prepare(gpu: pd.DataFrame) -> pd.DataFrame:
    df = gpu.copy()
    for col in RUN + ("gpu", "gpu_node", "numa_nodes", "policy", ser.REPETITION):
        df[col] = tables.as_text(df[col]) if col in df else ""
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
    pin = {"1": "pinned", "true": "pinned", "0": "pageable", "false": "pageable"}.get(str(row["pinned"]).lower(), "")
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
            sizes = analysis.plateau_sizes(curve)
            if len(curve) < 2 or not sizes:
                continue
            together = float(curve.reindex(sizes).median())
            each = per_gpu.groupby(SIZE).median().reindex(sizes).median()
            numbers: dict[str, Any] = {
                "direction": direction, "ngpus": ngpus, "aggregate_gib_s": together,
                "per_gpu_gib_s": {str(k): float(v) for k, v in each.items()},
                "from_size_bytes": sizes[0]}
            text = (f"Together the {ngpus} GPUs move {together:.1f} GiB/s ({direction}s, {_who(row)}, "
                    f"from {analysis._sz(sizes[0])} on); each GPU {each.min():.1f} to {each.max():.1f} GiB/s.")
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
                title=f"{ngpus} GPUs at once, {direction}s ({_who(row)})",
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
            sizes = analysis.plateau_sizes(own.median())
            if not sizes:
                continue
            ratios = {n: _ratio(own, other, sizes) for n, other in by_node.items()}
            worst = max(ratios, key=lambda n: ratios[n].estimate)
            r = ratios[worst]
            own_gib = float(own.median().reindex(sizes).median())
            findings.append(Finding(
                id="gpu_host_node", bench="gpu_xfer",
                title=f"GPU {row['gpu']}'s host node, {direction}s ({row['ngpus']} GPU(s))",
                summary=(f"GPU {row['gpu']} (on node {own_node}) moves {own_gib:.1f} GiB/s ({direction}s) with host "
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


def findings(gpu: pd.DataFrame | None, topology: Any = None) -> list[Finding]:
    return aggregate(gpu) + host_node(gpu)
