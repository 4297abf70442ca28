"""`numa_migrate` (benchmark `migrate`): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

import itertools
import random

from helpers.jobmodel import HOST, arg, distance, jitter
from numasweep.core.topology import Topology
from numasweep.core.units import parse_sizes
from numasweep.planning import grid

KERNEL = "numa_migrate"
BENCH = "migrate"

# The job model: a move of S bytes of P pages takes P x PAGE_S (the per-page bookkeeping: unmap,
# TLB shootdown, remap; a huge page pays it once) plus S / (GB_S x 10^9) x distance/10 (the copy),
# the same each way; `slower` (src, dst) makes that direction's moves `by` times longer.
GB_S, PAGE_S = 8.0, 0.5e-6


def migrate_rows(src: int, dst: int, sizes: list[int], distance: int = 10, pages: str = "4k", method: str = "move_pages",
                 repetitions: int = 3, slower: tuple[int, int] | None = None, by: float = 2.0, threads: int = 1,
                 batch: int = 512, rng: random.Random | None = None) -> list[dict]:
    """numa_migrate's rows for one job (forward src -> dst, then back), from the model above."""
    rng = rng or random.Random(f"{src}-{dst}-{method}-{pages}")
    page = 4096 if pages in ("4k", "thp") else {"2m": 2 << 20, "1g": 1 << 30}[pages]
    rows = []
    for rep, size in itertools.product(range(repetitions), sizes):
        for direction, a, b in (("forward", src, dst), ("back", dst, src)):
            moves = size // (2 << 20 if pages == "thp" else page)
            seconds = moves * PAGE_S + size / (GB_S * 1e9) * distance / 10
            seconds *= (by if slower == (a, b) else 1.0) * jitter(rng)
            total = size // page
            rows.append({"direction": direction, "src": a, "dst": b, "method": method, "pages": pages,
                         "page_bytes": page, "size_bytes": size, "threads": threads if method == "move_pages" else 1,
                         "batch": batch if method == "move_pages" else 0, "repetition": rep,
                         "seconds": round(seconds, 9), "gb_s": round(size / seconds / 1e9, 6), "pages_total": total,
                         "pages_moved": total, "pages_elsewhere": 0, "pages_failed": 0, "numa_pages_migrated": 0,
                         "pgmigrate_success": size // 4096, "pgmigrate_fail": 0,
                         "vmstat_deltas": f"pgmigrate_success:{size // 4096},numa_hit:{size // 4096}",
                         "page_fractions": ",".join(f"{n}:{1.0 if n == b else 0.0:.4f}" for n in sorted({a, b})),
                         "host": HOST, "on_cpu_pct": 40.0})
    return rows


def rows(job: grid.Job, topo: Topology, rng: random.Random) -> list[dict]:
    """The job model's rows of one planned job (`migrate_rows`)."""
    src, dst = int(arg(job, "src")), int(arg(job, "dst"))
    return migrate_rows(src, dst, parse_sizes(arg(job, "size")), distance(topo, src, dst), arg(job, "pages"),
                        arg(job, "method"), int(arg(job, "ntimes")), threads=job.threads,
                        batch=int(arg(job, "batch", "0")), rng=rng)


# Its small test sizes under the sanitizers (tests/kernels/test_sanitize.py): test id -> arguments.
SANITIZED = {
    "migrate": ["--src=0", "--dst=0", "--allow-same", "--size=1M", "--ntimes=1", "--threads=3", "--batch=7", "--quiet"],
}

# Bad invocations it refuses in one line `<kernel>: error: ...` (tests/catalogue/test_catalogue.py).
BAD_ARGS = ["--bogus", "--size=abc", "--size=0", "--src=x", "--method=memcpy", "--batch=0", "--threads=0", "--ntimes=0"]

# A small job table (header and two rows) its aggregation accepts; the catalogue spoils one
# cell of it per case (tests/catalogue/test_catalogue.py).
# it places its buffer with --src/--dst, not --policy/--mem-nodes
PLACE_ARGS = ["--src=0", "--dst=62"]
GOOD = ("direction,src,dst,method,size_bytes,seconds,gb_s,pages_total,pages_moved\n"
        "forward,0,1,mbind,268435456,0.1,2.68,65536,65536\nback,1,0,mbind,268435456,0.1,2.68,65536,65536\n")
