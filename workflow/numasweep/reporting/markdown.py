"""Markdown pieces every report part writes with: table cells, GitHub-flavoured tables, the
escaping that keeps text from configs, results, topology, references and sysfs text, and the
blank line before a list that Python-Markdown needs and GitHub does not (`separate_lists`).

Text enters the report's Markdown through `md_text` (or a table cell, or a template's `{{ }}`,
which use it), so a `<script>`, an `onerror=` or a `[link](javascript:...)` in a host name, a
series label or a reference's name reads as those characters in the Markdown and in the HTML
page, never as markup. Markdown the project writes itself (a table, a section, a lead with its
`code`) is an `Md`, which passes through unescaped.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import numpy as np
import pandas as pd

from numasweep.core.units import count_words
from numasweep.statistics import stats


class Md(str):
    """Markdown the project wrote: markup, passed through as it is, never escaped again."""


# What makes markup in the Markdown the report is read with (Python-Markdown with tables, and
# GitHub's): backslash, emphasis, link and image brackets, table cells; an underscore only at a
# word's edge (one inside a word, as in `numa_local`, is no emphasis and reads better bare); `<`,
# `>` and `&` as entities, so no HTML is written and no entity read. A comparison (`< 2`, `>= 256
# MiB`, a space before it and a space or `=` after) and an `&` that starts no entity stay bare:
# they open nothing in either reader, and the .md is read as text too. A code span stays as it
# is: what it holds is text to both readers, and the findings' sentences quote commands in them.
MARKUP = re.compile(r"(?P<code>(`+).+?(?<!`)\2(?!`))|[\\*\[\]|]|(?<!\w)_|_(?!\w)"
                    r"|&(?=#?\w+;)|(?<!\s)[<>]|[<>](?![\s=])")
ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _escaped(m: re.Match) -> str:
    found = m.group(0)
    return found if m.group("code") else ENTITIES.get(found, "\\" + found)


def md_text(value: object) -> Md:
    """`value` as text in Markdown: what could be markup escaped, on one line."""
    if isinstance(value, Md):
        return value
    return Md(MARKUP.sub(_escaped, " ".join(str(value).splitlines())))


# A line's blockquote markers, and a list's first line as both readers take one (an ordered list
# interrupts a paragraph only from 1 on GitHub); a code fence.
QUOTED = re.compile(r"((?: {0,3}>)*) ?(.*)")
LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|1[.)]) +\S")
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def separate_lists(text: str) -> str:
    """`text` with a blank line (quoted in a blockquote) between a paragraph and a list that starts
    on the line after it. GitHub starts the list there; Python-Markdown needs the blank line, or
    it reads the items as more of the paragraph's text (one run-on paragraph in the HTML page)."""
    out: list[str] = []
    fence, depth, block = "", -1, ""            # block: "text", "list" or "" (after a blank line)
    for line in text.split("\n"):
        quote, body = QUOTED.fullmatch(line).groups()
        if fence:                                   # a code block's lines are its text, to its closing fence
            fence = "" if re.fullmatch(f"{fence[0]}{{{len(fence)},}}", body.strip()) else fence
            out.append(line)
            continue
        if (m := FENCE.match(body)):
            fence, block = m.group(1), ""
        elif not body.strip():
            block = ""
        elif LIST_ITEM.match(body):
            if block == "text" and quote.count(">") == depth:
                out.append(quote.replace(" ", ""))
            block = "list"
        elif block != "list" or quote.count(">") != depth:   # a list's own lines go on to its blank line
            block = "text"
        depth = quote.count(">")
        out.append(line)
    return "\n".join(out)


def md_code(value: object) -> Md:
    """`value` as an inline code span, fenced by more backticks than it holds in a row."""
    text = " ".join(str(value).splitlines())
    ticks = "`" * (max((len(t) for t in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Md(f"{ticks}{pad}{text}{pad}{ticks}")


def md_block(lines: list[str], language: str = "") -> Md:
    """Lines as a fenced code block, fenced by more backticks than any line holds in a row."""
    ticks = "`" * max(3, max((len(t) for line in lines for t in re.findall("`+", line)), default=0) + 1)
    return Md("\n".join([ticks + language, *lines, ticks]))


def md_url(path: str) -> Md:
    """A relative path as a link or image target: percent-encoded, so no character ends it."""
    return Md(quote(path))


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


def md_table(header: list[str], rows: list[list[object]], right: set[int] | None = None) -> Md:
    """A GitHub-flavoured Markdown table; columns in `right` are right-aligned, by default the
    columns of numbers. Cells are text (`md_text`), an `Md` cell markup."""
    right = right if right is not None else numeric_columns(rows)
    align = ["---:" if i in right else ":---" for i in range(len(header))]
    lines = ["| " + " | ".join(md_text(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(v if isinstance(v, Md) else md_text(fmt_number(v)) for v in row) + " |" for row in rows]
    return Md("\n".join(lines))


def fmt_value(value: float, digits: int = 1) -> str:
    """A measured number in words: integers without decimals, thousands separated."""
    if value is None or not np.isfinite(value):
        return ""
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def measured(values, unit: str = "", digits: int = 1, units: str | None = None) -> tuple[float, str, str]:
    """(estimate, value text, interval text) of a quantity measured once per run: the median over
    the runs with the model's 95% interval on it (`stats.center_interval`), as the analysis and
    every table take a point's value; `units`: what the values are in words ("3 runs", "8 ranks"),
    by default their count as runs."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        return float("nan"), "", ""
    iv = stats.center_interval(values)
    return (iv.estimate, *interval_cells(iv, unit, units or count_words(len(values), "run"), digits))


def interval_cells(iv: stats.Interval, unit: str, units: str, digits: int = 1) -> tuple[str, str]:
    """(value text, interval text) of an estimate: "16.4 ns", "14.7 to 18.2 ns (3 runs)"; "one
    run: no interval" or "3 runs: no spread" where it has none."""
    tail = f" {unit}" if unit else ""
    value = fmt_value(iv.estimate, digits) + tail
    if units.startswith("1 ") and units.count(" ") == 1:
        return value, f"one {units.split()[1]}: no interval"
    if not (np.isfinite(iv.low) and np.isfinite(iv.high)):
        return value, f"{units}: no spread"
    return value, f"{fmt_value(iv.low, digits)} to {fmt_value(iv.high, digits)}{tail} ({units})"


def ratio_cells(ratio: stats.Interval) -> str:
    """The interval column of a headline ratio: "1.12x to 1.19x", or why there is none."""
    if not (np.isfinite(ratio.low) and np.isfinite(ratio.high)):
        return "no interval: a value beside it has none"
    return f"{ratio.low:.2f}x to {ratio.high:.2f}x"
