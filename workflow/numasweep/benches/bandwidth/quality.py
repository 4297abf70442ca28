"""What numa_bandwidth records about its own runs, read for the report's data quality: the store
kinds and loop code it ran, first-touch time, arrays against the last-level cache, and timer ticks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from numasweep.benches.bandwidth.calibration import PREFERENCE
from numasweep.core.errors import NumasweepError
from numasweep.core.registry import RunQuality
from numasweep.core.topology import Topology
from numasweep.core.units import format_size, parse_cpulist
from numasweep.planning import checks
from numasweep.results import quality, series

LLC_FACTOR = checks.LLC_FACTOR
TIMER_TICKS_LIMIT = 20            # numa_bandwidth warns when its best repetition took fewer ticks


def llc_of(topo: Topology | None, cpus: object) -> int:
    """The last-level cache the CPUs of a bandwidth row run under (0: unknown)."""
    if topo is None or cpus is None or pd.isna(cpus) or str(cpus).strip() == "":
        return 0
    try:
        return topo.llc_bytes(parse_cpulist(str(cpus)))
    except NumasweepError:
        return 0


def arrays_cell(smallest: float | None, llc: int) -> tuple[str, str | None]:
    """A bandwidth series' smallest arrays against LLC_FACTOR x the last-level cache its CPUs run
    under (STREAM's rule; the kernel's default): the table cell, and a sentence when under it."""
    if smallest is None or not llc:
        return "", None
    smallest = int(smallest)
    if smallest >= LLC_FACTOR * llc:
        return f"{smallest / llc:.0f}x", None
    return (f"{smallest / llc:.1f}x (under {LLC_FACTOR}x)",
            f"arrays of {format_size(smallest)} are under {LLC_FACTOR}x the {format_size(llc)} "
            "last-level cache of their CPUs, so part of the bandwidth may be the cache's; set a larger "
            "array_size, or free memory where the kernel's default was used (it caps its arrays at "
            "half the free memory, with a warning in the job's log)")


def bandwidth_runs(df: pd.DataFrame, keys: list[str], topo: Topology | None):
    """(series key, figures) per bandwidth series in key order, from one grouping of the table:
    the store kinds, the code shapes the kernel ran (its `variant` column: the calibration's pick),
    the largest first-touch time, the smallest arrays and the largest last-level cache of the CPUs
    they ran on, the least timer ticks; None (stores, shapes: []) where none."""
    index, codes = quality.groups(df, keys)
    n = len(index)

    def per_series(values: pd.Series, how: str) -> list:
        got = values.groupby(codes).agg(how).reindex(range(n))
        return [None if pd.isna(v) else float(v) for v in got]

    def kinds(column: str) -> list[list[str]]:
        found: list[list[str]] = [[] for _ in range(n)]
        if column in df:
            ok = df[column].notna().to_numpy()
            pairs = pd.DataFrame({"g": codes[ok], "s": [str(v) for v in df[column][ok]]}).drop_duplicates()
            for g, values in pairs.groupby("g")["s"]:
                found[int(g)] = sorted(values)
        return found

    stores, shapes = kinds("stores"), kinds("variant")
    first_touch = per_series(df["first_touch_s"], "max") if "first_touch_s" in df else [None] * n
    ticks = per_series(df["timer_ticks"], "min") if "timer_ticks" in df else [None] * n
    smallest, llc = [None] * n, [0] * n
    if "array_bytes" in df and "cpus" in df:
        smallest = per_series(pd.to_numeric(df["array_bytes"], errors="coerce"), "min")
        llcs = pd.Series(series.per_value(df["cpus"], lambda c: llc_of(topo, c), dtype=np.int64))
        llc = [int(v) for v in llcs.groupby(codes).max().reindex(range(n), fill_value=0)]
    for i, key in enumerate(index):
        yield quality.series_key(index, key), {"stores": stores[i], "shapes": shapes[i],
                                               "first_touch_s": first_touch[i],
                                 "arrays": arrays_cell(smallest[i], llc[i]), "timer_ticks": ticks[i]}


def quality_row(name: str, g: dict) -> tuple[list, list]:
    """One series' row of the data-quality table, and its flags."""
    flags = []
    cell, small = g["arrays"]
    row = [name, ", ".join(g["stores"]), ", ".join(PREFERENCE.get(v, v) for v in g["shapes"]), g["first_touch_s"], cell]
    if small:
        flags.append((f"Arrays under {LLC_FACTOR}x the last-level cache",
                      -float(cell.split("x")[0]), small))
    least = g["timer_ticks"]
    row.append(None if least is None else int(least))   # a count: no decimals
    if least is not None and least < TIMER_TICKS_LIMIT:
        flags.append(("Timer", -least, f"the best repetition took only {least:.0f} ticks of the "
                      f"timer (under {TIMER_TICKS_LIMIT}), too short to time well; use a larger "
                      "array_size"))
    return row, flags


QUALITY = RunQuality(
    columns=("stores", "variant", "first_touch_s", "timer_ticks"),
    header=("series", "stores", "loop code the kernel ran", "first touch s (max)", "arrays / last-level cache",
            "timer ticks (least)"),
    runs=bandwidth_runs,
    row=quality_row,
    reduce=(None, "union", "union", "max", "least", "min"),
    also=("array_bytes", "cpus"),
    text=("stores", "variant"),
)
