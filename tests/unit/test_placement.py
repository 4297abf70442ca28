"""Placement: the seed's LUMI-G examples, memory specs, and plans that must be refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from numasweep.core.errors import NumasweepError
from numasweep.planning.placement import (MemorySpec, check_cpus, parse_memory, plan, plan_cpus, rank_scaling,
                                 scaling_name)
from numasweep.core.topology import load_arch

REPO = Path(__file__).resolve().parents[2]
LUMI = load_arch(REPO / "config" / "arch" / "lumi-g.yaml")
CXL = load_arch(REPO / "config" / "arch" / "cxl-example.yaml")
ULISSE = load_arch(REPO / "config" / "arch" / "ulisse.yaml")


def test_seed_interleaved_four_domains_two_ranks():
    ranks = plan(LUMI, "interleaved", [0, 1, 2, 3], 2)
    assert [r.cpu for r in ranks] == [1, 9, 17, 25, 33, 41, 49, 57]
    assert [r.mem_nodes for r in ranks] == [[0], [0], [1], [1], [2], [2], [3], [3]]
    assert [r.l3_group for r in ranks] == list(range(8))
    assert {r.policy for r in ranks} == {"bind"}


def test_interleaved_domain_3_takes_one_core_per_ccd_in_turn():
    ranks = plan(LUMI, "interleaved", [3], 4)
    assert [r.cpu for r in ranks] == [49, 57, 50, 58]
    assert [r.l3_group for r in ranks] == [6, 7, 6, 7]
    assert {r.cpu_node for r in ranks} == {3}


def test_sequential_skips_reserved_cores():
    assert plan_cpus(LUMI, "sequential", [0], 8) == [1, 2, 3, 4, 5, 6, 7, 9]
    assert plan_cpus(LUMI, "sequential", [0], 14)[-1] == 15


def test_interleaved_fills_the_other_ccd_when_one_runs_out():
    cpus = plan_cpus(LUMI, "interleaved", [0], 14)
    assert sorted(cpus) == LUMI.free_cores(0)
    assert cpus[:4] == [1, 9, 2, 10]


def test_rank_scaling_series_and_seed_names():
    series = rank_scaling(LUMI, "sequential", [0, 1])
    assert series == list(range(1, 15))
    names = [scaling_name("sequential", [0, 1], 2 * n, 16 << 20) for n in series]
    assert names[3] == "sequential_domains0,1_8ranks_16MB.csv"
    assert scaling_name("sequential", [0], 8, 16 << 20) == "sequential_domain0_8ranks_16MB.csv"
    assert rank_scaling(LUMI, "interleaved", [3], 4) == [1, 2, 3, 4]


def test_rank_scaling_through_the_plan_command():
    proc = subprocess.run([sys.executable, "-m", "numasweep", "plan", "--arch", "config/arch/lumi-g.yaml",
                           "--sequential", "0", "--scaling", "--", "--size=16"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    names = [line.split(":")[0] for line in proc.stdout.splitlines() if line.endswith("--size=16")]
    assert names == [f"sequential_domain0_{n}ranks_16MB.csv" for n in range(1, 15)]
    assert "--cpu-bind=map_cpu:1,2,3,4,5,6,7,9 " in proc.stdout


def test_plan_command_prints_launch_line_and_table():
    proc = subprocess.run([sys.executable, "-m", "numasweep", "plan", "--arch", "config/arch/lumi-g.yaml",
                           "--interleaved", "0,1,2,3", "--ranks-per-domain", "2"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert ("srun --nodes=1 --ntasks=8 --mpi=pmix --cpu-bind=map_cpu:1,9,17,25,33,41,49,57 --hint=nomultithread "
            "kernels/wrapper_numa.sh --numa=0,0,1,1,2,2,3,3 -- build/bin/numa_latency") in proc.stdout
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert rows[7][:5] == ["7", "57", "3", "7", "bind"]


@pytest.mark.parametrize("spec,expected", [
    ("local", MemorySpec("local")),
    ("node:3", MemorySpec("node", (3,))),
    ("nodes:0,0,1,1", MemorySpec("nodes", (0, 0, 1, 1))),
    ("preferred:1", MemorySpec("preferred", (1,))),
    ("interleave:0,1", MemorySpec("interleave", (0, 1))),
    ("weighted:0,3@1,2", MemorySpec("weighted", (0, 3), (1, 2))),
    ("weighted:0,3", MemorySpec("weighted", (0, 3))),  # the kernel's current weights
])
def test_memory_specs_parse_and_print_back(spec, expected):
    assert parse_memory(spec) == expected
    assert str(parse_memory(spec)) == spec


def test_memory_on_the_cxl_node_and_weighted():
    ranks = plan(CXL, "sequential", [0], 2, "node:3")
    assert [r.mem_nodes for r in ranks] == [[3], [3]] and ranks[0].cpu_node == 0
    ranks = plan(CXL, "sequential", [0, 1], 1, "weighted:0,3@1,3")
    assert ranks[1].cpu == 32 and ranks[1].policy == "weighted" and ranks[1].weights == [1, 3]
    ranks = plan(LUMI, "sequential", [0], 4, "nodes:0,1,2,3")
    assert [r.mem_nodes[0] for r in ranks] == [0, 1, 2, 3]
    assert plan(ULISSE, "sequential", [1], 1, "preferred:0")[0].policy == "preferred"


def _no_l3():
    data = yaml.safe_load((REPO / "config" / "arch" / "ulisse.yaml").read_text())
    data["caches"] = [c for c in data["caches"] if c["level"] < 3]
    return data


BAD_PLANS = [
    ("unknown domain", lambda: plan(LUMI, "sequential", [0, 7], 1), "NUMA node 7 does not exist on lumi-g"),
    ("memory-only domain", lambda: plan(CXL, "sequential", [3], 1), "domain 3 of cxl-example has no CPUs"),
    ("more ranks than cores", lambda: plan(LUMI, "sequential", [1], 15), "15 ranks do not fit domain 1"),
    ("domain twice", lambda: plan(LUMI, "sequential", [1, 1], 1), "domain 1 is listed twice"),
    ("zero ranks", lambda: plan(LUMI, "sequential", [1], 0), "at least 1"),
    ("unknown strategy", lambda: plan(LUMI, "random", [1], 1), "strategy 'random'"),
    ("memory node missing", lambda: plan(LUMI, "sequential", [0], 1, "node:9"), "NUMA node 9 does not exist"),
    ("weights not matching nodes", lambda: parse_memory("weighted:0,3@1"), "2 node(s) but 1 weight(s)"),
    ("weight 0", lambda: parse_memory("weighted:0,3@0,1"), "weight 0 is outside 1..255"),
    ("weight 256", lambda: parse_memory("weighted:0,3@1,256"), "weight 256 is outside 1..255"),
    ("per-rank list length", lambda: plan(LUMI, "sequential", [0], 3, "nodes:0,1"), "2 node(s) for 3 rank(s)"),
    ("spec syntax", lambda: parse_memory("nodes:a,b"), "'a,b' is not a comma list"),
    ("spec kind", lambda: parse_memory("spread:0"), "is not one of local, node:N"),
    ("scaling beyond cores", lambda: rank_scaling(LUMI, "sequential", [0, 1], 20), "20 ranks per domain do not fit"),
    ("unknown CPU", lambda: check_cpus(LUMI, [1, 300]), "CPU 300 does not exist on lumi-g"),
    ("reserved CPU", lambda: check_cpus(LUMI, [8]), "CPU 8 is reserved"),
    ("unknown GPU", lambda: CXL.gpu(4), "GPU 4 does not exist on cxl-example (GPUs: 0,1)"),
]


@pytest.mark.parametrize("label,call,expected", BAD_PLANS, ids=[b[0] for b in BAD_PLANS])
def test_bad_plan_is_refused_naming_the_value(label, call, expected):
    with pytest.raises(NumasweepError) as exc:
        call()
    assert expected in str(exc.value) and "\n" not in str(exc.value)


def test_interleaved_needs_l3_groups(tmp_path):
    p = tmp_path / "no-l3.yaml"
    p.write_text(yaml.safe_dump(_no_l3()))
    topo = load_arch(p)
    assert topo.l3_groups == [] and topo.l3_group_of(3) == -1
    assert plan(topo, "sequential", [0], 2)[1].l3_group == -1
    with pytest.raises(NumasweepError, match="has no L3 groups: interleaved needs them"):
        plan(topo, "interleaved", [0], 2)


def test_plan_command_refusal_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "numasweep", "plan", "--arch", "config/arch/lumi-g.yaml",
                           "--sequential", "0,7", "--ranks-per-domain", "1"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("numasweep: error: NUMA node 7 does not exist") and proc.stderr.count("\n") == 1
