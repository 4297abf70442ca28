"""A 4-node guest whose node 3 has memory but no CPUs and sits in a lower memory tier (HMAT),
like a CXL expander: binding to it, weighted interleave on the 6.12 kernel, and topology
detection plus the placement planner run inside the guest on its real nodes."""

from __future__ import annotations

import json
import re

import pytest
from numa_guest import GuestRun, Layout, Step, page_fractions

pytestmark = pytest.mark.numa_vm

TIMEOUT = 420
LAYOUT = Layout(nodes=4, memory_only=(3,))
# What run.sh gives the guest: 10 local, 20 between CPU nodes, 30 to or from node 3.
DISTANCES = [[10, 20, 20, 30], [20, 10, 20, 30], [20, 20, 10, 30], [30, 30, 30, 10]]
KERNEL_ARGS = "--size=16 --samples=1 --min-time=0.01 --quiet"
WEIGHTS = "/sys/kernel/mm/mempolicy/weighted_interleave"


def latency(name: str) -> str:
    return f'"$BIN/numa_latency" {KERNEL_ARGS} --csv="$OUT/{name}.csv"'


# The test sets the sysfs weights itself (3 on node 0, 1 on node 3) so the kernel finds them
# already right, and puts the old values back whatever the kernel did.
WEIGHTED = f"""
[ -d {WEIGHTS} ] || {{ echo "{WEIGHTS} missing: this guest kernel has no weighted interleave"; exit 3; }}
old0=$(cat {WEIGHTS}/node0) old3=$(cat {WEIGHTS}/node3)
echo "$old0 $old3" > "$OUT/weights_before"
echo 3 > {WEIGHTS}/node0 && echo 1 > {WEIGHTS}/node3 || exit 4
"$WRAPPER" --policy=weighted --numa=0,3 --weights=3,1 --cpus=1 -- {latency("weighted")}
rc=$?
echo "$old0" > {WEIGHTS}/node0
echo "$old3" > {WEIGHTS}/node3
echo "$(cat {WEIGHTS}/node0) $(cat {WEIGHTS}/node3)" > "$OUT/weights_after"
exit $rc
"""

# The planner's own launch line, run as printed: one rank per CPU node, memory on node 3.
PLAN = f"""
python -m numasweep plan --arch "$OUT/topology.json" --sequential 0,1,2 --ranks-per-domain 1 \\
    --launcher mpirun --memory node:3 --wrapper "$WRAPPER" -- "$BIN/numa_latency" {KERNEL_ARGS} --csv="$OUT/plan.csv" \\
    > "$OUT/plan.txt" || exit
line=$(grep '^mpirun ' "$OUT/plan.txt") || {{ echo "no mpirun line in the plan"; exit 5; }}
echo "$line"
eval "$line"
"""

STEPS = [
    Step("hardware", "numactl --hardware"),
    Step("bind_node3", f'"$WRAPPER" --numa=3 --cpus=2 -- {latency("bind_node3")}'),
    Step("weighted", WEIGHTED),
    Step("topology", 'python -m numasweep topology --detect -o "$OUT/topology.json"'),
    Step("plan", PLAN),
    Step("plan_cpu_on_node3", 'python -m numasweep plan --arch "$OUT/topology.json" --sequential 3 --ranks-per-domain 1'),
]


def test_guest_kernel_sees_memory_only_node(guest: GuestRun) -> None:
    hw = guest.step("hardware")
    hw.check()
    assert "available: 4 nodes (0-3)" in hw.log, hw.log
    assert re.search(r"^node 3 cpus:\s*$", hw.log, re.M), hw.log


def test_bind_to_memory_only_node(guest: GuestRun) -> None:
    row = guest.step("bind_node3").csv().iloc[0]
    seen = f"CPU node {row['cpu_node']}, policy {row['policy']} {row['mem_nodes']}, pages {row['page_fractions']}"
    assert page_fractions(row["page_fractions"]) == {0: 0.0, 1: 0.0, 2: 0.0, 3: 1.0}, seen
    assert row["cpu_node"] == 2 and row["policy"] == "bind" and str(row["mem_nodes"]) == "3", seen


