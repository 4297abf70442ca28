"""The Markdown report: a summary, the configuration, the analysis by subject (caches, TLB, DRAM
and NUMA locality, contention, rank scaling, bandwidth, data quality; `subjects`) with its figures,
then the raw tables.

Every number in the report comes from the results folder (topology.json, the aggregated CSVs,
the per-job provenance records) or from findings.json; a section whose data is absent is left
out. `render` writes one system's report, `render_cross` puts two systems side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import jinja2
import pandas as pd

from numasweep.core import registry
from numasweep.results import aggregate, digest, disturbed, quality
from numasweep.reporting import figures, html
from numasweep.core.errors import NumasweepError
from numasweep.reporting.markdown import Md, fmt_number, fmt_value, md_block, md_code, md_table, md_text, md_url
from numasweep.core.io import UNREAD, atomic_write_text
from numasweep.core.topology import Topology
from numasweep.core.units import SIZE_BYTES, capacity_words, count_words, format_cpulist, size_words
from numasweep.findings import analysis, audit, firmware

TEMPLATES = Path(__file__).resolve().parents[2] / "report"
# The aggregated tables carry the launch line as `command` (from provenance); imported legacy
# tables may name it otherwise.
COMMAND_KEYS = ("command", "launch", "command_line", "cmdline")


@dataclass(frozen=True)
class Subject:
    """A section of the report's analysis: its findings (by id, in the order they are read),
    the figures drawn for it (by kind) and a lead sentence; `quality` marks the data-quality
    section, which also holds the machine states and the kernels' run checks of the results."""

    title: str
    lead: str
    ids: tuple[str, ...]
    figures: tuple[str, ...] = ()
    quality: bool = False


# The report reads as an analysis, by subject, in this order. Each benchmark says which of its
# findings (by id) and figures (by kind) go under which subject (`Bench.presentation.subjects`); here are the
# subjects' leads, and what belongs to no one benchmark. Every finding id the analyses give has
# its subject (tests check it); compare's regressions and missed references are the comparison
# section's own (compare.markdown).
SUBJECT_LEADS = (
    Subject("Caches",
            "Where latency rises as the working set outgrows a cache level one core can use (the L3 of "
            "its own L3 group, never the sum over a node): each rise is given the cache that explains "
            "it, or said plainly to be unexplained.", ()),
    Subject("TLB",
            "What small pages cost against huge pages in otherwise identical runs: where the small-page "
            "curve parts from the huge-page one beyond the noise, the loads pay for page-table walks "
            "(the reach of the TLB), not for a cache.", ()),
    Subject("DRAM and NUMA locality",
            "How far memory is: latency by CPU node and memory node against the firmware distances, "
            "how the L3 groups of a domain compare, and the round trip of a cache line between cores.", ()),
    Subject("Contention and concurrency",
            "What ranks and threads running at once cost each other: concurrent against serial runs of "
            "the same ranks, and latency under a bandwidth load.", ()),
    Subject("Rank scaling",
            "How a rank's latency changes as more ranks share its domain, and with sequential against "
            "interleaved placement of the ranks.", ()),
    Subject("Bandwidth",
            "Memory bandwidth: how it grows with threads and where it saturates, what remote and "
            "interleaved memory give, node-to-node copies, and host-device transfers.", ()),
    Subject("Page migration",
            "What moving pages between nodes costs, as a tiering policy moves them between DRAM and a far "
            "tier: the time and throughput of each move and its way back, read against the copy bandwidth "
            "of the same pair (docs/benchmarks/migrate.md).", ()),
    Subject("Measured against the firmware",
            "The measured latency and bandwidth of each memory node relative to the local one, beside "
            "what the firmware claims for the same pair (HMAT, SLIT distances), with the memory-only "
            "nodes said against local memory; docs/firmware.md.",
            ("firmware_comparison", "firmware_not_provided", "memory_tier")),
    Subject("Data quality",
            "What may distort the numbers above, from the columns the kernels and the workflow recorded: "
            "machine states, the spread within each run, where the pages landed, runs off their curve "
            "and curves that are no measurement of what they were run for.",
            ("placement", "not_concluded"), quality=True),
)


def subjects() -> tuple[Subject, ...]:
    """The report's subjects, each with the finding ids and figure kinds every benchmark gives it,
    in the registry's order."""
    out = []
    for sub in SUBJECT_LEADS:
        given = [b.presentation.subjects.get(sub.title, ((), ())) for b in registry.all_benches().values()]
        out.append(dataclasses.replace(sub, ids=tuple(i for ids, _ in given for i in ids) + sub.ids,
                                       figures=sub.figures + tuple(k for _, kinds in given for k in kinds)))
    return tuple(out)


OTHER = Subject("Other findings", "Findings of no subject above.", ())
SUMMARY_MAX = 8   # the summary names the few findings that matter
UNEXPLAINED_HEADLINE = 2.0   # an unexplained rise whose interval lies at or above 2x is in the summary


# ---------------------------------------------------------------------------------------------
# Configuration


def cache_rows(topology: Topology) -> list[list[object]]:
    rows = []
    for cache in sorted(topology.caches, key=lambda c: (c.level, c.type)):
        shared = sorted({len(i) for i in cache.instances})
        rows.append([
            f"L{cache.level} {cache.type}".strip(),
            size_words(cache.size_bytes),
            len(cache.instances),
            size_words(cache.size_bytes * len(cache.instances)) if cache.instances else "",
            ", ".join(str(s) for s in shared),
        ])
    return rows


def node_rows(topology: Topology) -> list[list[object]]:
    rows = []
    for node in topology.nodes:
        groups = [i for i, g in enumerate(topology.l3_groups) if set(g) & set(node.cpus)]
        rows.append([
            node.id,
            format_cpulist(node.cpus) if node.cpus else "none (memory only)",
            ", ".join(str(g) for g in groups),
            f"{node.memory_bytes / 2**30:.1f} GiB" if node.memory_bytes else "",
            "yes" if node.memory_only or not node.cpus else "no",
        ])
    return rows


def distance_table(topology: Topology) -> str | None:
    if not topology.distances:
        return None
    ids = topology.node_ids() or list(range(len(topology.distances)))
    return md_table(["node"] + [str(i) for i in ids], [[i] + list(row) for i, row in zip(ids, topology.distances)])


