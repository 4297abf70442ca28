"""The machine's theoretical memory bandwidth: channels x transfers per second x bytes per transfer.

Known from the DIMMs the firmware lists (`dmidecode -t 17`, root on bare metal) or from an arch
file's `memory_peak` (a machine described from its documentation); otherwise unknown, and the
report says so. The peak is what the memory channels move at their configured speed, read and
write together; no kernel reaches it (STREAM-like kernels on current servers typically reach 70-90%
of it), so a measured best is read as a fraction of it, not as a target.

DIMMs are grouped into channels where every populated DIMM's locators name its channel (Bank
Locator `P0 CHANNEL A`, or a Locator ending in a channel letter and a slot digit: `DIMM_A1`,
`CPU1_DIMM_B2`): two DIMMs of one channel share its bandwidth. Where the locators do not say, each DIMM is taken for a
channel of its own, and the source says that assumption.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class MemoryPeak:
    channels: int
    mt_s: int                    # million transfers per second (DDR4-3200: 3200)
    bytes_per_transfer: int = 8  # a 64-bit channel (ECC bits not counted)
    source: str = ""             # where the numbers come from, in words

    @property
    def gb_s(self) -> float:
        """10^9 bytes per second, as STREAM counts."""
        return self.channels * self.mt_s * self.bytes_per_transfer / 1000

    def how(self) -> str:
        return (f"{self.channels} channel{'s' if self.channels != 1 else ''} x {self.mt_s} MT/s x "
                f"{self.bytes_per_transfer} bytes; {self.source}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> "MemoryPeak | None":
        if not d:
            return None
        return cls(int(d["channels"]), int(d["mt_s"]), int(d.get("bytes_per_transfer", 8)), str(d.get("source", "")))


def _devices(text: str) -> list[dict[str, str]]:
    """The "Memory Device" records of `dmidecode -t 17` output, as key: value mappings."""
    records, current = [], None
    for line in text.splitlines():
        if line.strip() == "Memory Device":
            current = {}
            records.append(current)
        elif current is not None and ":" in line and line.startswith("\t") and not line.startswith("\t\t"):
            key, value = line.strip().split(":", 1)
            current[key.strip()] = value.strip()
        elif not line.strip():
            current = None
    return records


def _number(value: str | None) -> int | None:
    m = re.match(r"(\d+)", value or "")
    return int(m.group(1)) if m else None


def _channel(device: dict[str, str]) -> tuple[str, str] | None:
    """(socket part, channel letter) from a DIMM's locators, or None where they name no channel:
    Bank Locator `P0 CHANNEL A`; Locator `DIMM_A1`, `CPU1_DIMM_B2`, `P1-DIMMA1`, `A1`."""
    bank, loc = device.get("Bank Locator", "").upper(), device.get("Locator", "").upper()
    m = re.search(r"^(.*?)CHANNEL\s*([A-Z])\b", bank)
    if m:
        return m[1].strip(" _-"), m[2]
    m = re.search(r"^(.*?)(?:DIMM[ _-]?|(?<![A-Z]))([A-Z])[ _-]?\d$", loc)
    return (m[1].strip(" _-"), m[2]) if m else None


def from_dmidecode(text: str) -> MemoryPeak | None:
    """The peak from `dmidecode -t 17` output: populated DIMMs, their configured speed (the
    slowest, which the channels run at) and data width; None where a DIMM's speed is not given."""
    dimms = [d for d in _devices(text)
             if d.get("Size") and not d["Size"].startswith(("No Module", "Not Installed", "0"))]
    if not dimms:
        return None
    speeds = [_number(d.get("Configured Memory Speed") or d.get("Configured Clock Speed") or d.get("Speed"))
              for d in dimms]
    widths = [_number(d.get("Data Width")) for d in dimms]
    if any(s is None or s == 0 for s in speeds) or any(w is None or w == 0 for w in widths):
        return None
    found = [_channel(d) for d in dimms]
    if all(found):
        channels = len(set(found))
        how = f"dmidecode: {len(dimms)} DIMMs in {channels} channels (by their locators)"
    else:
        channels = len(dimms)
        how = f"dmidecode: {len(dimms)} DIMMs, taken as one per channel (their locators name no channel)"
    return MemoryPeak(channels, min(s for s in speeds if s), min(w for w in widths if w) // 8,
                      f"{how}, {min(s for s in speeds if s)} MT/s configured")


def detect() -> tuple[MemoryPeak | None, str]:
    """(peak, why not) on the running machine: dmidecode needs root and a firmware table (a
    virtual machine often has none, or DIMMs of unknown speed)."""
    if shutil.which("dmidecode") is None:
        return None, "dmidecode is not installed"
    if os.geteuid() != 0:
        return None, "dmidecode needs root"
    try:
        proc = subprocess.run(["dmidecode", "-t", "17"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"dmidecode failed ({exc})"
    peak = from_dmidecode(proc.stdout)
    if peak is None:
        return None, "the firmware lists no DIMM with a configured speed and width (dmidecode -t 17)"
    return peak, ""


def from_arch(data: dict | None, path: str) -> MemoryPeak | None:
    """An arch file's `memory_peak` (schema-checked): channels, mt_s, bytes_per_transfer, source."""
    if not data:
        return None
    return MemoryPeak(int(data["channels"]), int(data["mt_s"]), int(data.get("bytes_per_transfer", 8)),
                      str(data.get("source") or f"arch file {path}"))
