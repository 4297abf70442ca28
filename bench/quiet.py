"""Does the workflow disturb its own measurements? The default sweep's multi-rank latency jobs
under the local profile, against the same launch lines run alone.

    .venv/bin/python bench/quiet.py                 # the default sweep, then each job alone
    .venv/bin/python bench/quiet.py --rounds 2      # alternate workflow and alone twice
    .venv/bin/python bench/quiet.py --keep out/     # keep the copy, its results and the CSVs

It copies the repository as the workflow tests do (no results, builds or tests) to a temporary folder, runs
`snakemake sweep --profile profiles/local` there (the default sweep: latency, bandwidth and copy
jobs next to the workflow's light jobs: topology, aggregation, builds), then runs the launch
line of every latency job of 2 ranks or more again by itself, nothing else of ours running,
from the job's own provenance record (its argv and environment). Per job and size it compares
what the kernel records of its own quiet: `on_cpu_pct`, the least share of a sample's wall time
the rank ran on its CPU over the samples it kept (under 95: the CPU was shared), `retaken`, the
samples it took again because a rank was off its CPU, and `spread_pct`, the within-run spread
(max - min) / median of the samples. A workflow that keeps other work off a node while a
benchmark measures gives the same figures both ways, up to the machine's own noise, which the
rounds show. The load average is printed after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from helpers.workflow import copy_repo, snakemake_env  # noqa: E402  (the tests' copy of the repository)

MULTI_RANK = 2
# The workflow's jobs run `python -m numasweep`: this interpreter's environment comes first.
ENV = snakemake_env()


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Monitor:
    """CPU time of every process and the hypervisor's steal, sampled each second from /proc while
    the bench runs: what ran beside a job, with its command, and what the host took."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, Counter, int]] = []  # (time, ticks per command, steal ticks)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    @staticmethod
    def processes() -> dict[str, tuple[int, str]]:
        out = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            name = cmd.strip() or stat[stat.index("(") + 1:stat.rindex(")")]
            out[pid] = (int(fields[11]) + int(fields[12]), name)
        return out

    @staticmethod
    def steal() -> int:
        return int(Path("/proc/stat").read_text().split("\n")[0].split()[8])

    def loop(self) -> None:
        before, steal = self.processes(), self.steal()
        while not self.stop.wait(1.0):
            now, now_steal = self.processes(), self.steal()
            used = Counter()
            for pid, (ticks, name) in now.items():
                delta = ticks - before[pid][0] if pid in before else 0
                if delta > 0:
                    used[kind(name)] += delta
            self.samples.append((time.time(), used, now_steal - steal))
            before, steal = now, now_steal

    def __enter__(self) -> Monitor:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()

    def during(self, start: float, end: float) -> tuple[Counter, int, float]:
        """CPU ticks per command, steal ticks and seconds sampled within [start, end]."""
        used, steal, seconds, last = Counter(), 0, 0.0, None
        for t, ticks, stolen in self.samples:
            if start < t <= end:
                used.update(ticks)
                steal += stolen
                seconds += t - last if last is not None else 1.0
            last = t
        return used, steal, seconds


def kind(cmd: str) -> str:
    """A process named by what it is to the bench: the measuring kernel, or its command."""
    if "build/bin/numa_" in cmd and not cmd.startswith(("mpirun", "env ", "bash", "/bin/sh")):
        return "kernel"
    words = cmd.split()
    if "-m" in words and words.index("-m") + 1 < len(words):
        return " ".join(words[words.index("-m") + 1:words.index("-m") + 3])
    return Path(words[0]).name if words else cmd


def beside(monitor: Monitor, start: float, end: float) -> tuple[float, float, str]:
    """Share of one CPU that processes other than the kernel used, the hypervisor's steal (%),
    and the top three of those processes, over the seconds of a job."""
    used, steal, seconds = monitor.during(start, end)
    hz = os.sysconf("SC_CLK_TCK")
    if not seconds:
        return float("nan"), float("nan"), ""
    others = {k: v for k, v in used.items() if k != "kernel"}
    top = ", ".join(f"{k} {100 * v / hz / seconds:.1f}%" for k, v in Counter(others).most_common(3))
    return 100 * sum(others.values()) / hz / seconds, 100 * steal / hz / seconds / (os.cpu_count() or 1), top