# a repetition's number in a job id (`...-rep12`): the one part of a launch line repetitions change
REPETITION_IN_LINE = re.compile(r"(?<=-rep)(\d+)(?!\d)")


def commands(frames: dict[str, pd.DataFrame], host_names: list[str] | None = None) -> list[str]:
    """Distinct launch lines, from the aggregated tables' `command` column (provenance), so the
    report reads nothing beyond its declared inputs. Lines that differ only in their repetition's
    number are one bash loop over the repetitions (`for rep in {0..4166}; do ...; done`), and a
    fleet's lines that differ only in their node one loop over the nodes around that (`for node
    in nid{0001..1000}; do ...; done`): a campaign of thousands of repetitions or nodes lists
    each launch once, as a line that still runs. `host_names`: `hosts(frames)`, where the caller
    has them."""
    seen: dict[str, None] = {}     # in order of first appearance; a table repeats each line per row
    for df in frames.values():
        for key in COMMAND_KEYS:
            if key in df:
                # distinct first (a categorical column holds each line once), then as text
                seen.update(dict.fromkeys(str(v) for v in df[key].dropna().unique()))
                break
    loops: dict[str, list[tuple[int, str]]] = {}   # line with ${rep} -> (repetition, line), in order
    for line in seen:
        reps = set(REPETITION_IN_LINE.findall(line))
        key = REPETITION_IN_LINE.sub("${rep}", line) if len(reps) == 1 else line
        loops.setdefault(key, []).append((int(reps.pop()) if len(reps) == 1 else -1, line))
    words = digest.host_words(hosts(frames) if host_names is None else host_names)
    by_node: dict[str, list[tuple[str, str]]] = {}   # ${rep} line with ${node} -> (node, ${rep} line)
    for key in loops:
        named = set(words.findall(key)) if words else set()
        node_key = words.sub("${node}", key) if words and len(named) == 1 else key
        by_node.setdefault(node_key, []).append((named.pop() if len(named) == 1 else "", key))
    out = []
    for node_key, members in by_node.items():
        reps = {tuple(sorted(r for r, _ in loops[key])) for _, key in members}
        if len(members) == 1 or len(reps) > 1:      # the nodes ran different repetitions: each its own
            out += [_loop(key, loops[key]) for _, key in members]
            continue
        inner = _loop(node_key, [(r, words.sub("${node}", line)) for r, line in loops[members[0][1]]])
        out.append(f"for node in {_node_list(sorted(n for n, _ in members))}; do {inner}; done")
    return out


def _loop(key: str, runs: list[tuple[int, str]]) -> str:
    """The launch lines of one key: the line itself when it is one, else a loop over the repetitions."""
    if len(runs) == 1:
        return runs[0][1]
    reps = sorted(r for r, _ in runs)
    over = f"{{{reps[0]}..{reps[-1]}}}" if reps == list(range(reps[0], reps[-1] + 1)) else " ".join(map(str, reps))
    return f"for rep in {over}; do {key}; done"


def _node_list(nodes: list[str]) -> str:
    """Nodes as bash lists them: `nid{0001..1000}` for one prefix and consecutive numbers of one
    width (bash keeps the zero padding), else the names."""
    parts = [re.fullmatch(r"(.*?)(\d+)", n) for n in nodes]
    if all(parts) and len({(m.group(1), len(m.group(2))) for m in parts}) == 1:
        numbers = [int(m.group(2)) for m in parts]
        if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
            return f"{parts[0].group(1)}{{{parts[0].group(2)}..{parts[-1].group(2)}}}"
    return " ".join(nodes)


# ---------------------------------------------------------------------------------------------
# Placement verification


def sweeps_measured(results_dir: Path) -> list[dict]:
    """What the campaign's sweeps say they measure (config `measures`, written by the workflow
    to measures.json in the results folder): the sweep, by its label or number, and its words;
    [] for a folder without the file."""
    path = results_dir / "measures.json"
    if not path.exists():
        return []
    try:
        return [{"sweep": f"{e['bench']} sweep {e['label'] or e['sweep']}", "measures": str(e["measures"])}
                for e in json.loads(path.read_text())]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NumasweepError(f"{path}: not a list of what each sweep measures ({exc}); delete it and "
                             "rerun snakemake, which writes it from the config's `measures`") from None


# ---------------------------------------------------------------------------------------------
# Findings


def load_findings(path: str | os.PathLike | None, results_dir: Path) -> dict:
    """findings.json when given, else computed now from the results."""
    if path:
        path = Path(path)
        if not path.exists():
            raise NumasweepError(f"{path}: no such findings file; run `python -m numasweep analyse "
                                 f"--results {results_dir} -o {path}` first")
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise NumasweepError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); "
                                 "delete it and rerun the analysis") from None


    return analysis.analyse(results_dir)


def skipped_benches(results_dir: Path) -> list[dict]:
    """The benchmarks the plan left out, and why (`skipped.json`, rule skipped), by name; none
    where the folder has no such file (a cached example)."""
    path = results_dir / "skipped.json"
    if not path.exists():
        return []
    try:
        skipped = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NumasweepError(f"{path}: not readable JSON ({getattr(exc, 'msg', None) or exc}); delete it and "
                             "rerun snakemake, which writes it again") from None
    if not isinstance(skipped, dict):
        raise NumasweepError(f"{path}: not a mapping of benchmark to reason; delete it and rerun snakemake, "
                             "which writes it again")
    return [{"bench": bench, "why": str(why)} for bench, why in sorted(skipped.items())]


# Evidence tables show every row up to this many; a longer one keeps its first rows, its last
# and every row that carries the claim (`differs`), and says which rows it leaves out.
EVIDENCE_ROWS = 40


# the words a column name abbreviates, as the rest of the report spells them
EVIDENCE_WORDS = {"cpu": "CPU", "mem": "memory", "gpu": "GPU", "l3": "L3", "src": "source", "dst": "destination"}


def _words(text: str) -> str:
    return " ".join(EVIDENCE_WORDS.get(w, w) for w in text.replace("_", " ").split())


