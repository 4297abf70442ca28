"""Shared fixtures: the repository root and the kernels, built once per test session; and the
`slow` mark on every test that boots a NUMA guest, starts a SLURM cluster or runs snakemake."""

from __future__ import annotations

import compileall
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Tests carrying one of these marks take minutes together: the fast tier, `pytest -m "not slow"`,
# leaves them out with the rest of the slow tests (marked `slow` where they are).
SLOW_MARKS = ("numa_vm", "slurm", "workflow")
# The session's SLURM cluster (`slurm_clusters`): tests/slurm and the documented commands share it.
pytest_plugins = ["helpers.slurmtest"]


def pytest_sessionstart(session: pytest.Session) -> None:
    """The package's bytecode written once, before any test starts Python: with
    PYTHONDONTWRITEBYTECODE set (as CI machines often have it), every snakemake start, job and
    command of the session would otherwise compile the whole package again, and a NUMA guest,
    which reads the repository through a read-only share, does so under emulation. Copies of the
    repository (helpers.workflow.copy_repo) keep the bytecode with the sources' file times."""
    compileall.compile_dir(REPO / "workflow", quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(name) for name in SLOW_MARKS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def session_host_lock(tmp_path_factory: pytest.TempPathFactory):
    """The host lock folder of session-scoped fixtures (a sweep run once for many tests), which run
    before any test's own (private_host_lock)."""
    folder = tmp_path_factory.mktemp("hostlock-session")
    before = os.environ.get("NUMASWEEP_HOST_LOCK_DIR")
    os.environ["NUMASWEEP_HOST_LOCK_DIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("NUMASWEEP_HOST_LOCK_DIR", None)
    else:
        os.environ["NUMASWEEP_HOST_LOCK_DIR"] = before


@pytest.fixture(autouse=True)
def private_host_lock(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's benchmark jobs take a host lock of their own (numasweep.running.hostlock), not
    the machine's: tests and campaigns running beside them on this machine never wait on each other."""
    folder = tmp_path_factory.mktemp("hostlock")
    monkeypatch.setenv("NUMASWEEP_HOST_LOCK_DIR", str(folder))
    return folder


WEIGHTED_INTERLEAVE = Path("/sys/kernel/mm/mempolicy/weighted_interleave")


def weighted_interleave_settings(folder: Path = WEIGHTED_INTERLEAVE) -> dict[str, str]:
    """The node weights and the automatic-weights mode (`auto`, or `__auto_type` on some 6.18
    builds), file name -> text; empty where the kernel has no such folder."""
    settings = {}
    for path in sorted(folder.glob("*")) if folder.is_dir() else []:
        try:
            settings[path.name] = path.read_text().strip()
        except OSError:
            pass
    return settings


@pytest.fixture(scope="session", autouse=True)
def machine_left_as_found():
    """The weighted-interleave settings after the whole session are what they were before it:
    kernels that change them for a run restore them (a SIGKILLed one by the next run)."""
    before = weighted_interleave_settings()
    yield
    after = weighted_interleave_settings()
    if after != before:
        changed = {k: (before.get(k), after.get(k)) for k in before.keys() | after.keys()
                   if before.get(k) != after.get(k)}
        pytest.fail(f"the tests left {WEIGHTED_INTERLEAVE} changed (file: (before, after)): {changed}")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def kernels_bin() -> Path:
    """`make -C kernels` once; the binaries land in build/bin."""
    proc = subprocess.run(
        ["make", "-C", str(REPO / "kernels"), f"-j{os.cpu_count() or 2}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"make -C kernels failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return REPO / "build" / "bin"


@pytest.fixture(scope="session", autouse=True)
def constructed_sysfs_trees() -> Path:
    """The constructed sysfs trees (LUMI-G, Ulisse, CXL) are generated, not committed: thousands
    of small files that tests/fixtures/make_sysfs.py reproduces byte for byte. The captured tree
    of a real machine (kvm-2cpu) is committed as it was read.

    Each tree is built in a private folder and renamed into place, stamped with the hash of the
    script, so concurrent test runs never see a half-written tree."""
    import hashlib
    import shutil
    import tempfile

    from fixtures import make_sysfs

    stamp = hashlib.sha256(Path(make_sysfs.__file__).read_bytes()).hexdigest()
    for name, make in make_sysfs.MACHINES.items():
        target = make_sysfs.SYSFS_DIR / name
        stamp_file = target / ".stamp"
        if stamp_file.exists() and stamp_file.read_text() == stamp:
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=make_sysfs.SYSFS_DIR))
        make_sysfs.write_tree(tmp / "t", make())
        (tmp / "t" / ".stamp").write_text(stamp)
        old = tmp / "old"
        try:
            if target.exists():
                target.rename(old)
            (tmp / "t").rename(target)
        except OSError:
            pass  # another run put an identical tree in place first
        shutil.rmtree(tmp, ignore_errors=True)
    return make_sysfs.SYSFS_DIR
