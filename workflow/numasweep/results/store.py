"""The results store: every finished run in one SQLite file, keyed by its provenance.

A *run* is what one results folder holds after aggregation: the aggregated `<bench>.csv`
tables. Each job of a table is keyed by its provenance (job id, launch line, host, start,
end, SLURM job, kernel commit, topology digest: the provenance columns aggregation copies
from `<job-id>.json`) and the digest of its rows; the run key is the digest of its jobs'
keys. Recording the same results twice therefore adds nothing, and a rerun of one job makes
a new run. The store keeps each table whole (CSV text), so an earlier run is read back with
the same code that reads the current one (`numasweep.reporting.compare`).

Why SQLite: it ships with Python (`sqlite3`, no new dependency on a cluster's login node),
it is one file a campaign can copy or archive, several writers (two workflows on one file
system) are serialised by its own locking, and `sqlite3 results/store.sqlite` answers ad-hoc
questions with SQL. Tables are a few MB of CSV at most, so a columnar format (DuckDB,
Parquet) would buy nothing here and cost a dependency.

    python -m numasweep store record --results results/x --store results/store.sqlite [--campaign x] [-o stored.json]
    python -m numasweep store list --store results/store.sqlite [--system TOPOLOGY] [--campaign x]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import json
import re
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from numasweep.core.errors import NumasweepError, disk_full
from numasweep.results.aggregate import load_results, load_topology
from numasweep.core.io import atomic_write_text
from numasweep.running import verdict
from numasweep.running.provenance import COLUMNS as PROVENANCE_COLUMNS

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_key  TEXT PRIMARY KEY,  -- sha256 over the sorted job keys
    system   TEXT NOT NULL,
    recorded TEXT NOT NULL,     -- UTC time it entered the store
    started  TEXT,              -- earliest job start, latest job end (provenance)
    ended    TEXT,
    hosts    TEXT NOT NULL,     -- comma list of the hosts that measured
    source   TEXT NOT NULL,     -- the results folder it was recorded from, as given
    campaign TEXT NOT NULL DEFAULT '',  -- the config's `system` (schema 2)
    folder   TEXT NOT NULL DEFAULT ''   -- the results folder, absolute ('' when recorded before schema 2)
);
CREATE TABLE IF NOT EXISTS jobs (
    run_key  TEXT NOT NULL REFERENCES runs(run_key),
    bench    TEXT NOT NULL,
    job_id   TEXT NOT NULL,
    job_key  TEXT NOT NULL,     -- sha256 over the job's provenance columns and rows
    host     TEXT,
    start    TEXT,
    end      TEXT,
    provenance TEXT NOT NULL,   -- the provenance columns as JSON
    PRIMARY KEY (run_key, bench, job_id)
);
CREATE TABLE IF NOT EXISTS tables (
    run_key TEXT NOT NULL REFERENCES runs(run_key),
    bench   TEXT NOT NULL,
    csv     TEXT NOT NULL,      -- the aggregated table as recorded
    PRIMARY KEY (run_key, bench)
);
"""


# PRAGMA user_version of a store. 1: runs keyed by the topology's name only; 2: runs also carry
# their campaign (the config's `system`) and absolute results folder, so that `previous` is the
# previous run of the same campaign, not another campaign's on the same topology. The folder says
# where a run was recorded from; it is no part of its identity (a checkout moves).
SCHEMA_VERSION = 2
RUN_COLUMNS = ("run_key", "system", "recorded", "started", "ended", "hosts", "source", "campaign", "folder")


@dataclass(frozen=True)
class Run:
    run_key: str
    system: str
    recorded: str
    started: str | None
    ended: str | None
    hosts: str
    source: str
    campaign: str = ""
    folder: str = ""

    @property
    def short(self) -> str:
        return self.run_key[:12]

    def describe(self) -> str:
        when = self.started or self.recorded
        name = self.system if self.campaign in ("", self.system) else f"{self.campaign} on {self.system}"
        return f"run {self.short} ({name}, {when}, on {self.hosts or 'unknown hosts'})"


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _text(value: object) -> str | None:
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def host_column(df: pd.DataFrame) -> str | None:
    """The host a row was measured on: the kernel's `host`, else the provenance's."""
    for col in ("host", "prov_host"):
        if col in df.columns:
            return col
    return None


