"""Series identity: which rows of an aggregated table are the same measurement.

Two rows belong to the same series when they agree on every column of their benchmark's
`Bench.identity` that the table has; they are repetitions of one point when they also agree on
its `axis` (the x-axis: buffer size, thread count, transfer size) and differ only in `REPETITION`. Every table,
figure, finding and report section takes its medians over repetitions with `point_table` and
splits a table into figures or tables with `configurations`: nothing groups rows by a
hand-picked subset of these columns, so two different programs never share a median, a line
or a finding.

A benchmark's `within` columns are the series columns that tell lines of one figure or rows of one table
apart (the rank of a latency run, the node pair of a bandwidth run); the other series columns
name the configuration, and those that vary in a table split it into its variants
(`concurrent, 2 ranks, 1 per domain, interleaved`).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from numasweep.core import registry
from numasweep.core.units import count_words, page_words, size_words
from numasweep.running import verdict

REPETITION = "repetition"

# The launch's identity columns read as numbers, whichever benchmark it is; a benchmark adds its
# own (`Tables.numeric`). Every other identity column is compared as text.
NUMERIC = {"ranks", "ranks_per_domain", "rank", "cpu", "cpu_node", "l3_group", "threads"}


def label(value: object) -> str:
    """A label from a value pandas may have read as float: 0.0 -> "0", NaN -> ""."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# The launch's columns whose bare number says nothing of what it numbers: the word put before it
# ("CPU 3"), or after "#" the noun a count is of ("2 threads"); a benchmark adds its own
# (`Tables.words`).
WORDS = {"rank": "rank", "cpu": "CPU", "cpu_node": "CPU node", "l3_group": "L3 group", "ranks": "#rank",
         "threads": "#thread"}
# The placement strategies in words (config/README.md, `strategy`).
STRATEGY_WORDS = {"sequential": "cores in order", "interleaved": "one core per L3 group in turn"}


def numeric(bench: str) -> set[str]:
    """The identity columns of `bench` read as numbers: the launch's and its own."""
    return NUMERIC | set(registry.get(bench).tables.numeric)


def sizes() -> set[str]:
    """The columns any benchmark holds a size in bytes in (`Tables.sizes`)."""
    return {c for b in registry.all_benches().values() for c in b.tables.sizes}


def value_name(column: str, value: object) -> str:
    """A configuration value as a name says it, where the bare value would not tell what it
    counts ("1-1 rank": one rank per domain, one rank): "2 ranks", "1 per domain", "nodes 0,1",
    "CPU 3", "4 KiB pages", "1 GiB", a placement strategy in words ("cores in order"); a text
    value (a mode, a kernel) as it is, any other number after its column's words."""
    text = label(value)
    if not text:
        return text
    if column == "domains":
        return f"{'node' if text.isdigit() else 'nodes'} {text}"
    if column == "strategy":
        return STRATEGY_WORDS.get(text, text)
    words = {**WORDS, **{c: w for b in registry.all_benches().values() for c, w in b.tables.words.items()}}
    counted = words.get(column, "").startswith("#")
    if counted and text.isdigit():
        return count_words(text, words[column][1:])
    if column == "ranks_per_domain":
        return f"{text} per domain"
    if column in ("page_size", "pages"):
        return page_words(text)
    if column in words and not counted:
        return f"{words[column]} {text}"
    if column in sizes() and text.isdigit():
        return size_words(int(text))
    if re.fullmatch(r"-?[0-9.]+", text):
        return f"{column.replace('_', ' ')} {text}"
    return text


def config_name(values: dict, columns: list[str]) -> str:
    """A series' configuration in words, its columns in `columns` order but the rank count first
    and the ranks per domain after it, left out where one rank says it, and the sweep's `pages`
    left to the kernel's `page_size`: "1 rank", "2 ranks, 2 per domain", "nodes 0,1"."""
    named = [c for c in columns if c in values and label(values[c]) != ""]
    if "ranks" in named and "ranks_per_domain" in named:
        named.remove("ranks_per_domain")
        named.insert(named.index("ranks") + 1, "ranks_per_domain")
        if label(values["ranks"]).split()[0] == "1":     # 1 or "1 rank"
            named.remove("ranks_per_domain")
    if "pages" in named and "page_size" in named:
        named.remove("pages")
    return ", ".join(value_name(c, values[c]) for c in named)


