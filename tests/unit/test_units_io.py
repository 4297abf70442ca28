"""Sizes, CPU lists, result-file helpers and the YAML loader shared by every stage."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from numasweep.core import registry
from numasweep.core.errors import NumasweepError
from numasweep.core.io import ALIAS_VALUES, atomic_write_text, load_yaml, read_csv
from numasweep.core.units import format_cpulist, format_size, parse_cpulist, parse_size, parse_sizes, size_words
from numasweep.results.aggregate import read_table
from helpers.workflow import TEST_CONFIGS

MiB = 1 << 20


def test_plain_numbers_are_mib_like_the_seeds():
    assert parse_size("512") == 512 * MiB
    assert parse_size(16) == 16 * MiB


@pytest.mark.parametrize(
    "text,expected",
    [("64K", 64 << 10), ("1M", MiB), ("1G", 1 << 30), ("2GiB", 2 << 30), ("4kb", 4 << 10)],
)
def test_suffixes_are_binary(text, expected):
    assert parse_size(text) == expected


def test_seed_range_is_fifteen_powers_of_two():
    sizes = parse_sizes("1-16384")
    assert len(sizes) == 15
    assert sizes[0] == MiB and sizes[-1] == 16384 * MiB
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))


def test_lists_mix_ranges_and_sizes():
    assert parse_sizes("16K,1-4") == [16 << 10, MiB, 2 * MiB, 4 * MiB]
    assert parse_sizes(["64K", 2]) == [64 << 10, 2 * MiB]


@pytest.mark.parametrize(
    "bad,word",
    [("0", "positive"), ("-4", "not a size"), ("12X", "not a size"), ("16-1", "backwards"), ("1-12", "powers of two")],
)
def test_bad_sizes_name_the_problem(bad, word):
    with pytest.raises(NumasweepError, match=word):
        parse_sizes(bad)


def test_format_size_round_trips():
    for n in (4096, 16 * MiB, 3 << 30, 1000):
        text = format_size(n)
        assert text.endswith("B")
    assert format_size(32 * MiB) == "32MiB"


def test_a_reader_reads_every_size_in_a_binary_unit_to_three_figures():
    """Sizes off the power-of-two grid too: never a count of bytes, never more than three figures."""
    assert [size_words(n) for n in (4096, 279936, 1536 << 10, 1000 << 10, 16 << 30, 1 << 40)] == \
        ["4 KiB", "273 KiB", "1.5 MiB", "0.977 MiB", "16 GiB", "1 TiB"]


def test_cpulists_round_trip():
    cpus = parse_cpulist("0-15,64-79")
    assert len(cpus) == 32 and cpus[15] == 15 and cpus[16] == 64
    assert format_cpulist(cpus) == "0-15,64-79"
    assert parse_cpulist("") == []
    with pytest.raises(NumasweepError, match="CPU"):
        parse_cpulist("3-1")


def test_atomic_write_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "x.csv"
    target.parent.mkdir()
    atomic_write_text(target, "a,b\n1,2\n")
    assert target.read_text() == "a,b\n1,2\n"
    assert [p.name for p in target.parent.iterdir()] == ["x.csv"]


def test_atomic_write_refuses_a_missing_folder_and_a_folder_as_file(tmp_path):
    for target, says in ((tmp_path / "sub" / "x.csv", "mkdir -p"), (tmp_path, "is a folder")):
        with pytest.raises(NumasweepError) as err:
            atomic_write_text(target, "a\n")
        assert says in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "sub").exists()


def test_corrupt_csv_is_one_line_naming_file(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b'a,b\n1,"2\n3,4,5,6\n')
    with pytest.raises(NumasweepError) as err:
        read_csv(bad)
    assert str(bad) in str(err.value) and "\n" not in str(err.value)
    good = tmp_path / "good.csv"
    good.write_text("a,b\n1,2\n")
    with pytest.raises(NumasweepError, match="missing column"):
        read_csv(good, ["a", "c"])
    assert list(read_csv(good, ["a"]).columns) == ["a", "b"]


def test_an_anchor_bomb_is_refused_at_once_naming_its_line():
    path = TEST_CONFIGS / "anchor-bomb.yaml"
    start = time.monotonic()
    with pytest.raises(NumasweepError) as err:
        load_yaml(path, "config")
    assert time.monotonic() - start < 2
    # a: 9 values, b: 9 x 10 from aliases, c: 9 x 91, d: 9 x 820, e: 9 x 7381 passes 10000.
    assert str(err.value).startswith(f"{path}:8: in the config, aliases (*name) under 'e' expand to more than "
                                     f"{ALIAS_VALUES} values"), err.value
    assert "write the values out" in str(err.value)


def test_aliases_that_expand_a_little_are_read_as_yaml_reads_them(tmp_path):
    """Anchors reused within the bound, a merge key overriding a merged value, and scalars: all
    as yaml.safe_load gives them."""
    text = ("base: &base {sizes: 64K, repetitions: 3}\nlatency:\n  sweeps:\n    - <<: *base\n      sizes: 1M\n"
            "    - *base\nlist: &l [1, 2]\nmore: [*l, *l]\nname: &n x\nsame: *n\n")
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    assert load_yaml(path) == yaml.safe_load(text)
    assert load_yaml(path)["latency"]["sweeps"][0] == {"sizes": "1M", "repetitions": 3}
    (tmp_path / "many.yaml").write_text("a: &a [" + ", ".join(["1"] * 99) + "]\nb: [" + ", ".join(["*a"] * 99) + "]\n")
    assert len(load_yaml(tmp_path / "many.yaml")["b"]) == 99  # 9900 values from aliases: within the bound


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    (tmp_path / "loop.yaml").write_text("system: x\na: &a [1, *a]\n")
    with pytest.raises(NumasweepError, match=r"loop.yaml:2: in the arch file, 'a' holds an alias to itself"):
        load_yaml(tmp_path / "loop.yaml", "arch file")


@pytest.mark.parametrize("text,lines,key", [
    ("latency:\n  sweeps: []\nsystem: x\nlatency:\n  sweeps: [{sizes: 64K}]\n", (1, 4), "latency"),
    ("latency:\n  sweeps:\n    - sizes: 64K\n      label: a\n      sizes: 1M\n", (3, 5), "sizes"),
    ("nodes: [{id: 0, cpus: '0', id: 1}]\n", (1, 1), "id"),
], ids=["top-level key", "key of a sweep", "key of a flow mapping"])
def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path, text, lines, key):
    (tmp_path / "dup.yaml").write_text(text)
    with pytest.raises(NumasweepError) as err:
        load_yaml(tmp_path / "dup.yaml", "config")
    assert str(err.value) == (f"{tmp_path / 'dup.yaml'}:{lines[1]}: in the config, key '{key}' is given twice in one "
                              f"mapping (lines {lines[0]} and {lines[1]}), and YAML would keep only the last; "
                              "merge them into one")


def test_the_same_key_in_two_mappings_is_no_duplicate(tmp_path):
    (tmp_path / "ok.yaml").write_text("latency: {sweeps: [{sizes: 64K}, {sizes: 1M}]}\ncopy: {sweeps: []}\n")
    assert load_yaml(tmp_path / "ok.yaml")["latency"]["sweeps"][1] == {"sizes": "1M"}


def test_nesting_past_what_python_can_read_is_one_line(tmp_path):
    (tmp_path / "deep.yaml").write_text("x: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(NumasweepError, match="deep.yaml: the config nests lists or mappings too deep to read"):
        load_yaml(tmp_path / "deep.yaml", "config")


def test_cli_unknown_command_exits_2():
    proc = subprocess.run([sys.executable, "-m", "numasweep", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "unknown command" in proc.stderr


def test_read_csv_leaves_skipped_columns_unread_but_never_a_checked_one(tmp_path):
    """Columns in `skip` are not read (a large table loads faster), except the columns the file
    must have and those whose values are checked: a bad latency is refused whatever was skipped."""
    path = tmp_path / "latency.csv"
    path.write_text("rank,cpu,size_bytes,latency_ns_median,start,command\n0,1,1024,80.5,t0,numa_latency\n")
    df = read_table(path, registry.get("latency"), skip=("start", "command", "latency_ns_median", "rank"))
    assert list(df.columns) == ["cpu", "size_bytes", "latency_ns_median"]
    assert list(read_csv(path, ["start"], skip=("start",)).columns)[-2:] == ["start", "command"]
    path.write_text("rank,cpu,size_bytes,latency_ns_median,start\n0,1,1024,-3,t0\n")
    with pytest.raises(NumasweepError, match="latency_ns_median"):
        read_table(path, registry.get("latency"), skip=("latency_ns_median",))


def test_read_csv_codes_hold_the_same_text_as_categories_in_text_order(tmp_path, monkeypatch):
    """`codes`: the columns pandas reads as text come back as categoricals of the same strings
    (missing values missing), categories in text order so a grouping sorts as the text does;
    numbers stay numbers, and a column whose first rows are numbers stays as pandas reads it."""
    import pandas as pd

    from numasweep.core import io

    monkeypatch.setattr(io, "_SNIFF_ROWS", 3)
    path = tmp_path / "latency.csv"
    path.write_text("mode,mem_nodes,weights,size_bytes,latency_ns_median\n"
                    "serial,1,,1024,80.5\nconcurrent,0,1:2,2048,81\nserial,0,,1024,80\n"
                    "concurrent,0-1,,4096,90\nbase,1,1:2,1024,79\n")
    plain, coded = read_csv(path), read_csv(path, codes=True)
    for col in ("mode", "weights"):
        assert isinstance(coded[col].dtype, pd.CategoricalDtype), col
        assert list(coded[col].cat.categories) == sorted(coded[col].cat.categories)
        assert coded[col].astype(object).where(coded[col].notna(), None).tolist() == \
            plain[col].astype(object).where(plain[col].notna(), None).tolist()
    assert [k for k, _ in coded.groupby("mode", observed=True)] == ["base", "concurrent", "serial"]
    # numbers in the first three rows: not sniffed as text, read as pandas reads the whole column
    assert not isinstance(coded["mem_nodes"].dtype, pd.CategoricalDtype)
    assert coded["mem_nodes"].tolist() == plain["mem_nodes"].tolist()
    assert coded["size_bytes"].dtype == plain["size_bytes"].dtype == "int64"
    assert coded["latency_ns_median"].tolist() == plain["latency_ns_median"].tolist()


def _table(path, rows=40):
    """A small aggregated latency table: text with blanks, integers, floats, a boolean column."""
    lines = ["job_id,mode,weights,size_bytes,latency_ns_median,retaken,label"]
    for i in range(rows):
        lines.append(f"lat-{i % 7},{'serial' if i % 3 else 'concurrent'},{'1:2' if i % 4 == 0 else ''},"
                     f"{1024 << (i % 5)},{80 + i / 8},{'True' if i % 6 == 0 else 'False'},{'x' if i % 9 == 0 else ''}")
    path.write_text("\n".join(lines) + "\n")
    return path






def test_columns_left_unread_are_named_by_no_step_that_skips_them():
    """analyse and figures leave io.UNREAD and io.REPORT_ONLY unread, the report and fleet io.UNREAD: safe
    only while the code of those steps never names such a column (a new use must take it out). The
    report's own parts of a benchmark (its report and cross hooks, its run-quality check)
    read the report's table and may name REPORT_ONLY columns."""
    import ast
    from pathlib import Path

    from numasweep.core import io, registry

    package = Path(io.__file__).parents[1]
    report_parts = {f.__name__ for b in registry.all_benches().values()
                    for f in (b.presentation.report, b.presentation.cross,
                              *((b.checks.quality.runs, b.checks.quality.row) if b.checks.quality else ()))
                    if f is not None}

    def named(path: Path, columns: tuple[str, ...], skip: set[str]) -> set[tuple[str, str]]:
        found = set()
        for node in ast.parse(path.read_text()).body:
            name = getattr(node, "name", None) or next((getattr(t, "id", None) for t in getattr(node, "targets", [])), None)
            if name in skip:
                continue
            found |= {(f"{path.relative_to(package)}:{name}", n.value) for n in ast.walk(node)
                      if isinstance(n, ast.Constant) and n.value in columns}
        return found

    steps = [*package.glob("findings/*.py"), *package.glob("statistics/*.py"), package / "results/tables.py",
             package / "results/series.py", package / "reporting/figures.py", *package.rglob("benches/**/*.py")]
    # the import of old logs (import-legacy) writes a table with every column; it reads none
    steps.remove(package / "benches/latency/legacy.py")
    assert len(steps) > 15
    quality_modules = {package / "benches/latency/quality.py"}
    got = set()
    for path in steps:
        if path in quality_modules:
            got |= named(path, io.UNREAD, set())
        else:
            got |= named(path, io.UNREAD + io.REPORT_ONLY, report_parts | {"QUALITY"})
    for path in (package / "reporting/report.py", package / "results/quality.py", package / "reporting/fleet_report.py"):
        got |= named(path, io.UNREAD, set())
    assert got == set()


