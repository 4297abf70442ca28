# Host-device transfers. Planned only where the topology lists GPUs (or gpu_xfer.force);
# otherwise the reason goes to skipped.json for the report.
rule gpu_xfer:
    input:
        kernel=f"{BIN_DIR}/gpu_xfer",
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
        slurm_extra="'--exclusive'",
    params:
        launch=launch_line("gpu_xfer"),
        grid=grid_values,
    shell:
        BENCH_SHELL
