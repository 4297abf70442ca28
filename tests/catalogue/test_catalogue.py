"""The catalogue of bad inputs and faults: each case is a user mistake or a fault, run through
the real command, and must end with the expected exit code and one line on stderr that names
the problem (and, for Python commands, the fix), with no traceback; fault cases also check that
every finished result (CSV, provenance, log and archive) keeps its checksum.

Categories: config, arch, firmware, kernel CLI, numasweep CLI, cached results, faults mid-run, legacy
import. docs/catalogue.md lists the cases."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
import yaml

from benches import BAD_ARGS, GOOD, OPTION_CASES
from helpers.kernels import CPU_KERNELS, assert_covers
from helpers.workflow import ANY_MACHINE, copy_repo
from numasweep.__main__ import main
from numasweep.core.registry import all_benches

REPO = Path(__file__).resolve().parents[2]
LUMI = REPO / "config" / "arch" / "lumi-g.yaml"
PY = [sys.executable, "-m", "numasweep"]


@dataclass
class Case:
    category: str
    name: str
    # tmp folder -> argv (setup writes whatever files the case needs)
    argv: Callable[[Path], list[str]]
    says: tuple[str, ...]  # substrings of the one line
    rc: int = 2
    # files (relative to tmp) whose checksums must not change
    keep: Callable[[Path], list[Path]] = field(default=lambda tmp: [])
    # an accepted input (rc 0, nothing to say): what must hold of what the command did
    check: Callable[[Path], None] = field(default=lambda tmp: None)
    # the files (relative to tmp) a case that succeeds writes, which must hold its input as text
    shown: tuple[str, ...] = ()
    # a case drawn for each benchmark or kernel: the key of its rule in RULES, under which
    # docs/catalogue.md lists all of them in one row (a new benchmark adds no row)
    rule: str = ""


CASES: list[Case] = []

# The rows of docs/catalogue.md for the cases drawn per benchmark or kernel: (case, what the line names).
RULES = {
    "kernel bad argument": ("KERNEL ARGUMENT, for each of `BAD_ARGS` in the kernel's file in tests/benches/",
                            "`KERNEL: error:`"),
    "kernel bad option": ("KERNEL OPTION, for each of `OPTION_CASES` in the kernel's file in tests/benches/",
                          "`KERNEL: error:`, what the case says (the value and what is allowed)"),
    "job bad cell": ("job BENCH COLUMN KIND: a bad cell in each `positive` column of every registered benchmark "
                     "(of `GOOD` in its file in tests/benches/), one case per kind of `BAD_CELLS`",
                     "`line 3`, `'COLUMN'`, `rerun its job`, the kind (`not a number`, `empty`, `zero`, `negative`, "
                     "`not finite`; nothing more for nan)"),
}


def case(category: str, name: str, argv, *says: str, rc: int = 2, keep=None, check=None,
         shown: tuple[str, ...] = (), rule: str = "") -> None:
    CASES.append(Case(category, name, argv, says, rc, keep or (lambda tmp: []), check or (lambda tmp: None), shown,
                      rule))


# ------------------------------------------------------------------ config
NO_SWEEPS = {b: {"sweeps": []} for b in all_benches()}  # every benchmark's section, nothing to run


def _grid(config: dict | str) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        path = tmp / "bad.yaml"
        path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
        return PY + ["grid", "--config", str(path), "--arch", str(LUMI)]
    return argv


CONFIGS = {
    "unknown top key": ({"colour": 1}, "colour"),
    "retry_disturbed past its bound": ({"retry_disturbed": 1000000000}, "retry_disturbed"),
    "repeat_until past its bounds": ({"repeat_until": {"latency": 1e-12, "max_repeats": 1000000000}}, "repeat_until"),
    "repetitions past its bound": ({"latency": {"sweeps": [{"domains": [[0]], "repetitions": 1000000000}]}},
                                   "repetitions"),
    "a node id past the kernels' 256 nodes": ({"bandwidth": {"sweeps": [{"cpu_nodes": [4096]}]}}, "cpu_nodes"),
    "an environment module name with a shell character": ({"envmodules": {"build": ["gcc; rm -rf ~"]}},
                                                           "envmodules.build[0]"),
    "unknown sweep key": ({"latency": {"sweeps": [{"domains": [[0]], "colour": 1}]}}, "unknown key 'colour'"),
    "launcher not known": ({"launcher": "ssh"}, "launcher"),
    "threads zero": ({"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": [0]}]}}, "threads[0]"),
    "threads not a list": ({"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": "many"}]}}, "threads"),
    "domain not in arch": ({"latency": {"sweeps": [{"domains": [[0, 9]]}]}}, "node 9"),
    "too many ranks": ({"latency": {"sweeps": [{"domains": [[0]], "ranks_per_domain": [99]}]}}, "latency.sweeps[0]"),
    "too many threads": ({"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": [999]}]}}, "999 threads"),
    "empty sweep": (NO_SWEEPS, "the sweep is empty"),
    "sweeps not a list": ({"latency": {"sweeps": 3}}, "latency.sweeps"),
    "mode unknown": ({"latency": {"sweeps": [{"domains": [[0]], "mode": ["sideways"]}]}}, "mode"),
    "strategy unknown": ({"latency": {"sweeps": [{"domains": [[0]], "strategy": ["random"]}]}}, "strategy"),
    "repetitions zero": ({"latency": {"sweeps": [{"domains": [[0]], "repetitions": 0}]}}, "repetitions"),
    "copy node missing": ({"copy": {"sweeps": [{"pairs": [[42, 0]]}]}}, "42"),
    "bandwidth node missing": ({"bandwidth": {"sweeps": [{"cpu_nodes": [42], "threads": [1]}]}}, "42"),
    "aggregate not a map": ({"aggregate": 5}, "aggregate"),
    "keep_going not bool": ({"aggregate": {"keep_going": "perhaps"}}, "keep_going"),
    "top level a list": ("- 1\n- 2\n", "bad.yaml"),
    "yaml syntax error": ("latency: [\n", "bad.yaml"),
    "sizes garbage": ({"latency": {"sweeps": [{"domains": [[0]], "sizes": "lots"}]}}, "sizes"),
}
for _name, (_config, _says) in CONFIGS.items():
    case("config", _name, _grid(_config), _says)
# Checked against the topology at plan time (numasweep/planning/checks.py); LUMI-G nodes hold 128G each.
PLAN_TIME = {
    "latency size over node memory": ({"latency": {"sweeps": [{"domains": [[0]], "sizes": "2048G"}]}},
                                      "latency.sweeps[0].sizes", "2048GiB", "128GiB", "node 0"),
    "latency size over interleaved memory": (
        {"latency": {"sweeps": [{"domains": [[0, 1]], "memory": ["interleave:0,1"], "sizes": "300G"}]}},
        "latency.sweeps[0].sizes", "256GiB", "nodes 0,1"),
    "bandwidth arrays over node memory": (
        {"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": [1], "array_size": "100G"}]}},
        "bandwidth.sweeps[0].array_size", "3 arrays", "128GiB"),
    "copy size over node memory": ({"copy": {"sweeps": [{"pairs": [[0, 1]], "size": "1024G"}]}},
                                   "copy.sweeps[0].size", "1024GiB", "128GiB"),
    "gpu_xfer size over node memory": ({"gpu_xfer": {"sweeps": [{"ngpus": [1], "sizes": "2048G"}]}},
                                       "gpu_xfer.sweeps[0].sizes", "128GiB"),
    "migrate size not a whole number of huge pages": (
        {"migrate": {"sweeps": [{"pairs": [[0, 1]], "pages": ["thp"], "sizes": "3M"}]}},
        "migrate.sweeps[0].sizes", "3MiB is not a whole number of the 2MiB pages of pages: thp"),
    "migrate size under one 1 GiB page": (
        {"migrate": {"sweeps": [{"pairs": [[0, 1]], "pages": ["1g"], "sizes": "16M"}]}},
        "migrate.sweeps[0].sizes", "16MiB is not a whole number of the 1GiB pages of pages: 1g"),
    "latency extra_args unknown option": ({"latency": {"sweeps": [{"domains": [[0]], "extra_args": ["--bogus"]}]}},
                                          "latency.sweeps[0].extra_args", "numa_latency: error: unknown option"),
    "bandwidth extra_args out of range": (
        {"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": [1], "extra_args": ["--ntimes=1"]}]}},
        "bandwidth.sweeps[0].extra_args", "--ntimes"),
    "copy extra_args stray word": ({"copy": {"sweeps": [{"pairs": [[0, 1]], "extra_args": ["fast"]}]}},
                                   "copy.sweeps[0].extra_args", "unexpected argument 'fast'"),
    "latency extra_args bad page size": (
        {"latency": {"sweeps": [{"domains": [[0]], "extra_args": ["--pages=3m"]}]}},
        "latency.sweeps[0].extra_args", "--pages=3m"),
    "more GPUs than the topology has": ({"gpu_xfer": {"sweeps": [{"ngpus": [9]}]}},
                                        "gpu_xfer.sweeps[0].ngpus", "9 GPUs", "has 8 GPUs"),
}
# YAML syntax errors name file, line and column; names state the characters they may use.
PLAN_TIME.update({
    "yaml syntax error names the line": ("latency:\n  sweeps: [\n    - a: 1\n", "bad.yaml:3:5", "YAML syntax error"),
    "yaml tab indentation": ("latency:\n\tsweeps: []\n", "bad.yaml:2:1", "'\\t'"),
    "yaml mapping in a value": ("system: a: b\n", "bad.yaml:1:10", "mapping values are not allowed"),
    "label with a space": ({"latency": {"sweeps": [{"domains": [[0]], "label": "a b"}]}},
                           "latency.sweeps[0].label: 'a b'", "lower-case letters a-z, digits 0-9 and _"),
    "label in capitals": ({"bandwidth": {"sweeps": [{"cpu_nodes": [0], "threads": [1], "label": "Big"}]}},
                          "bandwidth.sweeps[0].label: 'Big'", "use only lower-case letters"),
    "system with a slash": ({"system": "lumi/g"}, "system: 'lumi/g'", "letters, digits, '_', '.' and '-'"),
    "system starting with a dot": ({"system": ".hidden"}, "system: '.hidden'", "starting with a letter or digit"),
    "fleet node with a space": ({"fleet": {"nodes": ["nid 1"]}}, "fleet.nodes[0]: 'nid 1'", "use only letters"),
})
# YAML that would be misread: an anchor bomb (nested aliases that never finish expanding), a key
# given twice (YAML keeps the last without a word), an alias inside its own anchor.
ANCHOR_BOMB = (REPO / "tests" / "workflow" / "config" / "anchor-bomb.yaml").read_text()
PLAN_TIME.update({
    "yaml anchor bomb": (ANCHOR_BOMB, "bad.yaml:8: in the config, aliases (*name) under 'e' expand to more than 10000",
                         "write the values out"),
    "yaml key given twice": ("latency:\n  sweeps: []\nsystem: x\nlatency:\n  sweeps: []\n",
                             "bad.yaml:4: in the config, key 'latency' is given twice", "(lines 1 and 4)",
                             "merge them into one"),
    "yaml sweep key given twice": ("latency:\n  sweeps:\n    - sizes: 64K\n      sizes: 1M\n",
                                   "bad.yaml:4: in the config, key 'sizes' is given twice", "(lines 3 and 4)"),
    "yaml alias inside its own anchor": ("a: &a [1, *a]\n", "bad.yaml:1", "'a' holds an alias to itself",
                                         "write the values out"),
})
# Accepted without a word before: duplicates, sizes a job fails on, settings that are ignored, and
# names too long for the file names they build.
PLAN_TIME.update({
    "fleet node listed twice": ({"fleet": {"nodes": ["nid001", "nid001"]}},
                                "fleet.nodes[1]: 'nid001' is listed twice", "list each node once"),
    "label too long for file names": ({"latency": {"sweeps": [{"domains": [[0]], "label": "a" * 300}]}},
                                      "latency.sweeps[0].label", "300 characters", "at most 100"),
    "system too long for file names": ({"system": "s" * 300}, "system:", "300 characters", "at most 100"),
    "fleet node too long for file names": ({"fleet": {"nodes": ["n" * 80]}}, "fleet.nodes[0]", "at most 64"),
    "loaded_latency size over node memory": ({"loaded_latency": {"sweeps": [{"size": "2048G"}]}},
                                             "loaded_latency.sweeps[0].size", "2048GiB", "128GiB", "node 0"),
    "mix_bandwidth size below the kernel's least": ({"mix_bandwidth": {"sweeps": [{"size": "1K"}]}},
                                                    "mix_bandwidth.sweeps[0].size", "1KiB", "at least 16K"),
    "srun_mpi not a plugin name": ({"launcher": "srun", "srun_mpi": "pmix; rm -rf ~"},
                                   "srun_mpi: 'pmix; rm -rf ~'", "not an MPI plugin name"),
})
# Values of the right type that a bound refuses: the line says what is wrong with the value.
PLAN_TIME.update({
    "sizes an empty string": ({"latency": {"sweeps": [{"domains": [[0]], "sizes": ""}]}},
                              "latency.sweeps[0].sizes: '' is empty", "non-empty string"),
    "loaded_latency negative delay": ({"loaded_latency": {"sweeps": [{"delays": [-1]}]}},
                                      "loaded_latency.sweeps[0].delays[0]: -1 is too small",
                                      "'idle' or integer from 0 to 100000000"),
    "c2c pairs zero": ({"c2c": {"sweeps": [{"pairs": 0}]}}, "c2c.sweeps[0].pairs: 0 is too small", "integer from 1 to"),
    "c2c one CPU as a list": ({"c2c": {"sweeps": [{"cpus": [0]}]}},
                              "c2c.sweeps[0].cpus: [0] has 1 item, fewer than 2", "array of at least 2 items"),
    "c2c CPU not in the topology": ({"c2c": {"sweeps": [{"cpus": [0, 999]}]}},
                                    "c2c.sweeps[0].cpus: CPU(s) 999 are not in the topology", "pick CPUs it has"),
})
# repeat_until: a target is a relative half-width above 0 and at most 1, for a benchmark by its name.
PLAN_TIME.update({
    "repeat_until target of 0": ({"repeat_until": {"latency": 0, "max_repeats": 2}}, "repeat_until.latency: 0",
                                 "minimum of 0"),
    "repeat_until benchmark misspelt": ({"repeat_until": {"latnecy": 0.02}}, "repeat_until: unknown key 'latnecy'",
                                        "known keys: bandwidth"),
})
for _name, (_config, *_says) in PLAN_TIME.items():
    case("config", _name, _grid(_config), *_says)


def _arch_folder(tmp: Path) -> list[str]:
    (tmp / "bad.yaml").write_text(yaml.safe_dump({"arch": str(tmp)}))
    return PY + ["grid", "--config", str(tmp / "bad.yaml")]


case("config", "arch names a folder", _arch_folder, "bad.yaml: arch:", "is a folder", "give an arch YAML file")
# Warnings: the plan runs (exit 0) and one line says what was merged or ignored.
PLAN_WARNINGS = {
    "duplicate grid points": ({"latency": {"sweeps": [{"domains": [[0]], "sizes": "64K"},
                                                      {"domains": [[0]], "sizes": "64K"}]}},
                              "asked for twice with the same settings", "measured once"),
    "mix_bandwidth size under the cache": ({"mix_bandwidth": {"sweeps": [{"size": "1M"}]}},
                                           "mix_bandwidth.sweeps[0].size", "last-level cache"),
    "mix_bandwidth matrix ignores memory": ({"mix_bandwidth": {"sweeps": [{"matrix": True, "memory": ["node:1"]}]}},
                                            "mix_bandwidth.sweeps[0].memory: node:1 is ignored with matrix: true"),
}
for _name, (_config, *_says) in PLAN_WARNINGS.items():
    case("config", _name, _grid(NO_SWEEPS | _config), "warning", *_says, rc=0)


def _no_srun(tmp: Path) -> list[str]:
    """srun_mpi of a config where srun cannot answer (not this machine's SLURM): said, not checked."""
    (tmp / "bin").mkdir()
    (tmp / "bin" / "srun").write_text("#!/bin/sh\nexit 1\n")
    (tmp / "bin" / "srun").chmod(0o755)
    argv = _grid({"launcher": "srun", "srun_mpi": "pmi9", **NO_SWEEPS,
                  "latency": {"sweeps": [{"domains": [[0]], "sizes": "64K"}]}})(tmp)
    return ["env", f"PATH={tmp / 'bin'}:{os.environ['PATH']}"] + argv


case("config", "srun_mpi where srun cannot answer", _no_srun, "srun_mpi: 'pmi9' cannot be checked here", rc=0)


def _few_cores(tmp: Path) -> list[str]:
    """Four GPUs on a node with two cores: one host thread per GPU does not fit."""
    (tmp / "arch.yaml").write_text(
        "system: small\nnodes:\n  - {id: 0, cpus: \"0-1\", memory: 8G}\ndistances: [[10]]\n"
        "gpus:\n" + "".join(f"  - {{id: {i}, name: G, pci: null, node: 0}}\n" for i in range(4)))
    (tmp / "bad.yaml").write_text(yaml.safe_dump({"gpu_xfer": {"sweeps": [{"ngpus": [4]}]}}))
    return PY + ["grid", "--config", str(tmp / "bad.yaml"), "--arch", str(tmp / "arch.yaml")]


case("config", "more GPUs than host cores to drive them", _few_cores,
     "gpu_xfer.sweeps[0].ngpus", "4 GPUs need 4 host cores", "cpu_node 0 has 2 free")


def _forced_gpus(tmp: Path) -> list[str]:
    """gpu_xfer forced (a dry run) on a machine without GPUs: the host cores are still counted."""
    (tmp / "arch.yaml").write_text("system: small\nnodes:\n  - {id: 0, cpus: \"0-1\", memory: 8G}\ndistances: [[10]]\n")
    (tmp / "bad.yaml").write_text(yaml.safe_dump({"gpu_xfer": {"force": True, "sweeps": [{"ngpus": [8]}]}}))
    return PY + ["grid", "--config", str(tmp / "bad.yaml"), "--arch", str(tmp / "arch.yaml")]


case("config", "forced gpu_xfer with more GPUs than host cores", _forced_gpus,
     "gpu_xfer.sweeps[0].ngpus", "8 GPUs need 8 host cores", "cpu_node 0 has 2 free")

SLURM_CONF = "ClusterName=x\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\nPartitionName=p Nodes=localhost\n"


def _srun_mpi(tmp: Path) -> list[str]:
    """srun answers --mpi=list from its configuration alone (no controller needed)."""
    (tmp / "slurm.conf").write_text(SLURM_CONF)
    argv = _grid({"launcher": "srun", "srun_mpi": "pmi9", "latency": {"sweeps": [{"domains": [[0, 1]]}]}})(tmp)
    return ["env", f"SLURM_CONF={tmp / 'slurm.conf'}", *argv]


if shutil.which("srun"):
    case("config", "srun_mpi not a plugin of srun", _srun_mpi, "srun_mpi: 'pmi9'", "srun --mpi=list", "pmix")
# Paths of the config, checked when it is read (numasweep.planning.paths) and quoted in every shell
# line the rules build: a path may hold any character but the braces Snakemake reads as wildcards.
def _paths(config: Callable[[Path], dict]) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        (tmp / "folder").mkdir()
        argv = _grid(config(tmp))(tmp)
        return argv[:-2] if "arch" in config(tmp) else argv  # the config's arch, not --arch
    return argv


PATHS = {
    "arch path with wildcard braces": (lambda tmp: {"arch": str(tmp / "a{b}.yaml")}, "bad.yaml: arch: ",
                                       "Snakemake reads as a wildcard", "path without braces"),
    "results path with wildcard braces": (lambda tmp: {"results": str(tmp / "c{b}")}, "bad.yaml: results: ",
                                          "path without braces"),
    "results names no folder": (lambda tmp: {"results": str(tmp / "nowhere")}, "bad.yaml: results: no folder",
                                "examples/lumi-g"),
    "store.path names a folder": (lambda tmp: {"store": {"path": str(tmp / "folder")}}, "bad.yaml: store.path: ",
                                  "is a folder", "results/store.sqlite"),
    "kernel flags with a shell command": (lambda tmp: {"build": {"kernel_cflags": "-O3 `touch PWNED`"}},
                                          "build.kernel_cflags", "use only compiler flags"),
}
for _name, (_config, *_says) in PATHS.items():
    case("config", _name, _paths(_config), *_says)
# Accepted: an arch file named with shell metacharacters, or a space, is only a path to the rules'
# shell lines. The topology rule runs for real in a copy of the repository (a quiet snakemake says
# nothing when it works); the files PWNED1..4 are what a shell running the name would create.
HOSTILE = "x y$(touch PWNED1)`touch PWNED2`;touch PWNED3\ntouch PWNED4;z"
ULISSE = REPO / "config" / "arch" / "ulisse.yaml"


def _topology_rule(name: str) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        copy = copy_repo(REPO, tmp / "numasweep")
        (copy / name).write_text(yaml.safe_dump(ANY_MACHINE))
        (copy / "c.yaml").write_text(yaml.safe_dump({"arch": name, "system": "probe"}))
        return [sys.executable, "-m", "snakemake", "results/probe/topology.json", "--directory", str(copy),
                "--snakefile", str(copy / "workflow" / "Snakefile"), "--cores", "1", "--quiet", "all",
                "--workflow-profile", "none", "--configfile", str(copy / "c.yaml")]
    return argv


def _only_a_path(name: str) -> Callable[[Path], None]:
    def check(tmp: Path) -> None:
        assert not sorted(tmp.rglob("PWNED*")), sorted(tmp.rglob("PWNED*"))
        topology = json.loads((tmp / "numasweep" / "results" / "probe" / "topology.json").read_text())
        assert topology["source"] == f"arch:{name}"
    return check


for _name, _file in {"arch path with $(...), backquotes, ; and a newline": f"{HOSTILE}.yaml",
                     "arch path with a space": "my arch.yaml"}.items():
    case("config", _name, _topology_rule(_file), rc=0, check=_only_a_path(_file))
case("config", "config file missing", lambda tmp: PY + ["grid", "--config", str(tmp / "none.yaml"), "--arch", str(LUMI)],
     "none.yaml")


# ------------------------------------------------------------------ arch
def _topology(text: str, name: str = "bad.yaml") -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        (tmp / name).write_text(text)
        return PY + ["topology", "--arch", str(tmp / name), "-o", str(tmp / "topo.json")]
    return argv


ARCHES = {
    "empty file": ("", "bad.yaml"),
    "not a mapping": ("- 1\n", "bad.yaml"),
    "yaml syntax error": ("nodes: [\n", "bad.yaml"),
    "no nodes": ("system: x\n", "bad.yaml"),
}
for _name, (_text, _says) in ARCHES.items():
    case("arch", _name, _topology(_text), _says)
case("arch", "yaml syntax error names the line", _topology("system: x\nnodes: [\n  - {id: 0\n"), "bad.yaml:3:3",
     "YAML syntax error in the arch file")
case("arch", "cache larger than all the memory",
     _topology("system: x\nnodes:\n  - {id: 0, cpus: '0-1', memory: 5G}\n"
               "caches:\n  - {level: 3, type: Unified, size: 1024G, instances: node}\n"),
     "bad.yaml: caches[0] (L3) is 1024GiB, more than all the machine's memory (5GiB)", "lscpu -C")
case("arch", "yaml key given twice", _topology("system: x\nnodes:\n  - {id: 0, cpus: '0', memory: 1G}\nsystem: y\n"),
     "bad.yaml:4: in the arch file, key 'system' is given twice", "(lines 1 and 4)", "merge them into one")
case("arch", "yaml anchor bomb", _topology(ANCHOR_BOMB), "bad.yaml:8: in the arch file, aliases (*name)",
     "more than 10000 values", "write the values out")
case("arch", "system name with a space", _topology("system: my box\nnodes:\n  - {id: 0, cpus: '0', memory: 1G}\n"),
     "system: 'my box'", "letters, digits, '_', '.' and '-'")
case("arch", "system name too long for file names",
     _topology(f"system: {'x' * 300}\nnodes:\n  - {{id: 0, cpus: '0', memory: 1G}}\n"),
     "system:", "300 characters", "at most 100")
case("arch", "arch file missing", lambda tmp: PY + ["topology", "--arch", str(tmp / "none.yaml"), "-o", str(tmp / "t.json")],
     "none.yaml")
case("arch", "corrupt topology.json", _topology("{not json", "topology.json"), "topology.json")

# ------------------------------------------------------------------ firmware
# A sysfs value the kernel could not have written is left out of the topology with one warning
# naming the file: the machine's file, so not an error and no config to edit (exit 0).
def _firmware(rel: str, text: str) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        shutil.copytree(REPO / "tests/fixtures/sysfs/kvm-2cpu", tmp / "m", symlinks=True)
        path = tmp / "m/sys" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        return PY + ["topology", "--detect", "--sysfs", str(tmp / "m/sys"), "-o", str(tmp / "topo.json")]
    return argv


FIRMWARE = {
    "weight above 255": ("kernel/mm/mempolicy/weighted_interleave/node0", "300", "weighted_interleave/node0"),
    "weight zero": ("kernel/mm/mempolicy/weighted_interleave/node0", "0", "weighted_interleave/node0"),
    "automatic mode neither true nor false": ("kernel/mm/mempolicy/weighted_interleave/auto", "maybe",
                                              "weighted_interleave/auto"),
    "memory tier node list malformed": ("devices/virtual/memory_tiering/memory_tier4/nodelist", "0-x",
                                        "memory_tier4/nodelist"),
    "HMAT latency not a number": ("devices/system/node/node0/access0/initiators/read_latency", "fast",
                                  "access0/initiators/read_latency"),
}
for _name, (_rel, _text, _file) in FIRMWARE.items():
    case("firmware", _name, _firmware(_rel, _text), "firmware file", f"{_file} says {_text!r}: ignored", rc=0)

# ------------------------------------------------------------------ kernel CLI
# Each kernel's bad invocations and option values: BAD_ARGS and OPTION_CASES of its file in
# tests/benches/ (the option cases' line names the value and what is allowed).
for _kernel, _bad in BAD_ARGS.items():
    for _arg in _bad:
        case("kernel CLI", f"{_kernel} {_arg}",
             (lambda k, a: lambda tmp: [str(REPO / "build" / "bin" / k), a, f"--csv={tmp / 'k.csv'}"]
              if not a.startswith("--csv") else [str(REPO / "build" / "bin" / k), a])(_kernel, _arg),
             f"{_kernel}: error:", rule="kernel bad argument")

for _kernel, _cases in OPTION_CASES.items():
    for _arg, _says in _cases:
        case("kernel CLI", f"{_kernel} {_arg}",
             (lambda k, a: lambda tmp: [str(REPO / "build" / "bin" / k), *a.split(),
                                        f"--csv={tmp / 'k.csv'}"])(_kernel, _arg),
             f"{_kernel}: error:", _says, rule="kernel bad option")

# ------------------------------------------------------------------ numasweep CLI
case("numasweep CLI", "unknown command", lambda tmp: PY + ["fly"], "unknown command 'fly'")

# -o into a place that cannot take the file: a missing folder, a folder, an unwritable place.
_OUTPUTS = {
    "missing folder": (lambda tmp: tmp / "no" / "such" / "out.x", "mkdir -p"),
    "a folder": (lambda tmp: tmp, "is a folder"),
    "unwritable place": (lambda tmp: Path("/proc/self/out.x"), "cannot write there"),
}
_WRITERS = {
    "topology --arch": lambda tmp, out: PY + ["topology", "--arch", str(LUMI), "-o", str(out)],
    "topology --detect": lambda tmp, out: PY + ["topology", "--detect", "-o", str(out)],
    "aggregate": lambda tmp, out: (_bad_job_ok(tmp), PY + ["aggregate", "--bench", "latency", "-o", str(out),
                                                           str(tmp / "latency" / "j1.csv")])[1],
    "analyse": lambda tmp, out: PY + ["analyse", "--results", str(REPO / "examples" / "lumi-g"), "-o", str(out)],
    "import-legacy": lambda tmp, out: PY + ["import-legacy", "--arch", str(REPO / "examples/lumi-g/topology.json"),
                                            "--mode", "serial", "-o", str(out),
                                            str(REPO / "examples/lumi-g/source/serial.log")],
}
for _writer, _make in _WRITERS.items():
    for _where, (_out, _says) in _OUTPUTS.items():
        case("numasweep CLI", f"{_writer} -o into a {_where}",
             (lambda m, o: lambda tmp: m(tmp, o(tmp)))(_make, _out), _says)
case("numasweep CLI", "aggregate of a missing file",
     lambda tmp: PY + ["aggregate", "-o", str(tmp / "latency.csv"), str(tmp / "none.csv")], "none.csv")
case("numasweep CLI", "aggregate of a folder",
     lambda tmp: PY + ["aggregate", "--bench", "latency", "-o", str(tmp / "o.csv"), str(tmp)],
     "is a folder, not a result file", "/*.csv")
case("numasweep CLI", "aggregate of a folder into a folder",
     lambda tmp: PY + ["aggregate", "--bench", "latency", "-o", str(tmp), str(tmp)], "is a folder")
case("numasweep CLI", "analyse of a missing folder",
     lambda tmp: PY + ["analyse", "--results", str(tmp / "nowhere"), "-o", str(tmp / "f.json")], "nowhere")
# hwloc-export's --base: the machine's `lstopo --of xml` file, not its folder.
_HWLOC_BASES = {
    "a folder": (lambda tmp: tmp, "is a folder"),
    "a missing file": (lambda tmp: tmp / "none.xml", "no such file"),
}
for _where, (_base, _says) in _HWLOC_BASES.items():
    case("numasweep CLI", f"hwloc-export --base {_where}",
         (lambda b: lambda tmp: PY + ["hwloc-export", str(REPO / "examples" / "lumi-g-remote"), "--base", str(b(tmp)),
                                      "-o", str(tmp / "m.xml")])(_base),
         "--base ", _says, "give --base the `lstopo --of xml` file", "results/<system>/hwloc.xml")
case("numasweep CLI", "run-job with grid not JSON",
     lambda tmp: PY + ["run-job", "--job-id", "j", "--launch", f"true --csv={tmp}/j.csv.partial", "--grid", "{",
                       "--kernel", "/bin/true", "--topology", str(tmp / "t.json"), "--csv", str(tmp / "j.csv"),
                       "--provenance", str(tmp / "j.json"), "--log", str(tmp / "j.log")], "--grid")
case("numasweep CLI", "run-job with a launch line writing elsewhere",
     lambda tmp: PY + ["run-job", "--job-id", "j", "--launch", "true --csv=/tmp/other.csv", "--grid", "{}",
                       "--kernel", "/bin/true", "--topology", str(tmp / "t.json"), "--csv", str(tmp / "j.csv"),
                       "--provenance", str(tmp / "j.json"), "--log", str(tmp / "j.log")], "--launch")


# ------------------------------------------------------------------ cached results
BAD_CELLS = {"non-numeric": ("fast", "not a number"), "empty": ("", "empty"), "zero": ("0", "zero"),
             "negative": ("-3", "negative"), "infinite": ("inf", "not finite"), "nan": ("nan", "")}


def _bad_job(bench: str, column: str, cell: str) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        header, first, second = GOOD[bench].splitlines()
        cols = header.split(",")
        values = second.split(",")
        values[cols.index(column)] = cell
        job = tmp / bench / "j1.csv"
        job.parent.mkdir(parents=True, exist_ok=True)
        job.write_text("\n".join([header, first, ",".join(values)]) + "\n")
        job.with_suffix(".json").write_text(json.dumps({"job_id": "j1", "grid": {"repetition": 0}}))
        return PY + ["aggregate", "--bench", bench, "-o", str(tmp / f"{bench}.csv"), str(job)]
    return argv


BENCHES = all_benches()


def _bad_job_ok(tmp: Path) -> None:
    job = tmp / "latency" / "j1.csv"
    job.parent.mkdir(parents=True, exist_ok=True)
    job.write_text(GOOD["latency"])
    job.with_suffix(".json").write_text(json.dumps({"job_id": "j1", "grid": {"repetition": 0}}))

for _bench, _spec in BENCHES.items():
    for _column in _spec.tables.positive:
        for _kind, (_cell, _word) in BAD_CELLS.items():
            case("cached results", f"job {_bench} {_column} {_kind}", _bad_job(_bench, _column, _cell),
                 "line 3", f"'{_column}'", "rerun its job", *((_word,) if _word else ()), rule="job bad cell")


def _bad_system(field: str, value) -> Callable[[Path], list[str]]:
    """A job's provenance record whose system field holds what the runner never writes."""
    def argv(tmp: Path) -> list[str]:
        _bad_job_ok(tmp)
        job = tmp / "latency" / "j1.json"
        job.write_text(json.dumps({"job_id": "j1", "grid": {"repetition": 0}, "system": {field: value}}))
        return PY + ["aggregate", "--bench", "latency", "-o", str(tmp / "latency.csv"), str(job.with_suffix(".csv"))]
    return argv


case("cached results", "provenance tiering_before a mapping", _bad_system("tiering_before", {"demotion": True}),
     "j1.json: malformed provenance record", "system.tiering_before is dict", "rerun its job")
case("cached results", "provenance tiering_changed a list of lists", _bad_system("tiering_changed", [["a"]]),
     "j1.json: malformed provenance record", "system.tiering_changed is list", "rerun its job")


def _bad_table(column: str, cell: str) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        results = tmp / "cached"
        shutil.copytree(REPO / "examples" / "lumi-g", results)
        lines = (results / "latency.csv").read_text().splitlines()
        cols = lines[0].split(",")
        values = lines[2].split(",")
        values[cols.index(column)] = cell
        lines[2] = ",".join(values)
        (results / "latency.csv").write_text("\n".join(lines) + "\n")
        return PY + ["analyse", "--results", str(results), "-o", str(tmp / "findings.json")]
    return argv


for _column in BENCHES["latency"].tables.positive:
    for _kind, (_cell, _word) in BAD_CELLS.items():
        case("cached results", f"cached latency table {_column} {_kind}", _bad_table(_column, _cell),
             "line 3", "correct that cell")


def _bad_skipped(tmp: Path) -> list[str]:
    """A results folder whose skipped.json (the benchmarks the plan left out) is cut short."""
    results = tmp / "cached"
    shutil.copytree(REPO / "examples" / "lumi-g", results)
    (results / "skipped.json").write_text('{"gpu_xfer": "the topology lists no GPU')
    return PY + ["report", "--results", str(results), "-o", str(tmp / "report.md")]


case("cached results", "skipped.json not JSON", _bad_skipped, "skipped.json: not readable JSON",
     "rerun snakemake")


# References are judged in the metric's own unit: ms and us convert to ns, GB/s and GiB/s to MB/s;
# a unit of neither kind, or of the other kind, is one line naming the key path.
def _reference(unit: str) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        (tmp / "refs.yaml").write_text(yaml.safe_dump(
            {"references": [{"bench": "latency", "reference": [0.1, -0.5, 0.5, unit]}]}))
        return PY + ["compare", "--results", str(REPO / "examples" / "lumi-g"), "--config", str(tmp / "refs.yaml"),
                     "-o", str(tmp / "comparison.md")]
    return argv


case("numasweep CLI", "reference in an unknown unit", _reference("parsec"),
     "references[0].reference[3]", "unit 'parsec' is not known", "ns, us, ms")
case("numasweep CLI", "reference of a rate for a latency", _reference("GB/s"),
     "references[0].reference[3]", "use one of ns, us, ms", "latency_ns_median is in ns")




def _reference_twice(tmp: Path) -> list[str]:
    (tmp / "refs.yaml").write_text("references:\n  - bench: latency\n    reference: [90, -0.5, 0.5, ns]\n"
                                   "    bench: copy\n")
    return PY + ["compare", "--results", str(REPO / "examples" / "lumi-g"), "--config", str(tmp / "refs.yaml"),
                 "-o", str(tmp / "comparison.md")]


case("numasweep CLI", "reference with a key given twice", _reference_twice,
     "refs.yaml:4: in the config, key 'bench' is given twice", "(lines 2 and 4)", "merge them into one")


def _reference_where(tmp: Path) -> list[str]:
    (tmp / "refs.yaml").write_text(yaml.safe_dump(
        {"references": [{"bench": "latency", "where": {"size_bytes": "16Q"}, "reference": [90, -0.5, 0.5, "ns"]}]}))
    return PY + ["compare", "--results", str(REPO / "examples" / "lumi-g"), "--config", str(tmp / "refs.yaml"),
                 "-o", str(tmp / "comparison.md")]


case("numasweep CLI", "reference where with a bad size", _reference_where,
     "references[0].where.size_bytes", "'16Q' is not a size")

def _other_campaign(tmp: Path) -> list[str]:
    """The store holds a run of campaign `b` that measured rank 0 at two sizes only; campaign `a`
    (the whole LUMI-G table) is compared with it by its key."""
    from numasweep.results import store

    for name in ("a", "b"):
        shutil.copytree(REPO / "examples" / "lumi-g", tmp / name)
    lines = (tmp / "b" / "latency.csv").read_text().splitlines()
    (tmp / "b" / "latency.csv").write_text("\n".join(lines[:3]) + "\n")
    run, _ = store.record(tmp / "b", tmp / "store.db", "b")
    return PY + ["compare", "--results", str(tmp / "a"), "--store", str(tmp / "store.db"), "--against",
                 run.short, "--campaign", "a", "-o", str(tmp / "comparison.md")]


case("numasweep CLI", "compare with a run of another campaign", _other_campaign, "warning", "Across campaigns",
     "not compared", "--against previous", rc=0)

# Markup in what a report quotes (a cached topology.json, an arch file, references) is text in
# the report: the command succeeds, says nothing on stderr, and its Markdown and HTML hold no tag
# and no link of the input's (tests/report/test_hostile_strings.py checks the page in Chromium).
MARKUP = "<script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1))"


def _report_of(topology: dict | None = None, arch: dict | None = None) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        results = tmp / "cached"
        shutil.copytree(REPO / "examples" / "lumi-g", results)
        if arch is not None:
            (tmp / "arch.yaml").write_text(yaml.safe_dump({**yaml.safe_load(LUMI.read_text()), **arch}))
            assert main(["topology", "--arch", str(tmp / "arch.yaml"), "-o", str(results / "topology.json")]) == 0
        if topology is not None:
            cached = json.loads((results / "topology.json").read_text())
            (results / "topology.json").write_text(json.dumps({**cached, **topology}))
        return PY + ["report", "--results", str(results), "-o", str(tmp / "report.md"), "--html", str(tmp / "report.html")]
    return argv


def _edited(kind: str, **fields: str) -> Callable[[Path], list[str]]:
    """A findings.json edited by hand: the first finding of `kind` given `fields` (its sentence, its id)."""
    def argv(tmp: Path) -> list[str]:
        results = REPO / "examples" / "ulisse"
        assert main(["analyse", "--results", str(results), "-o", str(tmp / "findings.json")]) == 0
        found = json.loads((tmp / "findings.json").read_text())
        next(f for f in found["findings"] if f["id"] == kind).update(fields)
        (tmp / "findings.json").write_text(json.dumps(found))
        return PY + ["report", "--results", str(results), "--findings", str(tmp / "findings.json"),
                     "-o", str(tmp / "report.md")]
    return argv


case("cached results", "a findings.json sentence reworded to drop the number it states",
     _edited("bandwidth_saturation", summary="Nothing to see here."), "claims audit refused",
     "does not print the rise", "report.md")
case("cached results", "a findings.json finding of a kind no benchmark declares",
     _edited("bandwidth_peak", id="bandwidth_guess"), "claims audit refused",
     "its kind 'bandwidth_guess' declares no claims", "Checks.claims")


def _report_with_references(reference: dict) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        (tmp / "refs.yaml").write_text(yaml.safe_dump({"references": [
            {"bench": "latency", "reference": [90, -0.5, 0.5, "ns"], **reference}]}))
        results = str(REPO / "examples" / "lumi-g")
        # its verdict, passed (0) or failed (1), and no error
        assert main(["compare", "--results", results, "--config", str(tmp / "refs.yaml"),
                     "-o", str(tmp / "comparison.md")]) in (0, 1)
        return PY + ["report", "--results", results, "--section", str(tmp / "comparison.md"),
                     "-o", str(tmp / "report.md"), "--html", str(tmp / "report.html")]
    return argv


REPORTED = ("comparison.md", "report.md", "report.html")
case("cached results", "markup in a cached topology.json system", _report_of({"system": MARKUP}), rc=0,
     shown=REPORTED[1:])
case("cached results", "markup in a cached topology.json cpu_model", _report_of({"cpu_model": MARKUP}), rc=0,
     shown=REPORTED[1:])
case("arch", "markup in an arch file cpu_model, through a live run's topology", _report_of(arch={"cpu_model": MARKUP}),
     rc=0, shown=REPORTED[1:])
case("numasweep CLI", "markup in references name", _report_with_references({"name": MARKUP}), rc=0, shown=REPORTED)
case("numasweep CLI", "markup in references where.mode", _report_with_references({"where": {"mode": MARKUP}}), rc=0,
     shown=REPORTED)


def _markup_left(path: Path) -> list[str]:
    """The input's tags and links that `path` holds as markup (its code blocks and spans aside)."""
    text = re.sub(r"(`+).+?\1", "", re.sub(r"^(`{3,}).*?^\1", "", path.read_text(), flags=re.M | re.S))
    link = r"href=\"javascript" if path.suffix == ".html" else r"(?<!\\)\]\(javascript"   # the page shows the syntax
    return re.findall(r"<(?:script|img src=x)|onerror=alert\(1\)>|" + link, text)


# A real full disk: a small tmpfs mounted for the case (root only; the case fails otherwise).
MOUNTED: list[Path] = []


def _tmpfs(path: Path, size: str, read_only: bool = False) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.fail("NOT RUN: a full or read-only disk is a small tmpfs, which only root can mount (run the tests "
                    "as root)")
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"{'ro,' * read_only}size={size}", "tmpfs", str(path)],
                           capture_output=True, text=True)
    assert mount.returncode == 0, f"cannot mount a tmpfs at {path}: {mount.stderr.strip()}"
    MOUNTED.append(path)
    return path


