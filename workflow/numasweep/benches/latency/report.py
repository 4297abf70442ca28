"""The latency parts of the report: the raw tables (latency per rank and size), the pages of each
rank's buffer by node, concurrent against serial per configuration, and two systems side by side."""

from __future__ import annotations

import math

from pathlib import Path

import pandas as pd

from numasweep.benches.latency import figures as latency_figures
from numasweep.benches.latency import levels, tables
from numasweep.benches.latency.findings import REPLICATES
from numasweep.benches.latency.tables import NAME
from numasweep.core.topology import Topology
from numasweep.core.units import capacity_words, page_words, parse_page_fractions, size_words
from numasweep.reporting import figures
from numasweep.reporting.markdown import Md, md_table, md_text, measured
from numasweep.results import digest, series
from numasweep.results.tables import with_memory_node


def latency_raw_tables(latency: pd.DataFrame) -> list[dict]:
    """Per configuration, the seed's layout: one row per rank, one column per size."""
    out = []
    for variant, part in tables.latency_configs(tables.latency_table(latency)):
        part, hosts = over_hosts(with_memory_node(part))
        sizes = sorted(part["size_bytes"].unique())
        header = ["rank", "CPU", "CPU node", "memory node"] + [size_words(int(s)) for s in sizes]
        rows = []
        for _, r in tables.latency_lines(part):
            rank = r["rank"].iloc[0]
            values = r.set_index("size_bytes")["latency_ns_median"]
            mem = r["memory_node"].dropna()
            rows.append([int(rank), int(r["cpu"].iloc[0]), int(r["cpu_node"].iloc[0]),
                         int(mem.iloc[0]) if len(mem) and mem.nunique() == 1 else "mixed"]
                        + [float(values.get(s, float("nan"))) for s in sizes])
        over = f", median over {hosts} hosts (each host's rows are in latency.csv)" if hosts > 1 else ""
        out.append({"title": f"Latency (ns per load), {variant}{over}",
                    "table": md_table(header, rows)})
    return out


def over_hosts(part: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """A fleet's latency configuration with more than `digest.HOST_ROWS` hosts as one line per
    rank: per size, the median over the hosts (`figures.across_hosts`) and the memory node where
    every host's pages landed on one (else none); the part itself and 1 with fewer hosts, whose
    rows stay one per host."""
    hosts = part["host"].nunique() if "host" in part else 1
    if hosts <= digest.HOST_ROWS:
        return part, 1
    out, _ = latency_figures.across_hosts(part, "latency_ns_median")
    keys = [c for c in out.columns if c in part and c not in ("latency_ns_median", *tables.SPREAD)]
    if "memory_node" in part:
        node = part.groupby(keys, sort=True, dropna=False)["memory_node"].agg(
            lambda s: s.iloc[0] if s.nunique(dropna=False) == 1 else pd.NA)
        out = out.merge(node.reset_index(), on=keys, how="left")
    return out, hosts


def placement_tables(latency: pd.DataFrame | None, topology: Topology | None) -> list[dict]:
    """MiB of each rank's buffer found on each node (move_pages), at the largest size per
    rank and configuration: the seed's numastat check, for every rank (and host, up to
    `digest.HOST_ROWS` hosts; over more, each rank's median over the hosts)."""
    if latency is None or "page_fractions" not in latency:
        return []
    node_ids = topology.node_ids() if topology else []
    out = []
    for variant, part in tables.latency_configs(tables.latency_table(latency)):
        part = part[part["size_bytes"] == part["size_bytes"].max()]
        # rows in the table's order, their placement parsed in the same order
        part = part.sort_values([c for c in ("rank", "host") if c in part], kind="stable")
        parsed = [parse_page_fractions(f) for f in part["page_fractions"]]
        if not any(parsed):
            continue
        ids = node_ids or sorted({n for p in parsed for n in p})
        size = int(part["size_bytes"].iloc[0])
        hosts = part["host"].nunique() if "host" in part else 1
        named = 1 < hosts <= digest.HOST_ROWS
        rows = []
        for (_, r), fractions in zip(part.iterrows(), parsed):
            asked = r.get("mem_nodes", "")
            rows.append([int(r["rank"]), int(r["cpu"]), int(r["cpu_node"])] + ([r["host"]] if named else [])
                        + [f"{r.get('policy', '')} {'' if pd.isna(asked) else asked}".strip()]
                        + [fractions.get(n, 0.0) * size / 2**20 for n in ids])
        header = ["rank", "CPU", "CPU node"] + (["host"] if named else []) + ["policy"]
        if hosts > digest.HOST_ROWS:
            wide = pd.DataFrame(rows, columns=header + [str(n) for n in ids])
            rows = wide.groupby(header, sort=True, dropna=False).median().reset_index().values.tolist()
        header += [f"node {n} (MiB)" for n in ids]
        over = f", median over {hosts} hosts" if hosts > digest.HOST_ROWS else ""
        out.append({"title": f"{variant}, {size_words(size)} per rank{over}",
                    "table": md_table(header, rows, right=set(range(len(header) - len(ids), len(header))) | {0, 1, 2})})
    return out



def mode_comparison(latency: pd.DataFrame | None) -> str | None:
    """Median over ranks per size for each mode, and their ratio, when both modes exist: one
    table per configuration (rank count, strategy, domains, ...), never pooled over them."""
    if latency is None or set(latency["mode"].unique()) < {"concurrent", "serial"}:
        return None
    table = tables.latency_table(latency)
    parts = []
    for variant, part in series.configurations(table, NAME, without=("mode",)):
        if set(part["mode"].unique()) < {"concurrent", "serial"}:
            continue
        med = part.pivot_table(index="size_bytes", columns="mode", values="latency_ns_median", aggfunc="median")
        worst = part.pivot_table(index="size_bytes", columns="mode", values="latency_ns_median", aggfunc="max")
        med = med.dropna()
        rows = [[size_words(int(s)), float(med.loc[s, "concurrent"]), float(med.loc[s, "serial"]),
                 float(worst.loc[s, "concurrent"]), float(worst.loc[s, "serial"])]
                for s in med.index]
        parts.append((variant, md_table(["size", "concurrent median (ns)", "serial median (ns)",
                                         "concurrent slowest rank (ns)", "serial slowest rank (ns)"], rows)))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0][1]
    return Md("\n\n".join(f"**{md_text(variant)}**\n\n{md}" for variant, md in parts))


