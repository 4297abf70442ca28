"""The LUMI-G campaign's shape, scaled down, in a 4-node guest whose nodes have two L3 groups
each (QEMU dies, like LUMI-G's two CCDs per NUMA domain): both core-allocation strategies on
1, 2 and 4 domains, rank scaling, concurrent and serial, with the real kernels under mpirun.

The guest runs `snakemake sweep`, and its aggregated latency table is checked rank by rank
against a model of the guest written here, not against the planner: rank r runs on the CPU its
strategy gives, that CPU is on the domain the rank asked for and in the L3 group of that CPU,
and all its pages are on that domain's node. The report is rendered afterwards from the
guest's results and checked on its own, so the placement checks stand whether or not the
report renders."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from numa_guest import (HERE, GuestRun, Layout, Step, copy_repo_with_kernels, md_tables, page_fractions,
                        render_report, section)

pytestmark = [pytest.mark.numa_vm, pytest.mark.workflow]

TIMEOUT = 1500
NODES, CPUS_PER_NODE, L3_PER_NODE = 4, 4, 2
LAYOUT = Layout(nodes=NODES, cpus_per_node=CPUS_PER_NODE, l3_groups=L3_PER_NODE)
CONFIG = HERE / "lumi-g-shape.yaml"
SYSTEM = "numa-vm"  # the guest's host name, which detection takes as the system name

STEPS = [
    # What the kernel sees of the L3 groups, next to what the workflow detects.
    Step("l3", "grep -H . /sys/devices/system/cpu/cpu*/cache/index3/shared_cpu_list"),
    Step("sweep", (
        'cd "$OUT/repo" && snakemake sweep --profile profiles/local --cores 3 '
        f'--configfile "$REPO/tests/numa_vm/{CONFIG.name}" --config wrapper="$WRAPPER"'
    )),
]
prepare = copy_repo_with_kernels

# The grid of lumi-g-shape.yaml: (strategy, domains, ranks per domain, mode).
STRATEGIES = ("sequential", "interleaved")
EXPECTED_JOBS = (
    {("interleaved", (0, 1, 2, 3), 2, mode) for mode in ("concurrent", "serial")}
    | {(s, (0,), rpd, "concurrent") for s in STRATEGIES for rpd in (1, 2, 4)}
    | {(s, (0, 1), 2, "concurrent") for s in STRATEGIES}
    | {("sequential", (0, 1, 2, 3), 2, "concurrent")}
)


def node_cpus(node: int) -> list[int]:
    return list(range(node * CPUS_PER_NODE, (node + 1) * CPUS_PER_NODE))


def l3_group_of(cpu: int) -> int:
    return cpu // (CPUS_PER_NODE // L3_PER_NODE)


def planned_cpus(strategy: str, domain: int, ranks: int) -> list[int]:
    """The CPUs a domain's ranks get: `sequential` fills the domain's cores in order,
    `interleaved` takes one core per L3 group in turn (docs: config/README.md)."""
    cpus = node_cpus(domain)
    if strategy == "interleaved":
        per_group = CPUS_PER_NODE // L3_PER_NODE
        groups = [cpus[g * per_group:(g + 1) * per_group] for g in range(L3_PER_NODE)]
        cpus = [group[i] for i in range(per_group) for group in groups]
    return cpus[:ranks]


def test_guest_kernel_sees_two_l3_groups_per_node(guest: GuestRun) -> None:
    log = guest.step("l3").log
    shared = dict(re.findall(r"cpu/cpu(\d+)/cache/index3/shared_cpu_list:(\S+)", log))
    groups = {cpu: f"{2 * (cpu // 2)}-{2 * (cpu // 2) + 1}" for cpu in range(NODES * CPUS_PER_NODE)}
    assert {int(c): g for c, g in shared.items()} == groups, log


def test_detection_finds_the_l3_groups(guest: GuestRun) -> None:
    guest.step("sweep").check()
    topo = json.loads((guest.out / "repo" / "results" / SYSTEM / "topology.json").read_text())
    assert [n["cpus"] for n in topo["nodes"]] == [node_cpus(n) for n in range(NODES)], topo["nodes"]
    assert topo["l3_groups"] == [[2 * g, 2 * g + 1] for g in range(NODES * L3_PER_NODE)], topo["l3_groups"]


@pytest.fixture(scope="module")
def latency(guest: GuestRun) -> pd.DataFrame:
    return guest.step("sweep").csv(f"repo/results/{SYSTEM}/latency")


def job_key(job: pd.DataFrame) -> tuple[str, tuple[int, ...], int, str]:
    first = job.iloc[0]
    domains = tuple(int(d) for d in str(first["domains"]).split(","))
    return str(first["strategy"]), domains, int(first["ranks_per_domain"]), str(first["mode"])


def test_every_job_of_the_campaign_ran(latency: pd.DataFrame) -> None:
    ran = {job_key(job) for _, job in latency.groupby("job_id")}
    assert ran == EXPECTED_JOBS, f"missing {EXPECTED_JOBS - ran}, unexpected {ran - EXPECTED_JOBS}"


def test_every_rank_runs_and_allocates_where_its_job_asked(latency: pd.DataFrame) -> None:
    checked = 0
    for job_id, job in latency.groupby("job_id"):
        strategy, domains, rpd, _ = job_key(job)
        sizes = sorted(job["size_bytes"].unique())
        assert sorted(job["rank"].unique()) == list(range(len(domains) * rpd)), (job_id, job["rank"].unique())
        for rank, rows in job.groupby("rank"):
            domain = domains[rank // rpd]
            cpu = planned_cpus(strategy, domain, rpd)[rank % rpd]
            # Every size each rank walked was measured on its CPU, with its pages on its domain.
            assert sorted(rows["size_bytes"]) == sizes, (job_id, rank, rows["size_bytes"].tolist())
            for _, row in rows.iterrows():
                where = f"{job_id} rank {rank} size {row['size_bytes']}"
                assert (int(row["cpu"]), int(row["cpu_node"]), int(row["l3_group"])) == (
                    cpu, domain, l3_group_of(cpu)), f"{where}: asked for CPU {cpu} on node {domain}, got {row.to_dict()}"
                assert (row["policy"], str(row["mem_nodes"])) == ("bind", str(domain)), f"{where}: {row.to_dict()}"
                fractions = page_fractions(row["page_fractions"])
                assert sorted(fractions) == list(range(NODES)) and fractions[domain] == 1.0, (
                    f"{where}: pages {row['page_fractions']}, asked for node {domain}")
                checked += 1
    # 2 jobs x 8 ranks x 2 sizes, then one size: per strategy 1+2+4 ranks on one domain and
    # 2 ranks on each of 2 domains, and 2 ranks on each of 4 domains sequentially.
    assert checked == 2 * 8 * 2 + 2 * (1 + 2 + 4) + 2 * 4 + 8, f"{checked} rows checked"


def test_interleaved_and_sequential_differ_in_l3_groups(latency: pd.DataFrame) -> None:
    """With 2 ranks per domain, sequential shares one L3 group, interleaved spreads over both:
    the case that tells the two strategies apart on LUMI-G."""
    pairs = latency[(latency["ranks_per_domain"] == 2) & (latency["domains"].astype(str) == "0")]
    groups = {s: sorted(set(rows["l3_group"].astype(int))) for s, rows in pairs.groupby("strategy")}
    assert groups == {"sequential": [0], "interleaved": [0, 1]}, groups


def test_report_renders_from_the_guest_results(guest: GuestRun, latency: pd.DataFrame, repo: Path) -> None:
    """The campaign's report, rendered here from what the guest measured, as a LUMI-G report is
    rendered from the cluster's results (`--config results=`): rendering is Python on the
    aggregated tables, minutes under emulation and seconds here. Its placement verification
    shows every rank."""
    report = render_report(repo, guest.out, SYSTEM)
    # The per-rank tables of the placement verification, one per configuration: each job's
    # ranks once, at its largest size, every MiB on the node the rank is bound to, its CPU's.
    rows = [row for _, table in md_tables(section(report, "Placement verification"))
            if table and "CPU node" in table[0] for row in table]
    assert len(rows) == latency.groupby(["job_id", "rank"]).ngroups, rows
    for row in rows:
        node = int(row["CPU node"])
        mib = {int(k.split()[1]): float(v) for k, v in row.items() if k.startswith("node ")}
        assert row["policy"] == f"bind {node}" and mib[node] > 0 and mib[node] == sum(mib.values()), row
