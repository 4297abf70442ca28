"""Every command the documentation shows, run as written from a fresh copy of the repository.

The documents: README.md, examples/README.md, config/README.md, bench/README.md and docs/*.md
(and, apart, each example README's `topology --arch` command). A shell block is a
fenced block (```) with no language or with `bash`, `sh` or `console`; other blocks (`text`
listings, `yaml`, `json`) are not commands. In a shell block every line is one command (a line
ending in `\\` goes on in the next), but for blank lines and lines starting with `#`; in a
`console` block only lines starting with `$ ` are commands, the others are their output. A
comment after a command stays: the shell drops it.

Each block runs in its own fresh copy, its commands one after another, as a reader would type
them; each must exit 0 and print no Python traceback. The copy is what a clone holds, with the
checkout's .venv linked in where it has one. How a command runs (`how`, the first that matches):

- `bash scripts/numasweep.sh test` is not run: it is the command that runs this test;
- a `bench/` script (bench/README.md) has its arguments parsed by its own parser and nothing
  else (`tests/helpers/parse_only.py`), a `bench/` shell script has its syntax checked (`bash -n`):
  those commands run reference tools for half an hour or measure the machine;
- `bash scripts/numasweep.sh sweep` runs as written (installs what is missing, builds, measures
  the default sweep): the block is `slow`;
- a command that needs a SLURM cluster makes its block `slow` and `slurm`. A block that starts
  the test cluster itself (`bash tests/slurm/cluster.sh up`, docs/slurm.md) runs as written, as
  root, where no cluster is up yet, its `snakemake` commands included (it ends with
  `cluster.sh down`, which the test also runs should the block fail). It starts, as tests/slurm
  does, from the checkout's built kernels (the SLURM profile's local jobs would otherwise build
  the same objects side by side, each a minute on this machine).
  A cluster the session's SLURM tests left up (`slurm_clusters`) is brought down first.
  Fleet mode over a partition (`fleet={"partition": NAME}`, which asks `sinfo` for its nodes)
  runs as a dry run on the session's one-node test cluster, NAME read as its partition (the
  documents name a site's partitions, `standard` or `standard-g`); so does `srun -p NAME ...`,
  as written but for the partition;
- a `snakemake` command that would build and measure more than the placeholder configs below, or
  submit to SLURM, runs as a dry run (`-n` added);
- anything else runs as written: `snakemake report --config results=...`, the placeholder
  configs' small sweeps, `python -m numasweep ...`.

Placeholders a document leaves to the reader: `my.yaml` and `my-campaign.yaml` are the smallest
sweep of tests/workflow/config/tiny.yaml (the second also compares with the previous run).

Beside the blocks, what the documents promise of a command's effect: a bare `snakemake compare`
compares with the previous run of the campaign (run twice for real, on the tiny sweep's
bandwidth and copy); the examples' `topology --arch` commands write their shipped files; the
job-group recipe's `-n` shows what docs/slurm.md says; config/README's example reference names
a point the default sweep measures; the `report.html` README writes at the top is git-ignored.

And the commands the text names inline (in backquotes, not in a block), run as written: the
`topology` commands without `-o` (docs/firmware.md, examples/README.md), README's way to run a
kernel by hand (`build/bin/numa_NAME --help`, its `numactl ... build/bin/numa_bandwidth` line),
`grid --set` with a dotted key and the form config/README.md gives instead, and `store list`
with the columns README names; each `report/<system>/NAME` a document names is written by a
rule, and no document cites a `seeds/` file (the repository has none).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from helpers.slurmtest import ONE_NODE, STATE, Clusters
from helpers.workflow import TEST_CONFIGS, copy_repo, snakemake_env
from numasweep.core.units import parse_size, parse_sizes
from numasweep.planning import grid

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", "examples/README.md", "config/README.md", "bench/README.md", *sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
SHELL_LANGUAGES = {"", "bash", "sh", "console"}
TIMEOUT_S = {"parse": 60, "run": 600, "dry": 300, "slow": 1800, "slurm": 900, "slurm-dry": 300}

pytestmark = pytest.mark.workflow


@dataclass
class Command:
    line: int          # where it starts in its document
    text: str          # as written, continuation lines joined


@dataclass
class Block:
    document: str
    line: int
    language: str
    commands: list[Command] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.document}:{self.line}"


def shell_blocks(text: str, document: str) -> list[Block]:
    """The shell blocks of a Markdown text, with their commands (rules in the module's docstring)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^```\s*([\w+-]*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        language = fence.group(1).lower()
        body_start = i + 1
        end = body_start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if language in SHELL_LANGUAGES:
            block = Block(document, i + 1, language)
            pending: list[str] = []
            pending_line = 0
            for number, raw in enumerate(lines[body_start:end], start=body_start + 1):
                if not pending:
                    stripped = raw.strip()
                    if language == "console":
                        if not stripped.startswith("$ "):
                            continue
                        stripped = stripped[2:]
                    if not stripped or stripped.startswith("#"):
                        continue
                    pending_line, raw = number, stripped
                if raw.rstrip().endswith("\\"):
                    pending.append(raw.rstrip()[:-1].strip())
                    continue
                pending.append(raw.strip())
                block.commands.append(Command(pending_line, " ".join(pending)))
                pending = []
            if pending:
                block.commands.append(Command(pending_line, " ".join(pending)))
            blocks.append(block)
        i = end + 1
    return blocks


PLACEHOLDER_CONFIGS = {"my.yaml": {}, "my-campaign.yaml": {"compare": {"against": "previous"}}}
CLUSTER_PROGRAMS = {"sinfo", "srun", "sacct", "squeue", "scontrol", "sbatch"}
BENCH_SCRIPT = re.compile(r"^(\.venv/bin/)?python3? (bench/\w+\.py)\b")
BENCH_SHELL = re.compile(r"^(\w+=\S* )*bash (bench/\w+\.sh)\b")   # a shell script of bench/: its syntax checked


def words(command: str) -> list[str]:
    """The command's words up to its trailing comment (`;` and the like count as words)."""
    return shlex.split(command, comments=True)


def needs_cluster(command: str) -> bool:
    programs = {part.split()[0] for part in re.split(r"[;&|]+", command) if part.split()}
    return bool(programs & CLUSTER_PROGRAMS) or "tests/slurm/cluster.sh" in command


def fleet_partition(command: str) -> str | None:
    """The partition a fleet-mode command screens (`--config 'fleet={"partition": NAME}'`)."""
    match = re.search(r'fleet=\{"partition":\s*"([^"]+)"\}', command)
    return match.group(1) if match else None


def srun_partition(command: str) -> str | None:
    """The partition an srun command names (`srun -p NAME ...`, docs/slurm.md's detection on a
    compute node)."""
    match = re.match(r"srun\b.*?\s-p\s+(\S+)", command)
    return match.group(1) if match else None


def how(command: str) -> str:
    """How the test runs a command: 'self', 'parse', 'slow', 'slurm', 'slurm-dry', 'dry' or 'run'
    (module docstring)."""
    if re.match(r"^bash scripts/numasweep\.sh test\b", command):
        return "self"
    if BENCH_SCRIPT.match(command) or BENCH_SHELL.match(command):
        return "parse"
    if re.match(r"^bash scripts/numasweep\.sh sweep\b", command):
        return "slow"
    if needs_cluster(command):
        return "slurm"
    if fleet_partition(command):
        return "slurm-dry"
    argv = words(command)
    if argv[:1] == ["snakemake"]:
        if "-n" in argv or "--dry-run" in argv or "--lint" in argv or "--unlock" in argv:
            return "run"
        if any(a.startswith("results=") for a in argv):
            return "run"
        small = any(a in PLACEHOLDER_CONFIGS for a in argv)
        submits = "profiles/slurm" in argv
        return "run" if small and not submits else "dry"
    return "run"


def block_kind(block: Block) -> str:
    kinds = {how(c.text) for c in block.commands}
    return "slurm" if kinds & {"slurm", "slurm-dry"} else "slow" if "slow" in kinds else "fast"


def starts_cluster(block: Block) -> bool:
    return any(c.text.startswith("bash tests/slurm/cluster.sh up") for c in block.commands)


def dry(command: str) -> str:
    return shlex.join([*words(command), "-n"])


@dataclass
class Outcome:
    command: Command
    mode: str
    returncode: int | None
    output: str

    @property
    def failed(self) -> bool:
        if self.mode == "self":
            return False
        return self.returncode != 0 or "Traceback (most recent call last)" in self.output


def fresh_copy(dest: Path) -> Path:
    copy = copy_repo(REPO, dest)
    # A fresh clone has the tests too (docs/slurm.md runs tests/slurm/cluster.sh); not the caches.
    shutil.copytree(REPO / "tests", copy / "tests", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "cache", "sysfs"))
    tiny = yaml.safe_load((TEST_CONFIGS / "tiny.yaml").read_text())
    for name, extra in PLACEHOLDER_CONFIGS.items():
        (copy / name).write_text(yaml.safe_dump({**tiny, **extra}))
    # `bash scripts/numasweep.sh` makes .venv from requirements.txt where it is missing; the copy
    # shares the checkout's, as on a machine where the first command already ran.
    if (REPO / ".venv").is_dir():
        (copy / ".venv").symlink_to(REPO / ".venv")
    return copy


