"""Data quality from the machine state each job recorded: which states distorted which host.

Aggregation copies each job's provenance `system{}` (numasweep.system_state) into the
aggregated table as `sys_<field>` columns; `notes(frames)` gives, per distinct state, the
data-quality sentences of `system_state.quality_notes` with the hosts (and benchmarks) that
measured in it, for the report's data-quality part. A table without those columns (cached
examples, imported legacy tables) gives no note.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from numasweep.system_state import SystemState, quality_notes

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