def series_columns(df: pd.DataFrame, bench: str) -> list[str]:
    """The series identity columns `df` has, in `Bench.identity` order."""
    return [c for c in registry.get(bench).identity if c in df.columns]


def point_columns(df: pd.DataFrame, bench: str) -> list[str]:
    """Series columns plus the axis: the rows that agree on these are repetitions of one point."""
    axis = registry.get(bench).tables.axis
    return series_columns(df, bench) + ([axis] if axis and axis in df.columns else [])


def normalise(df: pd.DataFrame, bench: str) -> pd.DataFrame:
    """A copy whose identity columns compare exactly: numbers as numbers (-1 when absent), the
    others as text ("" when absent), so that grouping never drops or splits a row on NaN. The
    text columns are categorical, their categories in text order: a grouping takes the codes as
    they are, where text would be hashed row by row (a million rows group in a third of the
    time, in a fraction of the memory), in the same order as the text."""
    # A shallow copy: pandas copies a column only when it is written (copy on write), so the
    # other columns of a large table are not copied.
    df = df.copy(deep=False)
    numbers = numeric(bench)
    for col in point_columns(df, bench):
        if col in numbers:
            if df[col].dtype != "int64":        # one of int64 holds no NaN: shared, not copied
                df[col] = pd.to_numeric(df[col], errors="coerce").fillna(-1).astype("int64")
        else:
            df[col] = text_codes(df[col])
    return df


def per_value(values: pd.Series, fn: Callable[[Any], Any], dtype: Any = object) -> np.ndarray:
    """`fn` of every value, called once per distinct value (NaN and None included): a table of a
    million rows has a few hundred distinct identities."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return np.array([fn(u) for u in uniques], dtype=dtype)[codes]


def labels(values: pd.Series) -> pd.Series:
    """`label` of every value, computed once per distinct value."""
    return pd.Series(per_value(values, label), index=values.index, dtype=object)


def text_codes(values: pd.Series, fn: Callable[[Any], str] = label) -> pd.Series:
    """`fn` of every value (`label` by default) as a categorical column, computed once per
    distinct value: one category per distinct text, in text order."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return _categorical([fn(u) for u in uniques], codes, values.index, values.name)


def row_codes(frame: pd.DataFrame, fn: Callable[..., str]) -> pd.Series:
    """`fn(*row)` of every row of `frame` as a categorical column, computed once per distinct
    row (a million rows of a few hundred identities)."""
    ids = frame.groupby(list(frame.columns), sort=False, dropna=False, observed=True).ngroup().to_numpy()
    _, first = np.unique(ids, return_index=True)           # ids count up from 0 in order of first rows
    return _categorical([fn(*row) for row in frame.iloc[first].itertuples(index=False)], ids, frame.index)


def _categorical(names: list[str], codes: np.ndarray, index: pd.Index, name: Any = None) -> pd.Series:
    """Row i holds names[codes[i]]: one category per distinct name, in text order, so codes sort
    as the text does."""
    cats, inverse = np.unique(np.array(names, dtype=object), return_inverse=True)
    return pd.Series(pd.Categorical.from_codes(inverse[codes], categories=cats), index=index, name=name)


def constant_keys(df: pd.DataFrame, keys: Sequence[str]) -> dict[str, Any]:
    """The keys with one value in the whole table (a campaign's label, memory, policy...) and
    that value: a grouping leaves them out and gives the value to every group. pandas builds an
    array of group codes per key, each as long as the table when its rows are single
    measurements (a million rows: 8 MB a key, a dozen keys, and as many again to join two sides).
    The last key (a point's axis, where there is one) is never among them, so a grouping always
    has one."""
    one = {k: df[k].iloc[0] for k in keys[:-1] if len(df) and df[k].nunique(dropna=False) == 1}
    return {k: v.item() if isinstance(v, np.generic) else v for k, v in one.items()}   # as a grouping's


def with_constants(out: pd.DataFrame, df: pd.DataFrame, same: dict[str, Any], order: list[str]) -> pd.DataFrame:
    """A grouping's result with the `constant_keys` it left out put back: each column of `df` in
    `same` as its one value in every row, in the column's type, the columns in `order` first."""
    rows = np.zeros(len(out), dtype=np.int64)
    for k in same:
        values = df[k]
        out[k] = pd.Categorical.from_codes(np.full(len(out), values.cat.codes.iloc[0]), dtype=values.dtype) \
            if isinstance(values.dtype, pd.CategoricalDtype) else values.take(rows).to_numpy()
    return out[[c for c in order if c in out] + [c for c in out.columns if c not in order]]


