"""One tidy table per benchmark: every job's CSV rows with its grid values and provenance.

Each job leaves `<id>.csv` (the kernel's rows) and `<id>.json` (provenance.py: its grid values,
host, build, times). The aggregated table keeps every kernel column and adds `job_id`, the
grid columns and the provenance columns, one row per measurement.

    python -m numasweep aggregate -o results/x/latency.csv [--keep-going] results/x/latency/*.csv

A missing or malformed file stops the aggregation with one line naming it; with
`--keep-going` (config `aggregate.keep_going`) the readable jobs are kept and the problems
are listed in `<output folder>/aggregate_problems.json`. Jobs whose CSVs share a header are
parsed in one go (a fleet's 10,000 jobs in about 20 s here instead of 60 s); any problem sends the
aggregation back to reading file by file, so the error names its file as before.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.core import registry
from numasweep.core.registry import Bench
from numasweep.core.topology import Topology
from numasweep.results import quality, series
from numasweep.core.errors import NumasweepError
from numasweep.core.io import TABLE_FILE, atomic_write, atomic_write_text, read_csv
from numasweep.running import verdict
from numasweep.running.provenance import COLUMNS as PROVENANCE_COLUMNS

# A kernel CSV without its benchmark's `required` columns (`Bench.tables.required`) is malformed; each
# `positive` column must hold finite numbers above zero: a non-numeric, empty, zero, negative or
# infinite cell stops aggregation (and a cached report) naming the file, line and column,
# instead of failing later inside a plot.
# The fix for a bad cell, by where the table came from.
FIX_JOB = "delete {path} and rerun its job (snakemake measures it again)"
FIX_TABLE = ("correct that cell or delete the row; for a measured sweep delete {path} and rerun "
             "snakemake, which aggregates it again from the job CSVs")


def check_values(df: pd.DataFrame, path: Path, bench: str, fix: str, first: int = 0) -> None:
    """Refuse the first cell of a `positive` column that is not a finite number above zero (`df`
    the file's data rows from row `first`, 0-based, as `read_csv` hands a chunk)."""
    import numpy as np

    spec = registry.get(bench)
    for column in spec.tables.positive if spec else ():
        if column not in df.columns:
            continue
        raw = df[column]
        values = pd.to_numeric(raw, errors="coerce")
        bad = values.isna() | ~np.isfinite(values.fillna(0)) | (values <= 0)
        if bad.any():
            at = int(np.flatnonzero(bad.to_numpy())[0])
            row = first + at
            cell = raw.iloc[at]
            what = ("empty" if pd.isna(cell) or str(cell).strip() == "" else
                    "not a number" if pd.isna(values.iloc[at]) else
                    "not finite" if not np.isfinite(values.iloc[at]) else
                    "zero" if values.iloc[at] == 0 else "negative")
            shown = "" if pd.isna(cell) else str(cell)
            if pd.isna(cell):
                # pandas reads "n/a", "NA", "null", ... as missing: say what the file holds
                shown = _raw_cell(path, row, column)
                what = "empty" if shown.strip() == "" else "not a number"
            shown = shown if len(shown) <= 40 else shown[:40] + "..."
            raise NumasweepError(
                f"{path}: line {row + 2} (data row {row + 1}), column '{column}': '{shown}' is {what}, "
                f"expected a finite number above zero; {fix.format(path=path)}"
            )


# Columns that tell repetitions and runs of one grid point apart, beside a benchmark's series
# columns and axis: together they name one point; two rows of one point are one measurement twice.
POINT_KEYS = ("job_id", "repetition", "host", "label")


def check_points(df: pd.DataFrame, path: Path | str, bench: str, fix: str, lines: bool = True) -> None:
    """Refuses two rows of one grid point (the same series columns, axis and repetition): the
    analysis would pool them as one point's runs (a median of 4.1 and 12.4 ns, then an outlier),
    whereas one of them is wrong. One line naming both rows (data lines of `path` where `lines`)."""
    spec = registry.get(bench)
    if spec is None or df.empty:
        return
    keys = [c for c in dict.fromkeys((*spec.tables.series, *((spec.tables.axis,) if spec.tables.axis else ()), *POINT_KEYS)) if c in df]
    if not keys:
        return
    twice = df.duplicated(keys, keep=False)
    if not twice.any():
        return
    rows = np.flatnonzero(twice.to_numpy())
    first = rows[0]
    same = [r for r in rows[1:] if df.iloc[r][keys].equals(df.iloc[first][keys])]
    second = same[0] if same else rows[1]
    value = next((c for c in spec.tables.positive if c in df and c != spec.tables.axis), None)
    values = (f" with {value} {df.iloc[first][value]} and {df.iloc[second][value]}" if value else "")
    point = ", ".join(f"{k}={df.iloc[first][k]}" for k in keys if str(df.iloc[first][k]) not in ("", "nan"))
    where = f"lines {first + 2} and {second + 2}" if lines else "two rows"
    raise NumasweepError(f"{path}: {where} are one grid point ({point}){values}: a point measured twice is not "
                         f"two runs; {fix}")


def _raw_cell(path: Path, row: int, column: str) -> str:
    """The text of one cell as the file holds it (data row `row`, 0-based), "" when unreadable."""
    import csv
    import itertools

    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            line = next(itertools.islice(reader, row, None))
        return line[header.index(column)]
    except (OSError, StopIteration, ValueError, IndexError, UnicodeDecodeError, csv.Error):
        return ""


def read_job(csv: Path, bench: str) -> pd.DataFrame:
    """One job's rows with job_id, grid and provenance columns, or a NumasweepError naming the file."""
    spec = registry.get(bench)
    df = read_csv(csv, spec.tables.required if spec else (),
                  check=lambda chunk, first: check_values(chunk, csv, bench, FIX_JOB, first))
    if df.empty:
        raise NumasweepError(f"{csv}: no rows; delete it and rerun its job")
    for name, value in job_columns(csv, list(df.columns)).items():
        df[name] = value
    return df


def job_columns(csv: Path, columns: list[str]) -> dict:
    """The columns a job adds to its kernel's (`columns`): job_id, its grid values and its
    provenance, or a NumasweepError naming its provenance record."""
    meta_path = csv.with_suffix(".json")
    if not meta_path.exists():
        raise NumasweepError(f"{meta_path}: no provenance record for {csv.name}; rerun its job")
    try:
        meta = json.loads(meta_path.read_text())
        grid = dict(meta["grid"])
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise NumasweepError(f"{meta_path}: malformed provenance record ({exc}); rerun its job") from None
    # A job that ran its kernel more than once (repeat_until, statistics.repeat) numbers the runs
    # in its table's own `repetition` column, which stands for the grid's.
    if series.REPETITION in columns:
        grid.pop(series.REPETITION, None)
    clash = sorted(set(grid) & set(columns))
    if clash:
        raise NumasweepError(
            f"{meta_path}: grid column(s) {', '.join(clash)} clash with the kernel's columns"
        )
    extra = {"job_id": meta.get("job_id", csv.stem), **grid}
    extra.update({f"prov_{c}" if c in columns else c: meta.get(c) for c in PROVENANCE_COLUMNS})
    # The machine state it measured in (sys_* columns), for the report's data-quality notes.
    if "system" in meta:
        try:
            extra.update(quality.columns(meta["system"]))
        except NumasweepError as exc:
            raise NumasweepError(f"{meta_path}: malformed provenance record: {exc}; rerun its job") from None
    # Its quality verdict (quality, quality_reason, quality_tries); results of before it have none.
    if isinstance(meta.get("quality"), dict):
        extra.update(verdict.columns(meta["quality"]))
    return extra


# The job CSVs read in one parse hold at most this many bytes together (a thousand jobs of 64 KiB).
ONE_PARSE_BYTES = 64 << 20


def _read_all(csvs: list[Path], bench: str) -> pd.DataFrame | None:
    """Every job in one parse, when their CSVs share a header and every file and record is sound:
    a large campaign's thousands of small files cost milliseconds each read one by one. None
    otherwise, and the jobs are read one by one (`read_job`), which names a problem's file."""
    import io

    import numpy as np

    header, bodies, rows = None, [], []
    total = 0
    for csv in csvs:
        try:
            # small files only, held at once: a large one is read_job's, which streams it
            total += Path(csv).stat().st_size
            if total > ONE_PARSE_BYTES:
                return None
            head, _, body = Path(csv).read_text(encoding="utf-8").partition("\n")
        except (OSError, UnicodeDecodeError):
            return None
        if header is None:
            header = head
        lines = body.count("\n") + (not body.endswith("\n"))
        if head != header or not body.strip() or body.count("\n\n") or body.count("\r"):
            return None
        bodies.append(body if body.endswith("\n") else body + "\n")
        rows.append(lines)
    if header is None:
        return None
    try:
        df = pd.read_csv(io.StringIO(header + "\n" + "".join(bodies)))
        del bodies
        spec = registry.get(bench)
        required = spec.tables.required if spec else ()
        if len(df) != sum(rows) or any(c not in df.columns for c in required):
            return None
        check_values(df, Path(csvs[0]), bench, FIX_JOB)
        extras = pd.DataFrame([job_columns(Path(csv), list(df.columns)) for csv in csvs])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, NumasweepError):
        return None
    extras = extras.iloc[np.repeat(np.arange(len(csvs)), rows)].reset_index(drop=True)
    return pd.concat([df, extras], axis=1)


