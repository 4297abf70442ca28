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

from numasweep.planning import checks
from numasweep.results import series
from numasweep.results.digest import HOST_ROWS
from numasweep.core.errors import NumasweepError
from numasweep.core.system_state import SystemState, quality_notes
from numasweep.core.topology import Topology
from numasweep.core.units import format_size, parse_cpulist

PREFIX = "sys_"
FIELDS = tuple(SystemState.__dataclass_fields__)


def columns(record: dict[str, Any] | None) -> dict[str, str | None]:
    """A provenance `system` record as aggregated-table columns (lists as comma lists)."""
    record = record or {}
    out = {}
    for name in FIELDS:
        value = record.get(name)
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


# ---------------------------------------------------------------- per series, from the kernels' columns

SPREAD_LIMIT_PCT = 2.0            # numa_latency's default --spread target
ON_CPU_LIMIT_PCT = 95.0           # numa_latency warns when a rank ran less of a sample on its CPU
TIMER_TICKS_LIMIT = 20            # numa_bandwidth warns when its best repetition took fewer ticks
SPREAD_FROM_BYTES = 256 << 20     # sizes where a chase runs long enough for its spread to mean noise
FEW_HOSTS = 8                     # hosts named in a flag over a fleet
RUN_COLUMNS = {
    "latency": ("spread_pct", "sample_s", "first_touch_s", "cycle_build_s", "on_cpu_pct", "retaken"),
    "bandwidth": ("stores", "first_touch_s", "timer_ticks"),
}


def _series_name(row: dict | pd.Series, columns: list[str]) -> str:
    return ", ".join(f"{c} {series.label(row[c])}" for c in columns if series.label(row[c]) not in ("", "-1"))


def _llc_of(topo: Topology | None, cpus: object) -> int:
    """The last-level cache the CPUs of a bandwidth row run under (0: unknown)."""
    if topo is None or cpus is None or pd.isna(cpus) or str(cpus).strip() == "":
        return 0
    try:
        return checks.llc_bytes(topo, parse_cpulist(str(cpus)))
    except NumasweepError:
        return 0


def _arrays_cell(smallest: float | None, llc: int) -> tuple[str, str | None]:
    """A bandwidth series' smallest arrays against LLC_FACTOR x the last-level cache its CPUs run
    under (STREAM's rule; the kernel's default): the table cell, and a sentence when under it."""
    if smallest is None or not llc:
        return "", None
    smallest = int(smallest)
    if smallest >= checks.LLC_FACTOR * llc:
        return f"{smallest / llc:.0f}x", None
    return (f"{smallest / llc:.1f}x (under {checks.LLC_FACTOR}x)",
            f"arrays of {format_size(smallest)} are under {checks.LLC_FACTOR}x the {format_size(llc)} "
            "last-level cache of their CPUs, so part of the bandwidth may be the cache's; set a larger "
            "array_size, or free memory where the kernel's default was used (it caps its arrays at "
            "half the free memory, with a warning in the job's log)")


def _groups(df: pd.DataFrame, keys: list[str]) -> tuple[pd.Index, np.ndarray]:
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


def _key(index: pd.Index, key: Any) -> dict:
    if index.names == ["_one"]:
        return {}
    return dict(zip(index.names, key if isinstance(key, tuple) else (key,)))


def _bandwidth_runs(df: pd.DataFrame, keys: list[str], topo: Topology | None):
    """(series key, figures) per bandwidth series in key order, from one grouping of the table:
    the store kinds, the largest first-touch time, the smallest arrays and the largest last-level
    cache of the CPUs they ran on, the least timer ticks; None (stores: []) where none."""
    index, codes = _groups(df, keys)
    n = len(index)

    def per_series(values: pd.Series, how: str) -> list:
        got = values.groupby(codes).agg(how).reindex(range(n))
        return [None if pd.isna(v) else float(v) for v in got]

    stores: list[list[str]] = [[] for _ in range(n)]
    if "stores" in df:
        ok = df["stores"].notna().to_numpy()
        pairs = pd.DataFrame({"g": codes[ok], "s": [str(v) for v in df["stores"][ok]]}).drop_duplicates()
        for g, kinds in pairs.groupby("g")["s"]:
            stores[int(g)] = sorted(kinds)
    first_touch = per_series(df["first_touch_s"], "max") if "first_touch_s" in df else [None] * n
    ticks = per_series(df["timer_ticks"], "min") if "timer_ticks" in df else [None] * n
    smallest, llc = [None] * n, [0] * n
    if "array_bytes" in df and "cpus" in df:
        smallest = per_series(pd.to_numeric(df["array_bytes"], errors="coerce"), "min")
        llcs = pd.Series(series.per_value(df["cpus"], lambda c: _llc_of(topo, c), dtype=np.int64))
        llc = [int(v) for v in llcs.groupby(codes).max().reindex(range(n), fill_value=0)]
    for i, key in enumerate(index):
        yield _key(index, key), {"stores": stores[i], "first_touch_s": first_touch[i],
                                 "arrays": _arrays_cell(smallest[i], llc[i]), "timer_ticks": ticks[i]}


