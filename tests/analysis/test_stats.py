"""stats: value checks, the range constant, multiple-testing rules and per-band noise."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from numasweep.statistics import stats
from numasweep.core.errors import NumasweepError
from numasweep.benches.common import LATENCY


def _table(values):
    return pd.DataFrame({"size_bytes": [4096, 8192, 16384], "latency_ns_median": values,
                         "latency_ns_min": [np.nan] * 3, "latency_ns_max": [np.nan] * 3})


@pytest.mark.parametrize("bad", [0.0, -3.5, np.inf, np.nan])
def test_zero_negative_and_non_finite_latencies_are_refused_with_line_and_column(bad):
    with pytest.raises(NumasweepError) as err:
        stats.check_values(_table([1.0, bad, 2.0]), "latency.csv", LATENCY)
    assert "latency.csv" in str(err.value) and "line 3 column latency_ns_median" in str(err.value)


def test_missing_min_max_are_accepted():
    stats.check_values(_table([1.0, 1.5, 2.0]), "latency.csv", LATENCY)


def test_range_constant_matches_the_control_chart_table():
    for n, d2 in ((2, 1.128), (5, 2.326), (10, 3.078), (25, 3.931)):
        assert stats.range_constant(n) == pytest.approx(d2, abs=2e-3)


def test_benjamini_hochberg_and_holm_on_a_textbook_case():
    p = [0.01, 0.04, 0.03, 0.005, 0.2]
    # BH at 0.05: sorted 0.005 .01 .03 .04 .2 vs 0.01 .02 .03 .04 .05 -> first four rejected
    assert stats.benjamini_hochberg(p, 0.05).tolist() == [True, True, True, True, False]
    # Holm: .005 <= .01, .01 <= .0125, .03 > .0167 stops
    assert stats.holm(p, 0.05).tolist() == [True, False, False, True, False]
    assert not stats.benjamini_hochberg([np.nan, 0.5]).any()


def test_an_erratic_size_moves_the_noise_of_its_own_band_only_and_little():
    rng = np.random.default_rng(1)
    logs = np.log(50) + rng.normal(0, 0.01, (5, 12))
    quiet = stats.Series({}, 2 ** np.arange(10, 22), logs.copy(), np.full(logs.shape, np.nan), list(range(5)))
    logs[0, 0] += 0.5
    logs[1, 0] += 0.4
    loud = stats.Series({}, quiet.sizes, logs, quiet.run_se, quiet.replicates)
    _, _, sig_quiet, _ = quiet.noise()
    _, _, sig_loud, _ = loud.noise()
    assert sig_quiet[0] <= sig_loud[0] < 3 * sig_quiet[0]       # robust: two of five replicates off by 50 %
    assert np.allclose(sig_loud[2:], sig_quiet[2:])             # and nowhere else
    # the spread a min-max rule would see there
    assert np.ptp(logs[:, 0]) > 20 * sig_quiet[0]


def test_within_run_spread_is_the_noise_of_a_single_replicate():
    df = pd.DataFrame({"size_bytes": [4096, 8192], "latency_ns_median": [10.0, 10.0],
                       "latency_ns_min": [9.0, 9.0], "latency_ns_max": [11.0, 11.0], "samples": [10, 10]})
    (s,) = stats.series_table(df, [], [], LATENCY)
    se, _, _, rule = s.noise()
    expected = np.sqrt(np.pi / 2) * np.log(11 / 9) / stats.range_constant(10) / np.sqrt(10)
    assert se == pytest.approx([expected, expected]) and "within-run" in rule


def test_a_key_of_one_value_names_every_series_as_a_grouped_one_would():
    """A series key with one value in the table still names each series, in the keys' order,
    with the value and type a grouping gives; and the series are those of the same table whose
    key varies, less the other value's."""
    rng = np.random.default_rng(3)
    rows = [{"label": "a", "mode": mode, "ranks": 2, "rank": r, "size_bytes": size,
             "latency_ns_median": 50 + 10 * (mode == "serial") + rng.normal(0, 1)}
            for mode in ("concurrent", "serial") for r in range(3) for size in (4096, 8192, 16384)]
    df = pd.DataFrame(rows)
    one = stats.series_table(df, ["label", "mode", "ranks"], ["rank"], LATENCY)
    other = pd.concat([df, df.assign(label="b", ranks=4)], ignore_index=True)
    both = [s for s in stats.series_table(other, ["label", "mode", "ranks"], ["rank"], LATENCY)
            if s.key["label"] == "a"]
    assert [s.key for s in one] == [s.key for s in both] == [{"label": "a", "mode": m, "ranks": 2}
                                                           for m in ("concurrent", "serial")]
    assert [type(v) for v in one[0].key.values()] == [type(v) for v in both[0].key.values()]
    assert all(np.array_equal(a.logs, b.logs) and a.replicates == b.replicates for a, b in zip(one, both))


