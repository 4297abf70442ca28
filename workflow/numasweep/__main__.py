"""`python -m numasweep COMMAND ...`: one entry point, one module per command.

Each command module exposes `main(argv: list[str]) -> int` (or the function its entry names
after `:`). A NumasweepError is printed as one line (`numasweep: error: ...`) and exits 2;
Ctrl-C as one line too, exit 130.
"""

from __future__ import annotations

import importlib
import sys

from numasweep.core.version import __version__
from numasweep.core.errors import NumasweepError

COMMANDS = {
    "topology": ("numasweep.core.topology", "detect the topology or load an arch file; write topology.json"),
    "plan": ("numasweep.planning.plan", "preview a placement: per-rank table and launch lines"),
    "grid": ("numasweep.planning.grid", "list the jobs a config expands to"),
    # run-job and run-batch are the runner's (running.runjob), handed repeat_until's intervals
    "run-job": ("numasweep.statistics.repeat:run_job", "run one benchmark job: lock, launch, archive, provenance"),
    "run-batch": ("numasweep.statistics.repeat:run_batch", "run the grid points of one batch (config key batch) as run-job does"),
    "run-setup": ("numasweep.running.runjob:run_setup", "run a set-up step's launch line (a calibration's timings) under the host lock"),
    "calibrate": ("numasweep.benches.bandwidth.calibration", "decide each bandwidth kernel's code shape from a calibration's timings"),
    "aggregate": ("numasweep.results.aggregate", "merge per-job CSVs into one tidy CSV per benchmark"),
    "import-legacy": ("numasweep.benches.latency.legacy", "convert a numa_bench/numa_allocator table log to CSV"),
    "analyse": ("numasweep.findings.analysis", "compute findings.json from aggregated results"),
    "figures": ("numasweep.reporting.figures", "draw the figures from aggregated results"),
    "report": ("numasweep.reporting.report", "render the Markdown report"),
    "store": ("numasweep.results.store", "record a finished run in the results store; list the runs"),
    "compare": ("numasweep.reporting.compare", "compare results with references or an earlier run of the store"),
    "hwloc-export": ("numasweep.reporting.hwloc_export", "write the measured latency and bandwidth as hwloc memory attributes"),
    "fleet": ("numasweep.reporting.fleet_report", "rank the nodes of a fleet campaign and flag those out of line"),
}


def usage() -> str:
    lines = ["usage: python -m numasweep COMMAND [options]  (or numasweep COMMAND, once installed; --version)", "",
             "commands:"]
    lines += [f"  {name:<14} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(f"numasweep {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"numasweep: error: unknown command '{name}'; one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module_name, _, function = COMMANDS[name][0].partition(":")
    try:
        module = importlib.import_module(module_name)
        return int(getattr(module, function or "main")(rest) or 0)
    except NumasweepError as exc:
        print(f"numasweep: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:       # Ctrl-C: one line, the shell's code for SIGINT
        print(f"numasweep: {name}: interrupted; run it again to finish", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