def evidence_header(column: str) -> str:
    """A findings.json column in words with its unit: "latency_ns" -> "latency (ns)", "local_mb_s"
    -> "local GB/s" (converted, as every bandwidth of the report), "ratio_low" -> "ratio, 95% low"."""
    if column.endswith(SIZE_BYTES):
        return (_words(column[: -len(SIZE_BYTES)]) + " size").strip()
    for suffix, unit in (("mb_s", "GB/s"), ("gib_s", "GiB/s"), ("gb_s", "GB/s")):
        if column == suffix or column.endswith("_" + suffix):
            return (_words(column[: -len(suffix)]) + " " + unit).strip()
    for suffix, words in (("_low", ", 95% low"), ("_high", ", 95% high")):
        if column.endswith(suffix):
            return evidence_header(column[: -len(suffix)]) + words
    if "_ns" in column:
        stem, _, rest = column.partition("_ns")
        return f"{_words(stem)} (ns)" + (", " + _words(rest) if rest else "")
    return _words(column)


def evidence_cell(column: str, value: object) -> object:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if column.endswith(SIZE_BYTES) and isinstance(value, (int, float)):
        return size_words(int(value))
    if (column == "mb_s" or column.endswith("_mb_s")) and isinstance(value, (int, float)):
        return value / 1000.0           # MB/s as the kernel wrote it, GB/s as the report says
    if isinstance(value, float) and value.is_integer() and not column.startswith("ratio") \
            and column in ("units", "ranks", "repetitions", "threads", "runs", "samples", "distance"):
        return int(value)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if column == "method" or column.endswith("_method"):
        return analysis.method_words(value)
    return "" if value is None else value


def evidence_table(evidence: list[dict], limit: int = EVIDENCE_ROWS) -> str | None:
    """A finding's evidence as a table: every row up to `limit`; past it, the first and last
    rows and every row that carries the claim (`differs`), the rows left out named by their
    first column."""
    if not evidence:
        return None
    columns: list[str] = []
    for item in evidence:
        columns += [k for k in item if k not in columns]
    keep = list(range(len(evidence)))
    if len(evidence) > limit:
        edge = limit // 4
        keep = sorted(set(range(edge)) | set(range(len(evidence) - edge, len(evidence)))
                      | {i for i, e in enumerate(evidence) if e.get("differs") is True})
    rows = [[evidence_cell(c, evidence[i].get(c)) for c in columns] for i in keep]
    table = md_table([evidence_header(c) for c in columns], rows)
    left = [i for i in range(len(evidence)) if i not in keep]
    if not left:
        return table
    runs: list[list[int]] = []
    for i in left:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    first = columns[0]

    def cell(i: int) -> str:
        return fmt_number(evidence_cell(first, evidence[i].get(first)))

    spans = [cell(r[0]) if len(r) == 1 else f"{cell(r[0])} to {cell(r[-1])}" for r in runs]
    differs = " (none of them differs)" if "differs" in columns else ""
    return Md(table + md_text(f"\n\n({len(left)} rows not shown: {evidence_header(first)} {'; '.join(spans)}"
                                  f"{differs}; all {len(evidence)} rows are in findings.json)"))


def subject_of(finding_id: str) -> Subject:
    return next((sub for sub in subjects() if finding_id in sub.ids), OTHER)


def is_headline(finding: dict) -> bool:
    """Whether the summary names a finding: not one that claims nothing (a symmetry, a level
    without a transition), unmatched steps that less than double latency (a TLB-like 1.3x),
    single-point anomalies, placements with every page where it was asked, or the list of untested
    caches, which stay in their sections. An
    unmatched step that at least doubles latency (beyond the noise) is what a reader must see,
    next to the caches' steps it is not."""
    numbers = finding.get("numbers") or {}
    if numbers.get("claim") is False:
        return False
    if finding.get("id") == "cache_threshold":
        return bool(numbers.get("matched_cache")) or (numbers.get("step_ratio_low") or 0) >= UNEXPLAINED_HEADLINE
    if finding.get("id") == "anomaly":
        return numbers.get("kind") == "inversion"
    if finding.get("id") == "placement":     # pages where they were asked: said under Data quality
        return bool(numbers.get("flagged"))
    return finding.get("id") != "cache_untested"


SERIES_IN_TITLE = re.compile(r"^(?P<stem>.*\S) \((?P<series>[^()]*)\)$")


def _main_number(numbers: dict) -> str | None:
    """The number a finding states with its interval: the first with a `_low` and `_high`."""
    return next((k for k, v in numbers.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                 and f"{k}_low" in numbers and f"{k}_high" in numbers), None)


def _number(key: str, value: float) -> str:
    if key.endswith(SIZE_BYTES.removeprefix("size")):       # a size in bytes, said as one
        return size_words(value)
    return f"{value:.2f}x" if key.endswith("ratio") else fmt_value(value, 2)


def _number_name(key: str) -> str:
    """A number's name in words: "step_ratio" -> "step ratio", "onset_bytes" -> "onset"."""
    return key.removesuffix(SIZE_BYTES.removeprefix("size")).replace("_", " ")


def _factored(names: list[str]) -> tuple[str, list[str]]:
    """Series named by their titles' words, what they share said once: ("4 KiB pages",
    ["concurrent, 1 rank", "serial, 1 rank"]); nothing factored where a series would be left
    unnamed."""
    parts = [[p.strip() for p in n.split(",")] for n in names]
    common = [p for p in parts[0] if all(p in q for q in parts[1:])]
    rest = [", ".join(p for p in q if p not in common) for q in parts]
    return (", ".join(common), rest) if all(rest) else ("", list(names))


SUMMARY_SERIES = ("mode", "config", "page_size")   # numbers naming a series said in its title's parentheses
MERGED_LISTED = 8      # a merged line gives every series' number up to this many, else the least and the most
SENTENCE_END = re.compile(r"(?<=\.) (?=[A-Z])")


def without_title(title: str, summary: str) -> str:
    """A finding's sentence as the summary gives it after its bold title: without the title, or
    the title's words after its first colon, that it opens with ("Add bandwidth ... (128 MiB
    arrays, 4 KiB pages): best bandwidth rises ..." under "Rise with threads: add bandwidth ...
    (128 MiB arrays, 4 KiB pages)" -> "best bandwidth rises ...")."""
    for said in (title, title.split(": ", 1)[1] if ": " in title else ""):
        if said and summary.lower().startswith(said.lower()):
            rest = re.match(r"^[:.,;]\s+(?=\S)", summary[len(said):])
            if rest:
                return summary[len(said) + rest.end():]
    return summary


