"""A findings.json the claims audit refuses, through Snakemake: the report is written all the same,
the refused finding shown as refused in its first lines, the run fails in one line naming it, and
a corrected findings.json alone rewrites the report and passes.

Model: the LUMI-G example's own findings, one claimed difference given an interval that holds
no effect (as a hand edit, or a fault of the analysis, would leave it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.workflow import snakemake

from numasweep.findings import audit

pytestmark = pytest.mark.workflow


def test_a_refused_audit_leaves_the_report_with_the_finding_refused_and_fails_the_run(repo_copy: Path) -> None:
    shutil.copytree(repo_copy / "examples" / "lumi-g", repo_copy / "runs" / "lumi-g")
    first = snakemake(repo_copy, "report", "--cores", "1", "--config", "results=runs/lumi-g")
    assert first.returncode == 0, (first.stdout + first.stderr)[-4000:]
    (findings,) = (repo_copy / "report").glob("*/findings.json")
    report_md = findings.parent / "experimentation.md"
    good = findings.read_text()
    found = json.loads(good)
    (f,) = [f for f in found["findings"] if any(c["verdict"] == "differs" for c in audit.claims_of(f))][:1]
    claim = next(c for c in audit.claims_of(f) if c["verdict"] == "differs")
    f["numbers"][f"{claim['quantity']}_low"], f["numbers"][f"{claim['quantity']}_high"] = 0.5, 2.0
    findings.write_text(json.dumps(found, indent=2))

    refused = snakemake(repo_copy, "report", "--cores", "1", "--config", "results=runs/lumi-g")
    said = [line for line in refused.stderr.splitlines() if "the claims audit refused" in line]
    assert refused.returncode != 0, (refused.stdout + refused.stderr)[-4000:]
    assert said and f["title"] in said[0] and "holds 1.0, no effect" in said[0], refused.stderr[-4000:]
    assert str(report_md) in said[0] or "experimentation.md" in said[0], said
    assert "Traceback" not in refused.stderr and "File \"" not in refused.stderr, refused.stderr[-4000:]
    text = report_md.read_text()
    assert "**Refused by the claims audit.**" in "\n".join(text.splitlines()[:8]), text[:2000]
    assert "Refused by the claims audit: finding" in text and report_md.with_suffix(".html").exists()

    findings.write_text(good)   # corrected: the report alone is written again, and passes
    fixed = snakemake(repo_copy, "report", "--cores", "1", "--config", "results=runs/lumi-g")
    assert fixed.returncode == 0, (fixed.stdout + fixed.stderr)[-4000:]
    assert "Refused by the claims audit" not in report_md.read_text()
    assert "rule analyse" not in fixed.stdout + fixed.stderr, (fixed.stdout + fixed.stderr)[-3000:]
