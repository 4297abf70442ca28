"""Nothing a config says runs as shell code: every path and name the config takes goes into the
rules' shell lines quoted, so `$(...)`, backquotes, `;`, spaces and newlines in it are only
characters of a path. Each value is either accepted and works, or refused in one line naming
its key (names with a fixed alphabet, and paths with the braces Snakemake reads as wildcards).

The marker files PWNED1..4 are what the hostile value's commands would create if a shell ran
them; a test fails when one exists anywhere under its folder."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from helpers.workflow import ANY_MACHINE, snakemake

# One name with every kind of shell metacharacter: a command substitution, backquotes, `;` and a
# newline (each a command separator or substitution to a shell), and spaces.
HOSTILE = "x y$(touch PWNED1)`touch PWNED2`;touch PWNED3\ntouch PWNED4;z"
# The switches that keep a run's own output to what went wrong (none when it succeeds).
QUIET = ("--cores", "1", "--workflow-profile", "none")


def _ran(folder: Path) -> list[Path]:
    """Marker files a hostile value's commands created (their names start with PWNED; the
    hostile folders' names start with x)."""
    return sorted(folder.rglob("PWNED*"))


def _write_config(path: Path, config: dict) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.workflow
def test_hostile_arch_wrapper_store_and_configfile_paths_are_only_paths(repo_copy: Path) -> None:
    """arch, wrapper, store.path and the --configfile itself all named with HOSTILE: the topology
    rule really runs on the arch file and writes the topology (its `source` names the file
    exactly), and the dry run of every rule prints each path quoted, with batches too."""
    hostile = repo_copy / HOSTILE
    hostile.mkdir()
    arch = f"{HOSTILE}/arch {HOSTILE}.yaml"
    (repo_copy / arch).write_text(yaml.safe_dump(ANY_MACHINE))  # one this machine has: the job runs
    wrapper = f"{HOSTILE}/wrapper.sh"
    shutil.copy(repo_copy / "kernels" / "wrapper_numa.sh", repo_copy / wrapper)
    store = f"{HOSTILE}/store.sqlite"
    config = _write_config(hostile / f"{HOSTILE}.yaml",
                           {"arch": arch, "wrapper": wrapper, "store": {"path": store}, "system": "probe",
                            "compare": {"against": HOSTILE}})
    proc = snakemake(repo_copy, "results/probe/topology.json", *QUIET, "--configfile", str(config))
    assert not _ran(repo_copy), _ran(repo_copy)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    topology = json.loads((repo_copy / "results" / "probe" / "topology.json").read_text())
    assert topology["source"] == f"arch:{arch}"

    for batch in ("batch=1", "batch=2"):
        proc = snakemake(repo_copy, "-n", "-p", *QUIET, "--configfile", str(config), "--config", batch,
                         "--forceall")
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        assert f"python -m numasweep topology --arch {shlex.quote(arch)} --here -o" in out, out[-3000:]
        assert f"--store {shlex.quote(store)}" in out, out[-3000:]
        assert not _ran(repo_copy), _ran(repo_copy)


@pytest.mark.workflow
def test_hostile_cached_results_folder_and_references_are_only_text(repo_copy: Path) -> None:
    """A cached results folder, the store and a reference's name and `where` value named with
    HOSTILE: analyse and compare really run on them, and the comparison names the reference (its
    check, failed, one console line)."""
    hostile = repo_copy / HOSTILE
    shutil.copytree(repo_copy / "examples" / "lumi-g", hostile / "cached")
    config = _write_config(hostile / "c.yaml", {
        "results": f"{HOSTILE}/cached", "store": {"path": f"{HOSTILE}/store.sqlite"},
        "references": [{"name": HOSTILE, "bench": "latency", "where": {"mode": HOSTILE},
                        "reference": [100, -0.5, 0.5, "ns"]}],
    })
    proc = snakemake(repo_copy, "analyse", "comparison", *QUIET, "--configfile", str(config))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    proc = snakemake(repo_copy, "compare", *QUIET, "--configfile", str(config))
    assert not _ran(repo_copy), _ran(repo_copy)
    # the reference matches no point: the gate fails, its check one console line naming it as text
    said = [line for line in proc.stderr.splitlines() if line.startswith("numasweep: compare: FAIL reference ")]
    assert proc.returncode == 1 and len(said) == 1 and "no measured point" in said[0], (proc.stdout + proc.stderr)[-3000:]
    assert HOSTILE.encode("unicode_escape").decode() in said[0], said
    report = repo_copy / "report" / "example-cached"
    assert (report / "findings.json").exists()
    assert HOSTILE in json.loads((report / "comparison.json").read_text())["references"][0]["name"]


# Values refused before any job: (config, the key its line starts with after `config: `, what else
# the line says).
REFUSED = {
    "label": ({"latency": {"sweeps": [{"domains": [[0]], "label": HOSTILE}]}},
              "latency.sweeps[0].label", "use only lower-case letters"),
    "system": ({"system": HOSTILE}, "system", "use only letters, digits"),
    "fleet node": ({"fleet": {"nodes": [HOSTILE]}}, "fleet.nodes[0]", "use only letters, digits"),
    "kernel flags": ({"build": {"kernel_cflags": f"-O3 {HOSTILE}"}}, "build.kernel_cflags",
                     "use only compiler flags"),
    "srun_mpi": ({"launcher": "srun", "srun_mpi": HOSTILE}, "srun_mpi", "not an MPI plugin name"),
    "arch with braces": ({"arch": "arch {b}.yaml"}, "arch", "Snakemake reads as a wildcard"),
    "results with braces": ({"results": "cached {b}"}, "results", "Snakemake reads as a wildcard"),
}


@pytest.mark.workflow
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_value_a_shell_or_snakemake_cannot_take_is_refused_in_one_line(repo_copy: Path, case: str) -> None:
    config, key, says = REFUSED[case]
    for braced in ("arch", "results"):  # a file that exists, so that only its name is refused
        if braced in config:
            place = repo_copy / config[braced]
            shutil.copytree(repo_copy / "examples" / "lumi-g", place) if braced == "results" else \
                shutil.copy(repo_copy / "config" / "arch" / "ulisse.yaml", place)
    path = _write_config(repo_copy / "hostile.yaml", {"arch": "config/arch/ulisse.yaml", **config})
    proc = snakemake(repo_copy, "-n", *QUIET, "--configfile", str(path))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    lines = [line for line in out.splitlines() if line.removeprefix("config: ").startswith(f"{key}:")]
    assert len(lines) == 1 and says in lines[0], out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert not _ran(repo_copy) and not (repo_copy / "results").exists()
