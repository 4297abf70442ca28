"""The paths a config names, checked when the config is read, before any rule runs.

A path that is missing, of the wrong kind or unreadable would otherwise surface as a failed job
(or as Snakemake's own message about a missing input) after the plan was made; a path with `{`
or `}` would be read by Snakemake as a wildcard of the rule that takes it. Every other character
is allowed (spaces, quotes, `$(...)`, backquotes, `;`, newlines): the rules quote every word of
their shell lines, so a path is only ever a path.

This is separate from reading the YAML (numasweep.core.io.load_yaml) and from the schema
(numasweep.planning.grid.validate_config): it takes the validated config, defaults filled in.
"""

from __future__ import annotations

import os
from pathlib import Path

from numasweep.core.errors import NumasweepError

# What each checked key is for: the fix a refusal suggests.
ARCH_FIX = "give an arch YAML file (e.g. config/arch/<system>.yaml) or a topology.json"
RESULTS_FIX = "give a folder with topology.json and aggregated <bench>.csv files (e.g. examples/lumi-g)"
WRAPPER_FIX = "give the NUMA wrapper script (the default is kernels/wrapper_numa.sh)"
STORE_FIX = "give the path of the SQLite file (e.g. results/store.sqlite)"


def check_config_paths(config: dict, source: str = "config", skip: tuple[str, ...] = ()) -> None:
    """Every path of `config` that this run reads is there, of the right kind and readable, and
    holds no wildcard brace; one NumasweepError naming the key and the fix otherwise. `skip`: keys
    the caller does not use (e.g. `arch` when the command names the topology itself)."""
    if config["results"] is not None:
        if "results" not in skip:
            _folder(config["results"], f"{source}: results", RESULTS_FIX)
    else:
        if config["arch"] != "auto" and "arch" not in skip:
            _file(config["arch"], f"{source}: arch", ARCH_FIX)
        if "wrapper" not in skip:
            _file(config["wrapper"], f"{source}: wrapper", WRAPPER_FIX, executable=True)
    store = Path(config["store"]["path"])
    if "store.path" not in skip and store.is_dir():
        raise NumasweepError(f"{source}: store.path: {str(store)!r} is a folder; {STORE_FIX}")


def _no_wildcard(path: str, where: str) -> None:
    if "{" in path or "}" in path:
        raise NumasweepError(f"{where}: {path!r} has '{{' or '}}', which Snakemake reads as a wildcard in a file "
                             "name; rename it (or copy it) to a path without braces")


def _file(path: str, where: str, fix: str, executable: bool = False) -> None:
    _no_wildcard(path, where)
    p = Path(path)
    if p.is_dir():
        raise NumasweepError(f"{where}: {path!r} is a folder; {fix}")
    if not p.is_file():
        raise NumasweepError(f"{where}: {path!r}: no such file; {fix}")
    try:
        with open(p, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise NumasweepError(f"{where}: {path!r} cannot be read ({exc.strerror}); fix its permissions "
                             f"(chmod u+r), or {fix}") from None
    if executable and not os.access(p, os.X_OK):
        raise NumasweepError(f"{where}: {path!r} is not executable; chmod +x it, or {fix}")


def _folder(path: str, where: str, fix: str) -> None:
    _no_wildcard(path, where)
    p = Path(path)
    if not p.is_dir():
        raise NumasweepError(f"{where}: no folder {path!r}; {fix}")
    try:
        os.listdir(p)
    except OSError as exc:
        raise NumasweepError(f"{where}: {path!r} cannot be read ({exc.strerror}); fix its permissions "
                             f"(chmod u+rx), or {fix}") from None


# The rules that only read a results folder (rules/report.smk, compare, fleet): a run whose
# targets are all among them, or files under report/, measures nothing it has already measured.
REPORTING_RULES = frozenset({"analyse", "figures", "report_md", "report", "hwloc_export", "comparison", "compare",
                             "fleet"})


def reporting_only(targets: object) -> bool:
    """Whether Snakemake's targets (rule names or files) only ask for reports; no target is the
    default rule, which measures."""
    targets = list(targets or ())
    return bool(targets) and all(t in REPORTING_RULES or Path(t).parts[:1] == ("report",) for t in targets)


def complete_results(folder: str, plan: object, hwloc: bool = False) -> bool:
    """Whether `folder` holds a campaign's results: its topology, every planned job's CSV and
    provenance record, every aggregated table, and for an hwloc export the machine's hwloc XML
    (which only the machine measured can write)."""
    need = [Path(folder, "topology.json")] + [Path(folder, f"{b}.csv") for b in plan.benches()]
    need += [Path(folder, job.bench, f"{job.id}.{ext}") for job in plan.jobs for ext in ("csv", "json")]
    need += [Path(folder, "hwloc.xml")] * hwloc
    return all(p.is_file() for p in need)
