"""What each sweep measures (config `measures`): said in the shipped campaigns, written by the
workflow to results/<system>/measures.json, and repeated in the report's configuration section."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.synthetic import write_results
from helpers.workflow import snakemake
from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.planning import grid
from numasweep.reporting import report

REPO = Path(__file__).resolve().parents[2]
CAMPAIGNS = sorted((REPO / "config" / "campaigns").glob("*.yaml"))


@pytest.mark.parametrize("campaign", CAMPAIGNS, ids=lambda p: p.name)
def test_every_sweep_of_a_shipped_campaign_says_what_it_measures(campaign: Path) -> None:
    config = grid.validate_config(grid.layered_config([campaign]))
    sweeps = [(bench, sw) for bench in registry.names() for sw in config[bench]["sweeps"]]
    assert sweeps and all(sw["measures"] for _, sw in sweeps), [
        f"{bench} sweep {sw['label'] or ''}" for bench, sw in sweeps if not sw["measures"]]


def test_lumi_g_scaling_suite_says_its_size_against_the_l3() -> None:
    config = grid.validate_config(grid.layered_config([REPO / "config/campaigns/lumi-g.yaml"]))
    (scaling,) = [m for m in grid.measures(config, ["latency"]) if m["label"] == "scaling"]
    assert "16 MiB" in scaling["measures"] and "32 MiB L3" in scaling["measures"]
    assert "L3 sharing more than DRAM contention" in scaling["measures"]


@pytest.mark.workflow
def test_the_report_repeats_what_each_sweep_measures(repo_copy: Path, tmp_path: Path) -> None:
    campaign = "config/campaigns/lumi-g.yaml"
    snakemake(repo_copy, "results/lumi-g/measures.json", "--cores", "1", "--configfile", campaign, check=True)
    written = json.loads((repo_copy / "results/lumi-g/measures.json").read_text())
    config = grid.validate_config(grid.layered_config([REPO / campaign]))
    assert written == grid.measures(config, ["latency"])
    results = write_results(tmp_path / "res", benches=("latency",))
    shutil.copy(repo_copy / "results/lumi-g/measures.json", results)
    text = report.render(results, {"findings": []}, None, tmp_path / "r.md").read_text()
    configuration = text.split("## Test configuration", 1)[1].split("\n## ", 1)[0]
    assert "### What each sweep measures" in configuration
    for entry in written:
        name = f"latency sweep {entry['label'] or entry['sweep']}"
        assert f"- **{name}**: {entry['measures']}" in configuration, configuration[:2000]


def test_a_broken_measures_file_is_named_in_one_line(tmp_path: Path) -> None:
    results = write_results(tmp_path / "res", benches=("latency",))
    (results / "measures.json").write_text('[{"bench": "latency"}]')
    with pytest.raises(NumasweepError, match=r"measures\.json: not a list of what each sweep measures"):
        report.render(results, {"findings": []}, None, tmp_path / "r.md")
