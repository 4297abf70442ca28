"""Import the table logs written by the older numa_bench and numa_allocator tools.

Both tools print one box-drawn table per run, one line per MPI rank:

- numa_bench: `| Ranks | Cores | NUMA | Address | NUMA | 1MB | 2MB | ... | 16384M |`, one latency
  column per size;
- numa_allocator: `| ranks | Cores | NUMA | Address | SIZE (MB) | NUMA | Page Size | Avg (ns) |`,
  one size for all ranks, `Cores` as the rank's CPU mask (`1,65`), the page size as `kB=4`.

The rows become the project's latency schema (docs/INTERFACES.md). What the legacy tools did not
record stays empty: they time one traversal, so the average they print goes to
`latency_ns_median` and min/max/samples/loads stay empty; placement was never checked page by
page, so `page_fractions` stays empty. `cpu` is the lowest CPU of the rank's mask (the other
CPUs of the mask are its SMT siblings). `mem_nodes` is the node the tool reported for the buffer;
`--mem-node` states what the run bound memory to (numactl --membind), which sets `policy=bind`
and the `memory` grid column, and is checked against the table.
"""

from __future__ import annotations

import argparse
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from numasweep.core import topology
from numasweep.core.topology import Topology
from numasweep.core.errors import NumasweepError
from numasweep.core.io import atomic_write_text
from numasweep.core.units import parse_cpulist, parse_size

LATENCY_COLUMNS = [
    "rank", "ranks", "mode", "host", "cpu", "cpu_node", "l3_group", "policy", "mem_nodes",
    "weights", "page_size", "size_bytes", "latency_ns_median", "latency_ns_min", "latency_ns_max",
    "samples", "loads", "page_fractions",
]
GRID_COLUMNS = ["job_id", "strategy", "domains", "ranks_per_domain", "memory", "repetition"]
# The launch line when the log starts with it (as the seeds' logs do), for the report's
# "Commands run"; empty otherwise.
COLUMNS = LATENCY_COLUMNS + GRID_COLUMNS + ["command"]
_LAUNCH_RE = re.compile(r"^\s*(?:\$\s*)?((?:srun|mpirun|mpiexec|numactl|sbatch)\s.*\S)\s*$")

# The allocator prints the kernel page size of the buffer in kB; the kernels spell it as --pages.
_PAGE_NAMES = {4: "4k", 2048: "2m", 1048576: "1g"}


@dataclass
class TableRow:
    line: int
    rank: int
    cpus: list[int]
    cpu_node: int
    mem_node: int
    size_bytes: int
    latency_ns: float
    page_size: str


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _is_rule(line: str) -> bool:
    s = line.strip()
    return bool(s) and set(s) <= set("|-= ")


def _page_name(text: str, where: str) -> str:
    m = re.fullmatch(r"kB=(\d+)", text.replace(" ", ""))
    if not m:
        raise NumasweepError(f"{where}: page size '{text}' is not of the form kB=N; fix the table")
    kb = int(m.group(1))
    return _PAGE_NAMES.get(kb, f"{kb}k")


def _header_sizes(cells: list[str], where: str) -> list[int]:
    sizes = []
    for c in cells:
        try:
            sizes.append(parse_size(c))
        except NumasweepError:
            raise NumasweepError(
                f"{where}: size column '{c}' is not a size like 512MB or 1024M; fix the header"
            ) from None
    return sizes