def _alike(f: dict) -> tuple[str, str] | None:
    """(the title without the words naming its series, those words) of a finding that others may
    be alike but for their series: a series in the title's parentheses where its numbers name a
    mode, rank count or page size; a kernel named in the title where its numbers name one
    ("Rise with threads: add bandwidth ..." -> ("Rise with threads: bandwidth ...", "add")); None
    for a finding of no series."""
    title, numbers = str(f.get("title", "")), f.get("numbers") or {}
    names = []
    match = SERIES_IN_TITLE.match(title)
    if match and any(k in numbers for k in SUMMARY_SERIES):
        title, names = match["stem"], [match["series"]]
    kernel = str(numbers.get("kernel") or "")
    word = re.compile(rf"(?<![\w-]){re.escape(kernel)} (?=\w)") if kernel else None
    if word and word.search(title):
        title, names = word.sub("", title, count=1), [kernel] + names
    return (title, ", ".join(names)) if names else None


def _flags(numbers: dict) -> tuple:
    """The verdicts a finding's numbers hold (claim, differs, average_claim, ...): findings merged
    into one line share them all, so that the line states one verdict."""
    return tuple(sorted((k, v) for k, v in numbers.items() if isinstance(v, bool)))


def _item(name: str, est: str, level: str | None, low: str | None, high: str | None) -> str:
    """One series in a merged line's list, as `audit.ITEM` reads it back."""
    if low is None:
        return f"{name}: {est}, noise unknown, no interval"
    return f"{name}: {est}, {level or 95}% interval {low} to {high}"


def _listed(items: list[tuple[str, str, tuple[str, str] | None]]) -> str:
    """A range and its list, as `audit.RANGE` reads them back: items (value printed, item text,
    its interval's ends printed or None) in the series' order; past MERGED_LISTED, the least and
    the most, then how many more and the ends of their intervals."""
    values = [audit.printed_value(v)[0] for v, _, _ in items]
    least, most = values.index(min(values)), values.index(max(values))
    lo, hi = items[least][0], items[most][0]
    said = f"{lo} in each" if lo == hi else f"{lo} to {hi}"
    listed = [text for _, text, _ in items]
    if len(items) > MERGED_LISTED:
        ends = sorted({least, most})
        rest = [e for i, (_, _, e) in enumerate(items) if i not in ends and e]
        within = (f"within {min((e[0] for e in rest), key=lambda x: audit.printed_value(x)[0])} to "
                  f"{max((e[1] for e in rest), key=lambda x: audit.printed_value(x)[0])}" if rest
                  else "within the range")
        listed = [items[i][1] for i in ends] + [f"{len(items) - len(ends)} more, {within}"]
    return f"{said} ({'; '.join(listed)})"


def _merged_sentences(members: list[tuple[str, dict]]) -> str | None:
    """The members' sentences as one, where they read alike but for their numbers with intervals
    (after their titles): each such number the range over the members, each member's value with
    its interval listed; a sentence without such numbers that only some members say (said once
    for all) kept once. None where they read otherwise, or a number is not a member's own."""
    texts = [without_title(str(f.get("title", "")), str(f.get("summary", ""))) for _, f in members]
    split = [SENTENCE_END.split(t) for t in texts]
    slotted = [[x for x in sentences if audit.SLOT.search(x)] for sentences in split]
    skeletons = [[audit.SLOT.sub("\0", x) for x in sentences] for sentences in slotted]
    if not skeletons[0] or any(sk != skeletons[0] for sk in skeletons[1:]):
        return None
    merged = []
    for i, sentence in enumerate(slotted[0]):
        found = [list(audit.SLOT.finditer(sentences[i])) for sentences in slotted]
        fills = []
        for j in range(len(found[0])):
            items, quantities = [], set()
            for (name, f), slots in zip(members, found):
                m = slots[j]
                quantities.add(audit.stated(f, m["est"], m["low"], m["high"]))
                ends = (m["low"], m["high"]) if m["low"] is not None else None
                items.append((m["est"], _item(name, m["est"], m["level"], m["low"], m["high"]), ends))
            if None in quantities or len(quantities) != 1:
                return None
            fills.append(_listed(items))
        parts = skeletons[0][i].split("\0")
        merged.append("".join(p + (fills[k] if k < len(fills) else "") for k, p in enumerate(parts)))
    out, k = [], 0
    for sentence in split[0]:
        if audit.SLOT.search(sentence):
            out.append(merged[k])
            k += 1
        else:
            out.append(sentence)
    out += [x for sentences in split[1:] for x in sentences if not audit.SLOT.search(x) and x not in out]
    return " ".join(dict.fromkeys(out))


def _merged_numbers(members: list[tuple[str, dict]]) -> str | None:
    """The members' main number (`_main_number`) as a range, each member's value with its
    interval listed; None where the first has none."""
    key = _main_number(members[0][1].get("numbers") or {})
    if not key:
        return None
    items = []
    for name, f in members:
        n = f.get("numbers") or {}
        if not isinstance(n.get(key), (int, float)) or isinstance(n.get(key), bool):
            return None
        own = [m for m in audit.SLOT.finditer(str(f.get("summary", "")))
               if audit.stated(f, m["est"], m["low"], m["high"]) == key]
        if own:      # as its own sentence prints it (findings.json keeps 4 decimals: 10.195 of 10.1949)
            m = own[0]
            ends = (m["low"], m["high"]) if m["low"] is not None else None
            items.append((m["est"], _item(name, m["est"], m["level"], m["low"], m["high"]), ends))
            continue
        est = _number(key, n[key])
        low, high = n.get(f"{key}_low"), n.get(f"{key}_high")
        if low is None or high is None:
            items.append((est, _item(name, est, None, None, None), None))
        else:
            ends = (_number(key, low), _number(key, high))
            items.append((est, _item(name, est, "95", *ends), ends))
    return f"{_number_name(key)} {_listed(items)}."


