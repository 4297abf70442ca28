"""A job's quality verdict (numasweep.running.verdict): the rule on kernel tables as the kernels
write them, and the columns the aggregated tables take from the provenance record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from numasweep.results import aggregate
from numasweep.running import verdict

LATENCY = {"rank": "0", "latency_ns_median": "100", "latency_ns_min": "99.5", "latency_ns_max": "100.5",
           "samples": "5", "on_cpu_pct": "99.0", "retaken": "0"}
BANDWIDTH = {"best_mb_s": "10000", "min_mb_s": "9900", "avg_mb_s": "9950", "on_cpu_pct": "99.5"}


def checks(bench: str):
    """The checks a benchmark's jobs are judged by (its spread, what its CPU share means), found
    as run-job finds them: by the folder of the job's table."""
    return verdict.checks_of(Path("results", "sys", bench, "j1.csv"))


@pytest.mark.parametrize("row, load, expected, words, bench", [
    (LATENCY, 0.5, "quiet", "every thread on its CPU", "latency"),
    ({**LATENCY, "on_cpu_pct": "2.0"}, 0.5, "disturbed", "rank 0 on its CPU 2% of the time", "latency"),
    ({**LATENCY, "retaken": "5", "on_cpu_pct": "84.0"}, 0.5, "disturbed", "took every sample again and stayed "
     "under 90%", "latency"),
    # retakes spent, the samples kept at 90-95%: a few percent taken, as when every CPU measures
    ({**LATENCY, "retaken": "5", "on_cpu_pct": "94.0"}, 0.5, "noisy", "under 95% on the CPU (at least 94%)",
     "latency"),
    # retakes spent, but the samples kept ran at 95% or more: the retakes did their job
    ({**LATENCY, "retaken": "6", "on_cpu_pct": "97.4"}, 0.5, "quiet", "every thread on its CPU", "latency"),
    ({**LATENCY, "on_cpu_pct": "80.0"}, 0.5, "noisy", "rank 0 on its CPU 80% of the time", "latency"),
    ({**LATENCY, "latency_ns_max": "103"}, 0.5, "noisy", "spread within the run 3.5%, above the target of 2%",
     "latency"),
    (BANDWIDTH, 0.5, "quiet", "every thread", "bandwidth"),
    ({**BANDWIDTH, "avg_mb_s": "9600"}, 0.5, "noisy", "above the target of 3%", "bandwidth"),
    ({**BANDWIDTH, "on_cpu_pct": "31.3"}, 0.5, "disturbed", "a thread on its CPU 31% of the time", "bandwidth"),
    ({"chase_on_cpu_pct": "100", "load_on_cpu_pct": "12", "chase_retaken": "0", "samples": "2"}, 0.5,
     "disturbed", "a load thread on its CPU 12% of the time", "loaded_latency"),
    (BANDWIDTH, 3.5, "noisy", "load average 3.5 on 2 CPUs", "bandwidth"),
    ({"size": "1", "value": "2.5"}, 0.5, "quiet", "every thread", "not_a_benchmark"),
])
def test_the_verdict_follows_the_rule(row, load, expected, words, bench):
    got, reason = verdict.decide([row], load, 2, checks(bench))
    assert got == expected and words in reason, (got, reason)


def test_the_worst_row_decides(tmp_path: Path):
    rows = [LATENCY, {**LATENCY, "rank": "3", "on_cpu_pct": "40"}, {**LATENCY, "on_cpu_pct": "70"}]
    assert verdict.decide(rows, None, 2, checks("latency")) == ("disturbed", "rank 3 on its CPU 40% of the time")


def test_one_row_over_the_spread_target_does_not_make_a_run_noisy():
    """A cache's edge or one slow size spreads its samples; the run is noisy when most rows do."""
    wide = {**LATENCY, "latency_ns_max": "110"}
    assert verdict.decide([LATENCY, LATENCY, wide], None, 2, checks("latency"))[0] == "quiet"
    assert verdict.decide([LATENCY, wide, wide], None, 2, checks("latency"))[0] == "noisy"


