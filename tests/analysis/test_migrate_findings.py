"""Page migration's findings on model data (tests/benches/migrate.py, migrate_rows): a direction planted 2x
slower is found, with its interval, and a symmetric pair is said alike, no slower side claimed."""

from __future__ import annotations

import pandas as pd

from benches import migrate as model
from numasweep.benches import migrate as migrate_bench
from numasweep.findings import audit

SIZES = [64 << 20, 256 << 20]


def table(**kwargs) -> pd.DataFrame:
    df = pd.DataFrame(model.migrate_rows(0, 3, SIZES, distance=17, **kwargs))
    df["job_id"], df["label"] = "migrate-s0-d3", ""
    return df


def test_a_direction_planted_two_times_slower_is_found():
    (found,) = migrate_bench.asymmetry(table(slower=(3, 0), by=2.0))
    n = found.numbers
    assert n["claim"] and not n["alike"], found.summary
    assert 1.9 < n["forward_to_back_low"] <= n["forward_to_back"] <= n["forward_to_back_high"] < 2.1, n
    assert "moves from node 3 to node 0 are slower" in found.summary, found.summary
    assert "95% interval" in found.summary
    # the audit every report runs reads its claim off its numbers, and the claim holds
    assert audit.claims_of(found.to_dict())[0]["verdict"] == "differs"
    assert audit.audit([found.to_dict()]) == []


def test_a_symmetric_pair_is_said_alike_and_nothing_is_claimed():
    (found,) = migrate_bench.asymmetry(table())
    assert not found.numbers["claim"] and found.numbers["alike"], found.summary
    assert "the two directions are alike" in found.summary and "slower" not in found.summary


def test_one_repetition_claims_nothing():
    (found,) = migrate_bench.asymmetry(table(slower=(0, 3), repetitions=1))
    assert not found.numbers["claim"] and "nothing claimed" in found.summary, found.summary


def test_the_pair_finding_says_time_throughput_each_way_and_the_pages_verified():
    (found,) = migrate_bench.pair_findings(table(slower=(3, 0)))
    n = found.numbers
    assert n["size_bytes"] == SIZES[-1] and n["pages_moved"] == n["pages_total"] == 2 * 3 * sum(SIZES) // 4096
    assert abs(n["gb_s"] / n["back_gb_s"] - 2.0) < 0.05, n
    assert found.summary.startswith("Moving 256 MiB from node 0 to node 3 (move pages, 1 thread, 512 pages a call)")
    assert "GB/s (95% interval" in found.summary and "back from node 3 to node 0" in found.summary
    assert "every page of every move verified on its target" in found.summary


def test_pages_left_behind_are_said():
    df = table()
    df.loc[0, "pages_moved"] = df.loc[0, "pages_total"] - 7
    (found,) = migrate_bench.pair_findings(df)
    assert "7 of" in found.summary and "not on the target" in found.summary, found.summary


def test_counter_deltas_are_a_table_of_the_report():
    tables = migrate_bench.raw_tables(table())
    counters = next(t for t in tables if "counter deltas" in t["title"])
    assert "pgmigrate_success" in counters["table"] and "numa_hit" in counters["table"]
