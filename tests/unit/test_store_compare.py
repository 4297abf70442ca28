"""The results store and `compare`, on runs generated from a stated model.

Model: latency of rank r at size s is 2 ns below 32 KiB, 10 ns to 1 MiB and 90 ns above, times
(1 + 0.05 r); bandwidth is 10 GB/s per thread. A second run multiplies every value by a
deterministic factor within +-3 % (well inside the 10 % tolerance); a regressed run multiplies
the DRAM-sized latencies of rank 1 by 1.30.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from numasweep.reporting import compare
from numasweep.results import store
from numasweep.core.errors import NumasweepError

SIZES = [2**k for k in range(12, 26, 2)]  # 4 KiB .. 16 MiB


def model_latency(size: int, rank: int) -> float:
    base = 2.0 if size < 32 * 2**10 else 10.0 if size <= 2**20 else 90.0
    return base * (1 + 0.05 * rank)


def write_run(folder: Path, tag: str, scale=lambda bench, row: 1.0, host: str = "node1") -> Path:
    """A results folder as aggregation leaves it: topology.json and latency/bandwidth tables."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "topology.json").write_text(json.dumps({"system": "model", "threads_per_core": 1, "distances": [[10]],
                                                      "nodes": [{"id": 0, "cpus": [0, 1], "memory_bytes": 1 << 30}]}))
    lat = []
    for rep in range(2):
        for rank in range(2):
            for size in SIZES:
                row = {"job_id": f"lat-r2-rep{rep}", "rank": rank, "ranks": 2, "mode": "concurrent",
                       "host": host, "cpu": rank, "cpu_node": 0, "l3_group": 0, "size_bytes": size,
                       "label": "", "strategy": "sequential", "memory": "local", "repetition": rep,
                       "command": f"mpirun -n 2 numa_latency ({tag})", "start": f"{tag}-start",
                       "end": f"{tag}-end"}
                row["latency_ns_median"] = model_latency(size, rank) * scale("latency", row)
                lat.append(row)
    bw = []
    for threads in (1, 2):
        row = {"job_id": f"bw-t{threads}", "kernel": "triad", "threads": threads, "cpu_node": 0,
               "host": host, "memory": "local", "repetition": 0, "validation": "pass",
               "command": f"numa_bandwidth ({tag})", "start": f"{tag}-start", "end": f"{tag}-end"}
        row["best_mb_s"] = 10000.0 * threads * scale("bandwidth", row)
        bw.append(row)
    pd.DataFrame(lat).to_csv(folder / "latency.csv", index=False)
    pd.DataFrame(bw).to_csv(folder / "bandwidth.csv", index=False)
    return folder


def within(bench: str, row: dict) -> float:
    """+-3 %, varying with the point, never the same factor twice in a row."""
    key = row.get("size_bytes", row.get("threads", 1)).bit_length() + row.get("rank", 0)
    return 1 + 0.03 * ((key % 3) - 1)


def dram_regression(bench: str, row: dict) -> float:
    if bench == "latency" and row["rank"] == 1 and row["size_bytes"] > 2**20:
        return within(bench, row) * 1.30
    return within(bench, row)


ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "workflow")}


def compare_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "numasweep", "compare", *args], capture_output=True, text=True,
                          env=ENV)


def test_recording_is_keyed_by_provenance_and_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    first = write_run(tmp_path / "one", "a")
    run, new = store.record(first, db)
    again, new_again = store.record(first, db)
    assert new and not new_again and again.run_key == run.run_key
    assert run.system == "model" and run.hosts == "node1"
    second = write_run(tmp_path / "two", "b", within)
    other, _ = store.record(second, db)
    assert other.run_key != run.run_key
    assert [r.run_key for r in store.runs(db)] == [run.run_key, other.run_key]
    # One row per job, each table whole: the earlier run reads back exactly.
    with sqlite3.connect(db) as con:
        jobs = con.execute("SELECT bench, job_id FROM jobs WHERE run_key = ? ORDER BY 1, 2", (run.run_key,)).fetchall()
    assert jobs == [("bandwidth", "bw-t1"), ("bandwidth", "bw-t2"), ("latency", "lat-r2-rep0"),
                    ("latency", "lat-r2-rep1")]
    back = store.tables(db, run.run_key)
    pd.testing.assert_frame_equal(back["latency"], pd.read_csv(first / "latency.csv"))
    assert store.find(db, "previous", "model", other.run_key).run_key == run.run_key
    assert store.find(db, run.run_key[:8]).run_key == run.run_key


