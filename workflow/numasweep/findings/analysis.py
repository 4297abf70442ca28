"""Findings computed from aggregated results: every number a report states comes from here.

Each benchmark's analyses live in its module (`numasweep.benches`, `Bench.analyse`): pure
functions over its tidy table (the aggregated `<bench>.csv` of docs/INTERFACES.md) and the
topology, returning `list[Finding]`, and `[]` when the data they need is absent. This module holds
what they share: the `Finding` record (its `summary` written from its own `numbers`;
`numbers["claim"]` says whether it claims an effect), the words and interval fields findings are
written with, findings.json's layout, the page-placement check every benchmark that records its
pages gets (`Bench.tables.placement`), and `analyse`, which runs them all over one results folder, one
part after another; each part seeds its own draws, so the same table gives the same findings.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.core.io import REPORT_ONLY, UNREAD, atomic_write_text
from numasweep.core.units import SIZE_BYTES, count_words, page_words, parse_page_fractions, size_words
from numasweep.results import aggregate, disturbed, series
from numasweep.results.tables import nodes as _nodes
from numasweep.statistics.stats import Interval

GRID_PAGES = "pages"       # a sweep's `pages` in an aggregated table: the page size again
PLACEMENT_OK = 0.99      # a rank whose pages are less than 99 % on the requested node(s) is flagged


@dataclass
class Finding:
    id: str
    bench: str
    title: str
    summary: str
    numbers: dict[str, Any] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return _jsonable(self)


# ---------------------------------------------------------------- helpers

def _flat(value: Any) -> bool:
    return isinstance(value, dict) and not any(isinstance(v, (dict, list)) for v in value.values())


def json_text(value: Any, pad: str = "") -> str:
    """findings.json's text: objects and lists one item a line, indented a space a level as
    json.dumps(indent=1) writes them, except a list of flat objects (evidence rows), one object a
    line. A large campaign's placement finding has a row per rank of every job, which the
    indenting encoder spreads over a line a field (a million-row campaign's file: 66,672 evidence
    lines instead of about 600,000, written in 0.38 s instead of 0.70 s here)."""
    inner = pad + " "
    if isinstance(value, dict) and value:
        return "{\n" + ",\n".join(f"{inner}{json.dumps(str(k))}: {json_text(v, inner)}" for k, v in value.items()) \
            + "\n" + pad + "}"
    if isinstance(value, list) and value:
        rows = [json.dumps(v) for v in value] if all(_flat(v) for v in value) else [json_text(v, inner) for v in value]
        return "[\n" + ",\n".join(inner + r for r in rows) + "\n" + pad + "]"
    return json.dumps(value)


def _jsonable(value: Any) -> Any:
    """A finding's value as JSON values: dataclasses as dicts (dataclasses.asdict without its deep
    copy, which a finding's thousands of evidence rows make slow), NaN as null, floats to 4 places."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:   # most values: first, and cheaply
        return value
    if kind is float:
        return None if math.isnan(value) else round(value, 4)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else round(float(value), 4)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def size_text(nbytes: float) -> str:
    return size_words(nbytes)


# How an interval was computed, in the words a reader meets in the report: what it reads the
# noise from. The exact method (test, degrees of freedom, draws) stays in findings.json and is
# explained in docs/STATISTICS.md.
METHOD_WORDS = (
    (re.compile(r"^Welch t interval.*? over (\w+)"), r"the interval from the spread of each side's \1"),
    (re.compile(r"^t interval over (\d+) units'"), r"the interval from the spread over the \1 ranks or runs compared"),
    (re.compile(r"^t interval over (\d+) (\w+)"), r"the interval from the spread over the \1 \2"),
    (re.compile(r"^t interval on the mean log ratio over (\d+) sizes"), r"the interval from the noise at each of the \1 sizes"),
    (re.compile(r"^(?:normal|t) interval .*?from (?:the |the two points' )?within-run spread"),
     "the interval from the spread within each run"),
    (re.compile(r"^percentile bootstrap over (\d+\+?) ([\w ]+?)(?: \(|;|$)"), r"the interval from resampling the \1 \2"),
)


