"""Data-quality notes in the report: each distorting machine state named with the hosts that
measured in it, from the sys_* columns aggregation copies out of every job's provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from numasweep import aggregate, quality, report
from numasweep.system_state import SystemState

CLEAN = SystemState("6.1.0", "0", "madvise", "madvise", ("performance",), "acpi-cpufreq", "on", None)
BALANCING = SystemState("6.1.0", "1", "madvise", "madvise", ("performance",), "acpi-cpufreq", "on", None)


def job(folder: Path, job_id: str, host: str, state: SystemState) -> Path:
    """One latency job as run-job leaves it: the kernel's CSV and its provenance record."""
    csv = folder / f"{job_id}.csv"
    pd.DataFrame([{"rank": 0, "ranks": 1, "mode": "concurrent", "cpu": 0, "cpu_node": 0, "l3_group": 0,
                   "policy": "bind", "mem_nodes": "0", "host": host, "size_bytes": 65536, "latency_ns_median": 5.0,
                   "page_fractions": "0:1.0000"}]).to_csv(csv, index=False)
    csv.with_suffix(".json").write_text(json.dumps({"job_id": job_id, "grid": {"repetition": 0}, "host": host,
                                                    "system": state.as_record()}))
    return csv


def test_numa_balancing_is_named_with_the_host_that_had_it(tmp_path: Path) -> None:
    csvs = [job(tmp_path, "a", "node1", CLEAN), job(tmp_path, "b", "node2", BALANCING)]
    table, _ = aggregate.aggregate(csvs, "latency")
    assert list(table["sys_numa_balancing"].astype(str)) == ["0", "1"]
    table.to_csv(tmp_path / "latency.csv", index=False)
    notes = quality.notes({"latency": pd.read_csv(tmp_path / "latency.csv")})
    assert [(n["hosts"], n["benches"]) for n in notes] == [(["node2"], ["latency"])]
    assert "kernel.numa_balancing=1" in notes[0]["note"]
    out = report.render(tmp_path, {"findings": []}, None, tmp_path / "experimentation.md")
    text = out.read_text()
    part = text.split("## Data quality", 1)[1].split("\n## ", 1)[0]
    assert "- **node2** (latency): NUMA balancing was on" in part and "node1" not in part


def test_a_clean_machine_or_a_cached_table_gives_no_note(tmp_path: Path) -> None:
    table, _ = aggregate.aggregate([job(tmp_path, "a", "node1", CLEAN)], "latency")
    assert quality.notes({"latency": table}) == []
    assert quality.notes({"latency": table.drop(columns=[c for c in table if c.startswith("sys_")])}) == []
