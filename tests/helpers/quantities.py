"""One quantity, one value: the places a rendered report prints the same point, read back from its
Markdown, and every pair of them that disagrees beyond the printed digits.

The points a report prints more than once, and where:
- a bandwidth kernel's value at a thread count, local memory: the summary's headline row, the
  raw table of that kernel (its one local column), the evidence table of its rise or saturation
  finding, and "the best measured" of the theoretical-peak finding; the headline's ratio against
  the values printed beside it;
- a node-to-node copy at a thread count: the headline row and the raw matrix;
- a latency level: the headline row and the raw table of its curve at that size (where the curve
  is one rank's, so that the raw table's row is the same point), and each cache step's evidence
  table against the raw table of its series;
- a host-device rate at the largest size: the headline row and the raw table of its direction.

Two printed numbers agree when they differ by at most half a unit of the coarser one's last digit.
"""

from __future__ import annotations

import re

NUMBER = r"[\d,]+(?:\.\d+)?"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each Markdown table: the title is the bold words of the paragraph
    before it ("**...**"), "" for none."""
    blocks = text.split("\n\n")
    out = []
    for i, block in enumerate(blocks):
        block = block.strip("\n")
        if not block.startswith("| "):
            continue
        lines = block.splitlines()
        before = blocks[i - 1].strip() if i else ""
        found = re.match(r"\*\*(.+?)\*\*", before)
        title = found.group(1).rstrip(".") if found else ""
        out.append((title, _cells(lines[0]), [_cells(line) for line in lines[2:] if line.startswith("| ")]))
    return out


def number(text: str) -> tuple[float, float] | None:
    """(value, half a unit of its last digit) of the first number in `text`."""
    found = re.search(NUMBER, text)
    if not found:
        return None
    digits = found.group(0).replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), 0.5 * 10 ** -decimals


def agree(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return abs(a[0] - b[0]) <= max(a[1], b[1]) + 1e-9


class Ledger:
    """quantity -> [(where, printed value)], and the disagreements among them."""

    def __init__(self) -> None:
        self.said: dict[tuple, list[tuple[str, tuple[float, float]]]] = {}
        self.other: list[str] = []

    def say(self, quantity: tuple, where: str, value: tuple[float, float] | None) -> None:
        if value is not None:
            self.said.setdefault(quantity, []).append((where, value))

    def disagreements(self) -> list[str]:
        out = list(self.other)
        for quantity, places in self.said.items():
            first_where, first = places[0]
            for where, value in places[1:]:
                if not agree(first, value):
                    out.append(f"{quantity}: {first[0]:g} in {first_where}, {value[0]:g} in {where}")
        return out


def _headline(text: str) -> list[list[str]]:
    for title, header, rows in tables(text):
        if header[:2] == ["measured", "value"]:
            return rows
    return []


def _bandwidth(text: str, ledger: Ledger) -> None:
    every = tables(text)
    for row in _headline(text):
        kernel = re.fullmatch(r"(.+), best bandwidth, local memory", row[0])
        if not kernel:
            continue
        kernel = kernel.group(1)
        points = [(int(t), number(v), r) for v, t, r in
                  re.findall(rf"(?:peak )?({NUMBER})(?: GB/s)? at (\d+) threads?(?: \(([\d.]+)x\))?", row[1])]
        for t, v, _ in points:
            ledger.say(("bandwidth", kernel, t), "the headline", v)
        for t, v, r in points[1:]:
            if not r:
                continue
            first = points[0][1]
            from_printed = v[0] / first[0]
            slack = from_printed * (first[1] / first[0] + v[1] / v[0]) + 0.005 + 1e-9
            if abs(float(r) - from_printed) > slack:
                ledger.other.append(f"{kernel}: the headline's ratio {r}x, {from_printed:.3f}x from the values beside it")
    for title, header, rows in every:
        raw = re.fullmatch(r"Best bandwidth \(GB/s, 10\^9 bytes/s; the median over runs\), (.+)", title)
        if raw and "," not in raw.group(1):
            local = [i for i, h in enumerate(header) if h.endswith("(local)")]
            if len(local) == 1:
                for r in rows:
                    ledger.say(("bandwidth", raw.group(1), int(r[0])), f"the raw table of {raw.group(1)}",
                               number(r[local[0]]))
    rises = {}
    for title, header, rows in every:
        found = re.match(r"(?:Rise with threads|Saturation): (?:(\w+) )?bandwidth with threads on node (\d+) and "
                         r"(?:their local memory|memory on node (\d+))", title)
        if found and header[:2] == ["threads", "GB/s"] and found.group(3) in (None, found.group(2)):
            rises.setdefault(found.group(1) or "STREAM", []).append(rows)
    for kernel, found in rises.items():
        if len(found) == 1:
            for r in found[0]:
                ledger.say(("bandwidth", kernel, int(r[0])), f"the finding on {kernel}'s rise", number(r[1]))
    best = re.search(rf"the best measured, ({NUMBER}) GB/s .*?\((\w+), (\d+) threads?, threads on node (\d+), "
                     r"(?:their local memory|memory on node (\d+))\)", text)
    if best and best.group(5) in (None, best.group(4)):
        ledger.say(("bandwidth", best.group(2), int(best.group(3))), "the best measured", number(best.group(1)))


def _copy(text: str, ledger: Ledger) -> None:
    for row in _headline(text):
        found = re.fullmatch(r"node-to-node copy, node (\d+) to node (\d+), (\d+) threads?, each byte copied counted once",
                             row[0])
        if found:
            ledger.say(("copy", *map(int, found.groups())), "the headline", number(row[1]))
    cells: dict[tuple, list] = {}
    for title, header, rows in tables(text):
        found = re.fullmatch(r"Copy bandwidth \(GB/s; the median over runs\), threads on node \d+, (\d+) threads?, .+",
                             title)
        if not found:
            continue
        for r in rows:
            for dst, cell in zip(header[1:], r[1:]):
                if cell:
                    cells.setdefault((int(r[0]), int(dst), int(found.group(1))), []).append(number(cell))
    for (src, dst, threads), values in cells.items():
        if len(values) == 1:
            ledger.say(("copy", src, dst, threads), "the raw copy matrix", values[0])


def _parts(words: str) -> frozenset[str]:
    return frozenset(p.strip() for p in words.split(","))


def _latency(text: str, ledger: Ledger) -> None:
    every = tables(text)
    raw = {}
    for title, header, rows in every:
        found = re.fullmatch(r"Latency \(ns per load; the median over runs\), (.+)", title)
        if found and len(rows) == 1 and header[:4] == ["rank", "CPU", "CPU node", "memory node"]:
            raw[_parts(found.group(1))] = dict(zip(header[4:], rows[0][4:]))
    one_rank = {k: v for k, v in raw.items() if "1 rank" in k}
    for row in _headline(text):
        found = re.fullmatch(r"(.+?) latency, (?:local memory, )?at (\d+(?:\.\d+)? [KMGT]iB)(?: \(its plateau from [^)]*\))?"
                             r"(?:, ([^:]+?))?(?:: .*)?", row[0])
        if not found or not row[1].endswith(" ns"):
            continue
        pages = found.group(3)
        mine = [k for k in one_rank if pages is None or pages in k]
        if len(mine) == 1 and found.group(2) in one_rank[mine[0]]:
            ledger.say(("latency", mine[0], found.group(2)), "the headline", number(row[1]))
            ledger.say(("latency", mine[0], found.group(2)), "the raw table", number(one_rank[mine[0]][found.group(2)]))
    for title, header, rows in every:
        found = re.fullmatch(r"Latency step .+? \((.+)\)", title)
        if not found or header != ["size", "latency (ns)"] or _parts(found.group(1)) not in one_rank:
            continue
        key = _parts(found.group(1))
        for size, value in rows:
            if size in one_rank[key]:
                ledger.say(("latency", key, size), f"the step '{title}'", number(value))
                ledger.say(("latency", key, size), "the raw table", number(one_rank[key][size]))


def _gpu(text: str, ledger: Ledger) -> None:
    for row in _headline(text):
        found = re.fullmatch(r"GPU copies (host to device|device to host), (pinned|pageable) host memory, GPU (\d+) "
                             r"\(GiB/s, 2\^30 bytes/s\)", row[0])
        at = re.match(rf"({NUMBER}) GiB/s at (\d+(?:\.\d+)? [KMGT]iB)", row[1])
        if found and at:
            ledger.say(("gpu", *found.groups(), at.group(2)), "the headline", number(at.group(1)))
    for title, header, rows in tables(text):
        found = re.fullmatch(r"Bandwidth \(GiB/s\) (host to device|device to host), (pinned|pageable) host memory", title)
        if not found or header[0] != "size":
            continue
        columns = [(i, re.search(r"GPU (\d+)$", h)) for i, h in enumerate(header)]
        mine = [(i, m.group(1)) for i, m in columns if m]
        if len({g for _, g in mine}) != len(mine):
            continue                      # two columns of one GPU (two policies): not one point
        for r in rows:
            for i, gpu in mine:
                ledger.say(("gpu", found.group(1), found.group(2), gpu, r[0]), "the raw table", number(r[i]))


def disagreements(text: str) -> list[str]:
    """Every quantity the report prints with two values, and every headline ratio that is not the
    quotient of the values printed beside it, one line each."""
    ledger = Ledger()
    _bandwidth(text, ledger)
    _copy(text, ledger)
    _latency(text, ledger)
    _gpu(text, ledger)
    return ledger.disagreements()


def compared(text: str) -> int:
    """How many quantities the report prints in two places or more (what the check covers)."""
    ledger = Ledger()
    _bandwidth(text, ledger)
    _copy(text, ledger)
    _latency(text, ledger)
    _gpu(text, ledger)
    return sum(len(places) > 1 for places in ledger.said.values())
