"""A fleet's findings alike but for their host are said once in the report (numasweep.results.digest).

The findings here are written by hand in the shape `analyse` gives them (title with the series'
name in parentheses, numbers with `analysis.interval_numbers` intervals); the end-to-end case renders a
report from model data (tests/replay/model.py through bench/pipeline.py) for 3 and 9 hosts.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from numasweep.results import aggregate, digest
from numasweep.findings import analysis
from numasweep.reporting import report

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("pipeline_bench", REPO / "bench" / "pipeline.py")
pipeline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pipeline)


def step(host: str, ratio: float, low: float, high: float, location: float = 40_000.0) -> dict:
    return {"id": "cache_threshold", "bench": "latency",
            "title": f"Latency step 32KiB to 64KiB: L1d (concurrent, 4k, {host})",
            "summary": f"In concurrent mode with 4k pages ({host}), latency rises {ratio:.2f}x.",
            "numbers": {"mode": "concurrent", "config": host, "claim": True, "step_ratio": ratio,
                        "step_ratio_low": low, "step_ratio_high": high, "step_ratio_method": "t",
                        "location_bytes": location, "location_bytes_low": location / 2,
                        "location_bytes_high": location * 2, "location_bytes_method": "bootstrap",
                        "matched_cache": "L1d"},
            "evidence": [{"size_bytes": 32768, "latency_ns": 1.0}]}


def test_findings_alike_but_for_their_host_are_one_with_both_ends_and_their_intervals() -> None:
    hosts = ["nid001", "nid002", "nid003", "nid0010"]
    found = [step("nid001", 2.0, 1.9, 2.1), step("nid002", 1.5, 1.4, 1.6), step("nid003", 2.5, 2.3, 2.7),
             step("nid0010", 1.8, 1.7, 1.9),
             {"id": "anomaly", "bench": "latency", "title": "Outlier: rank 1 at 1MiB (concurrent, 4k, nid002)",
              "summary": "Rank 1 on nid002 is slow.", "numbers": {"claim": True, "kind": "outlier"}}]
    merged = digest.merge(found, hosts)
    assert [f["id"] for f in merged] == ["cache_threshold", "anomaly"]
    one = merged[0]
    assert one["title"] == "Latency step 32KiB to 64KiB: L1d (concurrent, 4k), on 4 of 4 hosts"
    # the median host's own sentence (nid0010 at 1.8x: the lower middle of 1.5, 1.8, 2.0, 2.5) ...
    assert "On nid0010, the median host by step ratio: In concurrent mode with 4k pages (nid0010)" in one["summary"]
    # ... and each end with its host and its own interval, never a bare range
    assert "step ratio from 1.50x (nid002, 95 % interval 1.40x to 1.60x) to 2.50x (nid003, 95 % interval " \
           "2.30x to 2.70x)" in one["summary"]
    assert "location 39.1 KiB on every host" in one["summary"]
    assert one["numbers"]["hosts_found"] == 4 and one["numbers"]["hosts_of"] == 4
    assert [r["host"] for r in one["evidence"]] == ["nid002", "nid0010", "nid001", "nid003"]
    assert merged[1] is found[4]      # seen on one host: its own text


def test_a_finding_missing_on_a_few_hosts_names_them_and_one_host_changes_nothing() -> None:
    found = [step(h, 2.0, 1.9, 2.1) for h in ("a", "b")]
    merged = digest.merge(found, ["a", "b", "c"])
    assert len(merged) == 1 and merged[0]["title"].endswith(", on 2 of 3 hosts")
    assert merged[0]["summary"].startswith("Not found on c. On a, the median host by step ratio: ")
    single = [step("vm", 2.0, 1.9, 2.1)]
    assert digest.merge(single, ["vm"]) is single


def test_many_hosts_show_both_ends_and_count_those_between() -> None:
    hosts = [f"n{i:03d}" for i in range(40)]
    merged = digest.merge([step(h, 1.5 + i / 100, 1.4, 2.0) for i, h in enumerate(hosts)], hosts)
    rows = merged[0]["evidence"]
    assert len(rows) == 2 * digest.ENDS + 1 and rows[digest.ENDS] == {"host": "(30 hosts between)"}
    assert rows[0]["host"] == "n000" and rows[-1]["host"] == "n039"
    assert report.evidence_table(rows).count("\n") == len(rows) + 1    # header, rule, rows: none cut


@pytest.fixture(scope="module")
def fleet_reports(tmp_path_factory) -> dict[int, tuple[str, dict]]:
    """The report of one model campaign run on 3 and on 9 nodes."""
    out = {}
    for hosts in (3, 9):
        folder = tmp_path_factory.mktemp(f"fleet{hosts}")
        results = folder / "results"
        csvs = pipeline.write_results(results, 2 * pipeline.JOB_ROWS * hosts * 2, hosts=hosts)
        table, problems = aggregate.aggregate(csvs, "latency")
        assert problems == []
        aggregate.write(table, problems, results / "latency.csv")
        findings = analysis.analyse(results)
        md = report.render(results, findings, None, folder / "report.md").read_text()
        out[hosts] = (md, findings)
    return out


def test_a_fleet_report_says_each_finding_once_however_many_nodes(fleet_reports) -> None:
    """Model data: every node measures the same curves. findings.json keeps each node's
    findings, so it grows with the nodes; the report's findings do not."""
    per_node = {}
    for hosts, (md, findings) in fleet_reports.items():
        steps = [f for f in findings["findings"] if f["id"] == "cache_threshold"]
        assert {h for f in steps for h in [f"nid{n:06d}" for n in range(hosts)] if h in f["title"]} == \
            {f"nid{n:06d}" for n in range(hosts)}
        per_node[hosts] = len(steps) / hosts
        items = [line for line in md.splitlines() if line.startswith("**Latency step")]
        assert items and all(line.count(f"of {hosts} hosts") == 1 for line in items), items[:3]
        titles = [line.split(".**")[0] for line in items]
        assert not any(f"nid{n:06d}" in title for title in titles for n in range(hosts)), titles
        per_node[f"items{hosts}"] = len(items)
    assert per_node[3] == per_node[9]                       # the same steps on every node
    assert per_node["items3"] == per_node["items9"]         # said once each, not once per node
