"""The bandwidth grid: one job per CPU node, memory, thread count, access pattern and repetition;
and the arrays checked against the memory they are placed on and the last-level cache."""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from numasweep.benches.bandwidth.tables import KERNEL, NAME
from numasweep.core.units import format_size
from numasweep.planning import checks, grid


def expand(topo: Any, section: dict) -> Iterator[grid.Job]:
    sweeps = section["sweeps"]
    for i, sw in enumerate(sweeps):
        where = f"bandwidth.sweeps[{i}]"
        grid.check_nodes(topo, sw["cpu_nodes"], f"{where}.cpu_nodes")
        for m, spec in enumerate(sw["memory"]):
            grid.check_memory(topo, spec, f"{where}.memory[{m}]")
    setup = calibration_setup(topo, section)
    for i, sw in enumerate(sweeps):
        where = f"bandwidth.sweeps[{i}]"
        array = (
            []
            if sw["array_size"] is None
            else [f"--array-size={format_size(grid.one_size(sw['array_size'], where + '.array_size'))}"]
        )
        for node, memory, threads, pattern, rep in itertools.product(
            sw["cpu_nodes"], sw["memory"], sw["threads"], sw["pattern"], range(sw["repetitions"])
        ):
            cpus = grid.cpus_on(topo, node, threads, f"{where}.threads")
            pat = "" if pattern == "sequential" else f"-{pattern}"
            # Compared: every memory placement and thread count of one sweep from one CPU node (the
            # locality finding compares remote with local memory, the weights findings weightings
            # with each other and with local-only memory and uniform interleave).
            yield grid.Job(
                bench=NAME,
                id=f"{grid.id_prefix('bw', sw['label'])}-c{node}-{grid.memory_word(memory)}-t{threads}{pat}-rep{rep}",
                kernel=KERNEL,
                grid={
                    "label": sw["label"] or "",
                    "cpu_node": node,
                    "memory": memory,
                    "repetition": rep,
                },
                kernel_args=tuple(
                    [
                        f"--kernels={','.join(sw['kernels'])}",
                        f"--pattern={pattern}",
                        f"--ntimes={sw['ntimes']}",
                    ]
                    + array
                    + list(sw["extra_args"])
                ),
                threads=threads,
                cpus=cpus,
                memory=memory,
                compared=f"{grid.id_prefix('bw', sw['label'])}-c{node}{pat}-rep{rep}",
                setup=setup if calibrated(sw) else None,
            )


def calibrated(sweep: dict) -> bool:
    """Whether a sweep's jobs run the shapes the machine's calibration decided (--shapes): all
    but those whose extra_args fix a shape by hand (--variant)."""
    return not any(str(a).startswith("--variant") for a in sweep["extra_args"])


def calibration_setup(topo: Any, section: dict) -> grid.Setup | None:
    """The one calibration of a campaign (numasweep.benches.bandwidth.calibration), or None where
    no sweep's jobs use it: `bandwidth.calibration.threads` threads on the first CPUs of the first
    sweep's first CPU node, memory local, that sweep's arrays, every kernel the sweeps measure (in
    fleet mode on the first fleet node: a fleet is of one kind, numasweep.planning.slurm)."""
    sweeps = [sw for sw in section["sweeps"] if calibrated(sw)]
    if not sweeps:
        return None
    cal, first = section["calibration"], sweeps[0]
    node = first["cpu_nodes"][0]
    kernels = [k for k in ("copy", "scale", "add", "triad", "read", "write") if any(k in sw["kernels"] for sw in sweeps)]
    array = ([] if first["array_size"] is None
             else [f"--array-size={format_size(grid.one_size(first['array_size'], 'bandwidth.sweeps[0].array_size'))}"])
    job = grid.Job(bench=NAME, id="calibration", kernel=KERNEL, grid={"cpu_node": node},
                   kernel_args=(f"--calibrate={cal['rounds']}", f"--kernels={','.join(kernels)}", *array),
                   threads=cal["threads"],
                   cpus=grid.cpus_on(topo, node, cal["threads"], "bandwidth.calibration.threads"))
    return grid.Setup(id="calibration", job=job, command="calibrate",
                      outputs=("calibration.json", "calibration.shapes", "calibration.csv"), option="--shapes",
                      again=cal["again"])


def check(topo: Any, section: dict) -> list[str]:
    """Three arrays that fit the memory they are placed on; a warning for arrays under
    LLC_FACTOR x the last-level cache of their CPUs (the bandwidth is then partly the cache's)."""
    warnings = []
    for where, sw in checks.sweeps(section, "bandwidth"):
        size = None if sw["array_size"] is None else checks.one_size(sw["array_size"])
        if size is None:
            continue
        for spec in sw["memory"]:
            checks.fit(topo, f"{where}.array_size", size, spec, sw["cpu_nodes"], buffers=3)
        warnings += [w for w in (checks.under_cache(topo, where, size, node, "array_size")
                                 for node in sw["cpu_nodes"]) if w]
    return warnings
