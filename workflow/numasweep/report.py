"""The Markdown report: configuration, raw tables, figures, findings, placement, conclusion.

Every number in the report comes from the results folder (topology.json, the aggregated CSVs,
the per-job provenance records) or from findings.json; a section whose data is absent is left
out. `render` writes one system's report, `render_cross` puts two systems side by side.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import jinja2
import pandas as pd

from numasweep import benches, figures, mlc_figures, quality, series, tables
from numasweep.errors import NumasweepError
from numasweep.io import atomic_write_text
from numasweep.units import format_cpulist, format_size, parse_page_fractions

TEMPLATES = Path(__file__).resolve().parent.parent / "report"
# The aggregated tables carry the launch line as `command` (from provenance); imported legacy
# tables may name it otherwise.
COMMAND_KEYS = ("command", "launch", "command_line", "cmdline")
# Findings that compare runs (modes, L3 groups, nodes) rather than describe one curve: they go
# to the comparative section; placement findings go next to the placement tables.
COMPARATIVE_IDS = ("mode_divergence", "domain_asymmetry", "latency_locality", "bandwidth_locality")
# The subject a finding's analysis is read under, in report order; other ids: "Analysis".
SUBJECTS = {
    "cache_threshold": "Caches and TLB", "cache_unseen": "Caches and TLB", "cache_untested": "Caches and TLB",
    "tlb_cost": "Caches and TLB", "not_latency": "Caches and TLB",
    "anomaly": "Runs off their curve",
    "bandwidth_saturation": "Saturation", "bandwidth_weights": "Interleave weights",
}
SUMMARY_MAX = 8   # the summary names the few findings that matter
PLACEMENT_PREFIX = "placement"


# ---------------------------------------------------------------------------------------------
# Formatting


def fmt_number(value: object, digits: int = 2) -> str:
    """A table cell: integers plain, measured floats with `digits` decimals, NaN blank."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def md_table(header: list[str], rows: list[list[object]], right: set[int] | None = None) -> str:
    """A GitHub-flavoured Markdown table; columns in `right` are right-aligned (numbers)."""
    right = right if right is not None else set(range(1, len(header)))
    align = ["---:" if i in right else ":---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(fmt_number(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Configuration


def cache_rows(topology: dict) -> list[list[object]]:
    rows = []
    for cache in sorted(topology.get("caches", []), key=lambda c: (c.get("level", 0), c.get("type", ""))):
        instances = cache.get("instances", [])
        size = int(cache.get("size_bytes", 0))
        shared = sorted({len(i) for i in instances})
        rows.append([
            f"L{cache.get('level')} {cache.get('type', '')}".strip(),
            format_size(size),
            len(instances),
            format_size(size * len(instances)) if instances else "",
            ", ".join(str(s) for s in shared),
        ])
    return rows


def node_rows(topology: dict) -> list[list[object]]:
    rows = []
    l3 = topology.get("l3_groups") or []
    for node in topology.get("nodes", []):
        cpus = node.get("cpus", [])
        groups = [i for i, g in enumerate(l3) if set(g) & set(cpus)]
        memory = node.get("memory_bytes")
        rows.append([
            node["id"],
            format_cpulist(cpus) if cpus else "none (memory only)",
            ", ".join(str(g) for g in groups),
            f"{memory / 2**30:.1f} GiB" if memory else "",
            "yes" if node.get("memory_only") or not cpus else "no",
        ])
    return rows


def distance_table(topology: dict) -> str | None:
    distances = topology.get("distances")
    if not distances:
        return None
    ids = [n["id"] for n in topology.get("nodes", [])] or list(range(len(distances)))
    return md_table(["node"] + [str(i) for i in ids], [[i] + list(row) for i, row in zip(ids, distances)])


def commands(frames: dict[str, pd.DataFrame]) -> list[str]:
    """Distinct launch lines, from the aggregated tables' `command` column (provenance), so the
    report reads nothing beyond its declared inputs."""
    seen: dict[str, None] = {}     # in order of first appearance; a table repeats each line per row
    for df in frames.values():
        for key in COMMAND_KEYS:
            if key in df:
                seen.update(dict.fromkeys(df[key].dropna().astype(str).unique()))
                break
    return list(seen)


# ---------------------------------------------------------------------------------------------
# Raw tables


def latency_raw_tables(latency: pd.DataFrame) -> list[dict]:
    """Per configuration, the seed's layout: one row per rank, one column per size."""
    out = []
    for variant, part in tables.latency_configs(tables.latency_table(latency)):
        part = tables.with_memory_node(part)
        sizes = sorted(part["size_bytes"].unique())
        header = ["rank", "CPU", "CPU node", "memory node"] + [format_size(int(s)) for s in sizes]
        rows = []
        for _, r in tables.latency_lines(part):
            rank = r["rank"].iloc[0]
            values = r.set_index("size_bytes")["latency_ns_median"]
            mem = r["memory_node"].dropna()
            rows.append([int(rank), int(r["cpu"].iloc[0]), int(r["cpu_node"].iloc[0]),
                         int(mem.iloc[0]) if len(mem) and mem.nunique() == 1 else "mixed"]
                        + [float(values.get(s, float("nan"))) for s in sizes])
        out.append({"title": f"Latency (ns per load), {variant}",
                    "table": md_table(header, rows)})
    return out


def bandwidth_raw_tables(bandwidth: pd.DataFrame) -> list[dict]:
    """Per kernel: threads down, one column per (CPU node, memory node), like the STREAM table."""
    out = []
    for variant, part in tables.bandwidth_variants(tables.bandwidth_table(bandwidth)):
        part = part.copy()
        part["series"] = [tables.bandwidth_series_label(r["cpu_nodes"], r) for _, r in part.iterrows()]
        wide = part.pivot_table(index="threads", columns="series", values="best_mb_s", aggfunc="median")
        rows = [[int(t)] + [float(v) for v in row] for t, row in wide.iterrows()]
        out.append({"title": f"Best bandwidth (MB/s), {variant}",
                    "table": md_table(["threads"] + list(wide.columns), rows)})
    return out


def copy_raw_tables(copy: pd.DataFrame) -> list[dict]:
    out = []
    for (node, threads, nbytes), part in copy.groupby(["cpu_node", "threads", "bytes"], sort=True):
        wide = part.pivot_table(index="src_node", columns="dst_node", values="best_gb_s", aggfunc="median")
        rows = [[int(s)] + [float(v) for v in row] for s, row in wide.iterrows()]
        out.append({
            "title": f"Copy bandwidth (GB/s), threads on node {node}, {threads} threads, {format_size(int(nbytes))}",
            "table": md_table(["source \\ destination"] + [str(c) for c in wide.columns], rows),
        })
    return out


def gpu_raw_tables(gpu: pd.DataFrame) -> list[dict]:
    table = tables.gpu_table(gpu)
    out = []
    for variant, part in tables.gpu_configurations(table):
        part = part.copy()
        part["series"] = [tables.gpu_label(r) for _, r in part.iterrows()]
        for direction in tables.TIMED_DIRECTIONS:
            wide = part.pivot_table(index=benches.GPU_SIZE, columns="series",
                                    values=direction.bandwidth, aggfunc="median")
            rows = [[format_size(int(s))] + [float(v) for v in row] for s, row in wide.iterrows()]
            out.append({
                "title": f"Bandwidth (GiB/s) {direction.words}, {variant} host memory",
                "table": md_table(["size"] + list(wide.columns), rows),
            })
    return out


RAW_TABLES = {
    "latency": latency_raw_tables,
    "bandwidth": bandwidth_raw_tables,
    "copy": copy_raw_tables,
    "gpu_xfer": gpu_raw_tables,
    **mlc_figures.RAW_TABLES,
}


# ---------------------------------------------------------------------------------------------
# Placement verification


def placement_tables(frames: dict[str, pd.DataFrame], topology: dict | None) -> list[dict]:
    """MiB of each rank's buffer found on each node (move_pages), at the largest size per
    rank and configuration: the seed's numastat check, for every rank."""
    latency = frames.get("latency")
    if latency is None or "page_fractions" not in latency:
        return []
    node_ids = [n["id"] for n in (topology or {}).get("nodes", [])]
    out = []
    for variant, part in tables.latency_configs(tables.latency_table(latency)):
        part = part[part["size_bytes"] == part["size_bytes"].max()]
        parsed = [parse_page_fractions(f) for f in part["page_fractions"]]
        if not any(parsed):
            continue
        ids = node_ids or sorted({n for p in parsed for n in p})
        size = int(part["size_bytes"].iloc[0])
        rows = []
        for (_, r), fractions in zip(part.sort_values("rank").iterrows(), parsed):
            asked = r.get("mem_nodes", "")
            rows.append([int(r["rank"]), int(r["cpu"]), int(r["cpu_node"]),
                         f"{r.get('policy', '')} {'' if pd.isna(asked) else asked}".strip()]
                        + [fractions.get(n, 0.0) * size / 2**20 for n in ids])
        header = ["rank", "CPU", "CPU node", "policy"] + [f"node {n} (MiB)" for n in ids]
        out.append({"title": f"{variant}, {format_size(size)} per rank",
                    "table": md_table(header, rows, right=set(range(4, len(header))) | {0, 1, 2})})
    return out


# ---------------------------------------------------------------------------------------------
# Findings


def load_findings(path: str | os.PathLike | None, results_dir: Path) -> dict:
    """findings.json when given, else computed now from the results."""
    if path:
        path = Path(path)
        if not path.exists():
            raise NumasweepError(f"{path}: no such findings file; run `python -m numasweep analyse "
                                 f"--results {results_dir} -o {path}` first")
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise NumasweepError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); "
                                 "delete it and rerun the analysis") from None
    from numasweep import analysis

    return analysis.analyse(results_dir)


