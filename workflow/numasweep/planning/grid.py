"""The sweep a config asks for, as a list of jobs: one per grid point, each with a stable id.

`expand(config, topology)` is pure: it validates the config against
workflow/schemas/config.schema.yaml (filling defaults), checks every node, domain and GPU
against the topology, and returns the jobs in config order. The id of a job is built only from
its grid values, so the same config gives the same ids and result paths on every run:
`lat-interleaved-d0.1.2.3-r2-local-concurrent-rep0` -> results/<system>/latency/<id>.csv.

`python -m numasweep grid --config FILE [--set KEY=VALUE] [--arch FILE | --detect]` prints the jobs.
"""

from __future__ import annotations

import argparse
import copy
import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import yaml

from numasweep.core import registry, topology
from numasweep.planning import batch, checks, fleet, paths, placement, slurm
from numasweep.core.errors import NumasweepError, Unavailable
from numasweep.core.io import load_yaml, pattern_problem
from numasweep.core.units import parse_size, parse_sizes

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"


@dataclass(frozen=True)
class Job:
    """One benchmark run: what to launch and the grid values it stands for."""

    bench: str
    id: str
    kernel: str
    grid: dict[str, Any]  # the grid columns of the aggregated CSV
    kernel_args: tuple[str, ...]  # kernel options, without --csv
    tasks: int = 1  # MPI ranks, or 1
    threads: int = 1  # OpenMP threads, or host threads driving GPUs
    gpus: int = 0  # GPUs used at once
    placements: tuple = ()  # MPI benchmarks: placement.RankPlacement per rank
    cpus: tuple[int, ...] = ()  # non-MPI jobs: the CPUs the threads run on
    memory: str = "local"  # non-MPI jobs: the memory spec numactl applies
    # The comparison the point belongs to: the points one finding compares share it (concurrent
    # and serial of one placement, the rank counts of one scaling series, the memory placements
    # of one bandwidth sweep); "" for a point compared with none. Config `group_compared` runs each
    # comparison as one SLURM job group (workflow/rules/benchmarks.smk).
    compared: str = ""
    # What runs once per results folder and kernel build before this job, whose file its kernel
    # reads (Setup); None for most jobs.
    setup: "Setup | None" = None


@dataclass(frozen=True)
class Setup:
    """A step a benchmark runs once per results folder (host) and kernel build before the points
    that name it, e.g. bandwidth's calibration of its code shapes: its launch (`job`: kernel, CPUs,
    kernel options, writing the table `outputs[2]`), the numasweep command that runs it and decides
    (`python -m numasweep COMMAND --launch LINE --kernel K --results DIR --log LOG`), the files it
    writes in the results folder (`outputs`: its record, a JSON each point's provenance keeps; the
    file the points' kernel reads; its table), the kernel option that names that file in a point's
    launch line, and a config value whose change makes it run again (a param of its rule)."""

    id: str
    job: Job
    command: str
    outputs: tuple[str, str, str]
    option: str
    again: int = 0

    @property
    def record(self) -> str:
        return self.outputs[0]

    @property
    def reads(self) -> str:
        return self.outputs[1]

    @property
    def table(self) -> str:
        return self.outputs[2]


@dataclass
class Plan:
    """The jobs, plus the benchmarks that were left out and why (for the report)."""

    jobs: list[Job]
    skipped: dict[str, str] = field(default_factory=dict)

    def by_bench(self, bench: str) -> list[Job]:
        return [j for j in self.jobs if j.bench == bench]

    def benches(self) -> list[str]:
        return [b for b in registry.names() if self.by_bench(b)]


# ---------------------------------------------------------------- config validation


def _fill_defaults(validator_class: type) -> type:
    """A validator that writes each schema `default` into the config it checks.

    Defaults of nested objects are filled before those objects are checked, so a missing
    `latency:` section becomes `{sweeps: []}` and each sweep gets every key.
    """
    validate_properties = validator_class.VALIDATORS["properties"]
    validate_items = validator_class.VALIDATORS["items"]

    def set_defaults(validator, properties, instance, schema):  # noqa: ANN001
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
                elif name in instance:
                    instance[name] = _from_text(instance[name], sub)
        yield from validate_properties(validator, properties, instance, schema)

    def items_from_text(validator, items, instance, schema):  # noqa: ANN001
        if isinstance(instance, list) and isinstance(items, dict):
            instance[:] = [_from_text(v, items) for v in instance]
        yield from validate_items(validator, items, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults, "items": items_from_text})


