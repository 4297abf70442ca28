"""numa_migrate on this machine: its options, every refusal's one line, and its CSV. Moving pages
between two nodes needs a second node (tests/numa_vm/test_migrate_guest.py); here --allow-same
runs the whole measurement with source and target the same node, where nothing moves."""

from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path

import pytest

from helpers.kernels import contract_columns, online_nodes, read_rows, run, run_ok

KERNEL = "numa_migrate"
PR_SET_THP_DISABLE = 41


def one_line_error(proc, words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{KERNEL}: error: "), proc.stderr
    assert words in lines[0], lines[0]


def test_version_and_help(kernels_bin: Path) -> None:
    out = run_ok([kernels_bin / KERNEL, "--version"]).stdout
    assert re.match(rf"{KERNEL} numasweep ([0-9a-f]{{7,}}(-dirty)?|unknown)\n", out), out
    assert "-Wall -Wextra" in out
    out = run_ok([kernels_bin / KERNEL, "--help"]).stdout
    for option in ("--src=A --dst=B", "--allow-same", "--size=LIST", "--method=LIST", "--batch=PAGES",
                   "--threads=N", "--ntimes=N", "--csv=PATH", "--pages=4k|thp|2m|1g", "--check-args"):
        assert option in out, option


def test_check_args_parses_and_stops_before_the_machine(kernels_bin: Path, tmp_path: Path) -> None:
    csv = tmp_path / "no" / "folder" / "m.csv"
    # node 62 exists nowhere here, nor does the CSV's folder: both are checks of the machine.
    ok = run([kernels_bin / KERNEL, "--check-args", "--src=0", "--dst=62", "--method=all", f"--csv={csv}"])
    assert ok.returncode == 0 and ok.stdout == "", ok.stderr
    assert not csv.parent.exists()
    one_line_error(run([kernels_bin / KERNEL, "--check-args", "--src=3", "--dst=3"]), "both node 3")
    one_line_error(run([kernels_bin / KERNEL, "--check-args", "--bogus"]), "unknown option '--bogus'")


SECOND = max(online_nodes()) + 1  # a node this machine lacks
BAD = [
    (["--src=0"], "give the nodes to move between: --src=A --dst=B"),
    (["--src=0", f"--dst={SECOND}"], f"--dst: node {SECOND} does not exist"),
    ([f"--src={SECOND}", "--dst=0"], f"--src: node {SECOND} does not exist"),
    (["--src=0", "--dst=0", "--allow-same", "--method=swap"], "unknown method 'swap'"),
    (["--src=0", "--dst=0", "--allow-same", "--method="], "--method: empty list"),
    (["--src=0", "--dst=0", "--allow-same", "--batch=0"], "--batch: 0 is out of range"),
    (["--src=0", "--dst=0", "--allow-same", "--threads=0"], "--threads: 0 is out of range"),
    (["--src=0", "--dst=0", "--allow-same", "--ntimes=0"], "--ntimes: 0 is out of range"),
    (["--src=0", "--dst=0", "--allow-same", "--size=0"], "zero"),
    (["--src=0", "--dst=0", "--allow-same", "--size=6K"], "6K is not a whole number of the 4K pages"),
    (["--src=0", "--dst=0", "--allow-same", "--pages=thp", "--size=3M"], "give a multiple of 2M"),
    (["--src=0", "--dst=0", "--allow-same", "--pages=huge"], "unknown page size"),
    (["--src=0", "--dst=0", "--allow-same", "--size=250G"], "exceeds the free memory of node(s) 0"),
    (["--src=0", "--dst=0", "--allow-same", "--policy=bind", "--mem-nodes=0"], "do not apply to numa_migrate"),
    (["--src=0", "--dst=0", "--allow-same", "--csv=/nonexistent-folder/m.csv"], "does not exist"),
    (["--src=0", "--dst=0", "--allow-same", "stray"], "unexpected argument 'stray'"),
]


@pytest.mark.parametrize(("args", "words"), BAD, ids=[w for _, w in BAD])
def test_bad_invocation_exits_2_with_one_line(kernels_bin: Path, args: list[str], words: str) -> None:
    proc = run([kernels_bin / KERNEL, *args])
    one_line_error(proc, words)
    assert proc.stdout == ""


def test_same_node_is_refused_naming_what_is_needed(kernels_bin: Path) -> None:
    proc = run([kernels_bin / KERNEL, "--src=0", "--dst=0"])
    if online_nodes() == [0]:
        one_line_error(proc, "this machine has one NUMA node: moving pages needs a second node with memory")
    else:
        one_line_error(proc, "--src and --dst are both node 0")
    assert "--allow-same" in proc.stderr


def test_hugetlb_pages_missing_are_refused_naming_the_reservation(kernels_bin: Path) -> None:
    # two more 2 MiB pages than node 0 has free, whatever this machine reserved
    free = Path("/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages")
    pages = (int(free.read_text()) if free.exists() else 0) + 2
    proc = run([kernels_bin / KERNEL, "--src=0", "--dst=0", "--allow-same", "--pages=2m", f"--size={2 * pages}M"])
    one_line_error(proc, "nr_hugepages")


def test_thp_disabled_for_the_process_is_refused(kernels_bin: Path) -> None:
    """prctl(PR_SET_THP_DISABLE) is inherited across exec: the kernel gets no huge page and says so."""

    def no_thp() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)

    proc = subprocess.run([str(kernels_bin / KERNEL), "--src=0", "--dst=0", "--allow-same", "--pages=thp",
                           "--size=8M", "--ntimes=1"], capture_output=True, text=True, timeout=60, preexec_fn=no_thp)
    one_line_error(proc, "transparent huge pages")