def common_size_table(latencies: list[pd.DataFrame], names: list[str]) -> list[dict]:
    """Per mode: median latency over ranks at each size both systems measured, and the ratio."""
    out = []
    tables_by_system = [tables.latency_table(lat) for lat in latencies]
    modes = sorted(set.intersection(*(set(t["mode"]) for t in tables_by_system)))
    for mode in modes:
        medians = [t[t["mode"] == mode].groupby("size_bytes")["latency_ns_median"].median()
                   for t in tables_by_system]
        sizes = sorted(set(medians[0].index) & set(medians[1].index))
        if not sizes:
            continue
        rows = [[size_words(int(s)), float(medians[0][s]), float(medians[1][s]),
                 float(medians[1][s] / medians[0][s])] for s in sizes]
        out.append({"title": f"Median latency over ranks (ns), {mode}",
                    "table": md_table(["size", names[0], names[1], f"{names[1]} / {names[0]}"], rows)})
    return out


def plot_cross_latency(latencies: list[pd.DataFrame], names: list[str], figdir: Path) -> list[Path]:
    per_system = [(n, tables.latency_table(lat)) for n, lat in zip(names, latencies)]
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


def cross(latencies: list[pd.DataFrame], names: list[str], figdir: Path | None) -> tuple[list[dict], list[Path]]:
    """Two systems side by side: the tables at the sizes both measured, and the figure (PNG)."""
    pngs = [] if figdir is None else [p for p in plot_cross_latency(latencies, names, figdir) if p.suffix == ".png"]
    return common_size_table(latencies, names), pngs


NO_TLB = ("No latency curve was measured with both small and huge pages, so the TLB's share cannot be told "
          "from the caches' here; a sweep with `pages: [4k, thp]` (or a second one with `pages: [thp]` at the "
          "large sizes, as the default sweep has) tells them apart.")


def tlb_unmeasured(latency: pd.DataFrame) -> bool:
    """No huge-page curve was measured next to a 4 KiB one: the TLB cannot be told from the caches."""
    pages = {str(p).lower() for p in latency.get("page_size", pd.Series(dtype=object)).dropna().unique()}
    base = pages & levels.BASE_PAGES
    return not (base and pages - base - {""})


def cache_tally(findings: list[dict]) -> str | None:
    """One sentence: how many latency rises a cache explains and how many nothing explains."""
    steps = [f.get("numbers") or {} for f in findings if f.get("id") == "cache_threshold"]
    if not steps:
        return None
    explained = sum(bool(n.get("matched_cache")) for n in steps)
    unexplained = len(steps) - explained
    text = f"Of the {len(steps)} latency rise{'s' if len(steps) > 1 else ''} found, "
    text += (f"{explained} {'is' if explained == 1 else 'are'} a cache level's" if explained else "none is a cache's")
    if unexplained:
        text += (f" and {unexplained} nothing in the topology explains (said so below, with what could "
                 f"cause {'it' if unexplained == 1 else 'them'})")
    return text + "."