def evidence_cell(column: str, value: object) -> object:
    if column.endswith("size_bytes") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_size(int(value))
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else value


def evidence_table(evidence: list[dict], limit: int = 12) -> str | None:
    if not evidence:
        return None
    columns: list[str] = []
    for item in evidence:
        columns += [k for k in item if k not in columns]
    header = [c.replace("size_bytes", "size") for c in columns]
    rows = [[evidence_cell(c, e.get(c)) for c in columns] for e in evidence[:limit]]
    more = f"\n\n({len(evidence) - limit} more rows in findings.json)" if len(evidence) > limit else ""
    return md_table(header, rows, right=set()) + more


def section_of(finding: dict) -> str:
    """Where a finding goes: "placement", "comparative" or "experiment"."""
    if str(finding.get("id", "")).startswith(PLACEMENT_PREFIX):
        return "placement"
    if finding.get("bench") == "cross" or finding.get("id") in COMPARATIVE_IDS:
        return "comparative"
    return "experiment"


def is_headline(finding: dict) -> bool:
    """Whether the summary names a finding: not one that claims nothing (a symmetry, a level
    without a transition), unmatched steps, single-point anomalies or the list of untested
    caches, which stay in their sections."""
    numbers = finding.get("numbers") or {}
    if numbers.get("claim") is False:
        return False
    if finding.get("id") == "cache_threshold":
        return bool(numbers.get("matched_cache"))
    if finding.get("id") == "anomaly":
        return numbers.get("kind") == "inversion"
    return finding.get("id") != "cache_untested"


