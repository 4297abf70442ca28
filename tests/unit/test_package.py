"""numasweep as a versioned package: `pip install .` gives a `numasweep` console script with
`--version`, whose dependencies are requirements.txt's pins (what a sweep needs, no test tool),
and every job's provenance records the version."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import numasweep
from numasweep.__main__ import main

REPO = Path(__file__).resolve().parents[2]


def test_the_version_is_printed(capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"numasweep {numasweep.__version__}\n"


def test_the_version_is_one_everywhere_it_is_written() -> None:
    """CITATION.cff and the CHANGELOG's newest released entry (an `Unreleased` one above it
    gathers what the next version brings) name the package's version."""
    import yaml

    assert yaml.safe_load((REPO / "CITATION.cff").read_text())["version"] == numasweep.__version__
    newest = next(line for line in (REPO / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ") and line != "## Unreleased")
    assert newest.split()[1] == numasweep.__version__, newest


@pytest.mark.slow
def test_pip_install_gives_the_console_script_with_its_version_and_pins(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "requirements.txt", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "workflow" / "numasweep", source / "workflow" / "numasweep",
                    ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("numasweep-*.whl")
    with zipfile.ZipFile(wheel) as z:
        meta = email.message_from_bytes(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))))
    pins = [line for line in (REPO / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert meta["Version"] == numasweep.__version__ and sorted(meta.get_all("Requires-Dist")) == sorted(pins)
    assert not any(p.lower().startswith(("pytest", "snakefmt", "ruff")) for p in meta.get_all("Requires-Dist"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    version = subprocess.run([str(venv / "bin" / "numasweep"), "--version"], capture_output=True, text=True,
                             timeout=60, cwd=tmp_path)
    assert version.returncode == 0 and version.stdout == f"numasweep {numasweep.__version__}\n", version
