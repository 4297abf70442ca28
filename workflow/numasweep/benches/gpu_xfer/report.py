"""gpu_xfer in the report: its raw tables and its rows of the summary's headline table."""

from __future__ import annotations


import numpy as np
import pandas as pd

from numasweep.core.topology import Topology
from numasweep.core.units import size_words
from numasweep.reporting.markdown import md_table
from numasweep.benches.gpu_xfer.findings import gpu_transfers
from numasweep.benches.gpu_xfer.tables import GPU_SIZE, TIMED_DIRECTIONS, gpu_configurations, gpu_label, gpu_table


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
