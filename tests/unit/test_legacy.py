"""The legacy table importer: the shipped examples re-import exactly, malformed tables name their line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from numasweep.benches.latency import legacy
from numasweep.core.errors import NumasweepError

LUMI_TOPO = "examples/lumi-g/topology.json"



def test_lumi_g_reimport_equals_shipped_csv(repo: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(repo / "examples")
    out = tmp_path / "latency.csv"
    topo = "lumi-g/topology.json"
    legacy.main(["lumi-g/source/concurrent.log", "--arch", topo, "--mem-node", "0,0,1,1,2,2,3,3", "-o", str(out)])
    legacy.main(["lumi-g/source/serial.log", "--arch", topo, "--mode", "serial", "--mem-node", "0,0,1,1,2,2,3,3",
                 "--append", "-o", str(out)])
    assert out.read_text() == (repo / "examples/lumi-g/latency.csv").read_text()
    # appending the same log again replaces its rows instead of doubling them
    legacy.main(["lumi-g/source/serial.log", "--arch", topo, "--mode", "serial", "--mem-node", "0,0,1,1,2,2,3,3",
                 "--append", "-o", str(out)])
    assert out.read_text() == (repo / "examples/lumi-g/latency.csv").read_text()


def test_lumi_g_remote_reimport_equals_shipped_csv(repo: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(repo / "examples")
    out = tmp_path / "latency.csv"
    legacy.main(["lumi-g-remote/source/membind3-serial.log", "--arch", "lumi-g-remote/topology.json",
                 "--mem-node", "3", "-o", str(out)])
    assert out.read_text() == (repo / "examples/lumi-g-remote/latency.csv").read_text()


def test_ulisse_transcription_equals_shipped_csv(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "bandwidth.csv"
    folder = repo / "examples/ulisse"
    subprocess.run([sys.executable, str(folder / "source/convert.py"), str(folder / "source/threads.md"), str(out)],
                   check=True)
    assert out.read_text() == (folder / "bandwidth.csv").read_text()


def test_numa_bench_table_columns(repo: Path) -> None:
    topo = legacy.load_topology(repo / LUMI_TOPO)
    df = legacy.import_log(repo / "examples/lumi-g/source/concurrent.log", topo)
    assert list(df.columns) == legacy.COLUMNS
    assert len(df) == 8 * 15 and set(df["mode"]) == {"concurrent"}  # argv has no --serial
    row = df[(df["rank"] == 2) & (df["size_bytes"] == 4096 << 20)].iloc[0]
    assert (row["cpu"], row["cpu_node"], row["l3_group"], row["latency_ns_median"]) == (17, 1, 2, 183.60)
    assert df["latency_ns_min"].isna().all() and (df["page_fractions"] == "").all()
    assert sorted(df["size_bytes"].unique()) == [(1 << 20) << k for k in range(15)]


def test_numa_allocator_table(repo: Path) -> None:
    topo = legacy.load_topology(repo / "examples/lumi-g-remote/topology.json")
    df = legacy.import_log(repo / "examples/lumi-g-remote/source/membind3-serial.log", topo, mem_nodes=[3])
    assert len(df) == 56 and set(df["mode"]) == {"serial"}  # from argv[1] = --serial
    first = df.iloc[0]
    assert (first["cpu"], first["l3_group"], first["page_size"], first["size_bytes"]) == (1, 0, "4k", 512 << 20)
    assert set(df["policy"]) == {"bind"} and set(df["memory"]) == {"node:3"}
    assert df[df["rank"] == 55].iloc[0]["l3_group"] == 7  # core 63 is on the last CCD


TABLE = """\
argv[1] = --size=1-2
|  MPI  |        CPU     |              MEMORY    |   LATENCY (ns)  |
|-------|---------|------|----------------|-------|--------|--------|
| Ranks | Cores   | NUMA |     Address    | NUMA  | 1MB    | 2MB    |
|-------|---------|------|----------------|-------|--------|--------|
|  000  | 1       |   0  | 0x527e70       |   0   | 11.53  | 12.92  |
|  001  | 9       |   0  | 0x526920       |   0   | 11.43  | {value}  |
 ==================================================================
"""


def test_malformed_value_names_line(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "bad.log"
    log.write_text(TABLE.format(value="12.x"))
    with pytest.raises(NumasweepError, match=r"bad\.log:7: value not a number"):
        legacy.import_log(log, legacy.load_topology(repo / LUMI_TOPO))


def test_missing_column_names_line(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "short.log"
    log.write_text(TABLE.format(value="12.9").replace("| 12.9  |", "|"))
    with pytest.raises(NumasweepError, match=r"short\.log:7: row has 6 columns, the header has 7"):
        legacy.import_log(log, legacy.load_topology(repo / LUMI_TOPO))


def test_bad_size_header_names_line(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "hdr.log"
    log.write_text(TABLE.format(value="12.9").replace("| 2MB    |", "| 2XB    |"))
    with pytest.raises(NumasweepError, match=r"hdr\.log:4: size column '2XB'"):
        legacy.import_log(log, legacy.load_topology(repo / LUMI_TOPO))


def test_mode_needed_and_checked(repo: Path, tmp_path: Path) -> None:
    topo = legacy.load_topology(repo / LUMI_TOPO)
    log = tmp_path / "nomode.log"
    log.write_text(TABLE.format(value="12.9").split("\n", 1)[1])
    with pytest.raises(NumasweepError, match="pass --mode"):
        legacy.import_log(log, topo)
    assert set(legacy.import_log(log, topo, mode="serial")["mode"]) == {"serial"}
    withargv = tmp_path / "argv.log"
    withargv.write_text(TABLE.format(value="12.9"))
    with pytest.raises(NumasweepError, match="argv lines say mode concurrent"):
        legacy.import_log(withargv, topo, mode="serial")


def test_mem_node_checked_against_table(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    log.write_text(TABLE.format(value="12.9"))
    with pytest.raises(NumasweepError, match=r"t\.log:6: rank 0 memory is on node 0, not the bound node 1"):
        legacy.import_log(log, legacy.load_topology(repo / LUMI_TOPO), mem_nodes=[1])


def test_cli_prints_one_line_error(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "bad.log"
    log.write_text(TABLE.format(value="oops"))
    proc = subprocess.run([sys.executable, "-m", "numasweep", "import-legacy", str(log), "--arch",
                           str(repo / LUMI_TOPO), "-o", str(tmp_path / "x.csv")], capture_output=True, text=True,
                          cwd=repo)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and f"{log}:7:" in proc.stderr
    assert not (tmp_path / "x.csv").exists()


def test_no_table(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "empty.log"
    log.write_text("nothing here\n")
    with pytest.raises(NumasweepError, match="no rank table"):
        legacy.import_log(log, legacy.load_topology(repo / LUMI_TOPO))


def test_shipped_csvs_hold_no_invented_columns(repo: Path) -> None:
    for name in ("lumi-g", "lumi-g-remote"):
        df = pd.read_csv(repo / f"examples/{name}/latency.csv")
        for col in ("latency_ns_min", "latency_ns_max", "samples", "loads", "page_fractions", "host"):
            assert df[col].isna().all(), (name, col)
