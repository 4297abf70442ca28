"""Data-quality notes in the report: each distorting machine state named with the hosts that
measured in it, from the sys_* columns aggregation copies out of every job's provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from numasweep.core import registry, topology
from numasweep.results import aggregate, quality
from numasweep.reporting import report
from numasweep.core.system_state import SystemState

REPO = Path(__file__).resolve().parents[2]

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
    assert "- **node2** (latency): NUMA balancing was on" in part and "**node1**" not in part


def test_a_clean_machine_or_a_cached_table_gives_no_note(tmp_path: Path) -> None:
    table, _ = aggregate.aggregate([job(tmp_path, "a", "node1", CLEAN)], "latency")
    assert quality.notes({"latency": table}) == []
    assert quality.notes({"latency": table.drop(columns=[c for c in table if c.startswith("sys_")])}) == []


def test_run_spread_over_two_percent_at_large_sizes_is_flagged_per_series(tmp_path: Path) -> None:
    """spread_pct, sample_s, first_touch_s, cycle_build_s, on_cpu_pct and retaken of numa_latency and
    stores, first_touch_s and timer_ticks of numa_bandwidth, per series, in the report's
    data-quality part: the kernels' warnings from their columns, not from the job logs."""
    rows = []
    for rank, spreads in ((0, (9.0, 1.0, 1.5)), (1, (0.5, 0.8, 3.5))):   # rank 1 spreads at 512 MiB
        for size, spread in zip((1 << 20, 256 << 20, 512 << 20), spreads):
            rows.append({"rank": rank, "ranks": 2, "mode": "concurrent", "cpu": rank, "cpu_node": 0, "l3_group": 0,
                         "size_bytes": size, "latency_ns_median": 90.0, "spread_pct": spread, "sample_s": 0.05,
                         "first_touch_s": 0.2, "cycle_build_s": 0.4 + rank,
                         "on_cpu_pct": 61.0 if (rank, size) == (0, 1 << 20) else 99.5,
                         "retaken": 5 if (rank, size) == (0, 1 << 20) else rank})
    pd.DataFrame(rows).to_csv(tmp_path / "latency.csv", index=False)
    pd.DataFrame([{"kernel": "triad", "threads": t, "cpus": "0", "cpu_nodes": "0", "policy": "bind",
                   "mem_nodes": "0", "best_mb_s": 1000.0 * t, "avg_mb_s": 900.0 * t, "validation": "pass",
                   "stores": "nontemporal", "first_touch_s": 0.3, "timer_ticks": 4e5 / t} for t in (1, 2)]).to_csv(
        tmp_path / "bandwidth.csv", index=False)
    frames = {"latency": pd.read_csv(tmp_path / "latency.csv"), "bandwidth": pd.read_csv(tmp_path / "bandwidth.csv")}
    lat, bw = quality.series_quality(frames)
    assert [r[0] for r in lat["rows"]] == ["rank 0, CPU 0", "rank 1, CPU 1"]
    assert [r[2] for r in lat["rows"]] == [1.5, 3.5] and [r[-4] for r in lat["rows"]] == [0.4, 1.4]
    assert [r[-2:] for r in lat["rows"]] == [[61.0, 5], [99.5, 3]]
    shared, flag = lat["flagged"]                 # the 9 % at 1 MiB is below 256 MiB: not flagged
    assert shared[0] == "CPU shared" and shared[1].startswith("rank 0, CPU 0: ran only 61% of a sample's time on its CPU at 1 MiB")
    assert flag[0] == "Spread" and flag[1].startswith("rank 1, CPU 1: samples spread 3.5% at 512 MiB")
    assert [r[1:] for r in bw["rows"]] == [["nontemporal", "", 0.3, "", 2e5]] and bw["flagged"] == []
    frames["bandwidth"]["timer_ticks"] = 12.0
    (tick,) = quality.series_quality(frames)[1]["flagged"]
    assert tick[0] == "Timer" and "only 12 ticks" in tick[1]
    text = report.render(tmp_path, {"findings": []}, None, tmp_path / "experimentation.md").read_text()
    part = text.split("## Data quality", 1)[1].split("\n## ", 1)[0]
    assert "- **Spread**: " + flag[1] in part and "- **CPU shared**: " + shared[1] in part and "nontemporal" in part and "cycle build s" in part
    assert "samples taken again (a rank was off its CPU)" in part and "samples retaken" not in part
    assert quality.series_quality({"latency": frames["latency"].drop(columns=list(registry.get("latency").checks.quality.columns))}) \
        == []