def parse_table(text: str, log: str) -> tuple[list[TableRow], dict]:
    """Rows of the first rank table in a legacy log, plus what the log says about the run.

    The returned dict has `mode` ('serial'/'concurrent' from the `argv[i] = ...` lines, None when
    the log has none), `ranks` (from 'Number of ranks: N', else the table's row count) and
    `command` (the first srun/mpirun/numactl line of the log, '' when there is none).
    """
    lines = text.splitlines()
    argv = [m.group(1).strip() for ln in lines if (m := re.match(r"\s*argv\[\d+\]\s*=\s*(.*)$", ln))]
    meta: dict = {"mode": None, "ranks": None, "command": ""}
    for ln in lines:
        if m := _LAUNCH_RE.match(ln):
            meta["command"] = m.group(1)
            break
    if argv:
        meta["mode"] = "serial" if "--serial" in argv else "concurrent"
    for ln in lines:
        if m := re.match(r"\s*Number of ranks:\s*(\d+)", ln):
            meta["ranks"] = int(m.group(1))

    header_at = next(
        (i for i, ln in enumerate(lines) if ln.lstrip().startswith("|") and _cells(ln)[0].lower() == "ranks"),
        None,
    )
    if header_at is None:
        raise NumasweepError(
            f"{log}: no rank table (a line starting '| Ranks |'); pass a numa_bench or numa_allocator log"
        )
    header = _cells(lines[header_at])
    where = f"{log}:{header_at + 1}"
    lowered = [h.lower() for h in header]
    if len(header) >= 8 and lowered[4].startswith("size") and lowered[6].startswith("page"):
        fmt = "allocator"
        if len(header) != 8:
            raise NumasweepError(f"{where}: numa_allocator header has {len(header)} columns, expected 8")
        sizes: list[int] = []
    elif len(header) > 5 and lowered[1] == "cores" and lowered[4] == "numa":
        fmt = "bench"
        sizes = _header_sizes(header[5:], where)
    else:
        raise NumasweepError(
            f"{where}: header '{lines[header_at].strip()}' is neither numa_bench nor numa_allocator; fix the table"
        )

    rows: list[TableRow] = []
    for i in range(header_at + 1, len(lines)):
        ln = lines[i]
        where = f"{log}:{i + 1}"
        if _is_rule(ln):
            if ln.strip().startswith("=") and rows:
                break
            continue
        if not ln.lstrip().startswith("|"):
            if rows:
                break
            raise NumasweepError(f"{where}: expected a table row after the header, found '{ln.strip()}'")
        cells = _cells(ln)
        expected = 8 if fmt == "allocator" else 5 + len(sizes)
        if len(cells) != expected:
            raise NumasweepError(
                f"{where}: row has {len(cells)} columns, the header has {expected}; fix or remove the row"
            )
        try:
            rank, cpus = int(cells[0]), parse_cpulist(cells[1])
            cpu_node = int(cells[2])
            if fmt == "allocator":
                size_list = [parse_size(cells[4])]
                mem_node = int(cells[5])
                page = _page_name(cells[6], where)
                values = [float(cells[7])]
            else:
                size_list = sizes
                mem_node = int(cells[4])
                # numa_bench prints only the system's base page size, not the buffer's
                page = ""
                values = [float(c) for c in cells[5:]]
        except (ValueError, NumasweepError) as exc:
            detail = str(exc) if isinstance(exc, NumasweepError) else f"value not a number ({exc})"
            raise NumasweepError(f"{where}: {detail.removeprefix(where + ': ')}; fix the row") from None
        if not cpus:
            raise NumasweepError(f"{where}: empty Cores cell; fix the row")
        for size, value in zip(size_list, values):
            rows.append(TableRow(i + 1, rank, cpus, cpu_node, mem_node, size, value, page))
    if not rows:
        raise NumasweepError(f"{log}:{header_at + 1}: the rank table has no rows")
    ranks = sorted({r.rank for r in rows})
    if ranks != list(range(len(ranks))):
        first_bad = next(r for r in rows if r.rank not in range(len(ranks)) or ranks.count(r.rank) > 1)
        raise NumasweepError(f"{log}:{first_bad.line}: ranks must run 0..N-1 once each; fix the table")
    if meta["ranks"] is not None and meta["ranks"] != len(ranks):
        raise NumasweepError(
            f"{log}: the log says {meta['ranks']} ranks but the table has {len(ranks)}; import the complete log"
        )
    meta["ranks"] = len(ranks)
    return rows, meta


def _l3_group(cpu: int, topo: Topology) -> int:
    for index, group in enumerate(topo.l3_groups):
        if cpu in group:
            return index
    return -1


def load_topology(path: str | Path) -> Topology:
    """The topology of a topology.json or an arch YAML file (validated)."""
    return topology.load(path)


def _memory_spec(mem_nodes: list[int]) -> str:
    if len(set(mem_nodes)) == 1:
        return f"node:{mem_nodes[0]}"
    return "nodes:" + ",".join(str(n) for n in mem_nodes)


