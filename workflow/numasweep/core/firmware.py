"""What the firmware and the kernel say about memory performance, read from sysfs.

Three views, each optional on a real machine, so each absent file means "not provided", never
an error:

- HMAT (ACPI Heterogeneous Memory Attribute Table), as Linux exports it per memory target
  (Documentation/admin-guide/mm/numaperf.rst):
  `devices/system/node/nodeY/accessK/initiators/` holds `read_latency`, `write_latency`
  (nanoseconds), `read_bandwidth`, `write_bandwidth` (MB/s) and one `nodeX` link per initiator
  node that sees those numbers. Access class 0 counts every initiator (CPUs and devices),
  class 1 CPUs only.
- Memory tiers: `devices/virtual/memory_tiering/memory_tierN/nodelist`; a lower N is a faster
  tier (the kernel derives it from the same HMAT/CDAT numbers).
- Weighted interleave: `kernel/mm/mempolicy/weighted_interleave/nodeN` (the weight, 1..255) and,
  from Linux 6.16, `auto` (true: the kernel sets the weights from HMAT/CDAT bandwidth; some
  builds name it `__auto_type`).

A value the kernel could not have written (a weight outside 1..255, an `auto` that is neither
true nor false, a node list that is not one, a number that is not a number) is not recorded:
`Firmware.ignored` keeps one `Ignored` per such file, said as "firmware file X says Y: ignored"
in the topology command's output and the report. It is the machine's file, so no config edit
fixes it, and the rest of the view is still read.

SLIT distances stay in `Topology.distances`. `read(sys_root)` takes the sysfs root, so a test
reads a tree written under tmp_path in the same layout.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from numasweep.core.errors import NumasweepError
from numasweep.core.units import parse_cpulist

NOT_PROVIDED = "not provided"
WEIGHTS_DIR = "kernel/mm/mempolicy/weighted_interleave"
AUTO_NAMES = ("auto", "__auto_type")
# What the kernel's `auto` file may say (it writes true or false; kstrtobool reads these).
AUTO_WORDS = {"true": True, "1": True, "y": True, "yes": True, "on": True,
              "false": False, "0": False, "n": False, "no": False, "off": False}
WEIGHT_RANGE = range(1, 256)
# (file name, field name) of one HMAT access class.
HMAT_FILES = (("read_latency", "read_latency_ns"), ("write_latency", "write_latency_ns"),
              ("read_bandwidth", "read_bandwidth_mb_s"), ("write_bandwidth", "write_bandwidth_mb_s"))


@dataclass
class Access:
    """HMAT's numbers for memory node `target` as initiator node `initiator` sees them; None:
    that file is absent or zero (the firmware gave no value)."""

    access_class: int
    initiator: int
    target: int
    read_latency_ns: int | None = None
    write_latency_ns: int | None = None
    read_bandwidth_mb_s: int | None = None
    write_bandwidth_mb_s: int | None = None


@dataclass
class Tier:
    id: int
    nodes: list[int]


@dataclass
class Ignored:
    """A firmware file whose value cannot be what the kernel means: left out of the view."""

    file: str
    says: str
    why: str

    def __str__(self) -> str:
        says = self.says if len(self.says) <= 40 else self.says[:40] + "..."
        return f"firmware file {self.file} says {says!r}: ignored ({self.why})"


@dataclass
class Firmware:
    access: list[Access] = field(default_factory=list)
    tiers: list[Tier] = field(default_factory=list)
    # node -> weight; empty: the kernel has no weighted interleave (before 6.9) or was not read.
    weights: dict[int, int] = field(default_factory=dict)
    # True: the kernel sets the weights itself (auto); False: set by hand; None: no such switch.
    weights_auto: bool | None = None
    # Files whose values were not recorded, each with what it said.
    ignored: list[Ignored] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["weights"] = {str(k): v for k, v in self.weights.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict | None) -> "Firmware":
        d = d or {}
        auto = d.get("weights_auto")
        return cls(
            access=[Access(**{k: (None if v is None else int(v)) for k, v in a.items()}) for a in d.get("access", [])],
            tiers=[Tier(int(t["id"]), [int(n) for n in t["nodes"]]) for t in d.get("tiers", [])],
            weights={int(k): int(v) for k, v in (d.get("weights") or {}).items()},
            weights_auto=None if auto is None else bool(auto),
            ignored=[Ignored(str(i["file"]), str(i["says"]), str(i["why"])) for i in d.get("ignored", [])],
        )

    def pairs(self, access_class: int) -> dict[tuple[int, int], Access]:
        """(initiator, target) -> HMAT numbers of one access class."""
        return {(a.initiator, a.target): a for a in self.access if a.access_class == access_class}

    def tier_of(self, node: int) -> int | None:
        return next((t.id for t in self.tiers if node in t.nodes), None)

    def weights_mode(self) -> str:
        if not self.weights:
            return NOT_PROVIDED
        if self.weights_auto is None:
            if any(Path(i.file).name in AUTO_NAMES for i in self.ignored):
                return "unknown (its file is ignored, below)"
            return "manual (this kernel has no automatic mode)"
        if not self.weights_auto:
            return "manual"
        if self.access:
            return "auto (set by the kernel from the firmware's bandwidth, HMAT or CDAT)"
        # the kernel sets what it has figures for; without HMAT's, only a CXL device's CDAT gives any
        return "auto (set by the kernel; with no HMAT bandwidth here, its defaults unless a CXL device's CDAT gave one)"

    def summary(self) -> list[str]:
        """One line per view, saying "not provided" where the machine does not say."""
        classes = sorted({a.access_class for a in self.access})
        hmat = (f"{len(self.pairs(c))} initiator/target pair(s) in access{c}" for c in classes)
        tiers = "; ".join(f"tier {t.id}: nodes {','.join(map(str, t.nodes))}" for t in self.tiers)
        weights = ", ".join(f"node {n}: {w}" for n, w in sorted(self.weights.items()))
        return [
            f"HMAT: {', '.join(hmat) if classes else NOT_PROVIDED}",
            f"memory tiers: {tiers or NOT_PROVIDED}",
            f"weighted-interleave weights: {weights}; mode {self.weights_mode()}" if weights
            else f"weighted-interleave weights: {NOT_PROVIDED}",
        ]

    def notes(self) -> list[str]:
        """One line per file whose value was ignored."""
        return [str(i) for i in self.ignored]


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _number(path: Path, ignored: list[Ignored]) -> int | None:
    """A count the firmware gives; None where it gives none (no file, empty, 0)."""
    text = _text(path)
    if not text:
        return None
    if not text.isdigit():
        ignored.append(Ignored(str(path), text, "not a whole number"))
        return None
    return int(text) or None


def _numbered(folder: Path, prefix: str) -> list[tuple[int, Path]]:
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := re.fullmatch(rf"{prefix}(\d+)", p.name))]
    return sorted(found)


def read_access(sys_root: Path, ignored: list[Ignored]) -> list[Access]:
    out = []
    for target, node_dir in _numbered(sys_root / "devices/system/node", "node"):
        for klass, access_dir in _numbered(node_dir, "access"):
            initiators = access_dir / "initiators"
            values = {name: _number(initiators / f, ignored) for f, name in HMAT_FILES}
            if not any(values.values()):
                continue
            for initiator, _ in _numbered(initiators, "node"):
                out.append(Access(klass, initiator, target, **values))
    return out


def read_tiers(sys_root: Path, ignored: list[Ignored]) -> list[Tier]:
    tiers = []
    for tid, tier_dir in _numbered(sys_root / "devices/virtual/memory_tiering", "memory_tier"):
        path = tier_dir / "nodelist"
        text = _text(path)
        if not text:
            continue
        try:
            tiers.append(Tier(tid, parse_cpulist(text)))
        except NumasweepError:
            ignored.append(Ignored(str(path), text, "not a node list such as 0-1,4"))
    return tiers


def read_weights(sys_root: Path, ignored: list[Ignored]) -> tuple[dict[int, int], bool | None]:
    folder = sys_root / WEIGHTS_DIR
    weights = {}
    for node, path in _numbered(folder, "node"):
        text = _text(path)
        if text is None:
            continue
        if text.isdigit() and int(text) in WEIGHT_RANGE:
            weights[node] = int(text)
        else:
            ignored.append(Ignored(str(path), text, "a weight is a whole number from 1 to 255"))
    for name in AUTO_NAMES:
        text = _text(folder / name)
        if not text:
            continue
        if text.lower() in AUTO_WORDS:
            return weights, AUTO_WORDS[text.lower()]
        ignored.append(Ignored(str(folder / name), text, "the automatic mode is true or false"))
        break
    return weights, None


def read(sys_root: str | Path = "/sys") -> Firmware:
    root = Path(sys_root)
    ignored: list[Ignored] = []
    weights, auto = read_weights(root, ignored)
    return Firmware(read_access(root, ignored), read_tiers(root, ignored), weights, auto, ignored)


def weight_writes(weights: dict[int, int]) -> list[str]:
    """The shell lines that set `weights` by hand (root); writing a node's weight also turns the
    kernel's automatic mode off, where it has one (`echo true | sudo tee .../auto` turns it back)."""
    return [f"echo {w} | sudo tee /sys/{WEIGHTS_DIR}/node{n}" for n, w in sorted(weights.items())]
