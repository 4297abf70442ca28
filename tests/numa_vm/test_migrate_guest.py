"""numa_migrate in the 4-node guest, whose node 3 has memory but no CPUs (a CXL expander's
shape): 256 MiB moved from node 0 to node 3 and back with move_pages (two threads) and mbind,
and with migrate_pages for 4 KiB pages, on 4 KiB and transparent huge pages, every page found on
its target afterwards, with the kernel's migration counters.

Under emulation the times are TCG's: what is checked is that every page moves, the counters
agree with the pages moved, and time and throughput are positive, not what the numbers are."""

from __future__ import annotations

import pytest
from numa_guest import GuestRun, Layout, Step

pytestmark = pytest.mark.numa_vm

TIMEOUT = 600
# 768 MiB a node: node 0 also holds the guest's own memory, and 256 MiB must fit beside it.
LAYOUT = Layout(nodes=4, memory_only=(3,), node_memory_mib=768)
SIZE = 256 << 20
MIGRATE = '"$BIN/numa_migrate" --src=0 --dst=3 --size=256M --ntimes=1 --quiet'

STEPS = [
    Step("hardware", "numactl --hardware; grep -E '^(pgmigrate|thp_migration)' /proc/vmstat"),
    Step("move_4k", f'{MIGRATE} --pages=4k --method=all --threads=2 --csv="$OUT/move_4k.csv"'),
    Step("move_thp", f'{MIGRATE} --pages=thp --method=move_pages,mbind --threads=2 --csv="$OUT/move_thp.csv"'),
    Step("no_huge_pages", '"$BIN/numa_migrate" --src=0 --dst=3 --pages=2m --size=4M'),
    Step("same_node", '"$BIN/numa_migrate" --src=3 --dst=3 --size=4M'),
]


def test_guest_has_the_memory_only_node(guest: GuestRun) -> None:
    hw = guest.step("hardware")
    hw.check()
    assert "available: 4 nodes (0-3)" in hw.log, hw.log


@pytest.mark.parametrize(("step", "pages", "methods"), [
    ("move_4k", "4k", ["move_pages", "mbind", "migrate_pages"]),
    ("move_thp", "thp", ["move_pages", "mbind"]),
])
def test_every_page_moves_to_node_3_and_back(guest: GuestRun, step: str, pages: str, methods: list[str]) -> None:
    rows = guest.step(step).csv()
    assert [(r.method, r.direction, r.src, r.dst) for r in rows.itertuples()] == [
        (m, d, s, t) for m in methods for d, s, t in (("forward", 0, 3), ("back", 3, 0))]
    for r in rows.itertuples():
        seen = f"{r.method} {r.direction} {pages}: {r._asdict()}"
        assert r.pages == pages and r.size_bytes == SIZE and r.page_bytes == 4096, seen
        assert r.pages_total == SIZE // 4096 and r.pages_moved == r.pages_total, seen
        assert r.pages_elsewhere == 0 and r.pages_failed == 0, seen
        assert r.seconds > 0 and r.gb_s > 0, seen
        assert r.threads == (2 if r.method == "move_pages" else 1), seen
        target = 3 if r.direction == "forward" else 0
        assert r.page_fractions.split(",")[target] == f"{target}:1.0000", seen
        # The counters: the guest kernel has them, and a migration of every page shows in them
        # (system-wide: other work may add, never take away).
        assert r.pgmigrate_success >= 0 and r.pgmigrate_fail >= 0 and r.numa_pages_migrated >= 0, seen
        assert r.pgmigrate_success >= r.pages_moved, seen
        deltas = dict(entry.split(":") for entry in r.vmstat_deltas.split(","))
        assert int(deltas["pgmigrate_success"]) == r.pgmigrate_success, seen
        if pages == "thp":  # each 2 MiB moved whole, not split
            assert int(deltas.get("thp_migration_success", 0)) >= SIZE >> 21, seen


def test_refusals_in_the_guest_are_one_line(guest: GuestRun) -> None:
    huge = guest.step("no_huge_pages")
    assert huge.rc == 2 and "nr_hugepages" in huge.log and len(huge.log.strip().splitlines()) == 1, huge.log
    same = guest.step("same_node")
    assert same.rc == 2 and "--src and --dst are both node 3" in same.log, same.log
    assert len(same.log.strip().splitlines()) == 1, same.log
