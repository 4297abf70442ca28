"""What the shared machinery knows of a benchmark: the `Bench` record, and the registry that
hands the records out by name.

Everything particular to one benchmark lives in its module under `numasweep.benches`, which
fills in a `Bench` and registers it. The floors below (planning, running, results, statistics,
findings, reporting) never import those modules and never name a benchmark: they ask this
registry for the record of a name, or walk all of them, and call the record's fields. The
benchmarks are loaded the way a plugin host loads its plugins, the first time the registry is
asked (the modules `numasweep.benches.MODULES` names, in that order, then those the environment
variable NUMASWEEP_BENCHES names: module names or .py files, separated as in PATH), so an import of
any lower module never pulls in the floors above it.

A benchmark's `name` is its Snakemake rule, its results folder (`results/<system>/<name>/`) and
its aggregated table (`<name>.csv`); `title` heads its report section. The rest is in five small
records: `launch` (`Launch`: the kernel builds under build/bin, the first the one that measures
it, how a job runs, and the plan's hooks), `tables` (`Tables`: the columns its kernel's CSV must
have, docs/INTERFACES.md, those that must be positive, the axis and the columns that name a series,
`numasweep.results.series`, and the node-to-node matrix and page placement read from it),
`analyse` (its findings), `presentation` (`Presentation`: its figures, each a `Figure` of kind,
caption and drawer in report order, their category and variant in Snakemake's HTML report, what
it writes in the report (its raw tables, and blocks in the analysis sections), its subjects and
headline) and `checks` (`Checks`: the comparison metrics, the data-quality check of its runs and
the spread within a run its jobs' verdict reads).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from numasweep.core.errors import NumasweepError

# What every benchmark's run is named by: the campaign, the machine, the sweep's label and the
# memory spec of the grid.
COMMON_SERIES = ("system", "host", "label", "memory", "pages")


@dataclass(frozen=True)
class RunQuality:
    """What a kernel records about its own runs, and how the report's data-quality part reads it
    (`numasweep.results.quality.series_quality`)."""

    columns: tuple[str, ...]  # the kernel's columns about its runs (spread, timer ticks, ...)
    header: tuple[str, ...]  # the table's header, "series" first
    # runs(table, series keys, Topology or None) -> (series key, figures) per series
    runs: Callable[..., Any]
    # row(series name, figures) -> (table row, [(flag, worst value, sentence)])
    row: Callable[..., tuple]
    # how a fleet's rows of one series (one per host) are said as one, per column of a row:
    # None (the name), "median", "max", "min", "sum", "union", "least", "at", "over"
    reduce: tuple[str | None, ...]
    also: tuple[str, ...] = ()  # other columns `runs` reads
    text: tuple[str, ...] = ()  # columns of `columns` that are text, not numbers


@dataclass(frozen=True)
class Spread:
    """A kernel's spread within a run, which run-job's quality verdict reads (`running.verdict`):
    (high - low) / reference of a row, in percent, against `target_pct`; `small` (size column,
    bytes, target in percent): a looser target for rows under that size, where a sample is short."""

    high: str
    low: str
    reference: str
    target_pct: float
    small: tuple[str, int, float] | None = None


@dataclass(frozen=True)
class Figure:
    """One kind of figure a benchmark draws: `kind` names its files (`<kind>--<variant>.png`),
    `caption` is its sentence in the report, and draw(table, topology, figure folder) -> [paths]
    draws every figure of that kind the table supports; None for a kind only a comparison of two
    systems draws (`Presentation.cross`)."""

    kind: str
    caption: str
    draw: Callable[..., list] | None = None


@dataclass(frozen=True)
class Launch:
    """What a benchmark plans and how its jobs are launched."""

    kernels: tuple[str, ...]  # the builds a plan may launch, under build/bin; the first is the main one
    # how a job runs: "mpi" (one MPI rank per placement entry), "threads" (one process, its threads
    # on the job's CPUs) or "gpus" (one process whose threads drive GPUs: SLURM's `gpu` resource)
    by: str
    # expand(topology, section) -> [Job]: the grid points of the config section's sweeps; it
    # raises core.errors.Unavailable with the reason where they cannot run on this topology.
    expand: Callable[..., list]
    # check(topology, section) -> [warning]: plan-time checks beyond the schema (raises on errors).
    check: Callable[..., list[str]] | None = None

    @property
    def kernel(self) -> str:
        return self.kernels[0]


@dataclass(frozen=True)
class Tables:
    """What its kernel's CSV holds and how the shared machinery reads it."""

    required: tuple[str, ...]  # columns the kernel's CSV must have (docs/INTERFACES.md)
    positive: tuple[str, ...]  # measured values and sizes that must be finite numbers above zero
    axis: str | None  # the x-axis of a series; None: a series is a single point
    series: tuple[str, ...]  # identity columns after COMMON_SERIES
    within: tuple[str, ...]  # series columns that tell lines of one figure apart
    # How `results.series` reads and names its own columns beyond the launch's (ranks, CPUs, CPU
    # nodes, threads): `numeric`, those compared as numbers (the rest as text); `sizes`, those
    # holding a size in bytes ("1 GiB"); `words`, the words said before a column's number
    # ("source node" -> "source node 3"), or, after "#", the noun a count is of ("#GPU" -> "2 GPUs").
    numeric: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    words: dict[str, str] = field(default_factory=dict)
    # matrix(table, topology) -> DataFrame of cpu_node, memory_node (ints) and value, one row per unit
    # measured (a rank, a job): the node-to-node samples of the quantity `matrix_of` names
    # ("latency_ns" or "bandwidth_mb_s"), which `results.matrices` turns into the matrix the
    # firmware comparison, the recommended weights and the hwloc export read.
    matrix: Callable[..., Any] | None = None
    matrix_of: str = ""
    # Page placement the findings verify: (page-fractions column, requested-nodes column, what a
    # row stands for: "rank" or "job_id", what the buffers are called in the finding: "ranks").
    placement: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def identity(self) -> tuple[str, ...]:
        return COMMON_SERIES + self.series


