"""The code shape of each bandwidth kernel, decided once per machine with an interval.

How a loop is written moves a STREAM kernel's rate by up to a quarter on some processors
(kernels/numa_bandwidth.c, "Code shapes"). A shape picked by one timed run of each is picked
by the noise on a shared machine, and two runs of one grid point would run different code. So
the workflow calibrates once per results folder (host), kernel build and calibration settings:
`numa_bandwidth --calibrate=N` times every shape of every kernel and store kind in N rounds, the
shapes interleaved; `decide` takes, per kernel and store kind, each shape's per-round rate
relative to the fastest shape's in the same round (paired, so that a slow phase of the machine
falls on both), with the 95% interval of its median over the rounds
(`statistics.stats.center_interval`). The fastest is chosen only where its interval clears
every other shape's; otherwise the first, in a fixed order of preference (`PREFERENCE`: the
plain loop STREAM runs, then the simpler shapes), of the shapes it could not be told from.

`main` is `python -m numasweep calibrate`, the command of the bandwidth benchmark's Setup
(`plan.calibration_setup`, planning.grid.Setup): from the timings `python -m numasweep run-setup`
measured under the machine's measurement lock (the kernels' environment), it writes results/<system>/calibration.json (the decision, the rates
and intervals behind it, the kernel build) and calibration.shapes (what `numa_bandwidth
--shapes` reads: "KERNEL STORES SHAPE # how it was chosen" a line; the kernel puts the text after
`#` into each row's shape_choice). Every bandwidth job's launch line names that file, so each job
and each later run on that host runs the same shapes, and its provenance keeps the record;
`--variant` in a sweep's extra_args still fixes one shape by hand.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from numasweep.core.errors import NumasweepError
from numasweep.running import provenance
from numasweep.statistics.stats import center_interval

# The order of preference among shapes a calibration cannot tell apart: kernels/numa_bandwidth.c's
# variant order (the plain loop first, then scalar, 128-, 256- and 512-bit vectors, each plain
# before unrolled); the words are the report's.
PREFERENCE = {"loop": "plain loop", "scalar": "scalar code", "scalar-unroll": "scalar code, unrolled",
              "sse": "128-bit vectors", "sse-unroll": "128-bit vectors, unrolled",
              "avx2": "256-bit vectors", "avx2-unroll": "256-bit vectors, unrolled",
              "avx2-pages": "256-bit vectors, unrolled, four pages at a time",
              "avx512": "512-bit vectors", "avx512-unroll": "512-bit vectors, unrolled",
              "avx512-pages": "512-bit vectors, unrolled, four pages at a time"}
COLUMNS = ("kernel", "stores", "shape", "round", "mb_s")
MIN_ROUNDS = 3


def _order(shape: str) -> int:
    return list(PREFERENCE).index(shape) if shape in PREFERENCE else len(PREFERENCE)


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:.0f}%" if abs(ratio - 1) >= 0.005 else f"{(ratio - 1) * 100:.1f}%"


def decide_one(rounds: pd.DataFrame) -> dict:
    """One kernel and store kind: `rounds` has a row per round, a column per shape (MB/s)."""
    rounds = rounds.dropna(axis=1, how="all").dropna(axis=0, how="any")
    rates = {s: center_interval(rounds[s].to_numpy()) for s in rounds.columns}
    fastest = max(rates, key=lambda s: (rates[s].estimate, -_order(s)))
    ratios = {s: center_interval((rounds[fastest] / rounds[s]).to_numpy()) for s in rounds.columns if s != fastest}
    # Told apart: the fastest's rate over the other's, its interval wholly above 1.
    tied = [fastest] + [s for s, r in ratios.items() if not (np.isfinite(r.low) and r.low > 1)]
    shape = min(tied, key=_order)
    decided = len(tied) == 1
    if decided:
        runner_up = max(ratios, key=lambda s: rates[s].estimate) if ratios else None
    else:
        runner_up = fastest if shape != fastest else min((s for s in tied if s != shape), key=_order)
    if runner_up is None:
        over = None
    elif shape == fastest:
        over = ratios[runner_up]
    else:   # the chosen shape against the fastest: within its interval
        over = center_interval((rounds[shape] / rounds[runner_up]).to_numpy())
    return {
        "shape": shape, "decided": decided, "fastest": fastest, "tied": sorted(tied, key=_order),
        "over": runner_up,
        "ratio": None if over is None else [over.estimate, over.low, over.high],
        "rounds": int(len(rounds)),
        "rates": {s: [round(r.estimate, 1), round(r.low, 1), round(r.high, 1)]
                  for s, r in sorted(rates.items(), key=lambda kv: _order(kv[0]))},
    }


def decide(rows: pd.DataFrame) -> list[dict]:
    """Every kernel and store kind of a `numa_bandwidth --calibrate` table."""
    missing = [c for c in COLUMNS if c not in rows]
    if missing:
        raise NumasweepError(f"the calibration table has no column {', '.join(missing)}: run "
                             "`numa_bandwidth --calibrate=N` of this build again")
    out = []
    for (kernel, stores), g in rows.groupby(["kernel", "stores"], sort=False):
        wide = g.pivot_table(index="round", columns="shape", values="mb_s", aggfunc="first")
        if len(wide) < MIN_ROUNDS:
            raise NumasweepError(f"calibration: {kernel} {stores}: {len(wide)} rounds; give at least {MIN_ROUNDS} "
                                 "(config bandwidth.calibration.rounds)")
        out.append({"kernel": str(kernel), "stores": str(stores), **decide_one(wide)})
    return out


def reason(d: dict) -> str:
    """Why the shape was chosen: "chosen over 256-bit vectors by 6% (4% to 8%, 9 rounds)", or
    why the fixed order chose."""
    if d["ratio"] is None:
        return "the one shape this CPU runs"
    est, low, high = d["ratio"]
    other = PREFERENCE.get(d["over"], d["over"])
    span = (f"{_pct(low)} to {_pct(high)}" if math.isfinite(low) and math.isfinite(high) else "noise unknown")
    if d["decided"]:
        return f"chosen over {other} by {_pct(est)} ({span}, {d['rounds']} rounds)"
    if d["shape"] == d["fastest"]:
        return (f"the fastest, not told apart from {other} ({_pct(est)}: {span}, {d['rounds']} rounds); the first "
                "in the fixed order")
    return (f"not told apart from the fastest, {other} ({_pct(est)}: {span}, {d['rounds']} rounds); the first in "
            "the fixed order of those it could not be told from")


def words(d: dict) -> str:
    """"triad, regular stores: 128-bit vectors, unrolled, chosen over 256-bit vectors by 6% (4% to
    8%, 9 rounds)"."""
    return f"{d['kernel']}, {d['stores']} stores: {PREFERENCE.get(d['shape'], d['shape'])}, {reason(d)}"