def command_env(copy: Path) -> dict[str, str]:
    """A reader's shell in the copy: this interpreter's snakemake and python first on the PATH,
    the copy's own package importable (as `pip install -e .` in it would make it)."""
    env = snakemake_env()
    env["PYTHONPATH"] = str(copy / "workflow")
    return env


def run_block(block: Block, copy: Path, partition: str | None = None) -> list[Outcome]:
    """Run a block's commands in order in `copy`; stop at the first that fails. With `partition`,
    a fleet-mode command screens that partition instead of the one it names."""
    env = command_env(copy)
    outcomes = []
    for command in block.commands:
        mode = how(command.text)
        if partition and (named := fleet_partition(command.text)):
            command = Command(command.line, command.text.replace(f'"partition": "{named}"', f'"partition": "{partition}"'))
        if partition and (named := srun_partition(command.text)):
            command = Command(command.line, command.text.replace(f" -p {named} ", f" -p {partition} ", 1))
        if mode == "dry" and starts_cluster(block):
            mode = "slurm"  # the block's own test cluster takes the jobs
        if mode == "self":
            outcomes.append(Outcome(command, mode, None, "not run: this is the command that runs this test"))
            continue
        text = dry(command.text) if mode in ("dry", "slurm-dry") else command.text
        if mode == "parse":
            shell = BENCH_SHELL.match(text)
            text = f"bash -n {shell.group(2)}" if shell else BENCH_SCRIPT.sub(
                r"\g<1>python tests/helpers/parse_only.py \g<2>", text)
        try:
            proc = subprocess.run(["bash", "-c", text], cwd=copy, env=env, capture_output=True, text=True,
                                  timeout=TIMEOUT_S[mode])
            outcome = Outcome(command, mode, proc.returncode, proc.stdout + proc.stderr)
        except subprocess.TimeoutExpired as exc:
            outcome = Outcome(command, mode, None, f"timed out after {exc.timeout} s")
        outcomes.append(outcome)
        if outcome.failed:
            break
    return outcomes


