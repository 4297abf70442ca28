"""What the workflow asks of SLURM where it plans (numasweep.planning.slurm): the memory of a
benchmark job's node, and where `arch: auto` may not plan. The cluster's side (sinfo's
configured memory, a login node that is no node) is tested on the test cluster, tests/slurm."""

from __future__ import annotations

from pathlib import Path

from numasweep.core.errors import NumasweepError
from numasweep.core.topology import load_arch
from numasweep.planning import slurm

ARCH = Path(__file__).resolve().parents[2] / "config" / "arch"


def test_a_job_asks_for_its_nodes_memory_in_mib() -> None:
    lumi = load_arch(ARCH / "lumi-g.yaml")
    assert slurm.memory_mb(lumi, ask_slurm=False) == 4 * 128 * 1024


def test_arch_auto_plans_here_outside_srun_and_inside_an_allocation() -> None:
    """Only the srun launcher outside an allocation runs the kernels elsewhere."""
    assert slurm.login_node("mpirun", {}) == ""
    assert slurm.login_node("srun", {"SLURM_JOB_ID": "12"}) == ""


def detected(folder: Path, name: str, **change) -> Path:
    """A compute node's detection file as the workflow keeps it (here: LUMI-G's arch file)."""
    topo = load_arch(ARCH / "lumi-g.yaml")
    for key, value in change.items():
        setattr(topo, key, value)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(topo.to_json())
    return path


def test_arch_auto_on_a_node_or_in_a_job_without_a_detection_plans_here(tmp_path: Path) -> None:
    assert slurm.compute_node_arch("", {}, [], tmp_path) == ("", "")
    assert slurm.compute_node_arch("no node", {}, [], tmp_path, {"SLURM_JOB_ID": "7"}) == ("", "")


def test_a_kept_detection_is_read_without_a_job(tmp_path: Path) -> None:
    """A partition's file is read by later runs, dry runs and jobs alike: no srun (none here)."""
    path = detected(tmp_path, "partition-standard-g.json")
    for on_login, environ in (("no node", {}), ("", {"SLURM_JOB_ID": "7"})):
        arch, line = slurm.compute_node_arch(on_login, {"slurm_partition": "standard-g"}, [], tmp_path, environ)
        assert arch == str(path) and "detected by an earlier run" in line and "partition standard-g" in line


def test_a_fleet_of_two_kinds_is_refused_naming_the_odd_node(tmp_path: Path) -> None:
    detected(tmp_path, "node-nid1.json")
    detected(tmp_path, "node-nid2.json", cpu_model="AMD EPYC 9654")
    detected(tmp_path, "node-nid3.json", system="another name")  # a name alone differs: alike
    try:
        slurm.compute_node_arch("no node", {}, ["nid1", "nid2", "nid3"], tmp_path)
    except NumasweepError as exc:
        assert "node(s) nid2 have another CPU model" in str(exc) and "nid3" not in str(exc.args[0].split("than")[0])
    else:
        raise AssertionError("a fleet of two kinds of node was planned as one")