def _composed(stem: str, members: list[tuple[str, dict]]) -> dict | None:
    """One line for findings alike but for their series: their sentences as one where they read
    alike, else their main number's range; each series' number with its interval."""
    common, rests = _factored([name for name, _ in members])
    named = list(zip(rests, [f for _, f in members]))
    text = _merged_sentences(named) or _merged_numbers(named)
    if text is None:
        return None
    lead = f"the same in {len(members)} series" + (f" ({common})" if common else "") + ": "
    line = {"title": stem, "summary": lead + text, "merged": len(members), "members": named}
    # a line the claims audit could not check against its findings is not composed: they are
    # said one by one instead (a migration's series named in words the lists do not repeat)
    return None if audit.summary_problems([line]) else line


def summary_lines(headlines: list[dict]) -> list[dict]:
    """The summary's lines, by importance (`importance`): findings that say the same thing (same
    id, same claim in the title, the same verdicts) about series that differ only in mode, rank
    count, page size or kernel are one line, their sentences read as one where they read alike
    (every number with its interval, and the range of each over them), else naming the range of
    their main number with each series' value and interval; a cache's steps are one line per
    level, whatever their sizes and pages; any other finding is its own line, as it reads after
    its title. A merged line keeps its findings (`members`), for the claims audit to check its
    numbers against theirs (`audit.summary_problems`)."""
    groups: dict[tuple, list[tuple[str, dict]]] = {}
    for f in sorted(headlines, key=importance):
        numbers = f.get("numbers") or {}
        match = SERIES_IN_TITLE.match(str(f.get("title", "")))
        alike = _alike(f)
        if (level := _cache_level(f)) and match:
            key: tuple = ("cache", f"Latency step out of the {level}")
            name = match["series"]
        elif alike:
            key = (f.get("id"), f.get("bench"), alike[0], numbers.get("locality"), _flags(numbers))
            name = alike[1]
        else:
            key, name = (id(f),), ""
        groups.setdefault(key, []).append((name, f))
    out = []
    for key, members in groups.items():
        line = None
        if len(members) > 1 and len({name for name, _ in members}) == len(members):
            line = _composed(key[1] if key[0] == "cache" else key[2], members)
        if line is None:
            out += [{"title": f["title"], "summary": without_title(str(f["title"]), str(f["summary"])), "merged": 1}
                    for _, f in members]
        else:
            out.append(line)
    return out


# What a reader of a machine needs first: the NUMA story (how far each node's memory is, what the
# firmware claims of it, the nodes' bandwidth against each other), then what ranks cost each other,
# the TLB, bandwidth, scaling, and the cache steps last, one line per level.
IMPORTANCE = ("DRAM and NUMA locality", "Measured against the firmware", "Contention and concurrency", "TLB",
              "Bandwidth", "Rank scaling", "Caches")
NUMA_BANDWIDTH = ("bandwidth_locality", "bandwidth_ordering", "copy_matrix", "bandwidth_matrix", "far_memory")


def importance(finding: dict) -> int:
    """Where a finding comes in the summary: its subject's place in IMPORTANCE (NUMA bandwidth
    with the NUMA story), anything else after them."""
    if finding.get("id") in NUMA_BANDWIDTH:
        return 0
    title = subject_of(str(finding.get("id", ""))).title
    return IMPORTANCE.index(title) if title in IMPORTANCE else len(IMPORTANCE)


def _cache_level(f: dict) -> str | None:
    """The cache a step is matched to (its words), when the finding is a matched cache step."""
    numbers = f.get("numbers") or {}
    if f.get("id") != "cache_threshold" or not numbers.get("matched_cache"):
        return None
    return capacity_words(numbers["matched_cache"], numbers.get("cache_bytes"))


def runs_off(findings: list[dict]) -> dict | None:
    """The summary's line on the runs and ranks off the others of their curve (the `anomaly`
    findings, told under Data quality) that have no line of their own (`is_headline`: an
    inversion has): how many, and the farthest with its number and interval in words
    (docs/STATISTICS.md keeps the test: Holm over every run and size); None for none."""
    found = [f for f in findings if f.get("id") == "anomaly" and not is_headline(f)]
    if not found:
        return None
    runs = sum(1 for f in found if (f.get("numbers") or {}).get("kind") == "outlier")
    units = len(found) - runs
    counted = " and ".join(x for x in (count_words(runs, "run") if runs else "",
                                       f"{units} rank{'s' if units > 1 else ''} or node{'s' if units > 1 else ''}"
                                       if units else "") if x)

    def far(f: dict) -> float:
        value = (f.get("numbers") or {}).get("relative")
        return abs(math.log(value)) if isinstance(value, (int, float)) and value > 0 else 0.0

    f = max(found, key=far)
    n = f.get("numbers") or {}
    who = str(f.get("title", "")).split(": ", 1)[-1]
    rel = n.get("relative")
    if not isinstance(rel, (int, float)):
        return {"title": "Runs off their curve", "members": [("", f)],
                "summary": f"{counted} off the others of their curve by more than the noise; each is named, with "
                           "its size, under Data quality."}
    number = (f"{rel:.2f}x (95% interval {n['relative_low']:.2f}x to {n['relative_high']:.2f}x)"
              if isinstance(n.get("relative_low"), (int, float)) and isinstance(n.get("relative_high"), (int, float))
              else f"{rel:.2f}x (no interval: noise unknown)")
    if n.get("kind") == "outlier":
        what = f"its latency is {number} the median of the other runs there"
    else:
        what = (f"its {n.get('what') or 'ratio'} is {n.get('ratio', math.nan):.2f} against {n.get('others_ratio', math.nan):.2f}, "
                f"the median of the others': {number} as large")
    if len(found) == 1:
        said = (f"{counted} lies off the others of its curve by more than the noise, tested against every run "
                f"and size at once (docs/STATISTICS.md): {who}, where {what}; its evidence is under Data quality.")
    else:
        said = (f"{counted} lie off the others of their curves by more than the noise, tested against every run "
                f"and size at once (docs/STATISTICS.md); the farthest is {who}, where {what}; each is under "
                "Data quality, with its evidence.")
    return {"title": "Runs off their curve", "members": [("", f)], "summary": said}


# The mark of a headline value that rests on a noisy series; the footnote under the table says
# what it means (the template's `noisy_mark`).
NOISY_MARK = disturbed.NOISY_MARK