def report(block: Block, outcomes: list[Outcome]) -> str:
    failed = [o for o in outcomes if o.failed]
    if not failed:
        return ""
    o = failed[0]
    return (f"{block.document}:{o.command.line}: `{o.command.text}` ({o.mode}) exited {o.returncode}"
            f"{' with a traceback' if 'Traceback' in o.output else ''}:\n{o.output[-4000:]}")


def sinfo(*args: str) -> str | None:
    """sinfo's answer, or None where no cluster answers."""
    if shutil.which("sinfo") is None:
        return None
    try:
        proc = subprocess.run(["sinfo", "-h", *args], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None
    return proc.stdout if proc.returncode == 0 else None


def why_not_here(block: Block, clusters: Clusters) -> str | None:
    """Why a SLURM block cannot run on this machine now, or None (the test then fails, saying NOT
    RUN). Never under CI, which runs as root on a machine with no cluster but the session's."""
    if os.geteuid() != 0:
        return "runs the test SLURM cluster: needs root (scripts/numasweep.sh test installs its packages)"
    if clusters.running is None and not STATE.exists() and sinfo() is not None:
        return "a SLURM cluster the tests did not start is up on this machine: its nodes are not ours to use"
    return None


def cluster_partition(clusters: Clusters) -> str:
    """The partition of the session's one-node cluster (started if none is up)."""
    clusters.use(ONE_NODE)
    return (sinfo("-o", "%P") or "").split()[0].rstrip("*")


def documented_blocks() -> list:
    params = []
    for document in DOCUMENTS:
        for block in shell_blocks((REPO / document).read_text(), document):
            kind = block_kind(block)
            marks = [pytest.mark.slow] if kind == "slow" else [
                pytest.mark.slow, pytest.mark.slurm] if kind == "slurm" else []
            params.append(pytest.param(block, id=block.name, marks=marks))
    return params


BLOCKS = documented_blocks()


def test_the_documents_have_shell_blocks() -> None:
    """The extraction finds the commands where the documents have them, e.g. README's dry runs
    and report regeneration, docs/slurm.md's job-group recipe (joined over its two lines)."""
    commands = [c.text for p in BLOCKS for c in p.values[0].commands]
    assert "snakemake report --config results=examples/lumi-g                 # from cached tables only: no build, no benchmark" in commands
    assert any(c.startswith("snakemake --profile profiles/slurm --configfile config/campaigns/lumi-g.yaml "
                            "--config group_compared=true") for c in commands), commands
    assert "python -m numasweep topology --detect                  # this machine's topology.json on stdout" in commands
    assert "python -m numasweep store list --store results/store.sqlite     # every recorded run, oldest first" in commands
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("block", BLOCKS)
def test_documented_commands_work_as_written(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    partition = None
    if block_kind(block) == "slurm":
        clusters = request.getfixturevalue("slurm_clusters")
        if reason := why_not_here(block, clusters):
            pytest.fail(f"NOT RUN: {reason}")
        if starts_cluster(block):
            clusters.stop()  # the block starts its own
        elif any(fleet_partition(c.text) or srun_partition(c.text) for c in block.commands):
            partition = cluster_partition(clusters)
    copy = fresh_copy(tmp_path / "repo")
    if starts_cluster(block):
        built = request.getfixturevalue("kernels_bin").parent  # build/, with its times
        shutil.copytree(built, copy / "build", symlinks=True)
    try:
        outcomes = run_block(block, copy, partition)
    finally:
        if starts_cluster(block):
            subprocess.run(["bash", "tests/slurm/cluster.sh", "down"], cwd=copy, capture_output=True, timeout=300)
    problem = report(block, outcomes)
    assert not problem, problem


EXAMPLE_TOPOLOGY = re.compile(r"`(python -m numasweep topology --arch \S+ -o (examples/[\w-]+/topology\.json))`")


def example_topology_commands() -> list[tuple[str, str, str]]:
    """(README, command, the file it writes) of each example's documented `topology --arch`."""
    found = []
    for readme in sorted((REPO / "examples").glob("*/README.md")):
        for command, target in EXAMPLE_TOPOLOGY.findall(readme.read_text()):
            found.append((str(readme.relative_to(REPO)), command, target))
    return found


def test_each_example_topology_command_writes_the_shipped_file(tmp_path: Path) -> None:
    """An example README's `python -m numasweep topology --arch ... -o examples/<name>/topology.json`,
    run as written in a fresh copy, writes that example's shipped topology.json byte for byte."""
    commands = example_topology_commands()
    assert {Path(target).parent.name for _, _, target in commands} >= {"lumi-g", "lumi-g-remote", "ulisse"}
    copy = fresh_copy(tmp_path / "repo")
    for readme, command, target in commands:
        (copy / target).unlink()
        proc = subprocess.run(["bash", "-c", command], cwd=copy, env=command_env(copy), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, f"{readme}: `{command}` exited {proc.returncode}: {proc.stderr}"
        assert (copy / target).read_bytes() == (REPO / target).read_bytes(), \
            f"{readme}: `{command}` writes another {target} than the one shipped"


def test_a_bare_snakemake_compare_compares_with_the_previous_run_of_the_campaign(
        tmp_path: Path, kernels_bin: Path) -> None:
    """`snakemake compare` with no compare key and no reference, as README writes it, in a fresh
    copy whose config/config.yaml is the tiny sweep's bandwidth and copy (the default sweep measures
    for minutes): the first time it says in one line that this is the campaign's first run;
    measured again, it compares with that run."""
    copy = fresh_copy(tmp_path / "repo")
    shutil.copytree(kernels_bin.parent, copy / "build", symlinks=True)
    tiny = yaml.safe_load((TEST_CONFIGS / "tiny.yaml").read_text())
    (copy / "config" / "config.yaml").write_text(yaml.safe_dump({**tiny, "latency": {"sweeps": []}}))
    env = command_env(copy)

    def bare_compare(first: bool) -> tuple[str, str]:
        proc = subprocess.run(["bash", "-c", "snakemake compare"], cwd=copy, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S["run"])
        out = proc.stdout + proc.stderr
        # `compare` is a gate: the first run passes (nothing to compare with); the second, measured
        # again on a machine as busy as it is, may fail its regression checks, each said in a line
        failed = proc.returncode == 1 and not first and re.search(r"numasweep: compare: \d+ of \d+ checks failed", out)
        assert (proc.returncode == 0 or failed) and "Traceback" not in out, out[-4000:]
        (section,) = (copy / "report").glob("*/comparison.md")
        return out, section.read_text()

    out, section = bare_compare(first=True)
    first = [line for line in out.splitlines() if "this is its first run" in line]
    assert len(first) == 1 and first[0].startswith("numasweep: report/"), out[-4000:]
    assert "No earlier run of" in section and "### Against" not in section
    (stored,) = (copy / "results").glob("*/stored.json")
    first_run = json.loads(stored.read_text())["run_key"]
    for folder in [p for p in (copy / "results").iterdir() if p.is_dir()] + [copy / "report"]:
        shutil.rmtree(folder)  # measured again from scratch, the store kept
    out, section = bare_compare(first=False)
    assert "first run" not in out and "nothing to compare with" not in out, out[-4000:]
    # against the first run (its jobs, measured on a busy machine, may be held out as disturbed)
    assert f"### Against run {first_run[:12]} " in section, section


def test_config_readme_example_reference_names_a_point_of_the_default_sweep() -> None:
    """config/README.md's example `references` entry selects a point the default sweep measures
    (a latency job of its mode with a rank of its number, at its size), so layered over
    config/config.yaml it is checked, not `NO DATA`."""
    text = (REPO / "config" / "README.md").read_text()
    (block,) = re.findall(r"```yaml\n(compare:.*?)```", text, re.S)
    (reference,) = yaml.safe_load(block)["references"]
    where = reference["where"]
    config = grid.validate_config(grid.layered_config([REPO / "config" / "config.yaml"]))
    plan = grid.expand(config, grid.config_topology(str(REPO / "examples" / "ulisse" / "topology.json")))
    size = parse_size(where["size_bytes"])
    measuring = [job.id for job in plan.by_bench(reference["bench"])
                 if ("--serial" in job.kernel_args) == (where["mode"] == "serial") and job.tasks > where["rank"]
                 and any(size in parse_sizes(arg.split("=", 1)[1]) for arg in job.kernel_args
                         if arg.startswith("--size="))]
    assert measuring, f"config/README.md: no job of the default sweep measures {where}: the example reads NO DATA"


def test_the_job_group_recipe_dry_run_shows_what_docs_slurm_says(tmp_path: Path) -> None:
    """docs/slurm.md's job-group recipe with `-n`: as many group jobs as the text says, and each
    grouped point with `tasks` at most the `--resources tasks=T` limit beside its own
    `srun --ntasks=N`, N above T for the multi-rank points, as its "What `-n` shows" explains."""
    text = (REPO / "docs" / "slurm.md").read_text()
    (recipe,) = [c.text for b in shell_blocks(text, "docs/slurm.md") for c in b.commands
                 if c.text.startswith("snakemake --profile profiles/slurm") and "--resources tasks=" in c.text]
    limit = int(re.search(r"--resources tasks=(\d+)", recipe).group(1))
    promised = int(re.search(r"add `-n` to see (?:the |its )?(\d+) group jobs", text).group(1))
    assert "**What `-n` shows of a job group.**" in text and f"`tasks={limit}`" in text
    copy = fresh_copy(tmp_path / "repo")
    proc = subprocess.run(["bash", "-c", dry(recipe)], cwd=copy, env=command_env(copy), capture_output=True,
                          text=True, timeout=TIMEOUT_S["dry"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert len(re.findall(r"^\[.*\] Group job ", out, re.M)) == promised, out[-4000:]
    pairs = re.findall(r"resources: [^\n]*\btasks=(\d+)\b[^\n]*\n(?:Shell command: )?[^\n]*srun [^\n]*--ntasks=(\d+)",
                       out)
    assert pairs, out[-4000:]
    assert all(int(tasks) <= limit for tasks, _ in pairs), pairs
    assert all(int(ranks) >= int(tasks) for tasks, ranks in pairs), pairs
    assert (str(limit), "8") in pairs and any(int(ranks) > limit for _, ranks in pairs), pairs


def test_the_report_html_readme_writes_at_the_top_is_ignored() -> None:
    """`snakemake --report report.html` (README) leaves report.html at the top of a clone: git
    ignores it, as it does results/ and report/."""
    assert "snakemake --report report.html" in (REPO / "README.md").read_text()
    for path in ("report.html", "results/x/latency.csv", "report/x/experimentation.html"):
        proc = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO)
        assert proc.returncode == 0, f"{path} is not ignored by .gitignore"


# ------------------------------------------------------------------ commands the text names inline

def run_here(command: str, copy: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    """A command run as written in the copy, as a reader's shell there would."""
    return subprocess.run(["bash", "-c", command], cwd=copy, env=command_env(copy), capture_output=True, text=True,
                          timeout=timeout)


def test_the_topology_commands_work_without_o(tmp_path: Path) -> None:
    """docs/firmware.md's `python -m numasweep topology --detect` (also a block, run as written
    above) and examples/README.md's `python -m numasweep topology --arch config/arch/<system>.yaml`,
    neither with `-o`: the topology JSON on stdout, its summary (the firmware's view) on stderr.
    examples/README.md's, with `<system>` each example's arch file (the one its README's own
    command names), prints that example's shipped topology.json byte for byte."""
    firmware = (REPO / "docs" / "firmware.md").read_text()
    assert "`python -m numasweep topology --detect`" in firmware
    copy = fresh_copy(tmp_path / "repo")
    proc = run_here("python -m numasweep topology --detect", copy)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "firmware" in json.loads(proc.stdout) and "  HMAT: " in proc.stderr, proc.stderr
    (inline,) = re.findall(r"`(python -m numasweep topology --arch config/arch/<system>\.yaml)`",
                           (REPO / "examples" / "README.md").read_text())
    checked = set()
    for readme, command, target in example_topology_commands():
        arch = re.search(r"--arch (config/arch/([\w-]+)\.yaml)", command)
        proc = run_here(inline.replace("<system>", arch.group(2)), copy)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stdout == (REPO / target).read_text(), \
            f"examples/README.md: `{inline}` with {arch.group(1)} prints another topology than {target} ({readme})"
        checked.add(Path(target).parent.name)
    assert checked >= {"lumi-g", "lumi-g-remote", "ulisse"}


def test_the_report_files_the_documents_name_are_written(tmp_path: Path) -> None:
    """Each `report/<system>/NAME` a document names (docs/firmware.md once named a report.md) is
    a file or folder a rule of the workflow writes under the report folder."""
    written = set()
    for rules in [REPO / "workflow" / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]:
        written |= set(re.findall(r"\{REPORT_DIR\}/([\w.-]+)", rules.read_text()))
    assert {"experimentation.md", "comparison.md", "figures"} <= written, written
    named = {(document, name) for document in DOCUMENTS
             for name in re.findall(r"report/<system>/([\w.-]+)", (REPO / document).read_text())}
    assert named and not {(d, n) for d, n in named if n not in written}, \
        f"files the workflow does not write (it writes {sorted(written)})"


def test_no_document_cites_a_seed_file() -> None:
    """The seed documents are not in the repository: no file of it (documents, configs, code and
    its comments) names a `seeds/` file; what a seed says is said in words, or its kept part
    named under examples/<name>/source/."""
    tracked = subprocess.run(["git", "ls-files", "*.md", "*.yaml", "*.py", "*.smk", "*.sh", "*.c", "*.h",
                              "workflow/Snakefile"], cwd=REPO, capture_output=True, text=True, check=True)
    files = [f for f in tracked.stdout.split() if f != "tests/workflow/test_documented_commands.py"]
    assert set(DOCUMENTS) <= set(files), set(DOCUMENTS) - set(files)
    cited = {(f, m) for f in files if (REPO / f).is_file()
             for m in re.findall(r"\bseeds/[\w./-]+", (REPO / f).read_text(errors="replace"))}
    assert not cited, cited
    assert not (REPO / "seeds").exists()


def test_the_kernel_by_hand_command_runs_as_written(tmp_path: Path, kernels_bin: Path) -> None:
    """README's way to run a kernel by hand: `build/bin/numa_NAME --help` for each kernel, and its
    `numactl ... build/bin/numa_bandwidth ...` line, in a copy holding the built kernels (what
    `make -C kernels`, which README names first, leaves), which measures and validates. README
    presents bench/mlc.py as what it is: a benchmark against reference tools."""
    text = (REPO / "README.md").read_text()
    assert "`make -C kernels` builds them into `build/bin/`" in text and "`build/bin/numa_NAME --help`" in text
    (command,) = re.findall(r"`(numactl [^`]*build/bin/numa_\w+[^`]*)`", text)
    mlc = text[text.index("`bench/mlc.py`"):][:300]
    assert "against reference tools" in mlc and "against reference tools" in (REPO / "bench" / "mlc.py").read_text()
    copy = fresh_copy(tmp_path / "repo")
    shutil.copytree(kernels_bin.parent, copy / "build", symlinks=True)
    for kernel in sorted((copy / "build" / "bin").glob("numa_*")):
        proc = run_here(f"build/bin/{kernel.name} --help", copy)
        assert proc.returncode == 0 and "Usage:" in proc.stdout + proc.stderr, (kernel.name, proc.stderr)
    proc = run_here(command, copy, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Validation: passed" in out, f"README.md: `{command}` exited {proc.returncode}: {out[-3000:]}"


def test_a_dotted_grid_set_key_names_the_option_and_the_form_config_readme_gives(tmp_path: Path) -> None:
    """`python -m numasweep grid --set repeat_until.max_repeats=0` is refused in one line that
    blames --set (not the campaign file) and gives the form config/README.md documents, which
    then plans."""
    text = (REPO / "config" / "README.md").read_text()
    assert "a dotted `repeat_until.max_repeats=0` is refused" in text
    (form,) = re.findall(r"`(--set '[^`]+')`", text)
    copy = fresh_copy(tmp_path / "repo")
    proc = run_here("python -m numasweep grid --config config/campaigns/lumi-g.yaml "
                    "--set repeat_until.max_repeats=0 --count", copy)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("numasweep: error: --set repeat_until.max_repeats=0: ") and "lumi-g.yaml" not in lines[0]
    assert f"write {form}" in lines[0], (form, lines[0])
    proc = run_here(f"python -m numasweep grid --config config/campaigns/lumi-g.yaml {form} --count", copy)
    assert proc.returncode == 0 and re.search(r"^latency\t32$", proc.stdout, re.M), proc.stdout + proc.stderr


def test_store_list_prints_the_columns_readme_names(tmp_path: Path) -> None:
    """README's `python -m numasweep store list --store results/store.sqlite` (run as written in its
    block above) on a store holding a cached example: the header is the columns README lists, in
    that order, and the row under it holds the run's jobs, commit and verdict; each line under 160
    characters."""
    text = (REPO / "README.md").read_text()
    (command,) = [c.text for b in shell_blocks(text, "README.md") for c in b.commands if " store list " in c.text]
    listed = text[text.index("`store list` prints one line a run"):]
    columns = re.findall(r"`(\w+)`", listed[:listed.index(".\n")].split("with the columns", 1)[1])
    copy = fresh_copy(tmp_path / "repo")
    (copy / "results").mkdir()
    proc = run_here("python -m numasweep store record --results examples/h100-vm --store results/store.sqlite", copy)
    assert proc.returncode == 0, proc.stderr
    proc = run_here(command, copy)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    header, row = proc.stdout.splitlines()
    assert header.split() == columns, (header, columns)
    assert row.split()[4:7] == ["6", "6de563c-dirty", "-"], row
    assert all(len(line) < 160 for line in (header, row))


# ------------------------------------------------------------------ the extractor and runner themselves

PLANTED = """# A README

Some words.

```
snakemake -n report --config results=examples/lumi-g   # works
python -m numasweep grid --config config/campaigns/lumi-g.yaml \\
    --count
```

```text
results/<system>/topology.json      a listing, not a command
```

```yaml
latency: {sweeps: []}
```

```console
$ python -m numasweep plan --help
usage: ...
```

```bash
# a comment line
snakemake report --config results=examples/no-such-folder
python -m numasweep plan --help
```
"""


def test_extractor_takes_commands_and_skips_comments_listings_and_output(tmp_path: Path) -> None:
    blocks = shell_blocks(PLANTED, "PLANTED.md")
    assert [(b.line, b.language) for b in blocks] == [(5, ""), (19, "console"), (24, "bash")]
    assert [c.text for c in blocks[0].commands] == [
        "snakemake -n report --config results=examples/lumi-g   # works",
        "python -m numasweep grid --config config/campaigns/lumi-g.yaml --count"]
    assert [c.line for c in blocks[0].commands] == [6, 7]
    assert [c.text for c in blocks[1].commands] == ["python -m numasweep plan --help"]
    assert [c.text for c in blocks[2].commands] == [
        "snakemake report --config results=examples/no-such-folder", "python -m numasweep plan --help"]


def test_how_each_command_runs() -> None:
    assert how("bash scripts/numasweep.sh test   # every test") == "self"
    assert how("bash scripts/numasweep.sh sweep") == "slow"
    assert how(".venv/bin/python bench/kernels.py --rounds 3 --skip cycle") == "parse"
    assert how("THREADS=8,1 STREAM= bash bench/host_run.sh KIT OUT 250") == "parse"
    assert how("sinfo; srun -N 2 -l hostname") == "slurm"
    assert how("snakemake --profile profiles/slurm --configfile C --config 'fleet={\"partition\": \"x\"}'") == "slurm-dry"
    assert how("bash tests/slurm/cluster.sh up --nodes 2 --accounting") == "slurm"
    assert how("snakemake --profile profiles/local") == "dry"
    assert how("snakemake --profile profiles/slurm --configfile my-campaign.yaml") == "dry"
    assert how("snakemake --profile profiles/local --configfile my.yaml # yours") == "run"
    assert how("snakemake report --config results=examples/lumi-g") == "run"
    assert how("snakemake -n -p --profile profiles/local") == "run"
    assert dry("snakemake --profile profiles/local   # default sweep") == "snakemake --profile profiles/local -n"


def test_a_broken_documented_command_fails_the_test(tmp_path: Path) -> None:
    """A README whose block names a results folder that does not exist: its block fails, at that
    command, without running the one after it; the good block passes."""
    readme = tmp_path / "README.md"
    readme.write_text(PLANTED)
    blocks = shell_blocks(readme.read_text(), "README.md")
    copy = fresh_copy(tmp_path / "repo")
    good, output, broken = (run_block(b, copy) for b in blocks)
    assert not report(blocks[0], good) and not report(blocks[1], output)
    problem = report(blocks[2], broken)
    assert problem.startswith("README.md:26: `snakemake report --config results=examples/no-such-folder` (run) exited 1")
    assert "no folder 'examples/no-such-folder'" in problem
    assert len(broken) == 1
    with pytest.raises(AssertionError):
        assert not problem, problem


def test_a_bench_command_its_script_refuses_fails_the_test(tmp_path: Path) -> None:
    """bench/ commands are parsed, not run: an option the script no longer has (`--jobs` of the
    report subcommand) fails its block; the same script's good command passes, measuring nothing."""
    block = Block("bench/README.md", 1, "", [
        Command(2, ".venv/bin/python bench/pipeline.py report --rows 1000000 --hosts 1000   # a fleet"),
        Command(3, ".venv/bin/python bench/pipeline.py report --rows 1000000 --jobs 2")])
    copy = fresh_copy(tmp_path / "repo")
    good, broken = run_block(block, copy)
    assert good.mode == "parse" and not good.failed and not (copy / "results").exists(), good.output
    assert broken.failed and broken.returncode == 2 and "unrecognized arguments: --jobs 2" in broken.output


def test_a_traceback_fails_a_command_that_exits_0(tmp_path: Path) -> None:
    outcome = Outcome(Command(1, "x"), "run", 0, "Traceback (most recent call last):\n  ...")
    assert outcome.failed


def test_placeholder_configs_are_small(tmp_path: Path) -> None:
    """my.yaml and my-campaign.yaml plan only the tiny sweep: a few jobs, each seconds long."""
    copy = fresh_copy(tmp_path / "repo")
    proc = subprocess.run([sys.executable, "-m", "numasweep", "grid", "--config", "my-campaign.yaml", "--count"],
                          cwd=copy, env=command_env(copy), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    counts = {bench: int(n) for bench, n in re.findall(r"^(\w+)\t(\d+)$", proc.stdout, re.M)}
    assert counts and sum(counts.values()) <= 6, proc.stdout
