"""The audit of a report's claims: every finding checked against its own numbers and evidence
before a report is written (`reporting.report.render` runs it on every report; the tests run it
over every shipped example, every real curve and the known-truth generator's data).

A finding states claims: a quantity (a ratio), its estimate and interval, the value that means no
effect (1 for a ratio) and a verdict (`differs`, `equivalent`). A finding may list them itself
(`numbers["claims"]`, each a dict with those keys); otherwise they are read off the numbers each
kind of finding writes, as its benchmark's record says (`Checks.claims`). Every kind declares what
it claims there (or, for the kinds of several benchmarks, `CLAIMS` in findings.analysis and
findings.firmware); a finding of a kind that declares nothing is refused. The rules, each a
reviewer's question:

- **declared**: a finding's kind declares its claims, and each quantity it states (`Claim.states`)
  is printed in its sentence: a sentence reworded to drop its number is refused.

- **interval**: a claim that two things differ prints an interval that excludes the no-effect
  value; a claim of equivalence an interval inside the floor's margin. An effect claimed with no
  interval at all (noise unknown) is refused too: where the noise is unknown the word is
  "unknown".
- **sentence**: the estimate a claim states is the one its sentence prints (to two decimals).
- **table**: a sentence that says nothing differs ("do not part", "alike", ...) sits over a table
  that flags no row; a row with no interval (the noise unknown) is not "no" but "unknown".
- **one verdict**: one quantity (one series of one finding kind at one size) gets one verdict
  wherever it appears.
- **told once**: a curve's rises are told once each: the cache steps of one series never
  overlap.
- **said once, numbers kept** (`summary_problems`, over the summary's lines): a line the report
  composes from several findings alike but for their series (`reporting.report.summary_lines`)
  prints, for each series it names, numbers with their intervals that are that finding's own
  (`stated`), one quantity per list, and the range before the list runs from the least to the
  most of that quantity over every finding it merges; no finding it merges goes unsaid.

`audit` returns the problems, one line each naming the finding; `check` raises the first as a
`NumasweepError` (the report rule fails with that line); `check_summary` the same for the
summary's lines.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.core.units import SIZE_BYTES
from numasweep.findings import analysis, firmware

# what a sentence says when it finds nothing: such a sentence over a flagged row contradicts it
NOTHING_FOUND = ("do not part", "does not part", "are alike", "is alike", "no size differs",
                 "no thread count differs", "does not differ", "do not differ")

FLAGS = ("differs", "significant")   # evidence columns that carry a per-row verdict


def _finite(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def _name(f: dict) -> str:
    return f"finding '{f.get('title', f.get('id', '?'))}' ({f.get('id', '?')})"


def _claims() -> dict[str, registry.Claim]:
    """Finding id -> what it claims, over every benchmark's record and the kinds of several
    benchmarks (the placement check, the firmware's matrices)."""
    own = {kind: claim for b in registry.all_benches().values() for kind, claim in b.checks.claims.items()}
    return {**analysis.CLAIMS, **firmware.CLAIMS, **own}


def _kind(f: dict) -> registry.Claim | None:
    """What the finding's kind declares; None for a kind that declares nothing (or an id that is
    no name, as a hand edit may leave it)."""
    kind = f.get("id")
    return _claims().get(kind) if isinstance(kind, str) else None


def _number(value: Any) -> Any:
    """A stated quantity: the number itself, or the `estimate` of a mapping that holds one."""
    return value.get("estimate") if isinstance(value, dict) else value


def _prints(summary: str, value: float) -> bool:
    """Whether a sentence prints `value` as the report does: two or one decimals, or a fraction as
    a percentage."""
    return any(text in summary for text in (f"{value:.2f}", f"{value:.1f}", f"{value * 100:.2f}%",
                                            f"{value * 100:.1f}%", f"{value * 100:.0f}%"))


def claims_of(f: dict) -> list[dict]:
    """The claims a finding states: its own list, else those its kind's numbers hold."""
    n = f.get("numbers") or {}
    if isinstance(n.get("claims"), list):
        return n["claims"]
    out = []
    kind = _kind(f)
    if kind is None:
        return []
    name = kind.interval
    if name and (n.get(kind.when) if kind.when else n.get("claim")) and name in n:
        out.append({"quantity": name, "estimate": n.get(name), "low": n.get(f"{name}_low"),
                    "high": n.get(f"{name}_high"), "null": kind.null, "verdict": "differs"})
    if kind.equivalent and n.get("equivalent") and kind.equivalent in n:
        name = kind.equivalent
        floor = float(n.get("floor") or 0.1)
        out.append({"quantity": name, "estimate": n.get(name), "low": n.get(f"{name}_low"),
                    "high": n.get(f"{name}_high"), "null": 1.0, "verdict": "equivalent", "floor": floor})
    return out


def _kind_problems(f: dict) -> Iterable[str]:
    """A kind that declares nothing cannot be checked; a quantity its kind states is printed."""
    kind = _kind(f)
    if kind is None:
        yield (f"{_name(f)}: its kind {str(f.get('id', '?'))[:40]!r} declares no claims, so nothing in its sentence can be "
               "checked; declare it in its benchmark's Checks.claims (registry.Claim: the interval it claims, "
               "the quantities it states, or why it states none)")
        return
    summary, n = str(f.get("summary", "")), f.get("numbers") or {}
    for name in kind.states:
        value = _number(n.get(name))
        if _finite(value) and not _prints(summary, value):
            yield f"{_name(f)}: its sentence does not print the {name} it states ({value:.2f})"


def _claim_problems(f: dict) -> Iterable[str]:
    summary = str(f.get("summary", ""))
    for i, c in enumerate(claims_of(f)):
        if not isinstance(c, dict):
            yield (f"{_name(f)}: its claims[{i}] is {type(c).__name__} {str(c)[:40]!r}, not a mapping of quantity, "
                   "estimate, low, high, null and verdict; analyse again (snakemake --forcerun analyse)")
            continue
        est, low, high, null = c.get("estimate"), c.get("low"), c.get("high"), c.get("null", 1.0)
        what = f"{c.get('quantity')} {est}"
        if c.get("verdict") == "differs":
            if not _finite(low, high):
                yield f"{_name(f)} claims a difference in {what} with no interval: the noise is unknown, say so"
            elif low <= null <= high:
                yield (f"{_name(f)} claims a difference in {what} whose interval {low} to {high} holds "
                       f"{null}, no effect")
        elif c.get("verdict") == "equivalent":
            floor = float(c.get("floor", 0.1))
            if not _finite(low, high) or not (1 / (1 + floor) <= low and high <= 1 + floor):
                yield (f"{_name(f)} claims {what} equivalent, but its interval {low} to {high} is not inside the "
                       f"{floor * 100:.0f}% margin")
        if _finite(est) and f"{est:.2f}" not in summary and f"{est:.1f}" not in summary:
            yield f"{_name(f)}: its sentence does not print the {c.get('quantity')} it claims ({est:.2f})"


def _table_problems(f: dict) -> Iterable[str]:
    rows = f.get("evidence") or []
    summary = str(f.get("summary", "")).lower()
    for col in FLAGS:
        flagged = [r for r in rows if isinstance(r, dict) and r.get(col) is True]
        if flagged and any(p in summary for p in NOTHING_FOUND):
            at = flagged[0].get(SIZE_BYTES, flagged[0].get("threads", "?"))
            yield (f"{_name(f)} says nothing differs, yet its table flags {len(flagged)} row(s) as '{col}' "
                   f"(first at {at})")
        for r in rows:
            if not isinstance(r, dict) or r.get(col) is not False:
                continue
            if "ratio_low" in r and not _finite(r.get("ratio_low"), r.get("ratio_high")):
                yield (f"{_name(f)} marks a row '{col}: no' whose ratio has no interval (the noise is unknown): "
                       "the verdict there is 'unknown'")
                break


def _verdict_problems(findings: list[dict]) -> Iterable[tuple[dict, str]]:
    seen: dict[tuple, tuple[Any, dict]] = {}
    for f in findings:
        n = f.get("numbers") or {}
        series = tuple(str(n.get(k, "")) for k in ("mode", "page_size", "locality", "config", "position",
                                                   "cpu_node", "mem_node", "metric", "huge_page"))
        for r in f.get("evidence") or []:
            if not isinstance(r, dict):
                continue
            for col in FLAGS:
                if col not in r or SIZE_BYTES not in r:
                    continue
                key = (f.get("bench"), f.get("id"), f.get("title"), series, col, r[SIZE_BYTES])
                if key in seen and seen[key][0] != r[col]:
                    yield f, (f"{_name(f)} gives {col} = {r[col]} at {r[SIZE_BYTES]} bytes where "
                              f"{_name(seen[key][1])} gives {seen[key][0]} for the same quantity")
                seen.setdefault(key, (r[col], f))


def _told_twice(findings: list[dict]) -> Iterable[tuple[dict, str]]:
    """A curve's rises, each told once: the cache steps of one series never overlap."""
    spans: dict[tuple, list[tuple[int, int, dict]]] = {}
    for f in findings:
        n = f.get("numbers") or {}
        start, end = n.get(f"from_{SIZE_BYTES}"), n.get(SIZE_BYTES)
        kind = _kind(f)
        series = kind.spans if kind else ()
        if not series or not _finite(start, end):
            continue
        key = (f.get("bench"), f.get("id")) + tuple(str(n.get(k, "")) for k in series)
        spans.setdefault(key, []).append((int(start), int(end), f))
    for told in spans.values():
        told.sort(key=lambda t: t[0])
        for (a0, a1, fa), (b0, b1, fb) in zip(told, told[1:]):
            if b0 < a1:
                yield fb, f"{_name(fb)} tells a rise that {_name(fa)} already tells (their sizes overlap)"


def audit(findings: list[dict]) -> list[str]:
    """Every problem of a report's findings (findings.json's list), one line each."""
    return [problem for _, problem in refusals(findings)]


def refusals(findings: list[dict]) -> list[tuple[int, str]]:
    """Every problem of a report's findings with the position in `findings` of the finding it
    refuses (of two that contradict each other, the later)."""
    out = [(i, problem) for i, f in enumerate(findings)
           for problem in (*_kind_problems(f), *_claim_problems(f), *_table_problems(f))]
    where = {id(f): i for i, f in enumerate(findings)}
    return out + [(where[id(f)], problem) for f, problem in (*_verdict_problems(findings), *_told_twice(findings))]


# ---------------------------------------------------------------- the summary's composed lines

# A number as the report prints it: a ratio (1.55x), a share (12%), a size (45.3 KiB), a time or a
# rate (3.6 ns, 37.0 GB/s), or a bare number (1.99).
PRINTED = r"-?\d[\d,]*(?:\.\d+)?(?:x|%| [KMGT]iB| B| ns| GB/s| GiB/s)?"
# a number with its interval, as `Interval.text` prints it: "1.55x (95% interval 1.43x to 1.68x)",
# "1.55x (no interval: noise unknown)"
SLOT = re.compile(rf"(?P<est>{PRINTED}) \((?:(?P<level>\d+)% interval (?P<low>{PRINTED}) to (?P<high>{PRINTED})"
                  r"|no interval: noise unknown)\)")
# one series of a composed line's list: "copy: 1.86x, 95% interval 1.47x to 2.35x", or
# "copy: 1.86x, noise unknown, no interval"
ITEM = re.compile(rf"^(?P<name>.+?): (?P<est>{PRINTED})(?:, (?P<level>\d+)% interval (?P<low>{PRINTED}) to "
                  rf"(?P<high>{PRINTED})|, noise unknown, no interval)$")
# a range and its list: "1.51x to 1.86x (add: ...; copy: ...)", "2.98x in each (...)"
RANGE = re.compile(rf"(?P<lo>{PRINTED})(?: to (?P<hi>{PRINTED})| in each) \((?P<items>[^()]*: {PRINTED}[^()]*)\)")
MORE = re.compile(r"^(?P<n>\d+) more(?: series)?, within .*$")
SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def printed_value(text: str) -> tuple[float, float]:
    """(value, half a unit of its last digit) of a number as the report prints it; a size in bytes."""
    number, _, unit = text.strip().partition(" ")
    number = number.rstrip("x%").replace(",", "")
    decimals = len(number.partition(".")[2])
    scale = SIZE_UNITS.get(unit, 1)
    return float(number) * scale, 0.5 * 10 ** -decimals * scale * 1.0001 + 1e-12


def _agrees(text: str | None, value: Any) -> bool:
    if text is None or not _finite(value):
        return False
    printed, half = printed_value(text)
    return abs(printed - float(value)) <= half


def stated(f: dict, est: str, low: str | None, high: str | None) -> str | None:
    """The name of the quantity of finding `f` whose estimate and interval the report prints as
    `est` (`low` to `high`; None for no interval): a number of its with `<name>_low` and
    `<name>_high`, or a claim it lists; None when it has none such."""
    n = f.get("numbers") or {}
    candidates = [(k, n.get(k), n.get(f"{k}_low"), n.get(f"{k}_high")) for k in n
                  if f"{k}_low" in n and f"{k}_high" in n]
    candidates += [(str(c.get("quantity")), c.get("estimate"), c.get("low"), c.get("high"))
                   for c in (n.get("claims") or []) if isinstance(c, dict)]
    for name, e, lo, hi in candidates:
        if not _agrees(est, e):
            continue
        if low is None and high is None and not _finite(lo, hi):
            return name
        if low is not None and _agrees(low, lo) and _agrees(high, hi):
            return name
    return None


def summary_problems(lines: list[dict]) -> list[str]:
    """Every problem of the summary's lines (`reporting.report.summary_lines`), one line each: in
    a line composed from findings (`members`: [(series name,
    finding)]), a number printed for a series that is not that finding's own with its interval, a
    list of two quantities, a range that is not the least to the most over the findings merged,
    a finding left unsaid, a number with its interval printed outside a list that no finding
    merged states."""
    out = []
    for line in lines:
        title, text = str(line.get("title", "")), str(line.get("summary", ""))
        where = f"summary line '{title}'"
        members = line.get("members") or []
        if not members:
            continue
        by_name = {name: f for name, f in members}
        said: set[str] = set()
        lists = list(RANGE.finditer(text))
        for found in lists:
            items = found["items"].split("; ")
            quantity: set[str] = set()
            more = 0
            for item in items:
                if MORE.match(item):
                    more += int(MORE.match(item)["n"])
                    continue
                part = ITEM.match(item)
                if not part or part["name"] not in by_name:
                    out.append(f"{where}: '{item}' names no series it merges")
                    continue
                name = stated(by_name[part["name"]], part["est"], part["low"], part["high"])
                if name is None:
                    out.append(f"{where}: '{item}' is not a number and interval of the finding "
                               f"'{by_name[part['name']].get('title')}'")
                    continue
                said.add(part["name"])
                quantity.add(name)
            if len(quantity) > 1:
                out.append(f"{where}: one list gives {', '.join(sorted(quantity))}, several quantities")
                continue
            if len(quantity) == 1:
                q = quantity.pop()
                values = [(f.get("numbers") or {}).get(q) for _, f in members]
                values = [v for v in values if _finite(v)]
                if len(items) - (1 if more else 0) + more != len(members):
                    out.append(f"{where}: a list of {q} says {len(items)} series of the {len(members)} it merges")
                if values and not (_agrees(found["lo"], min(values)) and _agrees(found["hi"] or found["lo"], max(values))):
                    out.append(f"{where}: the range {found['lo']} to {found['hi'] or found['lo']} of {q} is not "
                               f"{min(values)} to {max(values)}, the least to the most over its findings")
        outside = RANGE.sub("", text)
        for slot in SLOT.finditer(outside):
            if not any(stated(f, slot["est"], slot["low"], slot["high"]) for _, f in members):
                out.append(f"{where}: '{slot.group(0)}' is no number and interval of the findings it says")
        unsaid = [name for name in by_name if name not in said]
        if lists and unsaid:
            out.append(f"{where} leaves {', '.join(unsaid)} unsaid")
    return out


def check_summary(lines: list[dict], where: str = "report") -> None:
    """Raises the first problem of the summary's lines as one line (`summary_problems`): the
    report composed a line its findings contradict, a fault of the report's code, not of the data
    (a finding the audit refuses is shown as refused instead, `reporting.report.refuse`)."""
    problems = summary_problems(lines)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise NumasweepError(f"{where}: the claims audit failed: {problems[0]}{more}; the report is not written "
                             "from a summary its findings contradict: keep findings.json and the report's log "
                             "(logs/<system>/report/report_md.log) with the results, a fault of the report")