@pytest.fixture(autouse=True)
def _unmount():
    yield
    while MOUNTED:
        subprocess.run(["umount", str(MOUNTED.pop())], check=True)


def _store_full(tmp: Path) -> list[str]:
    disk = _tmpfs(tmp / "disk", "64k")
    return PY + ["store", "record", "--results", str(REPO / "examples" / "lumi-g"), "--store", str(disk / "store.db")]


case("numasweep CLI", "results store on a full disk", _store_full, "disk full at", "store.db was not changed",
     "df -h")




# The report's steps on a full disk or a read-only one: one line naming the folder (and, full,
# the space the files need); nothing half written is left there.
def _figures_full(tmp: Path) -> list[str]:
    disk = _tmpfs(tmp / "disk", "64k")
    return PY + ["figures", "--results", str(REPO / "examples" / "lumi-g"), "-o", str(disk / "figures")]


def _report_full(tmp: Path) -> list[str]:
    disk = _tmpfs(tmp / "disk", "16k")
    (disk / "other").write_bytes(b"\0" * 12288)        # one page of 4 KiB left, whatever the report's size
    return PY + ["report", "--results", str(REPO / "examples" / "lumi-g"), "-o", str(disk / "experimentation.md")]


def _figures_read_only(tmp: Path) -> list[str]:
    disk = _tmpfs(tmp / "disk", "64k", read_only=True)
    return PY + ["figures", "--results", str(REPO / "examples" / "lumi-g"), "-o", str(disk / "figures")]


