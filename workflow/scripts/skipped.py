"""Entry point of rule skipped: the benchmarks the plan left out, and why, for the report."""

import json
import sys

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)

from numasweep.core.io import atomic_write_text  # noqa: E402

atomic_write_text(
    snakemake.output[0],  # noqa: F821
    json.dumps(dict(snakemake.params.skipped), indent=2, sort_keys=True) + "\n",  # noqa: F821
)
