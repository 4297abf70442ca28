"""Memory latency (`numa_latency`, MPI): a random pointer chase per rank over buffers of a swept
size, the ranks placed by strategy (sequential, or one core per L3 group) over NUMA domains, their
memory local, on a node, interleaved or weighted, all at once (concurrent) or one at a time
(serial), with 4 KiB or huge pages.

Its parts: `plan` (the grid and its checks), `tables` (one row per point of a series),
`findings` (cache levels, TLB, locality, contention, outliers, rank scaling), `figures` and
`report` (raw tables, the cache tally, placement, modes, two systems side by side).
"""

from __future__ import annotations

import functools

from numasweep.benches import common
from numasweep.benches.latency import figures, findings, locality, plan, quality, report
from numasweep.benches.latency.tables import KERNEL, NAME, SERIES, WITHIN
from numasweep.core.registry import ON_CPU_MEASURES, Bench, Checks, Claim, Figure, Launch, Presentation, Tables, register
from numasweep.findings import firmware


def _against_firmware(table, topo) -> list:
    return firmware.firmware_findings(figures.node_samples(table, topo), topo, "latency_ns", NAME)


def _analyse(table, topo) -> list:
    return findings.latency_parts(table, topo) + [functools.partial(locality.latency_locality, table, topo),
                                                  functools.partial(findings.rank_scaling, table, topo),
                                                  functools.partial(_against_firmware, table, topo)]


BENCH = register(Bench(
    name=NAME,
    title="Memory latency",
    launch=Launch(
        kernels=(KERNEL,),
        by="mpi",
        expand=plan.expand,
        check=plan.check,
    ),
    tables=Tables(
        required=("rank", "cpu", "size_bytes", "latency_ns_median"),
        positive=("size_bytes", "latency_ns_median"),
        axis="size_bytes",
        series=SERIES,
        within=WITHIN,
        numeric=("size_bytes",),
        sizes=("size_bytes",),
        matrix=figures.node_samples,
        matrix_of="latency_ns",
        placement=(("page_fractions", "mem_nodes", "rank", "ranks"),),
    ),
    analyse=_analyse,
    presentation=Presentation(
        category="Memory latency",
        variant="mode",
        figures=(
            Figure("latency_vs_size", "Load-to-use latency of a random pointer chase against buffer size "
                   "(the median over runs), one line per rank, each its own colour (a node's second L3 group dashed), with the cache "
                   "sizes marked; the band around a line "
                   "spans its runs' fastest to slowest sample where the kernel recorded them.",
                   draw=figures.plot_latency_vs_size),
            Figure("concurrent_vs_serial", "Latency measured with all ranks running at once divided by the "
                   "latency of the same rank running alone, against buffer size.",
                   draw=figures.plot_concurrent_vs_serial),
            Figure("latency_matrix", "Latency by the NUMA node of the CPU (rows) and of the memory (columns) "
                   "where the headline reads DRAM: each curve at the end of its memory plateau, before any rise "
                   "beyond it, the median over its runs and ranks; a row per L3 group where one cell would mix "
                   "ranks of two L3 groups, and \"not measured\" in a cell no run measured.",
                   draw=figures.plot_latency_matrix),
            Figure("rank_scaling", "Median latency over the ranks of a run against ranks per domain at the "
                   "largest buffer size, one line per placement and domain set (cores in order solid, one core "
                   "per L3 group in turn dashed), its band the fastest to the slowest rank.",
                   draw=figures.plot_rank_scaling),
            Figure("latency_pages", "Latency against buffer size with 4 KiB and with huge pages on one axis, "
                   "one line per page kind and rank: where the two part, the TLB no longer covers the buffer.",
                   draw=figures.plot_pages),
            Figure("cross_latency_vs_size", "Median latency over ranks against buffer size on each system, one "
                   "panel per mode."),
        ),
        subjects={
            "Caches": (("cache_threshold", "cache_unseen", "cache_untested"), ("latency_vs_size",)),
            "TLB": (("tlb_cost",), ("latency_pages",)),
            "DRAM and NUMA locality": (("latency_locality", "latency_ordering", "domain_asymmetry"), ("latency_matrix",)),
            "Contention and concurrency": (("mode_divergence",), ("concurrent_vs_serial",)),
            "Rank scaling": (("rank_scaling", "placement_scaling"), ("rank_scaling",)),
            "Data quality": (("equivalent_runs", "anomaly", "not_latency"), ()),
        },
        report=report.report,
        headline=report.headline,
        cross=report.cross,
    ),
    checks=Checks(
        on_cpu=ON_CPU_MEASURES,
        metrics={"latency_ns_median": False},
        quality=quality.QUALITY,
        spread=common.LATENCY_SPREAD,
        claims={
            "cache_threshold": Claim("step_ratio", spans=("mode", "page_size", "locality", "config")),
            "mode_divergence": Claim("plateau_ratio", when="differs", equivalent="overall_ratio"),
            "domain_asymmetry": Claim("plateau_ratio", when="differs", equivalent="overall_ratio"),
            "tlb_cost": Claim("max_ratio", when="peak_claimed"),
            "latency_ordering": Claim("ratio"),
            "latency_locality": Claim(equivalent="geomean_ratio", states=("geomean_ratio",)),
            "anomaly": Claim("relative"),
            "equivalent_runs": Claim("plateau_ratio"),
            "rank_scaling": Claim(states=("ratio",)),
            "placement_scaling": Claim(states=("ratio",)),
            "cache_unseen": Claim(nothing="names the caches the tested sizes should show and the curve does not"),
            "cache_untested": Claim(nothing="names the caches outside the tested sizes"),
            "not_latency": Claim(nothing="says why a curve is not read as a latency curve"),
        },
    ),
))
