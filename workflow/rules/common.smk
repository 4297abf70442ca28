import json
import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path

from snakemake.utils import min_version
from snakemake_interface_executor_plugins.settings import DeploymentMethod

# the oldest Snakemake the tests run (requirements.txt): the rules use its internals (workflow.*)
min_version("9.27.1")

# PACKAGE_DIR, on sys.path, comes from package.smk (included before the config file is read).
from numasweep.planning import batch, fleet, grid, launch, slurm  # noqa: E402
from numasweep.core import registry  # noqa: E402
from numasweep.core.errors import NumasweepError  # noqa: E402
from numasweep.core.io import check_writable  # noqa: E402
from numasweep.planning.paths import check_config_paths  # noqa: E402
from numasweep.planning import paths  # noqa: E402

# ------------------------------------------------------------------ configuration
# The config is validated once, here, against workflow/schemas/config.schema.yaml:
# grid.validate_config names the key path of the first problem in one line and fills every
# schema default, which `config` then carries for the rules.
# A value of the user's --configfile that a profile's `config:` (or --config) replaces: say so.
for _line in grid.overridden(workflow.overwrite_configfiles, config):
    print(f"numasweep: warning: {_line}", file=sys.stderr)
try:
    registry.all_benches()  # a module NUMASWEEP_BENCHES names that fails is one line
    CONFIG = grid.validate_config(config, "config")
    # arch, results, wrapper and store.path: there, readable, no wildcard braces.
    check_config_paths(CONFIG, "config")
except NumasweepError as exc:
    raise WorkflowError(str(exc)) from None
config.update(CONFIG)

BIN_DIR = "build/bin"
# Jobs call `python -m numasweep ...`, and the rules' scripts import the package. Every job's
# shell starts with this prefix (after Snakemake's usual `set -euo pipefail`), read again inside
# a SLURM job: the package's folder first on PYTHONPATH, so that this checkout's package is
# imported under any interpreter, also the python of a rule's conda environment (--sdm conda:
# workflow/envs/), which does not install it; and the folder of the interpreter running
# Snakemake first on PATH, so that a job runs the python with the requirements whatever python
# the user's PATH finds first, but last under --sdm conda (the prefix runs after a rule's
# environment is activated, whose python must come first). Not in the rules' shell: a job's
# command would then depend on where the interpreter lives, and every benchmark would rerun
# when that changes (its code changed).
PACKAGE_PATH = os.path.abspath(PACKAGE_DIR)
PYTHON_DIR = os.path.dirname(sys.executable)
_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
shell.prefix(
    "set -euo pipefail; export PYTHONPATH={PACKAGE_PATH:q}${{PYTHONPATH:+:$PYTHONPATH}}; "
    + (
        'export PATH="$PATH":{PYTHON_DIR:q}; '
        if _CONDA
        else 'export PATH={PYTHON_DIR:q}:"$PATH"; '
    )
)
WRAPPER = CONFIG["wrapper"]
LAUNCHER = CONFIG["launcher"]
# How launch lines are built (numasweep.planning.launch.result_line).
LAUNCH = dict(
    launcher=LAUNCHER, wrapper=WRAPPER, bin_dir=BIN_DIR, srun_mpi=CONFIG["srun_mpi"]
)
# Regenerating the report from cached results: no build, topology or benchmark job at all.
FROM_CACHE = CONFIG["results"] is not None
# What the report folder of cached results other than a campaign's own starts with.
CACHED_PREFIX = "example-"


def default_resources():
    """The profile's (or --default-resources') values as written, quotes left out: what a job
    snakemake runs itself at plan time (the compute node's detection) asks SLURM for."""
    given = workflow.resource_settings.default_resources
    return (
        {}
        if given is None
        else {k: str(v.raw).strip("\"'") for k, v in given.items() if v.raw is not None}
    )


def command_line_targets():
    """The targets of the snakemake command line of this process: Snakemake reads the Snakefile
    before it keeps them in its DAG settings. None outside the main process, or where the command
    line is not snakemake's (then a run reports only as it would measure)."""
    if not workflow.is_main_process:
        return ()
    from snakemake.cli import get_argument_parser

    try:
        args, _ = get_argument_parser().parse_known_args(sys.argv[1:])
    except SystemExit:
        return ()
    return tuple(getattr(args, "targets", None) or ())


