"""Grid expansion, config validation, provenance parsing and aggregation, without Snakemake."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from numasweep.results import aggregate
from numasweep.planning import grid
from numasweep.core import topology
from numasweep.core.errors import NumasweepError
from numasweep.running.provenance import parse_version
from numasweep.core import registry

REPO = Path(__file__).resolve().parents[2]


def _campaign(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / "campaigns" / name).read_text())


def _arch(name: str) -> topology.Topology:
    return topology.load(REPO / "config" / "arch" / f"{name}.yaml")


def test_lumi_campaign_gives_the_seed_placement_and_ids() -> None:
    plan = grid.expand(_campaign("lumi-g.yaml"), _arch("lumi-g"))
    job = {j.id: j for j in plan.jobs}["lat-interleaved-d0.1.2.3-r2-local-serial-rep0"]
    assert [p.cpu for p in job.placements] == [1, 9, 17, 25, 33, 41, 49, 57]
    assert [p.mem_nodes for p in job.placements] == [[0], [0], [1], [1], [2], [2], [3], [3]]
    assert "--size=1-16384" in job.kernel_args and "--serial" in job.kernel_args
    assert job.tasks == 8
    assert len(plan.jobs) == 32 and len({j.id for j in plan.jobs}) == 32


def test_ids_are_stable_across_expansions() -> None:
    config = _campaign("ulisse.yaml")
    first = [j.id for j in grid.expand(config, _arch("ulisse")).jobs]
    again = [j.id for j in grid.expand(config, _arch("ulisse")).jobs]
    assert first == again
    assert "bw-c0-node1-t10-rep2" in first


def test_gpu_campaign_weights_become_ids_and_kernel_options() -> None:
    plan = grid.expand(_campaign("gpu-cxl.yaml"), _arch("cxl-example"))
    job = {j.id: j for j in plan.jobs}["gpu-weighted-g2-weighted0.3w1.4-pinned-rep0"]
    assert job.memory == "weighted:0,3@1,4" and job.gpus == 2
    assert "--sizes=4K-2G" in job.kernel_args and "--pin_memory=1" in job.kernel_args


def test_copy_threads_move_off_a_memory_only_node() -> None:
    plan = grid.expand({"copy": {"sweeps": [{"pairs": "all", "cpu_node": "dst"}]}}, _arch("cxl-example"))
    ids = [j.id for j in plan.by_bench("copy")]
    assert len(ids) == 9  # nodes 0, 1, 3: every ordered pair
    assert "copy-s0-d3-c0-t1-64MiB-rep0" in ids and "copy-s3-d1-c1-t1-64MiB-rep0" in ids
    assert "copy-s3-d3-c0-t1-64MiB-rep0" in ids  # node 0 is the CXL node's nearest (14 < 24)


def test_gpu_sweep_is_skipped_with_a_reason_without_gpus_unless_forced() -> None:
    config = {"latency": {"sweeps": [{"domains": [[0]]}]}, "gpu_xfer": {"sweeps": [{"ngpus": [1]}]}}
    plan = grid.expand(config, _arch("ulisse"))
    assert not plan.by_bench("gpu_xfer") and "no GPU" in plan.skipped["gpu_xfer"]
    forced = grid.expand({**config, "gpu_xfer": {"force": True, "sweeps": [{"ngpus": [1]}]}}, _arch("ulisse"))
    assert len(forced.by_bench("gpu_xfer")) == 1 and not forced.skipped


def test_lumi_g_gpu_sweep_runs_the_hip_build_on_its_eight_gcds() -> None:
    config = {"latency": {"sweeps": []}, "gpu_xfer": {"sweeps": [{"ngpus": [1, 8]}]}}
    jobs = grid.expand(config, _arch("lumi-g")).by_bench("gpu_xfer")
    assert sorted(j.gpus for j in jobs) == [1, 8]
    assert {j.kernel for j in jobs} == {"gpu_xfer_hip"}


@pytest.mark.parametrize(
    "config, message",
    [
        (
            {"latency": {"sweeps": [{"domains": [[0]], "colour": 1}]}},
            "latency.sweeps[0]: unknown key 'colour'",
        ),
        ({"launcher": "ssh"}, "launcher: 'ssh' is not one of"),
        ({"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": [0]}]}}, "bandwidth.sweeps[0].threads[0]"),
        ({"latency": {"sweeps": [{"domains": [[0, 9]]}]}}, "latency.sweeps[0].domains[0]: node 9"),
        ({"latency": {"sweeps": [{"domains": [[0]], "ranks_per_domain": [15]}]}}, "latency.sweeps[0]:"),
        ({"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": [20]}]}}, "20 threads asked on node 0"),
        (
            {"latency": {"sweeps": [{"domains": [[0]], "memory": ["interleave:0,7"]}]}},
            "latency.sweeps[0].memory[0]",
        ),
        ({b: {"sweeps": []} for b in registry.names()}, "the sweep is empty"),
    ],
)
def test_config_errors_name_the_key_path(config: dict, message: str) -> None:
    with pytest.raises(NumasweepError) as err:
        grid.expand(config, _arch("lumi-g"))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_gpu_without_a_numa_node_is_driven_from_the_first_node_with_cpus() -> None:
    """A GPU whose sysfs numa_node is -1 (a virtual machine's, seen on a cloud H100 guest) has no
    node: its host thread goes to the first node with CPUs, and the plan says which cores."""
    import dataclasses

    topo = _arch("ulisse")
    topo = dataclasses.replace(topo, gpus=[topology.Gpu(0, "NVIDIA H100 80GB HBM3", "0000:00:06.0", None)])
    config = {b: {"sweeps": []} for b in registry.names()} | {"gpu_xfer": {"sweeps": [{"pinned": [True, False]}]}}
    jobs = grid.expand(config, topo).by_bench("gpu_xfer")
    first = next(node for node in topo.nodes if node.cpus)
    assert len(jobs) == 2 and all(job.cpus[0] in first.cpus for job in jobs)


def test_a_gpu_campaign_on_a_machine_without_gpus_says_so() -> None:
    """Only gpu_xfer sweeps, on a topology that lists no GPU: the one line gives that reason,
    not "add a sweep"."""
    config = {b: {"sweeps": []} for b in registry.names()} | {"gpu_xfer": {"sweeps": [{"ngpus": [1]}]}}
    with pytest.raises(NumasweepError) as err:
        grid.expand(config, _arch("ulisse"))
    assert "lists no GPU" in str(err.value) and "nvidia-smi" in str(err.value)
    assert "the sweep is empty" not in str(err.value) and "\n" not in str(err.value)


def test_text_from_the_command_line_is_read_as_the_type_the_schema_asks() -> None:
    """Snakemake's `--config gpu_xfer='{force: true}'` gives every value inside the mapping as
    text: 'true', '2' and '100' are taken as the boolean and integers the schema asks for (a key of
    its own, an item of a list, a key by $ref); other text is still refused with its key path."""
    config = grid.validate_config({"gpu_xfer": {"force": "true", "sweeps": [
        {"ngpus": ["1", "2"], "repetitions": "2", "iterations": "100", "pinned": ["false"], "sizes": "4K-1M"}]}})
    section = config["gpu_xfer"]
    sweep = section["sweeps"][0]
    assert section["force"] is True and sweep["ngpus"] == [1, 2] and sweep["pinned"] == [False]
    assert (sweep["repetitions"], sweep["iterations"], sweep["sizes"]) == (2, 100, "4K-1M")
    with pytest.raises(NumasweepError, match=r"gpu_xfer\.force: wrong type \('maybe'\)"):
        grid.validate_config({"gpu_xfer": {"force": "maybe"}})


def test_two_sweeps_with_the_same_ids_need_a_label() -> None:
    sweep = {"domains": [[0]], "sizes": "1-2"}
    config = {"latency": {"sweeps": [sweep, {**sweep, "sizes": "4-8"}]}}
    with pytest.raises(NumasweepError, match="label"):
        grid.expand(config, _arch("lumi-g"))
    labelled = {"latency": {"sweeps": [sweep, {**sweep, "sizes": "4-8", "label": "big"}]}}
    assert [j.id for j in grid.expand(labelled, _arch("lumi-g")).jobs][1].startswith("lat-big-")


@pytest.mark.parametrize("enabled,thp_jobs", [("always [madvise] never", 1), ("always madvise [never]", 0)])
def test_default_sweep_measures_thp_at_the_large_sizes_unless_thp_is_off(tmp_path: Path, capsys, enabled: str,
                                                                          thp_jobs: int) -> None:
    """The default sweep's latency: 4 KiB pages at every size and one rank with transparent huge
    pages from 4 MiB, left out with one warning line on a machine (here a captured sysfs tree)
    whose THP is `never`, where the kernel would refuse them."""
    import shutil

    tree = tmp_path / "kvm"
    shutil.copytree(REPO / "tests" / "fixtures" / "sysfs" / "kvm-2cpu", tree)
    thp = tree / "sys" / "kernel" / "mm" / "transparent_hugepage"
    thp.mkdir(parents=True, exist_ok=True)
    (thp / "enabled").write_text(enabled + "\n")
    topo = topology.detect(tree / "sys", tree / "proc")
    plan = grid.expand(grid.load_config_file(grid.DEFAULT_CONFIG), topo)
    huge = [j for j in plan.by_bench("latency") if j.grid["pages"] == "thp"]
    assert len(huge) == thp_jobs and len(plan.by_bench("latency")) == 3 + thp_jobs
    assert not [j for j in plan.by_bench("latency") if j.tasks == 1 and "--serial" in j.kernel_args]
    for job in huge:
        assert "--size=4M-256M" in job.kernel_args and "--pages=thp" in job.kernel_args
        assert job.id == "lat-sequential-d0-r1-local-concurrent-thp-rep0"
    warnings = [line for line in capsys.readouterr().err.splitlines() if "transparent huge pages" in line]
    assert len(warnings) == 1 - thp_jobs
    assert all("left out" in w and "echo madvise" in w for w in warnings)
    # an arch file describes a machine not looked at: its thp jobs are planned
    assert len([j for j in grid.expand(grid.load_config_file(grid.DEFAULT_CONFIG), _arch("ulisse")).jobs
                if j.grid.get("pages") == "thp"]) == 1


def test_grid_command_counts_jobs_per_benchmark() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "numasweep", "grid", "--config", "config/campaigns/lumi-g.yaml", "--count"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "latency\t32" in proc.stdout.splitlines()


def test_kernel_version_gives_commit_and_flags() -> None:
    commit, flags = parse_version("numa_copy numasweep 0123abcd-dirty\n  built with: gcc -O2 -fopenmp -lnuma")
    assert commit == "0123abcd-dirty" and flags == "gcc -O2 -fopenmp -lnuma"


def _job(folder: Path, job_id: str, rows: str | None) -> Path:
    csv = folder / f"{job_id}.csv"
    if rows is not None:
        csv.write_text("src_node,dst_node,bytes,best_gb_s\n" + rows)
    csv.with_suffix(".json").write_text(
        json.dumps(
            {"job_id": job_id, "grid": {"label": "", "repetition": 0}, "host": "h", "start": "s", "end": "e"}
        )
    )
    return csv


def test_aggregate_names_a_missing_or_malformed_file_and_keeps_going_when_told(tmp_path: Path) -> None:
    good = _job(tmp_path, "copy-s0-d1", "0,1,1024,5.5\n")
    missing = _job(tmp_path, "copy-s1-d0", None)
    bad = _job(tmp_path, "copy-s1-d1", "")
    bad.write_text("wrong,header\n1,2\n")
    with pytest.raises(NumasweepError, match="copy-s1-d0.csv"):
        aggregate.aggregate([good, missing], "copy")
    with pytest.raises(NumasweepError, match="copy-s1-d1.csv: missing column"):
        aggregate.aggregate([good, bad], "copy")
    table, problems = aggregate.aggregate([good, missing, bad], "copy", keep_going=True)
    assert list(table["job_id"]) == ["copy-s0-d1"] and len(problems) == 2
    out = tmp_path / "copy.csv"
    aggregate.write(table, problems, out)
    assert pd.read_csv(out)["best_gb_s"].tolist() == [5.5]
    assert len(json.loads((tmp_path / "aggregate_problems.json").read_text())["copy"]) == 2


def test_aggregate_in_one_parse_gives_the_table_read_job_by_job(tmp_path: Path) -> None:
    """Jobs sharing a header are parsed at once (`aggregate._read_all`); the table must be the one
    `read_job` builds file by file, column order and types included (a grid value only some jobs
    have, a provenance field left null, a cell empty in one job), and a bad cell must still name
    its own file and line."""
    jobs = [_job(tmp_path, f"copy-s{n}-d1", f"{n},1,1024,{5.5 + n}\n{n},1,2048,{6 + n}\n") for n in range(3)]
    record = json.loads(jobs[1].with_suffix(".json").read_text())
    record["grid"]["fleet_node"] = "nid000001"
    record["slurm_job_id"] = None
    jobs[1].with_suffix(".json").write_text(json.dumps(record))
    jobs[2].write_text("src_node,dst_node,bytes,best_gb_s\n2,,1024,7.5\n2,1,2048,8\n")
    fast = aggregate._read_all(jobs, "copy")
    assert fast is not None, "sound jobs sharing a header were not read in one parse"
    table, problems = aggregate.aggregate(jobs, "copy")
    one_by_one = pd.concat([aggregate.read_job(j, "copy") for j in jobs], ignore_index=True, sort=False)
    one_by_one.insert(0, "job_id", one_by_one.pop("job_id"))
    assert problems == []
    pd.testing.assert_frame_equal(table, one_by_one)
    jobs[2].write_text("src_node,dst_node,bytes,best_gb_s\n2,1,1024,7.5\n2,1,2048,-8\n")
    with pytest.raises(NumasweepError, match=r"copy-s2-d1.csv: line 3 .*'best_gb_s': '-8(\.0)?' is negative"):
        aggregate.aggregate(jobs, "copy")
