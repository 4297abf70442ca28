# Analysis, figures and the Markdown report: pure Python on the aggregated CSVs, so they run
# anywhere (no numactl, MPI, SLURM or compiler) and `snakemake report --config results=DIR`
# re-renders a report from cached results alone.
#
# Needs from common.smk: numasweep.core.registry as `registry` (each figure's category,
# variant label and caption come from its benchmark's entry), RESULTS_DIR, SYSTEM, BENCHES
# (benches whose <RESULTS_DIR>/<bench>.csv exist or will be produced), REPORT_DIR,
# and REPORT_SECTIONS (Markdown sections other rules write for the report, [] for none);
# HWLOC_BASE (the hwloc XML of the machine measured, for hwloc_export) and FROM_CACHE (whether
# the results are cached: then no rule takes that XML, and the folder must hold it).
# With --sdm conda the rules run in workflow/envs/report.yaml.
# Jobs run `python -m numasweep`: common.smk's shell prefix puts the package on their
# PYTHONPATH and the interpreter running Snakemake first on their PATH (last under --sdm conda).


localrules:
    analyse,
    figures,
    report_md,
    report,
    hwloc_export,


rule analyse:
    input:
        topology=f"{RESULTS_DIR}/topology.json",
        tables=[f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES],
    output:
        f"{REPORT_DIR}/findings.json",
    log:
        f"logs/{SYSTEM}/report/analyse.log",
    conda:
        "../envs/report.yaml"
    params:
        results=results_folder,
        conclude=" --conclude-disturbed" if CONFIG["conclude_disturbed"] else "",
    shell:
        "python -m numasweep analyse --results {params.results:q} -o {output:q}{params.conclude} > {log:q} 2>&1"


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
                caption="../report/figure.rst",
                category=registry.get(bench).presentation.category,
                subcategory="{kind}",
                labels={
                    "figure": "{kind}",
                    registry.get(bench).presentation.variant: "{variant}",
                },
            )
            for bench in BENCHES
        ],
    log:
        f"logs/{SYSTEM}/report/figures.log",
    conda:
        "../envs/report.yaml"
    params:
        results=results_folder,
        # The parent of the per-benchmark folders the rule outputs.
        figures=lambda wildcards, output: os.path.dirname(output.folders[0]),
        # read by figure.rst: one caption sentence per figure kind
        captions=registry.captions(),
        conclude=" --conclude-disturbed" if CONFIG["conclude_disturbed"] else "",
    shell:
        "python -m numasweep figures --results {params.results:q} -o {params.figures:q}{params.conclude}"
        " > {log:q} 2>&1"


rule report_md:
    input:
        topology=f"{RESULTS_DIR}/topology.json",
        tables=[f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES],
        findings=f"{REPORT_DIR}/findings.json",
        figures=rules.figures.output,
        sections=REPORT_SECTIONS,
        # the benchmarks the plan left out, each a "not run" line (a cached folder's, if it has one)
        skipped=[] if FROM_CACHE else f"{RESULTS_DIR}/skipped.json",
        measures=MEASURES_FILE,
    output:
        md=f"{REPORT_DIR}/experimentation.md",
        # The same report as one page, figures embedded; in `snakemake --report` as its own entry.
        html=report(
            f"{REPORT_DIR}/experimentation.html",
            caption="../report/experimentation.rst",
            category="Report",
        ),
    log:
        f"logs/{SYSTEM}/report/report_md.log",
    conda:
        "../envs/report.yaml"
    params:
        results=results_folder,
        # The parent of the per-benchmark figure folders.
        figures=lambda wildcards, input: os.path.dirname(input.figures[0]),
        sections=" ".join(f"--section {shlex.quote(s)}" for s in REPORT_SECTIONS),
        conclude=" --conclude-disturbed" if CONFIG["conclude_disturbed"] else "",
    shell:
        "python -m numasweep report --results {params.results:q} --findings {input.findings:q}"
        " --figures {params.figures:q} {params.sections} -o {output.md:q} --html {output.html:q}"
        "{params.conclude} --refused-ok > {log:q} 2>&1"


rule report:
    input:
        f"{REPORT_DIR}/experimentation.md",


# The measured latency and bandwidth matrices as hwloc memory attributes, in hwloc's XML of the
# machine measured (rule hwloc_topology, or the hwloc.xml a cached results folder keeps):
# `lstopo --input FILE --memattrs` prints them, HWLOC_XMLFILE=FILE hands them to hwloc-aware
# runtimes (docs/firmware.md).
rule hwloc_export:
    input:
        base=[] if FROM_CACHE and not Path(HWLOC_BASE).exists() else HWLOC_BASE,
        topology=f"{RESULTS_DIR}/topology.json",
        tables=[
            f"{RESULTS_DIR}/{bench}.csv"
            for bench in BENCHES
            if registry.get(bench).tables.matrix
        ],
    output:
        f"{REPORT_DIR}/measured-hwloc.xml",
    log:
        f"logs/{SYSTEM}/report/hwloc_export.log",
    conda:
        "../envs/report.yaml"
    params:
        results=results_folder,
        # a function, not the path: lint takes a path string in params for a prefix
        base=lambda wildcards: HWLOC_BASE,
        force=" --force" if CONFIG["conclude_disturbed"] else "",
    shell:
        "python -m numasweep hwloc-export {params.results:q} --base {params.base:q} -o {output:q}{params.force}"
        " > {log:q} 2>&1"
