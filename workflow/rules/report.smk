# Analysis, figures and the Markdown report: pure Python on the aggregated CSVs, so they run
# anywhere (no numactl, MPI, SLURM or compiler) and `snakemake report --config results=DIR`
# re-renders a report from cached results alone.
#
# Needs from common.smk: RESULTS_DIR, SYSTEM, BENCHES (benches whose <RESULTS_DIR>/<bench>.csv
# exist or will be produced), REPORT_DIR, REPORT_SECTIONS (Markdown sections other rules write
# for the report, [] for none) and CONDA_ENV (used only with --sdm conda; the rules
# need nothing beyond the Python packages). Jobs run `python -m numasweep`: common.smk puts
# the interpreter that has numasweep first on the PATH.

# Report categories and the label naming each figure's variant, per benchmark.
FIGURE_CATEGORIES = {
    "latency": ("Memory latency", "mode"),
    "bandwidth": ("Memory bandwidth", "kernel"),
    "copy": ("Node-to-node copy", "threads on"),
    "gpu_xfer": ("Host-device transfers", "host memory"),
    "loaded_latency": ("Loaded latency", "chase and memory"),
    "c2c": ("Core-to-core latency", "line home"),
    "mix_bandwidth": ("Peak and mixed bandwidth", "panels"),
}


localrules:
    analyse,
    figures,
    report_md,
    report,


rule analyse:
    input:
        topology=f"{RESULTS_DIR}/topology.json",
        tables=[f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES],
    output:
        f"{REPORT_DIR}/findings.json",
    log:
        f"logs/{SYSTEM}/report/analyse.log",
    conda:
        CONDA_ENV
    params:
        results=results_folder,
    shell:
        "python -m numasweep analyse --results {params.results:q} -o {output:q} > {log:q} 2>&1"


rule figures:
    input:
        topology=f"{RESULTS_DIR}/topology.json",
        tables=[f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES],
    output:
        # One report-registered folder per benchmark, figures named <kind>--<variant>.png.
        folders=[
            report(
                directory(f"{REPORT_DIR}/figures/{bench}"),
                patterns=["{kind}--{variant}.png"],
                caption=f"../report/{bench}.rst",
                category=FIGURE_CATEGORIES[bench][0],
                subcategory="{kind}",
                labels={"figure": "{kind}", FIGURE_CATEGORIES[bench][1]: "{variant}"},
            )
            for bench in BENCHES
        ],
    log:
        f"logs/{SYSTEM}/report/figures.log",
    conda:
        CONDA_ENV
    params:
        results=results_folder,
        # The parent of the per-benchmark folders the rule outputs.
        figures=lambda wildcards, output: os.path.dirname(output.folders[0]),
    shell:
        "python -m numasweep figures --results {params.results:q} -o {params.figures:q} > {log:q} 2>&1"


rule report_md:
    input:
        topology=f"{RESULTS_DIR}/topology.json",
        tables=[f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES],
        findings=f"{REPORT_DIR}/findings.json",
        figures=rules.figures.output,
        sections=REPORT_SECTIONS,
    output:
        f"{REPORT_DIR}/experimentation.md",
    log:
        f"logs/{SYSTEM}/report/report_md.log",
    conda:
        CONDA_ENV
    params:
        results=results_folder,
        # The parent of the per-benchmark figure folders.
        figures=lambda wildcards, input: os.path.dirname(input.figures[0]),
        sections=" ".join(f"--section {shlex.quote(s)}" for s in REPORT_SECTIONS),
    shell:
        "python -m numasweep report --results {params.results:q} --findings {input.findings:q}"
        " --figures {params.figures:q} {params.sections} -o {output:q} > {log:q} 2>&1"


rule report:
    input:
        f"{REPORT_DIR}/experimentation.md",
