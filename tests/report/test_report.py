"""The Markdown report: sections follow the data, numbers come from the data or findings."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from helpers.synthetic import MiB, write_results
from numasweep.findings import analysis
from numasweep.core import firmware
from numasweep.core.topology import Topology
from numasweep.reporting import figures, report
from numasweep.__main__ import main
from numasweep.core.units import size_words
from numasweep.benches.bandwidth import report as bw_report
from numasweep.benches.latency import report as lat_report
from numasweep.benches.latency import tables as lat_tables

NUMBER = re.compile(r"\d+(?:\.\d+)?")


def render(results: Path, tmp_path: Path) -> tuple[str, dict]:
    findings = analysis.analyse(results)
    figdir = tmp_path / "out" / "figures"
    figures.draw_all(results, figdir)
    out = report.render(results, findings, figdir, tmp_path / "out" / "report.md")
    return out.read_text(), findings


@pytest.fixture(scope="module")
def full_report(tmp_path_factory) -> tuple[Path, str, dict, Path]:
    """The report of a results folder with every benchmark, rendered once for this module."""
    tmp = tmp_path_factory.mktemp("full")
    results = write_results(tmp / "results" / "twin")
    text, findings = render(results, tmp)
    return results, text, findings, tmp / "out"


def prose_lines(text: str) -> list[str]:
    """Lines a reader reads as sentences: not tables, code blocks, images or headings."""
    lines, in_code = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or line.startswith(("|", "![", "#")) or not line.strip():
            continue
        lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def allowed_numbers(results: Path, findings: dict) -> set[str]:
    """Every number spelled in the inputs: findings, topology, CSV cells, sizes as written."""
    text = json.dumps(findings) + (results / "topology.json").read_text()
    sizes: set[int] = set()
    for csv in results.glob("*.csv"):
        text += csv.read_text()
        df = pd.read_csv(csv)
        for col in ("size_bytes", "bytes", "access_size(bytes)"):
            if col in df:
                sizes |= {int(v) for v in df[col].dropna()}
    text += " ".join(size_words(s) for s in sizes)
    return set(NUMBER.findall(text))


def test_full_report_has_every_section(full_report) -> None:
    _, text, findings, out = full_report
    for heading in ("## Test configuration", "### Commands run", "### System", "### CPU lists per node",
                    "### Cache hierarchy", "### Node distances", "### Memory latency",
                    "### Memory bandwidth (STREAM)", "### Node-to-node copy", "### Host-device transfers",
                    "## Summary", "### Placement verification"):
        assert heading in text, heading
    # the analysis by subject, in a fixed order, then the raw tables; no heading per finding
    sections = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert sections == ["Summary", "Test configuration", "Caches", "TLB", "DRAM and NUMA locality",
                        "Contention and concurrency", "Bandwidth", "Measured against the firmware", "Data quality",
                        "Raw results"], sections
    assert not [line for line in text.splitlines() if line.startswith("#### ")]
    assert "No latency curve was measured with both small and huge pages" in text
    # the memory-only node is marked in the configuration
    assert "| 2 | none (memory only) |" in text and "memory only, no CPUs: node 2" in text
    assert "mpirun -np 4 numa_latency --size=1-256 --serial" in text
    assert "virtual machine" not in text.lower()
    # every figure the figures step drew is in the report, and the links resolve
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(links) == len(list((out / "figures").rglob("*.png"))) > 0
    for link in links:
        assert (out / link).is_file(), link
    # every finding's sentence is in the report, word for word
    for f in findings["findings"]:
        assert f["summary"] in text, f["id"]


def test_every_number_in_the_prose_comes_from_the_inputs(full_report) -> None:
    results, text, findings, _ = full_report
    allowed = allowed_numbers(results, findings)
    prose = prose_lines(text)
    assert len(prose) > 20
    strays = {(n, line) for line in prose for n in NUMBER.findall(line) if n not in allowed}
    assert not strays, f"numbers not found in findings or data: {sorted(strays)[:5]}"


def test_raw_latency_table_matches_the_csv(full_report) -> None:
    results, text, _, _ = full_report
    df = pd.read_csv(results / "latency.csv")
    block = text.split("**Latency (ns per load; the median over runs), concurrent**")[1].split("\n\n")[1]
    header, _, *rows = block.splitlines()
    sizes = [c.strip() for c in header.strip("|").split("|")][4:]
    assert sizes == [size_words(MiB << i) for i in range(9)]
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        rank = int(cells[0])
        for size, cell in zip(sizes, cells[4:]):
            expected = df[(df["mode"] == "concurrent") & (df["rank"] == rank)
                          & (df["size_bytes"].map(size_words) == size)]["latency_ns_median"].iloc[0]
            assert cell == f"{expected:.2f}"


def test_placement_pages_per_node_for_every_rank(full_report) -> None:
    _, text, _, _ = full_report
    section = text.split("## Placement verification")[1].split("\n## ")[0]
    assert "**concurrent, 256 MiB per rank**" in section and "**serial, 256 MiB per rank**" in section
    # rank 2 runs on CPU 5 (node 1): all 256 MiB on node 1, none on nodes 0 and 2
    assert "| 2 | 5 | 1 | bind 1 | 0.00 | 256.00 | 0.00 |" in section


def test_placement_rows_keep_their_own_pages_when_ranks_alternate_nodes() -> None:
    """Ranks placed round robin (rank 0 on node 1, rank 1 on node 0, ...): the table's rows are
    in rank order, not the order of their memory nodes, and each row shows its own rank's pages.
    With two hosts each row names its host; over more than digest.HOST_ROWS hosts each rank's
    row is the median over them."""
    def frame(host: str) -> pd.DataFrame:
        return pd.DataFrame([{"mode": "concurrent", "host": host, "rank": r, "cpu": r, "cpu_node": 1 - r % 2,
                              "mem_nodes": str(1 - r % 2), "policy": "bind", "size_bytes": MiB,
                              "latency_ns_median": 100.0, "page_fractions": f"{1 - r % 2}:1.0000"}
                             for r in range(4)])
    for hosts, named in ((["a"], False), (["a", "b"], True), ([f"h{i}" for i in range(9)], False)):
        (table,) = lat_report.placement_tables(pd.concat(map(frame, hosts), ignore_index=True),
                                           Topology.from_dict({"system": "two", "threads_per_core": 1,
                                                               "nodes": [{"id": 0, "cpus": [1, 3], "memory_bytes": 1 << 30},
                                                                         {"id": 1, "cpus": [0, 2], "memory_bytes": 1 << 30}],
                                                               "distances": [[10, 20], [20, 10]]}))
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in table["table"].splitlines()[2:]]
        assert len(rows) == 4 * (len(hosts) if named else 1)
        for cells in rows:
            node = 1 - int(cells[0]) % 2
            mib = [float(c) for c in cells[-2:]]
            assert mib[node] == 1.0 and mib[1 - node] == 0.0, (hosts, cells)
            assert (cells[3] in hosts) == named
        assert table["title"].endswith("median over 9 hosts") == (len(hosts) == 9)


def test_absent_data_leaves_sections_out(tmp_path: Path) -> None:
    results = write_results(tmp_path / "res", benches=("latency",))
    df = pd.read_csv(results / "latency.csv")
    df = df[df["mode"] == "serial"].drop(columns=["command", "page_fractions"])
    df.to_csv(results / "latency.csv", index=False)
    out = report.render(results, {"system": "twin", "findings": []}, None, tmp_path / "r.md")
    text = out.read_text()
    assert "### Memory latency" in text and "## Raw results" in text
    for absent in ("## Memory bandwidth", "## Node-to-node copy", "## Host-device transfers",
                   "### Commands run", "![", "## Caches", "## Contention and concurrency",
                   "## Placement verification", "The findings that matter", "concurrent"):
        assert absent not in text, absent
    assert "\n\n\n" not in text


def test_commands_reach_the_report_through_the_aggregated_table(tmp_path: Path) -> None:
    """The launch line travels provenance -> aggregate's `command` column -> report; a
    provenance file the report's rule does not declare is never read."""
    from numasweep.results import aggregate

    results = write_results(tmp_path / "res", benches=("latency",))
    jobs = results / "latency"
    jobs.mkdir()
    df = pd.read_csv(results / "latency.csv")
    kernel_cols = [c for c in df.columns if c not in ("job_id", "strategy", "memory", "repetition", "command")]
    df[df["mode"] == "serial"][kernel_cols].to_csv(jobs / "lat-serial.csv", index=False)
    launch = "srun --ntasks 4 --cpu-bind=map_cpu:1,2,5,6 numa_latency --size=1-256"
    (jobs / "lat-serial.json").write_text(json.dumps({"job_id": "lat-serial", "grid": {"repetition": 0},
                                                      "command": launch, "argv": launch.split()}))
    table, _ = aggregate.aggregate([jobs / "lat-serial.csv"], "latency")
    assert set(table["command"]) == {launch}
    table.to_csv(results / "latency.csv", index=False)
    (jobs / "stray.json").write_text(json.dumps({"command": "never shown"}))
    text = report.render(results, {"findings": []}, None, tmp_path / "r.md").read_text()
    assert f"### Commands run\n\n```bash\n{launch}\n```" in text
    assert "never shown" not in text


