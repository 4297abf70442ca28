# The shared module first, then one job per kernel binary with that kernel's own source as
# input: changing one kernel rebuilds it and reruns its benchmarks only; a change to
# kernels/common rebuilds the library and so every kernel. Builds take the bench slot too:
# a compile next to a running benchmark would disturb it. From a login node that is no node of
# the SLURM cluster (LOGIN_NODE, common.smk) they are one job (group "build") on a compute node,
# the first fleet node in fleet mode, so -march=native is the CPU the kernels run on.
BUILD_GROUP = "build" if LOGIN_NODE else None
BUILD_EXTRA = f"'--nodelist={FLEET_NODES[0]}'" if LOGIN_NODE and FLEET_NODES else ""


rule build_common:
    input:
        common_sources(),
    output:
        "build/lib/libnumasweep_common.a",
    log:
        "logs/build/common.log",
    group:
        BUILD_GROUP
    conda:
        "../envs/kernels.yaml"
    envmodules:
        *CONFIG["envmodules"]["build"],
    resources:
        bench_slot=1,
        nodes=1,
        slurm_extra=BUILD_EXTRA,
    params:
        cflags=CONFIG["build"]["kernel_cflags"],
    shell:
        'make -C kernels "$PWD"/{output:q} KERNEL_CFLAGS={params.cflags:q} > {log:q} 2>&1'


rule build:
    input:
        kernel_sources,
        "build/lib/libnumasweep_common.a",
    output:
        f"{BIN_DIR}/{{kernel}}",
    log:
        "logs/build/{kernel}.log",
    group:
        BUILD_GROUP
    conda:
        "../envs/kernels.yaml"
    envmodules:
        *CONFIG["envmodules"]["build"],
    resources:
        bench_slot=1,
        nodes=1,
        slurm_extra=BUILD_EXTRA,
    params:
        cflags=CONFIG["build"]["kernel_cflags"],
    shell:
        'make -C kernels "$PWD"/{output:q} KERNEL_CFLAGS={params.cflags:q} > {log:q} 2>&1'
