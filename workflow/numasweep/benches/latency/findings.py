"""Latency findings, each with its interval: cache levels and the TLB, NUMA locality, contention
between modes and L3 groups, outliers, and rank scaling.

They come from the statistical model of docs/STATISTICS.md: `levels` finds each curve's
transitions and their causes (a cache level one core can use, the TLB where 4 KiB and huge-page
curves part, or nothing, said once), refuses curves that are not latency, and `contrasts` compares
modes and L3 groups size by size; every ratio, onset and location carries its interval and method,
decisions hold the false-finding rate over every point tested, and a floor of practical effect
stays. Locality, each CPU node's latency to a node's memory against the firmware distances, is
`locality.latency_locality`.

Rank scaling: latency against the ranks per domain, sequential against interleaved placement, per
domain set (what the seed's run_numa_benchmarks.sh sweeps). A scaling curve is one latency
configuration (strategy, domains, mode, memory, pages, label, ...) measured at several ranks per
domain, taken at its largest buffer size (where every rank is beyond its caches). Its units are the
ranks of a run: each rank's latency is the median over repetitions.
- `rank_scaling`: the latency of the ranks at the most ranks per domain against the median at
  the fewest, as the geometric mean over those ranks of their ratio, with a t interval over the
  ranks (`stats.unit_mean_interval`);
- `placement_scaling`: at each rank count both strategies ran, sequential against interleaved
  ranks (difference of mean log latency, Welch's standard error, a t interval); the finding
  names the rank count with the largest difference, and the ratio at every other count.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from numasweep.benches import common
from numasweep.benches.latency import equivalent, levels
from numasweep.benches.latency.tables import NAME, SERIES, WITHIN
from numasweep.core.registry import COMMON_SERIES
from numasweep.core.topology import Topology
from numasweep.core.units import capacity_words, page_words, size_words
from numasweep.findings import analysis
from numasweep.findings.analysis import Finding
from numasweep.results import series
from numasweep.results.tables import locality, node_lists
from numasweep.statistics import contrasts, stats
from numasweep.statistics.stats import Interval


MIN_EFFECT = contrasts.MIN_EFFECT   # a difference between nodes' latencies: at least 10 %


MAX_ANOMALIES = 10
TLB_CAUSE = "the TLB with 4 KiB pages"   # a rise the huge-page twin does not show (`levels._tlb_causes`)


def _pct(ratio: float) -> str:
    excess = abs(ratio - 1) * 100
    return f"{excess:.1f}%" if excess < 10 else f"{excess:.0f}%"


def _cpus(cpus: list[int]) -> str:
    """'CPU 1' or 'CPUs 1, 17, 33'."""
    cpus = sorted(cpus)
    return ("CPU " if len(cpus) == 1 else "CPUs ") + ", ".join(str(c) for c in cpus)


def _position_label(position: int) -> str:
    names = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
    word = names[position] if position < len(names) else f"#{position + 1}"
    return f"{word} L3 group of each node"


# Columns whose values are repetitions of one curve: job repetitions and the ranks of a run (ranks
# that should measure alike; the series keys keep apart those that should not).
REPLICATES = (series.REPETITION, "rank", "cpu", "cpu_node", "l3_group", "mem_nodes")


RANK_UNITS = (series.REPETITION, "rank", "cpu", "cpu_node")      # one rank of one run, in both modes


NODE_UNITS = ("cpu_node", series.REPETITION)                     # one node's L3 groups, in one run


@dataclass
class _Latency:
    """A latency table prepared for levels and contrasts: identity columns normalised, with
    `locality` ("local" or "<cpu node>-><memory nodes>") and `l3_position` (index of the rank's
    L3 group among its node's), and the series keys of one curve."""
    table: pd.DataFrame
    topology: Topology | None
    keys: list[str]
    varying: list[str]
    set_aside: list[Finding] = dataclasses.field(default_factory=list)   # `equivalent`: what was set aside, and why


def prepare(latency: pd.DataFrame | None, topo: Topology | None) -> _Latency | None:
    need = {"size_bytes", "latency_ns_median"}
    if latency is None or latency.empty or not need <= set(latency.columns):
        return None
    stats.check_values(latency, "latency.csv", common.LATENCY)
    df = series.normalise(latency, "latency")
    for col in ("mode", "page_size", "mem_nodes"):
        if col not in df:
            df[col] = ""
    for col in ("cpu_node", "l3_group"):
        if col not in df:
            df[col] = -1
    df["locality"] = series.row_codes(pd.DataFrame({"cpu_node": df["cpu_node"], "mem_nodes": node_lists(
        df["mem_nodes"], categorical=True)}), locality)
    position = topo.l3_positions() if topo else {}
    df["l3_position"] = series.per_value(df["l3_group"], lambda g: position.get(int(g), 0), dtype=np.int64)
    keys = [c for c in series.series_columns(df, NAME) if c not in WITHIN]
    keys = keys + ["host", "locality"] if "host" in df else keys + ["locality"]
    # normalised (series.normalise): numbers or text, so distinct values are distinct texts
    varying = [c for c in keys if df[c].nunique() > 1]
    # the same measurement made twice agrees before anything rests on it
    df, set_aside = equivalent.compared(df)
    return _Latency(df, topo, keys, varying, set_aside)


POOLED_MODE = "concurrent and serial"


def pool_one_rank(df: pd.DataFrame) -> pd.DataFrame:
    """One rank alone measures the same in concurrent and serial mode: where a table holds both,
    the two runs are one experiment, whose levels are read once, off both. Their rows get the
    mode POOLED_MODE, the serial run's repetitions numbered after the concurrent run's, so that
    each run stays a replicate of the pooled curve (a disagreement between them widens its
    intervals; the mode contrast, on the table as measured, says by how much they differ)."""
    if "ranks" not in df:
        return df
    mode = df["mode"].astype(str)
    one = (df["ranks"] == 1).to_numpy() & mode.isin(["concurrent", "serial"]).to_numpy()
    if set(mode[one]) != {"concurrent", "serial"}:
        return df
    df = df.copy(deep=False)
    rep = pd.to_numeric(df[series.REPETITION], errors="coerce").fillna(0).astype("int64") \
        if series.REPETITION in df else pd.Series(0, index=df.index, dtype="int64")
    serial = one & (mode == "serial").to_numpy()
    df[series.REPETITION] = rep.where(~serial, rep + int(rep[one].max()) + 1)
    df["mode"] = series.text_codes(mode.where(~one, POOLED_MODE))
    return df


def _size_iv(interval: Interval) -> str:
    if not np.isfinite(interval.low):
        return f"{size_words(interval.estimate)} (no interval)"
    return (f"{size_words(interval.estimate)} ({interval.level * 100:.0f}% interval "
            f"{size_words(interval.low)} to {size_words(interval.high)})")


def _entries(onset: Interval) -> str:
    """The TLB entries an onset bounds: at most onset / 4 KiB, and where the onset's interval puts
    that bound (a bound on the count, not the count)."""
    if not np.isfinite(onset.low):
        return f"at most about {onset.estimate / 4096:,.0f} entries of 4 KiB (the onset has no interval)"
    return (f"at most about {onset.estimate / 4096:,.0f} entries of 4 KiB, a bound the onset's "
            f"{onset.level * 100:.0f}% interval puts between {onset.low / 4096:,.0f} and {onset.high / 4096:,.0f}")


def _opening(text: str, rest: str) -> str:
    """A sentence from an optional opening and the rest: "In serial mode, rest." or "Rest."."""
    return f"{text[0].upper()}{text[1:]}, {rest}." if text else f"{rest[0].upper()}{rest[1:]}."


UNIT_NAMES = {"cpu_node": "node", "l3_group": "L3 group", "mem_nodes": "memory on node", "cpu": "CPU",
              "rank": "rank", series.REPETITION: "repetition"}


def _unit(unit: dict) -> str:
    """'rank 5, CPU 41, node 2' from a unit's key columns."""
    return ", ".join(f"{UNIT_NAMES.get(k, k)} {v}" for k, v in unit.items() if str(v) not in ("", "-1"))


def _levels_findings(study: _Latency, lv: levels.Levels) -> list[Finding]:
    findings: list[Finding] = []
    for curve in lv.curves:
        text, title, base = analysis.where_text(curve.series, study.varying)
        if not curve.measured:
            findings.append(Finding(
                id="not_latency", bench="latency", title="Not a latency curve" + title,
                summary=_opening(text, curve.gate_reason),
                numbers={**base, "claim": True, "reason": curve.gate_reason},
                evidence=[{"size_bytes": s, "latency_ns": v} for s, v in zip(curve.sizes, curve.latency_ns)]))
            continue
        for t in curve.transitions:
            unstable = [(size, spread) for size, spread in curve.unstable
                        if t.from_size_bytes <= size <= t.to_size_bytes]
            left_out = "".join(f"; {size_words(size)} left out: its runs' own samples spread {spread * 100:.0f}%, "
                               "too unstable to place it" for size, spread in unstable)
            findings.append(Finding(
                id="cache_threshold", bench="latency",
                title=(f"Latency step {size_words(t.from_size_bytes)} to {size_words(t.to_size_bytes)}: "
                       f"{capacity_words(t.label, t.capacity_bytes) if t.label else TLB_CAUSE if t.kind == 'tlb' else 'unexplained'}"
                       + (" and on to memory" if t.to_memory else "") + title),
                summary=_opening(text, t.describe() + left_out),
                # a step states its ratio with its interval: one that holds 1 (two units, one
                # degree of freedom) claims no difference, as the claims audit requires
                numbers={**base, "claim": t.ratio is None or not t.ratio.covers(1.0), "kind": t.kind,
                         "from_size_bytes": t.from_size_bytes,
                         "size_bytes": t.to_size_bytes, **analysis.interval_numbers("step_ratio", t.ratio),
                         **analysis.interval_numbers("location_bytes", t.location_bytes), "latency_before_ns": t.latency_before_ns,
                         "latency_after_ns": t.latency_after_ns, "matched_cache": t.label, "to_memory": t.to_memory,
                         "cache_bytes": t.capacity_bytes, "caveats": t.caveats, "p_value": t.p_value,
                         "noise_rule": curve.noise_rule,
                         "unstable_sizes": [{"size_bytes": size, "spread": spread} for size, spread in unstable]},
                evidence=[{"size_bytes": s, "latency_ns": v} for s, v in zip(curve.sizes, curve.latency_ns)
                          if t.from_size_bytes <= s <= t.to_size_bytes]))
        if curve.unseen:
            names = ", ".join(capacity_words(c.label, c.size_bytes) for c in curve.unseen)
            # an unexplained rise ending below them: memory latency came before these caches filled
            early = [t for t in curve.transitions if t.kind == "unexplained"
                     and all(t.to_size_bytes < c.size_bytes for c in curve.unseen)]
            before = (f"; latency had already risen to {early[-1].latency_after_ns:.0f} ns by "
                      f"{size_words(early[-1].to_size_bytes)} (the unexplained rise from "
                      f"{size_words(early[-1].from_size_bytes)})" if early else "")
            findings.append(Finding(
                id="cache_unseen", bench="latency", title="Cache levels without a visible transition" + title,
                summary=_opening(text, f"the tested sizes span {names} but latency shows no transition beyond the "
                                       f"noise for {'it' if len(curve.unseen) == 1 else 'them'}{before}"),
                numbers={**base, "claim": False, "caches": [{"cache": c.label, "cache_bytes": c.size_bytes}
                                                            for c in curve.unseen]}))
    seen = {t.capacity_bytes for curve in lv.curves for t in curve.transitions}
    untested = {c.size_bytes: c for curve in lv.curves if curve.measured for c in curve.untested
                if c.size_bytes not in seen}
    tested = [s for curve in lv.curves for s in curve.sizes]
    if untested and tested:
        names = ", ".join(capacity_words(c.label, c.size_bytes)
                          for c in sorted(untested.values(), key=lambda c: c.size_bytes))
        findings.append(Finding(
            id="cache_untested", bench="latency", title="Caches outside the tested sizes",
            summary=(f"The tested sizes {analysis.size_text(min(tested))} to {analysis.size_text(max(tested))} need two sizes either side of a "
                     f"cache to show it, so they cannot show {names}."),
            numbers={"claim": False, "min_size_bytes": min(tested), "max_size_bytes": max(tested),
                     "caches": [{"cache": c.label, "cache_bytes": c.size_bytes} for c in untested.values()]}))
    for t in lv.tlb:
        text, title, base = analysis.where_text(t.series, study.varying, skip=("page_size",))
        peak = f"{t.max_ratio.text('{:.2f}x')} at {size_words(t.max_size_bytes)}"
        if t.onset_bytes is not None:
            top = (f"4 KiB / {t.huge_page} latency peaks at {peak}" if t.peak_significant else
                   f"the largest 4 KiB / {t.huge_page} ratio, {peak}, is not significant: no peak is claimed")
            sizes = [r["size_bytes"] for r in t.per_size]
            end = sizes.index(t.onset_bytes)
            while end + 1 < len(sizes) and t.per_size[end + 1]["significant"]:
                end += 1
            after = ", ".join(f"{r['ratio_4k_to_huge']:.2f}x" for r in t.per_size[end + 1:][:4])
            where = (f"at {size_words(t.onset_bytes)}" if sizes[end] == t.onset_bytes else
                     f"from {size_words(t.onset_bytes)} to {size_words(sizes[end])}")
            span = (f"from {size_words(t.onset_bytes)} on" if end == len(sizes) - 1 else
                    f"{where} (not at every larger size: {after}{' ...' if len(sizes) - end - 1 > 4 else ''} "
                    f"from {size_words(sizes[end + 1])} on)")
            summary = _opening(text, f"4 KiB pages are slower than {page_words(t.huge_page)} beyond the noise and the "
                                     f"{levels.TLB_FLOOR * 100:.0f}% floor {span} (onset "
                                     f"{_size_iv(t.onset)}; the cost is half its largest at "
                                     f"{_size_iv(t.location_bytes)}); {top}: the TLB reach, not a cache; "
                                     f"page walks cost this much only beyond the reach, so the 4 KiB pages' TLB "
                                     f"reach is at most {size_words(t.onset_bytes)} (below the onset if the caches "
                                     f"absorb the first walks): {_entries(t.onset)}")
        elif flagged := [r["size_bytes"] for r in t.per_size if r["significant"]]:
            # a size beyond the floor and the noise that starts no run of two: said as it is, so the
            # sentence and its table agree, and no reach is read from it
            summary = _opening(text, f"4 KiB pages are slower than {page_words(t.huge_page)} beyond the noise and the "
                                     f"{levels.TLB_FLOOR * 100:.0f}% floor only at "
                                     f"{', '.join(size_words(x) for x in flagged)}, no two sizes in a row: no TLB "
                                     f"reach is read from {'it' if len(flagged) == 1 else 'them'} (largest ratio "
                                     f"{peak})")
        else:
            summary = _opening(text, f"4 KiB pages and {page_words(t.huge_page)} do not part beyond the noise and the "
                                     f"{levels.TLB_FLOOR * 100:.0f}% floor at any size tested (largest ratio {peak})")
        findings.append(Finding(
            id="tlb_cost", bench="latency", title=f"TLB cost: 4 KiB pages against {page_words(t.huge_page)}" + title, summary=summary,
            numbers={**base, "page_size": "4k", "claim": t.onset_bytes is not None, "huge_page": t.huge_page,
                     "onset_size_bytes": t.onset_bytes, **analysis.interval_numbers("onset_bytes", t.onset),
                     **analysis.interval_numbers("location_bytes", t.location_bytes), **analysis.interval_numbers("max_ratio", t.max_ratio),
                     "max_size_bytes": t.max_size_bytes, "peak_claimed": t.peak_significant,
                     "tlb_entries_4k": t.onset_bytes // 4096 if t.onset_bytes is not None else None,
                     "floor": levels.TLB_FLOOR},
            evidence=t.per_size))
    return findings


def _per_size(c: contrasts.Contrast) -> list[dict]:
    return [{"size_bytes": s.size_bytes, "ratio": s.ratio.estimate, "ratio_low": s.ratio.low,
             "ratio_high": s.ratio.high, "units": s.units, "differs": s.verdict} for s in c.per_size]


def _contrast_numbers(c: contrasts.Contrast) -> dict:
    peak = max(c.per_size, key=lambda s: abs(math.log(s.ratio.estimate)))
    return {**analysis.interval_numbers("max_ratio", peak.ratio), "max_size_bytes": peak.size_bytes,"claim": c.differs, "differs": c.differs, "equivalent": c.equivalent, "floor": c.floor,
            "onset_size_bytes": c.onset_bytes, **analysis.interval_numbers("onset_bytes", c.onset),
            "plateau_from_size_bytes": c.plateau_from_bytes, "plateau_to_size_bytes": c.plateau_to_bytes,
            **analysis.interval_numbers("plateau_ratio", c.plateau_ratio), **analysis.interval_numbers("overall_ratio", c.overall_ratio),
            "units": len(c.ratios.replicates) if c.ratios is not None else 0, "noise_rule": c.noise_rule,
            "unclaimed": c.unclaimed}


def _slower(ratio: float, a: str, b: str) -> str:
    """In plain words: "12% slower" or "8.0% faster", and from 1.5x a ratio ("have 1.99x the latency of"),
    where a percentage reads wrong ("99% slower" for twice the latency)."""
    if ratio >= 1.5:
        return f"{a} have {ratio:.2f}x the latency of {b}"
    return f"{a} are {_pct(ratio)} {'slower' if ratio > 1 else 'faster'} than {b}"


def _contrast_text(c: contrasts.Contrast, a: str, b: str) -> str:
    """What a contrast shows, with its numbers and intervals."""
    floor = f"{c.floor * 100:.0f}%"
    if c.differs and c.plateau_ratio is not None:
        text = (f"{_slower(c.plateau_ratio.estimate, a, b)} from {analysis.size_text(c.plateau_from_bytes)} to "
                f"{analysis.size_text(c.plateau_to_bytes)} (ratio {c.plateau_ratio.text()}, geometric mean over those sizes)")
        if c.onset_bytes is not None:
            text += f"; beyond the noise and the {floor} floor from {analysis.size_text(c.onset_bytes)} on (onset {_size_iv(c.onset)})"
        else:
            text += "; the difference does not last to the largest size"
        return text
    overall = c.overall_ratio.text() if c.overall_ratio is not None else "unknown"
    if c.unclaimed:
        return f"nothing is claimed: {c.unclaimed} (overall ratio {overall}); repeat the runs to tell"
    if c.equivalent:
        return f"{a} and {b} are alike: overall ratio {overall}, inside the {floor} margin (equivalent)"
    return (f"no size differs beyond the noise and the {floor} floor, but the data cannot show them alike "
            f"either (overall ratio {overall})")


def _cpus_by_position(table: pd.DataFrame) -> dict[int, list[int]]:
    """The CPUs measured at each L3 position (once per table: a fleet has a contrast per node)."""
    if "cpu" not in table:
        return {}
    pairs = table[["l3_position", "cpu"]].drop_duplicates()
    return {int(p): sorted(set(g.astype(int))) for p, g in pairs.groupby("l3_position")["cpu"]}


def _divergence_findings(study: _Latency, div: list[contrasts.Contrast]) -> list[Finding]:
    findings = []
    at = _cpus_by_position(study.table) if div else {}
    for c in div:
        text, title, base = analysis.where_text(c.series, study.varying, skip=("mode",))
        pos = int(c.series.get("l3_position", 0))
        cpus = at.get(pos, [])
        group = _position_label(pos) if study.topology is not None and study.topology.l3_groups else "all ranks"
        who = f"ranks on the {group}" + (f" ({_cpus(cpus)})" if cpus and cpus != [-1] else "")
        findings.append(Finding(
            id="mode_divergence", bench="latency", title=f"Concurrent vs serial: {group}" + title,
            summary=f"For {who}{' ' + text if text else ''}: {_contrast_text(c, 'concurrent runs', 'serial runs')}.",
            numbers={**base, "l3_position": pos, "cpus": cpus, **_contrast_numbers(c)}, evidence=_per_size(c)))
    onsets = [f.numbers["onset_size_bytes"] for f in findings if f.numbers["onset_size_bytes"] is not None]
    if onsets and len(findings) > 1:
        findings.insert(0, Finding(
            id="mode_divergence", bench="latency", title="Concurrent vs serial: onset",
            summary=(f"Concurrent and serial runs diverge beyond the noise from {analysis.size_text(min(onsets))} on, in "
                     f"{len(onsets)} of {len(findings)} rank groups."),
            numbers={"claim": False, "onset_size_bytes": min(onsets), "groups_diverging": len(onsets),
                     "groups": len(findings)}))
    return findings


def _asymmetry_findings(study: _Latency, ccd: list[tuple[int, int, contrasts.Contrast]]) -> list[Finding]:
    findings = []
    at = _cpus_by_position(study.table) if ccd else {}
    for a, b, c in ccd:
        text, title, base = analysis.where_text(c.series, study.varying)
        cpus = {p: at.get(p, []) for p in (a, b)}
        name_a = f"ranks on the {_position_label(a)} ({_cpus(cpus[a])})"
        name_b = f"those on the {_position_label(b)} ({_cpus(cpus[b])})"
        findings.append(Finding(
            id="domain_asymmetry", bench="latency",
            title=f"L3 groups inside a node: {_position_label(a).split(' ')[0]} vs {_position_label(b).split(' ')[0]}"
                  + title,
            summary=_opening(text, f"{_contrast_text(c, name_a, name_b)} (ratio per node, then over nodes)"),
            numbers={**base, "l3_position_a": a, "l3_position_b": b, "cpus_a": cpus[a], "cpus_b": cpus[b],
                     "asymmetric": c.differs, **_contrast_numbers(c)},
            evidence=_per_size(c)))
    return findings


def _deviation_findings(study: _Latency, devs: list[contrasts.Deviation]) -> list[Finding]:
    findings = []
    for d in devs:
        # mode contrasts are split by L3 position, L3-group contrasts by mode
        ratio_name = "concurrent / serial ratio" if "mode" not in d.series else "L3-group latency ratio"
        text, title, base = analysis.where_text(d.series, study.varying, skip=("mode",) if "mode" not in d.series else ())
        unit = _unit(d.unit)
        kind = "inversion" if d.inversion else "deviation"
        summary = _opening(" ".join(x for x in (text, f"at {analysis.size_text(d.size_bytes)}") if x),
                           f"{unit} has a {ratio_name} of {d.ratio:.2f} where the median of the others is "
                           f"{d.others_ratio:.2f}: {d.relative.text('{:.2f}x')} as large"
                           + (f", on the other side of 1 from theirs ({'below' if d.ratio < 1 else 'above'} it)"
                              if d.inversion else ""))
        findings.append(Finding(
            id="anomaly", bench="latency", title=f"{kind.capitalize()}: {unit} at {analysis.size_text(d.size_bytes)}" + title,
            summary=summary,
            numbers={**base, **{k: int(v) if str(v).lstrip("-").isdigit() else v for k, v in d.unit.items()},
                     "claim": True, "kind": kind,
                     "size_bytes": d.size_bytes, "ratio": d.ratio, "others_ratio": d.others_ratio,
                     **analysis.interval_numbers("relative", d.relative), "p_value": d.p_value, "what": ratio_name}))
    return findings


def _outlier_findings(study: _Latency, table: pd.DataFrame) -> list[Finding]:
    """Runs (a rank of one repetition) off the others of their curve at one size (`stats.deviations`)."""
    keys = study.keys + ["l3_position"]
    reps = [c for c in REPLICATES if c in table]
    curves = stats.series_table(table, keys, reps, common.LATENCY)
    found = stats.deviations(curves, [contrasts.MIN_EFFECT] * len(curves),
                             skip=levels.unstable_indices(table, keys, curves))
    findings = []
    for n, u, j, diff, ref, interval, p in found:
        s = curves[n]
        run = s.replicates[u] if isinstance(s.replicates[u], tuple) else (s.replicates[u],)
        who = dict(zip(reps, run))
        text, title, base = analysis.where_text(s.key, study.varying)
        unit = _unit(who)
        size = int(s.sizes[j])
        findings.append(Finding(
            id="anomaly", bench="latency", title=f"Outlier: {unit} at {analysis.size_text(size)}" + title,
            summary=_opening(" ".join(x for x in (text, f"at {analysis.size_text(size)}") if x),
                             f"{unit} measures {math.exp(diff + ref):.1f} ns, {interval.text('{:.2f}x')} the "
                             f"{math.exp(ref):.1f} ns median of the other runs there (tested against every run and "
                             "size at once: docs/STATISTICS.md)"),
            numbers={**base, **who, "claim": True, "kind": "outlier", "size_bytes": size,
                     "latency_ns": math.exp(diff + ref), "reference_ns": math.exp(ref), **analysis.interval_numbers("relative", interval),
                     "p_value": p}))
    return findings


def _without(table: pd.DataFrame, refused: list[dict]) -> pd.DataFrame:
    """The table without the series (their keys) the plausibility gate refused."""
    for key in refused:
        mask = np.ones(len(table), bool)
        for k, v in key.items():
            mask &= (table[k].astype(str) == str(v)).to_numpy()
        table = table[~mask]
    return table


def latency_findings(latency: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    """Every latency finding but locality, from `levels` (transitions and their causes, the TLB, the
    plausibility gate) and `contrasts` (concurrent vs serial, L3 groups inside a node, units that
    deviate), each number with its interval (docs/STATISTICS.md). `claim` in a finding's numbers
    says whether it claims an effect (False: a symmetry, a level with no transition, an untested one)."""
    return [f for part in latency_parts(latency, topology) for f in part()]


def latency_parts(latency: pd.DataFrame | None, topology: Topology | None = None) -> list[Callable[[], list[Finding]]]:
    """`latency_findings` as parts that need only what is worked out here (the table, its series
    and the curves the gate refuses), in the order of their findings: the levels, the contrasts,
    the outliers. `analyse` runs them side by side on a large table."""
    study = prepare(latency, topology)
    if study is None or study.table["size_bytes"].nunique() < 2:
        return []
    pooled = pool_one_rank(study.table)
    curves = levels.latency_series(pooled, study.keys, REPLICATES, where="latency.csv")
    parts: list[Callable[[], list[Finding]]] = [
        functools.partial(_levels_part, dataclasses.replace(study, table=pooled), curves),
        functools.partial(list, study.set_aside)]
    measured = curves if pooled is study.table else levels.latency_series(study.table, study.keys, REPLICATES,
                                                                          where="latency.csv")
    table = _without(study.table, [s.key for s, reason in zip(measured, levels.refusals(measured, study.topology))
                                   if reason is not None])
    if table.empty:
        return parts
    return parts + [functools.partial(_contrast_findings, study, table),
                    functools.partial(_outlier_findings, study, table)]


def _levels_part(study: _Latency, curves: list[stats.Series]) -> list[Finding]:
    return _levels_findings(study, levels.latency_levels(study.table, study.topology, study.keys, REPLICATES,
                                                         all_series=curves))


def _contrast_findings(study: _Latency, table: pd.DataFrame) -> list[Finding]:
    """Concurrent vs serial, the L3 groups inside a node, and the units that deviate from both."""
    div: list[contrasts.Contrast] = []
    if {"concurrent", "serial"} <= set(table["mode"].unique()):
        div_keys = [k for k in study.keys if k != "mode"] + ["l3_position"]
        div = contrasts.contrast(table, "mode", "concurrent", "serial", RANK_UNITS, div_keys,
                                 measure=common.LATENCY, where="latency.csv")
    ccd: list[tuple[int, int, contrasts.Contrast]] = []
    positions = sorted(set(table["l3_position"].unique()))
    if study.topology is not None and study.topology.l3_groups and len(positions) > 1:
        for p in positions[1:]:
            ccd += [(positions[0], p, c) for c in contrasts.contrast(
                table, "l3_position", positions[0], p, NODE_UNITS, study.keys, measure=common.LATENCY,
                where="latency.csv")]
    return (_divergence_findings(study, div) + _asymmetry_findings(study, ccd)
            + _deviation_findings(study, contrasts.deviations([c for _, _, c in ccd] + div)))


LATENCY_ANALYSES = (latency_findings,)


# ---------------------------------------------------------------- rank scaling

RPD = "ranks_per_domain"
# The columns that name a scaling curve: the configuration of a run less its rank count.
CURVE = tuple(c for c in COMMON_SERIES + SERIES
              if c not in WITHIN and c not in (RPD, "ranks"))


def scaling_points(latency: pd.DataFrame | None) -> pd.DataFrame:
    """One row per rank of every run at its configuration's largest size (median over
    repetitions), for the configurations measured at two or more rank counts per domain; empty
    when there are none."""
    if latency is None or latency.empty or RPD not in latency or "size_bytes" not in latency:
        return pd.DataFrame()
    # a campaign at one rank count per domain (the seed's sweep) has no curve: no table to reduce
    counts = pd.to_numeric(latency[RPD], errors="coerce").fillna(-1).astype("int64")
    if counts[counts > 0].nunique() < 2:
        return pd.DataFrame()
    points = series.point_table(latency, "latency", ["latency_ns_median"])
    points = points[(points[RPD] > 0) & (points["latency_ns_median"] > 0)]
    if points.empty:
        return pd.DataFrame()
    curve = [c for c in CURVE if c in points]
    counts = points.groupby(curve + ["size_bytes"], dropna=False)[RPD].transform("nunique")
    points = points[counts >= 2]
    # a size sweep is judged at its largest size, where every rank is beyond its caches
    largest = points.groupby(curve, dropna=False)["size_bytes"].transform("max")
    return points[points["size_bytes"] == largest].reset_index(drop=True)


def curve_columns(points: pd.DataFrame, without: tuple[str, ...] = ()) -> list[str]:
    return [c for c in CURVE if c in points and c not in without]


def _name(key: dict) -> str:
    """A scaling series in words: "cores in order, nodes 0-3, concurrent, 4 KiB pages"."""
    parts = [series.value_name(col, str(key.get(col, "")).strip())
             for col in ("strategy", "domains", "mode", "memory", "pages", "label", "system", "host")]
    return ", ".join(p for p in parts if p)


def rank_scaling(latency: pd.DataFrame | None, topology: Topology | None = None) -> list[Finding]:
    points = scaling_points(latency)
    if points.empty:
        return []
    cols = curve_columns(points)
    findings = []
    for key, g in points.groupby(cols + ["size_bytes"], sort=True, dropna=False):
        key = dict(zip(cols + ["size_bytes"], key))
        rpds = sorted(g[RPD].unique())
        per_count = g.groupby(RPD)["latency_ns_median"].median()
        base = per_count[rpds[0]]
        top = g[g[RPD] == rpds[-1]]["latency_ns_median"].to_numpy(float)
        interval = stats.unit_mean_interval(np.log(top / base).reshape(-1, 1))
        name = _name(key)
        size = size_words(int(key["size_bytes"]))
        known = bool(np.isfinite(interval.low))
        differs = known and (interval.low > 1 or interval.high < 1)
        verdict = ("" if differs else ": no change beyond the noise, its interval holds 1" if known
                   else ": whether it changes is unknown, the noise unknown with one rank")
        findings.append(Finding(
            id="rank_scaling", bench="latency",
            title=f"Rank scaling at {size} ({name})",
            summary=(f"From {rpds[0]} to {rpds[-1]} ranks per domain ({name}, {size}), the latency of a rank is "
                     f"{interval.text()} times the {base:.1f} ns at {rpds[0]} per domain "
                     f"(geometric mean over the {len(top)} ranks of the largest run; {analysis.method_words(interval.method)})"
                     f"{verdict}."),
            numbers={**{k: series.label(v) for k, v in key.items()}, "from_ranks_per_domain": int(rpds[0]),
                     "to_ranks_per_domain": int(rpds[-1]), "ratio": interval.estimate, "low": interval.low,
                     "high": interval.high, "level": interval.level, "base_ns": float(base), "claim": differs,
                     "claims": [{"quantity": "ratio", "estimate": interval.estimate, "low": interval.low,
                                 "high": interval.high, "null": 1.0,
                                 "verdict": "differs" if differs else "unknown" if not known else "undecided"}]},
            evidence=[{RPD: int(r), "latency_ns_median": float(v), "ranks": int((g[RPD] == r).sum())}
                      for r, v in per_count.items()],
        ))
    findings += placement_scaling(points)
    return findings


def placement_scaling(points: pd.DataFrame) -> list[Finding]:
    """Sequential against interleaved ranks, per domain set, size and rank count per domain."""
    if "strategy" not in points or not {"sequential", "interleaved"} <= set(points["strategy"].unique()):
        return []
    cols = curve_columns(points, without=("strategy",))
    findings = []
    for key, g in points.groupby(cols + ["size_bytes"], sort=True, dropna=False):
        key = dict(zip(cols + ["size_bytes"], key))
        by_count = []
        for rpd, h in g.groupby(RPD):
            seq = h[h["strategy"] == "sequential"]["latency_ns_median"].to_numpy(float)
            inter = h[h["strategy"] == "interleaved"]["latency_ns_median"].to_numpy(float)
            if len(seq) and len(inter):
                by_count.append((int(rpd), stats.welch(seq, inter, "Welch t interval on the mean log latency over ranks")[0]))
        if not by_count:
            continue
        rpd, interval = max(by_count, key=lambda c: abs(math.log(c[1].estimate)))
        name = _name({**key, "strategy": ""})
        size = size_words(int(key["size_bytes"]))
        findings.append(Finding(
            id="placement_scaling", bench="latency",
            title=f"Ranks on cores in order vs one core per L3 group in turn at {size} ({name})",
            summary=(f"With {rpd} ranks per domain ({name}, {size}), ranks on cores in order see "
                     f"{interval.text()} times the latency of ranks placed one core per L3 group in turn "
                     f"({analysis.method_words(interval.method)}); "
                     "at each rank count: " + ", ".join(f"{r} per domain {i.estimate:.2f}x" for r, i in by_count)
                     + "."),
            numbers={**{k: series.label(v) for k, v in key.items()}, RPD: rpd, "ratio": interval.estimate,
                     "low": interval.low, "high": interval.high, "level": interval.level},
            evidence=[{RPD: r, "ratio": i.estimate, "low": i.low, "high": i.high} for r, i in by_count],
        ))
    return findings