def _latency_runs(df: pd.DataFrame, keys: list[str]):
    """(series key, figures) per latency series in key order, from one grouping of the table
    (a fleet holds thousands of series): the within-run spread at SPREAD_FROM_BYTES and above
    (median, largest and the size of the first largest), the median sample length, the largest
    first-touch and cycle-build times, the least time on CPU and the size of its first least,
    and the samples retaken; None where the series has no value of a column."""
    index, codes = _groups(df, keys)
    runs = pd.DataFrame(index=pd.RangeIndex(len(index)))
    for column, how in (("sample_s", "median"), ("first_touch_s", "max"), ("cycle_build_s", "max"),
                        ("retaken", "sum")):
        if column in df:
            grouped = df[column].groupby(codes)
            runs[column] = grouped.sum(min_count=1) if how == "sum" else grouped.agg(how)
    sizes = df["size_bytes"] if "size_bytes" in df else None
    for column, name in (("spread_pct", "spread"), ("on_cpu_pct", "on_cpu")):
        if column not in df or (name == "spread" and sizes is None):
            continue
        take = df[column].notna().to_numpy()
        if name == "spread":
            take = take & (sizes >= SPREAD_FROM_BYTES).to_numpy()
        grouped = df[column][take].groupby(codes[take])
        runs[f"{name}_at_row"] = grouped.idxmax() if name == "spread" else grouped.idxmin()
        if name == "spread":
            runs["spread_median"], runs["spread_max"] = grouped.median(), grouped.max()
        else:
            runs["on_cpu_pct"] = grouped.min()
    for key, r in zip(index, runs.to_dict("records")):
        got = {k: (None if pd.isna(v) else float(v)) for k, v in r.items()}
        spread_row, cpu_row = got.pop("spread_at_row", None), got.pop("on_cpu_at_row", None)
        got["spread_at"] = int(sizes.loc[int(spread_row)]) if spread_row is not None else None
        got["on_cpu_at"] = format_size(int(sizes.loc[int(cpu_row)])) if cpu_row is not None and sizes is not None \
            else ""
        got["retaken"] = int(got["retaken"]) if got.get("retaken") is not None else None
        for column in ("spread_median", "spread_max", "sample_s", "first_touch_s", "cycle_build_s", "on_cpu_pct"):
            got.setdefault(column, None)
        yield _key(index, key), got


# How a fleet's rows of one series (one per host) are said as one: per column of RUN rows.
_REDUCE = {"latency": (None, "median", "max", "at", "median", "max", "max", "over", "min", "sum"),
           "bandwidth": (None, "union", "max", "least", "min")}


def _over_hosts(found: list[tuple[str, str, list, list]], bench: str) -> tuple[list[list], list[str]]:
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
        for i, how in enumerate(_REDUCE[bench][1:], start=1):
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
            flagged.append(f"**{flag}**: {name}: on {len(on)} of {len(hosts)} hosts ({listed}); the worst, "
                           f"{host}: {text}")
    return rows, flagged