@pytest.mark.parametrize(("pages", "threads"), [("4k", 1), ("4k", 3), ("thp", 2)])
def test_csv_has_the_contract_columns_and_a_row_per_direction_method_and_repetition(
        kernels_bin: Path, tmp_path: Path, pages: str, threads: int) -> None:
    csv_path = tmp_path / "m.csv"
    size = 8 << 20
    run_ok([kernels_bin / KERNEL, "--src=0", "--dst=0", "--allow-same", f"--pages={pages}", "--size=8M",
            "--ntimes=2", f"--threads={threads}", "--batch=100", "--quiet", f"--csv={csv_path}"])
    header, rows = read_rows(csv_path)
    assert header == contract_columns(KERNEL)
    assert [(r["method"], r["repetition"], r["direction"]) for r in rows] == [
        (m, str(rep), d) for m in ("move_pages", "mbind", "migrate_pages") for rep in (0, 1) for d in ("forward", "back")]
    for r in rows:
        move_pages = r["method"] == "move_pages"
        assert (r["src"], r["dst"], r["pages"], r["page_bytes"], r["size_bytes"]) == ("0", "0", pages, "4096", str(size))
        assert r["threads"] == (str(threads) if move_pages else "1")
        assert r["batch"] == ("100" if move_pages else "0")
        assert float(r["seconds"]) > 0 and float(r["gb_s"]) > 0
        assert abs(float(r["gb_s"]) - size / float(r["seconds"]) / 1e9) <= 0.001 + 1e-3 * float(r["gb_s"])
        # every page verified where it should be
        assert (r["pages_total"], r["pages_moved"], r["pages_elsewhere"], r["pages_failed"]) == (
            str(size // 4096), str(size // 4096), "0", "0")
        for counter in ("numa_pages_migrated", "pgmigrate_success", "pgmigrate_fail"):
            assert int(r[counter]) >= 0, (counter, r)
        for entry in filter(None, r["vmstat_deltas"].split(",")):
            name, delta = entry.split(":")
            assert re.match(r"(pgmigrate|numa_|pgpromote|pgdemote|thp_migration)", name) and int(delta) > 0, entry
        assert r["page_fractions"].startswith("0:1.0000")
        assert 0 < float(r["on_cpu_pct"]) <= 100.5
        assert r["host"]


def test_progress_lines_name_each_row(kernels_bin: Path) -> None:
    out = run_ok([kernels_bin / KERNEL, "--src=0", "--dst=0", "--allow-same", "--size=4M", "--ntimes=1",
                  "--method=move_pages,mbind"]).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith(("forward", "back"))]
    assert [(r[0], r[3]) for r in rows] == [("forward", "move_pages"), ("back", "move_pages"),
                                            ("forward", "mbind"), ("back", "mbind")]
    assert all("1024/1024" in r for r in rows)  # every page found on the target
