"""Arch files, sysfs detection and topology.json: the machine descriptions plans are made from."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from numasweep.core.errors import NumasweepError
from numasweep.core import topology
from numasweep.core.topology import Topology, detect, load, load_arch

REPO = Path(__file__).resolve().parents[2]
ARCH = REPO / "config" / "arch"
TREES = REPO / "tests" / "fixtures" / "sysfs"


def tree(name: str) -> Topology:
    return detect(TREES / name / "sys", TREES / name / "proc")


def test_lumi_g_arch_is_the_seeds_machine():
    t = load_arch(ARCH / "lumi-g.yaml")
    assert t.cpu_model == "AMD EPYC 7A53 64-Core Processor"
    assert [n.id for n in t.nodes] == [0, 1, 2, 3]
    assert t.nodes[0].cpus == list(range(0, 16)) + list(range(64, 80))
    assert t.nodes[3].cpus == list(range(48, 64)) + list(range(112, 128))
    assert t.threads_per_core == 2 and t.smt_siblings[1] == [1, 65]
    assert len(t.l3_groups) == 8 and all(len(g) == 16 for g in t.l3_groups)
    l3 = [c for c in t.caches if c.level == 3][0]
    assert l3.size_bytes == 32 << 20
    assert t.free_cores(0) == [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15]
    assert t.l3_group_of(57) == 7 and t.node_of(100) == 2
    assert t.nodes[0].memory_bytes == 128 << 30


def test_ulisse_and_cxl_arch_files():
    u = load_arch(ARCH / "ulisse.yaml")
    assert u.distances == [[10, 11], [11, 10]] and u.threads_per_core == 1
    assert u.free_cores(1) == list(range(10, 20))
    assert u.nodes[0].memory_bytes == 20451 << 20
    c = load_arch(ARCH / "cxl-example.yaml")
    assert c.memory_only_nodes() == [3]
    assert [(g.id, g.node) for g in c.gpus] == [(0, 0), (1, 1)]
    assert c.distances[0][2] == 14  # row/column order follows nodes: 0, 1, 3


@pytest.mark.parametrize("name", ["lumi-g", "ulisse", "cxl-example"])
def test_detection_reproduces_arch_file(name):
    arch = load_arch(ARCH / f"{name}.yaml")
    found = tree(name)
    assert found.source == f"sysfs:{TREES / name / 'sys'}"
    for key in arch.__dataclass_fields__:
        if key in ("source", "reserved_cpus"):
            continue
        if key in ("memory_peak", "memory_peak_unknown"):
            continue  # the DIMMs come from dmidecode on the node, never from a sysfs tree
        if key == "gpus" and any(g.pci is None for g in arch.gpus):
            continue  # GPUs written from documentation, without PCI addresses: no sysfs tree has them
        assert getattr(found, key) == getattr(arch, key), key


def test_captured_tree_of_this_kind_of_machine():
    t = tree("kvm-2cpu")
    assert len(t.nodes) == 1 and t.all_cpus() == [0, 1]
    assert t.l3_groups == [[0, 1]]
    assert [c.size_bytes for c in t.caches if c.level == 3] == [32 << 20]
    assert t.hypervisor == "KVM"  # the cpuinfo 'hypervisor' flag, named by kvm-clock
    assert t.gpus == []  # virtio devices only


def test_live_detection_matches_lscpu():
    out = subprocess.run(["lscpu", "-J"], capture_output=True, text=True, check=True).stdout
    fields = {e["field"].rstrip(":"): e["data"] for e in json.loads(out)["lscpu"]}
    t = detect()
    assert len(t.nodes) == int(fields["NUMA node(s)"])
    assert len(t.all_cpus()) == int(fields["CPU(s)"])
    m = re.match(r"([\d.]+) (KiB|MiB|GiB) \((\d+) instances?\)", fields["L3 cache"])
    total = float(m.group(1)) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
    l3 = [c for c in t.caches if c.level == 3][0]
    assert len(l3.instances) == int(m.group(3))
    assert l3.size_bytes * len(l3.instances) == total
    if "Hypervisor vendor" in fields:
        assert t.hypervisor is not None


def test_constructed_trees_are_reproducible(tmp_path):
    """make_sysfs.py writes the same constructed trees every time (tests/conftest.py builds them)."""
    from fixtures import make_sysfs

    for name, make in make_sysfs.MACHINES.items():
        files = make()
        on_disk = {str(p.relative_to(TREES / name)) for p in (TREES / name).rglob("*") if p.is_file() and p.name != ".stamp"}
        assert on_disk == set(files), name
        for rel, text in files.items():
            assert (TREES / name / rel).read_text() == (text if text.endswith("\n") else text + "\n"), rel


def test_json_round_trip_and_digest():
    t = load_arch(ARCH / "cxl-example.yaml")
    again = Topology.from_json(t.to_json())
    assert again == t
    assert t.digest() == tree("cxl-example").digest()  # source is not part of it
    changed = Topology.from_json(t.to_json())
    changed.nodes[0].memory_bytes += 4096
    assert changed.digest() != t.digest()


def test_load_takes_arch_or_json(tmp_path):
    t = load(ARCH / "ulisse.yaml")
    p = tmp_path / "topology.json"
    p.write_text(t.to_json())
    assert load(p) == t


def test_topology_command_writes_json(tmp_path):
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, "-m", "numasweep", "topology", "--detect", "--sysfs",
                           str(TREES / "lumi-g" / "sys"), "--reserved", "0,8", "-o", str(out)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    t = load(out)
    assert t.system == "lumi-g" and t.reserved_cpus == [0, 8] and t.free_cores(0)[:2] == [1, 2]


def _lumi() -> dict:
    return yaml.safe_load((ARCH / "lumi-g.yaml").read_text())


def _edit(path, value):
    def apply(d):
        *head, last = path
        for k in head:
            d = d[k]
        if value is _DELETE:
            del d[last]
        else:
            d[last] = value
    return apply


_DELETE = object()

BAD_ARCH = [
    ("unknown key", _edit(["nodes", 0, "colour"], "red"), "nodes/0: Additional properties"),
    ("memory not a size", _edit(["nodes", 1, "memory"], 12), "nodes/1/memory"),
    ("missing system", _edit(["system"], _DELETE), "(top level): 'system' is a required property"),
    ("bad cpulist", _edit(["nodes", 0, "cpus"], "0-15,x"), "nodes/0/cpus"),
    ("duplicate CPU", _edit(["nodes", 0, "cpus"], "0-15,64-79,15"), "CPU 15 listed twice"),
    ("CPU in two nodes", _edit(["nodes", 1, "cpus"], "15-31,80-95"), "CPU 15 is also in node 0"),
    ("duplicate node id", _edit(["nodes", 1, "id"], 0), "node id 0 appears twice"),
    ("distances shape", _edit(["distances"], [[10, 12], [12, 10]]), "distances: need a 4x4 matrix"),
    ("self distance", _edit(["distances", 2, 2], 12), "distances[2][2] is 12"),
    ("L3 group crossing nodes", _edit(["caches", 3, "instances"], [
        "0-7,64-71", "8-19,72-79", "20-23,80-87", "24-31,88-95",
        "32-39,96-103", "40-47,104-111", "48-55,112-119", "56-63,120-127"]),
     "L3 group 1 (8-19,72-79) takes part of node 0"),
    ("memory_only with CPUs", _edit(["nodes", 2, "memory_only"], True), "memory_only node has CPUs"),
    ("SMT stride vs threads", _edit(["threads_per_core"], 1), "widest core has 2 threads"),
    ("reserved CPU missing", _edit(["reserved_cpus"], "0,200"), "reserved_cpus: CPU 200 is in no node"),
    ("GPU on a missing node", _edit(["gpus"], [{"name": "g", "pci": "0000:c1:00.0", "node": 7}]),
     "NUMA node 7 does not exist"),
    ("GPU PCI address", _edit(["gpus"], [{"name": "g", "pci": "c1:00.0", "node": 0}]), "gpus/0/pci"),
    ("cache type", _edit(["caches", 0, "type"], "Victim"), "caches/0/type"),
]


@pytest.mark.parametrize("label,edit,expected", BAD_ARCH, ids=[b[0] for b in BAD_ARCH])
def test_bad_arch_file_is_refused_in_one_line(tmp_path, label, edit, expected):
    data = _lumi()
    edit(data)
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(NumasweepError) as exc:
        load_arch(p)
    msg = str(exc.value)
    assert expected in msg and str(p) in msg and "\n" not in msg


def test_bad_yaml_and_missing_file(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("nodes: [\n")
    with pytest.raises(NumasweepError, match=r"x.yaml:2:1: YAML syntax error in the arch file"):
        load_arch(p)
    with pytest.raises(NumasweepError, match="no such arch file"):
        load_arch(tmp_path / "missing.yaml")


def test_command_line_error_is_one_line(tmp_path):
    data = _lumi()
    data["gpus"] = [{"name": "g", "pci": "0000:c1:00.0", "node": 9}]
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(data))
    proc = subprocess.run([sys.executable, "-m", "numasweep", "topology", "--arch", str(p), "-o",
                           str(tmp_path / "t.json")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "NUMA node 9 does not exist" in proc.stderr
    assert not (tmp_path / "t.json").exists()


def test_memory_only_node_and_gpus_detected():
    t = tree("cxl-example")
    assert t.memory_only_nodes() == [3] and t.node(3).memory_bytes == 128 << 30
    assert [g.name for g in t.gpus] == ["NVIDIA A100 80GB PCIe"] * 2


def test_gpu_name_without_driver_and_hypervisor_from_dmi(tmp_path):
    shutil.copytree(TREES / "cxl-example", tmp_path / "t")
    shutil.rmtree(tmp_path / "t" / "proc" / "driver")
    assert [g.name for g in detect(tmp_path / "t" / "sys", tmp_path / "t" / "proc").gpus] == ["NVIDIA GPU [10de:20b5]"] * 2
    shutil.copytree(TREES / "kvm-2cpu", tmp_path / "q")
    dmi = tmp_path / "q" / "sys" / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    (dmi / "sys_vendor").write_text("QEMU\n")
    assert detect(tmp_path / "q" / "sys", tmp_path / "q" / "proc").hypervisor == "QEMU"
    cpuinfo = tmp_path / "q" / "proc" / "cpuinfo"
    cpuinfo.write_text(cpuinfo.read_text().replace(" hypervisor", ""))
    assert detect(tmp_path / "q" / "sys", tmp_path / "q" / "proc").hypervisor is None


def test_an_arch_file_of_another_machine_is_refused_on_the_node_in_one_line(tmp_path):
    """The topology job on the node a campaign runs on (`topology --arch FILE --here`): an arch
    file naming NUMA nodes or CPUs the node lacks is refused, naming both machines; one that
    leaves some of the node out is kept with a line saying so."""
    here = tree("lumi-g")
    lumi = load_arch(ARCH / "lumi-g.yaml")
    with pytest.raises(NumasweepError) as err:
        topology.against_here(lumi, Topology(**{**here.__dict__, "nodes": here.nodes[:1]}), "lumi-g.yaml")
    line = str(err.value)
    assert "\n" not in line and line.startswith("lumi-g.yaml describes lumi-g (4 NUMA node(s)")
    assert "NUMA node(s) 1-3" in line and "arch: auto" in line and "topology --detect -o FILE" in line, line
    assert topology.against_here(here, here, "same.yaml") == []
    part = Topology(**{**here.__dict__, "nodes": here.nodes[:2]})
    (note,) = topology.against_here(part, here, "part.yaml")
    assert note.startswith("part.yaml leaves out what this node has: NUMA node(s) 2-3"), note
    # the command: refused with rc 2 and one line, here on this machine
    foreign = tmp_path / "foreign.json"
    (tmp_path / "big.yaml").write_text((ARCH / "lumi-g.yaml").read_text())
    proc = subprocess.run([sys.executable, "-m", "numasweep", "topology", "--arch", str(tmp_path / "big.yaml"),
                           "--here", "-o", str(foreign)], capture_output=True, text=True)
    mine = detect()
    if set(mine.all_cpus()) >= set(lumi.all_cpus()) and {n.id for n in mine.nodes} >= {0, 1, 2, 3}:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "but this job runs on" in proc.stderr and not foreign.exists(), proc.stderr


def test_topology_command_without_o_prints_the_json(tmp_path):
    """Without -o (`topology --detect`, `topology --arch FILE` as docs/firmware.md and
    examples/README.md write them) the topology JSON is the command's stdout, byte for byte what
    -o writes, and its summary (the firmware's view too) goes to stderr; nothing is written."""
    sysfs = ["--detect", "--sysfs", str(TREES / "lumi-g" / "sys")]
    for source in (sysfs, ["--arch", str(ARCH / "ulisse.yaml")]):
        proc = subprocess.run([sys.executable, "-m", "numasweep", "topology", *source], capture_output=True,
                              text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        written = subprocess.run([sys.executable, "-m", "numasweep", "topology", *source, "-o", "t.json"],
                                 capture_output=True, text=True, cwd=tmp_path)
        assert written.returncode == 0, written.stderr
        assert proc.stdout == (tmp_path / "t.json").read_text()
        assert Topology.from_json(proc.stdout) == load(tmp_path / "t.json")
        assert proc.stderr.startswith("stdout: ") and "  HMAT: " in proc.stderr, proc.stderr
        assert written.stdout.startswith("t.json: ") and "Traceback" not in proc.stderr + written.stderr
        (tmp_path / "t.json").unlink()
        assert not list(tmp_path.iterdir())
