"""The benchmark registry: every benchmark is one module that says everything particular to it,
and the shared machinery names none of them."""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
from pathlib import Path

import pytest

from numasweep import benches
from numasweep.core import registry, topology

from helpers import synthetic
from helpers.kernels import assert_covers

PKG = Path(__file__).resolve().parents[2] / "workflow" / "numasweep"
BENCHES = registry.all_benches()


def test_one_benchmark_per_module_in_report_order():
    """Each module of `numasweep.benches.MODULES` registers the benchmark of its name, in that
    order, and nothing else registers one."""
    assert list(BENCHES) == list(benches.MODULES)


@pytest.mark.parametrize("name", list(BENCHES))
def test_each_benchmark_is_compared_and_quality_checked_or_says_why_not(name):
    """Comparison against references and earlier runs, and fleet screening, read `metrics`; the
    report's data-quality part reads `quality`. Leaving either out needs a reason in words."""
    bench = BENCHES[name]
    assert bench.checks.metrics or len(bench.checks.not_compared) > 20, f"{name}: no metrics and no reason"
    assert bench.checks.quality or len(bench.checks.not_checked) > 20, f"{name}: no quality check and no reason"
    for column in bench.checks.metrics:
        assert column in bench.tables.required or column in bench.tables.positive, f"{name}: metric {column} is not a column it must have"


@pytest.mark.parametrize("name", list(BENCHES))
def test_each_benchmark_plans_draws_and_reports(name):
    bench = BENCHES[name]
    assert bench.launch.expand and bench.analyse and bench.presentation.report
    assert bench.launch.kernels and bench.launch.by in ("mpi", "threads", "gpus"), f"{name}: its builds and how a job runs"
    assert any(f.draw for f in bench.presentation.figures), f"{name}: figures, each kind with its caption and drawer"
    kinds = {k for _, kinds in bench.presentation.subjects.values() for k in kinds}
    assert kinds <= {f.kind for f in bench.presentation.figures}, f"{name}: a subject shows a figure kind it has no caption for"
    assert set(bench.tables.within) <= set(bench.identity)
    assert bench.tables.axis is None or bench.tables.axis not in bench.identity


def test_the_shared_machinery_names_no_benchmark():
    """Outside `benches/`, no Python string of the package is a benchmark's name or kernel: a new
    benchmark touches its own module, not the floors below it."""
    names = set(BENCHES) | set(registry.kernels())
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if "benches" in path.relative_to(PKG).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                found.append(f"{path.relative_to(PKG)}:{node.lineno}: {node.value!r}")
    assert not found, "benchmark names outside benches/:\n" + "\n".join(found)


def _bench_columns() -> set[str]:
    """The columns only benchmarks supply: those their records name, less the ones every run has."""
    columns = set()
    for bench in BENCHES.values():
        t = bench.tables
        columns |= {*t.required, *t.positive, *t.series, *t.within, *([t.axis] if t.axis else [])}
        columns |= {c for entry in t.placement for c in entry[:2]} | set(bench.checks.metrics)
        if bench.checks.quality:
            columns |= {*bench.checks.quality.columns, *bench.checks.quality.also}
    return columns - set(registry.COMMON_SERIES)


# Words of the tool that a benchmark also has as a column, each in the tool's own sense: SLURM's
# resource of a job's GPUs (workflow/rules/common.smk), not gpu_xfer's column; the config key
# `batch` of run-batch, not numa_migrate's pages a call; an interval's `method` (findings), the
# `seconds` of a timestamp's precision, the `src`/`dst` of a column name spelt out in words and the
# `gb_s` of a rate's unit (reporting.report), none of them numa_migrate's columns.
TOOL_WORDS = {"gpu", "batch", "method", "seconds", "src", "dst", "gb_s"}