def job_records(bench: str, df: pd.DataFrame) -> list[dict]:
    """One record per job of an aggregated table: its provenance columns and key. A table
    without `job_id` (an imported legacy table) is one job named after its benchmark."""
    groups = df.groupby("job_id", sort=True) if "job_id" in df.columns else [(bench, df)]
    host = host_column(df)
    records = []
    for job_id, rows in groups:
        prov = {c: _text(rows[c].iloc[0]) for c in PROVENANCE_COLUMNS if c in rows.columns}
        if host is not None:
            prov["host"] = _text(rows[host].iloc[0])
        key = _digest({"bench": bench, "job_id": str(job_id), "provenance": prov,
                       "rows": hashlib.sha256(rows.to_csv(index=False).encode()).hexdigest()})
        records.append({"bench": bench, "job_id": str(job_id), "job_key": key, "host": prov.get("host"),
                        "start": prov.get("start"), "end": prov.get("end"), "provenance": prov})
    return records


def run_key(frames: dict[str, pd.DataFrame]) -> str:
    """The key a run with these aggregated tables is recorded under."""
    return _digest(sorted(job["job_key"] for bench, df in frames.items() for job in job_records(bench, df)))


def system_of(results_dir: Path) -> str:
    """The system a results folder measured: its topology's name, else the folder's."""
    topo = load_topology(results_dir)
    return topo.system if topo else results_dir.name


def connect(path: str | Path) -> sqlite3.Connection:
    path = Path(path)
    if not path.parent.is_dir():
        raise NumasweepError(f"{path}: no folder '{path.parent}' for the results store; create it "
                             f"(mkdir -p {path.parent}) or set store.path to another file")
    try:
        db = sqlite3.connect(path, timeout=60)
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            db.close()
            raise NumasweepError(f"{path}: results store schema {version} is newer than this numasweep's "
                                 f"({SCHEMA_VERSION}); update numasweep or set store.path to another file")
        db.executescript(SCHEMA)
        if version < SCHEMA_VERSION:
            _migrate(db)
    except sqlite3.DatabaseError as exc:
        raise unusable(path, exc) from None
    return db


def unusable(path: Path, exc: sqlite3.DatabaseError) -> NumasweepError:
    """The one line for a store SQLite refused: a full disk, a folder it cannot use, or a file
    that is no store."""
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc):
        return disk_full(path.parent, f"the results store {path} was not changed (the runs recorded in it are "
                                      "kept)", "set store.path to a file on another disk")
    if isinstance(exc, sqlite3.OperationalError):
        return NumasweepError(f"{path}: cannot use the results store ({exc}); fix the folder's permissions, "
                              "or set store.path to another file")
    return NumasweepError(f"{path}: not a numasweep results store ({exc}); move it away or set "
                          "store.path to another file")


def _migrate(db: sqlite3.Connection) -> None:
    """Schema 1 -> 2: add `campaign` (the results folder's name, which is the config's `system`
    for folders the workflow wrote) and `folder` ('' : unknown) to the runs recorded before."""
    with db:
        have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        for column in ("campaign", "folder"):
            if column not in have:
                db.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")
        for key, source in db.execute("SELECT run_key, source FROM runs WHERE campaign = ''").fetchall():
            db.execute("UPDATE runs SET campaign = ? WHERE run_key = ?", (Path(source).name, key))
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def campaign_of(results_dir: Path, campaign: str | None = None) -> str:
    """The campaign a results folder belongs to: the config's `system` where given, else the
    folder's name (the workflow writes results/<system>)."""
    return campaign or Path(results_dir).resolve().name


def record(results_dir: str | Path, store: str | Path, campaign: str | None = None) -> tuple[Run, bool]:
    """Record the run a results folder holds; (the run, whether it was new)."""
    results_dir = Path(results_dir)
    frames = load_results(results_dir)
    if not frames:
        raise NumasweepError(f"{results_dir}: no aggregated <bench>.csv to record; run the sweep first")
    jobs = [job for bench, df in frames.items() for job in job_records(bench, df)]
    key = run_key(frames)
    starts = sorted(j["start"] for j in jobs if j["start"])
    ends = sorted(j["end"] for j in jobs if j["end"])
    run = Run(
        run_key=key,
        system=system_of(results_dir),
        recorded=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        started=starts[0] if starts else None,
        ended=ends[-1] if ends else None,
        hosts=",".join(sorted({j["host"] for j in jobs if j["host"]})),
        source=str(results_dir),
        campaign=campaign_of(results_dir, campaign),
        folder=str(results_dir.resolve()),
    )
    db = connect(store)
    try:
        with db:
            known = db.execute("SELECT 1 FROM runs WHERE run_key = ?", (key,)).fetchone()
            if known:
                return get(db, key), False
            db.execute(f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({', '.join('?' * len(RUN_COLUMNS))})",
                       tuple(asdict(run)[c] for c in RUN_COLUMNS))
            db.executemany("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           [(key, j["bench"], j["job_id"], j["job_key"], j["host"], j["start"], j["end"],
                             json.dumps(j["provenance"], sort_keys=True)) for j in jobs])
            db.executemany("INSERT INTO tables VALUES (?, ?, ?)",
                           [(key, bench, df.to_csv(index=False)) for bench, df in frames.items()])
    except sqlite3.DatabaseError as exc:
        raise unusable(Path(store), exc) from None
    finally:
        db.close()
    return run, True


