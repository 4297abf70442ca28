"""Sizes and CPU lists, spelled the way users and the kernels spell them.

Sizes follow the kernels' parser (kernels/common): a plain number is MiB (the seeds'
`--size=512`), a suffix K, M or G (optionally KB/KiB, MB/MiB, GB/GiB) is binary, and a range
`A-B` means every power of two from A to B MiB, both ends powers of two.
"""

from __future__ import annotations

import argparse
import re
from typing import Callable

from numasweep.core.errors import NumasweepError

_UNITS = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE_RE = re.compile(r"^(\d+)\s*([KMG]?)(?:I?B)?$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """One size in bytes: `512` (MiB), `64K`, `1M`, `2GiB`."""
    if isinstance(text, int):
        if text <= 0:
            raise NumasweepError(f"size {text} must be positive")
        return text << 20
    m = _SIZE_RE.match(str(text).strip())
    if not m:
        raise NumasweepError(
            f"size '{text}' is not a size: write a number of MiB (512) or one with K, M or G (64K, 1G)"
        )
    value = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if value <= 0:
        raise NumasweepError(f"size '{text}' must be positive")
    return value


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def parse_sizes(text: str | int | list) -> list[int]:
    """A size list in bytes: `1-16384` (powers of two, MiB), `64K,1M`, or a YAML list of either."""
    if isinstance(text, list):
        out: list[int] = []
        for item in text:
            out.extend(parse_sizes(item))
        return out
    if isinstance(text, int):
        return [parse_size(text)]
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if re.match(r"^\d+\s*[KMG]?(?:I?B)?\s*-\s*\d+\s*[KMG]?(?:I?B)?$", part, re.IGNORECASE):
            lo_s, hi_s = (p.strip() for p in part.split("-"))
            lo, hi = parse_size(lo_s), parse_size(hi_s)
            if lo > hi:
                raise NumasweepError(f"size range '{part}' runs backwards: write the smaller end first")
            if not (_is_pow2(lo) and _is_pow2(hi)):
                raise NumasweepError(
                    f"size range '{part}' must have powers of two at both ends (e.g. 1-16384)"
                )
            s = lo
            while s <= hi:
                out.append(s)
                s <<= 1
        else:
            out.append(parse_size(part))
    return out


def format_size(nbytes: int) -> str:
    """Shortest exact binary spelling: 4096 -> '4KiB', 16 MiB -> '16MiB', 3 GiB -> '3GiB'."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return f"{nbytes}B"


def parse_cpulist(text: str | int | list) -> list[int]:
    """Linux cpulist syntax ('0-3,8,10-11'; empty string is empty) to a sorted list."""
    if isinstance(text, int):
        return [text]
    if isinstance(text, list):
        return sorted({c for item in text for c in parse_cpulist(item)})
    text = str(text).strip()
    if not text:
        return []
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        m = re.match(r"^(\d+)(?:-(\d+))?$", part)
        if not m:
            raise NumasweepError(f"'{text}' is not a CPU list: write e.g. 0-15,64-79")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise NumasweepError(f"CPU range '{part}' runs backwards")
        out.update(range(lo, hi + 1))
    return sorted(out)


def format_cpulist(cpus: list[int]) -> str:
    """Sorted CPUs back to the compact cpulist form: [0,1,2,3,8] -> '0-3,8'."""
    cpus = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def parse_page_fractions(text: object) -> dict[int, float]:
    """The kernels' `page_fractions` field, `"0:0.7500,3:0.2500"` -> {0: 0.75, 3: 0.25}.

    Empty or missing (a seed table that never measured placement) -> {}. A malformed field
    raises, naming it: a CSV that says where pages landed must say it readably.
    """
    if not isinstance(text, str) or not text.strip():
        return {}
    out: dict[int, float] = {}
    for part in text.split(","):
        node, sep, frac = part.partition(":")
        try:
            out[int(node)] = float(frac)
        except ValueError:
            raise NumasweepError(
                f"page_fractions '{text}' is not node:fraction pairs; rerun the job that wrote it"
            ) from None
    return out


def size_words(nbytes: float) -> str:
    """A size as a reader reads it, in the largest binary unit it reaches, to at most three
    significant figures, a space before the unit: 32 KiB, 1 MiB, 47.3 MiB, 279936 -> 273 KiB.
    The one spelling of sizes in reports, findings and messages; `format_size` is the exact one
    the kernels and job names take."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 999.5 * (1 << (shift - 10)):      # four figures in the unit below: this one
            return f"{nbytes / (1 << shift):.3g} {unit}"
    return f"{nbytes:.3g} B"


def capacity_words(label: str, nbytes: int | None) -> str:
    """A cache named with its size where it is: "L2 (per core)", 1 MiB -> "L2 (1 MiB per core)"."""
    name, _, where = label.partition(" (")
    if nbytes is None:
        return label
    return f"{name} ({size_words(nbytes)} {where}" if where else f"{name} ({size_words(nbytes)})"


# A size in bytes as tables, findings' numbers and their evidence spell it: a name that ends in
# SIZE_BYTES holds one ("size_bytes", "from_size_bytes"), said in binary units (`size_words`).
SIZE_BYTES = "size_bytes"


# Units of measured values: a time in ns or a rate in bytes per second, each to its base.
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6}
RATE_UNITS = {"MB/s": 1e6, "GB/s": 1e9, "GiB/s": float(1 << 30)}


def metric_unit(column: str) -> str | None:
    """The unit a metric column is measured in, read from its name: `latency_ns_median` ns,
    `best_mb_s` MB/s, `gb_s_median` GB/s, `read_bw(gib/s)` GiB/s; None where the name says none."""
    name = column.lower()
    for unit in ("gib/s", "mb/s", "gb/s"):
        if unit in name or unit.replace("/", "_") in name:
            return next(u for u in RATE_UNITS if u.lower() == unit)
    words = re.split(r"[^a-z]+", name)
    return next((u for u in TIME_UNITS if u in words), None)


def unit_kind(column: str) -> str | None:
    """"time" or "rate": what a column measures, by the unit its name says (`metric_unit`); None
    where the name says neither."""
    unit = metric_unit(column)
    return "time" if unit in TIME_UNITS else "rate" if unit in RATE_UNITS else None


def convert(value: float, unit: str, to: str) -> float:
    """`value` in `unit` expressed in `to`; both of one kind (TIME_UNITS or RATE_UNITS), spelled
    as there (case aside, `µs` for us). A unit of neither kind, or of the other kind, raises
    NumasweepError naming what is allowed."""
    def known(text: str) -> tuple[dict[str, float], str]:
        spelled = str(text).strip().replace("µ", "u").lower()
        for table in (TIME_UNITS, RATE_UNITS):
            for name in table:
                if name.lower() == spelled:
                    return table, name
        raise NumasweepError(f"unit '{text}' is not known: use {', '.join(TIME_UNITS)} for times or "
                             f"{', '.join(RATE_UNITS)} for rates")
    table, name = known(unit)
    target_table, target = known(to)
    if table is not target_table:
        raise NumasweepError(f"unit '{unit}' does not measure what {to} does: use one of {', '.join(target_table)}")
    return value * table[name] / target_table[target]


PAGE_WORDS = {"4k": "4 KiB pages", "thp": "transparent huge pages", "2m": "2 MiB pages", "1g": "1 GiB pages",
              "64k": "64 KiB pages", "2mb": "2 MiB pages", "1gb": "1 GiB pages"}


def page_words(page: object) -> str:
    """A page size as a sentence says it: "4k" -> "4 KiB pages", "thp" -> "transparent huge pages"."""
    text = str(page).strip().lower()
    return PAGE_WORDS.get(text, f"{text} pages" if text else "")




def count_words(n: object, word: str) -> str:
    """A count with its noun: "1 thread", "2 threads", "1 GPU"."""
    text = str(int(n)) if isinstance(n, (int, float)) or str(n).isdigit() else str(n)
    return f"{text} {word}" + ("" if text == "1" else "s")


# The most CPUs a config, an arch file or an option may name: the kernels' own limit
# (kernels/common/ns_topo.h, NS_MAX_CPUS: Linux's NR_CPUS under CONFIG_MAXSMP on x86-64); the
# schemas state it, and the kernels' 256 NUMA nodes, as their maxima.
MAX_CPUS = 8192


def ranged(kind: type, low: float, high: float) -> Callable[[str], float]:
    """An option's type: a number of `kind` from `low` to `high`, anything else (nan, a negative
    count or back-off) refused by argparse with the range."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None
        if not (low <= value <= high):        # nan fails both
            raise argparse.ArgumentTypeError(f"{text} is outside {low:g} to {high:g}")
        return value
    parse.bounds = (low, high)      # read by the test that every numeric option has its range
    return parse
