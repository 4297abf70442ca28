"""Parse a script's command line with the script's own argparse parser, and run nothing else.

    python tests/helpers/parse_only.py bench/kernels.py --rounds 3 --skip cycle

runs bench/kernels.py as `__main__` with those arguments up to its first `parse_args`, which
exits 0 when the arguments parse and 2 with argparse's message when they do not (an unknown
option, a wrong value, a missing subcommand). For the commands of bench/README.md, which run
reference tools for half an hour or measure the machine: the test of the documented commands
checks that each is still a command its script accepts.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

parse_args = argparse.ArgumentParser.parse_args


def parse_and_stop(self, args=None, namespace=None):
    parse_args(self, args, namespace)
    raise SystemExit(0)


if __name__ == "__main__":
    argparse.ArgumentParser.parse_args = parse_and_stop
    sys.argv = sys.argv[1:]
    sys.path.insert(0, str(Path(sys.argv[0]).resolve().parent))  # as `python SCRIPT` would
    runpy.run_path(sys.argv[0], run_name="__main__")
