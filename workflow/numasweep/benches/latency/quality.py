"""What numa_latency records about its own runs, read for the report's data quality: the
within-run spread at large sizes, sample length, set-up times, time on CPU and samples retaken."""

from __future__ import annotations

import pandas as pd

from numasweep.benches import common
from numasweep.core.registry import RunQuality
from numasweep.core.units import size_words
from numasweep.results import quality


SPREAD_LIMIT_PCT = common.TIME_SPREAD_PCT   # numa_latency's default --spread target


ON_CPU_LIMIT_PCT = 95.0           # numa_latency warns when a rank ran less of a sample on its CPU


SPREAD_FROM_BYTES = common.SMALL_BYTES   # sizes where a chase runs long enough for its spread to mean noise


def latency_runs(df: pd.DataFrame, keys: list[str]):
    """(series key, figures) per latency series in key order, from one grouping of the table
    (a fleet holds thousands of series): the within-run spread at SPREAD_FROM_BYTES and above
    (median, largest and the size of the first largest), the median sample length, the largest
    first-touch and cycle-build times, the least time on CPU and the size of its first least,
    and the samples retaken; None where the series has no value of a column."""
    index, codes = quality.groups(df, keys)
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
        got["on_cpu_at"] = size_words(int(sizes.loc[int(cpu_row)])) if cpu_row is not None and sizes is not None \
            else ""
        got["retaken"] = int(got["retaken"]) if got.get("retaken") is not None else None
        for column in ("spread_median", "spread_max", "sample_s", "first_touch_s", "cycle_build_s", "on_cpu_pct"):
            got.setdefault(column, None)
        yield quality.series_key(index, key), got


def quality_row(name: str, g: dict) -> tuple[list, list]:
    """One series' row of the data-quality table, and its flags."""
    flags = []
    worst, at, least = g["spread_max"], g["spread_at"], g["on_cpu_pct"]
    row = [name, g["spread_median"], worst, size_words(at) if at else "", g["sample_s"],
           g["first_touch_s"], g["cycle_build_s"],
           "over" if worst is not None and worst > SPREAD_LIMIT_PCT else ""]
    if worst is not None and worst > SPREAD_LIMIT_PCT:
        flags.append(("Spread", worst, f"samples spread {worst:.1f}% at {size_words(at)} (over "
                      f"{SPREAD_LIMIT_PCT:.0f}% at {size_words(SPREAD_FROM_BYTES)} and above): the "
                      "machine disturbed the run, or it needs more --samples or --min-time"))
    # samples the kernel took again because a rank was off its CPU (older tables: none)
    row += [least, g["retaken"]]
    if least is not None and least < ON_CPU_LIMIT_PCT:
        flags.append(("CPU shared", -least, f"ran only {least:.0f}% of a sample's time on its CPU at "
                      f"{g['on_cpu_at']}: other work shared the CPU and inflated its latencies; measure "
                      "on a quiet machine, with nothing else on the benchmark's CPUs"))
    return row, flags


QUALITY = RunQuality(
    columns=("spread_pct", "sample_s", "first_touch_s", "cycle_build_s", "on_cpu_pct", "retaken"),
    header=("series", f"spread % (median, >= {size_words(SPREAD_FROM_BYTES)})", "spread % (largest)", "at",
            "sample s (median)", "first touch s (max)", "cycle build s (max)", f"spread > {SPREAD_LIMIT_PCT:.0f}%",
            "on CPU % (least)", "samples taken again (a rank was off its CPU)"),
    runs=lambda df, keys, topo: latency_runs(df, keys),
    row=quality_row,
    reduce=(None, "median", "max", "at", "median", "max", "max", "over", "min", "sum"),
    also=("size_bytes",),
)