def get(db: sqlite3.Connection, run_key: str) -> Run:
    row = db.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE run_key = ?", (run_key,)).fetchone()
    return Run(*row)


def runs(store: str | Path, system: str | None = None, campaign: str | None = None,
         folder: str | Path | None = None) -> list[Run]:
    """Every recorded run (of one topology, campaign and results folder where given), oldest
    first. A run recorded before schema 2 has no folder and matches any."""
    db = connect(store)
    try:
        where, values = [], []
        for column, value in (("system", system), ("campaign", campaign)):
            if value:
                where.append(f"{column} = ?")
                values.append(value)
        if folder:
            where.append("(folder = ? OR folder = '')")
            values.append(str(Path(folder).resolve()))
        query = (f"SELECT {', '.join(RUN_COLUMNS)} FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
                 + " ORDER BY recorded, rowid")
        return [Run(*row) for row in db.execute(query, values)]
    finally:
        db.close()


def find(store: str | Path, which: str, system: str | None = None, current: str | None = None,
         campaign: str | None = None, folder: str | Path | None = None) -> Run:
    """The run `which` names: `previous` (the latest run of the same topology `system`,
    `campaign` and results `folder`, other than `current`), or a run key or a unique prefix of one."""
    known = runs(store, system, campaign, folder)
    if which == "previous":
        earlier = [r for r in known if r.run_key != current]
        if not earlier:
            raise NumasweepError(f"{store}: no earlier run of {campaign or system or 'any system'} to compare "
                                 "with; run the sweep once more, or compare with references only")
        return earlier[-1]
    matches = [r for r in runs(store) if r.run_key.startswith(which)]
    if len(matches) != 1:
        listing = ", ".join(r.short for r in known[-5:]) or "none"
        raise NumasweepError(
            f"{store}: {'no' if not matches else 'more than one'} run whose key starts with '{which}'; "
            f"give `previous` or a key from `python -m numasweep store list` (latest: {listing})")
    return matches[0]


def tables(store: str | Path, run_key: str) -> dict[str, pd.DataFrame]:
    """The aggregated tables of a recorded run, by benchmark."""
    db = connect(store)
    try:
        rows = db.execute("SELECT bench, csv FROM tables WHERE run_key = ?", (run_key,)).fetchall()
    finally:
        db.close()
    return {bench: pd.read_csv(io.StringIO(csv)) for bench, csv in rows}


# `store list`: its columns, and the widest a cell of each may be (None: as wide as it is), so
# that a line stays under LIST_LINE characters whatever the names (a campaign or topology name
# may take 100 characters, a fleet's hosts thousands).
LIST_COLUMNS = (("run", None), ("campaign", 16), ("system", 16), ("started", 20), ("jobs", 6),
                ("commit", 18), ("verdict", None), ("from", 20), ("hosts", 26))
LIST_LINE = 160


