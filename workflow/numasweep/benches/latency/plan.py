"""The latency grid: one job per placement strategy, domain set, ranks per domain, memory, mode,
page size and repetition, its ranks placed by `planning.placement`; and the sizes checked against
the memory they are placed on."""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from numasweep.benches.latency.tables import KERNEL
from numasweep.core.errors import NumasweepError
from numasweep.planning import checks, grid, placement


def expand(topo: Any, section: dict) -> Iterator[grid.Job]:
    sweeps = section["sweeps"]
    for i, sw in enumerate(sweeps):
        where = f"latency.sweeps[{i}]"
        for d, domains in enumerate(sw["domains"]):
            grid.check_nodes(topo, domains, f"{where}.domains[{d}]")
        for m, spec in enumerate(sw["memory"]):
            grid.check_memory(topo, spec, f"{where}.memory[{m}]")
        sizes = grid.sizes_arg(sw["sizes"], f"{where}.sizes")
        # Modes, page sizes and repetitions share a placement: plan each one once.
        placements: dict[tuple, tuple] = {}
        for strategy, domains, rpd, memory, mode, pages, rep in itertools.product(
            sw["strategy"],
            sw["domains"],
            sw["ranks_per_domain"],
            sw["memory"],
            sw["mode"],
            sw["pages"],
            range(sw["repetitions"]),
        ):
            key = (strategy, tuple(domains), rpd, memory)
            if key not in placements:
                try:
                    placements[key] = tuple(placement.plan(topo, strategy, list(domains), rpd, memory=memory))
                except NumasweepError as exc:
                    raise NumasweepError(f"{where}: {exc}") from None
            ranks = placements[key]
            page_word = "" if pages == "4k" else f"-{pages}"
            job_id = (
                f"{grid.id_prefix('lat', sw['label'])}-{strategy}-d{grid.nodes_word(domains)}-r{rpd}-"
                f"{grid.memory_word(memory)}-{mode}{page_word}-rep{rep}"
            )
            # Compared: the modes of one placement and the rank counts of one series.
            compared = (
                f"{grid.id_prefix('lat', sw['label'])}-{strategy}-d{grid.nodes_word(domains)}-"
                f"{grid.memory_word(memory)}{page_word}-rep{rep}"
            )
            args = [f"--size={sizes}", f"--pages={pages}"]
            if mode == "serial":
                args.append("--serial")
            yield grid.Job(
                bench="latency",
                id=job_id,
                kernel=KERNEL,
                grid={
                    "label": sw["label"] or "",
                    "strategy": strategy,
                    "domains": ",".join(map(str, domains)),
                    "ranks_per_domain": rpd,
                    "memory": memory,
                    "pages": pages,
                    "repetition": rep,
                },
                kernel_args=tuple(args + list(sw["extra_args"])),
                tasks=len(ranks),
                threads=1,
                placements=ranks,
                compared=compared,
            )


def check(topo: Any, section: dict) -> list[str]:
    """Each size fits the memory it is placed on."""
    for where, sw in checks.sweeps(section, "latency"):
        cpu_nodes = sorted({n for domains in sw["domains"] for n in domains})
        for size in checks.size_list(sw["sizes"]):
            for spec in sw["memory"]:
                checks.fit(topo, f"{where}.sizes", size, spec, cpu_nodes)
    return []
