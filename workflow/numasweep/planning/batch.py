"""Batches (config key `batch`): several grid points of one benchmark in one Snakemake job.

Snakemake spends about 2 ms of CPU per job building its DAG, so a campaign of 100,000 grid
points takes minutes to plan. With `batch: N` (N > 1) the points of one benchmark that share
everything a job's resources depend on (threads, MPI tasks, GPUs, kernel and, in fleet mode,
the node) are chunked in plan order into batches of up to N points, one Snakemake job each.

A batch job runs `python -m numasweep run-batch` (numasweep.running.runjob.run_batch): its points one
after another through the same runner as a single job, each published under its own
`results/<system>/<bench>/<id>.{csv,json,log}`; points whose CSV and provenance already exist
are kept, not measured again. The job's output is the manifest
`results/<system>/<bench>/batches/<batch>.json`, written once every point is published; the
aggregate rule reads the points a manifest lists.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from numasweep.core.errors import NumasweepError
from numasweep.core.io import atomic_write_text
from numasweep.planning.launch import result_line
from numasweep.planning.fleet import NODE_COLUMN

# Where a batch's manifest lives, under the benchmark's results folder.
FOLDER = "batches"
# A batch job's shell command, every point's launch line in it, is one argument of `bash -c`,
# which Linux caps at 128 KiB (MAX_ARG_STRLEN): a batch is also closed before its points'
# options pass this many bytes (a few hundred one-rank points, fewer many-rank mpirun lines).
MAX_POINT_BYTES = 100_000
# Between a batch's `--point` options in its shell command: one point a line.
SEPARATOR = " \\\n  "


@dataclass(frozen=True)
class Batch:
    bench: str
    id: str
    jobs: tuple  # grid.Job, in plan order


def key(job) -> tuple:
    """What a Snakemake job's threads, resources, kernel input and node depend on."""
    return (job.bench, job.kernel, job.threads, job.tasks, job.gpus, job.grid.get(NODE_COLUMN))


def grid_json(job) -> str:
    return json.dumps(job.grid, sort_keys=True, separators=(",", ":"))


def point_option(job, launch_line: str) -> str:
    """A point as run-batch takes it: `--point ID LAUNCH GRID`."""
    return f"--point {shlex.quote(job.id)} {shlex.quote(launch_line)} {shlex.quote(grid_json(job))}"


def point_options(jobs: list, results_dir: str, **launch) -> dict[str, str]:
    """Every job's `--point` option (launch.result_line's keyword arguments), by job id."""
    return {job.id: point_option(job, result_line(job, results_dir, **launch)) for job in jobs}


def batches(jobs: list, size: int, options: dict[str, str] | None = None) -> list[Batch]:
    """The jobs chunked in plan order into batches of up to `size` points sharing a key, and
    (given their `--point` options) of up to MAX_POINT_BYTES of options.

    Batch ids count from 1 over the whole plan in the order batches open (`b1`, `b2`, ...), so
    that one names its batch without its benchmark; a fleet batch also names its node
    (`b3-on-nid005001`)."""
    if size < 1:
        raise NumasweepError(f"config: batch: {size} is below 1; give 1 (one job per point) or more")
    open_: dict[tuple, list] = {}
    used: dict[tuple, int] = {}
    order: list[list] = []
    for job in jobs:
        k = key(job)
        points = open_.get(k)
        cost = len(options[job.id]) + len(SEPARATOR) if options else 0
        if points is None or len(points) == size or (points and used[k] + cost > MAX_POINT_BYTES):
            points = open_[k] = []
            used[k] = 0
            order.append(points)
        points.append(job)
        used[k] += cost
    out = []
    for n, points in enumerate(order, 1):
        node = points[0].grid.get(NODE_COLUMN)
        out.append(Batch(points[0].bench, f"b{n}" + (f"-on-{node}" if node else ""), tuple(points)))
    return out


def manifest_path(results: str | Path, bench: str, batch_id: str) -> Path:
    return Path(results) / bench / FOLDER / f"{batch_id}.json"


def write_manifest(path: Path, batch_id: str, points: list[str]) -> None:
    atomic_write_text(path, json.dumps({"batch": batch_id, "points": points}, indent=1) + "\n")


def point_csvs(manifests: list[str | Path], check: bool = True) -> list[Path]:
    """The CSV of every point the manifests list (results/<system>/<bench>/<id>.csv), in order.
    With `check`, a point whose CSV is gone is named with the manifest to delete so that it is
    measured again (without, aggregate's keep_going lists it among the problems)."""
    csvs = []
    for manifest in map(Path, manifests):
        try:
            points = json.loads(manifest.read_text())["points"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise NumasweepError(f"{manifest}: not a batch manifest ({exc}); delete it and rerun its batch") from None
        for point in points:
            csv = manifest.parent.parent / f"{point}.csv"
            if check and not csv.exists():
                raise NumasweepError(f"{csv}: missing; delete {manifest} and rerun: its batch measures "
                                     "only the points it lacks")
            csvs.append(csv)
    return csvs


def reopen_incomplete(results: str | Path, batches: list[Batch]) -> list[str]:
    """Delete the manifest of every published batch one of whose points lost its CSV or provenance
    (deleted by hand, to measure it again), so that the batch job runs again and measures only the
    points it lacks; one line for each batch reopened."""
    said = []
    for b in batches:
        manifest = manifest_path(results, b.bench, b.id)
        if not manifest.exists():
            continue
        folder = manifest.parent.parent
        gone = [job.id for job in b.jobs
                if not (folder / f"{job.id}.csv").exists() or not (folder / f"{job.id}.json").exists()]
        if gone:
            manifest.unlink()
            said.append(f"batch {b.id}: {len(gone)} point(s) lost their result ({gone[0]}"
                        f"{', ...' if len(gone) > 1 else ''}); the batch runs again and measures only those")
    return said
