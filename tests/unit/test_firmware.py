"""The firmware's view (HMAT, memory tiers, weighted-interleave weights) read from a sysfs tree
written in the kernel's layout (Documentation/admin-guide/mm/numaperf.rst,
Documentation/ABI/testing/sysfs-kernel-mm-mempolicy-weighted-interleave)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from numasweep.core import firmware
from numasweep.core.topology import Topology, detect

REPO = Path(__file__).resolve().parents[2]
TREES = REPO / "tests" / "fixtures" / "sysfs"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def hmat_tree(root: Path, auto: str | None = "true") -> Path:
    """Two CPU nodes and a memory-only node 3 behind node 0, as a CXL expander shows up (the
    nodes of tests/fixtures' cxl-example): node 3 has access0 numbers for initiator 0 only,
    node 1 has none (its firmware left it out)."""
    node = "devices/system/node"
    files = {
        f"{node}/node0/access0/initiators/read_latency": "80",
        f"{node}/node0/access0/initiators/write_latency": "90",
        f"{node}/node0/access0/initiators/read_bandwidth": "100000",
        f"{node}/node0/access0/initiators/write_bandwidth": "80000",
        f"{node}/node0/access1/initiators/read_latency": "80",
        f"{node}/node0/access1/initiators/read_bandwidth": "100000",
        f"{node}/node3/access0/initiators/read_latency": "250",
        f"{node}/node3/access0/initiators/write_latency": "260",
        f"{node}/node3/access0/initiators/read_bandwidth": "30000",
        f"{node}/node3/access0/initiators/write_bandwidth": "0",
        "devices/virtual/memory_tiering/memory_tier4/nodelist": "0-1",
        "devices/virtual/memory_tiering/memory_tier22/nodelist": "3",
        f"{firmware.WEIGHTS_DIR}/node0": "3",
        f"{firmware.WEIGHTS_DIR}/node1": "3",
        f"{firmware.WEIGHTS_DIR}/node3": "1",
    }
    if auto is not None:
        files[f"{firmware.WEIGHTS_DIR}/auto"] = auto
    _write(root, files)
    # The initiators are links to the initiator nodes, as in sysfs.
    for ini in ("node0", "node1"):
        (root / node / ini).mkdir(parents=True, exist_ok=True)
    for target, initiators in (("node0", ("node0", "node1")), ("node3", ("node0",))):
        for klass in ("access0", "access1") if target == "node0" else ("access0",):
            for ini in initiators:
                (root / node / target / klass / "initiators" / ini).symlink_to(root / node / ini)
    return root


def test_hmat_tiers_and_weights_are_read(tmp_path):
    fw = firmware.read(hmat_tree(tmp_path))
    a0 = fw.pairs(0)
    assert sorted(a0) == [(0, 0), (0, 3), (1, 0)]
    assert a0[(0, 3)] == firmware.Access(0, 0, 3, 250, 260, 30000, None)  # 0 MB/s: not given
    assert a0[(1, 0)].read_bandwidth_mb_s == 100000
    a1 = fw.pairs(1)
    assert sorted(a1) == [(0, 0), (1, 0)] and a1[(0, 0)].write_latency_ns is None
    assert [(t.id, t.nodes) for t in fw.tiers] == [(4, [0, 1]), (22, [3])]
    assert fw.tier_of(3) == 22 and fw.tier_of(5) is None
    assert fw.weights == {0: 3, 1: 3, 3: 1} and fw.weights_auto is True
    assert fw.weights_mode().startswith("auto")
    assert fw.summary()[0] == "HMAT: 3 initiator/target pair(s) in access0, 2 initiator/target pair(s) in access1"


def test_manual_mode_and_a_kernel_without_the_switch(tmp_path):
    assert firmware.read(hmat_tree(tmp_path / "a", auto="false")).weights_mode() == "manual"
    assert "no automatic mode" in firmware.read(hmat_tree(tmp_path / "b", auto=None)).weights_mode()


def test_absent_files_are_not_provided_never_an_error(tmp_path):
    fw = firmware.read(tmp_path / "empty")
    assert fw == firmware.Firmware()
    assert fw.summary() == [
        "HMAT: not provided",
        "memory tiers: not provided",
        "weighted-interleave weights: not provided",
    ]


def test_automatic_weights_without_hmat_are_not_said_to_come_from_it(tmp_path):
    """Right after "HMAT: not provided", the weights line does not say the kernel set them from HMAT."""
    fw = firmware.read(hmat_tree(tmp_path))
    assert fw.summary()[2] == ("weighted-interleave weights: node 0: 3, node 1: 3, node 3: 1; "
                               "mode auto (set by the kernel from the firmware's bandwidth, HMAT or CDAT)")
    bare = firmware.Firmware(weights={0: 1}, weights_auto=True)
    assert bare.summary()[0] == "HMAT: not provided" and "HMAT/CDAT" not in bare.summary()[2]
    assert bare.summary()[2].startswith("weighted-interleave weights: node 0: 1; mode auto (set by the kernel; "
                                        "with no HMAT bandwidth here, its defaults")


def test_detection_carries_the_view_into_topology_json(tmp_path):
    import shutil

    shutil.copytree(TREES / "cxl-example", tmp_path / "cxl-example", symlinks=True)
    sys_root = tmp_path / "cxl-example" / "sys"
    hmat_tree(sys_root)
    topo = detect(sys_root, tmp_path / "cxl-example" / "proc")
    assert sorted(topo.firmware.pairs(0))[:1] == [(0, 0)]
    again = Topology.from_json(topo.to_json())
    assert again == topo and again.firmware.weights == {0: 3, 1: 3, 3: 1}
    # The digest is the machine's, not its settings': the same with and without the view.
    assert topo.digest() == detect(TREES / "cxl-example" / "sys", TREES / "cxl-example" / "proc").digest()
    # A topology.json written before the view existed still loads, with nothing provided.
    old = json.loads(topo.to_json())
    del old["firmware"]
    assert Topology.from_dict(old).firmware == firmware.Firmware()


def test_topology_command_says_what_was_not_provided(tmp_path):
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, "-m", "numasweep", "topology", "--detect", "--sysfs",
                           str(TREES / "ulisse" / "sys"), "-o", str(out)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "  HMAT: not provided" in proc.stdout.splitlines()


def test_weight_writes_in_node_order():
    assert firmware.weight_writes({2: 1, 0: 3}) == [
        "echo 3 | sudo tee /sys/kernel/mm/mempolicy/weighted_interleave/node0",
        "echo 1 | sudo tee /sys/kernel/mm/mempolicy/weighted_interleave/node2"]


def _ignored_lines(fw: firmware.Firmware) -> dict[str, str]:
    """file name -> its "firmware file X says Y: ignored" line."""
    return {Path(i.file).name: line for i, line in zip(fw.ignored, fw.notes())}


def test_a_weight_outside_1_to_255_is_ignored_and_said(tmp_path):
    root = hmat_tree(tmp_path)
    for node, text in (("node0", "300"), ("node1", "0"), ("node3", "heavy")):
        (root / firmware.WEIGHTS_DIR / node).write_text(text + "\n")
    (root / firmware.WEIGHTS_DIR / "node2").write_text("255\n")
    fw = firmware.read(root)
    assert fw.weights == {2: 255}  # never "node 0: 300"
    lines = _ignored_lines(fw)
    assert sorted(lines) == ["node0", "node1", "node3"]
    assert lines["node0"] == (f"firmware file {root / firmware.WEIGHTS_DIR / 'node0'} says '300': ignored "
                              "(a weight is a whole number from 1 to 255)")
    assert "says '0': ignored" in lines["node1"] and "says 'heavy': ignored" in lines["node3"]
    assert "node 0" not in fw.summary()[2] and "node 2: 255" in fw.summary()[2]


@pytest.mark.parametrize("name", firmware.AUTO_NAMES)
def test_an_unknown_automatic_mode_is_ignored_not_taken_as_manual(tmp_path, name):
    root = hmat_tree(tmp_path, auto=None)
    (root / firmware.WEIGHTS_DIR / name).write_text("maybe\n")
    fw = firmware.read(root)
    assert fw.weights_auto is None and fw.weights == {0: 3, 1: 3, 3: 1}
    assert fw.notes() == [f"firmware file {root / firmware.WEIGHTS_DIR / name} says 'maybe': ignored "
                          "(the automatic mode is true or false)"]
    assert fw.weights_mode().startswith("unknown") and "manual" not in fw.weights_mode()
    # What the kernel writes, and what its parser (kstrtobool) reads, are known.
    for text, auto in (("true", True), ("false", False), ("1", True), ("N", False)):
        (root / firmware.WEIGHTS_DIR / name).write_text(text + "\n")
        assert (firmware.read(root).weights_auto, firmware.read(root).ignored) == (auto, []), text


def test_a_malformed_tier_node_list_is_ignored_with_its_file(tmp_path):
    root = hmat_tree(tmp_path)
    tiers = root / "devices/virtual/memory_tiering"
    (tiers / "memory_tier4/nodelist").write_text("0-x\n")
    (tiers / "memory_tier9").mkdir()
    (tiers / "memory_tier9/nodelist").write_text("5-2\n")
    fw = firmware.read(root)
    assert [(t.id, t.nodes) for t in fw.tiers] == [(22, [3])]
    lines = _ignored_lines(fw)
    assert fw.notes()[0] == (f"firmware file {tiers / 'memory_tier4/nodelist'} says '0-x': ignored "
                             "(not a node list such as 0-1,4)")
    assert "says '5-2'" in fw.notes()[1] and set(lines) == {"nodelist"}
    assert not any("CPU list" in line or "write e.g." in line for line in fw.notes())


def test_an_hmat_number_that_is_not_one_is_ignored(tmp_path):
    root = hmat_tree(tmp_path)
    path = root / "devices/system/node/node0/access0/initiators/read_latency"
    path.write_text("-80\n")
    fw = firmware.read(root)
    assert fw.pairs(0)[(0, 0)].read_latency_ns is None and fw.pairs(0)[(0, 0)].write_latency_ns == 90
    assert fw.notes() == [f"firmware file {path} says '-80': ignored (not a whole number)"]


def test_ignored_files_travel_with_the_topology_and_reach_its_output(tmp_path):
    import shutil

    shutil.copytree(TREES / "cxl-example", tmp_path / "cxl-example", symlinks=True)
    sys_root = tmp_path / "cxl-example" / "sys"
    hmat_tree(sys_root)
    (sys_root / firmware.WEIGHTS_DIR / "node0").write_text("300\n")
    topo = detect(sys_root, tmp_path / "cxl-example" / "proc")
    again = Topology.from_json(topo.to_json())
    assert again.firmware.notes() == topo.firmware.notes() and len(topo.firmware.notes()) == 1
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, "-m", "numasweep", "topology", "--detect", "--sysfs", str(sys_root),
                           "-o", str(out)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [f"numasweep: warning: {topo.firmware.notes()[0]}"]
    assert "node 0: 300" not in proc.stdout and "node 1: 3, node 3: 1" in proc.stdout
