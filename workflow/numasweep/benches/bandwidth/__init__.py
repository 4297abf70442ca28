"""STREAM-style bandwidth (`numa_bandwidth`): threads on a CPU node streaming arrays in memory
local, on a node, interleaved or weighted, swept over thread counts, access patterns and kernels.

Its parts: `plan` (the grid and its checks), `tables` (one row per point of a series),
`findings` (the theoretical peak, saturation, locality, weightings compared; the model in its
docstring), `weights` (the weighted-interleave weights the measured matrix recommends), `figures`,
`report` (raw tables, bytes counted, headline, two systems side by side) and `quality`.
"""

from __future__ import annotations

import functools

from numasweep.benches import common
from numasweep.benches.bandwidth import figures, findings, plan, quality, report, weights
from numasweep.benches.bandwidth.tables import KERNEL, NAME, SERIES, WITHIN
from numasweep.core.registry import ON_CPU_MEASURES, Bench, Checks, Claim, Figure, Launch, Presentation, Spread, Tables, register
from numasweep.findings import firmware


def _against_firmware(table, topo) -> list:
    """The bandwidth matrix beside HMAT (numasweep.findings.firmware)."""
    return firmware.firmware_findings(figures.bandwidth_samples(table), topo, "bandwidth_mb_s", NAME)


BENCH = register(Bench(
    name=NAME,
    title="Memory bandwidth (STREAM)",
    launch=Launch(
        kernels=(KERNEL,),
        by="threads",
        expand=plan.expand,
        check=plan.check,
    ),
    tables=Tables(
        required=("kernel", "threads", "best_mb_s", "validation"),
        positive=("threads", "best_mb_s"),
        axis="threads",
        series=SERIES,
        within=WITHIN,
        numeric=("stride", "array_bytes"),
        sizes=("array_bytes",),
        matrix=figures.bandwidth_samples,
        matrix_of="bandwidth_mb_s",
        placement=(("page_fractions", "mem_nodes", "job_id", "jobs"),),
    ),
    analyse=lambda table, topo: [functools.partial(findings.bandwidth_peak, table, topo),
                                 functools.partial(findings.bandwidth_saturation, table, topo),
                                 functools.partial(findings.bandwidth_locality, table, topo),
                                 functools.partial(weights.recommended_weights, table, topo),
                                 functools.partial(weights.weighted_pages, table, topo),
                                 functools.partial(_against_firmware, table, topo)],
    presentation=Presentation(
        category="Memory bandwidth",
        variant="kernel",
        figures=(
            Figure("bandwidth_vs_threads", "Best STREAM bandwidth against thread count (the median over runs of "
                   "each run's best, as the tables give it), one line per CPU node and memory node, local and "
                   "remote; the band below a line reaches down to the slowest of the kernel's timed iterations "
                   "where it recorded them.",
                   draw=figures.plot_bandwidth_vs_threads),
            Figure("bandwidth_matrix", "Best STREAM bandwidth at the highest thread count by CPU node (rows) "
                   "and memory node (columns).",
                   draw=figures.plot_bandwidth_matrix),
        ),
        report=report.bandwidth_raw_tables,
        subjects={"Bandwidth": (("bandwidth_peak", "bandwidth_saturation", "bandwidth_locality", "bandwidth_ordering",
                                 "bandwidth_weights", "weights_verified", "weighted_pages", "recommended_weights"),
                                ("bandwidth_vs_threads", "bandwidth_matrix"))},
        headline=report.headline,
        cross=report.cross,
    ),
    checks=Checks(
        on_cpu=ON_CPU_MEASURES,
        metrics={"best_mb_s": True},
        quality=quality.QUALITY,
        spread=Spread("best_mb_s", "avg_mb_s", "best_mb_s", common.RATE_SPREAD_PCT),
        claims={
            "bandwidth_saturation": Claim("rise", states=("rise",)),
            "bandwidth_locality": Claim("ratio", when="differs", states=("ratio",)),
            "bandwidth_ordering": Claim("ratio", states=("ratio",)),
            "bandwidth_weights": Claim("ratio", when="differs", states=("ratio",)),
            "weights_verified": Claim("ratio", when="differs", equivalent="ratio"),
            "weighted_pages": Claim(states=("worst_off",)),
            "recommended_weights": Claim(nothing="the weights it recommends, or why none, from the rates of each "
                                                 "node alone in its table"),
            "bandwidth_peak": Claim(states=("best_gb_s",)),
        },
    ),
))
