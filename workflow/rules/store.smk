# The results store and comparisons (numasweep.results.store, numasweep.reporting.compare).
#
# Needs from common.smk: RESULTS_DIR, REPORT_DIR, SYSTEM, BENCHES, STORE (the SQLite file),
# CONFIG and FROM_CACHE. The store itself is no output of any rule (snakemake deletes
# outputs before a job runs): `stored.json` is the receipt of this run's record.


if not FROM_CACHE:

    # Every finished run: the aggregated tables, keyed by their jobs' provenance.
    rule store:
        input:
            topology=f"{RESULTS_DIR}/topology.json",
            tables=[f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES],
        output:
            f"{RESULTS_DIR}/stored.json",
        log:
            f"logs/{SYSTEM}/store.log",
        conda:
            "../envs/report.yaml"
        params:
            results=results_folder,
            store=STORE,
            campaign=CAMPAIGN,
        shell:
            "python -m numasweep store record --results {params.results:q}"
            " --store {params.store:q} --campaign {params.campaign:q} -o {output:q} > {log:q} 2>&1"


localrules:
    comparison,
    compare,


# The current results against the config's references and compare.against (`previous` or a
# run key): report/<system>/comparison.md, a section of the report. With neither configured (a
# bare `snakemake compare`), against the previous run of the same campaign. Its own lines (each
# failing check, the first run of a campaign, a comparison across campaigns) are shown on the
# console too. A failing check fails the gate below, not this rule: the report shows it.
rule comparison:
    input:
        topology=f"{RESULTS_DIR}/topology.json",
        tables=[f"{RESULTS_DIR}/{bench}.csv" for bench in BENCHES],
        # Recorded first, so that `previous` is the run before this one.
        stored=[] if FROM_CACHE else f"{RESULTS_DIR}/stored.json",
    output:
        md=f"{REPORT_DIR}/comparison.md",
        json=f"{REPORT_DIR}/comparison.json",
    log:
        f"logs/{SYSTEM}/report/compare.log",
    conda:
        "../envs/report.yaml"
    params:
        results=results_folder,
        store=STORE,
        campaign=CAMPAIGN,
        settings=json.dumps(
            {"references": CONFIG["references"], "compare": CONFIG["compare"]}
        ),
    shell:
        # exit 1 (a check failed) and 3 (nothing compared) are verdicts, which the gate says
        "rc=0; python -m numasweep compare --results {params.results:q}"
        " --store {params.store:q} --campaign {params.campaign:q} --settings {params.settings:q} -o {output.md:q}"
        " --json {output.json:q} > {log:q} 2>&1 || rc=$?; grep '^numasweep: ' {log:q} | grep -v '^numasweep: compare: ' >&2 || true;"
        " [ $rc -eq 0 ] || [ $rc -eq 1 ] || [ $rc -eq 3 ]"


# `snakemake compare`: the comparison as a gate, for a CI job or a nightly one. It fails (snakemake
# exits 1) where a check failed, each failing check one line above; it passes where every check
# passed, and where there was nothing to compare with (a campaign's first run, said in one line).
rule compare:
    input:
        f"{REPORT_DIR}/comparison.json",
    log:
        out=f"logs/{SYSTEM}/report/compare-gate.out",
        err=f"logs/{SYSTEM}/report/compare-gate.log",
    conda:
        "../envs/report.yaml"
    shell:
        # its verdict kept in the logs and shown on the console, the failing checks on stderr
        "rc=0; python -m numasweep compare --gate {input:q} > {log.out:q} 2> {log.err:q} || rc=$?;"
        " cat {log.out:q}; cat {log.err:q} >&2; [ $rc -eq 0 ] || [ $rc -eq 3 ]"