def prepared_findings(findings: dict) -> list[dict]:
    out = []
    for f in findings.get("findings", []):
        out.append({**f, "evidence_table": evidence_table(f.get("evidence") or []),
                    "section": section_of(f), "headline": is_headline(f)})
    return out


def by_subject(findings: list[dict]) -> list[dict]:
    """Findings grouped by subject (SUBJECTS: caches and TLB, runs off their curve, ...), in the
    order of SUBJECTS, then the others under "Analysis"."""
    groups: dict[str, list[dict]] = {}
    for f in findings:
        groups.setdefault(SUBJECTS.get(str(f.get("id")), "Analysis"), []).append(f)
    order = list(dict.fromkeys(SUBJECTS.values())) + ["Analysis"]
    return [{"subject": name, "findings": groups[name]} for name in order if name in groups]


def mode_comparison(latency: pd.DataFrame | None) -> str | None:
    """Median over ranks per size for each mode, and their ratio, when both modes exist: one
    table per configuration (rank count, strategy, domains, ...), never pooled over them."""
    if latency is None or set(latency["mode"]) < {"concurrent", "serial"}:
        return None
    table = tables.latency_table(latency)
    parts = []
    for variant, part in series.configurations(table, "latency", without=("mode",)):
        if set(part["mode"]) < {"concurrent", "serial"}:
            continue
        med = part.pivot_table(index="size_bytes", columns="mode", values="latency_ns_median", aggfunc="median")
        worst = part.pivot_table(index="size_bytes", columns="mode", values="latency_ns_median", aggfunc="max")
        med = med.dropna()
        rows = [[format_size(int(s)), float(med.loc[s, "concurrent"]), float(med.loc[s, "serial"]),
                 float(worst.loc[s, "concurrent"]), float(worst.loc[s, "serial"])]
                for s in med.index]
        parts.append((variant, md_table(["size", "concurrent median (ns)", "serial median (ns)",
                                         "concurrent slowest rank (ns)", "serial slowest rank (ns)"], rows)))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0][1]
    return "\n\n".join(f"**{variant}**\n\n{md}" for variant, md in parts)


