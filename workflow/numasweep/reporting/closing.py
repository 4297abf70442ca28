"""The block a run that wrote the report ends with on the console (the workflow's `onsuccess`):
the report's path, the first three rows of its headline table, and what it did not conclude with
how to measure it again. Read from the report itself, so the console says what the report says,
with the same numbers; standard library only (the workflow imports it at every start)."""

from __future__ import annotations

import re
from pathlib import Path

WIDTH = 159          # a console line stays under 160 characters
HEADLINE_ROWS = 3
BANNER = "> **Measured while disturbed: not concluded.**"
REFUSED = "> **Refused by the claims audit.**"


def _cells(row: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def _plain(text: str) -> str:
    """A cell's Markdown as text: no emphasis, code or escapes."""
    text = re.sub(r"\*\*|`", "", text)
    text = re.sub(r"\\([\\*_\[\]|<>&])", r"\1", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3].rstrip(" ,;:") + "..."


def headline(text: str) -> list[str]:
    """Three rows of the headline table, each "what: value; interval", what cut at its first
    qualifier after the quantity (", at", ":"): memory's latency and bandwidth first."""
    summary = text.split("\n## Summary", 1)[-1]
    rows = [line for line in summary.split("\n## ", 1)[0].splitlines() if line.startswith("| ")]
    out = []
    for row in rows[2:]:       # after the header and its separator
        cells = [_plain(c) for c in _cells(row)]
        if len(cells) < 3 or cells[1] == "unknown":
            continue
        what = re.split(r", at |: ", cells[0])[0]
        out.append(f"{what}: {cells[1]}; {cells[2]}")
    # memory's latency and its rates first, as a reader of a NUMA machine wants them, then the rest
    first = [r for r in out if r.startswith("DRAM")] + [r for r in out if " GB/s" in r.split("; ")[0]]
    return (first + [r for r in out if r not in first])[:HEADLINE_ROWS]


def _items(text: str, banner: str) -> list[str]:
    if banner not in text:
        return []
    block = text.split(banner, 1)[1].split("\n\n", 1)[0]
    return [_plain(m) for m in re.findall(r"^> - (.+)$", block, re.M)]


def not_concluded(text: str) -> list[str]:
    """The disturbed banner's items: the series the report concluded nothing from."""
    return _items(text, BANNER)


def refused(report: Path) -> str | None:
    """The line a run ends with, failed, where the report shows findings the claims audit refused
    (its first banner, `reporting.report.refuse`); None where it shows none."""
    try:
        found = _items(report.read_text(errors="replace"), REFUSED)
    except OSError:
        return None
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (f"numasweep: the claims audit refused {found[0]}{more}: {report} shows it as refused in its first "
            f"lines, with the findings.json and log to keep or analyse again (snakemake --forcerun analyse)")


def lines(report: Path, results: str) -> list[str]:
    """The closing block of a run that wrote `report` (its experimentation.md) from `results`."""
    try:
        text = report.read_text(errors="replace")
    except OSError:
        return []
    html = report.with_suffix(".html")
    out = [f"numasweep: report: {report}" + (f" (and {html.name})" if html.exists() else "")]
    out += [_short(f"numasweep:   {row}", WIDTH) for row in headline(text)]
    left = not_concluded(text)
    if left:
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        out.append(_short(f"numasweep: not concluded, measured while disturbed{more}: {left[0]}", WIDTH))
        out.append(f"numasweep: to measure them again, delete their CSVs under {results}/<bench>/ (named in the "
                   "report's first lines) and rerun snakemake")
    else:
        out.append("numasweep: every series concluded: none was measured while disturbed")
    return out