def method_words(method: str) -> str:
    """An interval's method as the report says it: "t interval over 2 units' mean log ratio (1 df)"
    -> "the interval from the spread over the 2 ranks or runs compared"; a method of no known form
    (one that says there is no interval) as it is."""
    for pattern, words in METHOD_WORDS:
        found = pattern.match(str(method))
        if found:
            return found.expand(words)
    return str(method)


def in_parens(name: str) -> str:
    return f" ({name})" if name else ""


# ---------------------------------------------------------------- a series in words, an interval as numbers


def interval_numbers(name: str, interval: Interval | None) -> dict:
    """An interval as numbers: name, name_low, name_high, name_method."""
    if interval is None:
        return {name: None, f"{name}_low": None, f"{name}_high": None, f"{name}_method": None}
    return {name: interval.estimate, f"{name}_low": interval.low, f"{name}_high": interval.high,
            f"{name}_method": interval.method}


def where_text(key: dict, varying: list[str], skip: tuple[str, ...] = ()) -> tuple[str, str, dict]:
    """(sentence opening such as "in concurrent mode with 4k pages", or "" when nothing names the
    series; title suffix; numbers) naming one series."""
    mode, page = str(key.get("mode", "")), str(key.get("page_size", ""))
    locality = str(key.get("locality", "local"))
    parts = [f"in {mode} mode" if mode and "mode" not in skip else "",
             f"with {page_words(page)}" if page and "page_size" not in skip else "",
             f"memory {locality}" if locality not in ("local", "") else ""]
    others = [c for c in varying if c not in ("mode", "page_size", GRID_PAGES, "locality") + skip and c in key]
    name = series.config_name(key, others)
    text = " ".join(p for p in parts + [f"({name})" if name else ""] if p)
    title = ", ".join(x for x in (mode if "mode" not in skip else "",
                                  page_words(page) if page and "page_size" not in skip else "",
                                  locality if locality not in ("local", "") else "", name) if x)
    numbers = {"mode": mode, "page_size": page, "locality": locality, "config": name}
    return text, f" ({title})" if title else "", numbers


# ---------------------------------------------------------------- placement

