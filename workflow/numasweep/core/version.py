"""The package's version, written once: pyproject.toml reads it, `numasweep --version` prints it,
every job's provenance records it (`numasweep_version`), CITATION.cff and CHANGELOG.md name it
(tests/unit/test_package.py checks they agree)."""

__version__ = "0.1.0"