def test_second_run_within_tolerance_passes_with_a_table(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    store.record(write_run(tmp_path / "one", "a"), db)
    now = write_run(tmp_path / "one", "b", within)
    store.record(now, db)
    out = tmp_path / "comparison.md"
    proc = compare_cli("--results", str(now), "--store", str(db), "--against", "previous", "-o", str(out),
                       "--json", str(tmp_path / "comparison.json"))
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "comparison.json").read_text())
    # Two ranks of latency and one bandwidth series (the thread count is its axis).
    assert [(r["bench"], r["series"], r["status"]) for r in result["series"]] == [
        ("latency", "rank=0, cpu=0", "pass"), ("latency", "rank=1, cpu=1", "pass"), ("bandwidth", "all", "pass")]
    assert result["findings"] == []
    text = out.read_text()
    assert "3 of 3 series pass" in text and "| latency | rank=1, cpu=1 | latency_ns_median | 7 | 0 |" in text


def test_planted_regression_beyond_tolerance_is_flagged(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    store.record(write_run(tmp_path / "one", "a"), db)
    now = write_run(tmp_path / "one", "b", dram_regression)
    result = compare.compare(now, [], db, "previous", 0.10)
    status = {r["series"]: (r["status"], r["regressed"]) for r in result["series"]}
    big = sum(1 for s in SIZES if s > 2**20)
    assert status == {"rank=0, cpu=0": ("pass", 0), "rank=1, cpu=1": ("fail", big), "all": ("pass", 0)}
    (finding,) = result["findings"]
    assert finding["id"] == "regression" and "rank=1" in finding["title"]
    assert sorted(e["size_bytes"] for e in finding["evidence"]) == [s for s in SIZES if s > 2**20]
    assert all(1.25 < e["ratio"] < 1.35 for e in finding["evidence"]), finding["evidence"]
    assert "### Regressions" in result["markdown"] and "FAIL" in result["markdown"]
    # A tolerance above the planted change passes it.
    assert all(r["status"] == "pass" for r in compare.compare(now, [], db, "previous", 0.40)["series"])


def test_references_pass_within_and_fail_beyond_their_bounds(tmp_path: Path) -> None:
    now = write_run(tmp_path / "run", "a", within)
    dram = model_latency(2**24, 1)
    refs = compare.parse_references([
        {"name": "DRAM rank 1", "bench": "latency", "where": {"size_bytes": "16M", "rank": 1},
         "reference": [dram, -0.05, 0.05, "ns"]},
        {"name": "tight triad", "bench": "bandwidth", "where": {"threads": 2}, "reference": [30000, -0.1, 0.1, "MB/s"]},
        {"name": "only a floor", "bench": "bandwidth", "reference": [5000, -0.1, None, "MB/s"]},
        {"name": "copy", "bench": "copy", "reference": [1.0, -0.1, 0.1, "GB/s"]},
    ])
    rows = compare.compare(now, refs, None, None, 0.1)["references"]
    assert [(r["name"], r["status"]) for r in rows] == [
        ("DRAM rank 1", "pass"), ("tight triad", "fail"), ("only a floor", "pass"), ("copy", "no data")]
    assert rows[0]["points"] == 1 and abs(rows[0]["measured"] / dram - 1) <= 0.03 + 1e-9


@pytest.mark.slow
def test_user_mistakes_are_one_line(tmp_path: Path) -> None:
    now = write_run(tmp_path / "run", "a")
    with pytest.raises(NumasweepError, match="lower must be <= 0"):
        compare.parse_references([{"bench": "latency", "reference": [1.0, 0.1, 0.2, "ns"]}])
    with pytest.raises(NumasweepError, match="no column 'sizes'"):
        compare.check_references(store.load_results(now), compare.parse_references(
            [{"bench": "latency", "where": {"sizes": 1}, "reference": [1.0, -0.1, 0.1, "ns"]}]))
    db = tmp_path / "store.sqlite"
    store.record(now, db)
    proc = compare_cli("--results", str(now), "--store", str(db), "--against", "previous", "-o",
                       str(tmp_path / "c.md"))
    # The first run of a campaign has no earlier run: said in the section, not an error; nothing
    # was compared, which is its own exit code
    assert proc.returncode == 3 and "No earlier run of run (model" in (tmp_path / "c.md").read_text(), proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("numasweep: compare: nothing compared: "), proc.stdout
    proc = compare_cli("--results", str(now), "--store", str(db), "--against", "0123abc", "-o", str(tmp_path / "c.md"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no run whose key starts" in proc.stderr, \
        proc.stderr
    proc = compare_cli("--results", str(now), "-o", str(tmp_path / "c.md"))
    assert proc.returncode == 2 and "nothing to compare with" in proc.stderr, proc.stderr
    (tmp_path / "junk.sqlite").write_text("not a database " * 100)
    proc = subprocess.run([sys.executable, "-m", "numasweep", "store", "record", "--results", str(now),
                           "--store", str(tmp_path / "junk.sqlite")], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 2 and "not a numasweep results store" in proc.stderr, proc.stderr


def test_previous_is_the_previous_run_of_the_same_campaign(tmp_path: Path) -> None:
    """Two campaigns on one topology ("model"), results/a and results/b: the previous run of a is
    a's, never b's, although b recorded last."""
    db = tmp_path / "store.sqlite"
    a_first, _ = store.record(write_run(tmp_path / "a", "a1"), db, "a")
    store.record(write_run(tmp_path / "b", "b1", dram_regression), db, "b")
    now = write_run(tmp_path / "a", "a2", within)
    result = compare.compare(now, [], db, "previous", 0.10, campaign="a")
    assert result["against"] == a_first.run_key
    assert all(r["status"] == "pass" for r in result["series"])
    # The first run of a third campaign on the same topology has nothing to compare with.
    third = compare.compare(write_run(tmp_path / "c", "c1"), [], db, "previous", 0.10)
    assert third["against"] is None and "No earlier run of c" in third["note"]
    assert [r.campaign for r in store.runs(db, campaign="b")] == ["b"]


def test_store_list_names_its_columns(tmp_path: Path) -> None:
    """`store list` prints a header line, then one row a run under it, oldest first."""
    db = tmp_path / "store.sqlite"
    first, _ = store.record(write_run(tmp_path / "a", "a1"), db, "a")
    second, _ = store.record(write_run(tmp_path / "a", "a2", within), db, "a")
    proc = subprocess.run([sys.executable, "-m", "numasweep", "store", "list", "--store", str(db)],
                          capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0, proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.split() == ["run", "campaign", "system", "started", "jobs", "commit", "verdict", "from", "hosts"]
    assert [row.split()[:3] for row in rows] == [[first.short, "a", "model"], [second.short, "a", "model"]]
    assert header.index("campaign") == rows[0].index("  a  ") + 2


def test_a_schema_1_store_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    with sqlite3.connect(db) as con:  # the schema before campaigns, with one run of results/a
        con.executescript(
            "CREATE TABLE runs (run_key TEXT PRIMARY KEY, system TEXT NOT NULL, recorded TEXT NOT NULL, "
            "started TEXT, ended TEXT, hosts TEXT NOT NULL, source TEXT NOT NULL);"
            "INSERT INTO runs VALUES ('k1', 'model', '2026-01-01T00:00:00Z', NULL, NULL, 'node1', 'results/a');")
    (old,) = store.runs(db)
    assert (old.campaign, old.folder) == ("a", "")
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    run, new = store.record(write_run(tmp_path / "a", "a1"), db)
    assert new and run.campaign == "a" and run.folder == str((tmp_path / "a").resolve())
    assert [r.run_key for r in store.runs(db, campaign="a", folder=tmp_path / "a")] == ["k1", run.run_key]
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA user_version = 99")
    with pytest.raises(NumasweepError, match="schema 99 is newer"):
        store.runs(db)


def test_a_reference_in_other_units_is_converted_to_the_metrics(tmp_path: Path) -> None:
    now = write_run(tmp_path / "run", "a")
    dram = model_latency(2**24, 1)
    refs = compare.parse_references([
        {"name": "DRAM in ms", "bench": "latency", "where": {"size_bytes": "16M", "rank": 1},
         "reference": [dram / 1e6, -0.05, 0.05, "ms"]},
        {"name": "DRAM in us", "bench": "latency", "where": {"size_bytes": "16M", "rank": 1},
         "reference": [dram / 1e3, -0.05, 0.05, "us"]},
        {"name": "triad in GB/s", "bench": "bandwidth", "where": {"threads": 2}, "reference": [20, -0.1, 0.1, "GB/s"]},
        {"name": "triad in GiB/s", "bench": "bandwidth", "where": {"threads": 2},
         "reference": [20e9 / 2**30, -0.1, 0.1, "GiB/s"]},
    ])
    rows = compare.compare(now, refs, None, None, 0.1)["references"]
    assert [(r["status"], r["unit"]) for r in rows] == [("pass", "ns"), ("pass", "ns"), ("pass", "MB/s"),
                                                         ("pass", "MB/s")]
    assert abs(rows[0]["reference"] - dram) < 1e-9 and abs(rows[2]["reference"] - 20000) < 1e-9
    with pytest.raises(NumasweepError, match=r"references\[0\].reference\[3\]: unit 'furlongs' is not known"):
        compare.parse_references([{"bench": "latency", "reference": [1, -0.1, 0.1, "furlongs"]}])


def test_a_comparison_across_campaigns_lists_what_had_no_counterpart(tmp_path: Path) -> None:
    """Campaign b measured latency of rank 0 at 4 KiB and 16 KiB only; campaign a the whole model
    grid, with a DRAM regression of rank 1. Compared with b's run key: the 2 common points are
    compared and pass; bandwidth, rank 1 (its regression included) and rank 0's other sizes are
    listed as not compared, and the comparison's first sentence says it spans two campaigns."""
    db = tmp_path / "store.sqlite"
    b = write_run(tmp_path / "b", "b1")
    lat = pd.read_csv(b / "latency.csv")
    lat[(lat["rank"] == 0) & lat["size_bytes"].isin(SIZES[:2])].to_csv(b / "latency.csv", index=False)
    (b / "bandwidth.csv").unlink()
    run_b, _ = store.record(b, db, "b")
    a = write_run(tmp_path / "a", "a1", dram_regression)
    result = compare.compare(a, [], db, run_b.run_key[:12], 0.10, campaign="a")
    assert [(r["series"], r["points"], r["status"]) for r in result["series"]] == [("rank=0, cpu=0", 2, "pass")]
    assert result["findings"] == []
    assert [(u["bench"], u["series"], u["side"], u["points"], u["at"]) for u in result["not_compared"]] == [
        ("latency", "rank=0, cpu=0", "now", len(SIZES) - 2, SIZES[2:]),
        ("latency", "rank=1, cpu=1", "now", len(SIZES), SIZES),
        ("bandwidth", None, "now", 2, [])]
    first = result["markdown"].split("\n\n")[1]
    assert first == ("**Across campaigns**: this run of campaign a against a run of campaign b: 2 points have a "
                     "counterpart and are compared; not compared, for want of one (listed under *Not compared*): "
                     f"1 benchmark (bandwidth), 1 series, {len(SIZES) - 2} points of compared series."), first
    assert "1 of 1 compared series pass on the points both runs measured" in result["markdown"]
    assert "| latency | rank=1, cpu=1 | this run | 7 | 4 KiB, 16 KiB, 64 KiB, 256 KiB, 1 MiB, 4 MiB, ... (7 in all) |" \
        in result["markdown"]
    # The other way round: what only the earlier run measured is listed as the earlier run's.
    store.record(a, db, "a")
    back = compare.compare(b, [], db, store.runs(db, campaign="a")[0].run_key[:12], 0.10, campaign="b")
    assert {(u["bench"], u["side"]) for u in back["not_compared"]} == {("latency", "then"), ("bandwidth", "then")}
    assert [(r["points"], r["status"]) for r in back["series"]] == [(2, "pass")]
    # The command says it in one warning line naming the fix.
    proc = compare_cli("--results", str(a), "--store", str(db), "--against", run_b.run_key[:12], "--campaign", "a",
                       "-o", str(tmp_path / "c.md"))
    assert proc.returncode == 0 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("numasweep: warning:") and "Across campaigns" in proc.stderr \
        and "--against previous" in proc.stderr, proc.stderr
    assert proc.stdout.startswith("numasweep: compare: all 1 checks passed"), proc.stdout


def test_a_changed_grid_of_one_campaign_is_said_too(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    store.record(write_run(tmp_path / "a", "a1"), db, "a")
    now = write_run(tmp_path / "a", "a2", within)
    (now / "bandwidth.csv").unlink()
    result = compare.compare(now, [], db, "previous", 0.10, campaign="a")
    assert result["across"].startswith("**Across grids**") and "1 benchmark (bandwidth)" in result["across"]
    assert [(u["bench"], u["side"]) for u in result["not_compared"]] == [("bandwidth", "then")]
    # The same grid again: nothing to say.
    assert compare.compare(write_run(tmp_path / "a", "a3", within), [], db, "previous", 0.10,
                           campaign="a")["across"] is None


def test_compare_is_a_gate_each_failing_check_one_line_and_its_exit_code(tmp_path: Path) -> None:
    """Exit 0 when every check passed, 1 when one failed (each failing check a line on stderr), 3
    when nothing was compared; `--gate` says the same of a comparison's JSON written before."""
    db = tmp_path / "store.sqlite"
    store.record(write_run(tmp_path / "one", "a"), db)
    now = write_run(tmp_path / "one", "b", dram_regression)
    dram = model_latency(2**24, 1)
    refs = tmp_path / "refs.yaml"
    refs.write_text(yaml.safe_dump({"references": [
        {"name": "DRAM rank 0", "bench": "latency", "where": {"size_bytes": "16M", "rank": 0},
         "reference": [round(dram, 1), -0.1, 0.1, "ns"]},
        {"name": "DRAM far too fast", "bench": "latency", "where": {"size_bytes": "16M", "rank": 0},
         "reference": [round(dram / 2, 1), -0.1, 0.1, "ns"]}]}))
    out, js = tmp_path / "c.md", tmp_path / "c.json"
    proc = compare_cli("--results", str(now), "--store", str(db), "--against", "previous", "--config", str(refs),
                       "-o", str(out), "--json", str(js))
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1, proc.stderr
    fails = [x for x in lines if x.startswith("numasweep: compare: FAIL ")]
    assert len(fails) == 2 and "reference DRAM far too fast: latency_ns_median measured" in fails[0] \
        and fails[1].startswith("numasweep: compare: FAIL regression latency, rank=1, cpu=1, latency_ns_median: "), lines
    assert lines[-1] == f"numasweep: compare: 2 of 5 checks failed ({out})", lines
    assert all(len(x) < 160 for x in fails), fails
    again = compare_cli("--gate", str(js))
    assert again.returncode == 1 and again.stderr.splitlines()[:2] == fails, again.stderr
    # within the tolerance and the first reference only: every check passes
    refs.write_text(yaml.safe_dump({"references": yaml.safe_load(refs.read_text())["references"][:1]}))
    proc = compare_cli("--results", str(write_run(tmp_path / "one", "c", within)), "--store", str(db),
                       "--against", "previous", "--config", str(refs), "-o", str(out), "--json", str(js))
    assert proc.returncode == 0 and proc.stdout.startswith("numasweep: compare: all 4 checks passed"), proc.stdout
    assert compare_cli("--gate", str(js)).returncode == 0
    js.write_text("{}")
    bad = compare_cli("--gate", str(js))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "not a comparison's JSON" in bad.stderr, bad.stderr


def double_latency(bench: str, row: dict) -> float:
    return 2.0 if bench == "latency" else 1.0


def test_history_follows_the_campaign_when_the_checkout_moves(tmp_path: Path) -> None:
    """A run recorded from one checkout's results/vm, compared from another (moved, copied, or a
    second path to it): `previous` is the earlier run all the same, and a planted 2x latency
    regression fails the comparison (exit 1)."""
    db = tmp_path / "store.sqlite"
    store.record(write_run(tmp_path / "old-checkout" / "results" / "vm", "a"), db, "vm")
    moved = tmp_path / "new-checkout"
    now = write_run(moved / "results" / "vm", "b", double_latency)
    (tmp_path / "link").symlink_to(moved)
    for results in (now, tmp_path / "link" / "results" / "vm"):
        proc = compare_cli("--results", str(results), "--store", str(db), "--against", "previous", "--campaign", "vm",
                           "-o", str(tmp_path / "c.md"))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "numasweep: compare: FAIL regression latency, rank=0" in proc.stderr, proc.stderr
    # a copied store in the new checkout: the same history
    shutil.copy(db, moved / "store.sqlite")
    proc = compare_cli("--results", str(now), "--store", str(moved / "store.sqlite"), "--against", "previous",
                       "-o", str(tmp_path / "c.md"))
    assert proc.returncode == 1 and "FAIL regression latency" in proc.stderr, proc.stdout + proc.stderr
