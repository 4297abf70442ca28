"""Plan-time checks of a config against the topology it will run on: what the schema cannot
know and a kernel would refuse (or, worse, accept) only once its job runs.

`against_topology(config, topo)` takes the validated config (defaults filled) and
raises a NumasweepError naming the key, the value and the fix for:

- a size larger than the memory of the node(s) it is placed on (latency and gpu_xfer
  `sizes`, copy `size`, bandwidth `array_size` times its three arrays);
- `extra_args` the kernel's own parser refuses (`KERNEL --check-args ...`, which parses and
  exits before looking at the machine), when the kernel is built: `extra_args(config, jobs)`,
  called once the jobs are expanded, with one job's whole option list per sweep;
- an `srun_mpi` plugin that `srun --mpi=list` does not list, where srun answers, or that is no
  plugin name at all (it is quoted into every launch line);
- more GPUs than the topology has, or than host CPUs to drive them (one thread per GPU).

It returns the warnings a campaign should see but may run with (a bandwidth array under 4x
the last-level cache measures the cache, not memory; a setting a sweep ignores; an
`srun_mpi` that no srun here can check); `warn` prints them. `without_thp(jobs,
topo)` leaves out the `pages: thp` jobs of a machine detected from sysfs whose transparent huge
pages are off (the kernel would refuse them), with one warning line.
Unknown nodes are left to grid.expand, which names them.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

from numasweep.core import registry
from numasweep.planning import placement
from numasweep.core import isa, system_state
from numasweep.core.errors import NumasweepError
from numasweep.core.units import format_size, parse_size, parse_sizes

BIN_DIR = Path(__file__).resolve().parents[3] / "build" / "bin"


def against_topology(config: dict, topo: Any) -> list[str]:
    """Raise on the first problem (one line); return the warnings. Each benchmark checks its own
    section (`Bench.launch.check`: sizes against memory, GPUs, arrays against caches)."""
    warnings: list[str] = []
    for bench in registry.all_benches().values():
        section = config.get(bench.name) or {}
        if bench.launch.check and section.get("sweeps"):
            warnings += bench.launch.check(topo, section)
    warnings += _srun_mpi(config)
    return warnings


def warn(lines: list[str]) -> None:
    for line in lines:
        print(f"numasweep: warning: {line}", file=sys.stderr)


# ---------------------------------------------------------------- memory


def _memory_of(topo: Any, nodes: list[int]) -> int | None:
    """Bytes the nodes hold together; None when one is unknown or its memory unrecorded."""
    try:
        sizes = [topo.node(n).memory_bytes for n in nodes]
    except NumasweepError:
        return None
    return sum(sizes) if sizes and all(sizes) else None


def _targets(spec: str, cpu_nodes: list[int]) -> list[list[int]]:
    """The node sets one buffer may be placed on: each CPU node for `local`, each named node for
    a bind or preference, all named nodes together for an interleave."""
    try:
        mem = placement.parse_memory(spec)
    except NumasweepError:
        return []  # grid.expand names the bad spec
    if mem.kind == "local":
        return [[n] for n in cpu_nodes]
    if mem.kind in ("interleave", "weighted"):
        return [list(mem.nodes)]
    return [[n] for n in mem.nodes]


def fit(topo: Any, where: str, size: int, spec: str, cpu_nodes: list[int], buffers: int = 1) -> None:
    for nodes in _targets(spec, cpu_nodes):
        have = _memory_of(topo, nodes)
        if have is not None and size * buffers > have:
            names = "node" + ("s " if len(nodes) > 1 else " ") + ",".join(map(str, nodes))
            need = f"{format_size(size)}" + (f" ({buffers} arrays: {format_size(size * buffers)})" if buffers > 1 else "")
            raise NumasweepError(
                f"{where}: {need} is more than the {format_size(have)} of memory on {names} "
                f"(memory '{spec}', topology '{topo.system}'); use a smaller size"
            )


def sweeps(section: dict, bench: str) -> Iterator[tuple[str, dict]]:
    """(key path, sweep) of each sweep of a benchmark's config section."""
    for i, sw in enumerate((section or {}).get("sweeps") or []):
        yield f"{bench}.sweeps[{i}]", sw


def size_list(value: Any) -> list[int]:
    try:
        return parse_sizes(value)
    except NumasweepError:
        return []  # grid.expand names the bad size


def one_size(value: Any) -> int | None:
    try:
        return parse_size(value)
    except NumasweepError:
        return None


# STREAM's rule: each buffer of a bandwidth kernel at least 4x the last-level caches it runs under.
LLC_FACTOR = 4


def under_cache(topo: Any, where: str, size: int, node: int, key: str) -> str | None:
    """The warning for a bandwidth buffer under LLC_FACTOR x the last-level cache of a node's
    CPUs (what is measured is then partly the cache); None where it is larger or the cache unknown."""
    try:
        llc = topo.llc_bytes(topo.node(node).cpus)
    except NumasweepError:
        return None
    if not llc or size >= LLC_FACTOR * llc:
        return None
    return (f"{where}.{key}: {format_size(size)} < {LLC_FACTOR}x node {node}'s last-level cache ({format_size(llc)}): "
            f"partly the cache's bandwidth; give {format_size(LLC_FACTOR * llc)} or more")