@dataclass(frozen=True)
class Presentation:
    """How its results are shown: figures, report, headline, two systems side by side."""

    category: str  # the figures' category in `snakemake --report`
    variant: str  # what a figure's variant names there (the label of `{variant}`)
    figures: tuple[Figure, ...]  # in report order
    # report(table, topology, findings) -> [block]: what it writes in the report besides its
    # findings and figures, given the report's findings. A block is a dict: "title" (a bold line
    # above it, or ""), "table" (its Markdown: a table or sentences) and, for a block in an
    # analysis section, "subject" (the section's title) and "at" (where in it: after the "lead"
    # sentence, the "figures" or the "findings"); the blocks without a subject are its raw results,
    # under its title (`numasweep.reporting.report.by_subject`).
    report: Callable[..., list]
    # Where the report says its findings and shows its figures: subject title -> (finding ids,
    # figure kinds), in reading order (`numasweep.reporting.report.subjects`).
    subjects: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    # headline(table, topology) -> [[quantity, value, interval]]: the rows the summary's headline
    # table opens with (what a user came for: idle latency per level, best bandwidth and its
    # scaling, NUMA ratios), each value from the table with its interval or why there is none;
    # a rate in a unit the summary's preamble defines (reporting.report.UNIT_CONVENTIONS), and a
    # row that counts its bytes otherwise says so beside its number.
    headline: Callable[..., list] | None = None
    # cross([table, table], [name, name], figure folder or None) -> (tables, PNG paths): two
    # systems side by side.
    cross: Callable[..., tuple] | None = None


ON_CPU_MEASURES, ON_CPU_WAITS = "measures", "waits"