def _from_text(value: Any, schema: dict) -> Any:
    """Snakemake's `--config key=...` reads every value inside a mapping or list as text
    (`--config gpu_xfer='{force: true}'` gives the text 'true'): text that spells the boolean or
    the number the schema asks for is taken as one; anything else is left to the validation."""
    if not isinstance(value, str):
        return value
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        schema = _schema().get("$defs", {}).get(ref[len("#/$defs/"):], {})
    types = schema.get("type", [])
    types = types if isinstance(types, list) else [types]
    if "boolean" in types and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if ("integer" in types or "number" in types) and re.fullmatch(r"[+-]?\d+", value.strip()):
        return int(value)
    if "number" in types:
        try:
            return float(value)
        except ValueError:
            return value
    return value


_Validator = _fill_defaults(jsonschema.Draft202012Validator)


def key_path(path: Any) -> str:
    """['latency', 'sweeps', 0, 'strategy'] -> 'latency.sweeps[0].strategy'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _describe(error: jsonschema.ValidationError) -> str:
    where = key_path(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        known = ", ".join(sorted(error.schema.get("properties", {})))
        return f"{where}: unknown key {', '.join(map(repr, extra))}; known keys: {known}"
    if error.validator == "required":
        return f"{where}: {error.message}; add it"
    if error.validator == "minItems" and error.instance == []:
        return f"{where}: empty list; give at least one value"
    if error.validator == "oneOf" and _refused_value(error):
        return f"{where}: {error.instance!r} {_refused_value(error)}; expected {_expected(error.schema)}"
    if error.validator in ("type", "oneOf"):
        return f"{where}: wrong type ({error.instance!r}); expected {_expected(error.schema)}"
    if error.validator in ("pattern", "maxLength") and pattern_problem(error):
        return f"{where}: {pattern_problem(error)}"
    if error.validator == "pattern":
        return f"{where}: {error.instance!r} is malformed; {error.schema.get('description', 'see config/README.md').strip()}"
    return f"{where}: {error.message}"


def _refused_value(error: jsonschema.ValidationError) -> str | None:
    """For a value of a type one of the oneOf choices takes but whose bounds refuse it (a negative
    delay, 0 pairs, an empty string), what is wrong with it; None for a value of no such type."""
    for sub in error.context or ():
        # an item of a list that is refused: named by its place in the list
        item = f"holds {sub.instance!r} at {key_path(sub.relative_path)}, which " if sub.relative_path else ""
        if sub.validator in ("minimum", "exclusiveMinimum"):
            return f"{item}is too small"
        if sub.validator in ("maximum", "exclusiveMaximum"):
            return f"{item}is too large"
        if sub.validator == "minLength" and sub.instance == "":
            return f"{item}is empty"
        if sub.validator == "minItems":
            count = len(sub.instance)
            return f"{item}has {count} item{'s' * (count != 1)}, fewer than {sub.validator_value}"
        if sub.validator == "oneOf" and sub.relative_path and _refused_value(sub):
            return f"{item}{_refused_value(sub)}".replace(f"which {sub.instance!r} ", "which ")
    return None


def _expected(schema: dict) -> str:
    """What a schema accepts, in words: 'integer', 'string or null', "'all' or array",
    'integer from 0 to 100', 'integer >= 1', 'non-empty string'."""
    if "type" in schema:
        t = schema["type"]
        words = " or ".join(t) if isinstance(t, list) else t
        if "minimum" in schema and "maximum" in schema:
            return f"{words} from {schema['minimum']} to {schema['maximum']}"
        if "minimum" in schema:
            return f"{words} >= {schema['minimum']}"
        if schema.get("minLength") == 1:
            return f"non-empty {words}"
        if "minItems" in schema:
            return f"{words} of at least {schema['minItems']} items"
        return words
    if "oneOf" in schema:
        return " or ".join(_expected(s) for s in schema["oneOf"])
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "const" in schema:
        return repr(schema["const"])
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    return "see config/README.md"


def load_schema() -> dict:
    return copy.deepcopy(_schema())


@functools.lru_cache(maxsize=1)
def _schema() -> dict:
    # Read once per process: Snakefile validates the config and then expands it, and YAML
    # parsing of the schema is a noticeable part of a dry run's start-up.
    return load_yaml(SCHEMA_PATH, "schema")


def validate_config(config: dict, source: str = "config") -> dict:
    """The config with defaults filled in, or a NumasweepError naming the key path."""
    config = copy.deepcopy(dict(config))
    for name in registry.all_benches():
        if name not in _schema()["properties"]:  # a benchmark from NUMASWEEP_BENCHES whose section is not there
            raise NumasweepError(f"benchmark '{name}' is registered but {SCHEMA_PATH} has no section '{name}'; add its "
                                 f"section under properties there (tests/toy_bench/toy.schema.yaml is one), or drop "
                                 f"its module from {registry.EXTRA}")
    validator = _Validator(_schema())  # the validator only reads the schema
    errors = sorted(
        validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path)))
    )
    if errors:
        # The deepest error names the key a user must change; oneOf branches report on
        # the parent, so prefer an error that is not a oneOf summary.
        worst = max(errors, key=lambda e: len(e.absolute_path))
        raise NumasweepError(f"{source}: {_describe(worst)}")
    if config["group_compared"] and config["batch"] > 1:
        raise NumasweepError(f"{source}: group_compared and batch: {config['batch']} cannot be combined (a batch packs "
                             "points by their resources, a group by what is compared); set batch: 1 or "
                             "group_compared: false")
    nodes = list(config["fleet"]["nodes"])
    for i, node in enumerate(nodes):
        if node in nodes[:i]:
            raise NumasweepError(f"{source}: fleet.nodes[{i}]: '{node}' is listed twice (also fleet.nodes"
                                 f"[{nodes.index(node)}]); list each node once")
    return config


def config_topology(arch: str, source: str = "config") -> Any:
    """The topology the config's `arch` names (`auto`: this machine's); a bad file is named
    under its key."""
    if arch == "auto":
        return topology.detect()
    try:
        return topology.load(arch)
    except NumasweepError as exc:
        raise NumasweepError(f"{source}: arch: {exc}") from None


def load_config_file(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise NumasweepError(f"{path}: no such config file")
    data = load_yaml(path, "config") or {}
    if not isinstance(data, dict):
        raise NumasweepError(f"{path}: the config must be a mapping of keys")
    return data


# ---------------------------------------------------------------- ids


def memory_word(spec: str) -> str:
    """A memory spec as an id word: 'interleave:0,1' -> 'interleave0.1', 'weighted:0,3@1,2' -> 'weighted0.3w1.2'."""
    return spec.replace(":", "").replace(",", ".").replace("@", "w")


def nodes_word(nodes: list[int]) -> str:
    return ".".join(map(str, nodes))


def id_prefix(short: str, label: str | None) -> str:
    return f"{short}-{label}" if label else short


# ---------------------------------------------------------------- expansion per bench


def check_nodes(topo: Any, nodes: list[int], where: str) -> None:
    known = topo.node_ids()
    for n in nodes:
        if n not in known:
            raise NumasweepError(
                f"{where}: node {n} is not in the topology '{topo.system}' (nodes {', '.join(map(str, known))}); "
                "change the config or the arch file"
            )


def check_memory(topo: Any, spec: str, where: str) -> None:
    try:
        placement.check_memory(topo, placement.parse_memory(spec))
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None


def cpus_on(topo: Any, node: int, count: int, where: str) -> tuple[int, ...]:
    free = list(topo.free_cores(node))
    if count > len(free):
        raise NumasweepError(
            f"{where}: {count} threads asked on node {node}, which has {len(free)} free cores; lower the thread count"
        )
    return tuple(free[:count])


def sizes_arg(value: Any, where: str) -> str:
    """Validate a size list and give it back in the kernels' spelling."""
    try:
        parse_sizes(value)
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def one_size(value: Any, where: str) -> int:
    try:
        return parse_size(value)
    except NumasweepError as exc:
        raise NumasweepError(f"{where}: {exc}") from None


