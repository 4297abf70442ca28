"""gpu_xfer's grid and plan-time checks: one job per GPU count, host memory, pinning and
repetition, driven from the CPUs of the GPUs' node; sizes against host memory, GPUs and host cores."""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from numasweep.core.errors import NumasweepError, Unavailable
from numasweep.planning import checks, grid


# The HIP build of gpu_xfer, which a sweep on AMD GPUs runs instead of the CUDA one.
GPU_XFER_HIP = "gpu_xfer_hip"



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