case("numasweep CLI", "figures on a full disk", _figures_full, "disk full at", "disk/figures: the figures were not "
     "written", "they need", "free there", "df -h")
case("numasweep CLI", "report on a full disk", _report_full, "disk full at", "experimentation.md was not written",
     "it needs", "free there", "df -h")
case("numasweep CLI", "figures into a read-only folder", _figures_read_only, "disk/figures",
     "Read-only file system", "give a folder you can write")


def _aggregate_rule_full(tmp: Path) -> list[str]:
    """The aggregate rule's script (workflow/scripts/aggregate.py) as Snakemake runs it, its
    `snakemake` object given as Snakemake gives it, the merged table going to a full disk; the
    script's log, where Snakemake shows it, is printed."""
    _bad_job_ok(tmp)
    disk = _tmpfs(tmp / "disk", "16k")
    (disk / "other").write_bytes(b"\0" * 16384)
    code = (
        "import runpy, sys, types\n"
        "from pathlib import Path\n"
        "class Named(list):\n"
        "    def get(self, key, default=None): return getattr(self, key, default)\n"
        "def named(*items, **keys):\n"
        "    n = Named(items)\n"
        "    for k, v in keys.items(): setattr(n, k, v)\n"
        "    return n\n"
        f"log = {str(tmp / 'aggregate.log')!r}\n"
        "sm = types.SimpleNamespace(input=named(csv=[" + repr(str(tmp / "latency" / "j1.csv")) + "]),\n"
        f"    output=named({str(disk / 'latency.csv')!r}), log=named(log),\n"
        "    params=types.SimpleNamespace(keep_going=False), wildcards=types.SimpleNamespace(bench='latency'))\n"
        "try:\n"
        f"    runpy.run_path({str(REPO / 'workflow' / 'scripts' / 'aggregate.py')!r}, init_globals={{'snakemake': sm}})\n"
        "finally:\n"
        "    sys.stderr.flush()\n"
        "    sys.__stderr__.write(Path(log).read_text())\n"
    )
    return [sys.executable, "-c", code]