def import_log(
    log: str | Path,
    topo: Topology,
    mode: str | None = None,
    mem_nodes: list[int] | None = None,
    job_id: str | None = None,
) -> pd.DataFrame:
    """A legacy table log as a latency DataFrame with the project's columns (COLUMNS)."""
    log = Path(log)
    if not log.exists():
        raise NumasweepError(f"{log}: no such log file")
    rows, meta = parse_table(log.read_text(errors="replace"), str(log))
    if meta["mode"] and mode and meta["mode"] != mode:
        raise NumasweepError(
            f"{log}: the log's argv lines say mode {meta['mode']} but --mode {mode} was given; drop --mode"
        )
    mode = meta["mode"] or mode
    if mode is None:
        raise NumasweepError(f"{log}: the log has no argv lines to tell the mode; pass --mode concurrent|serial")
    nranks = meta["ranks"]
    if mem_nodes is not None:
        if len(mem_nodes) == 1:
            mem_nodes = mem_nodes * nranks
        if len(mem_nodes) != nranks:
            raise NumasweepError(
                f"--mem-node lists {len(mem_nodes)} nodes for {nranks} ranks; give one node or one per rank"
            )
        for r in rows:
            if r.mem_node != mem_nodes[r.rank]:
                raise NumasweepError(
                    f"{log}:{r.line}: rank {r.rank} memory is on node {r.mem_node}, not the bound node "
                    f"{mem_nodes[r.rank]}; check --mem-node"
                )
    node_ids = topo.node_ids()
    cpu_nodes = sorted({r.cpu_node for r in rows})
    per_domain = {n: len({r.rank for r in rows if r.cpu_node == n}) for n in cpu_nodes}
    records = []
    for r in rows:
        if node_ids and r.cpu_node not in node_ids:
            raise NumasweepError(f"{log}:{r.line}: node {r.cpu_node} is not in the topology; check --arch")
        cpu = min(r.cpus)
        records.append({
            "rank": r.rank,
            "ranks": nranks,
            "mode": mode,
            "host": "",
            "cpu": cpu,
            "cpu_node": r.cpu_node,
            "l3_group": _l3_group(cpu, topo),
            "policy": "bind" if mem_nodes is not None else "",
            "mem_nodes": str(r.mem_node),
            "weights": "",
            "page_size": r.page_size,
            "size_bytes": r.size_bytes,
            "latency_ns_median": r.latency_ns,
            "latency_ns_min": None,
            "latency_ns_max": None,
            "samples": None,
            "loads": None,
            "page_fractions": "",
            "job_id": job_id or log.stem,
            "strategy": "",
            "domains": ",".join(str(n) for n in cpu_nodes),
            "ranks_per_domain": per_domain[cpu_nodes[0]] if len(set(per_domain.values())) == 1 else None,
            "memory": _memory_spec(mem_nodes) if mem_nodes is not None else "",
            "repetition": None,
            "command": meta["command"],
        })
    df = pd.DataFrame.from_records(records, columns=COLUMNS)
    return df.sort_values(["rank", "size_bytes"], kind="stable").reset_index(drop=True)


def to_csv_text(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, lineterminator="\n")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m numasweep import-legacy",
        description="Convert a numa_bench/numa_allocator table log to the project's latency CSV.",
    )
    p.add_argument("log", help="log file holding one rank table")
    p.add_argument("--arch", required=True, help="topology.json or arch YAML of the system that ran it")
    p.add_argument("--mode", choices=["concurrent", "serial"], help="when the log has no argv lines")
    p.add_argument("--mem-node", help="node(s) the run bound memory to: one node, or one per rank (0,0,1,1)")
    p.add_argument("--job-id", help="job_id column (default: the log's file name without suffix)")
    p.add_argument("--append", action="store_true", help="add to OUT.csv, replacing rows of the same job_id")
    p.add_argument("-o", "--output", required=True, help="CSV to write")
    args = p.parse_args(argv)
    mem = None
    if args.mem_node is not None:
        try:
            mem = [int(x) for x in args.mem_node.split(",")]
        except ValueError:
            raise NumasweepError(f"--mem-node '{args.mem_node}' is not a node list like 3 or 0,0,1,1") from None
    df = import_log(args.log, load_topology(args.arch), args.mode, mem, args.job_id)
    out = Path(args.output)
    if args.append and out.exists():
        old = pd.read_csv(out, keep_default_na=False, dtype=str)
        if list(old.columns) != COLUMNS:
            raise NumasweepError(f"{out}: not a latency CSV with the project's columns; write a new file")
        new = pd.read_csv(io.StringIO(to_csv_text(df)), keep_default_na=False, dtype=str)
        df_text = pd.concat([old[old["job_id"] != new["job_id"].iloc[0]], new]).to_csv(
            index=False, lineterminator="\n"
        )
    else:
        df_text = to_csv_text(df)
    atomic_write_text(out, df_text)
    print(f"{out}: {len(df)} rows from {args.log} ({df['mode'].iloc[0]}, {df['ranks'].iloc[0]} ranks)")
    return 0