def _cached_system(folder):
    """The system a cached results folder describes: its topology.json, else the folder name."""
    topo = Path(folder) / "topology.json"
    if not topo.exists():
        return Path(folder).name
    try:
        data = json.loads(topo.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkflowError(
            f"{topo}: not a readable topology.json ({exc}); restore it, or write it again with "
            f"`python -m numasweep topology --arch ARCH -o {topo}`"
        ) from None
    if not isinstance(data, dict):
        raise WorkflowError(
            f"{topo}: not a topology (a JSON object is expected); write it again with "
            f"`python -m numasweep topology --arch ARCH -o {topo}`"
        )
    return data.get("system") or Path(folder).name


if FROM_CACHE:
    RESULTS_DIR = CONFIG["results"].rstrip("/")
    _cached_system(RESULTS_DIR)  # a corrupt topology.json is refused in one line
    # A campaign's own results (results/<system>, e.g. copied back from a cluster) render into
    # that campaign's report, report/<system>. Any other folder renders into
    # report/example-<name>, named by the folder (or config `system`), not by the system it
    # measured: examples/lumi-g and examples/lumi-g-remote keep separate reports, and neither
    # can overwrite a campaign's report (no campaign may be named example-*, below).
    if Path(RESULTS_DIR).resolve().parent == Path("results").resolve():
        SYSTEM = Path(RESULTS_DIR).name
    else:
        SYSTEM = CACHED_PREFIX + (CONFIG["system"] or Path(RESULTS_DIR).name)
    BENCHES = [b for b in registry.names() if Path(RESULTS_DIR, f"{b}.csv").exists()]
    JOBS = {}
    BATCHES = {}
    SKIPPED = {}
    GROUPS = {}
    FLEET_NODES = CONFIG["fleet"]["nodes"]
else:
    # The topology is needed while the DAG is built, so that `snakemake -n -p` prints the
    # real launch lines; the topology rule writes the same thing for the record.
    try:
        # Fleet mode: every job once per node, each pinned to its node (slurm_extra below).
        FLEET_NODES, _left_out = fleet.nodes(CONFIG["fleet"])
        if _left_out and workflow.is_main_process:
            print(f"numasweep: warning: {_left_out}", file=sys.stderr)
        # arch: auto is the machine the kernels run on: on a login node that no job runs on, a
        # compute node's (or each fleet node's) topology, detected by a job on it, once
        # (numasweep.planning.slurm); the kernels are then built on a compute node too.
        ARCH, _line, LOGIN_NODE = slurm.planned_arch(
            CONFIG["arch"], LAUNCHER, default_resources(), FLEET_NODES
        )
        if _line and workflow.is_main_process:
            print(f"numasweep: {_line}", file=sys.stderr)
        TOPOLOGY = grid.config_topology(ARCH)
        PLAN = fleet.spread(grid.expand(config, TOPOLOGY, "config"), FLEET_NODES)
    except NumasweepError as exc:
        raise WorkflowError(str(exc)) from None
    SYSTEM = CONFIG["system"] or TOPOLOGY.system
    if SYSTEM.startswith(CACHED_PREFIX):
        raise WorkflowError(
            f"config: system: '{SYSTEM}': names starting with '{CACHED_PREFIX}' are kept for "
            f"reports rendered from cached results (report/{CACHED_PREFIX}<folder>); set "
            "`system:` to another name"
        )
    RESULTS_DIR = f"results/{SYSTEM}"
    BENCHES = PLAN.benches()
    JOBS = {job.id: job for job in PLAN.jobs}
    # config `batch` > 1: one benchmark job per batch of points (numasweep.planning.batch), by
    # batch id, and each point's run-batch option; empty: one job per point.
    POINTS = (
        batch.point_options(PLAN.jobs, RESULTS_DIR, **LAUNCH)
        if CONFIG["batch"] > 1
        else {}
    )
    BATCHES = (
        {b.id: b for b in batch.batches(PLAN.jobs, CONFIG["batch"], POINTS)}
        if CONFIG["batch"] > 1
        else {}
    )
    SKIPPED = PLAN.skipped
    # What runs once per results folder and kernel build before the points that name it
    # (grid.Setup, e.g. a calibration), by id: two rules each (setup.smk).
    SETUPS = {job.setup.id: job.setup for job in PLAN.jobs if job.setup is not None}
    MEASURES = grid.measures(CONFIG, BENCHES)
    # config group_compared: the comparisons of two or more points (Job.compared), each one
    # SLURM job group of that name (job_group below, rule compared in benchmarks.smk).
    GROUPS = {}
    if CONFIG["group_compared"]:
        for _job in PLAN.jobs:
            if _job.compared:
                GROUPS.setdefault(_job.compared, []).append(_job)
        GROUPS = {name: jobs for name, jobs in GROUPS.items() if len(jobs) > 1}
    for _line in batch.reopen_incomplete(RESULTS_DIR, list(BATCHES.values())):
        print(f"numasweep: warning: {_line}", file=sys.stderr)
    # Results are measured once: a run that only reports on them (`snakemake report`, compare,
    # hwloc_export, fleet) renders from a campaign folder that holds every job's results, as
    # `--config results=results/<system>` does, whatever the checkout's build or the sources'
    # times (a fresh clone with the folder copied back would otherwise build and measure
    # again). Deleting a job's CSV asks for it again (README): the folder is then incomplete.
    _TARGETS = command_line_targets()
    if paths.reporting_only(_TARGETS) and paths.complete_results(
        RESULTS_DIR, PLAN, hwloc="hwloc_export" in _TARGETS
    ):
        FROM_CACHE = True
        BENCHES = [b for b in BENCHES if Path(RESULTS_DIR, f"{b}.csv").exists()]
        JOBS, BATCHES, GROUPS = {}, {}, {}
        if workflow.is_main_process:
            print(
                f"numasweep: {RESULTS_DIR} holds every job's results: reporting on them, "
                "nothing built or measured (delete a job's CSV to measure it again)",
                file=sys.stderr,
            )

REPORT_DIR = f"report/{SYSTEM}"
# Every folder this run writes must be writable: said here, before Snakemake fails to create one.
WRITTEN = {REPORT_DIR: "the report folder", f"logs/{SYSTEM}": "the log folder"}
if not FROM_CACHE:
    WRITTEN[RESULTS_DIR] = "the results folder"
try:
    for _folder, _what in WRITTEN.items():
        check_writable(_folder, _what)
except NumasweepError as exc:
    raise WorkflowError(str(exc)) from None
# One report of a cached folder at a time: a second `snakemake report --config results=DIR`
# started while the first renders waits here, before Snakemake builds its DAG (where it would
# find the first run's outputs incomplete, or its directory locked). The main process holds the
# lock for its whole life (the open file; the kernel drops it when the process ends), jobs never.
# A run that measures keeps Snakemake's own directory lock: it runs for hours, and a dry run
# beside it must not wait.
if FROM_CACHE and workflow.is_main_process:
    from numasweep.running.runjob import JobLock, lock_wait

    REPORT_LOCK = JobLock(Path(REPORT_DIR) / ".report.lock")
    try:
        REPORT_LOCK.acquire(lock_wait(), f"the report folder {REPORT_DIR}")
    except NumasweepError as exc:
        raise WorkflowError(str(exc)) from None
# The campaign a run is stored under (numasweep store --campaign): the config's `system`, else the
# results folder's name, as `store record` takes it by default; a cached folder's report name
# (example-<folder>) is not part of it.
CAMPAIGN = CONFIG["system"] or Path(RESULTS_DIR).name
# The report ranks the nodes of a fleet campaign, and compares with references or an earlier run
# of the results store when the config asks for it.
FLEET = bool(FLEET_NODES or CONFIG["fleet"]["partition"])
COMPARE = bool(CONFIG["compare"]["against"] or CONFIG["references"])
STORE = CONFIG["store"]["path"]
# Sections other rules write for the report: the fleet ranking (rule fleet) and the comparison
# with references or an earlier run (rule comparison).
REPORT_SECTIONS = [f"{REPORT_DIR}/fleet.md"] * FLEET + [
    f"{REPORT_DIR}/comparison.md"
] * COMPARE
# What the sweeps say they measure (rule measures), which the report's configuration section
# repeats; a cached folder's own file, where it has one.
MEASURES_FILE = f"{RESULTS_DIR}/measures.json"
if FROM_CACHE and not Path(MEASURES_FILE).exists():
    MEASURES_FILE = []


wildcard_constraints:
    job=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    batch=r"b[0-9]+(-on-[A-Za-z0-9_.-]+)?",
    group=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    bench="|".join(registry.names()),
    kernel="|".join(registry.kernels()),


# ------------------------------------------------------------------ input functions


def job_of(wildcards):
    """The job of a point, or the first point of a batch (its points share the resources).
    Asked only once job_kernel, the rule's first input, has found the point or batch."""
    if hasattr(wildcards, "batch"):
        return batch_of(wildcards).jobs[0]
    return JOBS[wildcards.job]


def batch_of(wildcards):
    return BATCHES[wildcards.batch]


def batch_manifests(bench):
    return [
        str(batch.manifest_path(RESULTS_DIR, bench, b.id))
        for b in BATCHES.values()
        if b.bench == bench
    ]


def job_csvs(bench):
    return [f"{RESULTS_DIR}/{bench}/{job_id}.csv" for job_id in job_ids(bench)]


def job_ids(bench):
    return [job.id for job in JOBS.values() if job.bench == bench]


def aggregate_inputs(wildcards):
    if BATCHES:
        return {"manifests": batch_manifests(wildcards.bench)}
    csvs = job_csvs(wildcards.bench)
    return {"csv": csvs, "provenance": [c[: -len(".csv")] + ".json" for c in csvs]}


def failed_job_lines(snakemake_logs):
    """Print the last non-empty line of each failed job's log (its one-line error), the logs
    found in Snakemake's own log where it says "check log file(s)"."""
    named = []
    if not isinstance(snakemake_logs, (list, tuple)):
        snakemake_logs = [snakemake_logs]
    for path in snakemake_logs:
        try:
            text = Path(str(path)).read_text(errors="replace")
        except OSError:
            continue
        for match in re.finditer(r"log: (.+?) \(check log file", text):
            named += [p for p in match.group(1).split(", ") if p not in named]
    for job_log in named:
        try:
            lines = Path(job_log).read_text(errors="replace").splitlines()
        except OSError:
            continue
        last = next((line.strip() for line in reversed(lines) if line.strip()), None)
        if last:
            print(f"numasweep: {job_log}: {last}", file=sys.stderr)


# When this run started: the closing block speaks of a report this run wrote, not an older one.
_STARTED = time.time()
# Whether this run's targets hold the report (the default target does).
_REPORT_TARGETED = not command_line_targets() or any(
    t in ("all", "report", "report_md") or t.endswith("experimentation.md")
    for t in command_line_targets()
)


def closing_block():
    report_md = Path(f"{REPORT_DIR}/experimentation.md")
    from numasweep.reporting import closing

    if report_md.exists() and report_md.stat().st_mtime >= _STARTED - 1:
        for line in closing.lines(report_md, RESULTS_DIR):
            print(line, file=sys.stderr)
    # A report that shows findings the claims audit refused fails the run that targets it (the
    # report is kept: rule report_md writes it and exits 0), as long as it shows them.
    refusal = (
        closing.refused(report_md) if report_md.exists() and _REPORT_TARGETED else None
    )
    if refusal:
        print(refusal, file=sys.stderr)
        sys.exit(1)  # one line: Snakemake would print a WorkflowError with its frames


def job_results():
    """Every job's CSV and provenance record: targets themselves, so that a deleted one is
    measured again even when the aggregated table is still newer than the rest. With batches:
    every batch's manifest (a deleted point is measured again once its manifest is deleted).
    """
    if BATCHES:
        return [m for bench in BENCHES for m in batch_manifests(bench)]
    return [
        f"{RESULTS_DIR}/{job.bench}/{job.id}.{ext}"
        for job in JOBS.values()
        for ext in ("csv", "json")
    ] + [group_list(group) for group in GROUPS if group_needed(group)]


def group_list(group):
    return f"logs/{SYSTEM}/groups/{group}.txt"


def group_needed(group):
    """Whether a comparison's job is a target: while some point is missing, or once it was
    written (then it runs again with its points, e.g. after a rebuild). Not for points all
    measured by an ungrouped run: it would be an sbatch job of its own, on an exclusive node,
    only to list them."""
    return Path(group_list(group)).exists() or not all(
        Path(path).exists() for path in group_csvs(group)
    )


def results_folder(wildcards, input):
    """A params function: the results folder is the one holding the topology.json the rule
    reads (derived from the input, so the rule names files only through input and output).
    """
    return os.path.dirname(input.topology)


def bench_tables():
    return [f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES]


# The hwloc XML of the machine measured, which hwloc_export writes into. hwloc_topology takes it
# where the benchmarks run; cached results must hold it (the export says so, in one line).
HWLOC_BASE = f"{RESULTS_DIR}/hwloc.xml"


def common_sources():
    """The shared C module every kernel links, and the Makefile that builds it."""
    return sorted(str(p) for p in Path("kernels/common").glob("*.[ch]")) + [
        "kernels/Makefile"
    ]


def kernel_sources(wildcards):
    """A kernel's own sources (the shared module comes in through its library)."""
    gpu = [b for b in registry.all_benches().values() if b.launch.by == "gpus"]
    if any(wildcards.kernel in b.launch.kernels for b in gpu):
        return sorted(str(p) for p in Path("kernels/gpu").glob("*") if p.is_file())
    return [f"kernels/{wildcards.kernel}.c"]


# Worked out once per job: Snakemake evaluates a waiting job's params again each time its
# scheduler looks (each second while jobs wait), on the CPUs a running benchmark measures on.
_PER_JOB = {}


def once_per_job(make, wildcards):
    key = (make, wildcards.job)
    if key not in _PER_JOB:
        _PER_JOB[key] = make(job_of(wildcards))
    return _PER_JOB[key]


def _result_line(job):
    return launch.result_line(job, RESULTS_DIR, **LAUNCH)


def launch_line(bench):
    return lambda wildcards: once_per_job(_result_line, wildcards)


def grid_values(wildcards):
    return once_per_job(batch.grid_json, wildcards)


def batch_points(wildcards):
    """A batch's points as run-batch options, one `--point ID LAUNCH GRID` a line, so that
    `snakemake -n -p` shows each point's launch line."""
    return "".join(batch.SEPARATOR + POINTS[job.id] for job in batch_of(wildcards).jobs)


def job_kernel(wildcards):
    """The kernel a point or batch runs. A target that names no point (a mistyped job id) or no
    batch of the sweep gets, as its missing input, the sentence that says so and how to list
    them: Snakemake's missing-input report shows it as the one missing file, where an exception
    raised here (InputFunctionException) would come with a traceback of this file."""
    if hasattr(wildcards, "batch"):
        if wildcards.batch not in BATCHES:
            return (
                f"no batch '{wildcards.batch}' in the configured sweep (batch: {CONFIG['batch']}): "
                "`python -m numasweep grid --config FILE --count` counts the batches"
            )
    elif wildcards.job not in JOBS:
        return (
            f"no job '{wildcards.job}' in the configured sweep: "
            "`python -m numasweep grid --config FILE` lists the ids"
        )
    return f"{BIN_DIR}/{job_of(wildcards).kernel}"


def _jobs_of(wildcards):
    """The points of a point's or a batch's job (none for an id not in the sweep)."""
    if hasattr(wildcards, "batch"):
        return batch_of(wildcards).jobs if wildcards.batch in BATCHES else []
    return [JOBS[wildcards.job]] if wildcards.job in JOBS else []


def job_setups(wildcards):
    """The record and the file of each Setup the job's points run after: their inputs."""
    setups = {j.setup.id: j.setup for j in _jobs_of(wildcards) if j.setup is not None}
    return [f"{RESULTS_DIR}/{o}" for s in setups.values() for o in (s.record, s.reads)]


def setup_option(wildcards):
    """run-job's --setup: the record its provenance keeps (one Setup per job, or per batch)."""
    setups = {j.setup.record for j in _jobs_of(wildcards) if j.setup is not None}
    return "".join(
        f" --setup {shlex.quote(f'{RESULTS_DIR}/{r}')}" for r in sorted(setups)
    )


def setup_line(setup):
    """A Setup's launch line (numasweep.planning.launch.setup_line)."""
    return launch.setup_line(setup, RESULTS_DIR, wrapper=WRAPPER, bin_dir=BIN_DIR)


def job_group(wildcards):
    """A point's job group (config group_compared): its comparison, if that has other points;
    None (no group) otherwise, also for a batch or an id not in the sweep."""
    job = JOBS.get(getattr(wildcards, "job", None))
    return job.compared if job is not None and job.compared in GROUPS else None


def compared_points(wildcards):
    """The CSVs of a comparison's points: depending on them joins them into one group job
    (points that only share a group name stay apart in Snakemake, and `--group-components`
    would pack them in no fixed order)."""
    return group_csvs(wildcards.group)


def group_csvs(group):
    return [f"{RESULTS_DIR}/{job.bench}/{job.id}.csv" for job in GROUPS[group]]


def compared_slurm_extra(wildcards):
    # The points of a comparison share their node (fleet mode), so their slurm_extra.
    return sbatch_options(GROUPS[wildcards.group][0])


def job_tasks(wildcards):
    return job_of(wildcards).tasks


def job_gpus(wildcards):
    return job_of(wildcards).gpus


def sbatch_options(job):
    # A benchmark takes a node alone; a fleet job also names its node.
    # The plugin puts this text into the sbatch command line as is: one quoted word per option.
    return f"'--exclusive'{fleet.slurm_nodelist(job.grid)}"


def slurm_extra(wildcards):
    return sbatch_options(job_of(wildcards))


def bench_resources(bench):
    # MPI benchmarks: one rank per placed CPU; the others one process, GPUs where they use them.
    if bench.launch.by == "mpi":
        return {"mpi": mpi_launcher, "tasks": job_tasks}
    return {"mpi": "", **({"gpu": job_gpus} if bench.launch.by == "gpus" else {})}


def job_memory_mb(wildcards):
    # A benchmark job's sbatch --mem: its node's memory (numasweep.planning.slurm), asked of
    # sinfo once per run where jobs run under SLURM (the srun launcher, as profiles/slurm sets).
    if not _MEMORY_MB:
        _MEMORY_MB.append(slurm.memory_mb(TOPOLOGY, ask_slurm=LAUNCHER == "srun"))
    return _MEMORY_MB[0]


_MEMORY_MB = []


def job_threads(wildcards):
    return job_of(wildcards).threads


def mpi_launcher(wildcards):
    # Any `mpi` resource makes the SLURM plugin run the shell as is, in the batch step that
    # owns the whole (exclusive) node; a non-empty one also marks an MPI job, which the
    # plugin refuses with a single task. One-rank jobs run without a launcher: empty.
    #
    # Job groups (config group_compared, or --groups latency=NAME for any MPI benchmark's rule;
    # docs/slurm.md): Snakemake merges the resources of a group's jobs into the group's one
    # sbatch job, and refuses a string resource on which they differ, such as 'srun' (several
    # ranks) beside '' (one rank). Every grouped job gets the empty value: the group's sbatch
    # takes --ntasks from the merged `tasks`, and inside it the plugin still runs each job's
    # shell as is (it looks only for the key), so an MPI job's srun line keeps its --ntasks and
    # --cpu-bind=map_cpu. (The groups are known only once the DAG is built, so this is asked
    # per job.)
    if job_of(wildcards).bench in workflow.group_settings.overwrite_groups or job_group(
        wildcards
    ):
        return ""
    return LAUNCHER if job_of(wildcards).tasks > 1 else ""


# Kernels rewrite their CSV after each finished step (temporary name + rename), so a killed
# job would leave a valid but short table: they write to <id>.csv.partial
# (launch.result_line), and only a job whose kernel succeeded renames it to <id>.csv.

# Every word of a rule's shell line that comes from the config, a path or a wildcard is quoted
# (`{x:q}`, or shlex.quote where Python builds the text, as launch.py and batch.py do): a results
# folder or an arch file named `a b$(cmd).yaml` is only a path.

# Every benchmark job is one line: `python -m numasweep run-job` (numasweep/running/runjob.py) runs the
# launch line in its own process group under a per-job lock, keeps the kernel's output in the
# log, renames <id>.csv.partial to <id>.csv only after the kernel succeeded and the table
# checks out, copies CSV, provenance and log into archive/ and writes the provenance record.
# `exec` makes the runner the direct child of snakemake, so it ends with snakemake (a parent
# death signal) and onstart's handler below finds it on SIGINT/SIGTERM.
BENCH_SHELL = (
    "exec python -m numasweep run-job --job-id {wildcards.job:q} --launch {params.launch:q}"
    " --grid {params.grid:q} --kernel {input.kernel:q} --topology {input.topology:q}"
    " --csv {output.csv:q} --provenance {output.provenance:q} --log {log:q}"
    f" --retry-disturbed {int(CONFIG['retry_disturbed'])}{{params.repeat}}{{params.setup}}"
    " --bench-facts {params.facts:q}"
)


# A batch job (config batch > 1, numasweep.planning.batch): `python -m numasweep run-batch` runs its
# points one after another as run-job does, each published under its own <id>.csv, .json and
# .log, skipping those already measured; its output is the manifest listing them, written last.
BATCH_SHELL = (
    "exec python -m numasweep run-batch --batch {wildcards.batch:q} --kernel {input.kernel:q}"
    " --topology {input.topology:q} --manifest {output.manifest:q} --log {log:q}{params.points}"
    f" --retry-disturbed {int(CONFIG['retry_disturbed'])}{{params.repeat}}{{params.setup}}"
    " --bench-facts {params.facts:q}"
)


def repeat_options(bench):
    """run-job's options of config repeat_until for `bench` (numasweep/statistics/repeat.py):
    none where the benchmark has no target or max_repeats is 0. A param of the rule, not part of
    its shell: every benchmark's rule, made in one loop (benchmarks.smk), runs the shell string
    of the loop's last pass, so the shell is one string for all of them."""
    until = CONFIG["repeat_until"]
    if not until.get(bench) or not until["max_repeats"]:
        return ""
    return f" --repeat-until {until[bench]:g} --max-repeats {int(until['max_repeats'])}"


def bench_facts(bench):
    """run-job's --bench-facts for `bench`: what its runner needs of the benchmark, so that the job
    imports no benchmark module and nothing beyond Python's standard library on the compute node.
    """
    return json.dumps(
        registry.runner_facts(registry.get(bench)),
        separators=(",", ":"),
        sort_keys=True,
    )


def bench_rule(bench):
    """(outputs, log, params, shell) of a benchmark's rule: one job per point, or per batch."""
    folder = f"{RESULTS_DIR}/{bench}"
    if BATCHES:
        return (
            {"manifest": f"{folder}/{batch.FOLDER}/{{batch}}.json"},
            f"{folder}/{batch.FOLDER}/{{batch}}.log",
            {
                "points": batch_points,
                "repeat": repeat_options(bench),
                "setup": setup_option,
                "facts": bench_facts(bench),
            },
            BATCH_SHELL,
        )
    return (
        {"csv": f"{folder}/{{job}}.csv", "provenance": f"{folder}/{{job}}.json"},
        f"{folder}/{{job}}.log",
        {
            "launch": launch_line(bench),
            "grid": grid_values,
            "repeat": repeat_options(bench),
            "setup": setup_option,
            "facts": bench_facts(bench),
        },
        BENCH_SHELL,
    )


# SIGINT/SIGTERM sent to snakemake alone (`kill PID`, a time limit) must end the running jobs:
# Snakemake's own handling does not (on SIGTERM its scheduler waits for the running jobs to
# finish, on SIGINT its local executor's shutdown waits for them too, and the signal does not
# reach the jobs' shells), so a benchmark would run on for its whole length before its result
# is marked incomplete. This handler first ends each job's runner, which ends its kernel's
# process group and publishes no partial CSV, then passes the signal on to Snakemake's.
_PREVIOUS_HANDLERS = {}


def _end_running_jobs(signum, frame):
    from numasweep.running.runjob import end_runners

    end_runners(os.getpid())
    handler = _PREVIOUS_HANDLERS.get(signum)
    if callable(handler):
        handler(signum, frame)
    elif signum == signal.SIGINT:
        raise KeyboardInterrupt


onstart:
    # Installed here, after snakemake's scheduler has set its own SIGTERM handler.
    for _sig in (signal.SIGINT, signal.SIGTERM):
        _PREVIOUS_HANDLERS[_sig] = signal.getsignal(_sig)
        signal.signal(_sig, _end_running_jobs)
