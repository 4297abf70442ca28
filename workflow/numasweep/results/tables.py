"""Table shaping, in one place for analysis, figures and the report: the aggregated tables
(docs/INTERFACES.md) turned into one row per point of a series (medians over repetitions,
`numasweep.results.series`), split into the configurations that get a figure, a table or a finding
each, and into the lines of one figure or the rows of one table, with the labels that name them.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from numasweep.results import series
from numasweep.core.units import parse_page_fractions


# ---------------------------------------------------------------------------------------------
# Cells


def nodes(value: Any) -> tuple[int, ...]:
    """'0,3', 3, 3.0 or NaN as a tuple of node ids."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, (int, np.integer, float, np.floating)):
        return (int(value),)
    text = str(value).strip()
    return tuple(int(float(x)) for x in text.split(",") if x.strip()) if text else ()


def _text(value: Any) -> str:
    return "" if pd.isna(value) else re.sub(r"\.0$", "", str(value))


def as_text(values: pd.Series, categorical: bool = False) -> pd.Series:
    """Text cells to group by: NaN -> "", a trailing ".0" dropped (3.0 -> "3"); computed once per
    distinct value; `categorical`: as a categorical column (`series.text_codes`)."""
    if categorical:
        return series.text_codes(values, _text)
    return pd.Series(series.per_value(values, _text), index=values.index, name=values.name, dtype=str)


def _node_list(value: Any) -> str:
    return ",".join(map(str, nodes(value)))


def node_lists(values: pd.Series, categorical: bool = False) -> pd.Series:
    """`nodes` of each cell as a comma list ("0,3", "" for none), once per distinct value;
    `categorical`: as a categorical column (`series.text_codes`)."""
    if categorical:
        return series.text_codes(values, _node_list)
    return pd.Series(series.per_value(values, _node_list), index=values.index, dtype=str)


def locality(cpu_node: int, mem_nodes: str, unplaced: str | None = "local") -> str:
    """"local" where a rank's memory is its own CPU node's, else "<cpu node>-><memory nodes>":
    remote ranks are comparable only with ranks of the same CPU node reaching the same memory.
    Memory of no recorded node reads `unplaced` (None: as a remote node list, "0->")."""
    if mem_nodes == "" and unplaced is not None:
        return unplaced
    return "local" if mem_nodes == str(cpu_node) else f"{cpu_node}->{mem_nodes}"


def as_label(values: pd.Series) -> pd.Series:
    """Text labels from a column pandas may have read as float: 0.0 -> "0", NaN -> ""."""
    return series.labels(values)


def memory_node(page_fractions: object, mem_nodes: object = None) -> int | None:
    """The node holding the buffer: the one with at least 90% of its pages, else the single
    node asked for, else None (spread over nodes)."""
    fractions = parse_page_fractions(page_fractions)
    if fractions:
        node, frac = max(fractions.items(), key=lambda kv: kv[1])
        if frac >= 0.9:
            return node
        return None
    text = str(mem_nodes).strip() if mem_nodes is not None else ""
    if re.fullmatch(r"\d+", text):
        return int(text)
    if re.fullmatch(r"\d+\.0", text):
        return int(float(text))
    return None


def with_memory_node(df: pd.DataFrame, fractions_col: str = "page_fractions") -> pd.DataFrame:
    """A copy with a `memory_node` column (nullable int) derived from page placement."""
    df = df.copy()
    fractions = df[fractions_col] if fractions_col in df else pd.Series([None] * len(df), index=df.index)
    asked = df["mem_nodes"] if "mem_nodes" in df else pd.Series([None] * len(df), index=df.index)
    # Parsed once per distinct (placement, nodes asked): a large table repeats a few of them.
    # (A NaN never equals itself, so its pairs miss the cache and are parsed each time.)
    nodes: dict = {}
    found = []
    for pair in zip(fractions, asked):
        node = nodes.get(pair, ...)
        if node is ...:
            node = nodes[pair] = memory_node(*pair)
        found.append(node)
    df["memory_node"] = pd.array(found, dtype="Int64")
    return df


def rank_label(n: object) -> str:
    n = int(n)
    return "" if n < 0 else (f"{n} rank" if n == 1 else f"{n} ranks")