# ---------------------------------------------------------------- the whole plan


def expand(config: dict, topo: Any, source: str = "config") -> Plan:
    """Every job the config asks for on this topology, or a NumasweepError naming the key path."""
    config = validate_config(config, source)
    checks.warn(checks.against_topology(config, topo))
    jobs: list[Job] = []
    skipped: dict[str, str] = {}
    for bench in registry.all_benches().values():
        section = config[bench.name]
        if not section["sweeps"]:
            continue
        try:
            jobs += list(bench.launch.expand(topo, section))
        except Unavailable as why:
            skipped[bench.name] = str(why)
    jobs, thp_warnings = checks.without_thp(jobs, topo)
    checks.warn(thp_warnings)
    if not jobs and skipped:
        # e.g. a GPU campaign on a machine without GPUs: the reason, not "add a sweep".
        raise NumasweepError(f"{source}: no job to run: " + "; ".join(f"{b}: {w}" for b, w in skipped.items()))
    if not jobs:
        raise NumasweepError(
            f"{source}: the sweep is empty: the sweeps of {', '.join(registry.names())} give no job; add a sweep "
            "(see config/config.yaml)"
        )
    checks.extra_args(config, jobs)
    seen: dict[str, Job] = {}
    repeated: list[str] = []
    for job in jobs:
        other = seen.get(job.id)
        if other is not None and other != job:
            raise NumasweepError(
                f"{source}: two {job.bench} sweeps give the job id '{job.id}' with different settings; "
                "set a distinct `label` on one of them"
            )
        if other is not None:
            repeated.append(job.id)
        seen[job.id] = job
    if repeated:
        checks.warn([f"{source}: {len(repeated)} grid point(s) are asked for twice with the same settings (e.g. "
                     f"'{repeated[0]}'): each is measured once; drop the repeated value or sweep, or use "
                     "repetitions to measure a point again"])
    return Plan(jobs=list(seen.values()), skipped=skipped)


