"""The benchmarks, one module each, in the order the report presents them.

Everything particular to a benchmark is in its module, behind one record (`registry.Bench`): its
config section's grid and plan-time checks, how it is launched, what names a series, its
findings, figures, report tables, comparison metrics and data-quality checks. Importing this
package registers them all; the floors below find them through `numasweep.core.registry` and
never name one.

Adding a kernel: its C source under kernels/ and one Makefile line, a module here (a `Bench`
registered at import, added to the list below), its config section in
workflow/schemas/config.schema.yaml, its columns in docs/INTERFACES.md, and its tests.
"""

from numasweep.benches import (  # noqa: F401  (each registers itself, in this order)
    latency,
    bandwidth,
    copy,
    gpu_xfer,
    loaded_latency,
    c2c,
    mix_bandwidth,
)