case("workflow", "aggregate rule on a full disk", _aggregate_rule_full, "numasweep: error:", "disk full at",
     "latency.csv was not written", "df -h")


# ------------------------------------------------------------------ faults mid-run (run-job)
def _runjob(script: str, *extra: str, seed: bool = True) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        bench = tmp / "bench"
        bench.mkdir(exist_ok=True)
        if seed:  # a finished result from an earlier run, and its archive
            subprocess.run(_argv(tmp, 'printf "size,value\\n1,2.5\\n" > "${0#--csv=}"'), check=True,
                           capture_output=True)
        return _argv(tmp, script, *extra)

    def _argv(tmp: Path, script: str, *more: str) -> list[str]:
        csv = tmp / "bench" / "j1.csv"
        return PY + ["run-job", "--job-id", "j1", "--launch", shlex.join(["bash", "-c", script, f"--csv={csv}.partial"]),
                     "--grid", "{}", "--kernel", "/bin/true", "--topology", str(REPO / "examples/lumi-g/topology.json"),
                     "--csv", str(csv), "--provenance", str(csv.with_suffix(".json")), "--log",
                     str(csv.with_suffix(".log")), *more]
    return argv


def _archive(tmp: Path) -> list[Path]:
    return sorted((tmp / "bench" / "archive").glob("*"))