def _check_job_points(table: pd.DataFrame, bench: str) -> None:
    check_points(table, f"{bench} job results", bench, "a job CSV repeats a row (or is given twice): delete that "
                 "job's CSV and rerun snakemake, which measures it again", lines=False)


def aggregate(csvs: list[Path], bench: str, keep_going: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """All jobs of one benchmark in one table, plus the problems skipped under keep_going."""
    table = _read_all(csvs, bench)
    if table is not None:
        table.insert(0, "job_id", table.pop("job_id"))
        _check_job_points(table, bench)
        return table, []
    frames: list[pd.DataFrame] = []
    problems: list[str] = []
    for csv in csvs:
        try:
            frames.append(read_job(Path(csv), bench))
        except NumasweepError as exc:
            if not keep_going:
                raise
            problems.append(str(exc))
    if not frames:
        raise NumasweepError(
            f"{bench}: no readable job result ({len(problems)} problem(s): {problems[0] if problems else 'no input'})"
        )
    table = pd.concat(frames, ignore_index=True, sort=False)
    del frames
    _check_job_points(table, bench)
    # job_id first: it names the grid point (and the files) a row comes from; moved in place, the
    # table is not copied.
    table.insert(0, "job_id", table.pop("job_id"))
    return table, problems


def write(table: pd.DataFrame, problems: list[str], output: Path) -> None:
    """The aggregated CSV and the problems skipped."""
    atomic_write(output, lambda fh: table.to_csv(fh, index=False))
    problems_file = output.parent / "aggregate_problems.json"
    key = output.stem
    current = json.loads(problems_file.read_text()) if problems_file.exists() else {}
    if problems:
        current[key] = problems
    else:
        current.pop(key, None)
    if current:
        atomic_write_text(problems_file, json.dumps(current, indent=2) + "\n")
    elif problems_file.exists():
        problems_file.unlink()


def load_topology(results_dir: str | os.PathLike) -> Topology | None:
    """`topology.json` of a results folder, or None when the folder has none."""
    path = Path(results_dir) / "topology.json"
    if not path.exists():
        return None
    return Topology.from_json(path.read_text(), str(path))


def load_results(results_dir: str | os.PathLike, skip: tuple[str, ...] = ()) -> dict[str, pd.DataFrame]:
    """The aggregated table of every benchmark present in a results folder, by bench name,
    without the columns in `skip` (`io.UNREAD`: those no report step reads)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise NumasweepError(f"{results_dir}: no such results folder; give the folder that holds "
                             "topology.json and the aggregated <bench>.csv files")
    frames = {}
    for bench in registry.all_benches().values():
        path = results_dir / f"{bench.name}.csv"
        if path.exists():
            frames[bench.name] = read_table(path, bench, skip)
    return frames


def read_table(path: Path, bench: Bench, skip: tuple[str, ...] = ()) -> pd.DataFrame:
    """An aggregated table as analysis, figures and a cached report read it: its text columns as
    categoricals, the columns in `skip` left out, its `required` columns present and at least
    one row (else one line naming the file and the fix), each `positive` cell checked
    (`check_values`)."""
    df = read_csv(path, skip=skip, codes=True, keep=bench.tables.positive, limit=TABLE_FILE,
                  check=lambda chunk, first: check_values(chunk, path, bench.name, FIX_TABLE, first))
    # required columns are checked in the header: a caller may skip one it does not read
    header = df.columns if not set(skip) & set(bench.tables.required) else pd.read_csv(path, nrows=0).columns
    missing = [c for c in bench.tables.required if c not in header]
    if missing:
        raise NumasweepError(
            f"{path}: no column {', '.join(repr(c) for c in missing)} (a {bench.name} table needs "
            f"{', '.join(bench.tables.required)}); restore the column, or for a measured sweep delete {path} and rerun "
            "snakemake, which aggregates it again from the job CSVs")
    if df.empty:
        raise NumasweepError(
            f"{path}: a header and no rows, nothing to analyse; delete {path} and rerun snakemake, which "
            "aggregates it again from the job CSVs (or leave the file out to report without it)")
    check_points(df, path, bench.name, "delete the wrong row, or for a measured sweep delete the table and "
                                       "rerun snakemake, which aggregates it again from the job CSVs")
    return df


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m numasweep aggregate", description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", type=Path, help="per-job CSVs of one benchmark")
    ap.add_argument("-o", "--output", required=True, type=Path, help="results/<system>/<bench>.csv")
    ap.add_argument("--bench", help="benchmark name (default: the output's file name)")
    ap.add_argument("--keep-going", action="store_true", help="skip missing or malformed jobs, listing them")
    args = ap.parse_args(argv)
    bench = args.bench or args.output.stem
    table, problems = aggregate(args.csv, bench, args.keep_going)
    write(table, problems, args.output)
    rows = len(table)
    for p in problems:
        print(f"numasweep: warning: skipped {p}")
    print(f"{args.output}: {rows} rows from {len(args.csv) - len(problems)} job(s)")
    return 0
