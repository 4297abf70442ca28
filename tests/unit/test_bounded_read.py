"""Result files are read within bounds (numasweep.core.io.read_csv, docs/INTERFACES.md "Limits"):
a job CSV or an aggregated table of ten million rows, garbage or well formed, and a file larger
than a result file may be, are each refused in one line, the garbage at its first bad line,
with the memory of a few chunks (measured in a child process: under 500 MB resident)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from numasweep.core import io

REPO = Path(__file__).resolve().parents[2]
HEADER = b"rank,cpu,size_bytes,latency_ns_median\n"
ROWS = 10_000_000


def _job(path: Path, row: bytes, first: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(HEADER + (first or row) + row * (ROWS - 1))
    path.with_suffix(".json").write_text(json.dumps({"job_id": path.stem, "grid": {"repetition": 0}}))
    return path


def _refused(code: str) -> tuple[str, int]:
    """The child's one line and its own peak resident memory in bytes (it prints both: VmHWM, its
    address space's high-water mark; getrusage's maxrss would carry the parent's over the exec)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO / "workflow"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    line, peak_kib = proc.stdout.strip().rsplit("\n", 1)
    return line, int(peak_kib) * 1024


AGGREGATE = ("from pathlib import Path\nfrom numasweep.core.errors import NumasweepError\n"
             "from numasweep.results import aggregate\nfrom numasweep.core import registry\n"
             "try:\n    {call}\nexcept NumasweepError as exc:\n    print(exc)\nelse:\n    print('accepted')\n"
             "print(next(ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM:')))\n")


@pytest.mark.parametrize("row, first, says", [
    (b"0,1,1048576,fast\n", None, "line 2 (data row 1), column 'latency_ns_median': 'fast' is not a number"),
    (b"0,1,1048576,90.5\n", b"0,1,1048576,-4\n", "line 2 (data row 1), column 'latency_ns_median': '-4.0' is negative"),
    (b"0,1,1048576,90.5\n", None, "more than 2,000,000 rows, more than a job's CSV may hold"),
])
def test_a_job_csv_of_ten_million_rows_is_refused_in_one_line_in_bounded_memory(tmp_path: Path, row: bytes,
                                                                                first: bytes | None,
                                                                                says: str) -> None:
    job = _job(tmp_path / "latency" / "j1.csv", row, first)
    line, peak = _refused(AGGREGATE.format(call=f"aggregate.aggregate([Path({str(job)!r})], 'latency')"))
    assert says in line and str(job) in line and "\n" not in line, line
    assert peak < 500e6, f"{peak / 1e6:.0f} MB resident"


def test_an_aggregated_table_of_ten_million_garbage_rows_is_refused_at_its_first_bad_line(tmp_path: Path) -> None:
    table = _job(tmp_path / "cached" / "latency.csv", b"0,1,1048576,fast\n")
    line, peak = _refused(AGGREGATE.format(
        call=f"aggregate.read_table(Path({str(table)!r}), registry.get('latency'))"))
    assert "line 2 (data row 1), column 'latency_ns_median': 'fast' is not a number" in line, line
    assert peak < 500e6, f"{peak / 1e6:.0f} MB resident"


def test_a_file_larger_than_a_result_file_may_be_is_refused_before_it_is_read(tmp_path: Path) -> None:
    job = tmp_path / "latency" / "j1.csv"
    job.parent.mkdir()
    with open(job, "wb") as fh:   # sparse: its size, not its bytes on the disk
        fh.write(HEADER)
        fh.truncate(io.JOB_FILE.size + 1)
    job.with_suffix(".json").write_text(json.dumps({"job_id": "j1", "grid": {"repetition": 0}}))
    line, _ = _refused(AGGREGATE.format(call=f"aggregate.aggregate([Path({str(job)!r})], 'latency')"))
    assert f"{job}: 256 MiB, more than a job's CSV may hold (256 MiB, docs/INTERFACES.md)" in line, line


def test_a_table_read_in_chunks_keeps_its_text_columns_as_categories_in_text_order(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    monkeypatch.setattr(io, "CHUNK_ROWS", 2)
    path = tmp_path / "t.csv"
    path.write_text("mode,value\nserial,1\nconcurrent,2\nserial,3\nburst,4\nconcurrent,5\n")
    df = io.read_csv(path, codes=True)
    assert list(df["mode"]) == ["serial", "concurrent", "serial", "burst", "concurrent"]
    assert list(df["mode"].cat.categories) == ["burst", "concurrent", "serial"]
    assert list(df["value"]) == [1, 2, 3, 4, 5]
