# Pointer-chase latency: one MPI rank per placed CPU. With the `mpi` resource the SLURM
# plugin runs this shell as is, so srun's --cpu-bind=map_cpu is the only CPU binding.
rule latency:
    input:
        kernel=f"{BIN_DIR}/numa_latency",
        topology=f"{RESULTS_DIR}/topology.json",
        wrapper=WRAPPER,
    output:
        csv=f"{RESULTS_DIR}/latency/{{job}}.csv",
        provenance=f"{RESULTS_DIR}/latency/{{job}}.json",
    log:
        f"{RESULTS_DIR}/latency/{{job}}.log",
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mpi=mpi_launcher,
        tasks=job_tasks,
        bench_slot=1,
        slurm_extra="'--exclusive'",
    params:
        launch=launch_line("latency"),
        grid=grid_values,
    shell:
        BENCH_SHELL
