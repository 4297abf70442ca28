"""Placement across the real NUMA nodes of a 2-node guest, through the project's wrapper and
numa_latency: binding, one node per MPI rank, and interleave, each read back from the CSV's
page_fractions (move_pages(2) in the kernel).

Every check puts memory somewhere the CPU's first touch would not: a wrapper that dropped
--numa would leave the pages on the CPU's own node and fail here."""

from __future__ import annotations

import pytest
from numa_guest import GuestRun, Layout, Step, page_fractions

pytestmark = pytest.mark.numa_vm

TIMEOUT = 300
LAYOUT = Layout(nodes=2)


def latency(name: str) -> str:
    # 64 MiB = 16384 pages: enough for a 45-55 % interleave check, cheap under emulation.
    return f'"$BIN/numa_latency" --size=64 --samples=1 --min-time=0.01 --quiet --csv="$OUT/{name}.csv"'


STEPS = [
    Step("hardware", "numactl --hardware"),
    Step("bind_node1", f'"$WRAPPER" --numa=1 --cpus=0 -- {latency("bind_node1")}'),
    Step("rank_per_node", f'mpirun -n 2 --bind-to none "$WRAPPER" --numa=0,1 --cpus=0,1 -- {latency("rank_per_node")}'),
    Step("rank_crossed", f'mpirun -n 2 --bind-to none "$WRAPPER" --numa=0,1 --cpus=1,0 -- {latency("rank_crossed")}'),
    Step("interleave", f'"$WRAPPER" --policy=interleave --numa=0,1 --cpus=0 -- {latency("interleave")}'),
]


def test_guest_kernel_sees_two_nodes(guest: GuestRun) -> None:
    hw = guest.step("hardware")
    hw.check()
    assert "available: 2 nodes (0-1)" in hw.log, hw.log
    assert "node 1 cpus: 1" in hw.log, hw.log


def test_bind_to_node1_puts_every_page_on_node1(guest: GuestRun) -> None:
    rows = guest.step("bind_node1").csv()
    assert len(rows) == 1, rows
    row = rows.iloc[0]
    seen = f"CPU node {row['cpu_node']}, policy {row['policy']} {row['mem_nodes']}, pages {row['page_fractions']}"
    assert page_fractions(row["page_fractions"]) == {0: 0.0, 1: 1.0}, seen
    assert row["cpu_node"] == 0 and row["policy"] == "bind" and str(row["mem_nodes"]) == "1", seen


@pytest.mark.parametrize("step, cpus", [("rank_per_node", [0, 1]), ("rank_crossed", [1, 0])])
def test_each_rank_on_its_own_node(guest: GuestRun, step: str, cpus: list[int]) -> None:
    """--numa=0,1: rank r's pages on node r, on CPU --cpus[r] (node = CPU here)."""
    rows = guest.step(step).csv().sort_values("rank")
    assert list(rows["rank"]) == [0, 1], rows
    for rank, row in zip((0, 1), rows.to_dict("records")):
        fractions = page_fractions(row["page_fractions"])
        assert fractions[rank] == 1.0, f"rank {rank}: pages {fractions}, expected all on node {rank}"
        assert row["cpu"] == cpus[rank] and row["cpu_node"] == cpus[rank], row
        assert row["policy"] == "bind" and str(row["mem_nodes"]) == str(rank), row


def test_interleave_splits_pages_evenly(guest: GuestRun) -> None:
    row = guest.step("interleave").csv().iloc[0]
    assert row["policy"] == "interleave", row.to_dict()
    fractions = page_fractions(row["page_fractions"])
    assert set(fractions) == {0, 1}, fractions
    for node, fraction in fractions.items():
        assert 0.45 <= fraction <= 0.55, f"node {node} holds {fraction:.2%} of the pages, expected 45-55%"
