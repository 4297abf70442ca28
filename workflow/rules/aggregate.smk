# One tidy table per benchmark from every job's CSV and provenance record.
rule aggregate:
    input:
        unpack(aggregate_inputs),
    output:
        f"{RESULTS_DIR}/{{bench}}.csv",
    log:
        f"logs/{SYSTEM}/aggregate-{{bench}}.log",
    conda:
        "../envs/report.yaml"
    params:
        keep_going=CONFIG["aggregate"]["keep_going"],
    script:
        "../scripts/aggregate.py"


# Which benchmarks the plan left out and why, for the report ({} when none).
rule skipped:
    output:
        f"{RESULTS_DIR}/skipped.json",
    log:
        f"logs/{SYSTEM}/skipped.log",
    conda:
        "../envs/report.yaml"
    params:
        skipped=SKIPPED,
    script:
        "../scripts/skipped.py"


# What each sweep says it measures (config `measures`), for the report ([] when none says).
rule measures:
    output:
        f"{RESULTS_DIR}/measures.json",
    log:
        f"logs/{SYSTEM}/measures.log",
    conda:
        "../envs/report.yaml"
    params:
        measures=json.dumps(MEASURES, indent=2),
    shell:
        "printf '%s\\n' {params.measures:q} > {output:q} 2> {log:q}"