def test_a_latency_under_256_mib_has_the_looser_target():
    """numa_latency's --spread-small: a short sample at a small size is judged against 5%, not 2%."""
    row = {**LATENCY, "latency_ns_max": "103"}  # 3.5%
    assert verdict.decide([{**row, "size_bytes": str(4 << 10)}], None, 2, checks("latency"))[0] == "quiet"
    assert verdict.decide([{**row, "size_bytes": str(256 << 20)}], None, 2, checks("latency")) == (
        "noisy", "spread within the run 3.5%, above the target of 2%")
    assert verdict.decide([{**row, "size_bytes": str(4 << 10), "latency_ns_max": "106"}], None, 2,
                          checks("latency"))[0] == "noisy"


def _job(tmp_path: Path, quality: dict | None) -> Path:
    csv = tmp_path / "latency" / "j1.csv"
    csv.parent.mkdir(parents=True)
    csv.write_text("size_bytes,latency_ns_median\n4096,1.2\n")
    rec = {"job_id": "j1", "grid": {"repetition": 0}}
    if quality is not None:
        rec["quality"] = quality
    csv.with_suffix(".json").write_text(json.dumps(rec))
    return csv


def test_the_tables_carry_the_verdict_and_old_records_go_without(tmp_path: Path):
    csv = _job(tmp_path / "new", verdict.record("disturbed", "rank 0 on its CPU 2% of the time", 3))
    extra = aggregate.job_columns(csv, ["size_bytes", "latency_ns_median"])
    assert (extra["quality"], extra["quality_reason"], extra["quality_tries"]) == (
        "disturbed", "rank 0 on its CPU 2% of the time", 3)
    old = aggregate.job_columns(_job(tmp_path / "old", None), ["size_bytes", "latency_ns_median"])
    assert not {"quality", "quality_reason", "quality_tries"} & set(old)


def test_a_kernel_that_waits_in_the_kernel_is_not_judged_by_its_share_on_the_cpu(tmp_path: Path):
    """numa_migrate's moves sleep in the kernel (`checks.on_cpu` "waits"): 35% on the CPU is its
    nature, not a disturbed run; the same share from numa_copy is one. Tables without a recorded
    verdict are read the same way."""
    import pandas as pd

    from numasweep.results import disturbed

    text = "direction,gb_s,on_cpu_pct\nforward,2.5,35.0\nback,2.4,41.0\n"
    for bench, expected in (("migrate", "quiet"), ("copy", "disturbed")):
        table = tmp_path / bench / "j.csv.partial"     # run-job reads the partial table in its benchmark's folder
        table.parent.mkdir()
        table.write_text(text)
        assert verdict.decide(verdict.read_rows(table), 0.5, 2, checks(bench))[0] == expected
        df = pd.read_csv(table).assign(job_id="j")
        assert set(disturbed.job_verdicts(df, bench)[disturbed.VERDICT]) == {expected}


@pytest.mark.parametrize("word", ["DISTURBED", "bad", "unknown"])
def test_an_unknown_verdict_word_is_refused_never_read_as_quiet(word: str) -> None:
    """A hand-edited or foreign verdict in a table is refused in one line naming the job and the
    fix; read as quiet, a disturbed series would be concluded and exported unmarked."""
    import pandas as pd

    from numasweep.core.errors import NumasweepError
    from numasweep.results import disturbed

    table = pd.DataFrame({"job_id": ["j1", "j2"], verdict.COLUMN: ["quiet", word], "quality_reason": ["", "x"]})
    with pytest.raises(NumasweepError, match=rf"latency: job j2: quality verdict '{word}' is none of quiet, noisy, "
                                             r"disturbed; correct it .* or delete the job's CSV"):
        disturbed.job_verdicts(table, "latency")
    assert list(disturbed.job_verdicts(table.iloc[:1], "latency")[disturbed.VERDICT]) == ["quiet"]
