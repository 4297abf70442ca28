# The shared module first, then one job per kernel binary with that kernel's own source as
# input: changing one kernel rebuilds it and reruns its benchmarks only; a change to
# kernels/common rebuilds the library and so every kernel. Builds take the bench slot too:
# a compile next to a running benchmark would disturb it.
rule build_common:
    input:
        common_sources(),
    output:
        "build/lib/libnumasweep_common.a",
    log:
        "logs/build/common.log",
    conda:
        "../envs/kernels.yaml"
    resources:
        bench_slot=1,
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
    conda:
        "../envs/kernels.yaml"
    resources:
        bench_slot=1,
    params:
        cflags=CONFIG["build"]["kernel_cflags"],
    shell:
        'make -C kernels "$PWD"/{output:q} KERNEL_CFLAGS={params.cflags:q} > {log:q} 2>&1'