@dataclass(frozen=True)
class Claim:
    """What one kind of finding claims, read off its numbers by the audit of every report
    (`findings.audit`) where the finding lists no `claims` of its own. Every kind of finding
    declares one (the audit refuses a finding whose kind declares none): an interval it claims,
    a quantity its sentence states, or why it states no number."""

    # the ratio in numbers whose interval (`<name>_low`, `<name>_high`) claims a difference from
    # `null`, when numbers[`when`] is true (None: numbers["claim"])
    interval: str | None = None
    null: float = 1.0
    when: str | None = None
    # the ratio whose interval, inside the floor's margin, claims equivalence (numbers["equivalent"])
    equivalent: str | None = None
    # numbers keys naming one series: its findings of this kind span sizes (`from_size_bytes` to
    # `size_bytes`) that never overlap, each rise told once; () for a kind that spans none
    spans: tuple[str, ...] = ()
    # numbers keys of the quantities its sentence states, each checked where it is a finite number
    # (or a mapping holding one as `estimate`): the sentence prints it to two or one decimals, or
    # a fraction as a percentage. Rewording a sentence so that it drops its number fails the audit.
    states: tuple[str, ...] = ()
    # a kind that states no number (a list of what was not measured, a verdict per row of its
    # table): why, in words
    nothing: str = ""

    def __post_init__(self) -> None:
        if not (self.interval or self.equivalent or self.states or self.nothing):
            raise NumasweepError("a finding kind's Claim names no interval, no equivalence, no stated quantity "
                                 "and no reason it states nothing (nothing='...'); declare what it claims")


@dataclass(frozen=True)
class Checks:
    """How its results are checked: comparison metrics and the data-quality check."""

    # What the kernel's share of time on its CPU (`on_cpu_pct` and the like) says of a run, which
    # a job's verdict and the report read (`running.verdict`, `results.disturbed`): ON_CPU_MEASURES,
    # its threads spin while they measure, so a share under the thresholds means a disturbed or
    # noisy run (also said by a kernel that records no share); ON_CPU_WAITS, its threads wait in
    # the kernel by design (page migration sleeps in the kernel), so the share says nothing.
    on_cpu: str
    # Comparison against references and earlier runs, fleet screening: the measured columns and
    # whether higher is better; empty only with a reason in `not_compared`.
    metrics: dict[str, bool] = field(default_factory=dict)
    not_compared: str = ""
    # The data-quality check of the kernel's own run columns (`results.quality`); None only with a
    # reason in `not_checked`.
    quality: RunQuality | None = None
    not_checked: str = ""
    # The spread within a run that a job's quality verdict reads; None: the kernel records none.
    spread: Spread | None = None
    # finding id -> what that kind of finding claims (`Claim`), for every kind the benchmark's
    # analysis writes
    claims: dict[str, Claim] = field(default_factory=dict)


@dataclass(frozen=True)
class Bench:
    """A benchmark: its name, its report section's heading, and the records of what it plans and
    launches, its tables, its analysis, its presentation and its checks."""

    name: str
    title: str  # the report section's heading
    launch: Launch
    tables: Tables
    # analyse(table, topology) -> [callable() -> [Finding]]: the findings' parts, which need
    # nothing from each other.
    analyse: Callable[..., list]
    presentation: Presentation
    checks: Checks

    @property
    def identity(self) -> tuple[str, ...]:
        return self.tables.identity


_REGISTRY: dict[str, Bench] = {}


def register(bench: Bench) -> Bench:
    if bench.name in _REGISTRY and _REGISTRY[bench.name] is not bench:
        raise NumasweepError(f"benchmark '{bench.name}' is registered twice (a benchmark of that name is already "
                             "there); give the Bench another name")
    _REGISTRY[bench.name] = bench
    return bench


_LOADED = False
# Benchmarks from elsewhere, loaded after MODULES and presented after them: module names or .py
# files, separated as PATH is (docs/ARCHITECTURE.md, "Adding a kernel").
EXTRA = "NUMASWEEP_BENCHES"


