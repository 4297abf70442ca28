"""Jobs of the loaded-latency, core-to-core and mixed-bandwidth benchmarks from their config
sections (schema: `loaded_latency`, `c2c`, `mix_bandwidth` in config.schema.yaml).

These kernels pin their own threads, so each job gives the wrapper one CPU set (`--cpuset`) and
tells the kernel which CPUs of it do what; memory placement is the kernel's own `--policy`
(bound per buffer), read back per row from its page columns."""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from numasweep import benches
from numasweep.planning import placement
from numasweep.core.errors import NumasweepError
from numasweep.core.units import format_cpulist, format_size, parse_size


def _grid():  # grid imports this module; the reverse import happens at call time
    from numasweep.planning import grid

    return grid


def _size(value: Any, where: str) -> str:
    try:
        return format_size(parse_size(value))
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None


def memory_args(topo: Any, spec: str, where: str) -> list[str]:
    """A memory spec of the config as the kernels' own options (`local`: each thread's node)."""
    try:
        mem = placement.parse_memory(spec)
        placement.check_memory(topo, mem)
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None
    if mem.kind == "local":
        return ["--local-memory"]
    policy = {"node": "bind", "nodes": "bind"}.get(mem.kind, mem.kind)
    args = [f"--policy={policy}", f"--mem-nodes={','.join(map(str, mem.nodes))}"]
    if mem.kind == "weighted":
        args.append(f"--weights={','.join(map(str, mem.weights or ()))}")
    return args


def _free(topo: Any, nodes: list[int]) -> list[int]:
    return [c for n in nodes for c in topo.free_cores(n)]


def loaded_latency(topo: Any, sweeps: list[dict]) -> Iterator:
    grid = _grid()
    for i, sw in enumerate(sweeps):
        where = f"loaded_latency.sweeps[{i}]"
        for key in ("chase_nodes", "memory_nodes"):
            grid._check_nodes(topo, sw[key], f"{where}.{key}")
        for k, nodes in enumerate(sw["load_nodes"]):
            grid._check_nodes(topo, nodes, f"{where}.load_nodes[{k}]")
        size = _size(sw["size"], f"{where}.size")
        delays = ",".join(str(d) for d in sw["delays"])
        for chase_node, mem_node, load_nodes, threads, rep in itertools.product(
            sw["chase_nodes"], sw["memory_nodes"], sw["load_nodes"], sw["load_threads"], range(sw["repetitions"])
        ):
            free = list(topo.free_cores(chase_node))
            if not free:
                raise NumasweepError(f"{where}.chase_nodes: node {chase_node} has no free core for the chase")
            chase = free[0]
            pool = [c for c in _free(topo, list(load_nodes)) if c != chase]
            if threads > len(pool):
                raise NumasweepError(
                    f"{where}.load_threads: {threads} load threads asked on node(s) "
                    f"{','.join(map(str, load_nodes))}, which have {len(pool)} free cores besides the chase's; "
                    "lower load_threads or add load_nodes")
            cpus = tuple([chase] + pool)
            yield grid.Job(
                bench="loaded_latency",
                id=(f"{grid._prefix('ll', sw['label'])}-c{chase_node}-m{mem_node}-l{grid._nodes_word(load_nodes)}"
                    f"-t{threads}-{sw['strategy']}-rep{rep}"),
                kernel=benches.LOADED_LATENCY.kernel,
                grid={"label": sw["label"] or "", "memory": f"node:{mem_node}",
                      "load_nodes": grid._nodes_word(load_nodes), "repetition": rep},
                kernel_args=tuple([f"--size={size}", f"--chase-cpu={chase}", f"--strategy={sw['strategy']}",
                                   f"--load-threads={threads}", f"--traffic={','.join(sw['traffic'])}",
                                   f"--delay={delays}", "--policy=bind", f"--mem-nodes={mem_node}"]
                                  + list(sw["extra_args"])),
                threads=len(cpus),
                cpus=cpus,
            )


