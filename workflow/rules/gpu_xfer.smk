# Host-device transfers. Planned only where the topology lists GPUs (or gpu_xfer.force);
# otherwise the reason goes to skipped.json for the report.
rule gpu_xfer:
    input:
        kernel=lambda w: f"{BIN_DIR}/{job_of(w).kernel}",  # gpu_xfer (CUDA) or gpu_xfer_hip (AMD)
        topology=f"{RESULTS_DIR}/topology.json",
    output:
        csv=f"{RESULTS_DIR}/gpu_xfer/{{job}}.csv",
        provenance=f"{RESULTS_DIR}/gpu_xfer/{{job}}.json",
    log:
        f"{RESULTS_DIR}/gpu_xfer/{{job}}.log",
    conda:
        CONDA_ENV
    threads: job_threads
    resources:
        bench_slot=1,
        gpu=job_gpus,
        # An empty `mpi` makes the SLURM plugin run this shell in the batch step, which owns
        # the whole exclusive node, instead of an `srun -n1 --cpu-bind=q` step confined to
        # the first CPUs: numactl can then bind to the CPUs the plan names.
        mpi="",
        slurm_extra="'--exclusive'",
    params:
        launch=launch_line("gpu_xfer"),
        grid=grid_values,
    shell:
        BENCH_SHELL
