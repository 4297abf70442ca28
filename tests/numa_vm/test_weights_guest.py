"""The weights campaign (config/campaigns/weights.yaml) end to end in the 4-node guest, whose
node 3 has memory but no CPUs and whose HMAT puts it in a slower tier, like a CXL expander.

The guest runs `snakemake sweep` on the campaign file itself with weights-guest.yaml layered
after it (the guest's settings and the same two sweeps made small): the `matrix` sweep (node 0's
CPUs, memory on node 0, then on node 3) and the `weights` sweep (weighted interleave over nodes
0 and 3: uniform, the kernel's current weights, and four candidates). Before it, the guest's
sysfs weights are set to 5 and 2, a weighting the campaign does not list, so `weighted:0,3` (the
weights the kernel has now) is one of its own; the kernels set the other weightings in sysfs
and must leave 5 and 2 behind, past a weights state file of another boot in /var/tmp. The report, rendered here from the guest's results, must give
the recommended weights with the lines that set and use them, the comparison of the
weightings, and the matrix beside the guest's HMAT.

A guest kernel without weighted interleave fails the campaign step with the reason (no skip).
Under emulation the bandwidths are the host's memory through TCG: what is checked is that the
campaign runs and the report says what it measured, not what the numbers are."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from numa_guest import (HERE, GuestRun, Layout, Step, copy_repo_with_kernels, firmware_beside_measured,
                        page_fractions, render_report, section)

pytestmark = [pytest.mark.numa_vm, pytest.mark.workflow]

TIMEOUT = 900
LAYOUT = Layout(nodes=4, memory_only=(3,))
CAMPAIGN = "config/campaigns/weights.yaml"
OVERLAY = HERE / "weights-guest.yaml"
SYSTEM = "numa-vm"  # the guest's host name, which detection takes as the system name (system: null)
WEIGHTS = "/sys/kernel/mm/mempolicy/weighted_interleave"
# The sysfs weights of nodes 0 and 3 while the campaign runs: no weighting the campaign lists.
CURRENT = {0: 5, 3: 2}
# What the overlay may change in each of the campaign's sweeps: their size, nothing else.
SCALED = {"threads", "array_size", "ntimes", "repetitions"}

# What a host run left in its /var/tmp where the host refused to set `auto` back (as the 6.18
# development machines do), which the guest sees through the shared root: a state file of another
# boot (written before state files named their boot), whose node-0 weight of 1 the kernels must
# not write (the campaign then ended with 1, 2).
STALE_STATE = (f"printf 'pid 999999\\n{WEIGHTS}/node0 1\\n{WEIGHTS}/auto true\\n' "
               "> /var/tmp/numasweep-weights.state")

CAMPAIGN_STEP = f"""
[ -d {WEIGHTS} ] || {{ echo "{WEIGHTS} missing: this guest kernel has no weighted interleave, which the weights campaign needs"; exit 3; }}
old0=$(cat {WEIGHTS}/node0) old3=$(cat {WEIGHTS}/node3)
echo {CURRENT[0]} > {WEIGHTS}/node0 && echo {CURRENT[3]} > {WEIGHTS}/node3 || {{ echo "cannot write {WEIGHTS}"; exit 4; }}
echo "$(cat {WEIGHTS}/node0) $(cat {WEIGHTS}/node3)" > "$OUT/weights_before"
{STALE_STATE}
cd "$OUT/repo" && snakemake sweep --profile profiles/local --cores 3 \\
    --configfile {CAMPAIGN} "$REPO/tests/numa_vm/{OVERLAY.name}" --config wrapper="$WRAPPER"
rc=$?
echo "$(cat {WEIGHTS}/node0) $(cat {WEIGHTS}/node3)" > "$OUT/weights_after"
echo "$old0" > {WEIGHTS}/node0
echo "$old3" > {WEIGHTS}/node3
exit $rc
"""
# A weighted run stopped by SIGTERM mid-run: the kernel sets 2,1 (the guest has 5,2), and its
# handler must put 5,2 (and `auto`, where the kernel has it) back before it exits.
SIGTERM_STEP = f"""
[ -d {WEIGHTS} ] || {{ echo "{WEIGHTS} missing: this guest kernel has no weighted interleave"; exit 3; }}
state() {{ echo "$(cat {WEIGHTS}/node0) $(cat {WEIGHTS}/node3) $(cat {WEIGHTS}/auto 2>/dev/null || echo no-auto)"; }}
old0=$(cat {WEIGHTS}/node0) old3=$(cat {WEIGHTS}/node3)
echo {CURRENT[0]} > {WEIGHTS}/node0 && echo {CURRENT[3]} > {WEIGHTS}/node3 || {{ echo "cannot write {WEIGHTS}"; exit 4; }}
state > "$OUT/sigterm_before"
OMP_NUM_THREADS=1 "$BIN/numa_bandwidth" --policy=weighted --mem-nodes=0,3 --weights=2,1 --kernels=triad \
    --array-size=4M --ntimes=100000 --quiet &