def when(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def run_workflow(repo: Path, snakemake: str) -> None:
    proc = subprocess.run([snakemake, "sweep", "--profile", "profiles/local", "-q"], cwd=repo,
                          capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        sys.exit(f"quiet: the default sweep failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def multi_rank_jobs(repo: Path) -> list[dict]:
    """Provenance records of the finished latency jobs with 2 ranks or more."""
    records = []
    for path in sorted(repo.glob("results/*/latency/*.json")):
        record = json.loads(path.read_text())
        argv = record.get("argv") or []
        ranks = int(argv[argv.index("-n") + 1]) if "-n" in argv else 1
        if ranks >= MULTI_RANK:
            records.append(record)
    return records


def run_alone(repo: Path, record: dict, csv: Path) -> tuple[float, float]:
    """The job's launch line by itself; its start and end (epoch seconds)."""
    argv = [f"--csv={csv}" if a.startswith("--csv=") else a for a in record["argv"]]
    env = {**ENV, **record.get("environment", {})}
    start = time.time()
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"quiet: {record['job_id']} alone failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return start, time.time()


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per size: the least on-CPU share and the largest spread over the ranks."""
    if "retaken" not in df:      # a kernel older than its samples' retakes
        df = df.assign(retaken=float("nan"))
    return df.groupby("size_bytes").agg(on_cpu_pct=("on_cpu_pct", "min"), spread_pct=("spread_pct", "max"),
                                        retaken=("retaken", lambda v: v.sum(min_count=1)))


def measure_round(repo: Path, rnd: int, snakemake: str, monitor: Monitor) -> tuple[list[tuple], list[tuple]]:
    """The default sweep in a fresh copy, then its multi-rank latency jobs alone: per job and size
    the on-CPU shares and spreads both ways, and per run what ran beside it."""
    shutil.rmtree(repo, ignore_errors=True)
    copy_repo(REPO, repo)
    run_workflow(repo, snakemake)
    jobs = multi_rank_jobs(repo)
    if not jobs:
        sys.exit("quiet: the default sweep ran no latency job of 2 ranks or more on this machine")
    print(f"round {rnd}: default sweep done, load {load()}", flush=True)
    rows, runs = [], []
    for record in jobs:
        alone = repo / "alone" / f"{record['job_id']}.csv"
        alone.parent.mkdir(exist_ok=True)
        start, end = run_alone(repo, record, alone)
        for where, span in (("workflow", (when(record["start"]), when(record["end"]))), ("alone", (start, end))):
            runs.append((rnd, record["job_id"], where, *beside(monitor, *span)))
        # the job's CSV: its --csv argument, published without the .partial suffix
        ours = repo / next(a for a in record["argv"] if a.startswith("--csv="))[6:].removesuffix(".partial")
        both = summary(pd.read_csv(ours)).join(summary(pd.read_csv(alone)).add_suffix("_alone"))
        for size, r in both.iterrows():
            rows.append((rnd, record["job_id"], int(size), r.on_cpu_pct, r.on_cpu_pct_alone,
                         r.spread_pct, r.spread_pct_alone, r.retaken, r.retaken_alone))
    print(f"round {rnd}: jobs alone done, load {load()}", flush=True)
    return rows, runs


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1, help="workflow runs, each followed by the jobs alone")
    ap.add_argument("--snakemake", default=shutil.which("snakemake", path=ENV["PATH"]) or "snakemake")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = ap.parse_args(argv)
    base = args.keep or Path(tempfile.mkdtemp(prefix="quiet-bench-"))
    print(f"load average at the start: {load()}; {os.cpu_count()} CPUs", flush=True)
    rows, jobs_beside = [], []
    with Monitor() as monitor:
        try:
            for rnd in range(1, args.rounds + 1):
                points, runs = measure_round(base / f"round{rnd}", rnd, args.snakemake, monitor)
                rows += points
                jobs_beside += runs
        finally:
            if args.keep is None:
                shutil.rmtree(base, ignore_errors=True)
    table = pd.DataFrame(rows, columns=["round", "job", "size_bytes", "on_cpu_wf", "on_cpu_alone", "spread_wf",
                                        "spread_alone", "retaken_wf", "retaken_alone"])
    pd.set_option("display.width", 200)
    print("\nper job and size: least on-CPU share (%) and largest within-run spread (%) over the ranks,"
          " and the samples the kernel took again because a rank was off its CPU, in the workflow (wf) and alone")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    shared = lambda col: int((table[col] < 95).sum())  # noqa: E731
    print(f"\npoints with a rank on its CPU under 95% of a sample: workflow {shared('on_cpu_wf')}, "
          f"alone {shared('on_cpu_alone')} of {len(table)}")
    print(f"samples taken again (a rank under 95% on its CPU): workflow {table.retaken_wf.sum():.0f}, "
          f"alone {table.retaken_alone.sum():.0f}")
    for name, col in (("workflow", "spread_wf"), ("alone", "spread_alone")):
        big = table[table.size_bytes >= 256 << 20][col]
        print(f"within-run spread, {name}: median {table[col].median():.1f}% over all sizes; "
              f"at 256 MiB and above median {big.median():.1f}%, max {big.max():.1f}%")
    print("\nCPU used beside each job by processes other than its kernel (% of one CPU; the job's own "
          "run-job, mpirun and orted included), the hypervisor's steal (% of all CPUs), and the top three:")
    for rnd, job, where, other, steal, top in jobs_beside:
        print(f"  round {rnd} {job} {where:<8} others {other:5.1f}%  steal {steal:4.1f}%  {top}")
    ratio = (table.spread_wf / table.spread_alone.where(table.spread_alone > 0)).median()
    print(f"median ratio of the spreads, workflow / alone: {ratio:.2f}; load average at the end {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
