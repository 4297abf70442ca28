"""A benchmark added from outside the package (NUMASWEEP_BENCHES names this file): `toy`, whose
kernel numa_toy (numa_toy.c beside this file) times writing a buffer of each size. It gives one
finding (`toy_rate`), one figure (`toy_rate`) and one raw table, under the report's Bandwidth
subject. The record is made in `bench()` alone; its config section is toy.schema.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from numasweep.core.registry import ON_CPU_MEASURES, Bench, Checks, Claim, Figure, Launch, Presentation, Tables, register
from numasweep.findings.analysis import Finding
from numasweep.planning import grid
from numasweep.reporting.figures import new_figure, save
from numasweep.reporting.markdown import md_table

NAME, KERNEL, VALUE = "toy", "numa_toy", "ns_per_kib_median"


def expand(topo: Any, section: dict) -> list[grid.Job]:
    return [grid.Job(bench=NAME, id=f"{grid.id_prefix(NAME, sw['label'])}-{i}-rep0", kernel=KERNEL,
                     grid={"label": sw["label"] or "", "repetition": 0},
                     kernel_args=(f"--size={','.join(map(str, sw['sizes']))}", f"--samples={sw['samples']}"),
                     cpus=tuple(grid.cpus_on(topo, topo.node_ids()[0], 1, f"{NAME}.sweeps[{i}]")))
            for i, sw in enumerate(section["sweeps"])]


def rate(table: pd.DataFrame | None) -> list[Finding]:
    if table is None or table.empty:
        return []
    values = pd.to_numeric(table[VALUE], errors="coerce")
    return [Finding(id="toy_rate", bench=NAME, title="Toy buffer writes",
                    summary=(f"Writing a buffer takes {np.median(values):.2f} ns per KiB (median over "
                             f"{len(values)} sizes)."),
                    numbers={"ns_per_kib": float(np.median(values)), "sizes": len(values)},
                    evidence=[{"size_bytes": int(r["size_bytes"]), "ns_per_kib": float(r[VALUE])}
                              for _, r in table.iterrows()])]


def plot_rate(table: pd.DataFrame | None, topology: Any, figdir: Path) -> list[Path]:
    if table is None or table.empty:
        return []
    fig, (ax,) = new_figure()
    ax.plot(table["size_bytes"], table[VALUE], marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("buffer size (bytes)")
    ax.set_ylabel("ns per KiB written")
    return save(fig, figdir, NAME, "toy_rate", "all")


def report(table: pd.DataFrame, topology: Any, findings: list[dict]) -> list[dict]:
    rows = [[int(r["size_bytes"]), float(r[VALUE])] for _, r in table.iterrows()]
    return [{"title": "Toy buffer writes", "table": md_table(["bytes", "ns per KiB"], rows)}]


def bench() -> Bench:
    return Bench(
        name=NAME, title="Toy buffer writes",
        launch=Launch(kernels=(KERNEL,), by="threads", expand=expand),
        tables=Tables(required=("size_bytes", VALUE), positive=("size_bytes", VALUE), axis="size_bytes",
                      series=(), within=()),
        analyse=lambda table, topo: [lambda: rate(table)],
        presentation=Presentation(
            category="Toy buffer writes", variant="panels",
            figures=(Figure("toy_rate", "Time to write a buffer, per KiB, by its size.", draw=plot_rate),),
            report=report, subjects={"Bandwidth": (("toy_rate",), ("toy_rate",))}),
        checks=Checks(on_cpu=ON_CPU_MEASURES, metrics={VALUE: False}, not_checked="numa_toy records no columns about its own runs",
                      claims={"toy_rate": Claim(states=("ns_per_kib",))}),
    )


BENCH = register(bench())
