"""Markdown pieces every report part writes with: table cells and GitHub-flavoured tables."""

from __future__ import annotations

import pandas as pd


def fmt_number(value: object, digits: int = 2) -> str:
    """A table cell: integers plain, measured floats with `digits` decimals, NaN blank."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def md_table(header: list[str], rows: list[list[object]], right: set[int] | None = None) -> str:
    """A GitHub-flavoured Markdown table; columns in `right` are right-aligned (numbers)."""
    right = right if right is not None else set(range(1, len(header)))
    align = ["---:" if i in right else ":---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(fmt_number(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
