# Each Setup (grid.Setup): a step run once per results folder and kernel build before the
# points that name it (bandwidth's calibration of its code shapes), as two rules: `<id>_run`
# measures (its launch line under the host lock, in the kernels' environment, a SLURM job where
# the benchmarks are), `<id>` decides from the table (its command, in the report's environment, on
# this machine) and writes the record and the file the points read. The points depend on those, so
# a rebuild or a changed setting (the launch line, or the `again` value: both params) measures
# again, then the points. Shells are one string for all: what differs is in params (functions
# with default arguments, so that each rule keeps its own Setup).
for _setup in SETUPS.values():

    rule:
        name:
            f"{_setup.id}_run"
        input:
            kernel=f"{BIN_DIR}/{_setup.job.kernel}",
            topology=f"{RESULTS_DIR}/topology.json",
            wrapper=WRAPPER,
        output:
            f"{RESULTS_DIR}/{_setup.table}",
        log:
            f"{RESULTS_DIR}/{_setup.id}.log",
        conda:
            "../envs/kernels.yaml"
        envmodules:
            *CONFIG["envmodules"]["run"],
        threads: _setup.job.threads
        resources:
            mpi="",
            bench_slot=1,
            nodes=1,
            mem_mb=job_memory_mb,
            # a node alone; in fleet mode its node (each fleet node its own: fleet.on_node)
            slurm_extra=sbatch_options(_setup.job),
        params:
            launch=lambda wildcards, s=_setup: setup_line(s),
            again=_setup.again,
        shell:
            "exec python -m numasweep run-setup --launch {params.launch:q} --table {output:q} --log {log:q}"

    rule:
        name:
            _setup.id
        input:
            table=f"{RESULTS_DIR}/{_setup.table}",
            kernel=f"{BIN_DIR}/{_setup.job.kernel}",
        output:
            f"{RESULTS_DIR}/{_setup.record}",
            f"{RESULTS_DIR}/{_setup.reads}",
        log:
            f"logs/{SYSTEM}/{_setup.id}.log",
        localrule: True
        conda:
            "../envs/report.yaml"
        params:
            command=_setup.command,
            launch=lambda wildcards, s=_setup: setup_line(s),
        shell:
            "python -m numasweep {params.command} --table {input.table:q} --launch {params.launch:q}"
            " --kernel {input.kernel:q} --outputs {output:q} 2> {log:q}"