def _cell(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[:width - 3] + "..."


def _tail_cell(text: str, width: int) -> str:
    """A path cut at its start: its end names it (`.../results/vm`)."""
    return text if len(text) <= width else "..." + text[len(text) - width + 3:]


def short_commit(commit: str) -> str:
    """A kernel commit as `store list` shows it: 7 hex digits, `-dirty` kept."""
    head, dirty, _ = commit.partition("-dirty")
    return (head[:7] if re.fullmatch(r"[0-9a-f]{7,40}", head) else head) + dirty


def _hosts_cell(hosts: str, width: int) -> str:
    """`node1,node2`, or as many as fit and how many there are in all: `nid001,... (1000 hosts)`."""
    if len(hosts) <= width:
        return hosts or "-"
    names = hosts.split(",")
    tail = f",... ({len(names)} hosts)"
    shown = ""
    for name in names:
        if len(shown) + len(name) + 1 + len(tail) > width:
            break
        shown = f"{shown},{name}" if shown else name
    return _cell(shown, width - len(tail)) + tail if shown else _cell(f"{len(names)} hosts", width)


def run_summaries(store: str | Path, keys: list[str]) -> dict[str, tuple[int, str, str]]:
    """Per run key: (its jobs, its kernel commit, the worst quality verdict of its jobs), as
    `store list` shows them. The commit is the one most of its jobs ran, short, with `(+N)` for
    N other commits among them; `-` where its jobs record none. The verdict is the worst of
    numasweep.running.verdict.VERDICTS the tables' `quality` column holds; `-` where it holds
    none (a table recorded before verdicts, an imported one)."""
    db = connect(store)
    out = {}
    try:
        for key in keys:
            commits: dict[str, int] = {}
            jobs = 0
            for (prov,) in db.execute("SELECT provenance FROM jobs WHERE run_key = ?", (key,)):
                jobs += 1
                commit = json.loads(prov).get("kernel_commit")
                if commit:
                    commits[commit] = commits.get(commit, 0) + 1
            ranked = sorted(commits, key=lambda c: (-commits[c], c))
            commit = short_commit(ranked[0]) + (f" (+{len(ranked) - 1})" if len(ranked) > 1 else "") if ranked else "-"
            worst = -1
            for (text,) in db.execute("SELECT csv FROM tables WHERE run_key = ?", (key,)):
                if verdict.COLUMN not in text.partition("\n")[0].split(","):
                    continue
                seen = pd.read_csv(io.StringIO(text), usecols=[verdict.COLUMN], dtype=str)[verdict.COLUMN]
                worst = max([worst, *(verdict.VERDICTS.index(v) for v in seen.dropna().unique()
                                      if v in verdict.VERDICTS)])
            out[key] = (jobs, commit, verdict.VERDICTS[worst] if worst >= 0 else "-")
    except sqlite3.DatabaseError as exc:
        raise unusable(Path(store), exc) from None
    finally:
        db.close()
    return out


def listing(store: str | Path, known: list[Run]) -> list[str]:
    """`store list`'s lines: a header, then one line a run, in the order given, each under
    LIST_LINE characters."""
    summary = run_summaries(store, [run.run_key for run in known])
    widths = dict(LIST_COLUMNS)
    rows = [[name for name, _ in LIST_COLUMNS]]
    for run in known:
        jobs, commit, worst = summary[run.run_key]
        rows.append([run.short, _cell(run.campaign or "-", widths["campaign"]), _cell(run.system, widths["system"]),
                     _cell(run.started or run.recorded, widths["started"]), _cell(str(jobs), widths["jobs"]),
                     _cell(commit, widths["commit"]), worst, _tail_cell(run.folder or run.source or "-", widths["from"]),
                     _hosts_cell(run.hosts, widths["hosts"])])
    padded = [max(len(row[i]) for row in rows) for i in range(len(LIST_COLUMNS) - 1)]
    return ["  ".join([*(cell.ljust(w) for cell, w in zip(row, padded)), row[-1]]).rstrip() for row in rows]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m numasweep store", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="record the run a results folder holds")
    rec.add_argument("--results", required=True, type=Path, help="results/<system>")
    rec.add_argument("--store", required=True, type=Path, help="the SQLite file (created when absent)")
    rec.add_argument("--campaign", help="the config's `system` (default: the results folder's name)")
    rec.add_argument("-o", "--output", type=Path, help="write the run's record here as JSON")
    lst = sub.add_parser("list", help="list the recorded runs, oldest first")
    lst.add_argument("--store", required=True, type=Path)
    lst.add_argument("--system", help="only this topology's runs")
    lst.add_argument("--campaign", help="only this campaign's runs (the config's `system`)")
    args = ap.parse_args(argv)
    if args.action == "record":
        run, new = record(args.results, args.store, args.campaign)
        if args.output:
            atomic_write_text(args.output, json.dumps({**asdict(run), "new": new}, indent=2) + "\n")
        print(f"{args.store}: {'recorded' if new else 'already holds'} {run.describe()}")
        return 0
    if not args.store.exists():
        raise NumasweepError(f"{args.store}: no results store; `snakemake` records every finished run there")
    for line in listing(args.store, runs(args.store, args.system, args.campaign)):
        print(line)
    return 0
