"""How fast the pipeline plans and reports at cluster scale: generated campaigns, timed.

    .venv/bin/python bench/pipeline.py dryrun --jobs 1000,10000,100000
    .venv/bin/python bench/pipeline.py dryrun --jobs 10000,100000 --batch 100   # config batch: 100
    .venv/bin/python bench/pipeline.py report --rows 1000000
    .venv/bin/python bench/pipeline.py report --rows 100000 --keep out/   # keep the results folder
    .venv/bin/python bench/pipeline.py report --rows 1000000 --hosts 1000  # a fleet: 1,000 nodes

`dryrun` writes a campaign config over an arch file (default config/arch/lumi-g.yaml) with about
the asked number of jobs (latency points: strategies x single domains x ranks per domain x modes,
bandwidth points: nodes x thread counts, repeated), then times `python -m numasweep grid --count`
and `snakemake -n` on it (with `--batch N`, the campaign sets `batch: N`: one Snakemake job per
batch of up to N points). `report` writes a cached results folder of model data (the replay
model of tests/helpers/synthetic.py: one CSV and provenance record per latency job of 8 ranks x 15
sizes), then times `aggregate`, `analyse`, `figures` and `report` on it, each as its own
process; with `--hosts N` the sweep
ran on N nodes of a fleet campaign (each node its own series,
a few repetitions each: the shape of a large cluster's screening, where the default is thousands
of repetitions of one sweep), and `fleet` is timed too. Every step prints its wall time, the
peak resident memory of its process and the load average after it: on a shared machine the
times measure the other work too.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))
sys.path.insert(0, str(REPO / "tests"))
from helpers.workflow import snakemake_env  # noqa: E402  (this interpreter's environment first on PATH)

# Points of one repetition of the dry-run campaign: 2 strategies x 4 domains x 5 rank counts x
# 2 modes of latency, 4 nodes x 5 thread counts of bandwidth.
RANKS = [1, 2, 4, 8, 14]
DRYRUN_POINTS = 2 * 4 * len(RANKS) * 2 + 4 * len(RANKS)
# Rows of one job of the cached results: 8 ranks (2 per domain on 4 domains) x 15 sizes (1-16384 MiB).
JOB_ROWS = 8 * 15


def campaign(jobs: int, arch: str = "config/arch/lumi-g.yaml", batch: int = 1) -> dict:
    """A campaign config with about `jobs` jobs (a whole number of repetitions), `batch`
    points per Snakemake job."""
    reps = max(1, math.ceil(jobs / DRYRUN_POINTS))
    return {
        "system": "pipeline-bench",
        "batch": batch,
        "arch": arch,
        "launcher": "srun",
        "latency": {"sweeps": [{
            "strategy": ["sequential", "interleaved"], "domains": [[0], [1], [2], [3]],
            "ranks_per_domain": RANKS, "memory": ["local"], "mode": ["concurrent", "serial"],
            "sizes": "1-16384", "repetitions": reps}]},
        "bandwidth": {"sweeps": [{"cpu_nodes": [0, 1, 2, 3], "memory": ["local"], "threads": RANKS,
                                  "repetitions": reps}]},
        "copy": {"sweeps": []},
        "gpu_xfer": {"sweeps": []},
    }


def results_campaign(rows: int, arch: str = "config/arch/lumi-g.yaml", hosts: int = 1) -> dict:
    """A latency campaign of about `rows` rows once run: the seed's interleaved 8-rank sweep, on
    each of `hosts` nodes."""
    reps = max(1, math.ceil(rows / (2 * JOB_ROWS * hosts)))
    return {
        "system": "pipeline-bench",
        "arch": arch,
        "latency": {"sweeps": [{
            "strategy": ["interleaved"], "domains": [[0, 1, 2, 3]], "ranks_per_domain": [2],
            "memory": ["local"], "mode": ["concurrent", "serial"], "sizes": "1-16384", "repetitions": reps}]},
        "bandwidth": {"sweeps": []},
        "copy": {"sweeps": []},
        "gpu_xfer": {"sweeps": []},
    }


def write_results(folder: Path, rows: int, arch: str = "config/arch/lumi-g.yaml", hosts: int = 1) -> list[Path]:
    """A results folder of model data: topology.json and latency/<id>.csv + .json per job; with
    more than one host, a fleet campaign (`numasweep.planning.fleet.spread`: each job once per node)."""
    from helpers import synthetic as model  # tests/helpers/synthetic.py: the stated model every value comes from

    from numasweep.planning import fleet, grid
    from numasweep.core import topology

    topo = topology.load(REPO / arch)
    plan = grid.expand(grid.merge(grid.load_config_file(grid.DEFAULT_CONFIG), results_campaign(rows, arch, hosts)),
                       topo)
    if hosts > 1:
        plan = fleet.spread(plan, [f"nid{n:06d}" for n in range(hosts)])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "topology.json").write_text(topo.to_json())
    return [model.write_job(job, topo, folder) for job in plan.jobs]


def timed(argv: list[str], cwd: Path = REPO) -> tuple[float, float, float, int]:
    """(wall seconds, peak resident MiB, CPU seconds, exit status) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        print(f"  {' '.join(argv[:4])} ...: exit {rc}: {stderr.strip().splitlines()[-1:] or ''}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, rc


def line(step: str, wall: float, rss: float, cpu: float) -> None:
    """One step: wall time, peak resident memory, CPU time (user + system: less sensitive than
    the wall time to other work on the machine) and the load average after it."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"  {step:<30} {wall:8.2f} s wall {cpu:8.2f} s CPU {rss:7.0f} MiB  load {load}", flush=True)


def dryrun(sizes: list[int], snakemake: str, batch: int = 1) -> None:
    for jobs in sizes:
        with tempfile.TemporaryDirectory(prefix="pipeline-bench-") as tmp:
            cfg = Path(tmp) / "campaign.yaml"
            cfg.write_text(yaml.safe_dump(campaign(jobs, batch=batch)))
            print(f"campaign of about {jobs} jobs, batch {batch} ({cfg.name}):")
            line("numasweep grid --count", *timed([sys.executable, "-m", "numasweep", "grid", "--config",
                                                    str(cfg), "--count"])[:3])
            line("snakemake -n", *timed([snakemake, "-n", "-q", "--configfile", str(cfg),
                                         "--profile", "profiles/local"])[:3])


def report(rows: int, keep: Path | None, hosts: int = 1) -> None:
    base = Path(tempfile.mkdtemp(prefix="pipeline-bench-")) if keep is None else keep
    folder, out = base / "results", base / "report"
    try:
        start = time.perf_counter()
        csvs = write_results(folder, rows, hosts=hosts)
        line(f"model data, {len(csvs)} jobs", time.perf_counter() - start, 0, time.process_time())
        py = [sys.executable, "-m", "numasweep"]
        out.mkdir(parents=True, exist_ok=True)
        line("aggregate", *timed(py + ["aggregate", "-o", str(folder / "latency.csv"), *map(str, csvs)])[:3])
        print(f"  latency.csv: {sum(1 for _ in open(folder / 'latency.csv')) - 1} rows")
        steps = [("analyse", ["analyse", "--results", str(folder), "-o", str(out / "findings.json")]),
                 ("figures", ["figures", "--results", str(folder), "-o", str(out / "figures")]),
                 ("report", ["report", "--results", str(folder), "--findings", str(out / "findings.json"),
                             "--figures", str(out / "figures"), "-o", str(out / "experimentation.md")])]
        if hosts > 1:
            steps.append(("fleet", ["fleet", "--results", str(folder), "-o", str(out / "fleet.md")]))
        for step, args in steps:
            line(step, *timed(py + args)[:3])
        line("start-up: report --help", *timed(py + ["report", "--help"])[:3])
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    d = sub.add_parser("dryrun", help="time grid expansion and snakemake -n")
    d.add_argument("--jobs", default="1000,10000", help="comma list of campaign sizes (jobs)")
    # .venv/bin/python bench/pipeline.py: the snakemake of this interpreter's environment first
    d.add_argument("--snakemake", default=shutil.which("snakemake", path=snakemake_env()["PATH"]) or "snakemake")
    d.add_argument("--batch", type=int, default=1, help="grid points per Snakemake job (config batch; default 1)")
    r = sub.add_parser("report", help="time aggregate, analyse, figures and report on model data")
    r.add_argument("--rows", type=int, default=1_000_000, help="latency rows of the cached results")
    r.add_argument("--keep", type=Path, help="write the results and report here and keep them")
    r.add_argument("--hosts", type=int, default=1,
                   help="a fleet campaign: the sweep on this many nodes, each its own series (default 1)")
    args = ap.parse_args(argv)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    if args.what == "dryrun":
        dryrun([int(x) for x in args.jobs.split(",")], args.snakemake, args.batch)
    else:
        report(args.rows, args.keep, args.hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
