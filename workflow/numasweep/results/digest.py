"""Findings alike across hosts, said once: a fleet's report in about the length of one node's.

A fleet campaign (`numasweep.planning.fleet`) runs one sweep on every node, and the host is part of a
series' identity, so `analyse` states each finding once per node: on 1,000 nodes the report held
138,000 lines and its summary named eight findings of the first node. `findings.json` keeps every
node's finding; the report says a finding that differs between hosts only in the host's name
once, as "on N of M hosts", with

- the host at the median of its first interval (for a cache step, the step ratio) and that host's
  own sentence, so the claim is read as on one node;
- for each interval the finding carries (at most `FIELDS`), the lowest and the highest estimate
  over the hosts, each with its host and its own 95 % interval: the spread of a claim over a
  fleet is never a bare range;
- the hosts it was not found on, when they are few (the title says on how many of the hosts it
  was), and a table of the hosts at both ends.

A finding seen on one host only (a slowed node's anomaly) keeps its own text. Which host a
finding speaks of is read from its title, where the host stands as a word of the series' name
(`analysis._where`, the bandwidth and MLC names), so every kind of finding is merged the same
way without each producer naming its host apart.
"""

from __future__ import annotations

import math
import re
from typing import Any

from numasweep.core.units import size_words

HOST_ROWS = 8       # up to this many hosts, the report's tables keep a row per host
FIELDS = 3          # intervals said per merged finding
ENDS = 5            # hosts shown at each end of a merged finding's table (11 rows in all)
FEW_MISSING = 8     # the hosts a finding was not found on are named when they are this few


def host_words(hosts: list[str]) -> re.Pattern | None:
    """A host as a word of a title or a launch line, where job ids join it with dashes
    (`...-on-nid001.csv`): not inside a longer run of letters and digits (nid0010 is not nid001).
    None for fewer than two hosts."""
    names = sorted({str(h) for h in hosts if str(h)}, key=len, reverse=True)
    return _words(names) if len(names) >= 2 else None


def _words(names: list[str]) -> re.Pattern:
    return re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9])")


def _generic(title: str, host: str) -> str:
    """The title without its host: "(concurrent, 4k, nid001)" -> "(concurrent, 4k)"."""
    out = _words([host]).sub("", title)
    out = re.sub(r"\(\s*,\s*", "(", out)
    out = re.sub(r",\s*(,|\))", r"\1", out)
    return re.sub(r"\s*\(\s*\)", "", out).strip()


def _intervals(numbers: dict) -> list[str]:
    """The names of the intervals a finding's numbers carry (`analysis._iv`), in their order."""
    return [k for k, v in numbers.items()
            if f"{k}_low" in numbers and f"{k}_high" in numbers and _finite(v)]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _fmt(name: str, value: float) -> str:
    if name.endswith("_bytes"):
        return size_words(value)
    if "ratio" in name:
        return f"{value:.2f}x"
    # three significant digits, never in exponent form: 33,780 rather than 3.38e+04
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _label(name: str) -> str:
    return name.removesuffix("_bytes").replace("_", " ")


def _with_interval(name: str, numbers: dict) -> str:
    low, high = numbers.get(f"{name}_low"), numbers.get(f"{name}_high")
    if _finite(low) and _finite(high):
        return f"95 % interval {_fmt(name, low)} to {_fmt(name, high)}"
    return "no interval"


def _spread(name: str, members: list[tuple[str, dict]]) -> str | None:
    """"step ratio from 1.95x (nid003, 95 % interval ...) to 2.01x (nid777, ...)" over the hosts."""
    have = sorted(((n[name], h, n) for h, n in members if _finite(n.get(name))), key=lambda t: t[0])
    if not have:
        return None
    (lo, lo_host, lo_n), (hi, hi_host, hi_n) = have[0], have[-1]
    if lo == hi:
        return f"{_label(name)} {_fmt(name, lo)} on every host ({_with_interval(name, lo_n)} on {lo_host})"
    return (f"{_label(name)} from {_fmt(name, lo)} ({lo_host}, {_with_interval(name, lo_n)}) "
            f"to {_fmt(name, hi)} ({hi_host}, {_with_interval(name, hi_n)})")


def _merged(members: list[tuple[str, dict]], title: str, hosts: list[str]) -> dict:
    first = members[0][1]
    fields = _intervals(first.get("numbers") or {})[:FIELDS]
    key = fields[0] if fields else None
    ordered = sorted(members, key=lambda m: (m[1]["numbers"].get(key) if key and _finite(m[1]["numbers"].get(key))
                                             else math.inf))
    mid_host, mid = ordered[(len(ordered) - 1) // 2]
    found = {h for h, _ in members}
    missing = [h for h in hosts if h not in found]
    where = f"Not found on {', '.join(missing)}. " if missing and len(missing) <= FEW_MISSING else ""
    spreads = [s for s in (_spread(f, [(h, f_["numbers"]) for h, f_ in members]) for f in fields) if s]
    text = f"{where}On {mid_host}" + (f", the median host by {_label(key)}" if key else "") + f": {mid['summary']}"
    if spreads:
        text += " Over the hosts, " + "; ".join(spreads) + "."
    rows = [{"host": h, **{f"{_label(f)}": _fmt(f, n["numbers"][f]) if _finite(n["numbers"].get(f)) else ""
                           for f in fields},
             **{f"{_label(f)} interval": _with_interval(f, n["numbers"]).removeprefix("95 % interval ")
                for f in fields[:1]}}
            for h, n in ordered]
    if len(rows) > 2 * ENDS:
        between = len(rows) - 2 * ENDS
        rows = rows[:ENDS] + [{"host": f"({between} hosts between)"}] + rows[-ENDS:]
    return {**mid, "title": f"{title}, on {len(found)} of {len(hosts)} hosts",
            "summary": text, "evidence": rows,
            "numbers": {**(mid.get("numbers") or {}), "hosts_found": len(found), "hosts_of": len(hosts)}}


def merge(findings: list[dict], hosts: list[str]) -> list[dict]:
    """`findings` with those alike but for their host merged into one each, in the order of each
    group's first finding; unchanged when fewer than two hosts measured."""
    pattern = host_words(hosts)
    if pattern is None:
        return findings
    hosts = sorted({str(h) for h in hosts if str(h)})
    groups: dict[tuple, list[tuple[str, dict]]] = {}
    order: list[tuple] = []
    for i, f in enumerate(findings):
        named = set(pattern.findall(str(f.get("title", ""))))
        if len(named) != 1:
            key: tuple = ("own", i)
            host = ""
        else:
            host = named.pop()
            key = (f.get("id"), f.get("bench"), _generic(str(f.get("title", "")), host))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((host, f))
    out = []
    for key in order:
        members = groups[key]
        if len(members) == 1 or key[0] == "own":
            out += [f for _, f in members]
        else:
            out.append(_merged(members, key[2], hosts))
    return out