pid=$!
for i in $(seq 600); do [ "$(cat {WEIGHTS}/node0)" = 2 ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
state > "$OUT/sigterm_during"
kill -TERM $pid
wait $pid
echo $? > "$OUT/sigterm_rc"
state > "$OUT/sigterm_after"
echo "$old0" > {WEIGHTS}/node0
echo "$old3" > {WEIGHTS}/node3
"""
STEPS = [Step("campaign", CAMPAIGN_STEP), Step("sigterm", SIGTERM_STEP)]
prepare = copy_repo_with_kernels


def sweeps(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text())["bandwidth"]["sweeps"]


@pytest.fixture(scope="module")
def campaign(guest: GuestRun) -> Path:
    """The guest's results folder once the campaign step succeeded."""
    guest.step("campaign").check()
    return guest.out / "repo" / "results" / SYSTEM


@pytest.fixture(scope="module")
def report(campaign: Path, guest: GuestRun, repo: Path) -> str:
    return render_report(repo, guest.out, SYSTEM)


@pytest.fixture(scope="module")
def findings(report: str, guest: GuestRun) -> list[dict]:
    return json.loads((guest.out / "repo" / "report" / SYSTEM / "findings.json").read_text())["findings"]


def test_overlay_is_the_campaign_made_small(repo: Path) -> None:
    """The guest runs the campaign's own sweeps: the overlay repeats them (a configfile replaces
    a list whole) and changes only their size."""
    ours, theirs = sweeps(OVERLAY), sweeps(repo / CAMPAIGN)
    assert len(ours) == len(theirs), f"{OVERLAY.name} has {len(ours)} sweeps, {CAMPAIGN} {len(theirs)}"
    for mine, original in zip(ours, theirs):
        kept = {k: v for k, v in original.items() if k not in SCALED}
        assert {k: v for k, v in mine.items() if k not in SCALED} == kept, (
            f"{OVERLAY.name} changes more than {sorted(SCALED)} of the campaign's sweep {original.get('label')}")
        assert mine["threads"] == [1] and mine["repetitions"] >= 2, mine


def test_campaign_runs_every_weighting_and_restores_the_weights(campaign: Path, guest: GuestRun) -> None:
    """22 points, each with the weights it ran with in its row and its pages where they say; the
    guest's sysfs weights as they were before the campaign."""
    before = (guest.out / "weights_before").read_text().split()
    after = (guest.out / "weights_after").read_text().split()
    assert before == [str(CURRENT[0]), str(CURRENT[3])], before
    assert after == before, f"sysfs weights of nodes 0 and 3: {before} before the campaign, {after} after"
    rows = pd.read_csv(campaign / "bandwidth.csv", dtype=str, keep_default_na=False)
    planned = {spec for sw in sweeps(OVERLAY) for spec in sw["memory"]}
    assert sorted(rows["memory"].unique()) == sorted(planned), rows["memory"].unique()
    assert len(rows) == sum(len(sw["memory"]) * sw["repetitions"] for sw in sweeps(OVERLAY)), rows[["job_id"]]
    for row in rows.to_dict("records"):
        spec, fractions = row["memory"], page_fractions(row["page_fractions"])
        if spec.startswith("node:"):
            node = int(spec.split(":")[1])
            assert row["policy"] == "bind" and fractions[node] == 1.0, row
            continue
        weights = spec.partition("@")[2] or f"{CURRENT[0]},{CURRENT[3]}"  # no @: the kernel's weights now
        assert row["policy"] == "weighted" and row["weights"] == weights, row
        w0, w3 = map(int, weights.split(","))
        assert abs(fractions[0] - w0 / (w0 + w3)) <= 0.05 and fractions[0] + fractions[3] == pytest.approx(1.0), (
            f"{spec}: pages {fractions}, weights {weights}")


def test_report_recommends_weights_with_the_lines_that_use_them(findings: list[dict], report: str) -> None:
    (rec,) = [f for f in findings if f["id"] == "recommended_weights"]
    numbers = rec["numbers"]
    assert numbers["cpu_node"] == 0 and sorted(numbers["weights"]) == ["0", "3"], numbers
    assert numbers["numactl"] == "numactl --cpunodebind=0 --weighted-interleave=0,3 PROGRAM", numbers
    assert numbers["current_weights"] == {str(n): w for n, w in CURRENT.items()}, numbers
    assert f"`{numbers['numactl']}`" in rec["summary"], rec["summary"]
    assert all(line in rec["summary"] for line in numbers["sysfs_writes"]), (numbers["sysfs_writes"], rec["summary"])
    assert rec["summary"] in section(report, "Bandwidth"), rec["summary"]


def test_report_compares_the_weightings(findings: list[dict], report: str) -> None:
    weightings = {"1,1", f"{CURRENT[0]},{CURRENT[3]}", "2,1", "3,1", "4,1", "8,3"}
    # the weights sweep's six (the verify sweep compares its two as well)
    (best,) = [f for f in findings if f["id"] == "bandwidth_weights" and len(f["evidence"]) == len(weightings)]
    numbers = best["numbers"]
    assert numbers["weightings"] == len(weightings) and {e["weights"] for e in best["evidence"]} == weightings, best
    assert numbers["cpu_nodes"] == "0" and numbers["mem_nodes"] == "0,3", numbers
    assert best["summary"] in section(report, "Bandwidth"), best["summary"]


def test_report_verifies_the_weights_against_local_only_memory_and_uniform_interleave(
        findings: list[dict], report: str) -> None:
    """The verify sweep: weights 2,1 against node 0 alone and against 1,1, measured in the same
    sweep; each comparison a finding with its interval and what it means (under emulation the
    outcome itself is whatever TCG's memory gives)."""
    verified = {f["numbers"]["baseline"]: f for f in findings if f["id"] == "weights_verified"}
    assert set(verified) == {"local", "uniform"}, [f["title"] for f in verified.values()]
    for baseline, f in verified.items():
        n = f["numbers"]
        assert (n["cpu_node"], n["mem_nodes"], n["weights"]) == ("0", "0,3", "2,1"), n
        assert n["baseline_weights"] == ("" if baseline == "local" else "1,1"), n
        assert n["ratio_low"] is not None and n["ratio_low"] <= n["ratio"] <= n["ratio_high"], n
        closing = f["summary"].rsplit("So ", 1)[-1]
        said = {"helped": "helped", "cost bandwidth": "cost bandwidth", "no gain": "gained nothing",
                "undecided": "undecided", "unknown": "unknown"}[n["outcome"]]
        assert "95% interval" in f["summary"] and said in closing, f["summary"]
        assert f["summary"] in section(report, "Bandwidth"), f["summary"]


def test_sigterm_mid_run_leaves_the_weights_as_found(guest: GuestRun) -> None:
    """The kernel set 2,1 while it ran; SIGTERM ended it and 5,2 (and the mode) were back."""
    step = guest.step("sigterm")
    step.check()
    before = (guest.out / "sigterm_before").read_text().split()
    during = (guest.out / "sigterm_during").read_text().split()
    after = (guest.out / "sigterm_after").read_text().split()
    assert before[:2] == [str(CURRENT[0]), str(CURRENT[3])], before
    assert during[:2] == ["2", "1"], f"the kernel never set its weights before the SIGTERM: {during}\n{step.log}"
    assert after == before, f"weights and mode {before} before, {after} after a SIGTERM mid-run\n{step.log}"


def test_report_checks_each_weighting_s_pages_against_its_weights(findings: list[dict], report: str) -> None:
    """Each weighting the run set has its pages where its weights say: weights 2,1 give 2:1 pages
    within 5%, by the kernel's count of every page's node (move_pages)."""
    checked = {f["numbers"]["memory"]: f for f in findings if f["id"] == "weighted_pages"}
    set_by_run = {spec for sw in sweeps(OVERLAY) for spec in sw["memory"] if "@" in spec}
    assert set(checked) == set_by_run, sorted(checked)
    for spec, f in checked.items():
        assert f["numbers"]["within"] and f["numbers"]["worst_off"] <= 0.05, (spec, f["summary"])
        assert f["summary"] in section(report, "Bandwidth"), f["summary"]
    assert checked["weighted:0,3@2,1"]["numbers"]["weights"] == [2, 1]


def test_report_sets_the_matrix_beside_the_guests_hmat(campaign: Path, report: str) -> None:
    """Two repetitions a cell: the matrix sweep's node 3 against HMAT's 5 GB/s of 20 with an
    interval, and a verdict from it."""
    (stated,) = firmware_beside_measured(report, campaign, ("bandwidth_mb_s",))
    assert (stated["cpu"], stated["mem"]) == ("0", "3") and not stated["interval"].startswith("no interval"), stated
