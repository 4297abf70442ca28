"""The measured latency and bandwidth matrices as hwloc memory attributes.

hwloc fills its `Latency` and `Bandwidth` memory attributes from the firmware (HMAT, CDAT) only;
a runtime that picks memory by them (hwloc_memattr_get_best_target, MPI and OpenMP runtimes,
`hwloc-bind --best-memattr`) then trusts the firmware's numbers. This writes the numbers
numasweep measured into an hwloc XML topology instead, so that such a runtime, pointed at the
file (HWLOC_XMLFILE=FILE, or hwloc_topology_set_xml), uses the measurement.

The file is an hwloc XML topology of the machine measured (`lstopo --of xml`, taken on that
machine, or run here) with its `Latency` and `Bandwidth` attributes set by hwloc's
`hwloc-annotate`, one value per cell of the measured matrices: target the memory node's NUMANode
(by its logical index, which `hwloc-info` gives), initiator the CPU node's cpuset. The base's
values of a measured attribute are dropped first (hwloc-annotate sets values, it cannot remove
them), so firmware numbers are not mixed with measured ones. Units are hwloc's: Latency in nanoseconds,
Bandwidth in MiB/s (a rate measured in MB/s, 10^6 bytes, is converted). Check the file with
`lstopo --input FILE --memattrs`.

`python -m numasweep hwloc-export RESULTS [--base XML] -o OUT.xml`; the workflow takes the base
on the machine measured (`hwloc-export --lstopo -o results/<system>/hwloc.xml`, rule
hwloc_topology) and writes the export beside the report (rule hwloc_export).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from numasweep.core.errors import NumasweepError
from numasweep.core.io import atomic_write_text
from numasweep.core import registry
from numasweep.core.units import RATE_UNITS, TIME_UNITS, metric_unit, unit_kind
from numasweep.results import aggregate, disturbed, matrices

# hwloc's attributes of a time and of a rate, each in hwloc's unit: ns, and MiB/s (2^20 bytes/s).
ATTRIBUTES = {"time": ("Latency", TIME_UNITS["ns"]), "rate": ("Bandwidth", float(1 << 20))}
HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n'


def hwloc(tool: str, *args: str) -> str:
    """The standard output of hwloc's command `tool` (lstopo: `lstopo-no-graphics` where hwloc was
    built without graphics); a missing tool or a failed run is one NumasweepError."""
    path = shutil.which(tool) or (tool == "lstopo" and shutil.which("lstopo-no-graphics"))
    if not path:
        raise NumasweepError(f"{tool} not found: install hwloc (apt-get install hwloc, or the site's hwloc "
                             "module)")
    proc = subprocess.run([path, *args], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise NumasweepError(f"{tool} failed: {(proc.stderr or proc.stdout).strip()[:200]}")
    return proc.stdout


def machine_xml() -> str:
    """`lstopo --of xml` of this machine."""
    return hwloc("lstopo", "--of", "xml", "-")


def attribute(quantity: str) -> tuple[str, float] | None:
    """(hwloc attribute, factor from the quantity's unit to hwloc's) of a measured matrix's
    quantity (`Bench.tables.matrix_of`), by the unit its name says: a time is hwloc's Latency, a rate its
    Bandwidth; None for a quantity hwloc has no attribute for."""
    kind = unit_kind(quantity)
    if kind is None:
        return None
    name, base = ATTRIBUTES[kind]
    units = TIME_UNITS if kind == "time" else RATE_UNITS
    return name, units[metric_unit(quantity)] / base


def export(base: str, measured: dict[str, pd.DataFrame], where: str = "base XML", mark: str | None = None,
           sources: dict[str, str] | None = None) -> str:
    """`base` (an hwloc XML topology) with the measured matrices as its Latency and Bandwidth
    attributes; a node the base lacks is refused, naming it. `mark`: said in an info attribute
    of the machine object (NumasweepDisturbed): the series measured while disturbed that were
    exported all the same; `sources`: what each attribute's values are (hwloc attribute -> the
    series and statistic), an info attribute each (NumasweepLatency, NumasweepBandwidth)."""
    try:
        root = ET.fromstring(base)
    except ET.ParseError as exc:
        raise NumasweepError(f"{where}: not XML ({exc}); give what `lstopo --of xml` writes") from None
    numa = {int(o.get("os_index", -1)): o for o in root.iter("object") if o.get("type") == "NUMANode"}
    if root.tag != "topology" or not numa:
        raise NumasweepError(f"{where}: not an hwloc topology with NUMA nodes; give what `lstopo --of xml` writes")
    values = {}
    for quantity, matrix in measured.items():
        if matrix is None or attribute(quantity) is None:
            continue
        name, factor = attribute(quantity)
        values[name] = []
        for (cpu, mem), value in sorted(matrices.cells(matrix).items()):
            for node, role in ((cpu, "CPU"), (mem, "memory")):
                if node not in numa:
                    raise NumasweepError(
                        f"{where}: no NUMA node {node} (the {role} node of a measured {quantity} cell); "
                        f"give --base the XML of the machine measured (nodes here: {sorted(numa)})")
            values[name].append((cpu, mem, max(1, round(value * factor))))
    if not values:
        words = " or ".join(name.lower() for name, _ in ATTRIBUTES.values())
        benches = " or ".join(b.name for b in registry.all_benches().values() if b.tables.matrix is not None)
        raise NumasweepError(f"no measured {words} matrix to export: the results need the {benches} benchmark "
                             "with threads or ranks on single nodes")
    for old in [c for c in root if c.tag == "memattr" and c.get("name") in values]:
        root.remove(old)
    with tempfile.TemporaryDirectory() as tmp:
        xml = str(Path(tmp) / "topology.xml")
        Path(xml).write_text(HEADER + ET.tostring(root, encoding="unicode") + "\n")
        # hwloc-annotate names a NUMA node by its logical index; the matrices by the OS's.
        logical = {int(os_index): index for index, os_index in
                   re.findall(r"logical index = (\d+)\n os index = (\d+)", hwloc("hwloc-info", "--input", xml,
                                                                                   "NUMANode:all"))}
        for name, cells in values.items():
            for cpu, mem, value in cells:
                hwloc("hwloc-annotate", xml, xml, f"NUMANode:{logical[mem]}", "memattr", name,
                      numa[cpu].get("cpuset", ""), str(value))
        # No XML comment to say where the numbers come from: hwloc's parsers stop at one.
        for name, text in (sources or {}).items():
            if name in values:
                hwloc("hwloc-annotate", "--ri", xml, xml, "root", "info", f"Numasweep{name}", text)
        if mark:
            hwloc("hwloc-annotate", "--ri", xml, xml, "root", "info", "NumasweepDisturbed", mark)
        return Path(xml).read_text()


def read_base(path: str) -> str:
    """The text of --base: a folder, a missing file or one that cannot be read is one NumasweepError
    saying what --base expects."""
    expects = ("give --base the `lstopo --of xml` file of the machine measured (the workflow's hwloc_topology "
               "rule writes it as results/<system>/hwloc.xml)")
    if Path(path).is_dir():
        raise NumasweepError(f"--base {path}: is a folder; {expects}")
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise NumasweepError(f"--base {path}: no such file; {expects}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise NumasweepError(f"--base {path}: cannot be read ({getattr(exc, 'strerror', None) or exc}); "
                             f"{expects}") from None


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m numasweep hwloc-export", description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?", help="results folder with the aggregated tables (results/<system>)")
    ap.add_argument("--base", help="hwloc XML of the machine measured (default: `lstopo --of xml` here)")
    ap.add_argument("--lstopo", action="store_true",
                    help="only write this machine's `lstopo --of xml` to OUTPUT: the base, taken on the "
                         "machine measured (the workflow's hwloc_topology rule)")
    ap.add_argument("-o", "--output", required=True, help="hwloc XML to write")
    ap.add_argument("--force", action="store_true",
                    help="export series measured while disturbed too (the machine object's NumasweepDisturbed "
                         "info then says so)")
    args = ap.parse_args(argv)
    if args.lstopo:
        atomic_write_text(args.output, machine_xml())
        print(f"{args.output}: this machine's hwloc topology (lstopo --of xml)")
        return 0
    if not args.results:
        ap.error("give the results folder (results/<system>), or --lstopo")
    base = read_base(args.base) if args.base else machine_xml()
    frames = aggregate.load_results(args.results)
    clean, left = disturbed.split(frames)
    if left and not args.force:
        raise NumasweepError(f"hwloc-export {args.results}: {left[0].sentence()}"
                             f"{f' (and {len(left) - 1} more series)' if len(left) > 1 else ''}: a runtime would "
                             "place memory by them; measure them again on a quiet machine, or export them marked: "
                             "give --force (through snakemake: --config conclude_disturbed=true)")
    topology = aggregate.load_topology(args.results)
    measured = matrices.measured(frames if args.force else clean, topology)
    mark = "; ".join(r.sentence() for r in left) if left else None
    said = {attribute(q)[0]: text for q, text in matrices.sources(frames if args.force else clean, topology).items()
            if attribute(q)}
    atomic_write_text(args.output, export(base, measured, args.base or "lstopo --of xml", mark, said))
    names = "; ".join(f"{attribute(q)[0]} ({said[attribute(q)[0]]})" if attribute(q)[0] in said else attribute(q)[0]
                      for q in measured if attribute(q))
    print(f"{args.output}: measured {names} as hwloc memory attributes; "
          f"check with `lstopo --input {args.output} --memattrs`, use with HWLOC_XMLFILE={args.output}")
    for bench in registry.all_benches().values():
        quantity = bench.tables.matrix_of
        if bench.tables.matrix is not None and bench.name in frames and quantity not in measured and attribute(quantity):
            print(f"{args.output}: no {attribute(quantity)[0]}: {bench.name} measured no node-to-node cell of memory "
                  f"(no curve reached memory's plateau, or no run had its threads or ranks on one node); sweep past "
                  "the last cache with ranks or threads on single nodes to export it")
    return 0