def test_weighted_interleave_3_to_1(guest: GuestRun) -> None:
    step = guest.step("weighted")
    row = step.csv().iloc[0]
    assert row["policy"] == "weighted", row.to_dict()
    assert row["mem_nodes"] == "0,3" and row["weights"] == "3,1", row.to_dict()
    fractions = page_fractions(row["page_fractions"])
    assert 0.70 <= fractions[0] <= 0.80, f"node 0 holds {fractions[0]:.2%}, expected 70-80%: {fractions}"
    assert 0.20 <= fractions[3] <= 0.30, f"node 3 holds {fractions[3]:.2%}, expected 20-30%: {fractions}"
    assert fractions[1] == fractions[2] == 0.0, fractions
    before = (step.out / "weights_before").read_text().split()
    after = (step.out / "weights_after").read_text().split()
    assert after == before, f"sysfs weights not restored: {before} before, {after} after"


def test_detection_sees_nodes_distances_and_memory_only_node(guest: GuestRun) -> None:
    guest.step("topology").check()
    topo = json.loads((guest.out / "topology.json").read_text())
    nodes = {n["id"]: n for n in topo["nodes"]}
    assert sorted(nodes) == [0, 1, 2, 3], topo["nodes"]
    assert [nodes[i]["cpus"] for i in range(3)] == [[0], [1], [2]], topo["nodes"]
    assert nodes[3]["cpus"] == [] and nodes[3]["memory_only"] is True, nodes[3]
    assert not any(nodes[i]["memory_only"] for i in range(3)), topo["nodes"]
    assert all(n["memory_bytes"] > 256 << 20 for n in nodes.values()), topo["nodes"]
    assert topo["distances"] == DISTANCES
    assert topo["hypervisor"] and "QEMU" in topo["hypervisor"], topo["hypervisor"]


def test_planned_launch_line_places_each_rank(guest: GuestRun) -> None:
    """The plan's mpirun line, run in the guest: rank r on CPU node r, memory on node 3."""
    rows = guest.step("plan").csv().sort_values("rank")
    assert list(rows["rank"]) == [0, 1, 2], rows
    for rank, row in zip(range(3), rows.to_dict("records")):
        assert page_fractions(row["page_fractions"])[3] == 1.0, f"rank {rank}: pages {row['page_fractions']}"
        assert row["cpu_node"] == rank, row


def test_planner_refuses_cpus_on_memory_only_node(guest: GuestRun) -> None:
    step = guest.step("plan_cpu_on_node3")
    assert step.rc == 2, f"exit {step.rc}:\n{step.log}"
    error = [line for line in step.log.splitlines() if line.startswith("numasweep: error:")]
    assert len(error) == 1 and "3" in error[0], step.log


def test_detection_reads_the_guests_hmat_and_memory_tiers(guest: GuestRun) -> None:
    """run.sh gives every CPU node 100 ns / 20 GB/s to its own memory and 300 ns / 5 GB/s to
    node 3; Linux exports, per target, the numbers of its best initiators (docs/firmware.md)."""
    guest.step("topology").check()
    firmware = json.loads((guest.out / "topology.json").read_text())["firmware"]
    access = {(a["initiator"], a["target"]): a for a in firmware["access"] if a["access_class"] == 0}
    assert (0, 0) in access and any(t == 3 for _, t in access), firmware
    far = next(a for (_, t), a in access.items() if t == 3)
    assert far["read_latency_ns"] > access[(0, 0)]["read_latency_ns"], firmware
    assert far["read_bandwidth_mb_s"] < access[(0, 0)]["read_bandwidth_mb_s"], firmware
    tiers = {n: t["id"] for t in firmware["tiers"] for n in t["nodes"]}
    assert tiers[3] > tiers[0], firmware["tiers"]  # node 3 in a slower (higher-numbered) tier
    assert firmware["weights"], "this 6.12 guest kernel has weighted interleave: its weights are read"