def headline_rows(frames: dict[str, pd.DataFrame], topology: Topology | None,
                  measured: set[str] = frozenset()) -> list[list[str]]:
    """What a user came for, from every benchmark's `headline` rows, in the registry's order. A
    row that rests on a noisy job (one the benchmark's headline without its noisy jobs does not
    give as it is) carries NOISY_MARK beside its value. A benchmark in `measured` that `frames`
    lacks (every job of it disturbed) has one row saying so, rather than going missing."""
    rows = []
    for bench in registry.all_benches().values():
        if bench.presentation.headline is None:
            continue
        if bench.name not in frames:
            if bench.name in measured:
                rows.append([bench.title.lower(), "not concluded",
                             "every job measured while disturbed (listed at the top)"])
            continue
        df = frames[bench.name]
        mine = bench.presentation.headline(df, topology)
        noisy = (disturbed.job_verdicts(df, bench.name)[disturbed.VERDICT] == disturbed.NOISY).to_numpy()
        if noisy.any():
            quiet = ({tuple(r) for r in bench.presentation.headline(df[~noisy].reset_index(drop=True), topology)}
                     if not noisy.all() else set())
            # an unknown value (the theoretical bandwidth of a machine whose DIMMs are not listed)
            # rests on no series, noisy or not
            mine = [row if tuple(row) in quiet or row[1] == "unknown" else [row[0], f"{row[1]} {NOISY_MARK}", *row[2:]]
                    for row in mine]
        rows += mine
    return rows


# How the summary counts each unit its rows give, said once above the table; a row that counts
# otherwise says so beside its number (numa_copy counts each byte copied once).
UNIT_CONVENTIONS = {
    "GB/s": "bandwidth in GB/s (10^9 bytes/s), each byte read and each byte written counted, as STREAM counts them",
    "GiB/s": "host-device transfers in GiB/s (2^30 bytes/s), as gpu_xfer measures them",
}
ROW_UNIT = re.compile(r"(?<![\w/])(GiB/s|GB/s|ns)(?![\w/])")


def row_unit(value: str) -> str | None:
    """The unit a headline value is given in: "9.6 GB/s (...)" -> "GB/s"; None for a ratio."""
    found = ROW_UNIT.search(str(value))
    return found.group(1) if found else None


def headline_units(rows: list[list[str]]) -> str:
    """The preamble's sentence on units: the convention of each bandwidth unit the rows use."""
    used = {row_unit(row[1]) for row in rows}
    return "; ".join(words for unit, words in UNIT_CONVENTIONS.items() if unit in used)


def prepared_findings(findings: dict) -> list[dict]:
    out = []
    for f in firmware.far_memory(findings.get("findings", [])):
        out.append({**f, "evidence_table": evidence_table(f.get("evidence") or []),
                    "subject": subject_of(str(f.get("id"))).title, "headline": is_headline(f)})
    return out


def hosts(frames: dict[str, pd.DataFrame]) -> list[str]:
    """The hosts that measured, over every table (the provenance `host` column)."""
    found: set[str] = set()
    for df in frames.values():
        if "host" in df:
            found.update(str(h) for h in df["host"].dropna().unique())
    return sorted(found)


def by_subject(findings: list[dict], figures: list[dict], blocks: list[dict] = (),
               quality_content: bool = False) -> list[dict]:
    """The analysis sections, in the order of `subjects` (then any finding of no subject): each
    with its lead, its figures, its findings in the order of its ids, and the benchmarks' blocks
    for it (`Presentation.report`) after its lead, its figures and its findings; in the
    data-quality section, the blocks after its findings are the placement verification's. A
    subject with none of these, and not the data-quality one with `quality_content` (the machine
    states and run checks the template gives it), is not shown."""
    out = []
    for sub in subjects() + (OTHER,):
        mine = sorted((f for f in findings if f["subject"] == sub.title),
                      key=lambda f: sub.ids.index(f["id"]) if f.get("id") in sub.ids else len(sub.ids))
        figs = [fig for fig in figures if fig["kind"] in sub.figures]
        after = {f"after_{at}": [b for b in blocks if b["subject"] == sub.title and b["at"] == at]
                 for at in ("lead", "figures", "findings")}
        # Placement findings go under the placement heading with their per-rank tables.
        placed = [f for f in mine if f.get("id") == "placement"]
        out.append({"title": sub.title, "lead": Md(sub.lead), "findings": [f for f in mine if f not in placed],
                    "placement_findings": placed, "figures": figs, "quality": sub.quality, **after,
                    "shown": bool(mine or figs or any(after.values()) or (sub.quality and quality_content))})
    return out


# ---------------------------------------------------------------------------------------------
# Rendering


