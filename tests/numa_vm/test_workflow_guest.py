"""The local workflow end to end on the 4-node guest (node 3 memory-only): detection, launch
lines, kernels and aggregation inside the guest (`snakemake sweep`), on real kernel NUMA nodes,
then the report rendered here from the guest's results with the same workflow (`snakemake
report`), as a cluster's report is rendered from its results: rendering is Python on the
aggregated tables, minutes under emulation and seconds here, and nothing in it depends on the
machine it runs on. The report's placement verification must show every rank's pages on the
node its job asked for, and the report must say that its timings come from an emulated
machine.

The guest has HMAT (run.sh's numbers: 100 ns and 20 GB/s local, 300 ns and 5 GB/s to node 3): the
report's "Measured against the firmware" section must set those claims beside the measured ratios
and say plainly how they compare (under emulation every node's memory is the host's, so they lie
far apart). The guest's own hwloc XML (`lstopo --of xml`, run inside it) is the base of
`python -m numasweep hwloc-export` on its results, and the real `lstopo --input FILE --memattrs`
must read the file and print the measured matrices as its Latency and Bandwidth."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from numa_guest import (HERE, GuestRun, Layout, Step, copy_repo_with_kernels, firmware_beside_measured,
                        hwloc_cpuset, md_tables, memattrs, page_fractions, render_report, section)

from numasweep.core import topology
from numasweep.reporting import hwloc_export
from numasweep.results import aggregate, matrices

pytestmark = [pytest.mark.numa_vm, pytest.mark.workflow]

TIMEOUT = 1800  # the workflow takes 4-15 minutes under TCG, as busy as the host is
# 1 GiB a node: the guest's own processes (Snakemake, each job's Python, the calibration's
# decision beside a latency job) take their memory from the CPU nodes, and with 512 MiB node 1
# was once left with 45 MiB free for a rank's 64 MiB buffer.
LAYOUT = Layout(nodes=4, memory_only=(3,), node_memory_mib=1024)
CONFIG = HERE / "workflow.yaml"
SYSTEM = "numa-vm"  # the guest's host name, which detection takes as the system name

# Kernels are compiled on the host and copied with their times kept, so the guest's build
# jobs find them up to date; three cores let the light jobs run side by side.
SNAKEMAKE = (
    'cd "$OUT/repo" && snakemake sweep --profile profiles/local --cores 3 '
    f'--configfile "$REPO/tests/numa_vm/{CONFIG.name}" --config wrapper="$WRAPPER"'
)
# The guest's hwloc view (hwloc runs from the host's /, shared read-only): its NUMA nodes, CPU
# sets and the HMAT numbers hwloc read, the base the export writes the measurement into.
LSTOPO = 'lstopo --of xml "$OUT/guest-topology.xml" && grep -c "<object type=\\"NUMANode\\"" "$OUT/guest-topology.xml"'
STEPS = [Step("lstopo", LSTOPO), Step("workflow", SNAKEMAKE)]


prepare = copy_repo_with_kernels


@pytest.fixture(scope="module")
def report(guest: GuestRun, repo: Path) -> str:
    """The guest's own run wrote the topology and the aggregated tables (its kernels, launch
    lines and placements); the report is drawn from them here."""
    guest.step("workflow").check()
    # the campaign concludes what its emulated vCPUs measured while disturbed (workflow.yaml)
    return render_report(repo, guest.out, SYSTEM, conclude_disturbed=True)


def test_workflow_detects_the_guest(guest: GuestRun) -> None:
    guest.step("workflow").check()
    topo = json.loads((guest.out / "repo" / "results" / SYSTEM / "topology.json").read_text())
    assert [n["id"] for n in topo["nodes"]] == [0, 1, 2, 3], topo["nodes"]
    assert [n["memory_only"] for n in topo["nodes"]] == [False, False, False, True], topo["nodes"]
    assert "QEMU" in (topo["hypervisor"] or ""), topo["hypervisor"]


def requested_node(job_id: str, rank: int, table_title: str) -> int:
    """The node a job asked for, from its grid values in the job id (not from the report)."""
    if job_id.startswith("lat-"):
        return 3 if "-node3-" in job_id else rank  # local: each rank's own node, rank r on node r
    if job_id.startswith("bw-"):
        return int(re.search(r"-node(\d+)-", job_id).group(1))
    src, dst = map(int, re.search(r"-s(\d+)-d(\d+)-", job_id).groups())
    return src if "sources" in table_title else dst


def test_report_shows_every_rank_on_its_requested_node(report: str) -> None:
    tables = md_tables(section(report, "Placement verification"))
    # The per-job check of every benchmark: all pages on the node the job asked for.
    checked: list[tuple[str, int]] = []
    for title, rows in [t for t in tables if t[1] and "requested" in t[1][0]]:
        for row in rows:
            rank = int(row["rank"]) if row.get("rank") else 0
            asked = requested_node(row["job id"], rank, title)
            fractions = page_fractions(row["page fractions"])
            assert row["requested"] == str(asked) and fractions[asked] == 1.0, (
                f"{row['job id']} rank {rank}: asked for node {asked}, report says {row}")
            checked.append((row["job id"], rank))
    jobs = {job for job, _ in checked}
    # 2 latency jobs x 2 repetitions x 3 ranks, 4 bandwidth jobs x 2 repetitions, 2 copy jobs x
    # (source, destination)
    assert len(jobs) == 14 and len(checked) == 24, f"placement verified for {sorted(checked)}"
    # The per-rank tables of the latency runs: MiB on each node, all on the asked node.
    per_rank = [(title, rows) for title, rows in tables if rows and "CPU node" in rows[0]]
    # titled "<mode>, <memory>, <size> per rank"
    assert sorted(", ".join(title.split(", ")[:2]) for title, _ in per_rank) == [
        "concurrent, local", "concurrent, node:3"], per_rank
    for title, rows in per_rank:
        assert [int(r["rank"]) for r in rows] == [0, 1, 2], (title, rows)
        for row in rows:
            rank = int(row["rank"])
            asked = 3 if "node:3" in title else rank
            assert int(row["CPU node"]) == rank and row["policy"] == f"bind {asked}", (title, row)
            mib = {int(k.split()[1]): float(v) for k, v in row.items() if k.startswith("node ")}
            assert sorted(mib) == [0, 1, 2, 3] and mib[asked] > 0 and mib[asked] == sum(mib.values()), (title, row)


def test_report_says_timings_come_from_an_emulated_machine(report: str) -> None:
    notes = [p for p in report.split("\n\n") if "QEMU" in p and re.search(r"\bemulated\b", p)]
    assert notes, f"no paragraph names QEMU and says the machine is emulated:\n{report[:2000]}"


def test_report_marks_node3_memory_only(report: str) -> None:
    assert re.search(r"memory only, no CPUs: node 3\b", report), section(report, "Test configuration")[:3000]


def results_of(guest: GuestRun) -> Path:
    return guest.out / "repo" / "results" / SYSTEM


def test_report_sets_the_guests_hmat_beside_the_measurement(guest: GuestRun, report: str) -> None:
    """Every measured remote cell the guest's HMAT has numbers for, latency and bandwidth, with
    HMAT's ratio beside the measured one and a verdict that says how they compare: two
    repetitions give every cell two values, so each pair has its interval and is tested, never
    left untested (under emulation the interval may be too wide to decide: "undecided", never
    "agrees")."""
    stated = firmware_beside_measured(report, results_of(guest), ("latency_ns", "bandwidth_mb_s"))
    assert {(s["quantity"], s["cpu"], s["mem"]) for s in stated} >= {("latency", "0", "3"), ("bandwidth", "0", "3")}
    assert not [s for s in stated if s["verdict"].startswith("untested")], [s["summary"] for s in stated]


def test_report_says_the_far_memory_in_one_sentence(report: str) -> None:
    """The memory-only node 3 against node 0's local memory, latency and bandwidth in one
    sentence with their intervals, in the firmware section."""
    said = section(report, "Measured against the firmware")
    assert re.search(r"Far memory, node 3 \(memory tier \d+, no CPUs\), from node 0's CPUs: [\d.]+x \(95% "
                     r"interval [\d.]+x to [\d.]+x\) the local latency and [\d.]+x \(95% interval [\d.]+x to "
                     r"[\d.]+x\) the local bandwidth\.", said), said[:3000]


def test_hwloc_export_of_the_guests_results_reads_in_lstopo(guest: GuestRun) -> None:
    """`python -m numasweep hwloc-export` on the guest's results, over the guest's own hwloc XML,
    and the real lstopo reading the file: its Latency and Bandwidth are the measured matrices
    (target the memory node, initiator the CPU node's cpuset), in hwloc's units."""
    step = guest.step("lstopo")
    step.check()
    assert step.log.split()[-1] == "4", f"the guest's hwloc XML should hold 4 NUMA nodes:\n{step.log}"
    base, xml, results = guest.out / "guest-topology.xml", guest.out / "measured.xml", results_of(guest)
    # --force, as the workflow's rule gives it under the guest's conclude_disturbed: its emulated
    # vCPUs share the host's CPUs, so its latency jobs are measured while disturbed
    proc = subprocess.run([sys.executable, "-m", "numasweep", "hwloc-export", str(results), "--base", str(base),
                           "-o", str(xml), "--force"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"hwloc-export failed:\n{proc.stdout}\n{proc.stderr}"
    shown = subprocess.run(["lstopo", "--input", str(xml), "--memattrs", "-p"], capture_output=True, text=True,
                           timeout=120)
    (guest.out / "measured-memattrs.txt").write_text(shown.stdout + shown.stderr)
    assert shown.returncode == 0, f"lstopo --input {xml} --memattrs failed:\n{shown.stdout}\n{shown.stderr}"
    printed = memattrs(shown.stdout)
    topo = topology.load(results / "topology.json")
    cpusets = {n.id: hwloc_cpuset(n.cpus) for n in topo.nodes if n.cpus}
    measured = matrices.measured(aggregate.load_results(results), aggregate.load_topology(results))
    assert {hwloc_export.attribute(q)[0] for q in measured} == {"Latency", "Bandwidth"}, list(measured)
    for quantity, matrix in measured.items():
        name, factor = hwloc_export.attribute(quantity)
        expected = {(mem, cpusets[cpu]): max(1, round(value * factor))
                    for (cpu, mem), value in matrices.cells(matrix).items()}
        assert printed.get(name) == expected, (
            f"lstopo's {name}: {printed.get(name)}, the measured matrix gives {expected}:\n{shown.stdout}")