def placement_verification(frames: dict[str, pd.DataFrame | None]) -> list[Finding]:
    """Per rank or job of each benchmark that records where its pages landed (`Bench.tables.placement`):
    the smallest fraction of the buffer's pages found on the requested node(s), flagged below
    PLACEMENT_OK. Requested = the benchmark's requested-nodes column, or the CPU's node when no
    node was requested."""
    findings = []
    checks = [(b.name, *c) for b in registry.all_benches().values() for c in b.tables.placement]
    for bench, col, req_col, who, what in checks:
        df = frames.get(bench)
        if df is None or df.empty or col not in df or df[col].isna().all():
            continue
        fraction, requested = _placement_fractions(df, col, req_col)
        if not fraction.notna().any():
            continue
        # one line per rank of each job (rank numbers repeat across jobs), at its worst size
        keys = pd.DataFrame({"job_id": df["job_id"] if "job_id" in df else "", who: df[who] if who in df else "",
                             "fraction": fraction})
        keys["job_id"] = keys["job_id"].astype(object).fillna("").astype(str)
        keys = keys[fraction.notna()].reset_index(drop=True)
        at = keys.groupby(list(dict.fromkeys(["job_id", who])))["fraction"].idxmin()
        # those rows, column by column (a large campaign has a line per rank of every job)
        pick = np.flatnonzero(fraction.notna().to_numpy())[at.to_numpy()]

        def picked(values: Any, default: Any = None) -> Any:
            return default if values is None else pd.Series(values).iloc[pick].reset_index(drop=True)

        worst = pd.DataFrame({name: value for name, value in (
            (who, picked(df.get(who), "")), ("job_id", picked(df.get("job_id"), "")),
            ("mode", picked(df.get("mode"), "")), ("cpu", picked(df.get("cpu"))), ("requested", picked(requested)),
            (SIZE_BYTES, picked(df.get(SIZE_BYTES))), ("fraction", picked(fraction)),
            ("page_fractions", picked(df[col])))}, index=pd.RangeIndex(len(pick)))
        worst["job_id"] = worst["job_id"].astype(object).fillna("").astype(str)
        worst = worst.sort_values("fraction", kind="stable")
        bad = worst[worst["fraction"] < PLACEMENT_OK]
        bad_text = "; ".join(f"{who} {r[who]}{' (' + r['mode'] + ')' if r['mode'] else ''} has "
                             f"{r['fraction'] * 100:.1f}% on node(s) {r['requested']}"
                             for _, r in bad.head(5).iterrows())
        findings.append(Finding(
            id="placement", bench=bench, title=f"Placement of {what}",
            summary=(f"{len(worst) - len(bad)} of {len(worst)} {what} have at least {PLACEMENT_OK * 100:.0f}% of their "
                     f"pages on the requested node(s) at every size; lowest {worst['fraction'].min() * 100:.1f}%"
                     + (f"; {bad_text}." if len(bad) else ".")),
            numbers={"checked": len(worst), "flagged": len(bad), "min_fraction": worst["fraction"].min(),
                     "threshold": PLACEMENT_OK},
            evidence=worst[list(dict.fromkeys(("job_id", who, "mode", "cpu", "requested", SIZE_BYTES, "fraction",
                                               "page_fractions")))].to_dict("records"),
        ))
    return findings


def _requested(mem_nodes: Any, cpu_node: Any, cpu_nodes: Any) -> tuple[int, ...]:
    """The nodes a buffer was asked on: `mem_nodes`, else the CPU's node(s)."""
    return _nodes(mem_nodes) or _nodes(cpu_node) or _nodes(cpu_nodes)


def _placement_fractions(df: pd.DataFrame, col: str, req_col: str) -> tuple[pd.Series, pd.Series]:
    """Per row, the fraction of its pages on the requested node(s), NaN where no placement was
    recorded, and those nodes ("0,1"). Computed once per distinct (placement, request): a large
    table repeats a few."""
    cols = list(dict.fromkeys(c for c in (col, req_col, "cpu_node", "cpu_nodes") if c in df))
    codes = df.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    firsts = pd.Series(np.arange(len(df))).groupby(codes).first()
    values = np.full(len(firsts), np.nan)
    asked = np.empty(len(firsts), dtype=object)
    for code, at in firsts.items():
        r = df.iloc[at]
        wanted = _requested(r.get(req_col), r.get("cpu_node"), r.get("cpu_nodes"))
        asked[code] = ",".join(map(str, wanted))
        fr = parse_page_fractions(r[col])
        if fr:
            values[code] = sum(fr.get(n, 0.0) for n in wanted)
    return pd.Series(values[codes], index=df.index), pd.Series(asked[codes], index=df.index)


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def by_job(records: list[disturbed.Left]) -> list[disturbed.Left]:
    """The records of one benchmark and verdict that share a job as one (`disturbed.split` and
    `disturbed.noisy` give one per series, and one job measures several: a bandwidth job every
    kernel at its thread count), so that a job is said on one line: its series named together,
    what they share said once ("1 thread (add, copy, scale and triad)"), the reasons each once."""
    groups: list[list[disturbed.Left]] = []
    for r in records:
        joined = [g for g in groups if any(o.bench == r.bench and o.verdict == r.verdict and set(o.jobs) & set(r.jobs)
                                          for o in g)]
        for g in joined:
            groups.remove(g)
        groups.append([o for g in joined for o in g] + [r])
    out = []
    for g in groups:
        if len(g) == 1:
            out.append(g[0])
            continue
        parts = [[p.strip() for p in r.series.split(",")] for r in g]
        common = [p for p in parts[0] if all(p in q for q in parts[1:])]
        rests = [", ".join(p for p in q if p not in common) for q in parts]
        named = (f"{', '.join(common)} ({_and(rests)})" if common and all(rests)
                 else "; ".join(r.series or "all series" for r in g))
        out.append(disturbed.Left(g[0].bench, named, g[0].verdict, sorted({j for r in g for j in r.jobs}),
                                  list(dict.fromkeys(x for r in g for x in r.reasons))))
    return out