def all_benches() -> dict[str, Bench]:
    """Every benchmark, in the order the report presents them (`numasweep.benches.MODULES`,
    whichever of them was imported first)."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        try:
            names = [importlib.import_module(f"numasweep.benches.{module}").BENCH.name  # each registers itself
                     for module in importlib.import_module("numasweep.benches").MODULES]
        except ImportError as exc:
            _LOADED = False
            if (exc.name or "").split(".")[0] == "numasweep":
                raise           # the package's own module is missing: a broken checkout, shown whole
            raise NumasweepError(
                f"the benchmarks' modules need {exc.name or exc}, which {sys.executable} lacks: install the "
                "requirements (bash scripts/numasweep.sh sets them up), or give run-job and run-batch "
                "--bench-facts as the workflow does, which needs nothing but Python's standard library") from None
        for entry in filter(None, os.environ.get(EXTRA, "").split(os.pathsep)):
            names += _load_extra(entry)
        ordered = {name: _REGISTRY[name] for name in names}
        ordered.update(_REGISTRY)
        _REGISTRY.clear()
        _REGISTRY.update(ordered)
    return _REGISTRY


def _load_extra(entry: str) -> list[str]:
    """The names of the benchmarks one entry of NUMASWEEP_BENCHES registers: a module name on the
    import path, or a Python file."""
    before = set(_REGISTRY)
    try:
        if entry.endswith(".py"):
            spec = importlib.util.spec_from_file_location(f"numasweep_extra_{Path(entry).stem}", entry)
            if not Path(entry).is_file() or spec is None or spec.loader is None:
                raise ImportError("no such file")
            module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # as an import would
            spec.loader.exec_module(module)
        else:
            importlib.import_module(entry)
    except (ImportError, SyntaxError) as exc:
        raise NumasweepError(f"{EXTRA}: {entry}: cannot be imported ({exc}); name a module on the import path "
                             f"or a .py file that registers a Bench, or drop it from {EXTRA}") from None
    except NumasweepError as exc:
        raise NumasweepError(f"{EXTRA}: {entry}: {exc}") from None
    except Exception as exc:  # the module's own code failed: where, in one line
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise NumasweepError(f"{EXTRA}: {entry}: its import raised {type(exc).__name__} ({exc}) at "
                             f"{frame.filename}:{frame.lineno}; fix the module or drop it from {EXTRA}") from None
    added = [name for name in _REGISTRY if name not in before]
    if not added:
        raise NumasweepError(f"{EXTRA}: {entry} registers no benchmark; call numasweep.core.registry.register(Bench(...)) "
                             f"when it is imported, or drop it from {EXTRA}")
    return added


def get(name: str) -> Bench | None:
    return all_benches().get(name)


def of_kernel(kernel: str) -> Bench | None:
    """The benchmark whose kernel (or another build of it) is named `kernel`."""
    return next((b for b in all_benches().values() if kernel in b.launch.kernels), None)


def runner_facts(bench: Bench) -> dict:
    """What a job's runner needs of its benchmark, as JSON (run-job --bench-facts): what its CPU
    share says and its spread (the quality verdict, running.verdict), its measured columns and
    the columns that name a row (repeat_until, statistics.repeat). Passed on, so that the runner
    imports no benchmark module (and no numpy) on a compute node."""
    c = bench.checks
    spread = None if c.spread is None else {
        "high": c.spread.high, "low": c.spread.low, "reference": c.spread.reference,
        "target_pct": c.spread.target_pct, "small": list(c.spread.small) if c.spread.small else None}
    axis = (bench.tables.axis,) if bench.tables.axis else ()
    return {"bench": bench.name, "on_cpu": c.on_cpu, "spread": spread, "metrics": dict(c.metrics),
            "rows": list(dict.fromkeys((*bench.identity, *axis)))}


def checks_of_facts(facts: dict) -> Checks:
    """The Checks a job's runner reads, from `runner_facts`' JSON."""
    spread = facts.get("spread")
    return Checks(on_cpu=facts["on_cpu"], metrics=dict(facts.get("metrics", {})),
                  spread=None if spread is None else Spread(
                      spread["high"], spread["low"], spread["reference"], float(spread["target_pct"]),
                      tuple(spread["small"]) if spread.get("small") else None))


def names() -> tuple[str, ...]:
    return tuple(all_benches())


def kernels() -> tuple[str, ...]:
    """Every kernel binary a plan may launch."""
    return tuple(k for b in all_benches().values() for k in b.launch.kernels)


class Captions(dict):
    """Figure kind -> caption. Snakemake's HTML report lists a rule's params beside each figure
    (figure.rst reads this one): there it reads as one phrase, not every caption at once."""

    def __str__(self) -> str:
        return "one caption per figure kind (figure.rst)"


def captions() -> Captions:
    """Figure kind -> caption, in report order over all benchmarks."""
    return Captions({f.kind: f.caption for b in all_benches().values() for f in b.presentation.figures})