# ---------------------------------------------------------------------------------------------
# Rendering


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def figure_entries(figures_dir: Path | None, bench: str, out_md: Path) -> list[dict]:
    if figures_dir is None or not (figures_dir / bench).is_dir():
        return []
    entries = []
    order = list(benches.CAPTIONS)
    pngs = sorted((figures_dir / bench).glob("*.png"),
                  key=lambda p: (order.index(figures.figure_kind(p)) if figures.figure_kind(p) in order
                                 else len(order), p.name))
    for png in pngs:
        kind = figures.figure_kind(png)
        entries.append({
            "path": os.path.relpath(png, out_md.parent),
            "caption": benches.CAPTIONS.get(kind, kind.replace("_", " ")),
            "alt": png.stem.replace("--", ", ").replace("_", " "),
        })
    return entries


def system_context(results_dir: Path, findings: dict | None, figures_dir: Path | None, out_md: Path) -> dict:
    topology = figures.load_topology(results_dir)
    frames = figures.load_results(results_dir)
    if topology is None and not frames:
        raise NumasweepError(f"{results_dir}: neither topology.json nor any <bench>.csv; give the "
                             "folder the workflow wrote (results/<system>) or an examples/<name> folder")
    found = prepared_findings(findings or {})
    sections = []
    for bench in benches.NAMES:
        if bench not in frames:
            continue
        df = frames[bench]
        sections.append({
            "name": bench,
            "title": benches.BENCHES[bench].title,
            "rows": len(df),
            "raw_tables": RAW_TABLES[bench](df),
            "figures": figure_entries(figures_dir, bench, out_md),
            "analysis": by_subject([f for f in found if f.get("bench") == bench and f["section"] == "experiment"]),
        })
    comparative = [f for f in found if f["section"] == "comparative"]
    system = (topology or {}).get("system") or (findings or {}).get("system") or results_dir.name
    return {
        "system": system,
        "results_dir": str(results_dir),
        "topology": topology,
        "hypervisor": (topology or {}).get("hypervisor"),
        "nodes": md_table(["node", "CPUs", "L3 groups", "memory", "memory only"],
                          node_rows(topology), right={0}) if topology else None,
        "memory_only": [n["id"] for n in (topology or {}).get("nodes", [])
                        if n.get("memory_only") or not n.get("cpus")],
        "caches": md_table(["cache", "size per instance", "instances", "total", "CPUs per instance"],
                           cache_rows(topology)) if topology and topology.get("caches") else None,
        "distances": distance_table(topology) if topology else None,
        "reserved": format_cpulist(topology["reserved_cpus"]) if topology and topology.get("reserved_cpus") else None,
        "gpus": (topology or {}).get("gpus") or [],
        "commands": commands(frames),
        "benches": sections,
        "comparative": comparative,
        "mode_comparison": mode_comparison(frames.get("latency")),
        "placement": placement_tables(frames, topology),
        "placement_findings": [f for f in found if f["section"] == "placement"],
        "findings": found,
        "headlines": [f for f in found if f["headline"]][:SUMMARY_MAX],
        "more_headlines": max(0, sum(f["headline"] for f in found) - SUMMARY_MAX),
        "anomalies": sum(1 for f in found if f.get("id") == "anomaly"),
        "cross_figures": [],
        "data_quality": quality.notes(frames),
        "run_quality": [{**q, "table": md_table(q["header"], q["rows"], right=q["numeric"])}
                        for q in quality.series_quality(frames)],
        "sections": [],
    }