def test_bandwidth_arrays_under_four_times_the_llc_are_flagged_in_the_results(tmp_path: Path) -> None:
    """The plan-time warning's other half: a series measured with arrays under 4x the last-level
    cache of its CPUs is flagged in the report's data-quality part (LUMI-G: 32 MiB L3 per CCD).
    Two sweeps of one thread count on one node are two series by their labels (the plan needs
    one where their settings differ)."""
    topo = topology.load(REPO / "examples" / "lumi-g" / "topology.json")
    rows = [{"label": f"cpu{cpus}", "kernel": "triad", "threads": 1, "cpus": cpus, "cpu_nodes": "0", "policy": "bind", "mem_nodes": "0",
             "best_mb_s": 1000.0, "avg_mb_s": 900.0, "validation": "pass", "stores": "regular",
             "first_touch_s": 0.3, "array_bytes": size}
            for cpus, size in (("0", 64 << 20), ("8", 256 << 20))]
    table = pd.DataFrame(rows)
    (bw,) = quality.series_quality({"bandwidth": table}, topo)
    assert [r[4] for r in bw["rows"]] == ["2.0x (under 4x)", "8x"]
    (flag,) = bw["flagged"]
    assert "cpu0" in flag[1] and "64MiB are under 4x the 32MiB last-level cache" in flag[1], flag
    assert quality.series_quality({"bandwidth": table})[0]["flagged"] == []   # no topology: nothing claimed
    table.to_csv(tmp_path / "bandwidth.csv", index=False)
    (tmp_path / "topology.json").write_text(topo.to_json())
    text = report.render(tmp_path, {"findings": []}, None, tmp_path / "experimentation.md").read_text()
    assert f"- **{flag[0]}**: {flag[1]}" in text.split("## Data quality", 1)[1]


def test_a_fleet_series_is_one_row_over_its_hosts_and_each_flag_one_sentence() -> None:
    """Twelve hosts (more than digest.HOST_ROWS) of one 2-rank series: one row per rank over the
    hosts, with the median of the hosts' median spreads, the largest spread and its host, how
    many hosts were over 2 %, the least time on CPU and the retakes summed; one flag per kind
    naming how many hosts raised it and the worst host's own sentence."""
    rows = []
    for h in range(12):
        for rank in (0, 1):
            for size in (1 << 20, 256 << 20):
                spread = 1.0 + h / 10 if size > 1 << 20 else 9.0     # hosts 11..: over 2 % (2.1 %)
                rows.append({"host": f"n{h:02d}", "rank": rank, "cpu": rank, "size_bytes": size,
                             "latency_ns_median": 90.0, "spread_pct": spread, "sample_s": 0.05 * (h + 1),
                             "first_touch_s": 0.1 * (h + 1), "cycle_build_s": 0.2,
                             "on_cpu_pct": 80.0 + h if h < 3 else 99.0, "retaken": 1})
    (lat,) = quality.series_quality({"latency": pd.DataFrame(rows)})
    assert [r[0] for r in lat["rows"]] == ["rank 0, CPU 0 (12 hosts)", "rank 1, CPU 1 (12 hosts)"]
    row = lat["rows"][0]
    assert row[1] == pytest.approx(1.55) and row[2] == pytest.approx(2.1) and row[3] == "256 MiB on n11"
    assert row[4] == pytest.approx(0.325) and row[5] == pytest.approx(1.2)
    assert row[7] == "1 of 12 hosts" and row[8] == 80.0 and row[9] == 24
    assert lat["numeric"] == {1, 2, 4, 5, 6, 8, 9}        # numbers right-aligned, the retakes' count too
    spread, shared = sorted(f for f in lat["flagged"] if "rank 0" in f[1])[::-1]
    assert spread[0] == "Spread"
    assert spread[1].startswith("rank 0, CPU 0: on 1 of 12 hosts (n11); the worst, n11: samples spread 2.1%")
    assert shared[0] == "CPU shared"
    assert shared[1].startswith("rank 0, CPU 0: on 3 of 12 hosts (n00, n01, n02); the worst, n00: ran only 80%")
    assert len(lat["flagged"]) == 4


def test_a_fleet_bandwidth_series_is_one_row_over_its_hosts() -> None:
    """Twelve hosts of one bandwidth series (LUMI-G: 32 MiB L3 per CCD): its store kinds, the
    largest first touch, the smallest arrays against the cache, the least timer ticks over the
    hosts; a flag per kind over the hosts that raised it, with the worst host's sentence."""
    topo = topology.load(REPO / "examples" / "lumi-g" / "topology.json")
    rows = [{"host": f"n{h:02d}", "kernel": "triad", "threads": 1, "cpus": "0", "cpu_nodes": "0",
             "policy": "bind", "mem_nodes": "0", "best_mb_s": 1000.0, "avg_mb_s": 900.0, "validation": "pass",
             "stores": "regular", "first_touch_s": 0.1 * (h + 1) + rep, "array_bytes": 64 << 20,
             "timer_ticks": 10 + h if h in (7, 8) and rep else 1000, "repetition": rep}
            for h in range(12) for rep in (0, 1)]
    (bw,) = quality.series_quality({"bandwidth": pd.DataFrame(rows)}, topo)
    (row,) = bw["rows"]
    assert row[0].endswith(" (12 hosts)")
    assert row[1:] == ["regular", "", pytest.approx(2.2), "2.0x (under 4x)", 17.0]
    small, timer = bw["flagged"]
    assert small[0] == "Arrays under 4x the last-level cache" and \
        ": on 12 of 12 hosts (n00, n01, n02, n03, n04, n05, n06, n07 and 4 more); the worst, n11: arrays of " \
        "64MiB are under 4x the 32MiB last-level cache" in small[1], small
    assert timer[0] == "Timer" and ": on 2 of 12 hosts (n07, n08); the worst, n07: the best " \
        "repetition took only 17 ticks" in timer[1], timer
