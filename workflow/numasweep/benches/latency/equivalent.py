"""Equivalent experiments agree before an effect is claimed.

A grid can hold one measurement twice: a 1-rank run and a serial run of several ranks measure the
same thing on the CPU they share (each rank of a serial run chases alone), for one page size and
one placement of memory. Before any finding rests on either, the two are compared size by size on
that CPU (`contrasts.contrast`: units the repetitions on the shared CPU, the 10 % floor, Benjamini-
Hochberg over every size). Where they differ beyond the noise and the floor, the finding says so,
and the 1-rank run's values at those sizes are set aside, so that no finding, headline value or
matrix rests on them: a serial run of two ranks or more is the evidence of more runs (its ranks on
other CPUs of the node alike). A neighbour on the memory bus while one job ran, which leaves the
job's CPU share untouched and so no verdict on it, shows up here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from numasweep.benches import common
from numasweep.core.units import page_words, size_words
from numasweep.findings.analysis import Finding, interval_numbers
from numasweep.results import series
from numasweep.statistics import contrasts

ONE, SERIAL = "one rank", "serial ranks"
KEYS = ("page_size", "locality", "cpu_node", "host")


def _ranks(table: pd.DataFrame) -> pd.Series:
    if "ranks" not in table:
        return pd.Series(1, index=table.index)
    return pd.to_numeric(table["ranks"].astype(str).str.split().str[0], errors="coerce").fillna(1)


def compared(table: pd.DataFrame) -> tuple[pd.DataFrame, list[Finding]]:
    """`table` (a prepared latency table: `findings.prepare`) without the rows set aside, and a
    finding per comparison that disagrees."""
    if "mode" not in table or "cpu" not in table:
        return table, []
    ranks = _ranks(table)
    one = (ranks == 1).to_numpy()
    serial = ((ranks > 1) & (table["mode"].astype(str) == "serial")).to_numpy()
    if not one.any() or not serial.any():
        return table, []
    side = pd.Series("", index=table.index).where(~one, ONE).where(~serial, SERIAL)
    both = table[one | serial].assign(_alone=side[one | serial].to_numpy())
    keys = [k for k in KEYS if k in table]
    units = [c for c in (series.REPETITION, "cpu") if c in table]
    found = contrasts.contrast(both, "_alone", ONE, SERIAL, units, keys, measure=common.LATENCY,
                               where="latency.csv", onset=False)
    drop = np.zeros(len(table), dtype=bool)
    findings = []
    for c in found:
        if not c.differs:
            continue
        sizes = [s.size_bytes for s in c.per_size if s.differs]
        mine = one.copy()
        for k in keys:
            mine &= (table[k].astype(str) == str(c.series.get(k))).to_numpy()
        drop |= mine & table["size_bytes"].isin(sizes).to_numpy()
        serial_ranks = int(table.loc[serial, "rank"].nunique()) if "rank" in table else 2
        where = (f"{page_words(c.series.get('page_size', ''))}, CPU node {c.series.get('cpu_node')}"
                 + (f", memory {c.series.get('locality')}" if str(c.series.get("locality")) != "local" else ""))
        span = (size_words(sizes[0]) if len(sizes) == 1 else f"{size_words(sizes[0])} to {size_words(sizes[-1])}")
        ratio = c.plateau_ratio or c.per_size[[s.size_bytes for s in c.per_size].index(sizes[0])].ratio
        findings.append(Finding(
            id="equivalent_runs", bench="latency",
            title=f"Equivalent runs disagree: one rank alone against serial ranks ({where})",
            summary=(f"The 1-rank run and the serial run of {serial_ranks} ranks ({where}) measure the same thing on "
                     f"the CPU they share, each rank alone, yet the 1-rank run reads {ratio.text('{:.2f}x')} the "
                     f"serial run's at {span}, beyond the noise and the {contrasts.MIN_EFFECT * 100:.0f}% floor: its "
                     f"values at {'that size' if len(sizes) == 1 else 'those sizes'} are set aside, and no finding or "
                     f"headline value rests on them. Something the job's verdict does not see (another program on "
                     f"the memory, a page placement of its own) moved one of the two; measure the 1-rank point again."),
            numbers={**{k: c.series.get(k) for k in keys}, "claim": True, "sizes_set_aside": sizes,
                     **interval_numbers("plateau_ratio", ratio), "floor": contrasts.MIN_EFFECT,
                     "serial_ranks": serial_ranks},
            evidence=[{"size_bytes": s.size_bytes, "ratio": s.ratio.estimate, "low": s.ratio.low,
                       "high": s.ratio.high, "differs": s.differs} for s in c.per_size]))
    return (table[~drop] if drop.any() else table), findings
