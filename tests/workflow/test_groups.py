"""Job groups formed from what is compared (config `group_compared`, docs/slurm.md): the points
one finding compares share a comparison in the plan, and a SLURM dry run makes each comparison
one group job, the same on every run."""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from helpers.workflow import snakemake
from numasweep.core import topology
from numasweep.core.errors import NumasweepError
from numasweep.planning import fleet, grid

REPO = Path(__file__).resolve().parents[2]
LUMI_G = "config/campaigns/lumi-g.yaml"
# docs/slurm.md's recipe, as a dry run.
RECIPE = ("--profile", "profiles/slurm", "--resources", "tasks=2", "-n")


def plan(campaign: str) -> list[grid.Job]:
    config = yaml.safe_load((REPO / campaign).read_text())
    return grid.expand(config, topology.load(REPO / config["arch"])).jobs


def comparisons(jobs: list[grid.Job]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for job in jobs:
        found[job.compared].add(job.id)
    return dict(found)


def dry_run_groups(output: str) -> list[frozenset[str]]:
    """The group jobs of a dry run, each as the ids of its points: the `wildcards: job=` lines
    from its `Group job NAME` line to the next job or group that is not in it (a line starting
    with `[`, its time) or the job stats."""
    groups = []
    for block in output.split(" Group job ")[1:]:
        block = re.split(r"^(?:\[|Job stats:)", block, maxsplit=1, flags=re.M)[0]
        groups.append(frozenset(re.findall(r"^\s+wildcards: job=(\S+)$", block, re.M)))
    return groups


def test_lumi_g_comparisons_are_the_mode_pair_and_each_scaling_series() -> None:
    found = comparisons(plan(LUMI_G))
    assert found["lat-interleaved-d0.1.2.3-local-rep0"] == {
        "lat-interleaved-d0.1.2.3-r2-local-concurrent-rep0", "lat-interleaved-d0.1.2.3-r2-local-serial-rep0"}
    series = {name: ids for name, ids in found.items() if name.startswith("lat-scaling-")}
    assert len(series) == 6, sorted(series)  # 2 strategies x 3 domain sets
    for ids in series.values():
        assert sorted(int(re.search(r"-r(\d+)-", i).group(1)) for i in ids) == [1, 2, 4, 8, 14], ids


def test_weights_campaign_compares_every_memory_placement_of_one_sweep() -> None:
    found = comparisons(plan("config/campaigns/weights.yaml"))
    pair = found["bw-weights-c0-rep1"]
    assert len(pair) == 12 and {i.split("-t")[0] for i in pair} == {
        "bw-weights-c0-weighted0.3w1.1", "bw-weights-c0-weighted0.3", "bw-weights-c0-weighted0.3w2.1",
        "bw-weights-c0-weighted0.3w3.1", "bw-weights-c0-weighted0.3w4.1", "bw-weights-c0-weighted0.3w8.3"}
    # remote against local memory, on one node: nodes 0 and 3 alone, two thread counts each
    assert {i.split("-t")[0] for i in found["bw-matrix-c0-rep0"]} == {"bw-matrix-c0-node0", "bw-matrix-c0-node3"}
    # the weights verified against local-only memory and uniform interleave, in one group
    assert {i.split("-t")[0] for i in found["bw-verify-c0-rep0"]} == {
        "bw-verify-c0-node0", "bw-verify-c0-weighted0.3w1.1", "bw-verify-c0-weighted0.3w2.1"}


def test_fleet_copies_compare_within_their_node() -> None:
    jobs = fleet.spread(grid.Plan(plan(LUMI_G)), ["nid1", "nid2"]).jobs
    found = comparisons(jobs)
    assert found["lat-interleaved-d0.1.2.3-local-rep0-on-nid2"] == {
        "lat-interleaved-d0.1.2.3-r2-local-concurrent-rep0-on-nid2",
        "lat-interleaved-d0.1.2.3-r2-local-serial-rep0-on-nid2"}


@pytest.mark.workflow
def test_identical_dry_runs_give_the_same_groups_each_a_comparison(repo_copy: Path) -> None:
    runs = [snakemake(repo_copy, *RECIPE, "--configfile", LUMI_G, "--config", "group_compared=true",
                      check=True).stdout for _ in range(2)]
    first, second = (sorted(sorted(g) for g in dry_run_groups(out)) for out in runs)
    assert first == second, "two identical dry runs formed different groups"
    expected = sorted(sorted(ids) for ids in comparisons(plan(LUMI_G)).values())
    assert first == expected, f"groups {first}\nare not the comparisons {expected}"
    # The seed's concurrent and serial runs of one placement: one group job, so one node.
    pair = {"lat-interleaved-d0.1.2.3-r2-local-concurrent-rep0", "lat-interleaved-d0.1.2.3-r2-local-serial-rep0"}
    assert any(pair <= set(group) for group in first), first
    # Snakemake needs one `mpi` value per group: the grouped MPI jobs get the empty one.
    assert "mpi=srun" not in runs[0]


def test_group_compared_with_batches_is_refused_when_the_config_is_read() -> None:
    with pytest.raises(NumasweepError, match="group_compared and batch: 4 cannot be combined.*set batch: 1"):
        grid.validate_config({"group_compared": True, "batch": 4})


@pytest.mark.workflow
def test_group_compared_with_batches_is_refused_in_one_line(repo_copy: Path) -> None:
    proc = snakemake(repo_copy, *RECIPE, "--configfile", LUMI_G, "--config", "group_compared=true", "batch=4")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "group_compared and batch: 4 cannot be combined" in out and "Traceback" not in out, out[-2000:]


@pytest.mark.workflow
def test_a_comparison_measured_before_is_listed_only_when_its_points_run_again(repo_copy: Path) -> None:
    """Points all measured by an ungrouped run get no `compared` job (on SLURM it would take a
    node to list them); once the list exists, a rebuilt kernel runs the points again as a group."""
    pair = "lat-interleaved-d0.1.2.3-local-rep0"
    points = [f"results/lumi-g/latency/lat-interleaved-d0.1.2.3-r2-local-{mode}-rep0.{ext}"
              for mode in ("concurrent", "serial") for ext in ("csv", "json")]
    # up to date, oldest first: the shared module, the kernel, the topology, the points
    now = time.time()
    for age, paths in enumerate((["build/lib/libnumasweep_common.a"], ["build/bin/numa_latency"],
                                 ["results/lumi-g/topology.json"], points)):
        for path in paths:
            (repo_copy / path).parent.mkdir(parents=True, exist_ok=True)
            (repo_copy / path).touch()
            os.utime(repo_copy / path, (now - 10 + age, now - 10 + age))
    args = (*RECIPE, "--configfile", LUMI_G, "--config", "group_compared=true")
    ids = frozenset(Path(p).stem for p in points)
    groups = dry_run_groups(snakemake(repo_copy, *args, check=True).stdout)
    assert len(groups) == 6 and not any(ids & group for group in groups), groups
    (repo_copy / "logs/lumi-g/groups").mkdir(parents=True)
    (repo_copy / f"logs/lumi-g/groups/{pair}.txt").touch()
    (repo_copy / "build/bin/numa_latency").touch()
    out = snakemake(repo_copy, *args, check=True).stdout
    assert f"Group job {pair} " in out
    assert ids in dry_run_groups(out)
