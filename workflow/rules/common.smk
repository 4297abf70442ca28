import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")

# The package lives in workflow/; putting it first makes a checkout work without installing it.
sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from numasweep import grid, launch, topology  # noqa: E402
from numasweep.errors import NumasweepError  # noqa: E402

# ------------------------------------------------------------------ configuration
# grid.validate_config names the key path of the first problem in one line; the schema
# check by snakemake then only fills the same defaults into `config`.
try:
    CONFIG = grid.validate_config(config, "config")
except NumasweepError as exc:
    raise WorkflowError(str(exc)) from None
validate(config, "../schemas/config.schema.yaml")

BIN_DIR = "build/bin"
# Jobs call `python -m numasweep ...`: the interpreter running Snakemake has the package, so
# its folder goes first on the PATH the jobs inherit (also inside a SLURM job, where this
# file is read again). Naming it in each rule instead would make a job's command depend on
# how snakemake was started, and rerun every benchmark when that changes.
PYTHON = sys.executable


envvars:
    "PATH",


os.environ["PATH"] = os.pathsep.join(
    [str(Path(PYTHON).parent), os.environ.get("PATH", "")]
)
# For --use-conda: one environment for every rule (a cluster's own MPI is usually better).
CONDA_ENV = "../../environment.yml"
WRAPPER = CONFIG["wrapper"]
LAUNCHER = CONFIG["launcher"]
# Regenerating the report from cached results: no build, topology or benchmark job at all.
FROM_CACHE = CONFIG["results"] is not None


def _cached_system(folder):
    """The system a cached results folder describes: its topology.json, else the folder name."""
    topo = Path(folder) / "topology.json"
    if topo.exists():
        return json.loads(topo.read_text()).get("system") or Path(folder).name
    return Path(folder).name


if FROM_CACHE:
    if not Path(CONFIG["results"]).is_dir():
        raise WorkflowError(
            f"config: results: no folder '{CONFIG['results']}'; give a folder with topology.json "
            "and aggregated <bench>.csv files (e.g. examples/lumi-g)"
        )
    RESULTS_DIR = CONFIG["results"].rstrip("/")
    SYSTEM = CONFIG["system"] or _cached_system(RESULTS_DIR)
    BENCHES = [b for b in grid.BENCHES if Path(RESULTS_DIR, f"{b}.csv").exists()]
    JOBS = {}
    SKIPPED = {}
else:
    # The topology is needed while the DAG is built, so that `snakemake -n -p` prints the
    # real launch lines; the topology rule writes the same thing for the record.
    try:
        TOPOLOGY = (
            topology.detect()
            if CONFIG["arch"] == "auto"
            else topology.load(CONFIG["arch"])
        )
        PLAN = grid.expand(config, TOPOLOGY, "config")
    except NumasweepError as exc:
        raise WorkflowError(str(exc)) from None
    SYSTEM = CONFIG["system"] or TOPOLOGY.system
    RESULTS_DIR = f"results/{SYSTEM}"
    BENCHES = PLAN.benches()
    JOBS = {job.id: job for job in PLAN.jobs}
    SKIPPED = PLAN.skipped

REPORT_DIR = f"report/{SYSTEM}"


wildcard_constraints:
    job=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    bench="|".join(grid.BENCHES),
    kernel="|".join([*grid.KERNELS.values(), "gpu_xfer_hip"]),


# ------------------------------------------------------------------ input functions


def job_of(wildcards):
    try:
        return JOBS[wildcards.job]
    except KeyError:
        raise WorkflowError(
            f"no job '{wildcards.job}' in the configured sweep; "
            "`python -m numasweep grid --config FILE` lists the ids"
        ) from None


def job_csvs(bench):
    return [f"{RESULTS_DIR}/{bench}/{job_id}.csv" for job_id in job_ids(bench)]


def job_ids(bench):
    return [job.id for job in JOBS.values() if job.bench == bench]


def aggregate_inputs(wildcards):
    csvs = job_csvs(wildcards.bench)
    return {"csv": csvs, "provenance": [c[: -len(".csv")] + ".json" for c in csvs]}


