"""`numa_migrate` (no benchmark registered yet): what the shared tests take of it (tests/benches/__init__.py)."""

from __future__ import annotations

KERNEL = "numa_migrate"
BENCH = None

# Its small test sizes under the sanitizers (tests/kernels/test_sanitize.py): test id -> arguments.
SANITIZED = {
    "migrate": ["--src=0", "--dst=0", "--allow-same", "--size=1M", "--ntimes=1", "--threads=3", "--batch=7", "--quiet"],
}