def report(latency: pd.DataFrame, topology: Topology | None, findings: list[dict]) -> list[dict]:
    """What the latency writes in the report besides its findings and figures
    (`Presentation.report`): its raw tables; how many rises a cache explains, after the caches'
    lead; why the TLB has no finding where no huge-page curve was measured; the modes compared,
    after the contention figures; where each rank's pages landed, under the data quality."""
    out = latency_raw_tables(latency)
    tally = cache_tally(findings)
    if tally:
        out.append({"title": "", "table": tally, "subject": "Caches", "at": "lead"})
    if tlb_unmeasured(latency) and not any(f.get("subject") == "TLB" for f in findings):
        out.append({"title": "", "table": Md(NO_TLB), "subject": "TLB", "at": "lead"})
    modes = mode_comparison(latency)
    if modes:
        out.append({"title": "Concurrent vs serial, all ranks", "table": modes, "subject": "Contention and concurrency",
                    "at": "figures"})
    return out + [{**t, "subject": "Data quality", "at": "findings"} for t in placement_tables(latency, topology)]


def _runs(part: pd.DataFrame) -> list[float]:
    """One latency per run (repetition and rank) of a size: the run's median."""
    keys = [c for c in ("job_id", "repetition", "rank", "host") if c in part]
    return list(part.groupby(keys, dropna=False)["latency_ns_median"].median()) if keys \
        else list(part["latency_ns_median"])


MEMORY_CLASS = 0.5   # a level's latency at half of DRAM's or more is memory's, not a cache hit's


def memory_plateau_end(curve: pd.DataFrame, topology: Topology | None) -> int:
    """The largest size of a local latency curve's memory plateau: past its last transition (the
    rise out of the last cache) and past every cache one core can use, the size before the first
    step that rises beyond the noise and the step floor (`levels.latency_levels`' `rising`), where
    loads start to pay for page-table walks; the largest size where no such step is, or where the
    curve is no latency curve the analysis reads."""
    sizes = sorted(int(s) for s in curve["size_bytes"].unique())
    if len(sizes) < 2:
        return sizes[-1]
    (found,) = levels.latency_levels(curve.assign(_curve=0), topology, ["_curve"],
                                     [c for c in REPLICATES if c in curve]).curves
    if not found.measured:
        return sizes[-1]
    start = max([t.to_size_bytes for t in found.transitions]
                + [c.size_bytes for c in levels.usable_capacities(topology)], default=0)
    rises = [a for a, _ in found.rising if a >= start]
    return min(rises, default=sizes[-1])


