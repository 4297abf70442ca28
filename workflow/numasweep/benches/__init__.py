"""The benchmarks, one module or package each, in the order the report presents them (`MODULES`).
A small benchmark is one module in sections (grid, findings, figures and tables, its record
last); one that outgrows a module is a package of those parts as files (`plan`, `tables`,
`findings`, `figures`, `report`, and `quality` where it checks its own runs), its record in
`__init__.py`.

Everything particular to a benchmark is in its module, behind one record (`registry.Bench`): its
config section's grid and plan-time checks, how it is launched, what names a series, its
findings, figures, report tables, comparison metrics and data-quality checks. Each module
registers its record when it is imported; `numasweep.core.registry` imports them, in this
order, the first time it is asked, and the floors below find them through it and never name one.

Adding a kernel: its C source under kernels/ (built by the Makefile's pattern rule), a module
here (a `Bench` registered at import) and its name in `MODULES`, its config section in
workflow/schemas/config.schema.yaml, its page in docs/benchmarks/ (its columns among it), and its
tests (its file in tests/benches/ and test files of its own; docs/ARCHITECTURE.md). A benchmark
kept outside this package is named by the environment variable NUMASWEEP_BENCHES instead of
MODULES (`numasweep.core.registry`).
"""

MODULES = ("latency", "bandwidth", "copy", "gpu_xfer", "loaded_latency", "c2c", "mix_bandwidth", "migrate")
