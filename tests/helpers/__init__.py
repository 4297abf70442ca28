"""What tests in several folders share, importable as `helpers.*` (pyproject.toml puts tests/ on
the path): `workflow`, a copy of the repository and snakemake run in it; `kernels`, running the
compiled kernels; `synthetic`, results folders of synthetic data in the project's schema."""