def c2c_cpus(topo: Any, choice: str, where: str) -> list[int]:
    """`all` free cores, `per_l3` the first free core of each L3 group, or a CPU list."""
    free = _free(topo, topo.node_ids())
    if choice == "all":
        return free
    if choice == "per_l3":
        picked = [next((c for c in group if c in free), None) for group in topo.l3_groups]
        if not topo.l3_groups or None in picked:
            raise NumasweepError(f"{where}: per_l3 needs every L3 group of the topology to have a free core")
        return sorted(picked)
    from numasweep.core.units import parse_cpulist

    try:
        cpus = parse_cpulist(choice)
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None
    missing = sorted(set(cpus) - set(topo.all_cpus()))
    if missing:
        raise NumasweepError(f"{where}: CPU(s) {format_cpulist(missing)} are not in the topology '{topo.system}'; "
                             "pick CPUs it has")
    return cpus


def c2c(topo: Any, sweeps: list[dict]) -> Iterator:
    grid = _grid()
    for i, sw in enumerate(sweeps):
        where = f"c2c.sweeps[{i}]"
        grid._check_nodes(topo, sw["line_nodes"], f"{where}.line_nodes")
        cpus = c2c_cpus(topo, str(sw["cpus"]), f"{where}.cpus")
        if len(cpus) < 2:
            raise NumasweepError(f"{where}.cpus: {len(cpus)} CPU gives no pair; give at least two CPUs")
        for line_node, rep in itertools.product(sw["line_nodes"], range(sw["repetitions"])):
            yield grid.Job(
                bench="c2c",
                id=f"{grid._prefix('c2c', sw['label'])}-{sw['cpus']}-line{line_node}-rep{rep}".replace(",", "."),
                kernel=benches.C2C.kernel,
                grid={"label": sw["label"] or "", "memory": f"node:{line_node}", "cpu_set": str(sw["cpus"]),
                      "repetition": rep},
                kernel_args=tuple([f"--cpus={format_cpulist(cpus)}", f"--pairs={sw['pairs']}",
                                   f"--round-trips={sw['round_trips']}", "--policy=bind", f"--mem-nodes={line_node}"]
                                  + list(sw["extra_args"])),
                threads=len(cpus),
                cpus=tuple(cpus),
            )


def mix_bandwidth(topo: Any, sweeps: list[dict]) -> Iterator:
    grid = _grid()
    for i, sw in enumerate(sweeps):
        where = f"mix_bandwidth.sweeps[{i}]"
        size = [] if sw["size"] is None else [f"--size={_size(sw['size'], where + '.size')}"]
        memories = ["matrix"] if sw["matrix"] else sw["memory"]
        for k, nodes in enumerate(sw["cpu_nodes"]):
            grid._check_nodes(topo, nodes, f"{where}.cpu_nodes[{k}]")
        for nodes, threads, memory, rep in itertools.product(
            sw["cpu_nodes"], sw["threads"], memories, range(sw["repetitions"])
        ):
            pool = _free(topo, list(nodes))
            need = threads * (len(nodes) if sw["matrix"] else 1)
            if need > len(pool):
                raise NumasweepError(f"{where}.threads: {threads} threads asked on node(s) "
                                     f"{','.join(map(str, nodes))}, which have {len(pool)} free cores; lower threads")
            mem = ["--matrix"] if memory == "matrix" else memory_args(topo, memory, f"{where}.memory")
            yield grid.Job(
                bench="mix_bandwidth",
                id=(f"{grid._prefix('mix', sw['label'])}-c{grid._nodes_word(nodes)}-t{threads}-"
                    f"{grid.memory_word(memory)}-rep{rep}"),
                kernel=benches.MIX_BANDWIDTH.kernel,
                # the kernel writes its own `memory` column (local, bind, ...): the spec goes apart
                grid={"label": sw["label"] or "", "memory_spec": memory, "repetition": rep},
                kernel_args=tuple([f"--cpu-nodes={','.join(map(str, nodes))}", f"--strategy={sw['strategy']}",
                                   f"--threads={threads}", f"--traffic={','.join(sw['traffic'])}"] + size + mem
                                  + list(sw["extra_args"])),
                threads=len(pool),
                cpus=tuple(pool),
            )
