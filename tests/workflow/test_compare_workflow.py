"""The results store and `compare` through Snakemake: a run recorded in the store, then the report of a
later run (cached results, so nothing is measured) with its pass/fail table and regressions.

Model: the later run is the seed's LUMI-G latency table (examples/lumi-g) times a stated factor: 1.02
everywhere (within the 10 % tolerance), or 1.30 for rank 3 at 64 MiB and above (a planted regression).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.workflow import snakemake

pytestmark = pytest.mark.workflow


def later_run(repo_copy: Path, regress: bool) -> Path:
    """The campaign's results folder (runs/lumi-g) as a later run of it leaves it."""
    folder = repo_copy / "runs" / "lumi-g"
    table = pd.read_csv(repo_copy / "examples" / "lumi-g" / "latency.csv")
    factor = pd.Series(1.02, index=table.index)
    if regress:
        factor[(table["rank"] == 3) & (table["size_bytes"] >= 64 * 2**20)] = 1.02 * 1.30
    table["latency_ns_median"] = table["latency_ns_median"] * factor
    table.to_csv(folder / "latency.csv", index=False)
    return folder


def report(repo_copy: Path, folder: Path) -> str:
    proc = snakemake(repo_copy, "report", "--cores", "1", "--configfile", "compare.yaml", "--config",
                     f"results={folder.relative_to(repo_copy)}")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return (repo_copy / "report" / f"example-{folder.name}" / "experimentation.md").read_text()


def test_report_compares_with_the_stored_run_and_flags_a_planted_regression(repo_copy: Path) -> None:
    (repo_copy / "results").mkdir()
    # the first run of the campaign: its results folder as the seed left it, recorded in the store
    shutil.copytree(repo_copy / "examples" / "lumi-g", repo_copy / "runs" / "lumi-g")
    record = subprocess.run([sys.executable, "-m", "numasweep", "store", "record", "--results", "runs/lumi-g",
                             "--store", "results/store.sqlite"], cwd=repo_copy, capture_output=True, text=True)
    assert record.returncode == 0 and "recorded run" in record.stdout, record.stderr
    (repo_copy / "compare.yaml").write_text(yaml.safe_dump({
        "compare": {"against": "previous", "tolerance": 0.10},
        "references": [{"name": "DRAM, rank 0", "bench": "latency",
                        "where": {"size_bytes": "1G", "rank": 0, "mode": "concurrent"},
                        "reference": [130.0, -0.5, 0.5, "ns"]}],
    }))
    within = report(repo_copy, later_run(repo_copy, regress=False))
    assert "## Comparison with earlier results" in within and "### Against run " in within
    assert "| latency | mode=concurrent, mem_nodes=1, rank=3, cpu=25," in within and "FAIL" not in within and "### Regressions" not in within
    assert "1 of 1 reference values pass" in within

    regressed = report(repo_copy, later_run(repo_copy, regress=True))
    failing = [line for line in regressed.splitlines() if line.startswith("| latency |") and "FAIL" in line]
    assert failing and all("rank=3, cpu=25," in line for line in failing), failing
    assert "- **Regression: latency" in regressed and "rank=3, cpu=25" in regressed.split("### Regressions")[1]

    # `snakemake compare` is the gate: the regression fails it, each failing check one line on
    # the console (not only in the log), and the same run within the tolerance passes it
    gate = snakemake(repo_copy, "compare", "--cores", "1", "--configfile", "compare.yaml", "--config",
                     "results=runs/lumi-g")
    said = [line for line in gate.stderr.splitlines() if line.startswith("numasweep: compare: ")]
    assert gate.returncode != 0, (gate.stdout + gate.stderr)[-3000:]
    assert said and all(line.startswith("numasweep: compare: FAIL regression latency, ") for line in said[:-1]) \
        and said[-1].startswith(f"numasweep: compare: {len(said) - 1} of "), said
    later_run(repo_copy, regress=False)
    gate = snakemake(repo_copy, "compare", "--cores", "1", "--configfile", "compare.yaml", "--config",
                     "results=runs/lumi-g")
    assert gate.returncode == 0 and "numasweep: compare: all " in gate.stdout, (gate.stdout + gate.stderr)[-3000:]