def render(results_dir: str | os.PathLike, findings: dict | None, figures_dir: str | os.PathLike | None,
           out_md: str | os.PathLike, sections: list[str | os.PathLike] = ()) -> Path:
    """Write one system's report to `out_md` and return its path. `sections` are Markdown files
    written by other commands (`fleet`, `compare`) in the report's folder, included as they are."""
    out_md = Path(out_md)
    context = system_context(Path(results_dir), findings, Path(figures_dir) if figures_dir else None, out_md)
    for section in sections:
        if not Path(section).is_file():
            raise NumasweepError(f"{section}: no such report section; write it first (python -m numasweep "
                                 "fleet or compare), or leave out --section")
        context["sections"].append(Path(section).read_text())
    text = environment().get_template("experimentation.md.j2").render(**context)
    atomic_write_text(out_md, tidy(text))
    return out_md


def common_size_table(frames: list[dict[str, pd.DataFrame]], names: list[str]) -> list[dict]:
    """Per mode: median latency over ranks at each size both systems measured, and the ratio."""
    out = []
    latencies = [f.get("latency") for f in frames]
    if any(lat is None for lat in latencies):
        return out
    tables_by_system = [tables.latency_table(lat) for lat in latencies]
    modes = sorted(set.intersection(*(set(t["mode"]) for t in tables_by_system)))
    for mode in modes:
        medians = [t[t["mode"] == mode].groupby("size_bytes")["latency_ns_median"].median()
                   for t in tables_by_system]
        sizes = sorted(set(medians[0].index) & set(medians[1].index))
        if not sizes:
            continue
        rows = [[format_size(int(s)), float(medians[0][s]), float(medians[1][s]),
                 float(medians[1][s] / medians[0][s])] for s in sizes]
        out.append({"title": f"Median latency over ranks (ns), {mode}",
                    "table": md_table(["size", names[0], names[1], f"{names[1]} / {names[0]}"], rows)})
    return out


def plot_cross_latency(frames: list[dict[str, pd.DataFrame]], names: list[str], figdir: Path) -> list[Path]:
    latencies = [(n, f["latency"]) for n, f in zip(names, frames) if "latency" in f]
    if len(latencies) < 2:
        return []
    per_system = [(n, tables.latency_table(lat)) for n, lat in latencies]
    modes = sorted(set.union(*(set(t["mode"]) for _, t in per_system)))
    fig, axes = figures.new_figure(ncols=len(modes), width=max(8.0, 5.5 * len(modes)))
    sizes: list[int] = []
    for ax, mode in zip(axes, modes):
        for i, (name, t) in enumerate(per_system):
            med = t[t["mode"] == mode].groupby("size_bytes")["latency_ns_median"].median()
            if med.empty:
                continue
            sizes += list(med.index)
            ax.plot(med.index, med.values, marker="o", markersize=3, color=figures.PALETTE[i],
                    linestyle=figures.LINESTYLES[i], label=name)
        figures.size_axis(ax, sorted(set(sizes)))
        ax.set_ylabel("median latency over ranks (ns per load)")
        ax.set_ylim(bottom=0)
        ax.set_title(mode)
        ax.legend(fontsize=8, loc="upper left")
    return figures.save(fig, figdir, "cross", "cross_latency_vs_size", "-vs-".join(names))