def text_again(df: pd.DataFrame, dtype: Any = object) -> None:
    """The categorical columns of a small table (a grouping's result) back to `dtype`, in place:
    its rows go on to code that compares and joins text."""
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype(dtype)


def point_table(df: pd.DataFrame, bench: str, values: list[str], first: tuple[str, ...] = (),
                spread: bool = False, keep: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per point (series and axis value): the median of `values` over repetitions, and
    the first value of each column in `first` (e.g. page placement) that the table has;
    `spread`: also each value's lowest and highest over the repetitions (`<value>_lo`, `_hi`),
    for a figure's band; `keep`: columns that part the points further (e.g. `repetition`: one row
    per run, no median over them)."""
    keys = point_columns(df, bench)
    keys += [k for k in keep if k in df.columns and k not in keys]
    values = [v for v in values if v in df.columns]
    # only the columns it groups and takes: the others of a large table are not normalised
    df = normalise(df[list(dict.fromkeys(keys + values + [c for c in first if c in df.columns]))], bench).assign(
        **({} if verdict.COLUMN not in df else {"_worst": _verdict_rank(df[verdict.COLUMN])}))
    same = constant_keys(df, keys)
    grouped = df.groupby([k for k in keys if k not in same], sort=True, dropna=False)
    out = with_constants(grouped[values].median().reset_index(), df, same, keys + values)
    text_again(out)
    if spread:          # the same groups in the same order as the medians
        for v in values:
            out[f"{v}_lo"], out[f"{v}_hi"] = grouped[v].min().to_numpy(), grouped[v].max().to_numpy()
    for col in first:
        if col in df.columns and col not in keys:
            out[col] = grouped[col].first().to_numpy()
    if "_worst" in df:  # a point's quality: the worst verdict of its runs (a figure marks it)
        out[verdict.COLUMN] = [verdict.VERDICTS[int(v)] for v in grouped["_worst"].max().to_numpy()]
    return out


def _verdict_rank(verdicts: pd.Series) -> np.ndarray:
    """Each row's verdict as its place in `verdict.VERDICTS` (quiet, noisy, disturbed; quiet where
    none was recorded)."""
    rank = {word: i for i, word in enumerate(verdict.VERDICTS)}
    return verdicts.astype(object).map(rank).fillna(0).to_numpy(dtype=np.int64)


def config_columns(df: pd.DataFrame, bench: str, without: tuple[str, ...] = ()) -> list[str]:
    """The series columns that name a figure or table and vary in `df` (less `without`); the
    sweep's `pages` is left to the kernel's `page_size` where the table has both."""
    same = ("pages",) if "page_size" in df.columns else ()
    return [c for c in series_columns(df, bench)
            if c not in registry.get(bench).tables.within and c not in without + same and df[c].astype(str).nunique() > 1]


def configurations(df: pd.DataFrame, bench: str, first: str | None = None,
                   without: tuple[str, ...] = ()) -> list[tuple[str, pd.DataFrame]]:
    """(variant name, rows) per configuration: one figure or table each. `first` (e.g. `mode`)
    always leads the name, even when it does not vary; `without` are compared inside one."""
    cols = config_columns(df, bench, without)
    if first and first in df.columns:
        cols = [first] + [c for c in cols if c != first]
    if not cols:
        return [("all", df)] if len(df) else []
    out = []
    for key, part in df.groupby(cols, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        out.append((config_name(dict(zip(cols, key)), cols) or "all", part))
    return out


def curve_id(df: pd.DataFrame, bench: str) -> pd.Series:
    """One string per row naming its series (for analyses that need a single key column)."""
    cols = series_columns(df, bench)
    if not cols:
        return pd.Series(["all"] * len(df), index=df.index)
    return joined(df, cols)


def joined(df: pd.DataFrame, cols: list[str], categorical: bool = False) -> pd.Series:
    """Each row's values of `cols` as text, joined by "|": one string naming what the row belongs
    to, built column by column (a million rows join in a second, not a minute); `categorical`:
    as a categorical column, each distinct row joined once (`row_codes`)."""
    if categorical:
        return row_codes(df[cols], lambda *values: "|".join(map(str, values)))
    text = df[cols].astype(str)
    out = text.iloc[:, 0].rename(None)
    for i in range(1, len(cols)):
        out = out + "|" + text.iloc[:, i]
    return out
