"""Bad cached inputs (an aggregated table given to analyse, figures or report) end in one line on
stderr naming the file, the column or cell, and the fix; exit status 2, never a traceback or a
silent report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from numasweep.__main__ import main

REPO = Path(__file__).resolve().parents[2]


def _cached(tmp_path: Path, edit) -> Path:
    folder = tmp_path / "results"
    shutil.copytree(REPO / "examples" / "lumi-g", folder)
    table = folder / "latency.csv"
    edit(table)
    return folder


def _one_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("numasweep: error:"), err
    return err


def _drop_size(path: Path) -> None:
    pd.read_csv(path).drop(columns="size_bytes").to_csv(path, index=False)


def _header_only(path: Path) -> None:
    path.write_text(path.read_text().splitlines()[0] + "\n")


def _not_a_number(path: Path) -> None:
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[3, "latency_ns_median"] = "n/a"
    df.to_csv(path, index=False)


@pytest.mark.parametrize("command", ["analyse", "figures"])
def test_a_table_without_its_size_column_names_the_column_and_the_fix(tmp_path, capsys, command):
    folder = _cached(tmp_path, _drop_size)
    err = _one_line(capsys, [command, "--results", str(folder), "-o", str(tmp_path / "out")])
    assert "latency.csv" in err and "'size_bytes'" in err and "rerun snakemake" in err


def test_a_header_only_table_is_an_error_not_a_silent_report(tmp_path, capsys):
    folder = _cached(tmp_path, _header_only)
    err = _one_line(capsys, ["analyse", "--results", str(folder), "-o", str(tmp_path / "f.json")])
    assert "latency.csv" in err and "no rows" in err and "delete" in err
    assert not (tmp_path / "f.json").exists()


def test_a_cell_holding_n_a_is_named_as_it_is_written(tmp_path, capsys):
    folder = _cached(tmp_path, _not_a_number)
    err = _one_line(capsys, ["analyse", "--results", str(folder), "-o", str(tmp_path / "f.json")])
    assert "line 5" in err and "'latency_ns_median'" in err and "'n/a' is not a number" in err
    assert "correct that cell" in err
