# STREAM-style bandwidth: OpenMP threads pinned to the configured CPUs, memory under the
# configured policy; one job at a time on a node (bench_slot locally, --exclusive on SLURM).
rule bandwidth:
    input:
        kernel=f"{BIN_DIR}/numa_bandwidth",
        topology=f"{RESULTS_DIR}/topology.json",
    output:
        csv=f"{RESULTS_DIR}/bandwidth/{{job}}.csv",
        provenance=f"{RESULTS_DIR}/bandwidth/{{job}}.json",
    log:
        f"{RESULTS_DIR}/bandwidth/{{job}}.log",
    conda:
        CONDA_ENV
    threads: job_threads
    resources:
        bench_slot=1,
        # An empty `mpi` makes the SLURM plugin run this shell in the batch step, which owns
        # the whole exclusive node, instead of an `srun -n1 --cpu-bind=q` step confined to
        # the first CPUs: numactl can then bind to the CPUs the plan names.
        mpi="",
        slurm_extra="'--exclusive'",
    params:
        launch=launch_line("bandwidth"),
        grid=grid_values,
    shell:
        BENCH_SHELL
