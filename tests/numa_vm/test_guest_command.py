"""The run.sh command line a guest boots with, and the accelerator it asks for: KVM where
/dev/kvm opens and a guest boots under it, TCG elsewhere. Nothing boots here."""

from __future__ import annotations

from pathlib import Path

import numa_guest
import pytest
from numa_guest import RUN_SH, Layout, run_sh_command


def test_command_line_carries_the_layout_the_accelerator_and_the_shared_folder(tmp_path: Path) -> None:
    layout = Layout(nodes=4, memory_only=(3,), cpus_per_node=2, l3_groups=2, node_memory_mib=256)
    cmd = run_sh_command(layout, 600, "kvm", ["bash", "guest.sh"], tmp_path)
    assert cmd[:2] == ["bash", str(RUN_SH)]
    options, command = cmd[2:cmd.index("--")], cmd[cmd.index("--") + 1:]
    assert sorted(options) == sorted([
        "--nodes=4", "--cpus-per-node=2", "--l3-groups=2", "--node-memory=256", "--timeout=600", "--accel=kvm",
        f"--rw={tmp_path}", f"--log={tmp_path / 'console.log'}", "--memory-only=3"])
    assert command == ["bash", "guest.sh"]
    assert "--accel=tcg" in run_sh_command(Layout(nodes=2), 60, "tcg", ["true"])


def test_run_sh_turns_the_accelerator_into_qemu_options() -> None:
    """run.sh gives QEMU `-accel kvm` for --accel=kvm and keeps TCG, as before, otherwise."""
    text = RUN_SH.read_text()
    assert "accel=tcg\n" in text  # the default
    kvm, tcg = text.split('if [ "$accel" = kvm ]; then', 1)[1].split("else", 1)
    assert "accel_args=(-accel kvm)" in kvm
    assert "accel_args=(-accel tcg,thread=multi)" in tcg.split("fi", 1)[0]
    assert '"${accel_args[@]}"' in text


@pytest.mark.parametrize("device, boots, env, expected", [
    (False, True, None, "tcg"),     # no /dev/kvm: TCG, as always, and no probe
    (True, True, None, "kvm"),
    (True, False, None, "tcg"),     # /dev/kvm opens but a guest fails there (nested)
    (True, True, "tcg", "tcg"),
    (False, False, "kvm", "kvm"),
])
def test_kvm_where_dev_kvm_opens_and_a_guest_boots(monkeypatch, device, boots, env, expected) -> None:
    probed = []
    monkeypatch.setattr(numa_guest.os, "access", lambda path, mode: device and Path(path) == Path("/dev/kvm"))
    monkeypatch.setattr(numa_guest, "kvm_boots", lambda: probed.append(1) or boots)
    if env is None:
        monkeypatch.delenv(numa_guest.ACCEL_ENV, raising=False)
    else:
        monkeypatch.setenv(numa_guest.ACCEL_ENV, env)
    assert numa_guest.accel() == expected
    assert probed == ([1] if device and env is None else [])
