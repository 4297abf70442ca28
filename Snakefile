# numasweep: NUMA memory benchmark campaigns, from sweep to report.
#   snakemake -n -p --profile profiles/local        what would run, with every launch line
#   snakemake --profile profiles/local              the default local sweep and its report
#   snakemake --profile profiles/slurm --configfile config/campaigns/lumi-g.yaml
#   snakemake report --config results=examples/lumi-g   the report from cached results only


configfile: "config/config.yaml"


# The workflow's description on the front page of `snakemake --report`.
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


if not FROM_CACHE:

    include: "workflow/rules/build.smk"
    include: "workflow/rules/topology.smk"
    include: "workflow/rules/benchmarks.smk"
    include: "workflow/rules/aggregate.smk"

    # Light jobs, and builds from the sources where snakemake runs (the login node).
    localrules:
        build_common,
        build,
        aggregate,
        skipped,
        store,


include: "workflow/rules/store.smk"
include: "workflow/rules/fleet.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        job_results(),
        bench_tables(),
        [] if FROM_CACHE else f"{RESULTS_DIR}/skipped.json",
        [] if FROM_CACHE else f"{RESULTS_DIR}/stored.json",
        f"{REPORT_DIR}/experimentation.md",


# Only the measurements: every benchmark job and the aggregated tables, no report.
rule sweep:
    input:
        job_results(),
        bench_tables(),
        [] if FROM_CACHE else f"{RESULTS_DIR}/skipped.json",


# Only the kernels.
rule kernels:
    input:
        sorted(
            {
                f"{BIN_DIR}/{registry.get(bench).kernel}"
                for bench in BENCHES
                if bench != "gpu_xfer"
            }
            | {f"{BIN_DIR}/{job.kernel}" for job in JOBS.values()}
        ),