FAULTS = {
    "kernel fails": ("echo 'numa_latency: error: mbind failed'; exit 2", "mbind failed", 2),
    "kernel exits 0 without CSV": ("exit 0", "without writing its CSV", 2),
    "kernel writes a header only": ('echo size,value > "${0#--csv=}"', "no rows", 2),
    "kernel writes an empty CSV": (': > "${0#--csv=}"', "no rows", 2),
    "kernel killed by SIGKILL": ("kill -9 $$", "SIGKILL", 137),
    "kernel killed by SIGSEGV": ("kill -11 $$", "SIGSEGV", 139),
    "kernel killed by SIGTERM": ("kill -15 $$", "SIGTERM", 143),
    "kernel leaves a partial CSV and fails": ('echo size > "${0#--csv=}"; exit 1', "", 1),
}
for _name, (_script, _says, _rc) in FAULTS.items():
    case("faults mid-run", _name, _runjob(_script), *((_says,) if _says else ()), rc=_rc, keep=_archive)


def _disk_fills(tmp: Path) -> list[str]:
    """The results folder's disk fills while the kernel runs (it writes its table, then the disk
    is full): publishing fails at the archive copy."""
    _tmpfs(tmp / "bench", "256k")
    return _runjob('f="${0#--csv=}"; printf "size,value\\n1,3.5\\n" > "$f"; cat /dev/zero > "${f%/*}/filler" '
                   '2>/dev/null; exit 0')(tmp)