def test_p_values_in_one_call_are_each_series_own():
    """`excess_pvalues` over many series: bit for bit `excess_pvalue` of each, whatever its
    shape, floor, missing noise or infinite degrees of freedom."""
    rng = np.random.default_rng(5)
    tests = []
    for n in range(40):
        shape = (int(rng.integers(1, 9)),) if n % 3 else (int(rng.integers(1, 4)), int(rng.integers(1, 5)))
        se = np.abs(rng.normal(0.05, 0.03, shape))
        se[rng.random(shape) < 0.1] = np.nan
        dof = rng.integers(1, 40, shape).astype(float)
        dof[rng.random(shape) < 0.2] = np.inf
        tests.append((rng.normal(0, 0.2, shape), se, dof if n % 4 else 7.0, float(rng.choice([0.0, 0.03, 0.1]))))
    for one, (r, se, dof, floor) in zip(stats.excess_pvalues(tests), tests):
        assert one.shape == np.shape(r)
        np.testing.assert_array_equal(one, stats.excess_pvalue(r, se, dof, floor))
    assert stats.excess_pvalues([]) == []


def test_t_interval_covers_at_its_stated_rate():
    rng = np.random.default_rng(2)
    hits = []
    for _ in range(400):
        x = rng.normal(0.3, 0.05, 6)
        iv = stats.t_interval(float(x.mean()), float(x.std(ddof=1) / np.sqrt(6)), 5)
        hits.append(iv.covers(np.exp(0.3)))
    assert 0.92 <= np.mean(hits) <= 0.98


def test_more_repetitions_shrink_the_noise_of_a_point_instead_of_growing_it():
    rng = np.random.default_rng(4)
    se_by_k = {}
    for k in (3, 12, 48):
        logs = np.log(80) + rng.normal(0, 0.03, (k, 10))
        s = stats.Series({}, 2 ** np.arange(20, 30), logs, np.full(logs.shape, np.nan), list(range(k)))
        se, _, sig, _ = s.noise()
        se_by_k[k] = float(np.median(se))
        assert float(np.median(sig)) == pytest.approx(0.03, rel=0.35)     # one replicate's noise, whatever k
    assert se_by_k[3] > se_by_k[12] > se_by_k[48]


# ---------------------------------------------------------------- noise from pairwise differences

