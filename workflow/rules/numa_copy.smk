# Node-to-node copy bandwidth: the kernel places source and destination itself (libnuma),
# the launch line only pins its threads.
rule copy:
    input:
        kernel=f"{BIN_DIR}/numa_copy",
        topology=f"{RESULTS_DIR}/topology.json",
    output:
        csv=f"{RESULTS_DIR}/copy/{{job}}.csv",
        provenance=f"{RESULTS_DIR}/copy/{{job}}.json",
    log:
        f"{RESULTS_DIR}/copy/{{job}}.log",
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
        launch=launch_line("copy"),
        grid=grid_values,
    shell:
        BENCH_SHELL
