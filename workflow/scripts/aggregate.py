"""Entry point of rule aggregate: merge one benchmark's job CSVs (numasweep.results.aggregate), named
as inputs or, with batches (config batch > 1), listed by the batches' manifests."""

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)

from numasweep.results.aggregate import aggregate, write  # noqa: E402
from numasweep.planning.batch import point_csvs  # noqa: E402
from numasweep.core.errors import NumasweepError  # noqa: E402

manifests = snakemake.input.get("manifests")  # noqa: F821
keep_going = snakemake.params.keep_going  # noqa: F821
try:
    csvs = point_csvs(manifests, check=not keep_going) if manifests else [Path(p) for p in snakemake.input.csv]  # noqa: F821
    table, problems = aggregate(csvs, snakemake.wildcards.bench, keep_going=keep_going)  # noqa: F821
    write(table, problems, Path(snakemake.output[0]))  # noqa: F821 (a full disk is one line too)
except NumasweepError as exc:
    print(f"numasweep: error: {exc}", file=sys.stderr)
    sys.exit(2)
for problem in problems:
    print(f"skipped: {problem}", file=sys.stderr)