def _listed_noise(logs: np.ndarray, band: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(sigma, dof) per size by listing every pairwise difference of each size's replicates: the
    definition `Series.noise` must reproduce while the pairs fit in `stats.MAX_CELLS`."""
    m = logs.shape[1]
    k = np.isfinite(logs).sum(axis=0)
    sig, dof = np.full(m, np.nan), np.full(m, np.inf)
    diffs = []
    for j in range(m):
        col = logs[:, j][np.isfinite(logs[:, j])]
        diffs.append(np.abs(col[:, None] - col[None, :])[np.triu_indices(len(col), 1)])
    for j in range(m):
        lo, hi = max(0, j - band), min(m, j + band + 1)
        pooled = np.concatenate(diffs[lo:hi])
        if len(pooled) and k[j]:
            sig[j] = stats.SHAMOS * float(np.median(pooled))
            dof[j] = max(1, int(np.sum(np.maximum(k[lo:hi] - 1, 0))))
    return sig, dof


def _model_logs(rng, r: int, m: int, kind: int) -> np.ndarray:
    """Log latencies from a model: normal noise, values rounded as a CSV keeps them (ties), few
    distinct values (many ties), or all equal; some cells missing, sometimes one replicate off."""
    if kind == 0:
        logs = rng.normal(3, 0.1, (r, m))
    elif kind == 1:
        logs = np.log(np.round(np.exp(rng.normal(3, 0.05, (r, m))), 3))
    elif kind == 2:
        logs = np.log(rng.integers(10, 14, (r, m)).astype(float))
    else:
        logs = np.full((r, m), 2.5)
    logs[rng.random((r, m)) < 0.15] = np.nan
    if rng.random() < 0.3:
        logs[rng.integers(0, r), :] += 0.5
    return logs


def test_noise_is_the_median_of_every_listed_pair():
    """Model data with ties and gaps: sigma and dof of `Series.noise` are those of the listed
    pairwise differences, number for number, in every band."""
    rng = np.random.default_rng(7)
    for trial in range(120):
        r, m = int(rng.integers(2, 50)), int(rng.integers(1, 7))
        logs = _model_logs(rng, r, m, trial % 4)
        s = stats.Series({}, np.arange(1, m + 1), logs, np.full((r, m), np.nan), list(range(r)))
        if np.isfinite(logs).sum(axis=0).max() < 2:
            continue
        for band in (0, 1, 2):
            _, dof, sig, _ = s.noise(band)
            want_sig, want_dof = _listed_noise(logs, band)
            np.testing.assert_allclose(sig, want_sig, rtol=1e-12, err_msg=f"{trial} {band}")
            assert np.array_equal(dof, want_dof), (trial, band)


def test_many_replicates_take_the_noise_from_a_fixed_sample_of_pairs(monkeypatch):
    """Past `stats.MAX_CELLS` the median is over a seeded sample of pairs of replicates: near the
    listed one (the sample's own error), the same numbers for the same table, and said so.
    (Values of a few distinct numbers are left out: their median jumps between two of them.)"""
    monkeypatch.setattr(stats, "MAX_CELLS", 20_000)
    rng = np.random.default_rng(9)
    for trial in range(8):
        r, m = int(rng.integers(300, 600)), int(rng.integers(2, 7))
        logs = _model_logs(rng, r, m, trial % 2)
        s = stats.Series({}, np.arange(1, m + 1), logs, np.full((r, m), np.nan), list(range(r)))
        _, dof, sig, rule = s.noise()
        want_sig, want_dof = _listed_noise(logs)
        assert "sample of" in rule and f"of its {r * (r - 1) // 2} pairs" in rule
        np.testing.assert_allclose(sig, want_sig, rtol=0.05, err_msg=str(trial))
        assert np.array_equal(dof, want_dof)
        again = stats.Series({}, s.sizes, logs.copy(), s.run_se, s.replicates)
        assert np.array_equal(again.noise()[2], sig, equal_nan=True)


def test_deviations_leave_each_replicate_out_as_a_series_without_it_would():
    """Every replicate's reference and noise equal those of the series rebuilt without it (model
    data with ties, gaps and an off replicate); alpha 1 keeps every test to compare."""
    rng = np.random.default_rng(8)
    for trial in range(80):
        r, m = int(rng.integers(3, 30)), int(rng.integers(1, 6))
        logs = _model_logs(rng, r, m, trial % 4)
        run_se = np.abs(rng.normal(0.01, 0.005, (r, m)))
        s = stats.Series({}, np.arange(1, m + 1), logs, run_se, list(range(r)))
        dof, sig, ref, k = stats._left_out(s)
        for u in range(r):
            rest = stats.Series({}, s.sizes, np.delete(logs, u, axis=0), np.delete(run_se, u, axis=0),
                                [i for i in range(r) if i != u])
            _, want_dof, want_sig, _ = rest.noise()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # a size with no value left: NaN, as wanted
                want_ref = rest.center()
            np.testing.assert_allclose(sig[u], want_sig, rtol=1e-12, err_msg=f"{trial} {u}")
            assert np.array_equal(dof[u], want_dof), (trial, u)
            assert np.array_equal(ref[u], want_ref, equal_nan=True), (trial, u)
            assert np.array_equal(k[u], rest.k), (trial, u)
        found = stats.deviations([s], [0.02], alpha=1.0)
        assert all(0 <= u < r and 0 <= j < m for _, u, j, *_ in found)


def test_with_many_replicates_the_left_out_noise_is_near_each_series_without_it():
    """Past `stats.LOO_CELLS` each replicate's noise is the whole series': within a few per cent
    of the series without it, an outlier replicate included, and the outlier is still found."""
    rng = np.random.default_rng(10)
    r, m = 120, 4
    logs = rng.normal(3, 0.05, (r, m))
    logs[7] += 0.5
    s = stats.Series({}, np.arange(1, m + 1), logs, np.full((r, m), np.nan), list(range(r)))
    assert r * r * (r - 1) // 2 * m * 3 > stats.LOO_CELLS
    dof, sig, ref, k = stats._left_out(s)
    for u in (0, 7, 50):
        rest = stats.Series({}, s.sizes, np.delete(logs, u, axis=0), s.run_se[1:], list(range(r - 1)))
        _, want_dof, want_sig, _ = rest.noise()
        np.testing.assert_allclose(sig[u], want_sig, rtol=0.05)
        assert np.array_equal(dof[u], want_dof)
        np.testing.assert_array_equal(ref[u], rest.center())
    found = stats.deviations([s], [0.02])
    assert {(u, j) for _, u, j, *_ in found} == {(7, j) for j in range(m)}


@pytest.mark.parametrize("columns", [(3, 4, 5), (0, 2, 9), (7,)])
def test_draws_spread_as_the_noise_and_are_reproducible(columns):
    """`Series.draws(..., columns)`: NaN at the sizes not asked, the same numbers for the same
    arguments (drawn once, and again on a fresh series, in pieces of any size), and a spread of
    the bootstrap centre near the standard error of `Series.noise`."""
    rng = np.random.default_rng(7)
    r, m = 301, 10
    logs = rng.normal(4.0, 0.05, (r, m))
    logs[rng.random((r, m)) < 0.02] = np.nan           # a few sizes missing from a few replicates
    run_se = np.where(rng.random((r, m)) < 0.5, 0.01, np.nan)
    s = stats.Series({}, 2 ** np.arange(10, 10 + m), logs, run_se, list(range(r)))
    part = s.draws(11, 400, columns)
    assert part.shape == (400, m)
    assert np.isfinite(part[:, list(columns)]).all() and np.isnan(np.delete(part, list(columns), axis=1)).all()
    assert s.draws(11, 400, columns) is part            # drawn once per (seed, n, columns)
    other = stats.Series({}, s.sizes, logs, run_se, list(range(r)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stats, "DRAW_CELLS", r * len(columns) * 3)    # pieces of three draws
        np.testing.assert_array_equal(other.draws(11, 400, columns), part)
    se = s.noise()[0][list(columns)]
    np.testing.assert_allclose(part[:, list(columns)].std(axis=0), se, rtol=0.35)
    assert not np.array_equal(s.draws(12, 400, columns), part)


@pytest.mark.parametrize("repeat", [False, True])
def test_points_are_sorted_and_taken_as_the_grouping_takes_them(repeat):
    """`stats._sorted_points` sorts a table of one row a point on one integer key instead of
    grouping it: the distinct values, codes and medians must be those of pandas' sorted grouping,
    text (categorical) and number keys alike; a table with repeated points is grouped."""
    rng = np.random.default_rng(3)
    n = 4000
    df = pd.DataFrame({"mode": pd.Categorical(rng.choice(["serial", "concurrent", "base"], n)),
                       "rank": rng.integers(0, 40, n), "host": pd.Categorical(rng.choice(["b", "a"], n)),
                       "size_bytes": 2 ** rng.integers(10, 25, n)})
    df = df.drop_duplicates(ignore_index=True)
    if repeat:
        df = pd.concat([df, df.iloc[::5]], ignore_index=True)
    df["_log"] = rng.normal(4, 0.1, len(df))
    df["_se"] = np.where(rng.random(len(df)) < 0.3, np.nan, 0.01)
    by = ["mode", "rank", "host", "size_bytes"]
    levels, shape, key, logs, ses = stats._sorted_points(df, by)
    codes = np.column_stack(np.unravel_index(key, shape))
    agg = df.groupby(by, sort=True, dropna=False).agg(_log=("_log", "median"), _se=("_se", "median"))
    assert [lvl.tolist() for lvl in levels] == [lvl.tolist() for lvl in agg.index.levels]
    np.testing.assert_array_equal(codes, np.column_stack(agg.index.codes))
    np.testing.assert_array_equal(logs, agg["_log"].to_numpy())
    np.testing.assert_array_equal(ses, agg["_se"].to_numpy())


@pytest.mark.parametrize("ordered_categories", [True, False])
def test_units_of_a_ratio_series_come_sorted_by_name_from_codes_or_text(ordered_categories):
    """`contrasts._units_by_size` takes a categorical unit column's codes where its categories are
    in text order, and the text otherwise: the units, sizes and values must be the same."""
    from numasweep.statistics import contrasts

    rng = np.random.default_rng(5)
    names = [f"{a}|{b}" for a in (0, 1, 10, 2) for b in ("x", "y")]
    rows = pd.DataFrame([(u, s) for u in names for s in (4096, 8192, 16384)], columns=["_unit", "size_bytes"])
    rows = rows.sample(frac=1, random_state=1).iloc[:-2].reset_index(drop=True)
    rows["_d"], rows["_dse"] = rng.normal(0, 0.1, len(rows)), rng.random(len(rows))
    as_text = contrasts._units_by_size(rows.assign(_unit=rows["_unit"].astype(object)), "size_bytes")
    categories = sorted(names) if ordered_categories else sorted(names, reverse=True)
    coded = contrasts._units_by_size(rows.assign(_unit=pd.Categorical(rows["_unit"], categories=categories)),
                                     "size_bytes")
    assert coded[3] == as_text[3] == sorted(set(rows["_unit"]))
    for a, b in zip(coded[:3], as_text[:3]):
        np.testing.assert_array_equal(a, b)


def test_no_outlier_is_named_from_three_runs_nor_the_majority_against_one():
    """Three runs of 15.6, 16.7 and 51.2 ns: two others are too few to name one off them (their
    median is their mean, and the normal run would be 'off' 29 ns); with five runs the one far
    off is named, never one of the four that agree."""
    rng = np.random.default_rng(3)
    logs = np.log(16.0) + rng.normal(0, 0.01, (3, 8))
    logs[2, 4] = np.log(51.2)
    three = stats.Series({}, np.arange(1, 9), logs, np.full((3, 8), np.nan), [0, 1, 2])
    assert stats.deviations([three], [0.10]) == []      # two others: every run of that size was named
    rng = np.random.default_rng(12)
    logs = np.log(16.0) + rng.normal(0, 0.02, (5, 6))
    logs[4, 2] = np.log(51.2)
    five = stats.Series({}, np.arange(1, 7), logs, np.full((5, 6), np.nan), list(range(5)))
    found = stats.deviations([five], [0.10])
    assert [(u, j) for _, u, j, *_ in found] == [(4, 2)]