def environment() -> jinja2.Environment:
    """The Markdown templates' environment: every `{{ }}` is text (`md_text`) unless it is the
    project's own Markdown (an `Md`: tables, sections, leads) or goes through `code`, `block`
    or `url`."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=md_text,
    )
    env.filters.update(code=md_code, block=md_block, url=md_url)
    return env


def figure_entries(figures_dir: Path | None, bench: str, out_md: Path) -> list[dict]:
    if figures_dir is None or not (figures_dir / bench).is_dir():
        return []
    entries = []
    order = list(registry.captions())
    pngs = sorted((figures_dir / bench).glob("*.png"),
                  key=lambda p: (order.index(figures.figure_kind(p)) if figures.figure_kind(p) in order
                                 else len(order), p.name))
    for png in pngs:
        kind = figures.figure_kind(png)
        entries.append({
            "kind": kind,
            "path": os.path.relpath(png, out_md.parent),
            "caption": registry.captions().get(kind, kind.replace("_", " ")),
            # the variant's slug read as words: "latency vs size, concurrent 1 rank" (no ", all")
            "alt": png.stem.removesuffix("--all").replace("--", ", ").replace("_", " ").replace("-", " "),
        })
    return entries


def drawn_disturbed(left: list, concluded: bool) -> str | None:
    """The sentence beside a benchmark's figures and raw tables when some of its jobs were measured
    while disturbed (`results.disturbed`): they are drawn and listed as measured, no finding or
    headline rests on them; None when none was, or the report concludes them anyway."""
    if not left or concluded:
        return None
    series = "; ".join(r.series or "all series" for r in left)
    return (f"The figures and the tables of the analysis leave out the jobs measured while disturbed ({series}), "
            "and each figure says so under it; the raw tables list them as measured. No finding or headline rests "
            "on those; the report's first lines say why.")


REFUSED = "Refused by the claims audit"


class AuditRefused(NumasweepError):
    """A report written with findings the claims audit refused (each shown as refused there)."""


def refuse(findings: list[dict]) -> tuple[list[dict], list[str]]:
    """The findings, each one the claims audit refuses shown as refused: its sentence replaced by
    what the audit found, out of the summary, its claims withdrawn; and those problems, a line
    each. The report is written all the same, its first lines saying so, and `render` then fails."""
    found: dict[int, list[str]] = {}
    for i, problem in audit.refusals(findings):
        found.setdefault(i, []).append(problem)
    out = [f if i not in found else
           {**f, "summary": f"{REFUSED}: {'; '.join(found[i])}. Nothing is concluded from this finding.",
            "numbers": {**(f.get("numbers") or {}), "claim": False, "claims": []}, "refused": True}
           for i, f in enumerate(findings)]
    return out, [problem for problems in found.values() for problem in problems]


def system_context(results_dir: Path, findings: dict | None, figures_dir: Path | None, out_md: Path,
                   conclude_disturbed: bool = False) -> dict:
    topology = aggregate.load_topology(results_dir)
    frames = aggregate.load_results(results_dir, UNREAD)
    if topology is None and not frames:
        raise NumasweepError(f"{results_dir}: neither topology.json nor any <bench>.csv; give the "
                             "folder the workflow wrote (results/<system>) or an examples/<name> folder")
    every, refused = refuse((findings or {}).get("findings", []))
    # the headline rests on no job measured while disturbed; the first lines say which were,
    # a job on one line (its series together)
    clean, left = disturbed.split(frames, conclude_disturbed)
    left = analysis.by_job(left)
    headline = headline_rows(clean, topology, measured=set(frames))
    measured_on = hosts(frames)
    # a fleet's findings alike but for their host are said once (numasweep.results.digest)
    found = prepared_findings({"findings": digest.merge(every, measured_on)})
    placed = {kind for sub in subjects() for kind in sub.figures}
    lines = summary_lines([f for f in found if f["headline"]])
    off = runs_off(every)
    # what the summary says of findings merged or counted is checked against them, as they are
    audit.check_summary(lines[:SUMMARY_MAX] + ([off] if off else []), f"summary of {results_dir}")
    sections, subject_figures, subject_blocks = [], [], []
    for bench in registry.all_benches().values():
        if bench.name not in frames:
            continue
        df = frames[bench.name]
        entries = figure_entries(figures_dir, bench.name, out_md)
        subject_figures += [e for e in entries if e["kind"] in placed]
        # what it writes in the report: its raw results as measured, and blocks for the analysis
        # sections from what the findings rest on (without the jobs measured while disturbed)
        blocks = [b for b in bench.presentation.report(df, topology, found) if not b.get("subject")]
        if bench.name in clean:
            subject_blocks += [b for b in bench.presentation.report(clean[bench.name], topology, found)
                               if b.get("subject")]
        # its figures and raw tables show every job as measured: those measured while disturbed said
        drawn = drawn_disturbed([r for r in left if r.bench == bench.name], conclude_disturbed)
        if drawn:
            blocks.insert(0, {"title": "", "table": drawn})
            subject_blocks += [{"subject": sub.title, "at": "figures", "title": "", "table": drawn}
                               for sub in subjects() if any(e["kind"] in sub.figures for e in entries)]
        sections.append({
            "name": bench.name,
            "title": bench.title,
            "rows": len(df),
            "raw_tables": [b for b in blocks if not b.get("subject")],
            "figures": [e for e in entries if e["kind"] not in placed],
        })
    system = (topology.system if topology else None) or (findings or {}).get("system") or results_dir.name
    notes = [{**q, "hosts": q["hosts"][:digest.HOST_ROWS] + [f"{len(q['hosts']) - digest.HOST_ROWS} more hosts"]}
             if len(q["hosts"]) > digest.HOST_ROWS + 1 else q for q in quality.notes(frames)]
    run_quality = [{**q, "table": md_table(q["header"], q["rows"], right=q["numeric"])}
                   for q in quality.series_quality(frames, topology)]
    return {
        "system": system,
        "results_dir": str(results_dir),
        "topology": topology,
        "hypervisor": topology.hypervisor if topology else None,
        "nodes": md_table(["node", "CPUs", "L3 groups", "memory", "memory only"],
                          node_rows(topology), right={0}) if topology else None,
        "memory_only": [n.id for n in topology.nodes if n.memory_only or not n.cpus] if topology else [],
        "caches": md_table(["cache", "size per instance", "instances", "total", "CPUs per instance"],
                           cache_rows(topology)) if topology and topology.caches else None,
        "distances": distance_table(topology) if topology else None,
        "reserved": format_cpulist(topology.reserved_cpus) if topology and topology.reserved_cpus else None,
        "gpus": topology.gpus if topology else [],
        "commands": commands(frames, measured_on),
        "skipped": skipped_benches(results_dir),
        "sweeps_measured": sweeps_measured(results_dir),
        "benches": sections,
        "subjects": [sub for sub in by_subject(found, subject_figures, subject_blocks, bool(notes or run_quality))
                     if sub["shown"]],
        "findings": found,
        "refused": refused,
        "headline_table": md_table(["measured", "value", "95% interval"], headline, right={1}) if headline else None,
        "headline_units": headline_units(headline),
        "noisy_mark": NOISY_MARK if any(NOISY_MARK in str(row[1]) for row in headline) else None,
        "disturbed": [r.sentence() for r in left],
        "concluded_disturbed": conclude_disturbed,
        "noisy": [r.sentence() for r in analysis.by_job(disturbed.noisy(clean))],
        "headlines": lines[:SUMMARY_MAX],
        "more_headlines": max(0, len(lines) - SUMMARY_MAX),
        "runs_off": off,
        "data_quality": notes,
        "tiering": quality.tiering(frames),
        "run_quality": run_quality,
        "sections": [],
    }


def render(results_dir: str | os.PathLike, findings: dict | None, figures_dir: str | os.PathLike | None,
           out_md: str | os.PathLike, sections: list[str | os.PathLike] = (), conclude_disturbed: bool = False) -> Path:
    """Write one system's report to `out_md` and return its path. `sections` are Markdown files
    written by other commands (`fleet`, `compare`) in the report's folder, included as they are."""
    out_md = Path(out_md)
    context = system_context(Path(results_dir), findings, Path(figures_dir) if figures_dir else None, out_md,
                             conclude_disturbed)
    for section in sections:
        if not Path(section).is_file():
            raise NumasweepError(f"{section}: no such report section; write it first (python -m numasweep "
                                 "fleet or compare), or leave out --section")
        # written by `compare` and `fleet`, which escape what they quote (reporting.markdown)
        context["sections"].append(Md(Path(section).read_text()))
    text = environment().get_template("experimentation.md.j2").render(**context)
    atomic_write_text(out_md, tidy(text))
    _refused(out_md, context["refused"])
    return out_md


