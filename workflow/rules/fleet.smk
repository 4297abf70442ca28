# Fleet mode (numasweep.planning.fleet): the nodes of a fleet campaign ranked, those out of line flagged,
# with a figure: report/<system>/fleet.md, a section of the report.
#
# Needs from common.smk: RESULTS_DIR, REPORT_DIR, SYSTEM, BENCHES and CONFIG.


localrules:
    fleet,


rule fleet:
    input:
        topology=f"{RESULTS_DIR}/topology.json",
        tables=[f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES],
    output:
        md=f"{REPORT_DIR}/fleet.md",
        json=f"{REPORT_DIR}/fleet.json",
        figure=report(
            f"{REPORT_DIR}/figures/fleet/fleet_nodes--all.png",
            caption="../report/fleet.rst",
            category="Fleet",
        ),
    log:
        f"logs/{SYSTEM}/report/fleet.log",
    conda:
        "../envs/report.yaml"
    params:
        results=results_folder,
        # report/<system>/figures: the parent of the figure's own folder.
        figures=lambda wildcards, output: os.path.dirname(
            os.path.dirname(output.figure)
        ),
        tolerance=CONFIG["fleet"]["tolerance"],
    shell:
        "python -m numasweep fleet --results {params.results:q} --figures {params.figures:q}"
        " --tolerance {params.tolerance:q} -o {output.md:q} --json {output.json:q} > {log:q} 2>&1"
