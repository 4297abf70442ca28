"""numa_loaded_latency: rows per (traffic, delay), placement of the chase, the load threads and
their memory per row, the idle point against the idle chase, retaken samples, the load against the delay."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from helpers.kernels import contract_columns, fractions, node_of, read_rows, run, run_ok

KINDS = ["read", "r3w1", "r2w1", "r1w1", "triad"]
# Above this machine's last-level cache (and most others'), so the chase measures memory.
SIZE = "64M"


def cpus_allowed() -> list[int]:
    return sorted(os.sched_getaffinity(0))


@pytest.fixture(scope="module")
def two_cpus():
    cpus = cpus_allowed()
    if len(cpus) < 2:
        pytest.fail("loaded latency needs two CPUs: one for the chase, one for the load")
    return cpus[0], cpus[1]


def loaded(kernels_bin, tmp_path, *args: str, name: str = "ll.csv") -> list[dict[str, str]]:
    csv_path = tmp_path / name
    run_ok([kernels_bin / "numa_loaded_latency", *args, f"--csv={csv_path}", "--quiet"], timeout=300)
    header, rows = read_rows(csv_path)
    assert header == contract_columns("numa_loaded_latency")
    return rows


def test_one_row_per_kind_and_delay_with_placement(kernels_bin, tmp_path, two_cpus):
    chase, load = two_cpus
    rows = loaded(kernels_bin, tmp_path, "--size=1M", "--load-size=1M", f"--chase-cpu={chase}", f"--load-cpus={load}",
                  f"--traffic={','.join(KINDS)}", "--delay=idle,1000,0", "--samples=2", "--min-time=0.01",
                  "--policy=bind", "--mem-nodes=0")
    assert [(r["traffic"], r["delay"]) for r in rows] == [(k, d) for k in KINDS for d in ("-1", "1000", "0")]
    for r in rows:
        assert (int(r["chase_cpu"]), int(r["chase_node"])) == (chase, node_of(chase))
        assert r["load_cpus"] == str(load) and r["load_cpu_nodes"] == str(node_of(load))
        assert r["load_threads"] == "1" and r["strategy"] == "list"
        assert r["policy"] == "bind" and r["mem_nodes"] == "0"
        assert fractions(r["chase_page_fractions"])[0] == 1.0
        assert fractions(r["load_page_fractions"])[0] == 1.0
        assert float(r["latency_ns_min"]) <= float(r["latency_ns_median"]) <= float(r["latency_ns_max"])
        assert 0 < float(r["chase_on_cpu_pct"]) <= 100
        # The kernel guarantees the load ran (every thread active) during the point, not that it
        # moved bytes within the chase's samples: a load thread whose CPU other work holds can
        # miss them (20 ms here), and then its share of the time on its CPU says so.
        gb_s, load_on_cpu = float(r["load_gb_s"]), float(r["load_on_cpu_pct"])
        if r["delay"] == "-1":
            assert gb_s == 0 and load_on_cpu == 100, r
        else:
            assert gb_s > 0 or load_on_cpu < 95, r


def test_strategy_picks_the_cpus_but_the_chase(kernels_bin, tmp_path, two_cpus):
    chase, load = two_cpus
    for strategy in ("sequential", "interleaved", "nodes"):
        rows = loaded(kernels_bin, tmp_path, "--size=256K", "--load-size=256K", f"--chase-cpu={chase}",
                      f"--strategy={strategy}", "--load-threads=1", "--delay=0", "--samples=1", "--min-time=0.005")
        (r,) = rows
        assert r["strategy"] == strategy and r["load_cpus"] == str(load) and int(r["chase_cpu"]) == chase


@pytest.mark.slow
def test_zero_load_agrees_with_the_idle_chase(kernels_bin, tmp_path, two_cpus):
    """The idle point (load threads asleep) and numa_latency on the same CPU and size measure the
    same chase. Each run draws its own 64 MiB of pages, and on this VM that alone moves a run's
    median by up to 10 % (numa_latency against itself: 136-152 ns), and a neighbour's work by
    more (one run of three at 110 ns and two at 128-132 ns), so single runs cannot be held to each
    other's min..max. Three interleaved runs of each, each kernel by its least disturbed run (other
    work only adds time to a chase), within 15 % of each other: a chase that measured something
    else (a sequential walk is several times faster, a load left running is slower by far more)
    still fails."""
    chase, _ = two_cpus
    idle, ref = [], []
    for attempt in range(3):
        (row,) = loaded(kernels_bin, tmp_path, f"--size={SIZE}", "--load-size=16M", f"--chase-cpu={chase}",
                        "--delay=idle", "--samples=5", "--min-time=0.05")
        idle.append(float(row["latency_ns_median"]))
        csv_path = tmp_path / "idle.csv"
        run_ok(["taskset", "-c", str(chase), kernels_bin / "numa_latency", f"--size={SIZE}", "--samples=5",
                "--min-time=0.05", "--spread=0", f"--csv={csv_path}", "--quiet"])
        (r,) = read_rows(csv_path)[1]
        ref.append(float(r["latency_ns_median"]))
    ratio = min(idle) / min(ref)
    assert 1 / 1.15 <= ratio <= 1.15, f"idle loaded latency {idle} ns against the idle chase {ref} ns: {ratio:.3f}x"


def test_chase_samples_taken_off_its_cpu_are_taken_again(kernels_bin, tmp_path, two_cpus):
    """A busy process on the chase's CPU: every sample is taken again until the budget (as many
    retakes as samples) is spent, the CSV counts them and the warning says so."""
    chase, _ = two_cpus
    hog = subprocess.Popen(["taskset", "-c", str(chase), "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)
        csv_path = tmp_path / "ll.csv"
        proc = run_ok([kernels_bin / "numa_loaded_latency", "--size=256K", "--load-size=256K", f"--chase-cpu={chase}",
                       "--delay=idle", "--samples=3", "--min-time=0.05", f"--csv={csv_path}"])
    finally:
        hog.kill()
        hog.wait()
    (row,) = read_rows(csv_path)[1]
    assert int(row["chase_retaken"]) == 3 and float(row["chase_on_cpu_pct"]) < 95, row
    assert "after taking 3 samples again" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_the_load_rises_as_the_delay_falls_and_never_speeds_the_chase(kernels_bin, tmp_path, two_cpus):
    """The delay sweep drives the injected load: achieved bandwidth rises at every step from idle
    to no delay. Whether latency then rises is the machine's: on this 2-CPU VM one load thread
    moves about 19 GB/s and the chase's latency stays within about 2 % of idle (Spearman rho over
    the points was above 0 in 24 of 40 runs), so only the sanity half is asserted: the heaviest
    point's least disturbed sample is not faster than the idle one's beyond 2 %. The curve itself
    is what bench/mlc.py compares with multichase's multiload, on the same CPUs.

    On a shared machine another process can take the load thread's CPU during one point (the load
    then falls between two steps) or disturb every sample of the idle point, so the tries are
    judged together, each point by its least disturbed figure over them: the most bandwidth the
    load reached, the least latency the chase saw. A delay that did nothing, or a chase made faster
    by the load, still fails: no try then shows the rise or the bound."""
    chase, load = two_cpus
    seen = []
    for attempt in range(4):
        rows = loaded(kernels_bin, tmp_path, f"--size={SIZE}", "--load-size=64M", f"--chase-cpu={chase}",
                      f"--load-cpus={load}", "--traffic=r1w1", "--delay=idle,20000,2000,200,0", "--samples=5",
                      "--min-time=0.03")
        seen.append([(float(r["load_gb_s"]), float(r["latency_ns_min"])) for r in rows])
        gb_s = [max(step) for step in zip(*([gb for gb, _ in tried] for tried in seen))]
        lat = [min(step) for step in zip(*([ns for _, ns in tried] for tried in seen))]
        if gb_s[0] == 0 and all(a < b for a, b in zip(gb_s, gb_s[1:])) and lat[-1] >= lat[0] / 1.02:
            return
    pytest.fail(f"the load did not rise step by step, or the heaviest point was faster than idle, "
                f"over {len(seen)} tries: {seen}")


def test_placement_conflicts_answer_in_one_line(kernels_bin, tmp_path, two_cpus):
    """Bad values of each option are in the catalogue of bad inputs; here the combinations."""
    chase, load = two_cpus
    for args, says in (([f"--chase-cpu={chase}", f"--load-cpus={chase}"], "taken by the measuring thread"),
                       ([f"--load-cpus={load}", "--load-threads=1"], "leave out the thread count"),
                       ([f"--chase-cpu={chase}", "--load-threads=4096"], "4096 threads asked for")):
        proc = run([kernels_bin / "numa_loaded_latency", *args, f"--csv={tmp_path / 'x.csv'}"])
        lines = proc.stderr.splitlines()
        assert proc.returncode == 2 and proc.stdout == "" and len(lines) == 1, proc.stderr
        assert lines[0].startswith("numa_loaded_latency: error:") and says in lines[0], lines
        assert not (tmp_path / "x.csv").exists()