def test_virtual_machine_is_stated(tmp_path: Path) -> None:
    results = write_results(tmp_path / "res", benches=("latency",), hypervisor="KVM")
    text = report.render(results, {"findings": []}, None, tmp_path / "r.md").read_text()
    assert "**Virtual machine.**" in text and "(KVM)" in text and "emulated or virtual machine" in text


def test_a_gpu_without_a_numa_node_is_said_so(tmp_path: Path) -> None:
    """A virtual machine's GPU often has no NUMA node (sysfs numa_node -1, null in topology.json):
    the system section says the node is unknown, never "node None"."""
    results = write_results(tmp_path / "res", benches=("gpu_xfer",), hypervisor="KVM")
    topo = json.loads((results / "topology.json").read_text())
    topo["gpus"] = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "pci": "0000:00:06.0", "node": None}]
    (results / "topology.json").write_text(json.dumps(topo))
    text = report.render(results, {"findings": []}, None, tmp_path / "r.md").read_text()
    assert "- **GPU 0**: NVIDIA H100 80GB HBM3 (0000:00:06.0), on NUMA node unknown" in text
    assert "None" not in text


def test_a_firmware_value_that_was_ignored_is_said_in_the_system_section(tmp_path: Path) -> None:
    """A weight of 300 in sysfs (the kernel's range is 1..255) was read as nothing, and the
    report says which file said what, never "node 0: 300"."""
    weights = tmp_path / "sys" / firmware.WEIGHTS_DIR
    weights.mkdir(parents=True)
    (weights / "node0").write_text("300\n")
    (weights / "auto").write_text("false\n")
    results = write_results(tmp_path / "res", benches=("latency",))
    topo = json.loads((results / "topology.json").read_text())
    topo["firmware"] = firmware.read(tmp_path / "sys").to_dict()
    (results / "topology.json").write_text(json.dumps(topo))
    text = report.render(results, {"findings": []}, None, tmp_path / "r.md").read_text()
    assert (f"- **Firmware, not recorded**: firmware file {weights / 'node0'} says '300': ignored (a weight is a "
            "whole number from 1 to 255)") in text
    assert "- **Firmware**: weighted-interleave weights: not provided" in text and "node 0: 300" not in text