def _refused(out_md: Path, problems: list[str]) -> None:
    """After the report is written: AuditRefused where the claims audit refused findings."""
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise AuditRefused(f"{out_md}: written with {count_words(len(problems), 'finding')} the claims audit refused, "
                           f"shown as refused: {problems[0]}{more}; if findings.json was edited by hand, analyse "
                           "again (snakemake --forcerun analyse), else keep findings.json and the analysis log with "
                           "the results: the analysis stated what its own data contradicts")


def spec_rows(contexts: list[dict]) -> list[list[object]]:
    def describe(ctx: dict) -> dict[str, str]:
        topo = ctx["topology"]
        nodes = topo.nodes if topo else []
        l3 = [c for c in topo.caches if c.level == 3] if topo else []
        return {
            "CPU": topo.cpu_model if topo else "",
            "NUMA nodes": str(len(nodes)),
            "memory-only nodes": ", ".join(str(n) for n in ctx["memory_only"]) or "none",
            "CPUs": str(sum(len(n.cpus) for n in nodes)),
            "L3 per group": size_words(l3[0].size_bytes) if l3 else "",
            "L3 groups": str(len(topo.l3_groups) if topo else 0),
            "GPUs": str(len(topo.gpus) if topo else 0),
            "virtual machine": (topo.hypervisor if topo else None) or "no",
            "benchmarks": ", ".join(b["name"] for b in ctx["benches"]),
        }
    described = [describe(c) for c in contexts]
    return [[key] + [d[key] for d in described] for key in described[0]]


def render_cross(results_dirs: list[Path], findings: list[dict | None], figures_dir: Path | None,
                 out_md: Path) -> Path:
    """Two systems side by side: specifications, what each benchmark compares (its
    `presentation.cross`: the latency at the sizes both measured, the best bandwidth at the thread
    counts both measured), findings of each."""
    out_md = Path(out_md)
    contexts = [system_context(Path(d), f, None, out_md) for d, f in zip(results_dirs, findings)]
    names = [c["system"] for c in contexts]
    if names[0] == names[1]:
        names = [f"{n} ({Path(d).name})" for n, d in zip(names, results_dirs)]
    frames = [aggregate.load_results(d, UNREAD) for d in results_dirs]
    compared = []
    for bench in registry.all_benches().values():
        both = [f.get(bench.name) for f in frames]
        if bench.presentation.cross is None or any(t is None for t in both):
            continue
        tables_, pngs = bench.presentation.cross(both, names, Path(figures_dir) if figures_dir is not None else None)
        if tables_ or pngs:
            compared.append({"title": bench.title, "tables": tables_, "figures": [
                {"path": os.path.relpath(png, out_md.parent),
                 "caption": registry.captions().get(figures.figure_kind(png), ""),
                 "alt": f"{bench.title.lower()} on each system"} for png in pngs]})
    text = environment().get_template("cross.md.j2").render(
        names=names,
        systems=contexts,
        specs=md_table(["", *names], spec_rows(contexts), right=set()),
        compared=compared,
    )
    atomic_write_text(out_md, tidy(text))
    _refused(out_md, [problem for c in contexts for problem in c["refused"]])
    return out_md


def tidy(text: str) -> str:
    """At most one blank line in a row: templates leave more where a section is skipped."""
    lines: list[str] = []
    for line in text.splitlines():
        if not line.strip() and lines and not lines[-1].strip():
            continue
        lines.append(line.rstrip())
    return "\n".join(lines).strip() + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m numasweep report",
                                     description="render the Markdown report from results and findings")
    parser.add_argument("--results", action="append", required=True,
                        help="results folder; give it twice to compare two systems side by side")
    parser.add_argument("--findings", action="append", default=[],
                        help="findings.json of each --results, in the same order (computed when absent)")
    parser.add_argument("--figures", help="figure folder written by `python -m numasweep figures`")
    parser.add_argument("--section", action="append", default=[],
                        help="a Markdown section to include (fleet.md, comparison.md), in the report's folder")
    parser.add_argument("-o", "--output", required=True, help="Markdown file to write")
    parser.add_argument("--html", help="also the same report as one HTML page (figures embedded), to this file")
    parser.add_argument("--conclude-disturbed", action="store_true",
                        help="findings and headline from jobs measured while disturbed too, said in the first lines "
                             "(config conclude_disturbed)")
    parser.add_argument("--refused-ok", action="store_true",
                        help="where the claims audit refuses findings, write the report (each shown as refused) and "
                             "exit 0 all the same (the workflow's end fails the run instead, keeping the report)")
    args = parser.parse_args(argv)
    if len(args.results) > 2:
        raise NumasweepError("report: give --results once (one system) or twice (two systems side by side)")
    if args.findings and len(args.findings) != len(args.results):
        raise NumasweepError("report: give one --findings per --results, in the same order, or none")
    results = [Path(r) for r in args.results]
    findings = [load_findings(f, r) for f, r in zip(args.findings or [None] * len(results), results)]
    refused = None
    try:
        if len(results) == 1:
            path = render(results[0], findings[0], args.figures, args.output, args.section, args.conclude_disturbed)
        else:
            path = render_cross(results, findings, Path(args.figures) if args.figures else None, Path(args.output))
    except AuditRefused as exc:
        path, refused = Path(args.output), exc
    print(path)
    if args.html:
        print(html.write(path, args.html))
    if refused and not args.refused_ok:
        raise refused
    if refused:
        print(f"numasweep: {refused}", file=sys.stderr)
    return 0