case("faults mid-run", "results disk fills before publishing", _disk_fills, "disk full at", "was not published",
     "earlier results are kept", "df -h",
     keep=lambda tmp: _archive(tmp) + [tmp / "bench" / "j1.csv", tmp / "bench" / "j1.json"])
case("faults mid-run", "launcher missing", lambda tmp: _runjob("true")(tmp)[:7] + [
    f"mpirun-absent --csv={tmp}/bench/j1.csv.partial"] + _runjob("true", seed=False)(tmp)[8:],
     "mpirun-absent", keep=_archive)

# Waits read from the environment: a value that is no number of seconds, or one below 0, is one line
# saying the rule before the job runs.
_WAITS = {
    "host lock wait below 0": ("NUMASWEEP_HOST_LOCK_WAIT=-1", "NUMASWEEP_HOST_LOCK_WAIT='-1'",
                               "at least 0 seconds", "set it to 0 (do not wait), e.g. 3600, or unset it"),
    "host lock wait not a number": ("NUMASWEEP_HOST_LOCK_WAIT=an hour", "NUMASWEEP_HOST_LOCK_WAIT='an hour'",
                                    "not a number of seconds", "e.g. 3600"),
    "job lock wait below 0": ("NUMASWEEP_LOCK_WAIT=-5", "NUMASWEEP_LOCK_WAIT='-5'", "at least 0 seconds", "e.g. 120"),
    "job lock wait not a number": ("NUMASWEEP_LOCK_WAIT=abc", "NUMASWEEP_LOCK_WAIT='abc'", "not a number of seconds",
                                   "e.g. 120"),
}
for _name, (_setting, *_says) in _WAITS.items():
    case("numasweep CLI", _name, (lambda s: lambda tmp: ["env", s, *_runjob("exit 0", seed=False)(tmp)])(_setting),
         *_says)


