# The topology every launch line was computed from, kept with the results (its digest goes
# into each job's provenance, and the report reads its caches and CPU lists).
rule topology:
    input:
        [] if ARCH == "auto" else [ARCH],
    output:
        f"{RESULTS_DIR}/topology.json",
    log:
        f"logs/{SYSTEM}/topology.log",
    conda:
        "../envs/report.yaml"
    params:
        # one word a list item: `:q` quotes each (an arch path may hold spaces or `$(...)`);
        # an arch file (or the compute node's detected one, ARCH in common.smk) is set against the
        # node the job runs on (--here: one line where it names CPUs or NUMA nodes the node lacks)
        source=(["--detect"] if ARCH == "auto" else ["--arch", ARCH, "--here"]),
    shell:
        "python -m numasweep topology {params.source:q} -o {output:q} > {log:q} 2>&1"


# hwloc's own view of the machine measured (`lstopo --of xml`), taken where the benchmarks run:
# the base the measured matrices are written into as hwloc memory attributes (rule hwloc_export).
# lstopo is the report environment's under --sdm conda (envs/report.yaml has hwloc), else the system's.
rule hwloc_topology:
    output:
        f"{RESULTS_DIR}/hwloc.xml",
    log:
        f"logs/{SYSTEM}/hwloc_topology.log",
    conda:
        "../envs/report.yaml"
    shell:
        "python -m numasweep hwloc-export --lstopo -o {output:q} > {log:q} 2>&1"
