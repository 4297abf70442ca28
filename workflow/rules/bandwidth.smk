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
        slurm_extra="'--exclusive'",
    params:
        launch=launch_line("bandwidth"),
        grid=grid_values,
    shell:
        BENCH_SHELL
