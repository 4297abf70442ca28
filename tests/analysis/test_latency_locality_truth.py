"""Latency by CPU node against the firmware distances (locality.latency_locality) on tables with
planted truth.

The generator `plant` (below) states the model the tables come from; every data set is drawn
from it, never measured:
- a topology of 2, 4 or 8 nodes with a distance matrix of a real shape: 2 nodes 10 / d (d 12,
  20, 21 or 32); 4 nodes all 12 apart (LUMI-G) or two sockets of two (10 / 12 / 32); 8 nodes two
  sockets of four (10 / 12 / 32) or AMD NPS4-like (10 / 11 / 12 / 32: 11 to the neighbouring
  quadrant);
- latency to node m's memory from node c's CPUs is base x (d / 10)^e, d the firmware distance
  c -> m, base 80 to 130 ns, e 0.2 to 0.6 (drawn per data set); one or two memory nodes per data
  set, every node's CPUs reading each; a smaller size at a cache's latency (0.12 x) is measured too (the
  analysis uses the largest);
- 2 to 8 ranks per node; each rank off the truth by a log-normal factor of sigma 1, 3 or 6 %
  (the unit of uncertainty); with repetitions (half the data sets, 2 or 3) each run is further
  off by a third of that, and a rank's value is the median over its repetitions;
- *inverted*: the node farthest from a memory node is 1.15 to 1.4x faster than that node's own
  CPUs (its pairs with every nearer node contradict the distances);
- *noise only* (flat): every node's latency alike: nothing to find, and the order unresolved.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from numasweep.benches.latency import locality
from numasweep.core.topology import Topology

MIB = 1 << 20
SIZES = (64 * MIB, 1024 * MIB)
NOISES = (0.01, 0.03, 0.06)
CASES = 40           # each test's data sets (each holds many pairs of nodes)


def _matrix(rng: np.random.Generator, nodes: int) -> list[list[int]]:
    if nodes == 2:
        d = int(rng.choice([12, 20, 21, 32]))
        return [[10, d], [d, 10]]
    kind = int(rng.integers(2))
    socket = nodes // 2 if nodes == 4 and kind == 1 or nodes == 8 else nodes
    out = []
    for i in range(nodes):
        row = []
        for j in range(nodes):
            if i == j:
                row.append(10)
            elif i // socket != j // socket:
                row.append(32)
            elif nodes == 8 and kind == 1 and i // 2 == j // 2:
                row.append(11)
            else:
                row.append(12)
        out.append(row)
    return out


@dataclass
class Planted:
    latency: pd.DataFrame
    topology: dict
    truth: dict          # (memory node, cpu node) -> planted latency at the largest size
    inverted: dict       # memory node -> the farther node made faster
    noise: float
    ranks: int           # per node


def plant(rng: np.random.Generator, nodes: int | None = None, noise: float | None = None,
          flat: bool = False, inverted: bool = False, min_ranks: int = 2) -> Planted:
    """One data set from the model of the module docstring."""
    nodes = nodes or int(rng.choice([2, 4, 8]))
    noise = float(noise if noise is not None else rng.choice(NOISES))
    dist = _matrix(rng, nodes)
    ranks = int(rng.integers(min_ranks, 9))
    reps = int(rng.choice([1, 2, 3])) if rng.random() < 0.5 else 1
    base, e = float(rng.uniform(80, 130)), float(rng.uniform(0.2, 0.6))
    mems = [int(m) for m in rng.choice(nodes, size=min(nodes, int(rng.integers(1, 3))), replace=False)]
    cores = 8
    topo = Topology.from_dict({"system": "planted", "threads_per_core": 1, "distances": dist,
                               "nodes": [{"id": n, "cpus": list(range(n * cores, (n + 1) * cores)),
                                          "memory_bytes": 1 << 34} for n in range(nodes)]})
    truth, flipped, rows = {}, {}, []
    for m in mems:
        for c in range(nodes):
            truth[m, c] = base * (1 if flat else (dist[c][m] / 10) ** e)
        if inverted:
            far = max(range(nodes), key=lambda c: (dist[c][m], c))
            truth[m, far] = truth[m, m] / float(rng.uniform(1.15, 1.4))
            flipped[m] = far
        for c in range(nodes):
            for r in range(ranks):
                cpu = c * cores + r % cores
                rank = rng.lognormal(0, noise)
                for rep in range(reps):
                    run = rank * (rng.lognormal(0, noise / 3) if reps > 1 else 1.0)
                    for size in SIZES:
                        scale = 1.0 if size == SIZES[-1] else 0.12
                        rows.append({"rank": c * ranks + r, "ranks": nodes * ranks, "mode": "serial", "cpu": cpu,
                                     "cpu_node": c, "l3_group": -1, "mem_nodes": m, "page_size": "4k",
                                     "size_bytes": size, "repetition": rep,
                                     "latency_ns_median": truth[m, c] * scale * run})
    table = pd.DataFrame(rows)
    if reps == 1:
        table = table.drop(columns="repetition")
    return Planted(table, topo, truth, flipped, noise, ranks)


def findings(p: Planted) -> list:
    return locality.latency_locality(p.latency, p.topology)


def tally(data: list[Planted]) -> dict:
    """Counts over the data sets: pairs of different distances (resolved, unresolved, wrongly
    contradicting), intervals covering the planted ratio, group verdicts, same-distance claims,
    inverted data sets flagged (every flagged pair has the planted farther node, and one is)."""
    t = dict(pairs=0, resolved=0, contradicts=0, covered=0, coverage_n=0, groups=0, agrees_true=0,
             agrees_none=0, agrees_false=0, orderings=0, tie_claims=0, tie_pairs=0, inverted=0, flagged=0,
             missed=[])
    by_noise: dict[float, list[int]] = {}
    unresolved: dict[float, list[int]] = {}
    flagged: dict[tuple, list[int]] = {}
    for p in data:
        found = findings(p)
        t["orderings"] += sum(f.id == "latency_ordering" for f in found)
        hits: dict[int, set] = {}
        for f in found:
            n = f.numbers
            if f.id == "latency_ordering":
                hits.setdefault(n["mem_node"], set()).add(n["farther_cpu_node"])
                continue
            m = n["mem_node"]
            t["groups"] += 1
            t[{True: "agrees_true", None: "agrees_none", False: "agrees_false"}[n["distance_order_agrees"]]] += 1
            for q in n["distance_pairs"]:
                planted = p.truth[m, q["farther"]] / p.truth[m, q["nearer"]]
                if m in p.inverted and p.inverted[m] in (q["farther"], q["nearer"]):
                    continue
                t["pairs"] += 1
                t["resolved"] += bool(q["low"] > 1)
                unresolved.setdefault(p.noise, []).append(not q["low"] > 1)
                t["contradicts"] += bool(q["contradicts"])
                if np.isfinite(q["low"]):
                    t["coverage_n"] += 1
                    ok = q["low"] <= planted <= q["high"]
                    t["covered"] += ok
                    by_noise.setdefault(p.noise, []).append(ok)
            t["tie_pairs"] += len(n["same_distance_pairs"])
            t["tie_claims"] += sum(q["differs"] for q in n["same_distance_pairs"])
        for m, far in p.inverted.items():
            t["inverted"] += 1
            got = hits.get(m, set())
            t["flagged"] += got == {far}
            flagged.setdefault((p.noise, min(p.ranks, 3)), []).append(got == {far})
            if got != {far}:
                t["missed"].append((p.noise, p.ranks, round(p.truth[m, m] / p.truth[m, far], 3), sorted(got)))
    t["coverage_by_noise"] = {k: float(np.mean(v)) for k, v in sorted(by_noise.items())}
    t["unresolved_by_noise"] = {k: float(np.mean(v)) for k, v in sorted(unresolved.items())}
    t["flagged_by"] = {k: (int(np.sum(v)), len(v)) for k, v in sorted(flagged.items())}
    return t


def _data(seed: int, n: int, **kw) -> list[Planted]:
    rng = np.random.default_rng(seed)
    return [plant(rng, **kw) for _ in range(n)]


def test_correct_orderings_are_never_contradicted_and_intervals_cover() -> None:
    t = tally(_data(11, CASES))
    assert t["pairs"] > 200 and t["orderings"] == 0 and t["contradicts"] == 0 and t["agrees_false"] == 0
    assert t["tie_claims"] == 0
    assert 0.90 <= t["covered"] / t["coverage_n"] <= 0.99
    # the order is resolved for most pairs (what stays unresolved is a ratio of a few % in 6 % noise)
    assert t["resolved"] / t["pairs"] > 0.6 and t["agrees_true"] > 0


def test_strong_orderings_are_resolved() -> None:
    # 1 % rank noise: every planted ratio of 1.037 or more (12 vs 10 at e = 0.2) is resolved
    t = tally(_data(12, CASES // 2, noise=0.01, nodes=4))
    assert t["contradicts"] == 0 and t["resolved"] / t["pairs"] > 0.9


def test_inverted_orderings_are_flagged() -> None:
    # three ranks a node or more: with two, a Welch interval has one or two degrees of freedom
    t = tally(_data(13, CASES // 2, inverted=True, noise=0.01, min_ranks=3)
              + _data(14, CASES // 2, inverted=True, noise=0.03, min_ranks=3))
    assert t["inverted"] >= CASES and t["flagged"] / t["inverted"] >= 0.9, t["missed"]
    assert t["agrees_true"] == 0 and t["contradicts"] == 0


def test_noise_only_claims_nothing() -> None:
    t = tally(_data(15, CASES, flat=True))
    assert t["orderings"] == 0 and t["contradicts"] == 0 and t["tie_claims"] == 0 and t["agrees_false"] == 0
    # a group of two nodes has one pair: its interval lies above 1 by chance in 2.5 % of data sets
    assert t["groups"] > 40 and t["agrees_true"] <= 0.05 * t["groups"]


def test_a_contradiction_is_a_finding_with_its_interval() -> None:
    p = plant(np.random.default_rng(16), nodes=2, noise=0.01, inverted=True)
    (loc,) = [f for f in findings(p) if f.id == "latency_locality"]
    orders = [f for f in findings(p) if f.id == "latency_ordering"]
    assert orders and all(f.numbers["nearer_cpu_node"] != f.numbers["farther_cpu_node"] for f in orders)
    assert loc.numbers["distance_order_agrees"] is False and "order them differently" in loc.summary
    for f in orders:
        n = f.numbers
        assert n["claim"] and n["ratio_high"] < 1 / 1.1 and n["distance_farther"] > n["distance_nearer"]
        assert f"{n['ratio']:.2f}x" in f.summary and "contradicts the firmware distances" in f.summary


def test_nodes_of_one_distance_that_differ_are_claimed_with_their_interval() -> None:
    # 4 nodes: for any memory node the two farthest share a distance (12 on LUMI-G, 32 across sockets)
    p = plant(np.random.default_rng(17), nodes=4, noise=0.01, min_ranks=4)
    m = int(p.latency["mem_nodes"].iloc[0])
    dist = p.topology.distances
    a, b = sorted(range(4), key=lambda c: (dist[c][m], c))[-2:]
    assert dist[a][m] == dist[b][m]
    slow = (p.latency["cpu_node"] == b) & (p.latency["mem_nodes"] == m)
    p.latency.loc[slow, "latency_ns_median"] *= 1.3
    (loc,) = [f for f in findings(p) if f.id == "latency_locality" and f.numbers["mem_node"] == m]
    (pair,) = [q for q in loc.numbers["same_distance_pairs"] if q["differs"]]
    assert (pair["slower"], pair["faster"]) == (b, a) and pair["low"] > 1.1 and pair["low"] < 1.3 < pair["high"]
    assert f"{pair['ratio']:.2f}x" in loc.summary and f"the firmware gives node {pair['slower']} the distance" in loc.summary
    assert loc.numbers["same_distance_spread"][dist[a][m]]["differs"]


def _two_nodes(remote: float, noise: float, seed: int) -> Planted:
    """Two nodes 10 / 21 apart, memory on each, 6 ranks a node: remote latency `remote` x local."""
    rng = np.random.default_rng(seed)
    dist = [[10, 21], [21, 10]]
    topo = Topology.from_dict({"system": "planted", "threads_per_core": 1, "distances": dist,
                               "nodes": [{"id": n, "cpus": list(range(n * 8, n * 8 + 8)), "memory_bytes": 1 << 34}
                                         for n in range(2)]})
    truth = {(m, c): 100.0 * (remote if c != m else 1.0) for m in range(2) for c in range(2)}
    rows = [{"rank": c * 6 + r, "ranks": 12, "mode": "serial", "cpu": c * 8 + r, "cpu_node": c, "l3_group": -1,
             "mem_nodes": m, "page_size": "4k", "size_bytes": SIZES[-1],
             "latency_ns_median": truth[m, c] * rng.lognormal(0, noise)}
            for m in range(2) for c in range(2) for r in range(6)]
    return Planted(pd.DataFrame(rows), topo, truth, {}, noise, 6)


def test_equal_local_and_remote_latency_is_no_practical_difference() -> None:
    """Remote = local in 0.34 % noise: no ordering claim, equivalent inside the 10 % margin, and the
    two mirror-image memory nodes told in the same words."""
    found = findings(_two_nodes(1.0, 0.0034, 18))
    assert [f.id for f in found] == ["latency_locality", "latency_locality"]
    for f in found:
        n = f.numbers
        assert n["distance_order_agrees"] is None and not n["claim"] and n["equivalent"]
        assert "order the nodes the same way" not in f.summary and "no practical difference" in f.summary
        assert "equivalent" in f.summary

    def words(f) -> str:
        return "".join(ch for ch in f.summary if not ch.isdigit())
    assert words(found[0]) == words(found[1])


def test_remote_latency_1_6x_is_claimed_with_its_interval() -> None:
    found = findings(_two_nodes(1.6, 0.01, 19))
    assert len(found) == 2
    for f in found:
        n = f.numbers
        assert n["distance_order_agrees"] is True and n["claim"] and not n["equivalent"]
        (pair,) = n["distance_pairs"]
        assert 1.1 < pair["low"] <= 1.6 <= pair["high"]
        assert "order the nodes the same way" in f.summary and f"{pair['ratio']:.2f}x" in f.summary


@pytest.mark.parametrize("nodes", [2, 4, 8, 16])
def test_every_pair_of_nodes_is_tested_once_whatever_the_distances(nodes) -> None:
    """Over 2, 4, 8 and 16 CPU nodes and every tie pattern a SLIT gives (all distinct, all one, two
    sockets, NPS4-like quadrants): each unordered pair of nodes appears once, in the family of its
    kind, the farther or slower node first."""
    rng = np.random.default_rng(nodes)
    cells = {n: rng.lognormal(math.log(100 + 10 * n), 0.02, 4) for n in range(nodes)}
    patterns = {"distinct": {n: 10 + n for n in range(nodes)}, "one": {n: 12 for n in range(nodes)},
                "sockets": {n: 10 if n == 0 else 12 if n < max(1, nodes // 2) else 32 for n in range(nodes)},
                "quadrants": {n: 10 if n == 0 else 11 if n < 2 else 12 if n < max(2, nodes // 2) else 32
                              for n in range(nodes)}}
    for name, dist in patterns.items():
        ordered, tied = locality.node_pairs(cells, dist)
        pairs = [frozenset((p.a, p.b)) for p in ordered + tied]
        assert len(pairs) == len(set(pairs)) == nodes * (nodes - 1) // 2, name
        assert all(dist[p.a] > dist[p.b] for p in ordered) and all(dist[p.a] == dist[p.b] for p in tied), name
        assert all(p.ratio.estimate >= 1 for p in tied), name


def _nps4(rng: np.random.Generator, slow: tuple[int, int] | None = None, reps: int = 3) -> Planted:
    """Two sockets of four nodes (SLIT 10 local, 12 in the socket, 32 across), memory on node 0 and
    node 5, four ranks a node (four CCDs): latency 100 ns local, 1.10x in the socket, 1.9x across; `slow`: one
    (CPU node, memory node) pair 1.2x slower than the others at its distance."""
    dist = [[10 if i == j else 12 if i // 4 == j // 4 else 32 for j in range(8)] for i in range(8)]
    topo = Topology.from_dict({"system": "nps4", "threads_per_core": 1, "distances": dist,
                               "nodes": [{"id": n, "cpus": list(range(n * 8, n * 8 + 8)), "memory_bytes": 1 << 34}
                                         for n in range(8)]})
    factor = {10: 1.0, 12: 1.10, 32: 1.9}
    truth, rows = {}, []
    for m in (0, 5):
        for c in range(8):
            truth[m, c] = 100.0 * factor[dist[c][m]] * (1.2 if (c, m) == slow else 1.0)
            for r in range(4):
                rank = rng.lognormal(0, 0.02)
                for rep in range(reps):
                    for size in SIZES:
                        rows.append({"rank": c * 4 + r, "ranks": 32, "mode": "serial", "cpu": c * 8 + r, "cpu_node": c,
                                     "l3_group": -1, "mem_nodes": m, "page_size": "4k", "size_bytes": size,
                                     "repetition": rep, "latency_ns_median": truth[m, c] * rank
                                     * rng.lognormal(0, 0.005) * (1.0 if size == SIZES[-1] else 0.12)})
    return Planted(pd.DataFrame(rows), topo, truth, {}, 0.02, 4)


def test_two_sockets_of_four_nodes_claim_the_socket_penalty_and_the_slow_pair() -> None:
    """The 1.9x / 1.1x = 1.73x cross-socket penalty is claimed for each memory node with its
    interval, whatever the small same-socket step does; the slow pair is a pair of one distance
    that differs; the measured groups are the sockets, one split where the slow node is; every
    pair of the 8 nodes once."""
    covered = []
    for seed in range(20):
        p = _nps4(np.random.default_rng(31 + seed), slow=(6, 0))
        found = {f.numbers["mem_node"]: f for f in findings(p) if f.id == "latency_locality"}
        assert sorted(found) == [0, 5]
        for m, f in found.items():
            n = f.numbers
            assert len(n["distance_pairs"]) + len(n["same_distance_pairs"]) == 28
            (cross,) = [s for s in n["distance_steps"] if s["distance_farther"] == 32]
            # the pooled ranks' geometric means: node 6's 1.2x is one of the four across from node 0
            planted = 1.9 * (1.2 ** 0.25 if m == 0 else 1) / 1.1
            assert cross["claim"] and cross["ratio_low"] > 1.1, cross
            covered.append(cross["ratio_low"] <= planted <= cross["ratio_high"])
            assert "nodes at distance 32" in f.summary and f"{cross['ratio']:.2f}x" in f.summary
            assert not any(q["contradicts"] for q in n["distance_pairs"])
    assert np.mean(covered) >= 0.85, np.mean(covered)
    p = _nps4(np.random.default_rng(31), slow=(6, 0))
    found = {f.numbers["mem_node"]: f for f in findings(p) if f.id == "latency_locality"}
    slow = [q for q in found[0].numbers["same_distance_pairs"] if q["differs"]]
    assert {q["slower"] for q in slow} == {6} and len(slow) == 3, slow       # 6 against 4, 5 and 7
    assert not any(q["differs"] for q in found[5].numbers["same_distance_pairs"])
    assert found[0].numbers["groups_agree"] is False and "splits nodes the firmware puts at one distance" in found[0].summary
    assert found[5].numbers["measured_groups"][-1] == [0, 1, 2, 3] or found[5].numbers["groups_agree"]


def test_one_rank_per_node_with_repetitions_has_its_interval() -> None:
    """Four nodes, one rank each, three repetitions: a planted 1.4x remote latency is claimed with
    an interval over the repetitions, and the summary says so (not "noise unknown")."""
    rng = np.random.default_rng(32)
    dist = [[10, 20, 20, 20], [20, 10, 20, 20], [20, 20, 10, 20], [20, 20, 20, 10]]
    topo = Topology.from_dict({"system": "four", "threads_per_core": 1, "distances": dist,
                               "nodes": [{"id": n, "cpus": list(range(n * 8, n * 8 + 8)), "memory_bytes": 1 << 34}
                                         for n in range(4)]})
    rows = [{"rank": c, "ranks": 4, "mode": "serial", "cpu": c * 8, "cpu_node": c, "l3_group": -1, "mem_nodes": 0,
             "page_size": "4k", "size_bytes": size, "repetition": rep,
             "latency_ns_median": 100.0 * (1.4 if c else 1.0) * rng.lognormal(0, 0.01) * (1.0 if size == SIZES[-1] else 0.12)}
            for c in range(4) for rep in range(3) for size in SIZES]
    (f,) = [f for f in locality.latency_locality(pd.DataFrame(rows), topo) if f.id == "latency_locality"]
    (step,) = f.numbers["distance_steps"]
    assert step["claim"] and step["ratio_low"] <= 1.4 <= step["ratio_high"] and step["ratio_low"] > 1.2, step
    assert f.numbers["units"] == {0: 3, 1: 3, 2: 3, 3: 3} and "noise unknown" not in f.summary
    assert f.numbers["distance_order_agrees"] is True


def main() -> None:
    """Prints the known-truth figures of docs/STATISTICS.md."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", type=int, default=300)
    ap.add_argument("--seed", type=int, default=2026)
    a = ap.parse_args()
    n = a.datasets
    ok = tally(_data(a.seed, n))
    inv = tally(_data(a.seed + 1, n, inverted=True))
    flat = tally(_data(a.seed + 2, n, flat=True))
    print(f"correct orderings, {n} data sets: {ok['pairs']} pairs of different distances, "
          f"resolved {ok['resolved']} ({ok['resolved'] / ok['pairs']:.1%}), unresolved "
          f"{ok['pairs'] - ok['resolved']} ({1 - ok['resolved'] / ok['pairs']:.1%}), false contradictions "
          f"{ok['contradicts']} (latency_ordering findings {ok['orderings']}); groups agree True/None/False "
          f"{ok['agrees_true']}/{ok['agrees_none']}/{ok['agrees_false']}; same-distance claims "
          f"{ok['tie_claims']} of {ok['tie_pairs']} pairs")
    cov = ok["covered"] / ok["coverage_n"]
    print(f"95 % intervals covering the planted ratio: {cov:.1%} of {ok['coverage_n']} (by noise "
          + " / ".join(f"{k:.0%}: {v:.1%}" for k, v in ok["coverage_by_noise"].items()) + ")")
    print("unresolved pairs by noise: " + " / ".join(f"{k:.0%}: {v:.1%}" for k, v in ok["unresolved_by_noise"].items()))
    print(f"inverted: flagged {inv['flagged']} of {inv['inverted']} (and no other farther node); "
          f"false contradictions among the other pairs {inv['contradicts']}; flagged by (noise, ranks 2 / 3+): "
          + ", ".join(f"{k[0]:.0%} {'2' if k[1] == 2 else '3+'}: {a}/{b}" for k, (a, b) in inv["flagged_by"].items()))
    print(f"noise only, {n} data sets: latency_ordering {flat['orderings']}, same-distance claims "
          f"{flat['tie_claims']} of {flat['tie_pairs']}, groups agree True/None/False "
          f"{flat['agrees_true']}/{flat['agrees_none']}/{flat['agrees_false']}")
    claimed, covered, slow_only, total = 0, 0, 0, 0
    for seed in range(n // 10):
        p = _nps4(np.random.default_rng(a.seed + 100 + seed), slow=(6, 0))
        for f in (f for f in findings(p) if f.id == "latency_locality"):
            m, total = f.numbers["mem_node"], total + 1
            (cross,) = [x for x in f.numbers["distance_steps"] if x["distance_farther"] == 32]
            planted = 1.9 * (1.2 ** 0.25 if m == 0 else 1) / 1.1
            claimed += cross["claim"]
            covered += cross["ratio_low"] <= planted <= cross["ratio_high"]
            flagged = {(q["slower"], q["faster"]) for q in f.numbers["same_distance_pairs"] if q["differs"]}
            slow_only += flagged == ({(6, 4), (6, 5), (6, 7)} if m == 0 else set())
    print(f"two sockets of four nodes, {n // 10} data sets ({total} memory nodes): cross-socket penalty claimed "
          f"{claimed}, its interval covering the planted ratio {covered}; the slow pairs alone flagged {slow_only}")


if __name__ == "__main__":
    main()
