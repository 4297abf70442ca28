"""bench/pipeline.py's generators, at small sizes: the campaign it times plans the jobs it says,
and its cached results aggregate into the rows it says (the timings are never asserted)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from numasweep.results import aggregate
from numasweep.planning import grid
from numasweep.core import topology

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("pipeline_bench", REPO / "bench" / "pipeline.py")
pipeline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pipeline)


def test_campaign_plans_about_the_asked_number_of_jobs():
    config = grid.merge(grid.load_config_file(grid.DEFAULT_CONFIG), pipeline.campaign(250))
    plan = grid.expand(config, topology.load(REPO / config["arch"]))
    counts = {bench: len(plan.by_bench(bench)) for bench in plan.benches()}
    # 3 repetitions of every point: 240 latency and 60 bandwidth jobs, each id once.
    assert counts == {"latency": 240, "bandwidth": 60}
    assert len({job.id for job in plan.jobs}) == len(plan.jobs)


def test_cached_results_aggregate_to_the_asked_rows(tmp_path):
    csvs = pipeline.write_results(tmp_path, 500)
    assert (tmp_path / "topology.json").exists()
    # 500 rows: the smallest whole number of repetitions (2 modes x 120 rows each) above it.
    assert len(csvs) == 6
    table, problems = aggregate.aggregate(csvs, "latency")
    assert problems == []
    assert len(table) == 6 * pipeline.JOB_ROWS
    assert set(table["mode"]) == {"concurrent", "serial"}
    assert table.groupby("job_id").size().eq(pipeline.JOB_ROWS).all()


def test_a_fleet_of_cached_results_has_a_host_per_node(tmp_path):
    """--hosts: each job once per node, the node as its host in the rows and the provenance."""
    csvs = pipeline.write_results(tmp_path, 1000, hosts=3)
    table, _ = aggregate.aggregate(csvs, "latency")
    # 1000 rows over 3 hosts: 2 repetitions of 2 modes a host, 120 rows each
    assert len(csvs) == 12 and len(table) == 12 * pipeline.JOB_ROWS
    assert set(table["host"]) == {"nid000000", "nid000001", "nid000002"}
    assert (table["host"] == table["prov_host"]).all() and (table["host"] == table["fleet_node"]).all()