def series_quality(frames: dict[str, pd.DataFrame], topology: dict | None = None) -> list[dict[str, Any]]:
    """Per benchmark with the kernels' run columns (docs/INTERFACES.md): one row per series with
    the within-run spread (median and largest at SPREAD_FROM_BYTES and above), sample length and
    setup times of numa_latency, or the store kind, first-touch time and array size against the
    last-level cache (with `topology`) of numa_bandwidth; and a sentence per latency series whose
    spread exceeds SPREAD_LIMIT_PCT at those sizes or whose ranks ran under ON_CPU_LIMIT_PCT of a
    sample on their CPU, and per bandwidth series whose arrays are under checks.LLC_FACTOR x its
    last-level cache or whose best repetition took under TIMER_TICKS_LIMIT timer ticks: the
    warnings the kernels print, from their CSV columns rather than the job logs. Over more than
    HOST_ROWS hosts (a fleet) a series' hosts are one row and each flag one sentence over its
    hosts (`_over_hosts`).
    [{"bench", "header", "rows", "numeric": column indexes, "flagged": [sentence, ...]}]; tables
    without the columns give none."""
    try:
        topo = Topology.from_dict(topology, "topology.json") if topology else None
    except NumasweepError:
        topo = None
    out = []
    for bench, columns in RUN_COLUMNS.items():
        df = frames.get(bench)
        if df is None or df.empty or not any(c in df for c in columns):
            continue
        df = series.normalise(df, bench)
        keys = series.series_columns(df, bench)
        # normalised: numbers or text, so distinct values are distinct texts
        varying = [c for c in keys if df[c].nunique() > 1] or keys[:1]
        have = [c for c in columns if c in df]
        # the columns read below, not every column of a large table, go into the groups
        used = list(dict.fromkeys(have + [c for c in ("size_bytes", "array_bytes", "cpus") if c in df]))
        df = df[list(dict.fromkeys(keys + used))]
        for c in have:
            if c != "stores":
                df[c] = pd.to_numeric(df[c], errors="coerce")
        hosts = df["host"].nunique() if "host" in df else 1
        fleet = hosts > HOST_ROWS
        # a fleet's series are named without their host (one row over the hosts), even where
        # nothing else varies
        unhosted = [c for c in keys if not (fleet and c == "host")]
        named = [c for c in varying if c in unhosted] or unhosted[:1] or keys[:1]
        found = []     # (host, series name, row, [(flag, worst value, sentence after the name)])
        groups = _latency_runs(df, keys) if bench == "latency" else _bandwidth_runs(df, keys, topo)
        for key, g in groups:
            name = _series_name(key, named) or "all"
            flags = []
            if bench == "latency":      # g: the series' figures (`_latency_runs`)
                worst, at, least = g["spread_max"], g["spread_at"], g["on_cpu_pct"]
                row = [name, g["spread_median"], worst, format_size(at) if at else "", g["sample_s"],
                       g["first_touch_s"], g["cycle_build_s"],
                       "over" if worst is not None and worst > SPREAD_LIMIT_PCT else ""]
                if worst is not None and worst > SPREAD_LIMIT_PCT:
                    flags.append(("Spread", worst, f"samples spread {worst:.1f}% at {format_size(at)} (over "
                                  f"{SPREAD_LIMIT_PCT:.0f}% at {format_size(SPREAD_FROM_BYTES)} and above): the "
                                  "machine disturbed the run, or it needs more --samples or --min-time"))
                # samples the kernel took again because a rank was off its CPU (older tables: none)
                row += [least, g["retaken"]]
                if least is not None and least < ON_CPU_LIMIT_PCT:
                    flags.append(("CPU shared", -least, f"ran only {least:.0f}% of a sample's time on its CPU at "
                                  f"{g['on_cpu_at']}: other work shared the CPU and inflated its latencies; measure "
                                  "on a quiet machine, with nothing else on the benchmark's CPUs"))
            else:                       # g: the series' figures (`_bandwidth_runs`)
                cell, small = g["arrays"]
                row = [name, ", ".join(g["stores"]), g["first_touch_s"], cell]
                if small:
                    flags.append((f"Arrays under {checks.LLC_FACTOR}x the last-level cache",
                                  -float(cell.split("x")[0]), small))
                least = g["timer_ticks"]
                row.append(least)
                if least is not None and least < TIMER_TICKS_LIMIT:
                    flags.append(("Timer", -least, f"the best repetition took only {least:.0f} ticks of the "
                                  f"timer (under {TIMER_TICKS_LIMIT}), too short to time well; use a larger "
                                  "array_size"))
            found.append((series.label(key.get("host", "")), name, row, flags))
        rows, flagged = _over_hosts(found, bench) if fleet else \
            ([r for _, _, r, _ in found], [f"**{flag}**: {name}: {text}" for _, name, _, flags in found
                                           for flag, _, text in flags])
        header = (["series", f"spread % (median, >= {format_size(SPREAD_FROM_BYTES)})", "spread % (largest)",
                   "at", "sample s (median)", "first touch s (max)", "cycle build s (max)",
                   f"spread > {SPREAD_LIMIT_PCT:.0f}%", "on CPU % (least)", "samples retaken"]
                  if bench == "latency" else ["series", "stores", "first touch s (max)",
                                              "arrays / last-level cache", "timer ticks (least)"])
        # right-aligned: the columns of numbers (counts such as the samples retaken included)
        numeric = {i for i in range(1, len(header))
                   if any(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows)}
        out.append({"bench": bench, "header": header, "rows": rows, "numeric": numeric, "flagged": flagged})
    return out
