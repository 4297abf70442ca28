"""Two sides of one factor compared size by size: concurrent vs serial, one L3 group vs another,
local vs remote memory. Built on the model of `numasweep.statistics.stats`.

A *unit* pairs one measurement of side a with one of side b (the caller's unit keys: the same
rank in both modes; the same NUMA node for its two L3 groups; the same repetition). Per unit and
size the log ratio a / b is one replicate; units are the unit of uncertainty. Per size:
- the ratio is the median over units, with a t interval from the units' spread pooled over a
  band of three sizes (`stats.Series.noise`);
- it differs when |log ratio| > log(1 + floor) beyond the noise, Benjamini-Hochberg over every
  size of every contrast in the call;
- the onset is the smallest size from which every larger size differs in the same direction,
  its interval a bootstrap over units that reruns the tests;
- the plateau is the contiguous run of differing sizes around the largest difference where the
  excess is at least half of it; its ratio is the geometric mean over those sizes of the per-size
  ratios, with the noise that decided them (`plateau_interval`), so the interval printed with a
  claim is the one its decision rests on;
- a contrast with no differing size whose overall ratio (the same over all sizes, interval
  included) lies inside 1 / (1 + floor) .. 1 + floor is *equivalent*: a finding of symmetry.
`deviations` tests each unit against the median of the others at the same size (Holm over every
unit and size: each claim names one node or rank); a deviating unit on the other side of 1 than
the others is an inversion.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from numasweep.statistics import stats
from numasweep.results.series import constant_keys, joined, per_value
from numasweep.statistics.stats import Interval, Series

MIN_EFFECT = 0.10   # floor of practical effect: a difference under 10 % is not reported


@dataclass
class SizeContrast:
    size_bytes: int
    ratio: Interval
    units: int
    p_value: float
    differs: bool

    @property
    def verdict(self) -> bool | str:
        """What a table says of this size: differs or not, or "unknown" where the ratio has no
        interval (the noise unknown: "no" would claim what the data cannot show)."""
        if not self.differs and not np.isfinite(self.ratio.low):
            return "unknown"
        return self.differs


@dataclass
class Contrast:
    series: dict
    factor: str
    a: Any
    b: Any
    unit_keys: list[str]
    floor: float
    noise_rule: str
    per_size: list[SizeContrast]
    onset_bytes: int | None = None
    onset: Interval | None = None
    plateau_from_bytes: int | None = None
    plateau_to_bytes: int | None = None
    plateau_ratio: Interval | None = None
    overall_ratio: Interval | None = None
    equivalent: bool = False
    ratios: Series | None = field(default=None, repr=False)
    # Why sizes beyond the within-run noise were not claimed (one unit a side: no interval
    # between runs for the ratio a claim would state); None when nothing was held back.
    unclaimed: str | None = None

    @property
    def differs(self) -> bool:
        return any(s.differs for s in self.per_size)


@dataclass
class Deviation:
    series: dict
    unit: dict
    size_bytes: int
    ratio: float              # this unit's a / b
    others_ratio: float       # median of the other units
    relative: Interval        # this unit's ratio / the others' median
    p_value: float
    inversion: bool


def _side(table: pd.DataFrame, keys: list[str], measure: stats.Measure) -> pd.DataFrame:
    df = table.copy(deep=False)
    df["_log"] = np.log(pd.to_numeric(df[measure.value], errors="coerce"))
    df["_se"] = stats.run_standard_error(df, measure)
    return df.groupby(keys + [measure.axis], dropna=False)[["_log", "_se"]].median()


def _text_of(values: pd.Series) -> np.ndarray:
    """Each value as text (`str`), an integer or categorical column by its distinct values (a
    million rows)."""
    if pd.api.types.is_integer_dtype(values.dtype) or isinstance(values.dtype, pd.CategoricalDtype):
        return per_value(values, str)
    return values.astype(str).to_numpy()


def _units_by_size(g: pd.DataFrame, axis: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """(sizes, log ratios, their standard errors, units) of one series: units (sorted) by sizes
    (ascending), NaN where a unit lacks a size; a unit has one row a size. A pivot table would give
    the same, at a few milliseconds a series: a fleet has thousands."""
    unit = g["_unit"]
    codes = unit.cat.codes.to_numpy() if isinstance(unit.dtype, pd.CategoricalDtype) else None
    if codes is not None and unit.cat.categories.is_monotonic_increasing and (codes >= 0).all():
        # categories in text order (as `series.joined` makes them): the codes sort as the names,
        # without comparing a string per row
        used, ui = np.unique(codes, return_inverse=True)
        units = np.asarray(unit.cat.categories.take(used), dtype=object)
    else:
        units, ui = np.unique(unit.to_numpy(object), return_inverse=True)
    sizes, si = np.unique(g[axis].to_numpy(np.int64), return_inverse=True)
    d, e = np.full((2, len(units), len(sizes)), np.nan)
    d[ui, si], e[ui, si] = g["_d"].to_numpy(float), g["_dse"].to_numpy(float)
    return sizes, d, e, units.tolist()


def contrast(table: pd.DataFrame, factor: str, a: Any, b: Any, unit_keys: Sequence[str],
             series_keys: Sequence[str] = (), *, measure: stats.Measure, where: str,
             floor: float = MIN_EFFECT, q: float = stats.FDR, onset: bool = True) -> list[Contrast]:
    """a / b per series and size (see the module docstring); `measure` names the caller's columns
    (a latency table's value over sizes; bandwidth over threads: its "sizes" are thread counts),
    `where` the table in messages; onset=False skips the onset and its bootstrap (a caller that
    states no onset)."""
    stats.check_values(table, where, measure)
    df = measure.columns(table, *series_keys, *unit_keys, factor)
    keys = [k for k in series_keys if k in df] + [k for k in unit_keys if k in df]
    for col in keys + [factor]:
        df[col] = stats.key_column(df[col])
    # series keys with one value in the table are not grouped by (each would add a table-long array of codes)
    same = constant_keys(df, [k for k in series_keys if k in df and k not in unit_keys])
    keys = [k for k in keys if k not in same]
    text = _text_of(df[factor])
    side_a = _side(df[text == str(a)], keys, measure)
    side_b = _side(df[text == str(b)], keys, measure)
    both = side_a.join(side_b, suffixes=("_a", "_b"), how="inner").dropna(subset=["_log_a", "_log_b"])
    if both.empty:
        return []
    both["_d"] = both["_log_a"] - both["_log_b"]
    both["_dse"] = np.hypot(both["_se_a"], both["_se_b"])
    every = [k for k in series_keys if k in df]
    skeys = [k for k in every if k not in same]
    ukeys = [k for k in unit_keys if k in df]
    out: list[Contrast] = []
    flat = both.reset_index()
    flat["_unit"] = joined(flat, ukeys, categorical=True) if ukeys else "0"
    if flat.duplicated(skeys + ["_unit", measure.axis]).any():   # unit keys whose text joins alike
        flat = flat.groupby(skeys + ["_unit", measure.axis], dropna=False, sort=False)[["_d", "_dse"]] \
            .median().reset_index()
    groups = flat.groupby(skeys, dropna=False) if skeys else [((), flat)]
    for key, g in groups:
        key = dict(zip(skeys, key if isinstance(key, tuple) else (key,)))
        key = {k: same[k] if k in same else key[k] for k in every}
        series = Series(key, *_units_by_size(g, measure.axis))
        out.append(Contrast(dict(key), factor, a, b, ukeys, floor, series.noise()[3], [], ratios=series))
    _decide(out, q, onset)
    return out


def _tests(series: Series, centre: np.ndarray, floor: float) -> list[float]:
    se, dof, _, _ = series.noise()
    return list(stats.excess_pvalue(centre, se, dof, floor))


def _decide(contrasts: list[Contrast], q: float, with_onset: bool = True) -> None:
    pvals = stats.excess_pvalues([(c.ratios.center(), *c.ratios.noise()[:2], c.floor) for c in contrasts])
    flags = stats.benjamini_hochberg([p for ps in pvals for p in ps], q)
    pos = 0
    for c, ps in zip(contrasts, pvals):
        s = c.ratios
        y = s.center()
        se, dof, _, _ = s.noise()
        f = flags[pos:pos + len(ps)]
        pos += len(ps)
        c.per_size = [SizeContrast(int(s.sizes[j]), stats.t_interval(float(y[j]), float(se[j]), float(dof[j])),
                                   int(s.k[j]), ps[j], bool(f[j])) for j in range(len(y))]
        c.overall_ratio = stats.unit_mean_interval(s.logs)
        if not f.any():
            lo, hi = 1 / (1 + c.floor), 1 + c.floor
            c.equivalent = bool(np.isfinite(c.overall_ratio.low) and lo <= c.overall_ratio.low
                                and c.overall_ratio.high <= hi)
            continue

        def same_sign(flags: Sequence[bool], centre: np.ndarray) -> list[bool]:
            sign = np.sign(centre[-1])
            return [bool(fl and np.sign(v) == sign) for fl, v in zip(flags, centre)]

        onset = stats.sustained_onset(same_sign(f, y)) if with_onset else None
        if onset is not None:
            c.onset_bytes = int(s.sizes[onset])

            def retest(draw: np.ndarray, c: Contrast = c) -> list[bool]:
                return same_sign(stats.benjamini_hochberg(_tests(c.ratios, draw, c.floor), q), draw)
            c.onset = stats.onset_interval(s, onset, retest)
        peak = int(np.argmax(np.where(f, np.abs(y), -np.inf)))
        i = j = peak
        half = abs(y[peak]) / 2
        while i > 0 and f[i - 1] and np.sign(y[i - 1]) == np.sign(y[peak]) and abs(y[i - 1]) >= half:
            i -= 1
        while j + 1 < len(y) and f[j + 1] and np.sign(y[j + 1]) == np.sign(y[peak]) and abs(y[j + 1]) >= half:
            j += 1
        if not np.isfinite(stats.unit_mean_interval(s.logs[:, i:j + 1]).low):
            # A claim states its ratio with an interval. With one unit a side the sizes above
            # differ only from the kernel's within-run spread, which says nothing of how two
            # runs differ (pages placed anew, another moment of a shared machine): no claim.
            c.per_size = [dataclasses.replace(sc, differs=False) for sc in c.per_size]
            c.onset_bytes, c.onset = None, None
            c.unclaimed = (f"{int(f.sum())} size(s) differ beyond the within-run noise, but with "
                           f"{len(s.replicates)} unit a side the noise between runs is unknown")
            continue
        plateau = plateau_interval(y[i:j + 1], se[i:j + 1], dof[i:j + 1])
        if plateau.low <= 1 <= plateau.high:
            # A claim states the plateau's ratio with its interval: one that holds 1 (a size of
            # the plateau with a degree of freedom or two) claims no difference, whatever the
            # sizes' own tests said.
            c.per_size = [dataclasses.replace(sc, differs=False) for sc in c.per_size]
            c.onset_bytes, c.onset = None, None
            c.unclaimed = (f"{int(f.sum())} size(s) differ beyond the floor and the noise, but the interval of the "
                           f"plateau they make ({plateau.text('{:.2f}')}) holds 1: no difference is claimed")
            continue
        c.plateau_from_bytes, c.plateau_to_bytes = int(s.sizes[i]), int(s.sizes[j])
        c.plateau_ratio = plateau


def plateau_interval(centre: np.ndarray, se: np.ndarray, dof: np.ndarray) -> Interval:
    """The geometric mean of a plateau's per-size ratios with the noise that decided each size:
    their mean log ratio, its standard error the mean of theirs (the sizes' errors taken as one,
    since neighbouring sizes share their units and band: never narrower than the sizes' own), the
    fewest degrees of freedom. A t over the units' own means instead (1 degree of freedom with two
    units) is another computation than the one that decided, and can hold 1 where every size
    differs."""
    return stats.t_interval(float(np.mean(centre)), float(np.mean(se)), float(np.min(dof)),
                            method=f"t interval on the mean log ratio over {len(centre)} sizes, each size's "
                                   "band noise (as decided), their errors taken as one")


def deviations(contrasts: Sequence[Contrast], alpha: float = stats.FDR) -> list[Deviation]:
    """Units off the others at the same size beyond the floor and the noise (`stats.deviations`,
    Holm over every unit and size of every contrast). An inversion: the unit is beyond the floor
    on one side of 1 and the others' median beyond it on the other."""
    found = stats.deviations([c.ratios for c in contrasts], [c.floor for c in contrasts], alpha)
    out = []
    for n, u, j, diff, ref, interval, p in found:
        c = contrasts[n]
        own = diff + ref
        floor = math.log1p(c.floor)
        inversion = abs(own) > floor and abs(ref) > floor and np.sign(own) != np.sign(ref)
        unit = dict(zip(c.unit_keys, str(c.ratios.replicates[u]).split("|")))
        out.append(Deviation(c.series, unit, int(c.ratios.sizes[j]), math.exp(own), math.exp(ref), interval, p,
                             bool(inversion)))
    return out