# ---------------------------------------------------------------- pages


def without_thp(jobs: list, topo: Any) -> tuple[list, list[str]]:
    """The jobs, less those with `pages: thp` where the topology was detected from a sysfs tree
    whose transparent huge pages are `never` (numa_latency --pages=thp would refuse: its buffer
    gets no huge page); and the warning saying so. An arch file's machine is not looked at."""
    source = str(getattr(topo, "source", ""))
    if not source.startswith("sysfs:"):
        return jobs, []
    path = Path(source.split(":", 1)[1])
    if system_state.thp_enabled(path) != "never":
        return jobs, []
    kept = [j for j in jobs if j.grid.get("pages") != "thp"]
    if len(kept) == len(jobs):
        return jobs, []
    return kept, [f"pages: thp: transparent huge pages are off on this machine ({path}/kernel/mm/"
                  f"transparent_hugepage/enabled: never), so its {len(jobs) - len(kept)} thp job(s) are left out "
                  "and the report cannot tell the TLB from the caches; enable them with `echo madvise > "
                  "/sys/kernel/mm/transparent_hugepage/enabled`, or drop thp from `pages`"]


# ---------------------------------------------------------------- launcher


@functools.lru_cache(maxsize=None)
def srun_plugins() -> tuple[str, ...] | None:
    """The --mpi plugins `srun --mpi=list` names (pmix_v4 included), or None where srun is absent
    or cannot answer (no SLURM configuration here)."""
    if shutil.which("srun") is None:
        return None
    try:
        proc = subprocess.run(["srun", "--mpi=list"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names: list[str] = []
    for line in (proc.stdout + proc.stderr).splitlines():
        if line[:1] in (" ", "\t") and line.split():
            names.append(line.split()[-1])
        elif "plugin versions available:" in line:
            names += [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return tuple(names) or None


DEFAULT_SRUN_MPI = "pmix"  # the schema's default: said only when a config chose another
SRUN_PLUGIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _srun_mpi(config: dict) -> list[str]:
    """Refuse a plugin this srun does not list, or one no srun could (it goes into every launch
    line); where srun is absent, say that a value other than the default is not checked."""
    value = config.get("srun_mpi")
    if not value:
        return []
    if config.get("launcher") != "srun":
        return []
    if not SRUN_PLUGIN.match(str(value)):
        raise NumasweepError(f"srun_mpi: {value!r} is not an MPI plugin name (letters, digits, '_', '.' and '-', "
                             "e.g. pmix); see `srun --mpi=list` on the cluster, or null for the site's default")
    known = srun_plugins()
    if known is None and value != DEFAULT_SRUN_MPI:
        return [f"srun_mpi: '{value}' cannot be checked here (srun is missing or cannot answer `srun --mpi=list`); "
                "the jobs will fail at launch if the cluster's srun lacks it"]
    if known is not None and value not in known:
        raise NumasweepError(
            f"srun_mpi: '{value}' is not an MPI plugin of this srun (`srun --mpi=list`: {', '.join(known)}); "
            "use one of them, or null for the site's default"
        )
    return []


# ---------------------------------------------------------------- kernel options


def extra_args(config: dict, jobs: list, bin_dir: Path = BIN_DIR) -> None:
    """Each sweep's `extra_args`, with the options of one of its jobs, through the kernel's own
    parser (`--check-args`): refused at plan time rather than when that job runs."""
    for bench in {job.bench for job in jobs}:
        for where, sw in sweeps(config.get(bench) or {}, bench):
            args = tuple(str(a) for a in sw.get("extra_args") or [])
            job = next((j for j in jobs if j.bench == bench and j.kernel_args[len(j.kernel_args) - len(args):] == args),
                       None)
            if args and job is not None:
                _kernel_accepts(bin_dir / job.kernel, list(job.kernel_args), args, f"{where}.extra_args")


def _kernel_accepts(binary: Path, args: list[str], extra: tuple[str, ...], where: str) -> None:
    """The kernel's own parser on the arguments; a kernel not built yet, or built for a CPU this
    one is not (a compute node's build, read on a login node or another node: it would die of
    SIGILL here), is asked at run time, where its job runs."""
    if not binary.exists():
        return
    try:
        isa.check(binary, where)
    except NumasweepError:
        return
    try:
        proc = subprocess.run([str(binary), "--check-args", *args], capture_output=True, text=True, timeout=20)
    except OSError as exc:
        raise NumasweepError(f"{where}: cannot run {binary} to check them ({exc}); rebuild with `make -C kernels`") from None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        said = lines[-1] if lines else f"exit status {proc.returncode}"
        raise NumasweepError(f"{where}: {' '.join(extra)} refused by the kernel: {said}; fix or drop them")
