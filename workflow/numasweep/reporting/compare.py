"""Current results against reference values and against an earlier run of the store.

References follow ReFrame's shape `(value, lower, upper, unit)`: `lower` and `upper` are
fractions of `value` (-0.1 and 0.1: within 10 % either way), null for no bound. Each names a
benchmark, a metric column and the point(s) it holds for (`where`: values of the table's
identity columns; sizes may be written 64K); the measured value is the median over those
points of the median over repetitions.

Against an earlier run, every point both runs measured (same series identity apart from the
host, same axis value) is compared; a point regresses when it moved in the metric's bad
direction by more than the tolerance (latency up, bandwidth down). A series passes when none
of its points regresses. Rows measured on different hosts are compared only when each side
names its hosts, and the table says so. What only one run measured (a benchmark, a series, or
points of a series) has no counterpart: it is listed as not compared, never passed, and a
comparison with another campaign or grid says so in its first sentence (and one warning line).

    python -m numasweep compare --results results/x [--store S --against previous|KEY]
        [--config campaign.yaml] [--tolerance 0.1] -o comparison.md [--json comparison.json]
    python -m numasweep compare --gate comparison.json

It is a gate: each failing check (a reference missed or with no point to hold for, a series
that regressed) is one `numasweep: compare: FAIL ...` line on stderr, and the exit code says the
verdict, for a CI job or a nightly SLURM job: 0 every check passed, 1 one or more failed, 2 an
error (one line), 3 nothing compared (no reference configured and no earlier run of the
campaign: its first run). `--gate FILE` reads a comparison written before (its `--json`) and
says the same without comparing again; `snakemake compare` runs it after the comparison rule.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.core import registry
from numasweep.planning import grid
from numasweep.results import disturbed, series, store
from numasweep.results.aggregate import load_results
from numasweep.core.errors import NumasweepError
from numasweep.core.io import atomic_write_text
from numasweep.reporting.markdown import fmt_value, md_table, md_text
from numasweep.core.units import convert, count_words, metric_unit, parse_size, ranged, size_words

# Identity columns that do not make two runs' points different measurements.
NOT_COMPARED = ("system", "host")
DEFAULT_TOLERANCE = 0.10


def _metrics(bench: str) -> dict[str, bool]:
    """The values a benchmark is judged by, and whether more of each is better (`Bench.checks.metrics`)."""
    spec = registry.get(bench)
    return spec.checks.metrics if spec else {}


@dataclass(frozen=True)
class Reference:
    name: str
    bench: str
    metric: str
    where: dict
    value: float
    lower: float | None
    upper: float | None
    unit: str

    def bounds(self) -> tuple[float, float]:
        low = -math.inf if self.lower is None else self.value * (1 + self.lower)
        high = math.inf if self.upper is None else self.value * (1 + self.upper)
        return low, high


def parse_references(entries: list[dict], source: str = "references") -> list[Reference]:
    """References from a config's `references` list (schema-checked; the checks here are those
    a schema cannot state)."""
    refs = []
    for i, entry in enumerate(entries or []):
        where = f"{source}[{i}]"
        bench, metric = entry["bench"], entry.get("metric") or next(iter(_metrics(entry["bench"])))
        if metric not in _metrics(bench):
            raise NumasweepError(f"{where}.metric: '{metric}' is not judged for {bench}; "
                                 f"one of {', '.join(_metrics(bench))}")
        value, lower, upper, unit = entry["reference"]
        if lower is not None and lower > 0 or upper is not None and upper < 0:
            raise NumasweepError(f"{where}.reference: lower must be <= 0 and upper >= 0 (fractions of the "
                                 f"value, as in ReFrame: [{value}, -0.1, 0.1, {unit}])")
        # The value in the metric's own unit (a reference in ms against a column in ns).
        measured_in = metric_unit(metric)
        if measured_in is not None:
            try:
                value, unit = convert(float(value), str(unit), measured_in), measured_in
            except NumasweepError as exc:
                raise NumasweepError(f"{where}.reference[3]: {exc} ({metric} is in {measured_in})") from None
        refs.append(Reference(entry.get("name") or f"{bench} {metric}", bench, metric,
                              dict(entry.get("where") or {}), float(value), lower, upper, str(unit)))
    return refs


def _matches(table: pd.DataFrame, where: dict, source: str, bench: str) -> pd.Series:
    keep = pd.Series(True, index=table.index)
    for col, want in where.items():
        if col not in table.columns:
            raise NumasweepError(f"{source}.where: no column '{col}' in the results; use an identity "
                                 f"column ({', '.join(c for c in table.columns if not c.startswith('_'))})")
        if col in series.numeric(bench):
            try:
                value = parse_size(want) if isinstance(want, str) and col in series.sizes() else int(want)
            except NumasweepError as exc:
                raise NumasweepError(f"{source}.where.{col}: {exc}") from None
            except ValueError:
                raise NumasweepError(f"{source}.where.{col}: {want!r} is not a whole number; give the "
                                     f"{col} of the points it holds for") from None
            keep &= table[col] == value
        else:
            keep &= table[col].astype(str) == str(want)
    return keep


def point_values(df: pd.DataFrame, bench: str) -> pd.DataFrame:
    """One row per point: the median of each judged metric over repetitions."""
    return series.point_table(df, bench, list(_metrics(bench)))


def check_references(frames: dict[str, pd.DataFrame], refs: list[Reference]) -> list[dict]:
    rows = []
    for i, ref in enumerate(refs):
        low, high = ref.bounds()
        row = {"name": ref.name, "bench": ref.bench, "metric": ref.metric, "where": ref.where,
               "reference": ref.value, "low": low, "high": high, "unit": ref.unit, "measured": None,
               "points": 0, "status": "no data"}
        if ref.bench in frames:
            points = point_values(frames[ref.bench], ref.bench)
            chosen = points[_matches(points, ref.where, f"references[{i}]", ref.bench)]
            values = pd.to_numeric(chosen[ref.metric], errors="coerce").dropna()
            if len(values):
                measured = float(values.median())
                row.update(measured=measured, points=len(values),
                           status="pass" if low <= measured <= high else "fail")
        rows.append(row)
    return rows


def series_name(row: pd.Series, columns: list[str]) -> str:
    parts, sizes = [], series.sizes()
    for col in columns:
        value = row[col]
        shown = size_words(int(value)) if col in sizes and isinstance(value, (int, np.integer)) \
            and value > 0 else series.label(value)
        parts.append(f"{col}={shown}")
    return ", ".join(parts) or "all"


def _axis_values(part: pd.DataFrame, axis: str | None) -> list[int]:
    return sorted(int(v) for v in part[axis]) if axis else []


def compare_runs(now: dict[str, pd.DataFrame], then: dict[str, pd.DataFrame],
                 tolerance: float) -> tuple[list[dict], list[dict], list[dict]]:
    """(one row per series both runs measured, one regression finding per failing series, one
    row per benchmark, series or set of points that only one run measured: `side` "now" or
    "then", `series` None for a whole benchmark, `compared` whether the rest of its series was)."""
    rows, findings, unmatched = [], [], []
    for bench in registry.names():
        if bench not in now and bench not in then:
            continue
        if bench not in now or bench not in then:
            side, table = ("now", now[bench]) if bench in now else ("then", then[bench])
            unmatched.append({"bench": bench, "series": None, "side": side, "compared": False,
                              "points": len(point_values(table, bench)), "at": []})
            continue
        a, b = point_values(now[bench], bench), point_values(then[bench], bench)
        keys = [c for c in series.point_columns(a, bench) if c in b.columns and c not in NOT_COMPARED]
        hosts = [c for c in ("host",) if c in a.columns and c in b.columns]
        both = a.merge(b, on=keys, how="outer", suffixes=("", "_then"), indicator=True)
        axis = registry.get(bench).tables.axis
        axis = axis if axis in keys else None
        ident = [c for c in keys if c != axis]
        # Named by the columns that tell the series of either run apart.
        varying = [c for c in ident if both[c].astype(str).nunique() > 1]
        groups = both.groupby(ident, sort=True, dropna=False, observed=True) if ident else [((), both)]
        for _, whole in groups:
            name = series_name(whole.iloc[0], varying)
            part = whole[whole["_merge"] == "both"]
            for side, flag in (("now", "left_only"), ("then", "right_only")):
                alone = whole[whole["_merge"] == flag]
                if len(alone):
                    unmatched.append({"bench": bench, "series": name, "side": side, "compared": not part.empty,
                                      "points": len(alone), "at": _axis_values(alone, axis)})
            if part.empty:
                continue
            for metric, higher_better in _metrics(bench).items():
                if metric not in part.columns or f"{metric}_then" not in part.columns:
                    continue
                ratio = (pd.to_numeric(part[metric], errors="coerce")
                         / pd.to_numeric(part[f"{metric}_then"], errors="coerce")).to_numpy(float)
                ok = np.isfinite(ratio)
                if not ok.any():
                    continue
                # The change in the bad direction: > 0 means worse.
                worse = np.where(higher_better, 1 / ratio, ratio) - 1
                regressed = ok & (worse > tolerance)
                worst = int(np.nanargmax(np.where(ok, worse, -np.inf)))
                at = part[axis].iloc[worst] if axis else None
                row = {
                    "bench": bench, "series": name, "metric": metric, "points": int(ok.sum()),
                    "regressed": int(regressed.sum()), "worst_ratio": float(ratio[worst]),
                    "worst_at": None if at is None else int(at), "axis": axis,
                    "hosts_now": ",".join(sorted(set(part["host"].astype(str)))) if hosts else "",
                    "hosts_then": ",".join(sorted(set(part["host_then"].astype(str)))) if hosts else "",
                    "status": "fail" if regressed.any() else "pass",
                }
                rows.append(row)
                if regressed.any():
                    findings.append(regression_finding(row, part, ratio, regressed, higher_better, tolerance))
    return rows, findings, unmatched


def _axis_text(value: int, axis: str | None) -> str:
    return count_words(value, "thread") if axis == "threads" else size_words(value)


def _at(row: dict) -> str:
    return "" if row["worst_at"] is None else _axis_text(row["worst_at"], row["axis"])


def regression_finding(row: dict, part: pd.DataFrame, ratio: np.ndarray, regressed: np.ndarray,
                       higher_better: bool, tolerance: float) -> dict:
    axis = row["axis"]
    evidence = [{**({axis: int(part[axis].iloc[i])} if axis else {}), "now": float(part[row["metric"]].iloc[i]),
                 "then": float(part[f"{row['metric']}_then"].iloc[i]), "ratio": round(float(ratio[i]), 3)}
                for i in np.flatnonzero(regressed)]
    word = "lower" if higher_better else "higher"
    hosts = (f" (hosts now {row['hosts_now']}, then {row['hosts_then']})"
             if row["hosts_now"] != row["hosts_then"] else "")
    return {
        "id": "regression", "bench": row["bench"],
        "title": f"Regression: {row['bench']} {row['series']}",
        "summary": (f"{row['metric']} is {word} than the earlier run beyond the {tolerance:.0%} tolerance at "
                    f"{row['regressed']} of {row['points']} points; worst {row['worst_ratio']:.2f}x the earlier "
                    f"value at {_at(row) or 'its point'}{hosts}."),
        "numbers": {k: row[k] for k in ("metric", "points", "regressed", "worst_ratio", "worst_at")}
        | {"tolerance": tolerance},
        "evidence": evidence,
    }


def _bound(value: float) -> str:
    return "" if not math.isfinite(value) else fmt_value(value, 2)


def coverage(rows: list[dict], unmatched: list[dict], now: str, then: str) -> str | None:
    """The sentence that opens a comparison of two runs that did not measure the same grid (or
    are of two campaigns): what was compared, and what was not for want of a counterpart."""
    if not unmatched and now == then:
        return None
    compared = sum(max(r["points"] for r in rows if (r["bench"], r["series"]) == key)
                   for key in {(r["bench"], r["series"]) for r in rows})
    benches = [u["bench"] for u in unmatched if u["series"] is None]
    alone = sum(u["series"] is not None and not u["compared"] for u in unmatched)
    points = sum(u["points"] for u in unmatched if u["series"] is not None and u["compared"])
    head = (f"**Across campaigns**: this run of campaign {md_text(now)} against a run of campaign {md_text(then)}"
            if now != then
            else "**Across grids**: the two runs of this campaign measured different grids")
    lost = [text for n, text in ((len(benches), count_words(len(benches), "benchmark")
                                  + (f" ({', '.join(benches)})" if benches else "")),
                                 (alone, f"{alone} series"),
                                 (points, f"{count_words(points, 'point')} of compared series")) if n]
    said = (f"{count_words(compared, 'point')} have a counterpart and are compared"
            + (f"; not compared, for want of one (listed under *Not compared*): {', '.join(lost)}."
               if lost else "; every point has one."))
    return f"{head}: {said}"


def _axis_list(values: list[int], axis: str | None, most: int = 6) -> str:
    shown = [_axis_text(v, axis) for v in values[:most]]
    return ", ".join(shown) + (f", ... ({len(values)} in all)" if len(values) > most else "")


def markdown(refs: list[dict], rows: list[dict], findings: list[dict], against: str | None,
             tolerance: float, note: str | None = None, unmatched: list[dict] = (),
             across: str | None = None) -> str:
    out = ["## Comparison with earlier results", ""] + ([across, ""] if across else []) + ([md_text(note), ""] if note else [])
    if refs:
        passed = sum(r["status"] == "pass" for r in refs)
        out += ["### References", "",
                f"{passed} of {len(refs)} reference values pass (ReFrame's (value, lower, upper, unit): "
                "the measured value must lie in value x (1 + lower) .. value x (1 + upper)).", "",
                md_table(["reference", "benchmark", "metric", "where", "measured", "reference value",
                          "allowed range", "unit", "status"],
                         [[r["name"], r["bench"], r["metric"],
                           ", ".join(f"{k}={v}" for k, v in r["where"].items()) or "all points",
                           "" if r["measured"] is None else fmt_value(r["measured"], 2), fmt_value(r["reference"], 2),
                           f"{_bound(r['low'])} .. {_bound(r['high'])}", r["unit"], r["status"].upper()]
                          for r in refs], right={4, 5}), ""]
    if against is not None:
        failed = sum(r["status"] == "fail" for r in rows)
        out += [f"### Against {md_text(against)}", ""]
        if not rows:
            out += ["The two runs measured no point in common.", ""]
        else:
            which = "compared series pass on the points both runs measured" if unmatched else "series pass"
            out += [f"{len(rows) - failed} of {len(rows)} {which}: a series fails when any of its points "
                    f"moved in the bad direction (latency up, bandwidth down) by more than {tolerance:.0%}.", ""]
            if any(r["hosts_now"] != r["hosts_then"] for r in rows):
                out += ["Some series were measured on other hosts than in the earlier run (columns *hosts*): "
                        "their differences may come from the machines, not from a change.", ""]
            out += [md_table(["benchmark", "series", "metric", "points", "regressed", "worst ratio (now/then)",
                              "at", "hosts now", "hosts then", "status"],
                             [[r["bench"], r["series"], r["metric"], r["points"], r["regressed"],
                               f"{r['worst_ratio']:.3f}", _at(r), r["hosts_now"], r["hosts_then"],
                               r["status"].upper()] for r in rows], right={3, 4, 5}), ""]
        if unmatched:
            axis = {b: registry.get(b).tables.axis for b in {u["bench"] for u in unmatched}}
            out += ["### Not compared", "",
                    "Measured by one run only, so neither passed nor failed:", "",
                    md_table(["benchmark", "series", "measured by", "points", "at"],
                             [[u["bench"], "the whole benchmark" if u["series"] is None else u["series"],
                               "this run" if u["side"] == "now" else "the earlier run", u["points"],
                               _axis_list(u["at"], axis[u["bench"]])] for u in unmatched], right={3}), ""]
    if findings:
        out += ["### Regressions", ""]
        out += [f"- **{md_text(f['title'])}**: {md_text(f['summary'])}" for f in findings] + [""]
    return "\n".join(out)


def compare(results_dir: Path, references: list[Reference], store_path: Path | None, against: str | None,
            tolerance: float, current: str | None = None, campaign: str | None = None) -> dict:
    # a series measured while disturbed passes or fails nothing, on either side (results.disturbed)
    frames, held = disturbed.split(load_results(results_dir))
    ref_rows = check_references(frames, references)
    rows: list[dict] = []
    findings = [{"id": "reference_fail", "bench": r["bench"], "title": f"Reference missed: {r['name']}",
                 "summary": (f"{r['metric']} measured {fmt_value(r['measured'], 2)} {r['unit']}, outside "
                             f"{_bound(r['low'])} .. {_bound(r['high'])} (reference {fmt_value(r['reference'], 2)})."
                             if r["measured"] is not None else "no measured point matches this reference."),
                 "numbers": {k: r[k] for k in ("measured", "reference", "points")}, "evidence": []}
                for r in ref_rows if r["status"] != "pass"]
    earlier, note, unmatched, across = None, None, [], None
    if against:
        if store_path is None or not store_path.exists() and against != "previous":
            raise NumasweepError(f"compare: no results store{f' {store_path}' if store_path else ''} to find "
                                 f"'{against}' in; give --store (store.path of the config)")
        # `previous`: the previous run of this campaign on this topology, from whatever folder it
        # was recorded (a moved or copied checkout, a copied store, another path to one folder);
        # a changed grid is said by `coverage`.
        system = store.system_of(results_dir)
        campaign = store.campaign_of(results_dir, campaign)
        same = store.runs(store_path, system, campaign) if store_path.exists() else []
        if against == "previous" and not [r for r in same if r.run_key != current]:
            # The first run of a campaign: nothing to compare with yet, which is no error.
            note = (f"No earlier run of {campaign} ({system}) in {store_path}: this run is the "
                    "first, the next one compares with it.")
        else:
            earlier = store.find(store_path, against, system, current, campaign)
            then, held_then = disturbed.split(store.tables(store_path, earlier.run_key))
            held += [dataclasses.replace(r, series=f"{r.series} (the earlier run)") for r in held_then]
            rows, run_findings, unmatched = compare_runs(frames, then, tolerance)
            findings += run_findings
            across = coverage(rows, unmatched, campaign, earlier.campaign or campaign)
    if held:
        said = "; ".join(r.sentence() for r in held)
        note = " ".join(x for x in (note, f"Measured while disturbed, so neither passed nor failed: {said}.") if x)
    text = markdown(ref_rows, rows, findings, earlier.describe() if earlier else None, tolerance, note, unmatched,
                    across)
    return {"against": earlier.run_key if earlier else None, "note": note, "across": across, "tolerance": tolerance,
            "disturbed": [r.sentence() for r in held],
            "references": ref_rows, "series": rows, "not_compared": unmatched, "findings": findings, "markdown": text}


# The exit codes of a comparison (module docstring); 2 is every command's error (numasweep.__main__).
PASSED, FAILED, NOTHING_COMPARED = 0, 1, 3


def failing(result: dict) -> list[str]:
    """Each failing check of a comparison (`compare`'s result, or its JSON) in one line."""
    lines = []
    for r in result.get("references", []):
        if r["status"] == "pass":
            continue
        if r.get("measured") is None:
            lines.append(f"reference {r['name']}: no measured point of {r['bench']} {r['metric']} matches it")
        else:
            lines.append(f"reference {r['name']}: {r['metric']} measured {fmt_value(r['measured'], 2)} {r['unit']}, "
                         f"outside {_bound(r['low'])} .. {_bound(r['high'])} (reference {fmt_value(r['reference'], 2)})")
    for r in result.get("series", []):
        if r["status"] == "pass":
            continue
        at = "" if r.get("worst_at") is None else f" ({_axis_text(r['worst_at'], r.get('axis'))})"
        lines.append(f"regression {r['bench']}, {r['series']}, {r['metric']}: {r['regressed']} of {r['points']} "
                     f"points over {result.get('tolerance', DEFAULT_TOLERANCE):.0%} worse than the earlier run, "
                     f"at worst {r['worst_ratio']:.2f}x{at}")
    return lines


def _one_line(text: str) -> str:
    """`text` on one console line: each control character written as its escape (\n, \t, \x1b)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def verdict(result: dict, where: str) -> int:
    """The comparison's exit code (PASSED, FAILED, NOTHING_COMPARED), said in one line each: its
    failing checks and that verdict on stderr, a pass or nothing compared on stdout."""
    lines = failing(result)
    checks = len(result.get("references", [])) + len(result.get("series", []))
    for line in lines:  # one line each, whatever a name holds (a newline is shown as \n)
        print(f"numasweep: compare: FAIL {_one_line(line)}", file=sys.stderr)
    if lines:
        print(f"numasweep: compare: {len(lines)} of {checks} checks failed ({where})", file=sys.stderr)
        return FAILED
    if not checks:
        print(f"numasweep: compare: nothing compared: no reference and no earlier run to compare with ({where}); "
              "exit 3")
        return NOTHING_COMPARED
    print(f"numasweep: compare: all {checks} checks passed ({where})")
    return PASSED


def gate(path: Path) -> int:
    try:
        result = json.loads(path.read_text())
    except FileNotFoundError:
        raise NumasweepError(f"compare --gate {path}: no such file; run the comparison first "
                             "(python -m numasweep compare ... --json FILE, or snakemake compare)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise NumasweepError(f"compare --gate {path}: not a comparison's JSON ({exc}); write it again with "
                             "python -m numasweep compare ... --json FILE") from None
    if not isinstance(result, dict) or not isinstance(result.get("references"), list) \
            or not isinstance(result.get("series"), list):
        raise NumasweepError(f"compare --gate {path}: not a comparison's JSON (no references and series lists); "
                             "write it again with python -m numasweep compare ... --json FILE")
    return verdict(result, str(path).removesuffix(".json") + ".md")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m numasweep compare", description=__doc__.splitlines()[0])
    ap.add_argument("--gate", type=Path, metavar="JSON",
                    help="only say the verdict of a comparison written before (its --json), as its exit code")
    ap.add_argument("--results", type=Path, help="the current results folder")
    ap.add_argument("--store", type=Path, help="the results store (store.path)")
    ap.add_argument("--against", help="`previous` or a run key (prefix) from `python -m numasweep store list`")
    ap.add_argument("--campaign", help="the config's `system` (default: the results folder's name)")
    ap.add_argument("--current", help="the current run's key (to skip it as `previous`); default: the latest")
    ap.add_argument("--config", type=Path, help="a config file whose `references` and `compare` to use")
    ap.add_argument("--settings", help="the same as JSON ({\"references\": [...], \"compare\": {...}})")
    ap.add_argument("--tolerance", type=ranged(float, 0, 10), help=f"regression threshold, a fraction, 0 to 10 (default {DEFAULT_TOLERANCE})")
    ap.add_argument("-o", "--output", type=Path, help="the Markdown section to write")
    ap.add_argument("--json", type=Path, help="the table and findings as JSON")
    args = ap.parse_args(argv)
    if args.gate:
        return gate(args.gate)
    if not args.results or not args.output:
        ap.error("give --results and -o (or --gate JSON for the verdict of a comparison written before)")
    config, source = {}, "references"
    if args.config:
        config, source = grid.load_config_file(args.config), f"{args.config}: references"
    elif args.settings:
        try:
            config, source = json.loads(args.settings), "--settings: references"
        except json.JSONDecodeError as exc:
            raise NumasweepError(f"--settings is not JSON ({exc.msg})") from None
    config = grid.validate_config(config, str(args.config or "--settings")) if config else config
    refs = parse_references(config.get("references") or [], source)
    tolerance = args.tolerance if args.tolerance is not None else \
        (config.get("compare") or {}).get("tolerance", DEFAULT_TOLERANCE)
    if not 0 <= tolerance < 10:
        raise NumasweepError(f"--tolerance {tolerance}: give a fraction, e.g. 0.1 for 10%")
    against = args.against or (config.get("compare") or {}).get("against")
    if not refs and not against:
        if not args.store:
            raise NumasweepError("compare: nothing to compare with; give --store (its previous run of this "
                                 "campaign), --against a run key or a --config with `references`")
        # Nothing configured (a bare `snakemake compare`): the previous run of the same campaign.
        against = "previous"
    current = args.current
    if against == "previous" and current is None and args.store and args.store.exists():
        # The current results may already be in the store: then `previous` is the run before.
        current = _current_key(args.results)
    result = compare(args.results, refs, args.store, against, tolerance, current, args.campaign)
    atomic_write_text(args.output, result.pop("markdown") + "\n")
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=2, default=str) + "\n")
    if against == "previous" and result["against"] is None:
        print(f"numasweep: {args.output}: no earlier run of campaign {store.campaign_of(args.results, args.campaign)} "
              f"in {args.store}: this is its first run, the next one compares with it", file=sys.stderr)
    if result["across"]:
        # The sentence without its Markdown emphasis, and the fix.
        print(f"numasweep: warning: {args.output}: {result['across'].replace('**', '')} For a full comparison, "
              "compare with a run of the same campaign and grid (--against previous)", file=sys.stderr)
    return verdict(result, str(args.output))


def _current_key(results_dir: Path) -> str:
    """The run key the current results would be recorded under (store.record's key)."""
    return store.run_key(load_results(results_dir))