def _gb_s(d: dict, shape: str) -> str:
    est, low, high = d["rates"][shape]
    return (f"{est / 1000:.2f} GB/s ({low / 1000:.2f} to {high / 1000:.2f})" if math.isfinite(low)
            and math.isfinite(high) else f"{est / 1000:.2f} GB/s (noise unknown)")


def choice(d: dict) -> str:
    """How the shape was chosen, as the rows' shape_choice gives it: `words` without the kernel,
    its rate in the calibration and, where another shape was chosen, the plain loop's: STREAM's
    own code, the figure to set against STREAM."""
    text = f"{reason(d)}; {_gb_s(d, d['shape'])} in the calibration"
    if d["shape"] != "loop" and "loop" in d["rates"]:
        text += f"; the plain loop (STREAM's shape) {_gb_s(d, 'loop')}"
    return text


def shapes_text(decisions: list[dict]) -> str:
    """What numa_bandwidth --shapes reads: "KERNEL STORES SHAPE # how it was chosen" a line."""
    lines = ["# numa_bandwidth --shapes: KERNEL STORES SHAPE # how it was chosen (python -m numasweep calibrate)"]
    return "\n".join(lines + [f"{d['kernel']} {d['stores']} {d['shape']} # {choice(d)}" for d in decisions]) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m numasweep calibrate",
                                 description="decide each bandwidth kernel's code shape from a calibration's timings")
    ap.add_argument("--table", required=True, type=Path,
                    help="the timings: numa_bandwidth --calibrate=N's table (python -m numasweep run-setup)")
    ap.add_argument("--launch", required=True, help="the line that measured them, for the record")
    ap.add_argument("--kernel", required=True, type=Path, help="the numa_bandwidth build it ran")
    ap.add_argument("--outputs", required=True, type=Path, nargs=2, metavar=("RECORD", "SHAPES"),
                    help="the decision (results/<system>/calibration.json) and what numa_bandwidth --shapes reads")
    a = ap.parse_args(argv)
    record, shapes = a.outputs
    try:
        rows = pd.read_csv(a.table)
    except (OSError, ValueError) as exc:
        raise NumasweepError(f"{a.table}: no calibration table ({exc}); rerun snakemake, which measures it "
                             "again") from None
    if rows.empty:
        raise NumasweepError(f"{a.table}: no rows; delete it and rerun snakemake")
    decisions = decide(rows)
    first = rows.iloc[0]
    made = dt.datetime.fromtimestamp(a.table.stat().st_mtime, dt.timezone.utc).isoformat(timespec="seconds")
    rec = {"made": made, "launch": a.launch, "kernel": str(a.kernel),
           "kernel_sha256": provenance.sha256(a.kernel) if a.kernel.exists() else None, "reads": str(shapes),
           "host": str(first.get("host", "")), "threads": int(first["threads"]), "cpus": str(first["cpus"]),
           "array_bytes": int(first["array_bytes"]), "rounds": int(rows["round"].nunique()),
           "level": 0.95, "decisions": decisions}
    record.write_text(json.dumps(rec, indent=2) + "\n")
    shapes.write_text(shapes_text(decisions))
    told = sum(d["decided"] for d in decisions)
    print(f"numasweep: calibration: {len(decisions)} kernel and store kinds, {told} told apart, "
          f"{len(decisions) - told} by the fixed order; {record}", file=sys.stderr)
    return 0