def test_each_skipped_benchmark_is_a_not_run_line_of_the_configuration(tmp_path: Path, capsys) -> None:
    """skipped.json (rule skipped: the benchmarks the plan left out, and why) gives one "not run"
    line per benchmark, with its reason, in the test configuration section; a folder without it
    has no such part, and one whose file is not JSON ends the report in one line."""
    results = write_results(tmp_path / "res", benches=("latency",))
    text = report.render(results, {"findings": []}, None, tmp_path / "r.md").read_text()
    assert "### Not run" not in text and "not run:" not in text
    why = {"gpu_xfer": "the topology 'twin' lists no GPU; run it on a machine with GPUs",
           "c2c": "its sweeps are empty (`c2c: {sweeps: []}`)"}
    (results / "skipped.json").write_text(json.dumps(why))
    text = report.render(results, {"findings": []}, None, tmp_path / "r.md").read_text()
    configuration = text.split("## Test configuration")[1].split("\n## ")[0]
    part = configuration.split("### Not run")[1].split("\n### ")[0]
    assert [line for line in part.splitlines() if line] == [
        f"- **{bench}**: not run: {report.md_text(why[bench])}" for bench in sorted(why)]
    (results / "skipped.json").write_text("{not json")
    (tmp_path / "f.json").write_text(json.dumps({"findings": []}))
    assert main(["report", "--results", str(results), "--findings", str(tmp_path / "f.json"),
                 "-o", str(tmp_path / "r2.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("numasweep: error:") and "skipped.json: not readable JSON" in err, err
    assert not (tmp_path / "r2.md").exists()


def test_cross_system_report_side_by_side(tmp_path: Path) -> None:
    a = write_results(tmp_path / "a", benches=("latency",), system="alpha")
    b = write_results(tmp_path / "b", benches=("latency", "bandwidth"), system="beta", hypervisor="QEMU")
    df_b = pd.read_csv(b / "latency.csv")
    df_b["latency_ns_median"] *= 2
    df_b.to_csv(b / "latency.csv", index=False)
    out = tmp_path / "cross" / "cross.md"
    assert main(["report", "--results", str(a), "--results", str(b), "--figures",
                 str(tmp_path / "cross" / "figures"), "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# NUMA memory benchmarks: alpha and beta")
    assert "| benchmarks | latency | latency, bandwidth |" in text
    assert "beta was measured under a hypervisor" in text
    # beta's latencies are exactly twice alpha's at every common size
    table = text.split("**Median latency over ranks (ns), serial**")[1].split("\n\n")[1]
    ratios = [row.strip("|").split("|")[-1].strip() for row in table.splitlines()[2:]]
    assert ratios and set(ratios) == {"2.00"}
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links and all((out.parent / link).is_file() for link in links)
    assert "## Findings on alpha" in text and "## Findings on beta" in text


def test_cross_system_report_gives_the_best_bandwidth_side_by_side(tmp_path: Path) -> None:
    """Bandwidth measured on both systems: its section gives, per kernel, the best bandwidth with
    memory on the threads' node at each thread count both measured, and the ratio."""
    a = write_results(tmp_path / "a", benches=("bandwidth",), system="alpha")
    b = write_results(tmp_path / "b", benches=("bandwidth",), system="beta")
    df_b = pd.read_csv(b / "bandwidth.csv")
    df_b["best_mb_s"] *= 2
    df_b.to_csv(b / "bandwidth.csv", index=False)
    text = report.render_cross([a, b], [None, None], None, tmp_path / "cross.md").read_text()
    section = text.split("\n## Memory bandwidth (STREAM)\n")[1]
    table = section.split("**Best triad bandwidth (GB/s, 10^9 bytes/s), memory on the threads' node**")[1].split("\n\n")[1]
    rows = [[c.strip() for c in row.strip("|").split("|")] for row in table.splitlines()[2:]]
    assert [r[0] for r in rows] == ["1", "2", "3", "4"] and {r[-1] for r in rows} == {"2.00"}
    assert "## Memory latency" not in text


def test_lumi_g_example_report_carries_its_findings(repo: Path, tmp_path: Path) -> None:
    example = repo / "examples" / "lumi-g"
    findings = analysis.analyse(example)
    text = report.render(example, findings, None, tmp_path / "r.md").read_text()
    assert "AMD EPYC 7A53 64-Core Processor" in text
    assert "| 0 | 0-15,64-79 | 0, 1 |" in text
    assert "| L3 Unified | 32 MiB | 8 | 256 MiB | 16 |" in text
    # the seed's concurrent table, rank 0 at 4096 MB
    assert "| 0 | 1 | 0 | 0 | 11.53 | 12.92 |" in text and "178.93" in text
    matched = [f for f in findings["findings"] if f["id"] == "cache_threshold"
               and (f["numbers"].get("cache_bytes") in (32 * MiB, 64 * MiB))]
    assert matched, "no cache step matched to the 32 MiB or 64 MiB L3"
    summary = text.split("## Summary")[1].split("\n## ")[0]
    # one line per cache level, with the range of the step ratios of its series
    (line,) = [x for x in summary.splitlines() if x.startswith("- **Latency step out of the L3 (32 MiB")]
    for f in matched:
        assert f"{f['numbers']['step_ratio']:.2f}x" in line, line


def test_cli_errors_are_one_line(full_results: Path, tmp_path: Path, capsys) -> None:
    cases = [
        ["report", "--results", str(full_results), "--findings", str(tmp_path / "none.json"), "-o", str(tmp_path / "r.md")],
        ["report", "--results", str(full_results), "--results", str(full_results), "--results",
         str(full_results), "-o", str(tmp_path / "r.md")],
        ["report", "--results", str(tmp_path / "empty"), "--findings", str(tmp_path / "f.json"), "-o", str(tmp_path / "r.md")],
    ]
    (tmp_path / "empty").mkdir()
    (tmp_path / "f.json").write_text("{not json")
    for argv in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("numasweep: error:") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "r.md").exists()


@pytest.mark.parametrize("name", ["lumi-g-remote", "ulisse", "h100-vm"])
def test_other_examples_render(repo: Path, tmp_path: Path, name: str) -> None:
    example = repo / "examples" / name
    findings = analysis.analyse(example)
    figdir = tmp_path / "figures"
    figures.draw_all(example, figdir)
    text = report.render(example, findings, figdir, tmp_path / "r.md").read_text()
    assert findings["findings"], name
    for f in findings["findings"]:
        assert f["summary"] in text
    assert re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)


def test_bandwidth_section_states_the_bytes_each_kernel_counts() -> None:
    """STREAM states its byte counting beside its table; so does the report, from the kernel's
    `bytes_per_element` column (here: rows as numa_bandwidth writes them, values made up)."""
    rows = [{"kernel": k, "threads": 1, "cpus": "0", "cpu_nodes": "0", "policy": "bind", "mem_nodes": "0",
             "best_mb_s": 1000.0, "stores": stores, "bytes_per_element": per}
            for k, per in (("copy", 16), ("triad", 24), ("read", 8)) for stores in ("regular", "nt")]
    tables = bw_report.bandwidth_raw_tables(pd.DataFrame(rows))
    counted = [t for t in tables if t["title"].startswith("Bytes counted per element")]
    assert len(counted) == 1 and "write-allocate" in counted[0]["title"]
    lines = counted[0]["table"].splitlines()[2:]
    assert [ln.split("|")[1:4] for ln in lines] == [[" copy ", " 16 ", " nt, regular "],
                                                     [" triad ", " 24 ", " nt, regular "],
                                                     [" read ", " 8 ", " nt, regular "]]
    assert not [t for t in bw_report.bandwidth_raw_tables(pd.DataFrame(rows).drop(columns="bytes_per_element"))
                if t["title"].startswith("Bytes counted")]


def test_every_finding_id_has_its_subject(repo: Path) -> None:
    """Each id the analyses give (Finding(id=...) in the package) lands in one analysis section,
    never in the catch-all; compare's regressions are its own section's (compare.markdown)."""
    package = repo / "workflow" / "numasweep"
    found = {m for path in package.rglob("*.py") if path.name != "compare.py"
             for m in re.findall(r"Finding\(\s*id=\"([a-z0-9_]+)\"", path.read_text())}
    assert {"cache_threshold", "tlb_cost", "loaded_latency", "gpu_aggregate", "rank_scaling", "placement"} <= found
    assert {i: report.subject_of(i).title for i in found if report.subject_of(i) is report.OTHER} == {}
    ids = [i for sub in report.subjects() for i in sub.ids]
    assert len(ids) == len(set(ids)) and set(ids) == found


def test_launch_lines_are_listed_once_in_order_of_first_appearance():
    frames = {"latency": pd.DataFrame({"command": ["b --x", "a --y", "b --x", None, "a --y"]}),
              "bandwidth": pd.DataFrame({"launch": ["c", "a --y", "d"]})}
    assert report.commands(frames) == ["b --x", "a --y", "c", "d"]


def test_latency_table_is_reduced_once_per_table_and_each_caller_gets_its_own_copy():
    """Model rows: one series, two sizes, two repetitions."""

    df = pd.DataFrame({"rank": [0, 0, 0, 0], "cpu": [1, 1, 1, 1], "mode": ["serial"] * 4,
                       "size_bytes": [MiB, MiB, 2 * MiB, 2 * MiB], "repetition": [0, 1, 0, 1],
                       "latency_ns_median": [10.0, 12.0, 20.0, 22.0]})
    first = lat_tables.latency_table(df)
    assert first["latency_ns_median"].tolist() == [11.0, 21.0]
    first["latency_ns_median"] = 0.0
    assert lat_tables.latency_table(df)["latency_ns_median"].tolist() == [11.0, 21.0]
    other = df.assign(latency_ns_median=[1.0, 3.0, 5.0, 7.0])
    assert lat_tables.latency_table(other)["latency_ns_median"].tolist() == [2.0, 6.0]


def test_launch_lines_of_repetitions_are_one_loop_that_bash_runs(tmp_path: Path) -> None:
    """Thousands of repetitions list each launch once: lines that differ only in the repetition's
    number become a bash loop, which expands back to exactly those lines."""
    lines = [f"numa_latency --size=1-64 --csv=lat-d0-r2-serial-rep{r}.csv" for r in (0, 1, 2)]
    odd = [f"numa_latency --size=1-64 --csv=lat-d1-r2-serial-rep{r}.csv" for r in (0, 3)]
    alone = "numa_bandwidth --kernel triad --csv=bw-c0-t2-rep0.csv"
    frames = {"latency": pd.DataFrame({"command": lines + odd + lines}), "bandwidth": pd.DataFrame({"command": [alone]})}
    found = report.commands(frames)
    assert found == ["for rep in {0..2}; do numa_latency --size=1-64 --csv=lat-d0-r2-serial-rep${rep}.csv; done",
                     "for rep in 0 3; do numa_latency --size=1-64 --csv=lat-d1-r2-serial-rep${rep}.csv; done",
                     alone]
    script = "\n".join(line.replace("do numa_latency", "do echo numa_latency") for line in found[:2])
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == lines + odd


def test_a_fleets_launch_lines_are_one_loop_over_the_nodes_that_bash_runs() -> None:
    """A fleet repeats each launch on every node (`<id>-on-<node>`): the nodes become a loop around
    the repetitions' loop, which bash expands back to exactly those lines; a node that ran other
    repetitions keeps its own line."""
    nodes = [f"nid{n:04d}" for n in (8, 9, 10, 11)]
    lines = [f"numa_latency --size=1-64 --csv=lat-d0-rep{r}-on-{n}.csv" for n in nodes for r in (0, 1)]
    odd = ["numa_latency --size=1-64 --csv=lat-d1-rep0-on-nid0008.csv"]
    frames = {"latency": pd.DataFrame({"command": lines + odd, "host": [n for n in nodes for _ in (0, 1)] + ["nid0008"]})}
    found = report.commands(frames)
    assert found == ["for node in nid{0008..0011}; do for rep in {0..1}; do "
                     "numa_latency --size=1-64 --csv=lat-d0-rep${rep}-on-${node}.csv; done; done", odd[0]]
    run = subprocess.run(["bash", "-c", found[0].replace("do numa_latency", "do echo numa_latency")],
                         capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == lines
    assert report._node_list(["a1", "b2"]) == "a1 b2" and report._node_list(["n1", "n3"]) == "n1 n3"


def test_the_summary_names_an_unexplained_rise_that_at_least_doubles_latency() -> None:
    def step(low: float, cache: str | None) -> dict:
        return {"id": "cache_threshold", "numbers": {"claim": True, "matched_cache": cache, "step_ratio_low": low}}
    assert report.is_headline(step(1.2, "L2 (per core)"))
    assert report.is_headline(step(9.9, None))                 # the rise to memory far below a VM's L3
    assert not report.is_headline(step(1.2, None))             # a TLB-like rise stays in its section


def test_evidence_tables_keep_the_rows_a_finding_stands_on() -> None:
    """A finding's table shows every row of the LUMI-G shape (15 sizes, the effect at 1-16 GiB);
    a longer one keeps each row that differs and names the rows it leaves out; columns read as
    words with their unit, bandwidth in GB/s, numbers right-aligned, flags as yes/no."""
    sizes = [MiB << i for i in range(15)]
    lumi = [{"size_bytes": s, "ratio": 1.49 if s >= 1024 * MiB else 1.0, "ratio_low": 0.9, "ratio_high": 1.1,
             "units": 4, "differs": s >= 1024 * MiB} for s in sizes]
    text = report.evidence_table(lumi)
    assert "4 GiB" in text and "16 GiB" in text and "not shown" not in text
    long = [{**row, "size_bytes": 1024 << i, "differs": i in (30, 31)} for i, row in enumerate(lumi * 4)]
    text = report.evidence_table(long)
    shown = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ") and "iB" in line]
    assert size_words(1024 << 30) in shown and size_words(1024 << 31) in shown
    assert len(shown) < len(long) and f"all {len(long)} rows are in findings.json" in text
    assert "none of them differs" in text
    header, align = text.splitlines()[:2]
    assert header == "| size | ratio | ratio, 95% low | ratio, 95% high | units | differs |"
    assert align == "| :--- | ---: | ---: | ---: | ---: | :--- |"
    bw = report.evidence_table([{"threads": 1, "local_mb_s": 13950.0, "repetitions": 1}])
    assert bw.splitlines()[0] == "| threads | local GB/s | repetitions |" and "| 1 | 13.95 | 1 |" in bw


def test_the_html_page_is_the_markdown_report_with_its_figures_embedded(tmp_path: Path) -> None:
    """experimentation.html says what experimentation.md says: the summary and its headline table,
    the tables with their alignment, every figure (embedded, one file), and no Markdown left raw."""
    results = Path(__file__).resolve().parents[2] / "examples" / "lumi-g"
    figures.draw_all(results, tmp_path / "figures")
    md, page = tmp_path / "experimentation.md", tmp_path / "experimentation.html"
    assert main(["report", "--results", str(results), "--figures", str(tmp_path / "figures"),
                 "-o", str(md), "--html", str(page)]) == 0
    text, html = md.read_text(), page.read_text()
    assert "<h2>Summary</h2>" in html and '<th style="text-align: right;">value</th>' in html
    assert html.count("data:image/png;base64,") == text.count("![") > 0
    assert html.count("<table>") == len(re.findall(r"^\| :?-", text, flags=re.M))
    body = html.split("<body>", 1)[1]
    assert "**" not in body and "| ---" not in body and "![" not in body


def test_a_caption_is_said_once_under_its_figures_of_one_kind(full_report) -> None:
    """Figures of one kind in a row (one per kernel, per mode) share one caption, said once after
    the last of them: a section never repeats a caption, and every figure is followed by its
    caption before a figure of another kind."""
    _, text, _, _ = full_report
    for part in text.split("\n## ")[1:]:
        captions = [line for line in part.splitlines() if line.startswith("*") and line.endswith("*")
                    and not line.startswith("**")]
        assert len(captions) == len(set(captions)), part.splitlines()[0]
    blocks = [b for b in text.split("\n\n") if b.startswith("![") or (b.startswith("*") and not b.startswith("**"))]
    assert blocks and not blocks[-1].startswith("!["), "the last figure has no caption"
    images = sum(b.startswith("![") for b in blocks)
    assert 0 < sum(not b.startswith("![") for b in blocks) < images  # some captions serve several figures
