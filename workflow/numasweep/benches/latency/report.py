"""The latency parts of the report: the raw tables (latency per rank and size), the pages of each
rank's buffer by node, concurrent against serial per configuration, and two systems side by side."""

from __future__ import annotations


from pathlib import Path

import pandas as pd

from numasweep.benches.latency import figures as latency_figures
from numasweep.benches.latency import levels, plateaus, tables
from numasweep.benches.latency.tables import NAME
from numasweep.core.topology import Topology
from numasweep.core.units import capacity_words, page_words, parse_page_fractions, size_words
from numasweep.reporting import figures
from numasweep.reporting.markdown import Md, interval_cells, md_table, md_text, ratio_cells
from numasweep.results import digest, series
from numasweep.results.tables import with_memory_node
from numasweep.statistics import stats


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
        out.append({"title": f"Latency (ns per load; the median over runs), {variant}{over}",
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
    tlb = sum(n.get("kind") == "tlb" for n in steps)
    unexplained = len(steps) - explained - tlb
    text = f"Of the {len(steps)} latency rise{'s' if len(steps) > 1 else ''} found, "
    text += (f"{explained} {'is' if explained == 1 else 'are'} a cache level's" if explained else "none is a cache's")
    if tlb:
        text += f"{',' if unexplained else ' and'} {tlb} the TLB's (told under TLB)"
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


def _cells(curve: plateaus.Curve, size: int, keep: list[bool] | None = None) -> tuple[float, str, str]:
    iv, units = curve.read(size, keep)
    return (iv.estimate, *interval_cells(iv, "ns", units))


def _where(curve: plateaus.Curve, p: plateaus.Plateau, alone: str, size: int | None = None) -> str:
    """"at 4 MiB (its plateau from 2 MiB), 4 KiB pages": the size a level is read at (its
    plateau's end unless given), with its plateau's first size and the page kind."""
    page, size = curve.page(), p.read_at if size is None else size
    return (f"at {size_words(size)}" + (f" (its plateau from {size_words(p.sizes[0])})" if size > p.sizes[0] else "")
            + (f", {page_words(page)}" if page else "") + alone)


def _alone(curves: list[plateaus.Curve]) -> str:
    """", 2 ranks at once" where the idle curves are several ranks measured concurrently."""
    ranks = min((c.ranks() for c in curves), default=1)
    if ranks == 1 or all(c.mode() == "serial" for c in curves):
        return ""
    return f", {ranks} ranks at once"


def _local_dram(curve: plateaus.Curve) -> list[tuple[str, list[bool] | None]]:
    """(CPU node, its replicates) per CPU node of a local curve (each node its own memory): all
    replicates (None) where it has one node."""
    nodes = ["" if n is None else str(n) for n in curve.replicate("cpu_node")]
    distinct = sorted(set(nodes), key=lambda n: (len(n), n))
    if len(distinct) <= 1:
        return [(distinct[0] if distinct else "", None)]
    return [(node, [n == node for n in nodes]) for node in distinct]


def readings(latency: pd.DataFrame, topology: Topology | None) -> dict:
    """What the headline reads, from the curves segmented as the findings segment them
    (`plateaus`): the idle curves (fewest ranks, alone), per cache one core can use its best
    plateau (or the rise that passes it by), memory's plateau of local memory, and each remote
    curve with its plateau (None inside the caches)."""
    every, capacities = plateaus.curves(latency, topology)
    idle = plateaus.idle(every)
    local = [c for c in idle if c.locality() == "local"]
    caches = {}
    for cap in capacities:
        got = plateaus.best([(c, p) for c in local for p in c.plateaus if p.capacity == cap])
        passed = sorted(((c, t) for c in local for cc, t in plateaus.missing(c.levels, c.plateaus, capacities)
                         if cc == cap), key=lambda ct: ct[1] is None)
        if got or passed:
            caches[cap] = got or passed[0]
    memory = {c.locality(): (c, p, size) for c, p, size in plateaus.memory_readings(idle)}
    remote = []
    for c in idle:
        if c.locality() == "local" or not c.plateaus:
            continue
        if c.locality() in memory:
            if memory[c.locality()][0] is c:
                remote.append(memory[c.locality()])
        elif not any(r[0].locality() == c.locality() for r in remote):
            remote.append((c, None, c.plateaus[-1].read_at))       # inside the caches: its last plateau
    return {"idle": idle, "caches": caches, "memory": memory.get("local"), "remote": remote}


def headline(latency: pd.DataFrame, topology: Topology | None) -> list[list[str]]:
    """Idle latency per level, each read where its curve's own segmentation puts the level's
    plateau (`plateaus`): a cache at its plateau's last size, said cut short where the curve
    leaves it for memory well below its size, or said to have no plateau where the rise out of
    the cache below passes it by; DRAM at the end of memory's plateau, before any rise beyond it
    (the page walks' sizes given as such). Remote memory on its own curve's memory plateau, with
    its ratio to the same CPU node's local memory; inside the caches, no NUMA figure."""
    if latency.empty:
        return []
    found = readings(latency, topology)
    alone = _alone(found["idle"])
    rows: list[list[str]] = []
    for cap, (curve, what) in found["caches"].items():
        name = capacity_words(cap.label, cap.size_bytes)
        if not isinstance(what, plateaus.Plateau):
            if what is None:
                rows.append([f"{name} latency", "no plateau", "no two sizes measured in a row hold it: a finer grid "
                                                               "of sizes would show its plateau"])
                continue
            reach = (f"the curve reaches memory latency ({what.latency_after_ns:.0f} ns) by "
                     f"{size_words(what.to_size_bytes)}")
            rows.append([f"{name} latency", "no plateau",
                         f"{reach}, far below the {size_words(cap.size_bytes)} the topology reports"
                         if what.to_size_bytes <= cap.size_bytes // 2 else
                         f"{reach}, the rise from {size_words(what.from_size_bytes)} with no plateau on the way"])
            continue
        where = _where(curve, what, alone)
        if what.cut_short():
            where += (f": the curve leaves it at {size_words(what.out.from_size_bytes)} to "
                      f"{size_words(what.out.to_size_bytes)}, far below the {size_words(cap.size_bytes)} the topology "
                      "reports, as a core given only part of it would")
        _, value, interval = _cells(curve, what.read_at)
        rows.append([f"{name} latency, {where}", value, interval])
    local_ns: dict[str, float] = {}
    local_at: dict[str, tuple] = {}
    if found["memory"]:
        curve, p, size = found["memory"]
        per_node = _local_dram(curve)
        several = len(per_node) > 1 or (topology is not None and len([n for n in topology.nodes if n.cpus]) > 1)
        for node, keep in per_node:
            local_ns[node], value, interval = _cells(curve, size, keep)
            local_at[node] = curve.point(size, keep)
            on = f", CPUs on node {node}" if several and node else ""
            rows.append([f"DRAM latency, local memory{on}, {_where(curve, p, alone, size)}", value, interval])
        if p.past:
            largest = int(curve.series.sizes[-1])
            _, value, interval = _cells(curve, largest)
            why = ("TLB-affected, the loads pay for page-table walks too" if not curve.huge_pages()
                   else "rising beyond the memory plateau")
            rows.append([f"DRAM latency past the memory plateau (up to {size_words(p.read_at)}), local memory, at "
                         f"{size_words(largest)}" + (f", {page_words(curve.page())}" if curve.page() else "") + alone
                         + f": {why}", value, interval])
    for curve, mem, size in found["remote"]:
        cpu, _, nodes = curve.locality().partition("->")
        ns, value, interval = _cells(curve, size)
        page = f", {page_words(curve.page())}" if curve.page() else ""
        if mem is None:
            rows.append([f"Latency, CPUs on node {cpu}, memory on node {nodes}, at {size_words(size)}{page}{alone}"
                         ": inside the caches, not a NUMA figure", value, interval])
            continue
        rows.append([f"DRAM latency, CPUs on node {cpu}, memory on node {nodes}, {_where(curve, mem, alone, size)}",
                     value, interval])
        # against the CPUs' own local memory, else (none measured) against the memory's own node's
        mine, of = (cpu, "local") if cpu in local_ns else (nodes, f"node {nodes}'s local")
        if mine in local_ns and ns == ns:
            ratio = stats.quotient(curve.point(size), local_at[mine])
            rows.append([f"NUMA ratio, latency node {cpu} to node {nodes} / {of}", f"{ratio.estimate:.2f}x",
                         ratio_cells(ratio)])
    return rows
