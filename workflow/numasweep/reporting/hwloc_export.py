"""The measured latency and bandwidth matrices as hwloc memory attributes.

hwloc fills its `Latency` and `Bandwidth` memory attributes from the firmware (HMAT, CDAT) only;
a runtime that picks memory by them (hwloc_memattr_get_best_target, MPI and OpenMP runtimes,
`hwloc-bind --best-memattr`) then trusts the firmware's numbers. This writes the numbers
numasweep measured into an hwloc XML topology instead, so that such a runtime, pointed at the
file (HWLOC_XMLFILE=FILE, or hwloc_topology_set_xml), uses the measurement.

The file is an hwloc XML topology of the machine measured (`lstopo --of xml`, taken on that
machine, or run here) with the `Latency` and `Bandwidth` attributes replaced by one
`memattr_value` per cell of the measured matrices: target the memory node's NUMANode object
(by its gp_index), initiator the CPU node's cpuset; the element and attribute names are those
hwloc's own XML export writes (hwloc/topology-xml.c). Units are hwloc's: Latency in
nanoseconds, Bandwidth in MiB/s (the bandwidth kernel counts MB/s, 10^6 bytes). Check the file
with `lstopo --input FILE --memattrs`.

`python -m numasweep hwloc-export RESULTS [--base XML] -o OUT.xml`; the workflow takes the base
on the machine measured (`hwloc-export --lstopo -o results/<system>/hwloc.xml`, rule
hwloc_topology) and writes the export beside the report (rule hwloc_export).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from numasweep.core.errors import NumasweepError
from numasweep.core.io import atomic_write_text
from numasweep.results import aggregate, disturbed, matrices

# quantity -> (hwloc attribute, its flags, factor from our unit to hwloc's). Flags as hwloc
# defines them: HIGHER_FIRST 1, LOWER_FIRST 2, NEED_INITIATOR 4.
ATTRIBUTES = {
    "latency_ns": ("Latency", 2 | 4, 1.0),
    "bandwidth_mb_s": ("Bandwidth", 1 | 4, 1e6 / 2**20),
}
HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n'
# Children of <topology> that hwloc writes after its memory attributes.
AFTER_MEMATTRS = ("cpukind", "info", "memtier", "pci_locality")


def machine_xml() -> str:
    """`lstopo --of xml` of this machine."""
    lstopo = shutil.which("lstopo") or shutil.which("lstopo-no-graphics")   # hwloc built without graphics
    if not lstopo:
        raise NumasweepError("lstopo not found: install hwloc (apt-get install hwloc), or pass --base "
                             "with the XML `lstopo --of xml` wrote on the machine measured")
    proc = subprocess.run([lstopo, "--of", "xml", "-"], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise NumasweepError(f"lstopo --of xml failed: {(proc.stderr or proc.stdout).strip()[:200]}")
    return proc.stdout


def export(base: str, measured: dict[str, pd.DataFrame], where: str = "base XML", mark: str | None = None) -> str:
    """`base` (an hwloc XML topology) with the measured matrices as its Latency and Bandwidth
    attributes; a node the base lacks is refused, naming it. `mark`: said in an info attribute
    of the machine object (NumasweepDisturbed): the series measured while disturbed that were
    exported all the same."""
    try:
        root = ET.fromstring(base)
    except ET.ParseError as exc:
        raise NumasweepError(f"{where}: not XML ({exc}); give what `lstopo --of xml` writes") from None
    numa = {int(o.get("os_index", -1)): o for o in root.iter("object") if o.get("type") == "NUMANode"}
    if root.tag != "topology" or not numa:
        raise NumasweepError(f"{where}: not an hwloc topology with NUMA nodes; give what `lstopo --of xml` writes")
    children = list(root)
    at = next((i for i, c in enumerate(children) if c.tag in AFTER_MEMATTRS), len(children))
    added = []
    for quantity, (name, flags, factor) in ATTRIBUTES.items():
        matrix = measured.get(quantity)
        if matrix is None:
            continue
        for old in [c for c in root if c.tag == "memattr" and c.get("name") == name]:
            root.remove(old)
        attr = ET.Element("memattr", name=name, flags=str(flags))
        for (cpu, mem), value in sorted(matrices.cells(matrix).items()):
            for node, role in ((cpu, "CPU"), (mem, "memory")):
                if node not in numa:
                    raise NumasweepError(
                        f"{where}: no NUMA node {node} (the {role} node of a measured {quantity} cell); "
                        f"give --base the XML of the machine measured (nodes here: {sorted(numa)})")
            ET.SubElement(attr, "memattr_value", target_obj_type="NUMANode",
                          target_obj_gp_index=numa[mem].get("gp_index", ""),
                          value=str(max(1, round(value * factor))),
                          initiator_cpuset=numa[cpu].get("cpuset", ""))
        added.append(attr)
    if not added:
        raise NumasweepError("no measured latency or bandwidth matrix to export: the results need the "
                             "latency or bandwidth benchmark with threads or ranks on single nodes")
    # No XML comment to say where the numbers come from: hwloc's parsers stop at one.
    root[at:at] = added
    machine = next((c for c in root if c.tag == "object"), None)
    if mark and machine is not None:
        machine.insert(0, ET.Element("info", name="NumasweepDisturbed", value=mark))
    ET.indent(root, space="  ")
    return HEADER + ET.tostring(root, encoding="unicode") + "\n"


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
                    help="export series measured while disturbed too (the XML then says so in a comment)")
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
                             "place memory by them; measure them again on a quiet machine, or give --force to "
                             "export them marked")
    measured = matrices.measured(frames if args.force else clean)
    mark = "; ".join(r.sentence() for r in left) if left else None
    atomic_write_text(args.output, export(base, measured, args.base or "lstopo --of xml", mark))
    names = ", ".join(ATTRIBUTES[q][0] for q in ATTRIBUTES if q in measured)
    print(f"{args.output}: measured {names} as hwloc memory attributes; "
          f"check with `lstopo --input {args.output} --memattrs`, use with HWLOC_XMLFILE={args.output}")
    return 0
