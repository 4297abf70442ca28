"""Markdown pieces every report part writes with: table cells and GitHub-flavoured tables."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from numasweep.statistics import stats


def fmt_number(value: object, digits: int = 2) -> str:
    """A table cell: integers without decimals, measured floats with `digits` decimals, thousands
    separated; NaN blank."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return str(value)


NUMBER_TEXT = re.compile(r"-?[0-9][0-9,]*(\.[0-9]+)?")


def is_number(value: object) -> bool:
    """A number, or a number already written as text ("2", "1,024")."""
    if isinstance(value, str):
        return bool(NUMBER_TEXT.fullmatch(value.strip()))
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def numeric_columns(rows: list[list[object]]) -> set[int]:
    """The columns whose every filled cell is a number (and that have one)."""
    width = max((len(r) for r in rows), default=0)
    filled = [[r[i] for r in rows if i < len(r) and fmt_number(r[i]) != ""] for i in range(width)]
    return {i for i, cells in enumerate(filled) if cells and all(is_number(v) for v in cells)}


def md_table(header: list[str], rows: list[list[object]], right: set[int] | None = None) -> str:
    """A GitHub-flavoured Markdown table; columns in `right` are right-aligned, by default the
    columns of numbers."""
    right = right if right is not None else numeric_columns(rows)
    align = ["---:" if i in right else ":---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(fmt_number(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_value(value: float, digits: int = 1) -> str:
    """A measured number in words: integers without decimals, thousands separated."""
    if value is None or not np.isfinite(value):
        return ""
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def measured(values, unit: str = "", digits: int = 1) -> tuple[float, str, str]:
    """(estimate, value text, interval text) of a quantity measured once per run: the geometric
    mean over the runs with a 95% t interval over them (`stats.unit_mean_interval`), or "one run:
    no interval"."""
    logs = np.log(np.asarray(values, dtype=float))
    logs = logs[np.isfinite(logs)]
    if not len(logs):
        return float("nan"), "", ""
    iv = stats.unit_mean_interval(logs.reshape(-1, 1))
    tail = f" {unit}" if unit else ""
    if len(logs) < 2:
        return iv.estimate, fmt_value(iv.estimate, digits) + tail, "one run: no interval"
    if not (np.isfinite(iv.low) and np.isfinite(iv.high)):
        return iv.estimate, fmt_value(iv.estimate, digits) + tail, f"{len(logs)} runs: no spread"
    return (iv.estimate, fmt_value(iv.estimate, digits) + tail,
            f"{fmt_value(iv.low, digits)} to {fmt_value(iv.high, digits)}{tail} ({len(logs)} runs)")
