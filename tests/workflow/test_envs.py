"""The rules' conda environments (`--sdm conda`): one small environment per purpose under
workflow/envs/, each rule naming its own, the Python versions those of requirements.txt."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "workflow" / "rules"
ENVS = REPO / "workflow" / "envs"
# conda-forge's names of the packages requirements.txt names as pip does.
PIP_NAMES = {"matplotlib-base": "matplotlib", "pyyaml": "PyYAML", "jinja2": "Jinja2", "markdown": "Markdown",
             "markupsafe": "MarkupSafe", "snakemake-minimal": "snakemake"}


def conda_directives() -> dict[str, list[str]]:
    """Each rule file's `conda:` values, in order."""
    found = {}
    for smk in sorted(RULES.glob("*.smk")):
        found[smk.name] = re.findall(r"^\s*conda:\s*\n\s*(\S+)\s*$", smk.read_text(), re.M)
    return found


def test_every_conda_directive_names_a_small_environment_of_workflow_envs() -> None:
    directives = conda_directives()
    names = {value for values in directives.values() for value in values}
    assert names == {'"../envs/kernels.yaml"', '"../envs/report.yaml"'}, directives
    assert not any("environment.yml" in (RULES / f).read_text() for f in directives)
    # Building and running the kernels share one environment (the MPI that compiles numa_latency
    # launches it); every Python step uses the other.
    assert set(directives["build.smk"]) == set(directives["benchmarks.smk"]) == {'"../envs/kernels.yaml"'}
    for name in ("report.smk", "aggregate.smk", "store.smk", "topology.smk", "fleet.smk"):
        assert set(directives[name]) == {'"../envs/report.yaml"'}, name
    # a set-up measures as a benchmark does and decides in Python (setup.smk)
    assert set(directives["setup.smk"]) == {'"../envs/kernels.yaml"', '"../envs/report.yaml"'}


def test_environments_use_conda_forge_alone() -> None:
    for env in ENVS.glob("*.yaml"):
        spec = yaml.safe_load(env.read_text())
        assert spec["channels"] == ["conda-forge", "nodefaults"], env.name


def test_the_kernel_environment_has_what_the_kernels_need_and_no_python() -> None:
    """No python: the benchmark runner (standard library only) then runs on the python of the
    PATH, else on the interpreter running Snakemake, which common.smk's shell prefix puts last
    on it."""
    packages = {re.split(r"[=<> ]", dep)[0] for dep in yaml.safe_load((ENVS / "kernels.yaml").read_text())["dependencies"]}
    assert packages == {"c-compiler", "make", "openmpi", "openmpi-mpicc", "libnuma", "numactl"}


def test_report_environment_pins_the_versions_of_requirements_txt() -> None:
    required = _required("requirements.txt")
    deps = yaml.safe_load((ENVS / "report.yaml").read_text())["dependencies"]
    pinned = dict(dep.split("=", 1) for dep in deps if re.match(r"^[\w.-]+=[^=<>]", dep))
    pinned.pop("python")
    assert set(pinned) == {"pandas", "numpy", "scipy", "matplotlib-base", "jinja2", "markupsafe", "markdown", "pyyaml",
                           "jsonschema"}
    assert "hwloc>=2.5" in deps     # the hwloc rules' lstopo, which pip has not
    for name, version in pinned.items():
        assert required[PIP_NAMES.get(name, name)] == version, name


def _required(*files: str) -> dict[str, str]:
    return dict(line.split("==") for name in files or ("requirements.txt", "requirements-dev.txt")
                for line in (REPO / name).read_text().splitlines() if "==" in line and not line.startswith("#"))


def test_a_sweep_installs_no_test_tool() -> None:
    """requirements.txt, which `numasweep.sh sweep` installs, is what the workflow runs on; the
    tests' tools come with requirements-dev.txt (`numasweep.sh test`)."""
    sweep, dev = _required("requirements.txt"), _required("requirements-dev.txt")
    assert not {"pytest", "pytest-timeout", "snakefmt", "ruff"} & set(sweep) and set(dev) == {
        "pytest", "pytest-timeout", "snakefmt", "ruff"}
    script = (REPO / "scripts" / "numasweep.sh").read_text()
    assert "venv requirements.txt\n" in script and "venv requirements.txt requirements-dev.txt\n" in script


def test_the_conda_users_environment_pins_what_requirements_txt_pins() -> None:
    """environment.yml (conda users) and requirements.txt (pip, CI) name the same packages at the
    same versions."""
    pinned = {}
    for dep in yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]:
        name, _, version = dep.partition("=")
        if version and name != "python" and name != "openmpi":
            pinned[PIP_NAMES.get(name, name)] = version
    assert pinned == _required()


def test_every_package_the_code_imports_is_declared() -> None:
    """Each third-party module imported under workflow/, bench/ and tests/ is a requirement (or
    comes with Python or the project)."""
    import sys

    modules = set()
    for folder in ("workflow", "bench", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            if "fixtures" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module.split(".")[0])
    own = {"numasweep", "snakemake_interface_executor_plugins"}   # the package; one of snakemake's own
    module_of = {"yaml": "PyYAML", "jinja2": "Jinja2", "markdown": "Markdown", "markupsafe": "MarkupSafe",
                 "_pytest": "pytest"}
    required = {name.lower() for name in _required()}
    local = {f.stem for folder in ("tests", "bench") for f in (REPO / folder).rglob("*.py")}
    local |= {d.name for d in (REPO / "tests").iterdir() if d.is_dir()}
    third = modules - set(sys.stdlib_module_names) - own - local
    missing = {m for m in third if module_of.get(m, m).lower() not in required}
    assert not missing, missing