# ------------------------------------------------------------------ legacy import
def _legacy(text: str | None, *extra: str) -> Callable[[Path], list[str]]:
    def argv(tmp: Path) -> list[str]:
        log = tmp / "run.log"
        if text is not None:
            log.write_text(text)
        return PY + ["import-legacy", "--arch", str(LUMI), "-o", str(tmp / "out.csv"), *extra, str(log)]
    return argv


case("legacy import", "log missing", _legacy(None), "run.log")
case("legacy import", "empty log", _legacy(""), "run.log")
case("legacy import", "log without a table", _legacy("hello\nworld\n"), "run.log")
case("legacy import", "binary log", _legacy("\x00\x01\x02"), "run.log")
case("legacy import", "--mem-node not a node list", _legacy("x\n", "--mem-node", "zero"), "--mem-node 'zero'")


# ------------------------------------------------------------------ the check
def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# The Python commands run in this process, through the CLI's `main` as `python -m numasweep`
# calls it (main prints the one line and returns the exit code; an escaping exception fails the
# test with its traceback). These stay commands of their own, so that the real entry point is
# held to the no-traceback rule for each kind of input; so do the faults mid-run, whose run-job
# runs a real job with its signal handlers and process group. Kernel cases run their binary.
OWN_PROCESS = {
    "config: yaml syntax error names the line",
    "arch: corrupt topology.json",
    "numasweep CLI: unknown command",
    "cached results: cached latency table latency_ns_median non-numeric",
    "legacy import: binary log",
}


