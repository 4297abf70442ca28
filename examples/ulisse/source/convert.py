"""Transcribe the seed's STREAM thread table (threads.md) into the project's bandwidth schema.

Usage: python source/convert.py source/threads.md bandwidth.csv
Only what the seed states is filled in; see ../README.md for each column.
"""

from __future__ import annotations

import csv
import sys

COLUMNS = [
    "kernel", "pattern", "stride", "threads", "cpus", "cpu_nodes", "policy", "mem_nodes", "weights",
    "page_size", "array_bytes", "bytes_per_iter", "best_mb_s", "avg_mb_s", "min_mb_s", "ntimes",
    "validation", "page_fractions", "host",
    "job_id", "strategy", "domains", "ranks_per_domain", "memory", "repetition",
]
# Table column -> memory node: the seed runs on node 0's CPUs with memory on node 0 or node 1.
MEM_NODE = {"Same Socket": 0, "Other Socket": 1}


def convert(table_md: str) -> list[dict]:
    lines = [ln for ln in table_md.splitlines() if ln.strip().startswith("|")]
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    rows = []
    for ln in lines[2:]:
        cells = dict(zip(header, (c.strip() for c in ln.strip().strip("|").split("|"))))
        for column, node in MEM_NODE.items():
            threads = int(cells["threads"])
            rows.append({
                **{c: "" for c in COLUMNS},
                "pattern": "sequential", "threads": threads, "cpu_nodes": "0", "policy": "bind",
                "mem_nodes": str(node), "best_mb_s": cells[column],
                "job_id": f"stream-omp-mem{node}-t{threads}", "memory": f"node:{node}",
            })
    return rows


if __name__ == "__main__":
    src, out = sys.argv[1], sys.argv[2]
    with open(src) as fh:
        rows = convert(fh.read())
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(sorted(rows, key=lambda r: (r["mem_nodes"], r["threads"])))
