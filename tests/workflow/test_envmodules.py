"""A site's software stack through environment modules (config `envmodules`, `snakemake --sdm
env-modules`): the build rules load `build`'s modules and compile with the CC they set, the
benchmark jobs load `run`'s, and neither is loaded without --sdm env-modules. Real Environment
Modules (Debian's environment-modules, `module` defined in each job's bash through BASH_ENV, as
sites do in their shells' start-up files); the modulefiles are the test's own site stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.workflow import TEST_CONFIGS, copy_repo, snakemake, snakemake_env

MODULES_INIT = Path("/usr/share/modules/init/bash")


def _site(tmp: Path) -> tuple[Path, Path]:
    """A modulefile folder with sitecc/1.0 (CC: a compiler wrapper that logs each call, then gcc)
    and sitempi/1.0 (a variable every job's provenance records); the wrapper's log."""
    log = tmp / "site-cc.log"
    wrapper = tmp / "bin" / "site-cc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec gcc "$@"\n')
    wrapper.chmod(0o755)
    for name, line in (("sitecc", f"setenv CC {wrapper}"), ("sitempi", "setenv NUMASWEEP_SITE_STACK sitempi-1.0")):
        (tmp / "modulefiles" / name).mkdir(parents=True)
        (tmp / "modulefiles" / name / "1.0").write_text(f"#%Module1.0\n{line}\n")
    return tmp / "modulefiles", log


@pytest.mark.workflow
def test_the_build_and_the_jobs_load_the_sites_modules(repo: Path, tmp_path: Path) -> None:
    if not MODULES_INIT.exists():
        pytest.fail("NOT RUN: Environment Modules missing: apt-get install environment-modules "
                    "(bash scripts/numasweep.sh test does)")
    work = copy_repo(repo, tmp_path / "numasweep")
    modulefiles, log = _site(tmp_path)
    config = yaml.safe_load((TEST_CONFIGS / "tiny.yaml").read_text())
    config.update(latency={"sweeps": []}, bandwidth={"sweeps": []},
                  envmodules={"build": ["sitecc/1.0"], "run": ["sitempi/1.0"]})
    (tmp_path / "modules.yaml").write_text(yaml.safe_dump(config))
    env = {**snakemake_env(), "BASH_ENV": str(MODULES_INIT), "MODULEPATH": str(modulefiles)}
    proc = snakemake(work, "--profile", "profiles/local", "--sdm", "env-modules", "--configfile",
                     str(tmp_path / "modules.yaml"), "--config", "system=mod", timeout=900, env=env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    compiled = log.read_text().splitlines()
    assert any("numa_copy" in line for line in compiled), compiled       # the kernel the sweep runs
    records = [json.loads(p.read_text()) for p in (work / "results" / "mod" / "copy").glob("*.json")]
    assert records and all(r["environment"].get("NUMASWEEP_SITE_STACK") == "sitempi-1.0" for r in records)
    # without --sdm env-modules the modules are not loaded: nothing is rebuilt with the wrapper
    log.unlink()
    proc = snakemake(work, "--profile", "profiles/local", "--configfile", str(tmp_path / "modules.yaml"),
                     "--config", "system=mod", "--forcerun", "build_common", "build", "--", "build/bin/numa_copy",
                     timeout=900, env=env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert not log.exists()
