"""The loaded-latency, core-to-core and mixed-bandwidth kernels on the real nodes of a 2-node
guest (2 CPUs per node): the chase, each load thread and the bounced line where they were asked
to be, read back per row from the kernels' own CPU, node and page columns; core-to-core pairs
within a node and across nodes reported apart."""

from __future__ import annotations

import pytest
from numa_guest import GuestRun, Layout, Step, page_fractions

pytestmark = pytest.mark.numa_vm

TIMEOUT = 600
LAYOUT = Layout(nodes=2, cpus_per_node=2)
QUICK = "--samples=2 --min-time=0.01 --quiet"

STEPS = [
    Step("hardware", "numactl --hardware"),
    # The line's page on node 1: pairs 0-1 (node 0), 2-3 (node 1) and the four across.
    Step("c2c", f'"$BIN/numa_c2c" --cpus=0-3 --policy=bind --mem-nodes=1 --round-trips=100 {QUICK} '
                '--csv="$OUT/c2c.csv"'),
    # The chase on node 0's CPU 0, loads on node 1's CPUs, every buffer on node 1.
    Step("loaded", f'"$BIN/numa_loaded_latency" --size=16M --load-size=16M --chase-cpu=0 --load-cpus=2,3 '
                   f'--traffic=read,r1w1 --delay=idle,0 --policy=bind --mem-nodes=1 {QUICK} --csv="$OUT/loaded.csv"'),
    # One thread per CPU node against each memory node.
    Step("matrix", f'"$BIN/numa_mix_bandwidth" --matrix --cpu-nodes=0,1 --threads=1 --size=8M --traffic=read '
                   f'{QUICK} --csv="$OUT/matrix.csv"'),
]


def _node(cpu: int) -> int:
    return cpu // LAYOUT.cpus_per_node


def test_core_to_core_pairs_within_and_across_nodes_apart(guest: GuestRun) -> None:
    rows = guest.step("c2c").csv()
    pairs = {(int(r.cpu_a), int(r.cpu_b)) for r in rows.itertuples()}
    assert pairs == {(a, b) for a in range(4) for b in range(a + 1, 4)}, pairs
    for r in rows.itertuples():
        assert (r.node_a, r.node_b) == (_node(r.cpu_a), _node(r.cpu_b)), r
        assert r.line_node == 1 and page_fractions(r.line_page_fractions)[1] == 1.0, r
        assert r.round_trip_ns_median > 0
    within = rows[rows.node_a == rows.node_b]
    across = rows[rows.node_a != rows.node_b]
    assert len(within) == 2 and len(across) == 4


def test_loaded_latency_places_chase_loads_and_memory(guest: GuestRun) -> None:
    rows = guest.step("loaded").csv()
    assert [(r.traffic, int(r.delay)) for r in rows.itertuples()] == [
        ("read", -1), ("read", 0), ("r1w1", -1), ("r1w1", 0)]
    for r in rows.itertuples():
        assert (r.chase_cpu, r.chase_node) == (0, 0), r
        assert str(r.load_cpus) == "2,3" and str(r.load_cpu_nodes) == "1,1", r
        assert page_fractions(r.chase_page_fractions)[1] == 1.0, r
        assert page_fractions(r.load_page_fractions)[1] == 1.0, r
        assert (r.load_gb_s == 0) == (r.delay == -1), r


def test_bandwidth_matrix_cells_on_their_nodes(guest: GuestRun) -> None:
    rows = guest.step("matrix").csv()
    cells = {(str(r.cpu_nodes), str(r.mem_nodes)) for r in rows.itertuples()}
    assert cells == {(c, m) for c in ("0", "1") for m in ("0", "1")}, cells
    for r in rows.itertuples():
        assert page_fractions(r.page_fractions)[int(r.mem_nodes)] == 1.0, r
        assert r.gb_s_median > 0
