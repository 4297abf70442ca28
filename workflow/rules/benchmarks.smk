# One rule per benchmark of the registry (numasweep.benches) from one definition: they differ
# only in the kernel, the wrapper input and their SLURM resources. Each job's shell is the one
# line BENCH_SHELL (common.smk): `python -m numasweep run-job` with the launch line as is, so
# `snakemake -n -p` shows it.
#
# SLURM resources: a non-empty `mpi` (an MPI benchmark with more than one rank) makes the plugin run
# the shell as is, so srun's --cpu-bind=map_cpu is the only CPU binding; an empty `mpi` makes
# it run the shell in the batch step, which owns the whole exclusive node, instead of an
# `srun -n1 --cpu-bind=q` step confined to the first CPUs: numactl can then bind to the CPUs
# the plan names (bench_resources, common.smk). In a job group every MPI job gets the empty
# `mpi` (mpi_launcher, common.smk): Snakemake requires one value for the whole group.

for _spec in registry.all_benches().values():
    _bench, _resources = _spec.name, bench_resources(_spec)
    # One job per grid point, or per batch of points (config batch > 1; bench_rule, common.smk).
    _outputs, _log, _params, _shell = bench_rule(_bench)

    rule:
        name:
            _bench
        input:
            kernel=job_kernel,  # gpu_xfer (CUDA) or gpu_xfer_hip (AMD GPUs)
            topology=f"{RESULTS_DIR}/topology.json",
            wrapper=WRAPPER,
            setups=job_setups,  # what ran once before its points (grid.Setup), e.g. a calibration
        output:
            **_outputs,
        log:
            _log,
        group:
            job_group
        conda:
            "../envs/kernels.yaml"
        envmodules:
            *CONFIG["envmodules"]["run"],
        threads: 1 if _spec.launch.by == "mpi" else job_threads
        resources:
            **_resources,
            bench_slot=1,
            # one node, and its memory (job_memory_mb, common.smk)
            nodes=1,
            mem_mb=job_memory_mb,
            slurm_extra=slurm_extra,
        params:
            **_params,
        shell:
            _shell


# config group_compared: one job per comparison (GROUPS, common.smk), in the comparison's group
# and depending on its points, which makes them one group job: one sbatch job, one node, the
# points one after another. Its output lists the points; it runs in the group's environment.
if GROUPS:

    rule compared:
        input:
            compared_points,
        output:
            group_list("{group}"),
        log:
            f"logs/{SYSTEM}/groups/{{group}}.log",
        group:
            "{group}"
        conda:
            "../envs/kernels.yaml"
        envmodules:
            *CONFIG["envmodules"]["run"],
        resources:
            # A group's jobs must agree on every string resource: its points' values.
            mpi="",
            nodes=1,
            mem_mb=job_memory_mb,
            slurm_extra=compared_slurm_extra,
            runtime=1,
        shell:
            "printf '%s\\n' {input:q} > {output:q} 2> {log:q}"