def test_the_templates_and_rules_name_no_benchmark_column_or_subject():
    """The report templates and the rule files know no benchmark: no benchmark's or kernel's name,
    no column only a benchmark supplies and no subject title in their code (a template's tags, a
    rule file's strings and names); a subject's content comes from the benchmarks' records. The
    data-quality section is the report's own: its title may stand in a template's text, never in
    a tag, which keys it by its flag."""
    from numasweep.reporting import report

    names = set(BENCHES) | set(registry.kernels())
    columns = _bench_columns() - TOOL_WORDS
    titles = {sub.title for sub in report.SUBJECT_LEADS}
    workflow = PKG.parent
    found = []
    for path in sorted(workflow.glob("report/*.j2")):
        text = path.read_text()
        for tag in re.findall(r"\{[{%](.*?)[}%]\}", text, re.S):
            strings = {a or b for a, b in re.findall(r'"([^"]*)"|\'([^\']*)\'', tag)}
            code = re.sub(r'"[^"]*"|\'[^\']*\'', "", tag)
            attributes = set(re.findall(r"\.([A-Za-z_]\w*)", code))
            identifiers = set(re.findall(r"[A-Za-z_]\w*", code))
            found += [f"{path.name}: {w!r}" for w in sorted((strings & (names | columns | titles))
                                                             | (attributes & columns) | (identifiers & names))]
        found += [f"{path.name}: {t!r} in its text" for t in sorted(titles)
                  if t in text and not any(s.quality and s.title == t for s in report.SUBJECT_LEADS)]
    for path in [*sorted(workflow.glob("rules/*.smk")), workflow / "Snakefile"]:
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type == tokenize.STRING:
                body = tok.string.lstrip("rbfuRBFU").strip("\"'")
                words = {w for w in names | titles if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", body)}
                found += [f"{path.name}:{tok.start[0]}: {w!r}" for w in sorted(words | ({body} & columns))]
            elif tok.type == tokenize.NAME and tok.string in names:
                found.append(f"{path.name}:{tok.start[0]}: {tok.string!r}")
    assert not found, "benchmark knowledge in the templates or rule files:\n" + "\n".join(found)


# Words of the launch that a benchmark's table also has as a column: every floor places ranks and
# threads on CPUs and launches a kernel, whichever benchmark it is.
LAUNCH_WORDS = {"cpu", "rank", "threads", "kernel"}
# Modules that still read a benchmark's own columns, each with the reason it is not yet the
# benchmark's: a test below fails once an entry is no longer needed, so the list only shrinks.
STILL_NAMED = {
    # a cache's size: the topology's own field, spelled as latency's size column
    "core/topology.py": {"size_bytes"},
    # the one spelling of a size in bytes in tables, findings' numbers and evidence, which the
    # report, the audit and the placement evidence read (latency's size column follows it)
    "core/units.py": {"size_bytes"},
}


def _own_columns() -> set[str]:
    """The columns a benchmark alone supplies: its required columns that not every benchmark has."""
    required = [set(bench.tables.required) for bench in BENCHES.values()]
    return set().union(*required) - set.intersection(*required) - LAUNCH_WORDS - TOOL_WORDS


def _named_below_benches() -> dict[str, set[str]]:
    """Per module of the floors under `benches/` (and `reporting/`), the benchmark names, kernels and
    benchmark-own columns it has as a string or as an attribute read (a method called is not one;
    nor is a field of the topology's records, such as a cache's `size_bytes`, read off one)."""
    names = set(BENCHES) | set(registry.kernels())
    columns = _own_columns()
    topology_fields = {f.name for record in vars(topology).values()
                       if dataclasses.is_dataclass(record) and record.__module__ == topology.__name__
                       for f in dataclasses.fields(record)}
    found: dict[str, set[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if len(rel.parts) < 2 or rel.parts[0] == "benches":
            continue
        tree = ast.parse(path.read_text())
        called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names | columns:
                found.setdefault(rel.as_posix(), set()).add(node.value)
            elif isinstance(node, ast.Attribute) and node.attr in columns - topology_fields and id(node) not in called:
                found.setdefault(rel.as_posix(), set()).add(node.attr)
    return found


def test_the_floors_below_the_benchmarks_read_no_benchmark_column():
    """Below `benches/`, no module names a benchmark, its kernel or a column only some benchmarks
    write (their `required` columns not common to all): what a benchmark's columns mean is said in
    its own package, and the floors take the columns from the caller or the registry."""
    found = _named_below_benches()
    extra = {module: sorted(words - STILL_NAMED.get(module, set())) for module, words in found.items()}
    extra = {module: words for module, words in extra.items() if words}
    assert not extra, f"benchmark names or columns below benches/: {extra}"


def test_each_module_still_naming_a_column_still_needs_it():
    found = _named_below_benches()
    stale = {module: sorted(words - found.get(module, set())) for module, words in STILL_NAMED.items()}
    stale = {module: words for module, words in stale.items() if words}
    assert not stale, f"no longer named, take them off STILL_NAMED: {stale}"


def test_every_column_a_record_reads_or_names_is_one_its_kernel_writes():
    """The columns a record names for the shared floors (its series columns' numbers, sizes and
    words, its within-run spread) are in its kernel's source: a misspelt one would be read as text,
    said as a bare number or leave its jobs unjudged, and nothing else would fail."""
    for name, bench in BENCHES.items():
        source = "".join(p.read_text() for p in (PKG.parents[1] / "kernels").rglob(f"{bench.launch.kernel}.c*"))
        assert source, f"{name}: no source of {bench.launch.kernel} under kernels/"
        spread = bench.checks.spread
        named = {*bench.tables.numeric, *bench.tables.sizes, *bench.tables.words}
        if spread is not None:
            named |= {spread.high, spread.low, spread.reference, *(spread.small or ())[:1]}
        missing = sorted(c for c in named if c not in source)
        assert not missing, f"{name}: its record names columns {bench.launch.kernel} never writes: {missing}"


def test_a_schema_section_per_benchmark():
    schema = (PKG.parent / "schemas" / "config.schema.yaml").read_text()
    for name in BENCHES:
        assert re.search(rf"^  {name}:", schema, re.M), f"config.schema.yaml has no section {name}"


def test_importing_one_benchmark_first_still_gives_all_in_report_order():
    """A fresh interpreter that imports one benchmark's module before asking the registry still
    gets every benchmark, in `numasweep.benches.MODULES` order."""
    import subprocess
    import sys

    code = ("from numasweep.benches import c2c\nfrom numasweep.core import registry\n"
            "print(','.join(registry.names()))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(PKG.parent), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().split(",") == list(BENCHES)


def test_the_job_model_writes_every_benchmark():
    """The tests' model of a sweep (helpers.synthetic.write_job) writes each benchmark's CSV: a new
    benchmark fails here until the model has its rows, rather than being left out of the model's
    campaigns."""
    assert_covers(synthetic.ROWS, BENCHES, "the job model's rows per benchmark (ROWS in tests/helpers/synthetic.py)")


def _lone_fields() -> dict[str, str]:
    """Field of `Bench` or of one of its records (`launch.unavailable`) -> the one benchmark that
    sets it to other than its default."""
    lone = {}

    def walk(records: dict[str, object], prefix: str) -> None:
        for f in dataclasses.fields(next(iter(records.values()))):
            values = {name: getattr(record, f.name) for name, record in records.items()}
            if all(dataclasses.is_dataclass(v) for v in values.values()):
                walk(values, f"{prefix}{f.name}.")
            elif f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
                users = [name for name, value in values.items() if value != default]
                if len(users) == 1:
                    lone[prefix + f.name] = users[0]

    walk(BENCHES, "")
    return lone


def test_no_field_of_the_record_serves_one_benchmark_only():
    """A field of the shared record that one benchmark alone sets is that benchmark's own
    business carried by all of them: the record stays narrow when each field serves several."""
    lone = _lone_fields()
    assert not lone, "fields of Bench that one benchmark alone sets: " + ", ".join(
        f"{name} ({bench})" for name, bench in lone.items())
