"""The measured matrices written as hwloc memory attributes, read back by the real lstopo
(Debian's hwloc): what a runtime pointed at the file will see."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from numasweep.core.errors import NumasweepError
from numasweep.reporting import hwloc_export
from numasweep.results import aggregate, matrices

REPO = Path(__file__).resolve().parents[2]


def lstopo(*args: str) -> str:
    assert shutil.which("lstopo"), "lstopo is not installed (apt-get install hwloc)"
    proc = subprocess.run(["lstopo", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def memattrs(path: Path, *args: str) -> dict[str, dict[tuple[int, str], int]]:
    """lstopo --memattrs as {attribute: {(target NUMANode logical index, initiator cpuset): value}};
    with "-p", the target's OS index."""
    out: dict[str, dict[tuple[int, str], int]] = {}
    name = ""
    for line in lstopo("--input", str(path), "--memattrs", *args).splitlines():
        if m := re.match(r"Memory attribute #\d+ name `(\w+)'", line):
            name = m.group(1)
        elif m := re.match(r"\s+NUMANode [LP]#(\d+) = (\d+) from cpuset (0x[0-9a-f,x]+)", line):
            out.setdefault(name, {})[(int(m.group(1)), m.group(3))] = int(m.group(2))
    return out


def test_measured_latency_of_a_four_node_machine_is_what_lstopo_prints(tmp_path):
    """examples/lumi-g-remote: ranks on each node, memory on node 3; the base is hwloc's own
    synthetic four-node machine (one package, one NUMA node and two PUs each), as
    `lstopo --of xml` writes."""
    base = tmp_path / "base.xml"
    base.write_text(lstopo("--input", "pack:4 [numa] core:2 pu:1", "--of", "xml", "-"))
    out = tmp_path / "measured.xml"
    proc = subprocess.run([sys.executable, "-m", "numasweep", "hwloc-export", str(REPO / "examples" / "lumi-g-remote"),
                           "--base", str(base), "-o", str(out)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert f"lstopo --input {out} --memattrs" in proc.stdout
    measured = matrices.measured(aggregate.load_results(REPO / "examples" / "lumi-g-remote"))["latency_ns"]
    want = {(mem, f"0x{3 << 2 * cpu:08x}"): round(v) for (cpu, mem), v in matrices.cells(measured).items()}
    assert len(want) == 4 and {mem for _, mem in matrices.cells(measured)} == {3}
    assert memattrs(out)["Latency"] == want
    assert "Bandwidth" not in memattrs(out)  # lumi-g measured no bandwidth: hwloc's stays empty


def test_nodes_are_the_os_nodes_where_hwloc_numbers_them_otherwise(tmp_path):
    """hwloc-annotate names a NUMA node by hwloc's logical index: a base whose OS numbers run
    another way (OS node 3 is hwloc's first) still gets each value on the OS node measured, from
    the cpuset of the OS node the ranks ran on."""
    order = [3, 1, 2, 0]  # the OS node of each package
    base = lstopo("--input", f"pack:4 [numa(indexes={','.join(map(str, order))})] core:2 pu:1", "--of", "xml", "-")
    measured = matrices.measured(aggregate.load_results(REPO / "examples" / "lumi-g-remote"))
    out = tmp_path / "measured.xml"
    out.write_text(hwloc_export.export(base, measured))
    want = {(mem, f"0x{3 << 2 * order.index(cpu):08x}"): round(v)
            for (cpu, mem), v in matrices.cells(measured["latency_ns"]).items()}
    assert memattrs(out, "-p")["Latency"] == want
    assert memattrs(out)["Latency"].keys() == {(0, cpuset) for _, cpuset in want}  # OS node 3 is L#0


def test_without_hwloc_the_export_says_how_to_install_it(tmp_path):
    base = tmp_path / "base.xml"
    base.write_text(lstopo("--input", "pack:4 [numa] core:2 pu:1", "--of", "xml", "-"))
    (tmp_path / "bin").mkdir()
    out = tmp_path / "measured.xml"
    proc = subprocess.run([sys.executable, "-m", "numasweep", "hwloc-export", str(REPO / "examples" / "lumi-g-remote"),
                           "--base", str(base), "-o", str(out)], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PATH": str(tmp_path / "bin")})
    line = proc.stderr.strip()
    assert proc.returncode == 2 and not out.exists(), proc.stderr
    assert "\n" not in line and "not found: install hwloc (apt-get install hwloc" in line, line


def test_this_machine_with_both_attributes(tmp_path):
    base = hwloc_export.machine_xml()
    latency = pd.DataFrame([[93.4]], index=[0], columns=[0])
    bandwidth = pd.DataFrame([[20971.52]], index=[0], columns=[0])  # MB/s: 20000 MiB/s
    out = tmp_path / "measured.xml"
    out.write_text(hwloc_export.export(base, {"latency_ns": latency, "bandwidth_mb_s": bandwidth}))
    got = memattrs(out)
    assert list(got["Latency"].values()) == [93]
    assert list(got["Bandwidth"].values()) == [20000]
    # Exported twice: the attributes are replaced, not doubled.
    again = tmp_path / "again.xml"
    again.write_text(hwloc_export.export(out.read_text(), {"latency_ns": latency * 2}))
    assert list(memattrs(again)["Latency"].values()) == [187]
    assert again.read_text().count('<memattr name="Latency"') == 1


def test_a_node_the_base_lacks_is_refused(tmp_path):
    base = lstopo("--input", "pack:1 [numa] core:2 pu:1", "--of", "xml", "-")
    with pytest.raises(NumasweepError, match=r"no NUMA node 2 \(the memory node"):
        hwloc_export.export(base, {"latency_ns": pd.DataFrame([[90.0, 200.0]], index=[0], columns=[0, 2])})
    with pytest.raises(NumasweepError, match="no measured latency or bandwidth"):
        hwloc_export.export(base, {})


def test_series_measured_while_disturbed_are_refused_unless_forced(tmp_path):
    """One job of examples/lumi-g-remote marked disturbed (its provenance verdict): the export
    refuses in one line naming the series and the reason; with --force it exports, said in the
    machine object's info (lstopo reads the file still)."""
    results = tmp_path / "results"
    shutil.copytree(REPO / "examples" / "lumi-g-remote", results)
    table = pd.read_csv(results / "latency.csv")
    job = table["job_id"].iloc[0]
    table["quality"] = ["disturbed" if j == job else "quiet" for j in table["job_id"]]
    table["quality_reason"] = ["rank 0 ran on its CPU 2% of a sample's time" if j == job else "" for j in table["job_id"]]
    table.to_csv(results / "latency.csv", index=False)
    base = tmp_path / "base.xml"
    base.write_text(lstopo("--input", "pack:4 [numa] core:2 pu:1", "--of", "xml", "-"))
    out = tmp_path / "measured.xml"
    argv = [sys.executable, "-m", "numasweep", "hwloc-export", str(results), "--base", str(base), "-o", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and not out.exists(), proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and "disturbed" in line and "2% of a sample's time" in line and "--force" in line, line
    proc = subprocess.run(argv + ["--force"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert 'name="NumasweepDisturbed"' in out.read_text()
    assert memattrs(out)["Latency"]


def test_the_exported_latency_is_the_headlines_dram_and_says_what_it_is(tmp_path):
    """The Zen 4 sweep (tests/fixtures/measured/zen4-vm), exported with --force for its disturbed
    job: the Latency value is the summary's DRAM value (the end of the memory plateau of the
    one-rank huge-page curve), and the file and the console say which series and statistic."""
    from numasweep.findings import analysis
    from numasweep.reporting import report

    results = REPO / "tests" / "fixtures" / "measured" / "zen4-vm"
    base = tmp_path / "base.xml"
    base.write_text(lstopo("--input", "pack:1 [numa] core:2 pu:1", "--of", "xml", "-"))
    out = tmp_path / "measured.xml"
    proc = subprocess.run([sys.executable, "-m", "numasweep", "hwloc-export", str(results), "--base", str(base),
                           "-o", str(out), "--force"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    text = report.render(results, analysis.analyse(results), None, tmp_path / "r.md").read_text()
    (dram,) = [line for line in text.splitlines() if line.startswith("| DRAM latency, local memory")]
    ns = float(dram.split("|")[2].split()[0])
    assert list(memattrs(out)["Latency"].values()) == [round(ns)], (dram, memattrs(out))
    assert 'name="NumasweepLatency"' in out.read_text() and "end of each CPU node and memory node's memory plateau" \
        in out.read_text()
    assert "Latency (the median over runs at the end of" in proc.stdout and "(256MiB)" in proc.stdout, proc.stdout