def not_concluded(left: list[disturbed.Left]) -> list[Finding]:
    """One finding per series measured while disturbed, the series of one job as one (`by_job`):
    what was left out and why, and how to measure it again. It claims nothing."""
    return [Finding(
        id="not_concluded", bench=r.bench,
        title=f"Not concluded: {r.bench}{', ' + r.series if r.series else ''}, measured while disturbed",
        summary=(f"{count_words(len(r.jobs), r.bench + ' job')}{' of ' + r.series if r.series else ''} "
                 f"{'was' if len(r.jobs) == 1 else 'were'} measured while "
                 f"disturbed ({'; '.join(r.reasons[:3])}{' ...' if len(r.reasons) > 3 else ''}): no finding is "
                 f"drawn from them. Measure them again on a quiet machine: delete their CSVs under "
                 f"results/<system>/{r.bench}/ ({', '.join(r.jobs[:3])}{' ...' if len(r.jobs) > 3 else ''}) and "
                 "rerun snakemake."),
        numbers={"claim": False, "verdict": r.verdict, "jobs": r.jobs, "reasons": r.reasons, "series": r.series})
        for r in by_job(left)]


# what the kinds written here for every benchmark claim, for the audit (`registry.Claim`)
CLAIMS = {
    "placement": registry.Claim(states=("min_fraction",)),
    "not_concluded": registry.Claim(nothing="names the series measured while disturbed, and concludes nothing"),
}


# ---------------------------------------------------------------- entry points


def analyse(results_dir: str | Path, conclude_disturbed: bool = False) -> dict:
    """All findings for one results folder (results/<system>/ or examples/<name>/): each
    benchmark's analyses (`Bench.analyse`) in the registry's order, then page placement."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise NumasweepError(f"{results_dir}: no such results folder; pass --results results/<system>")
    topo = aggregate.load_topology(results_dir)
    frames = aggregate.load_results(results_dir, tuple(c for c in UNREAD + REPORT_ONLY if c not in disturbed.READ))
    if not frames:
        raise NumasweepError(f"{results_dir}: no aggregated <bench>.csv; run `python -m numasweep aggregate` first")
    # no finding rests on a job measured while disturbed: the analyses see the others, and each
    # series left out is said as not concluded (results.disturbed)
    frames, left = disturbed.split(frames, conclude_disturbed)
    if conclude_disturbed:
        left = []       # concluded all the same: the report's first lines say so
    parts = [part for name, table in frames.items() if registry.get(name).analyse
             for part in registry.get(name).analyse(table, topo)]
    findings = [f for part in parts for f in part()] + placement_verification(frames) + not_concluded(left)
    return {"system": topo.system if topo else results_dir.name, "findings": [f.to_dict() for f in findings]}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m numasweep analyse",
                                description="Compute findings.json from aggregated results.")
    p.add_argument("--results", required=True, help="results/<system> or examples/<name>")
    p.add_argument("-o", "--output", required=True, help="findings.json to write")
    p.add_argument("--conclude-disturbed", action="store_true",
                   help="draw findings from jobs measured while disturbed too (config conclude_disturbed)")
    args = p.parse_args(argv)
    result = analyse(args.results, args.conclude_disturbed)
    atomic_write_text(args.output, json_text(result) + "\n")
    print(f"{args.output}: {len(result['findings'])} findings for {result['system']}")
    return 0