def spec_rows(contexts: list[dict]) -> list[list[object]]:
    def describe(ctx: dict) -> dict[str, str]:
        topo = ctx["topology"] or {}
        nodes = topo.get("nodes", [])
        l3 = [c for c in topo.get("caches", []) if c.get("level") == 3]
        return {
            "CPU": topo.get("cpu_model", ""),
            "NUMA nodes": str(len(nodes)),
            "memory-only nodes": ", ".join(str(n) for n in ctx["memory_only"]) or "none",
            "CPUs": str(sum(len(n.get("cpus", [])) for n in nodes)),
            "L3 per group": format_size(int(l3[0]["size_bytes"])) if l3 else "",
            "L3 groups": str(len(topo.get("l3_groups") or [])),
            "GPUs": str(len(topo.get("gpus") or [])),
            "virtual machine": topo.get("hypervisor") or "no",
            "benchmarks": ", ".join(b["name"] for b in ctx["benches"]),
        }
    described = [describe(c) for c in contexts]
    return [[key] + [d[key] for d in described] for key in described[0]]


def render_cross(results_dirs: list[Path], findings: list[dict | None], figures_dir: Path | None,
                 out_md: Path) -> Path:
    """Two systems side by side: specifications, common latency sizes, findings of each."""
    out_md = Path(out_md)
    contexts = [system_context(Path(d), f, None, out_md) for d, f in zip(results_dirs, findings)]
    names = [c["system"] for c in contexts]
    if names[0] == names[1]:
        names = [f"{n} ({Path(d).name})" for n, d in zip(names, results_dirs)]
    frames = [figures.load_results(d) for d in results_dirs]
    cross_figures = []
    if figures_dir is not None:
        for png in [p for p in plot_cross_latency(frames, names, Path(figures_dir)) if p.suffix == ".png"]:
            cross_figures.append({"path": os.path.relpath(png, out_md.parent),
                                  "caption": benches.CAPTIONS["cross_latency_vs_size"],
                                  "alt": "median latency vs size on each system"})
    text = environment().get_template("cross.md.j2").render(
        names=names,
        systems=contexts,
        specs=md_table(["", *names], spec_rows(contexts), right=set()),
        latency_tables=common_size_table(frames, names),
        cross_figures=cross_figures,
    )
    atomic_write_text(out_md, tidy(text))
    return out_md


def tidy(text: str) -> str:
    """At most one blank line in a row: templates leave more where a section is skipped."""
    lines: list[str] = []
    for line in text.splitlines():
        if not line.strip() and lines and not lines[-1].strip():
            continue
        lines.append(line.rstrip())
    return "\n".join(lines).strip() + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m numasweep report",
                                     description="render the Markdown report from results and findings")
    parser.add_argument("--results", action="append", required=True,
                        help="results folder; give it twice to compare two systems side by side")
    parser.add_argument("--findings", action="append", default=[],
                        help="findings.json of each --results, in the same order (computed when absent)")
    parser.add_argument("--figures", help="figure folder written by `python -m numasweep figures`")
    parser.add_argument("--section", action="append", default=[],
                        help="a Markdown section to include (fleet.md, comparison.md), in the report's folder")
    parser.add_argument("-o", "--output", required=True, help="Markdown file to write")
    args = parser.parse_args(argv)
    if len(args.results) > 2:
        raise NumasweepError("report: give --results once (one system) or twice (two systems side by side)")
    if args.findings and len(args.findings) != len(args.results):
        raise NumasweepError("report: give one --findings per --results, in the same order, or none")
    results = [Path(r) for r in args.results]
    findings = [load_findings(f, r) for f, r in zip(args.findings or [None] * len(results), results)]
    if len(results) == 1:
        path = render(results[0], findings[0], args.figures, args.output, args.section)
    else:
        path = render_cross(results, findings, Path(args.figures) if args.figures else None, Path(args.output))
    print(path)
    return 0