def job_results():
    """Every job's CSV and provenance record: targets themselves, so that a deleted one is
    measured again even when the aggregated table is still newer than the rest."""
    return [
        f"{RESULTS_DIR}/{job.bench}/{job.id}.{ext}"
        for job in JOBS.values()
        for ext in ("csv", "json")
    ]


def bench_tables():
    return [f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES]


def common_sources():
    """The shared C module every kernel links, and the Makefile that builds it."""
    return sorted(str(p) for p in Path("kernels/common").glob("*.[ch]")) + [
        "kernels/Makefile"
    ]


def kernel_sources(wildcards):
    """A kernel's own sources (the shared module comes in through its library)."""
    if wildcards.kernel.startswith("gpu_xfer"):
        return sorted(str(p) for p in Path("kernels/gpu").glob("*") if p.is_file())
    return [f"kernels/{wildcards.kernel}.c"]


def launch_argv(job, csv):
    """The command that runs one job: MPI launcher + wrapper for ranks, numactl otherwise."""
    kernel_argv = [f"{BIN_DIR}/{job.kernel}", *job.kernel_args, f"--csv={csv}"]
    if job.bench == "latency" and job.tasks > 1:
        if LAUNCHER == "srun":
            return launch.srun_argv(
                job.placements, kernel_argv, wrapper=WRAPPER, mpi=CONFIG["srun_mpi"]
            )
        return launch.mpirun_argv(job.placements, kernel_argv, wrapper=WRAPPER)
    if job.bench == "latency":
        # One rank needs no launcher (an MPI singleton), and no srun inside the job step.
        only = job.placements[0]
        env, argv = launch.direct_argv(
            [only.cpu], only, kernel_argv, 1, wrapper=WRAPPER
        )
    else:
        env, argv = launch.direct_argv(
            list(job.cpus), job.memory, kernel_argv, job.threads, wrapper=WRAPPER
        )
    prefix = ["env", *(f"{k}={v}" for k, v in sorted(env.items()))] if env else []
    return prefix + list(argv)


def launch_line(bench):
    def line(wildcards):
        csv = f"{RESULTS_DIR}/{bench}/{wildcards.job}.csv{PARTIAL}"
        return shlex.join(launch_argv(job_of(wildcards), csv))

    return line


def grid_values(wildcards):
    return json.dumps(job_of(wildcards).grid, sort_keys=True, separators=(",", ":"))


def job_tasks(wildcards):
    return job_of(wildcards).tasks


def job_gpus(wildcards):
    return job_of(wildcards).gpus


def job_threads(wildcards):
    return job_of(wildcards).threads


def mpi_launcher(wildcards):
    # Any `mpi` resource makes the SLURM plugin run the shell as is, in the batch step that
    # owns the whole (exclusive) node; a non-empty one also marks an MPI job, which the
    # plugin refuses with a single task. One-rank jobs run without a launcher: empty.
    return LAUNCHER if job_of(wildcards).tasks > 1 else ""


# Kernels rewrite their CSV after each finished step (temporary name + rename), so a killed
# job would leave a valid but short table: they write to <id>.csv.partial, and only a job
# whose kernel succeeded renames it to <id>.csv.
PARTIAL = ".partial"

# Every benchmark job: the launch line as is (so `snakemake -n -p` shows it), the kernel's
# output in the job's log, then the provenance record once the kernel has succeeded.
# A failed kernel's last lines go to stderr so its one-line error shows in snakemake's own
# output, not only in the log. Every finished CSV is also hard-linked into archive/: Snakemake
# deletes a job's outputs before rerunning it, and a rerun that then fails must not cost the
# result the previous run had written.
BENCH_SHELL = (
    "start=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\n"
    "{params.launch} > {log} 2>&1 || {{ status=$?; tail -n 5 {log} >&2; exit $status; }}\n"
    "mv {output.csv}.partial {output.csv}\n"
    "archive=$(dirname {output.csv})/archive\n"
    "mkdir -p $archive && ln -f {output.csv} $archive/{wildcards.job}.$(date -u +%Y%m%dT%H%M%SZ).csv\n"
    "python -m numasweep.provenance --job-id {wildcards.job} --start $start"
    " --launch {params.launch:q} --grid {params.grid:q} --kernel {input.kernel}"
    " --topology {input.topology} --csv {output.csv} -o {output.provenance} 2>> {log}"
)
