"""The benchmark registry: every benchmark is one module that says everything particular to it,
and the shared machinery names none of them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from numasweep.core import registry

PKG = Path(__file__).resolve().parents[2] / "workflow" / "numasweep"
BENCHES = registry.all_benches()


def test_seven_benchmarks_in_report_order():
    assert list(BENCHES) == ["latency", "bandwidth", "copy", "gpu_xfer", "loaded_latency", "c2c", "mix_bandwidth"]


@pytest.mark.parametrize("name", list(BENCHES))
def test_each_benchmark_is_compared_and_quality_checked_or_says_why_not(name):
    """Comparison against references and earlier runs, and fleet screening, read `metrics`; the
    report's data-quality part reads `quality`. Leaving either out needs a reason in words."""
    bench = BENCHES[name]
    assert bench.metrics or len(bench.not_compared) > 20, f"{name}: no metrics and no reason"
    assert bench.quality or len(bench.not_checked) > 20, f"{name}: no quality check and no reason"
    for column in bench.metrics:
        assert column in bench.required or column in bench.positive, f"{name}: metric {column} is not a column it must have"


@pytest.mark.parametrize("name", list(BENCHES))
def test_each_benchmark_plans_draws_and_reports(name):
    bench = BENCHES[name]
    assert bench.expand and bench.analyse and bench.raw_tables
    assert bench.draw and bench.figures, f"{name}: figures, each kind with its caption"
    kinds = {k for _, kinds in bench.subjects.values() for k in kinds}
    assert kinds <= {k for k, _ in bench.figures}, f"{name}: a subject shows a figure kind it has no caption for"
    assert set(bench.within) <= set(bench.identity)
    assert bench.axis is None or bench.axis not in bench.identity


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
