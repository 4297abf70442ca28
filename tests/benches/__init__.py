"""What the shared tests take of each kernel, one file per kernel here, named after its benchmark:
adding a benchmark adds its file and edits no shared test. A file holds

- `KERNEL`: the binary (`numa_latency`), `BENCH`: its registered benchmark (None for none yet);
- `rows(job, topo, rng)`: the job model's rows for one planned job, exactly the columns the kernel
  writes (tests/helpers/synthetic.py `write_job`; the shared constants and helpers in
  tests/helpers/jobmodel.py);
- `SANITIZED`: its small test sizes under ASan and UBSan, test id -> arguments
  (tests/kernels/test_sanitize.py);
- `BAD_ARGS`: invocations it refuses in one line, `OPTION_CASES`: (arguments, what the line
  says), and `GOOD`: a small job table its aggregation accepts, whose cells the catalogue spoils
  (tests/catalogue/test_catalogue.py);
- `PLACE_ARGS`: options that place its memory on nodes no machine has, which `--check-args` must
  accept without looking (tests/kernels/test_check_args.py); without it, `--policy=bind
  --mem-nodes=63`.

A GPU kernel has no `SANITIZED` or `BAD_ARGS`; a kernel with no benchmark yet no `rows` or `GOOD`. The
shared tests check that every registered benchmark and every CPU kernel has what they need.
"""

from __future__ import annotations

import importlib
from pathlib import Path

FILES = [importlib.import_module(f"{__name__}.{p.stem}") for p in sorted(Path(__file__).parent.glob("[!_]*.py"))]

# The job model's rows of each registered benchmark.
ROWS = {f.BENCH: f.rows for f in FILES if f.BENCH}
# test id -> the command, kernel first.
SANITIZED = {test_id: [f.KERNEL, *args] for f in FILES for test_id, args in getattr(f, "SANITIZED", {}).items()}
BAD_ARGS = {f.KERNEL: f.BAD_ARGS for f in FILES if hasattr(f, "BAD_ARGS")}
OPTION_CASES = {f.KERNEL: f.OPTION_CASES for f in FILES if hasattr(f, "OPTION_CASES")}
GOOD = {f.BENCH: f.GOOD for f in FILES if f.BENCH}
PLACE_ARGS = {f.KERNEL: f.PLACE_ARGS for f in FILES if hasattr(f, "PLACE_ARGS")}
