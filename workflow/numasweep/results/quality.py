"""Data quality from the machine state each job recorded: which states distorted which host.

Aggregation copies each job's provenance `system{}` (numasweep.core.system_state) into the
aggregated table as `sys_<field>` columns; `notes(frames)` gives, per distinct state, the
data-quality sentences of `system_state.quality_notes` with the hosts (and benchmarks) that
measured in it, for the report's data-quality part. A table without those columns (cached
examples, imported legacy tables) gives no note. `series_quality(frames)` adds, per series, what
the kernels measured about their own runs (within-run spread, sample length, setup times).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.core.units import count_words
from numasweep.planning.placement import weights_set
from numasweep.results import series
from numasweep.results.digest import HOST_ROWS
from numasweep.core.system_state import SystemState, quality_notes
from numasweep.core.topology import Topology

PREFIX = "sys_"
FIELDS = tuple(SystemState.__dataclass_fields__)


def columns(record: dict[str, Any] | None) -> dict[str, str | None]:
    """A provenance `system` record as aggregated-table columns (lists as comma lists), or a
    NumasweepError naming a field whose value is no text, number or list of them (the runner
    writes nothing else; a record edited by hand may hold anything)."""
    if not isinstance(record or {}, dict):
        raise NumasweepError(f"its 'system' is {type(record).__name__}, not a mapping")
    record = record or {}
    out = {}
    for name in FIELDS:
        value = record.get(name)
        items = value if isinstance(value, list) else [value]
        if not all(v is None or isinstance(v, (str, int, float)) for v in items):
            raise NumasweepError(f"its system.{name} is {type(value).__name__} {str(value)[:40]!r}, not text")
        out[PREFIX + name] = ",".join(map(str, value)) if isinstance(value, list) else value
    return out


def _state(row: pd.Series) -> SystemState:
    def value(name: str) -> str | None:
        v = row.get(PREFIX + name)
        return None if v is None or pd.isna(v) or str(v) == "" else str(v)

    values: dict[str, Any] = {name: value(name) for name in FIELDS}
    # A number-like text (numa_balancing "1") comes back from CSV as 1.0.
    if values["numa_balancing"] is not None and values["numa_balancing"].endswith(".0"):
        values["numa_balancing"] = values["numa_balancing"][:-2]
    values["cpu_governors"] = tuple(g for g in (values["cpu_governors"] or "").split(",") if g)
    return SystemState(**values)


def notes(frames: dict[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """[{"note": sentence, "hosts": [...], "benches": [...]}] in order of first appearance."""
    found: dict[str, dict[str, Any]] = {}
    for bench, df in frames.items():
        if not any(c.startswith(PREFIX) for c in df.columns):
            continue
        host_col = next((c for c in ("host", "prov_host") if c in df.columns), None)
        placement = "page_fractions" in df.columns or "src_page_fractions" in df.columns
        state_cols = [c for c in df.columns if c.startswith(PREFIX)]
        keep = state_cols + ([host_col] if host_col else [])
        for _, row in df[keep].astype(object).drop_duplicates().iterrows():
            for sentence in quality_notes(_state(row), placement_measured=placement):
                entry = found.setdefault(sentence, {"note": sentence, "hosts": [], "benches": []})
                host = str(row[host_col]) if host_col and pd.notna(row[host_col]) else "unknown host"
                if host not in entry["hosts"]:
                    entry["hosts"].append(host)
                if bench not in entry["benches"]:
                    entry["benches"].append(bench)
    return list(found.values())


def tiering(frames: dict[str, pd.DataFrame]) -> list[str]:
    """The report's lines on memory tiering during the run, from the jobs' provenance: the
    settings as the jobs found them (each distinct text with its count of jobs), those a job
    ended with changed, and the weighted-interleave weights the run itself set (the jobs whose
    memory spec gives weights: the kernel writes them before its run and writes the old ones back
    after it). Nothing for tables without provenance (cached examples)."""
    jobs = [df.drop_duplicates("job_id") if "job_id" in df.columns else df for df in frames.values()
            if PREFIX + "kernel_release" in df.columns]
    if not jobs:
        return []
    table = pd.concat(jobs, ignore_index=True)
    found = table.get(PREFIX + "tiering_before", pd.Series(dtype=object)).dropna()
    if found.empty:
        lines = ["not recorded by these results (their jobs ran before the runner recorded it)"]
    else:
        lines = [f"as found by {count_words(n, 'job')}: {text}" for text, n in found.value_counts(sort=False).items()]
    changed = table.get(PREFIX + "tiering_changed", pd.Series(dtype=object)).dropna()
    if not found.empty:
        lines += ([f"different after {count_words(n, 'job')} from before it: {text}"
                   for text, n in changed.value_counts(sort=False).items()]
                  or ["the same after every job as before it"])
    for memory, n in (table["memory"].value_counts(sort=False).items() if "memory" in table.columns else ()):
        if (mem := weights_set(memory)) is not None:
            lines.append(f"set by the run: weighted-interleave weights {','.join(map(str, mem.weights))} on nodes "
                         f"{','.join(map(str, mem.nodes))} for {count_words(n, 'job')}, written before each run and "
                         "the old ones written back after it")
    return lines


# ---------------------------------------------------------------- per series, from the kernels' columns

FEW_HOSTS = 8                     # hosts named in a flag over a fleet


def _series_name(row: dict | pd.Series, columns: list[str]) -> str:
    """A series as its configuration's words ("concurrent, 1 rank, 4 KiB pages, rank 0, CPU 0"),
    each value once; an absent value (-1 once normalised) unsaid."""
    return series.config_name({c: row[c] for c in columns if series.label(row[c]) not in ("", "-1")}, columns)


def groups(df: pd.DataFrame, keys: list[str]) -> tuple[pd.Index, np.ndarray]:
    """The series of a table in key order, and each row's series number: one grouping for every
    series (a fleet holds thousands), each column then grouped by the numbers alone (the key
    columns are not copied per column)."""
    if not keys:
        return pd.Index([0], name="_one"), np.zeros(len(df), dtype=np.int64)
    same = series.constant_keys(df, keys)        # not grouped by: the same value in every series
    by = df.groupby([k for k in keys if k not in same], sort=True, dropna=False)
    index = by.size().index                     # group numbers in this order
    if same:
        n = len(index)
        index = pd.MultiIndex.from_arrays([[same[k]] * n if k in same else index.get_level_values(k)
                                           for k in keys], names=keys)
    return index, by.ngroup().to_numpy()


def series_key(index: pd.Index, key: Any) -> dict:
    if index.names == ["_one"]:
        return {}
    return dict(zip(index.names, key if isinstance(key, tuple) else (key,)))


def _over_hosts(found: list[tuple[str, str, list, list]], reduce: tuple) -> tuple[list[list], list[str]]:
    """A fleet's series (more than HOST_ROWS hosts) as one row over its hosts, and each flag one
    sentence over the hosts it was raised on: how many, the first few, and the worst host's own
    sentence. found: (host, series name without the host, row, flags) per host and series."""
    by_name: dict[str, list] = {}
    for item in found:
        by_name.setdefault(item[1], []).append(item)
    rows, flagged = [], []
    for name, items in by_name.items():
        hosts = [h for h, _, _, _ in items]
        cols = list(zip(*(r for _, _, r, _ in items)))
        row = [f"{name} ({len(hosts)} hosts)"]
        for i, how in enumerate(reduce[1:], start=1):
            values = [v for v in cols[i] if v is not None and v != ""]
            if how == "at":     # the size of the largest spread, and its host
                worst = max(range(len(items)), key=lambda j: -1 if cols[2][j] is None else cols[2][j])
                row.append(f"{cols[3][worst]} on {hosts[worst]}" if cols[3][worst] else "")
            elif how == "over":
                row.append(f"{len(values)} of {len(hosts)} hosts" if values else "")
            elif how == "union":
                row.append(", ".join(sorted({s for v in values for s in str(v).split(", ") if s})))
            elif how == "least":   # the array cell of the smallest ratio
                row.append(min(values, key=lambda v: float(str(v).split("x")[0])) if values else "")
            elif not values:
                row.append(None)
            else:
                row.append({"median": float(pd.Series(values).median()), "max": max(values), "min": min(values),
                            "sum": sum(values)}[how])
        rows.append(row)
        kinds: dict[str, list] = {}
        for host, _, _, flags in items:
            for flag, worst, text in flags:
                kinds.setdefault(flag, []).append((worst, host, text))
        for flag, raised in kinds.items():
            worst, host, text = max(raised)
            on = sorted(h for _, h, _ in raised)
            listed = ", ".join(on[:FEW_HOSTS]) + (f" and {len(on) - FEW_HOSTS} more" if len(on) > FEW_HOSTS else "")
            flagged.append((flag, f"{name}: on {len(on)} of {len(hosts)} hosts ({listed}); the worst, "
                                  f"{host}: {text}"))
    return rows, flagged


def series_quality(frames: dict[str, pd.DataFrame], topo: Topology | None = None) -> list[dict[str, Any]]:
    """Per benchmark whose kernel records columns about its own runs (`Bench.checks.quality`,
    docs/INTERFACES.md): one row per series of those columns' figures, and a sentence per series
    where they show the run was disturbed or mis-sized: the warnings the kernels print, from their
    CSV columns rather than the job logs. Over more than HOST_ROWS hosts (a fleet) a series' hosts
    are one row and each flag one sentence over its hosts (`_over_hosts`).
    [{"bench", "header", "rows", "numeric": column indexes, "flagged": [(flag, sentence), ...]}]; tables
    without the columns give none."""
    out = []
    for spec in registry.all_benches().values():
        bench, check = spec.name, spec.checks.quality
        df = frames.get(bench)
        if check is None or df is None or df.empty or not any(c in df for c in check.columns):
            continue
        columns = check.columns
        df = series.normalise(df, bench)
        keys = series.series_columns(df, bench)
        # normalised: numbers or text, so distinct values are distinct texts
        varying = [c for c in keys if df[c].nunique() > 1] or keys[:1]
        have = [c for c in columns if c in df]
        # the columns read below, not every column of a large table, go into the groups
        used = list(dict.fromkeys(have + [c for c in check.also if c in df]))
        df = df[list(dict.fromkeys(keys + used))]
        for c in have:
            if c not in check.text:
                df[c] = pd.to_numeric(df[c], errors="coerce")
        hosts = df["host"].nunique() if "host" in df else 1
        fleet = hosts > HOST_ROWS
        # a fleet's series are named without their host (one row over the hosts), even where
        # nothing else varies
        unhosted = [c for c in keys if not (fleet and c == "host")]
        named = [c for c in varying if c in unhosted] or unhosted[:1] or keys[:1]
        found = []     # (host, series name, row, [(flag, worst value, sentence after the name)])
        for key, g in check.runs(df, keys, topo):
            name = _series_name(key, named) or "all"
            row, flags = check.row(name, g)
            found.append((series.label(key.get("host", "")), name, row, flags))
        rows, flagged = _over_hosts(found, check.reduce) if fleet else \
            ([r for _, _, r, _ in found], [(flag, f"{name}: {text}") for _, name, _, flags in found
                                           for flag, _, text in flags])
        header = list(check.header)
        # right-aligned: the columns of numbers (counts such as the samples retaken included)
        numeric = {i for i in range(1, len(header))
                   if any(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows)}
        out.append({"bench": bench, "header": header, "rows": rows, "numeric": numeric, "flagged": flagged})
    return out