def measures(config: dict, benches: list[str]) -> list[dict]:
    """What the sweeps of a validated config say they measure (their `measures`), for the
    report's configuration section: one entry per sweep of these benchmarks that says it."""
    return [{"bench": bench, "sweep": i + 1, "label": sw["label"], "measures": sw["measures"].strip()}
            for bench in benches for i, sw in enumerate(config[bench]["sweeps"]) if sw["measures"]]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m numasweep grid", description="List the jobs a config expands to."
    )
    ap.add_argument("--config", required=True, action="append",
                    help="config YAML layered over config/config.yaml, as `snakemake --configfile` "
                         "does (repeat to layer files)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a value on top, as `snakemake --config KEY=VALUE` (or a profile's `config:`)")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--arch", help="arch file or topology.json (default: the config's `arch`)")
    src.add_argument("--detect", action="store_true", help="detect this machine from sysfs")
    ap.add_argument("--partition", help="SLURM: the profile's slurm_partition, whose compute node `arch: auto` "
                                        "plans from where this machine is no node of the cluster")
    ap.add_argument("--count", action="store_true",
                    help="print only the number of jobs per benchmark (and of batches, with batch > 1)")
    args = ap.parse_args(argv)

    check_assignment_keys(args.set)
    config = layered_config(args.config, args.set)
    for line in overridden(args.config, config):
        print(f"numasweep: warning: {line}", file=sys.stderr)
    checked = validate_with_assignments(config, args.config, args.set)
    # The wrapper is run (so checked) by the workflow, from the checkout; grid only plans.
    paths.check_config_paths(checked, ",".join(args.config), skip=("wrapper",) + ("arch",) * bool(args.arch or args.detect))
    # every job once per node of a fleet, as the workflow plans it (fleet.spread)
    fleet_nodes, left_out = fleet.nodes(checked["fleet"])
    if left_out:
        print(f"numasweep: warning: {left_out}", file=sys.stderr)
    if args.detect:
        topo = topology.detect()
    elif args.arch and args.arch != "auto":
        topo = topology.load(args.arch)
    else:
        # as the workflow plans: on a login node, from the compute node's kept (or new) detection
        arch, line, _ = slurm.planned_arch(args.arch or checked["arch"], checked["launcher"],
                                           {"slurm_partition": args.partition} if args.partition else {},
                                           fleet_nodes)
        if line:
            print(f"numasweep: {line}", file=sys.stderr)
        topo = config_topology(arch, ",".join(args.config))
    plan = fleet.spread(expand(config, topo, ",".join(args.config)), fleet_nodes)
    if args.count:
        jobs = batch_counts(plan, checked, checked["system"] or topo.system)
        for bench in registry.names():
            print(f"{bench}\t{len(plan.by_bench(bench))}" + (f"\t{jobs[bench]} batches" if jobs else ""))
    else:
        for job in plan.jobs:
            print(f"{job.bench}\t{job.id}")
    for bench, why in plan.skipped.items():
        print(f"# {bench} skipped: {why}")
    return 0


def batch_counts(plan: Plan, config: dict, system: str) -> dict[str, int]:
    """Snakemake jobs per benchmark with `batch` > 1, as snakemake plans them (the plan spread
    over a fleet's nodes already; launch lines with the config's launcher); {} with batch 1, a
    job each."""
    if config["batch"] == 1:
        return {}
    jobs = plan.jobs
    options = batch.point_options(jobs, f"results/{system}", launcher=config["launcher"], wrapper=config["wrapper"],
                                  srun_mpi=config["srun_mpi"])
    found = batch.batches(jobs, config["batch"], options)
    return {bench: sum(b.bench == bench for b in found) for bench in registry.names()}


# The config Snakefile loads with `configfile:` before any --configfile: layered under every
# user file, by `snakemake` and by `python -m numasweep grid` alike.
DEFAULT_CONFIG = Path(__file__).resolve().parents[3] / "config" / "config.yaml"


def parse_assignments(values: list[str]) -> dict:
    """`KEY=VALUE` pairs (`snakemake --config`, a profile's `config:`) as a config dict; the
    value is read as YAML, as snakemake does."""
    out: dict = {}
    for item in values:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise NumasweepError(f"--set {item}: write KEY=VALUE, e.g. --set launcher=srun")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


def set_option(assignments: list[str]) -> str:
    """The --set options as given: `--set a=1 --set b=2`."""
    return " ".join(f"--set {item}" for item in assignments)


def check_assignment_keys(assignments: list[str]) -> None:
    """Each `--set KEY=VALUE` of `grid` names a top-level config key, as `snakemake --config`
    requires; else one line blaming the option, with the form that sets the key meant (a dotted
    path `a.b=V` is no key: `a={b: V}` sets it)."""
    known = _schema()["properties"]
    for item in assignments:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not key or key in known:
            continue  # parse_assignments names a missing `=`
        head, *rest = key.split(".")
        if rest and head in known and all(rest):
            node, where = known[head], head
            for part in rest:  # the dotted path's keys, as far as the schema names them
                names = node.get("properties") if isinstance(node, dict) else None
                if not names:
                    break
                if part not in names:
                    raise NumasweepError(f"--set {item}: '{where}' has no key '{part}'; known keys under it: "
                                         f"{', '.join(sorted(names))}")
                node, where = names[part], f"{where}.{part}"
            nested = value.strip() or "null"
            for part in reversed(rest):
                nested = f"{{{part}: {nested}}}"
            raise NumasweepError(f"--set {item}: '{key}' is no config key (--set, as snakemake --config, sets a "
                                 f"top-level key; a dotted path is not one); write --set '{head}={nested}'")
        raise NumasweepError(f"--set {item}: unknown config key '{key}'; known keys: {', '.join(sorted(known))}")


def validate_with_assignments(config: dict, files: list[str | Path], assignments: list[str]) -> dict:
    """`validate_config` of the layered config; where the files alone are valid and the --set
    values make them invalid, the error names the --set options, not the files."""
    source = ",".join(map(str, files))
    try:
        return validate_config(config, source)
    except NumasweepError:
        if not assignments:
            raise
        try:
            validate_config(layered_config(files), source)
        except NumasweepError:
            pass
        else:
            return validate_config(config, set_option(assignments))
        raise


def layered_config(files: list[str | Path], assignments: list[str] | None = None) -> dict:
    """The config snakemake builds for `--configfile FILES --config ASSIGNMENTS`:
    config/config.yaml, then each file over it, then the KEY=VALUE pairs over all."""
    config = load_config_file(DEFAULT_CONFIG)
    for path in files:
        config = merge(config, load_config_file(path))
    return merge(config, parse_assignments(assignments or []))


def _leaves(data: dict, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    for key, value in data.items():
        if isinstance(value, dict):
            yield from _leaves(value, prefix + (key,))
        else:
            yield prefix + (key,), value


def overridden(files: list[str | Path], final: dict) -> list[str]:
    """One line per value the config files set that the final config (after a profile's
    `config:` or `--config KEY=VALUE`) replaced, naming both."""
    layered: dict = {}
    origin: dict = {}
    for path in files:
        data = load_config_file(path)
        layered = merge(layered, data)
        origin.update({keys: path for keys, _ in _leaves(data)})
    lines = []
    for keys, value in _leaves(layered):
        now: Any = final
        for key in keys:
            now = now.get(key) if isinstance(now, dict) else None
        if now != value and now is not None:
            name = ".".join(map(str, keys))
            lines.append(f"{origin[keys]} sets {name}: {value}, but a profile's `config:` or --config sets "
                         f"{name}={now}, which wins; remove one of them")
    return lines


def merge(base: dict, over: dict) -> dict:
    """Layer one config over another the way snakemake layers --configfile files."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
