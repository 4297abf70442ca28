"""The migrate benchmark's plan: one job per pair, method and page size (and per thread count and
batch for move_pages alone), the kernel's options from the sweep, the moves' CPUs on a node with
CPUs next to a memory-only one, skipped with its reason on a machine with one node with memory,
and bad pairs and sizes refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import synthetic
from numasweep.core import topology
from numasweep.core.errors import NumasweepError
from numasweep.planning import grid

REPO = Path(__file__).resolve().parents[2]
CXL = topology.load(REPO / "config" / "arch" / "cxl-example.yaml")  # node 3 memory-only
CLEARED = {name: {"sweeps": []} for name in ("latency", "bandwidth", "copy", "gpu_xfer")}


def plan(topo, **sweep) -> grid.Plan:
    return grid.expand({**CLEARED, "migrate": {"sweeps": [sweep]}}, topo)


def test_a_job_per_pair_method_and_pages_and_for_move_pages_per_threads_and_batch():
    jobs = plan(CXL, pairs=[[0, 3]], pages=["4k", "thp"], threads=[1, 4], batch=[256]).by_bench("migrate")
    assert sorted(j.id for j in jobs) == sorted(
        [f"migrate-s0-d3-movepages-{p}-t{t}-b256" for p in ("4k", "thp") for t in (1, 4)]
        + [f"migrate-s0-d3-{m}-{p}" for m in ("mbind", "migratepages") for p in ("4k", "thp")])
    four = next(j for j in jobs if j.id == "migrate-s0-d3-movepages-4k-t4-b256")
    assert four.kernel_args == ("--src=0", "--dst=3", "--method=move_pages", "--pages=4k", "--size=256M",
                                "--ntimes=3", "--threads=4", "--batch=256")
    assert four.threads == 4 and len(four.cpus) == 4 and all(c in CXL.node(0).cpus for c in four.cpus)


def test_a_move_from_the_memory_only_node_runs_on_the_other_node_of_the_pair():
    (job,) = plan(CXL, pairs=[[3, 1]], methods=["mbind"]).jobs
    assert job.cpus[0] in CXL.node(1).cpus and "--src=3" in job.kernel_args


def test_all_pairs_are_the_pairs_of_nodes_with_memory_lower_id_first():
    jobs = plan(CXL, methods=["mbind"]).jobs
    assert sorted(j.id for j in jobs) == ["migrate-s0-d1-mbind-4k", "migrate-s0-d3-mbind-4k", "migrate-s1-d3-mbind-4k"]


def test_one_node_with_memory_skips_the_sweep_with_its_reason():
    one = synthetic.workstation()
    skipped = grid.expand({"copy": {"sweeps": [{"pairs": "all"}]}, "migrate": {"sweeps": [{"pairs": "all"}]}},
                          one).skipped
    assert "a move needs two" in skipped["migrate"] and "numactl -H" in skipped["migrate"], skipped
    with pytest.raises(NumasweepError, match="no job to run: migrate: the topology 'desk' has 1 node with memory"):
        plan(one)


@pytest.mark.parametrize("sweep, says", [
    ({"pairs": [[3, 3]]}, "migrate.sweeps[0].pairs[0]: [3, 3] moves nothing; name two different nodes"),
    ({"pairs": [[0, 7]]}, "migrate.sweeps[0].pairs[0]: node 7 is not in the topology"),
    ({"pairs": [[0, 3]], "sizes": "200G"}, "migrate.sweeps[0].sizes: 200GiB is more than the 128GiB of memory on node 3"),
    ({"pairs": [[0, 3]], "methods": ["memcpy"]}, "migrate.sweeps[0].methods[0]"),
])
def test_bad_pairs_and_sizes_are_one_line(sweep, says):
    with pytest.raises(NumasweepError) as err:
        plan(CXL, **sweep)
    assert says in str(err.value) and "\n" not in str(err.value), str(err.value)
