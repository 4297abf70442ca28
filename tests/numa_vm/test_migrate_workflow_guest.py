"""The migrate benchmark through the local workflow in the 4-node guest (node 3 memory-only):
`snakemake sweep` in the guest on `migrate-workflow.yaml` (256 MiB from node 0 to node 3 and
back, twice, with move_pages), then the report rendered on the host from the guest's results,
as test_workflow_guest.py does. The report must give the move's finding (time, throughput with
its interval, back, every page verified), the two directions compared, the counter deltas in its
section's table, and the headline row; the job is not set aside as disturbed for the time its
moves sleep in the kernel (its campaign does not conclude disturbed jobs)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from numa_guest import HERE, GuestRun, Layout, Step, copy_repo_with_kernels, md_tables, render_report, section

pytestmark = [pytest.mark.numa_vm, pytest.mark.workflow]

TIMEOUT = 600
# 768 MiB a node: node 0 also holds the guest's own memory, and 256 MiB must fit beside it.
LAYOUT = Layout(nodes=4, memory_only=(3,), node_memory_mib=768)
CONFIG = HERE / "migrate-workflow.yaml"
SYSTEM = "numa-vm"  # the guest's host name, which detection takes as the system name
PAGES = (256 << 20) // 4096
SNAKEMAKE = (
    'cd "$OUT/repo" && snakemake sweep --profile profiles/local --cores 2 '
    f'--configfile "$REPO/tests/numa_vm/{CONFIG.name}" --config wrapper="$WRAPPER"'
)
STEPS = [Step("workflow", SNAKEMAKE)]

prepare = copy_repo_with_kernels


@pytest.fixture(scope="module")
def report(guest: GuestRun, repo: Path) -> str:
    guest.step("workflow").check()
    return render_report(repo, guest.out, SYSTEM)


def test_every_page_moved_there_and_back(guest: GuestRun) -> None:
    guest.step("workflow").check()
    table = pd.read_csv(guest.out / "repo" / "results" / SYSTEM / "migrate.csv")
    assert sorted(zip(table["direction"], table["src"], table["dst"], table["repetition"])) == [
        ("back", 3, 0, 0), ("back", 3, 0, 1), ("forward", 0, 3, 0), ("forward", 0, 3, 1)], table
    assert (table["pages_total"] == PAGES).all() and (table["pages_moved"] == PAGES).all(), table
    assert (table["quality"] != "disturbed").all(), table[["quality", "quality_reason", "on_cpu_pct"]]


def test_report_gives_the_move_its_interval_and_every_page_verified(report: str) -> None:
    said = section(report, "Page migration between nodes")
    assert re.search(r"Moving 256 MiB from node 0 to node 3 \(move pages, 1 thread, 512 pages a call\) takes "
                     r"[\d.e+-]+ s, [\d.]+ GB/s \(95% interval [\d.]+ GB/s to [\d.]+ GB/s\) over 2 runs; back from "
                     r"node 3 to node 0 [\d.e+-]+ s, [\d.]+ GB/s \(95% interval [\d.]+ GB/s to [\d.]+ GB/s\) over 2 "
                     rf"runs; every page of every move verified on its target \({4 * PAGES} of {4 * PAGES}\)\.",
                     report), said[:3000]
    assert re.search(r"Moving pages from node 0 to node 3 \(move pages, 1 thread, 512 pages a call\) reaches "
                     r"[\d.]+x \(95% interval [\d.]+x to [\d.]+x\) the throughput of moving them back", report)


def test_report_shows_the_counter_deltas_of_each_move(report: str) -> None:
    tables = dict(md_tables(section(report, "Page migration between nodes")))
    counters = next(rows for title, rows in tables.items() if "counter deltas" in title)
    assert sorted((r["from node"], r["to node"]) for r in counters) == [("0", "3"), ("3", "0")], counters
    for row in counters:
        moved = int(row["pages moved"].replace(",", ""))
        # system-wide counts: other work may add to them, never take away
        assert moved == PAGES and int(row["pgmigrate_success"].replace(",", "")) >= moved, row


def test_report_headline_has_the_move(report: str) -> None:
    # under emulation the job may be noisy (a load above the guest's CPUs): the value then says so
    rows = [line for line in report.splitlines() if line.startswith("| page migration, ")]
    assert any(re.match(r"\| page migration, node 0 to node 3, 256 MiB, move pages, 1 thread, 512 pages a call, "
                        r"4 KiB pages \(the fastest move\), each byte moved counted once \| [\d.]+ GB/s[^|]* \| "
                        r"[\d.]+ to [\d.]+ GB/s \(2 runs\) \|", line) for line in rows), rows