def _in_process(argv: list[str], tmp: Path, monkeypatch: pytest.MonkeyPatch,
                capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit code, stderr) of `python -m numasweep ARGS` run by main in this process, in `tmp`."""
    monkeypatch.chdir(tmp)
    capfd.readouterr()
    try:
        rc = main(argv[len(PY):])
    except SystemExit as exc:  # argparse's usage line and message; sys.exit(text) prints the text, exit 1
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        rc = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return rc, capfd.readouterr().err


@pytest.mark.parametrize("item", CASES, ids=[f"{c.category}: {c.name}" for c in CASES])
def test_catalogue(item: Case, tmp_path: Path, kernels_bin: Path, monkeypatch: pytest.MonkeyPatch,
                   capfd: pytest.CaptureFixture[str]) -> None:
    argv = item.argv(tmp_path)
    kept = {p: _sha(p) for p in item.keep(tmp_path)}
    own_process = item.category == "faults mid-run" or f"{item.category}: {item.name}" in OWN_PROCESS
    if argv[:len(PY)] == PY and not own_process:
        rc, err = _in_process(argv, tmp_path, monkeypatch, capfd)
        err = err.strip()
    else:
        env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
        rc, err = proc.returncode, proc.stderr.strip()
    assert "Traceback" not in err, err
    assert rc == item.rc, (rc, err)
    if item.shown:
        assert err == "", err
        for name in item.shown:
            assert (tmp_path / name).is_file() and not _markup_left(tmp_path / name), (name, _markup_left(tmp_path / name))
    elif item.category != "faults mid-run":
        assert len(err.splitlines()) == (1 if item.says else 0), err
    for text in item.says:
        assert text in err, err
    assert {p: _sha(p) for p in kept} == kept
    item.check(tmp_path)


def test_catalogue_table_is_current() -> None:
    table = (REPO / "docs" / "catalogue.md").read_text()
    for item in CASES:
        name = RULES[item.rule][0] if item.rule else item.name
        assert f"| {item.category} | {name} |" in table, f"docs/catalogue.md lacks: {name}"


def test_every_cpu_kernel_has_kernel_cli_cases() -> None:
    assert_covers(BAD_ARGS, CPU_KERNELS, "tests/benches/: BAD_ARGS of each kernel")


def test_every_benchmark_has_a_good_job_table_to_spoil() -> None:
    assert_covers(GOOD, BENCHES, "tests/benches/: GOOD of each benchmark")
    assert {item.name.split()[1] for item in CASES if item.rule == "job bad cell"} == set(BENCHES)


def table() -> str:
    """docs/catalogue.md's table (PYTHONPATH=workflow:tests python tests/catalogue/test_catalogue.py)."""
    lines = ["| category | case | exit | the line names |", "|---|---|---|---|"]
    for item in CASES:
        if item.rule:
            row = f"| {item.category} | {RULES[item.rule][0]} | {item.rc} | {RULES[item.rule][1]} |"
            if row not in lines:
                lines.append(row)
            continue
        said = ", ".join(f"`{t}`" for t in item.says) or ("nothing: accepted" if item.rc == 0 else "")
        if item.shown:
            said = f"nothing: {', '.join(item.shown)} show the input as text"
        lines.append(f"| {item.category} | {item.name} | {item.rc} | {said} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