def headline(latency: pd.DataFrame, topology: Topology | None) -> list[list[str]]:
    """Idle latency per level: the runs of the fewest ranks (alone where serial runs exist), memory
    local, at the largest size measured that is at most half of each cache level (and above the
    level below), and at the largest size for DRAM (where the sweep went past the last cache's
    row); huge pages where measured at that size (no page walks), else 4 KiB pages. Remote memory
    at the largest size, with its ratio to local."""
    df = latency.copy()
    if df.empty:
        return []
    for column in ("mode", "page_size", "memory"):     # text, "" where not recorded
        if column in df:
            df[column] = df[column].astype(object).where(df[column].notna(), "").astype(str)
    if "ranks" in df:
        df = df[df["ranks"] == df["ranks"].min()]
    # alone: serial runs, or any mode where one rank runs (then concurrent is alone too)
    if "mode" in df and (df["mode"] == "serial").any() and not ("ranks" in df and (df["ranks"] == 1).all()):
        df = df[df["mode"] == "serial"]
    page_col = "page_size" if "page_size" in df else None
    memory = df["memory"] if "memory" in df else pd.Series("", index=df.index)
    cpu_node = series.labels(df["cpu_node"]) if "cpu_node" in df else pd.Series("", index=df.index)
    mem_nodes = series.labels(df["mem_nodes"]) if "mem_nodes" in df else pd.Series("", index=df.index)
    is_local = (memory == "local") | ((mem_nodes == cpu_node) & (cpu_node != "")) | ((memory == "") & (mem_nodes == ""))
    local = df[is_local]
    ranks = int(df["ranks"].min()) if "ranks" in df else 1
    alone = "" if ranks == 1 or ("mode" in df and (df["mode"] == "serial").all()) else f", {ranks} ranks at once"

    def at(part: pd.DataFrame, size: int) -> tuple[pd.DataFrame, str]:
        here = part[part["size_bytes"] == size]
        if page_col is None or here.empty:
            return here, ""
        pages = sorted(here[page_col].astype(str).unique(), key=lambda p: p.lower() in levels.BASE_PAGES)
        here = here[here[page_col].astype(str) == pages[0]]
        if "mode" in here and here["mode"].nunique() > 1:     # one mode's runs, serial first
            here = here[here["mode"] == sorted(here["mode"].astype(str).unique(), key=lambda m: m != "serial")[0]]
        return here, pages[0]

    rows: list[list[str]] = []
    sizes = sorted(local["size_bytes"].unique())
    below = 0
    cache_rows: list[tuple[float, int, list[str]]] = []
    caches = levels.usable_capacities(topology)
    # the levels one core can use, named as the findings name them ("L2 (1 MiB per core)")
    for cache in caches:
        inside = [s for s in sizes if below < s <= cache.size_bytes // 2]
        below = cache.size_bytes
        if not inside:
            continue
        part, page = at(local, int(inside[-1]))
        ns, value, interval = measured(_runs(part), "ns")
        where = size_words(int(inside[-1])) + (f", {page_words(page)}" if page else "")
        cache_rows.append((ns, int(inside[-1]), [f"{capacity_words(cache.label, cache.size_bytes)} latency, at "
                                                 f"{where}{alone}", value, interval]))
    largest = int(df["size_bytes"].max())
    local_ns = {}
    dram_rows = []
    # A sweep that stops where the headline reads the last cache one core can use (at most half
    # of it, as the topology reports it) never showed memory: its largest size is not called DRAM
    # (the cache's row gives it), and no level is compared with it. Between half the last cache
    # and all of it the largest size stays DRAM's: a VM's share of a large host L3 is far
    # smaller than the L3 it reports, and its curve reaches memory there.
    last_cache = caches[-1] if caches else None

    def in_the_caches(size: int) -> bool:
        return last_cache is not None and size <= last_cache.size_bytes // 2

    plateau, in_cache = 0, False
    if sizes:
        _, page = at(local, int(sizes[-1]))
        curve = local[local[page_col].astype(str) == page] if page_col else local
        plateau = memory_plateau_end(curve, topology)
        in_cache = in_the_caches(plateau)
        unproven = (f": the largest size measured, inside the {capacity_words(last_cache.label, last_cache.size_bytes)}"
                    " the topology reports, so not shown to be memory") if in_cache and last_cache else ""
        part, page = at(local, plateau)
        for node, mine in (part.groupby(cpu_node[part.index]) if cpu_node[part.index].nunique() > 1 else [("", part)]):
            local_ns[node], value, interval = measured(_runs(mine), "ns")
            on = f", CPUs on node {node}" if node != "" else ""
            if in_cache and any(size == plateau for _, size, _ in cache_rows):
                continue          # a cache's row already gives that size
            dram_rows.append([f"{'Latency' if in_cache else 'DRAM latency'}, local memory{on}, at {size_words(plateau)}"
                              + (f", {page_words(page)}" if page else "") + alone + unproven, value, interval])
        if plateau < sizes[-1]:
            # beyond the plateau the loads pay for more than memory: page-table walks, which no cache explains
            part, page = at(local, int(sizes[-1]))
            _, value, interval = measured(_runs(part), "ns")
            dram_rows.append([f"DRAM latency past the memory plateau (up to {size_words(plateau)}), local memory, at "
                              f"{size_words(int(sizes[-1]))}" + (f", {page_words(page)}" if page else "") + alone
                              + ": TLB-affected, the loads pay for page-table walks too", value, interval])
    dram = min(local_ns.values(), default=math.nan)
    for ns, _, row in cache_rows:
        # no cache's hit costs half a load from memory: a level that does is memory already (a
        # VM given part of the host's L3, or a cache the topology reports but the core cannot fill);
        # said only where the sweep reached memory
        if ns == ns and dram == dram and ns >= MEMORY_CLASS * dram and not in_cache:
            row[0] += f": already memory latency ({ns / dram:.0%} of DRAM's), no plateau of its own"
        rows.append(row)
    rows += dram_rows
    if sizes and (~is_local & (df["size_bytes"] == plateau)).any():
        largest = plateau            # remote memory where local memory's plateau is read
    remote = df[~is_local & (df["size_bytes"] == largest)]
    if remote.empty:
        return rows
    keys = pd.DataFrame({"cpu": cpu_node[remote.index], "mem": mem_nodes[remote.index]})
    beyond = not in_the_caches(largest)
    for (node, mem), part in remote.groupby([keys["cpu"], keys["mem"]]):
        part, page = at(part, largest)
        ns, value, interval = measured(_runs(part), "ns")
        rows.append([f"{'DRAM latency' if beyond else 'Latency'}, CPUs on node {node}, memory on node {mem}, at "
                     f"{size_words(largest)}" + (f", {page_words(page)}" if page else "") + alone
                     + ("" if beyond else ": inside the caches, not a NUMA figure"), value, interval])
        base = local_ns.get(node, local_ns.get("")) if local_ns else None
        if base and ns == ns and beyond:
            rows.append([f"NUMA ratio, latency node {node} to node {mem} / local", f"{ns / base:.2f}x",
                         "ratio of the estimates"])
    return rows
