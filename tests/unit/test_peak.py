"""The theoretical memory bandwidth (core/peak.py) and the finding that reads the best measured
bandwidth against it. The dmidecode texts are written in the layout `dmidecode -t 17` prints
(one "Memory Device" record a DIMM slot, tab-indented fields); the DIMMs in them are made up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from numasweep.benches.bandwidth import findings as bw_findings
from numasweep.benches.bandwidth import report as bw_report
from numasweep.core import peak, topology
from numasweep.core.errors import NumasweepError


def device(locator: str, bank: str = "", size: str = "32 GB", speed: str = "3200 MT/s", width: str = "64 bits") -> str:
    return (f"Handle 0x0010, DMI type 17, 92 bytes\nMemory Device\n\tTotal Width: 72 bits\n\tData Width: {width}\n"
            f"\tSize: {size}\n\tLocator: {locator}\n\tBank Locator: {bank}\n\tType: DDR4\n"
            f"\tSpeed: 3200 MT/s\n\tConfigured Memory Speed: {speed}\n\n")


def test_channels_by_locator_two_dimms_in_one_channel_count_once() -> None:
    text = "# dmidecode 3.4\n" + "".join(device(f"CPU1_DIMM_{c}{slot}") for c in "ABCD" for slot in (1, 2))
    p = peak.from_dmidecode(text)
    assert (p.channels, p.mt_s, p.bytes_per_transfer) == (4, 3200, 8)
    assert p.gb_s == pytest.approx(4 * 3200 * 8 / 1000)
    assert "8 DIMMs in 4 channels" in p.source


def test_bank_locator_channels_and_two_sockets() -> None:
    text = "".join(device("DIMM 0", f"P{s} CHANNEL {c}") for s in (0, 1) for c in "ABCDEFGH")
    assert peak.from_dmidecode(text).channels == 16


def test_empty_slots_are_left_out_and_the_slowest_dimm_sets_the_speed() -> None:
    text = (device("DIMM_A1", speed="2933 MT/s") + device("DIMM_B1") + device("DIMM_C1", size="No Module Installed",
                                                                             speed="Unknown"))
    p = peak.from_dmidecode(text)
    assert (p.channels, p.mt_s) == (2, 2933)


def test_locators_naming_no_channel_count_one_channel_a_dimm_and_say_so() -> None:
    p = peak.from_dmidecode(device("PROC 1 DIMM 1") + device("PROC 1 DIMM 4"))
    assert p.channels == 2 and "taken as one per channel" in p.source


def test_unknown_speed_or_no_dimms_give_none() -> None:
    assert peak.from_dmidecode(device("DIMM 0", speed="Unknown")) is None  # a virtual machine's DIMM
    assert peak.from_dmidecode("# dmidecode 3.4\nScanning /dev/mem for entry point.\n") is None


def test_this_machine_gives_a_peak_or_says_why_not() -> None:
    found, why = peak.detect()
    assert (found is not None and found.gb_s > 0) or why, (found, why)
    topo = topology.detect()
    assert (topo.memory_peak is None) == bool(topo.memory_peak_unknown)


def arch(tmp_path: Path, extra: dict) -> Path:
    data = {"system": "box", "nodes": [{"id": 0, "cpus": "0-3", "memory": "16G"}, {"id": 1, "cpus": "4-7", "memory": "16G"}],
            "distances": [[10, 20], [20, 10]], **extra}
    path = tmp_path / "box.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_arch_file_states_the_peak_and_topology_json_keeps_it(tmp_path: Path) -> None:
    topo = topology.load_arch(arch(tmp_path, {"memory_peak": {"channels": 8, "mt_s": 3200, "source": "data sheet"}}))
    assert topo.memory_peak.gb_s == pytest.approx(204.8) and topo.memory_peak.source == "data sheet"
    again = topology.Topology.from_json(topo.to_json())
    assert again.memory_peak == topo.memory_peak
    plain = topology.load_arch(arch(tmp_path, {}))
    assert plain.memory_peak is None and "gives no memory_peak" in plain.memory_peak_unknown
    # the layout's digest (a point measured on it is not measured again) does not depend on the peak
    assert plain.digest() == topo.digest()


def test_an_arch_file_with_a_wrong_peak_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(NumasweepError, match="memory_peak"):
        topology.load_arch(arch(tmp_path, {"memory_peak": {"channels": 0, "mt_s": 3200}}))


def table(rates_by_threads: dict[int, list[float]], mem: str = "0") -> pd.DataFrame:
    rows = [{"kernel": "triad", "threads": t, "cpu_nodes": "0", "mem_nodes": mem, "policy": "bind", "best_mb_s": r,
             "validation": "pass", "job_id": f"bw-t{t}-r{k}", "repetition": k}
            for t, rates in rates_by_threads.items() for k, r in enumerate(rates)]
    return pd.DataFrame(rows)


def test_the_best_bandwidth_as_a_fraction_of_the_peak_with_its_interval(tmp_path: Path) -> None:
    topo = topology.load_arch(arch(tmp_path, {"memory_peak": {"channels": 4, "mt_s": 3200}}))
    df = table({1: [10000, 10100, 9900], 4: [40000, 41000, 39000]})
    f, = bw_findings.bandwidth_peak(df, topo)
    n = f.numbers
    assert n["claim"] and n["peak_gb_s"] == pytest.approx(102.4)
    best = float(np.median([40.0, 41.0, 39.0]))   # the point's value, as every table gives it
    assert n["best_gb_s"] == pytest.approx(best) and n["fraction"] == pytest.approx(best / 102.4)
    assert n["fraction_low"] < n["fraction"] < n["fraction_high"]
    assert "of the machine's theoretical peak of 102.4 GB/s (4 channels x 3200 MT/s x 8 bytes" in f.summary
    # memory on one of the two nodes: also against its even share
    assert n["share_gb_s"] == pytest.approx(51.2) and "1 of the 2 memory nodes" in f.summary
    rows = bw_report.headline(df, topo)
    assert ["theoretical memory bandwidth, all channels", "102.4 GB/s",
            f"the best measured, {best:.1f} GB/s, is {best / 102.4:.2f}x of it"] in rows


def test_an_unknown_peak_is_said_with_its_reason(tmp_path: Path) -> None:
    topo = topology.load_arch(arch(tmp_path, {}))
    f, = bw_findings.bandwidth_peak(table({1: [10000, 10100]}), topo)
    assert not f.numbers["claim"] and "gives no memory_peak" in f.summary and "Give `memory_peak`" in f.summary
    assert ["theoretical memory bandwidth, all channels", "unknown", topo.memory_peak_unknown] in \
        bw_report.headline(table({1: [10000, 10100]}), topo)
