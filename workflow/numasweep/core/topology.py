"""The machine a campaign runs on: NUMA nodes, caches, SMT siblings, reserved CPUs and GPUs.

One structure (`Topology`, written as topology.json, see docs/INTERFACES.md) comes from two
places: an arch file (config/arch/*.yaml, checked against workflow/schemas/arch.schema.yaml)
that describes a machine we cannot look at from here, or `detect`, which reads sysfs and
/proc on the machine itself. Both go through the same consistency checks, so a plan made from
either refuses the same mistakes.

`python -m numasweep topology (--arch FILE | --detect [--sysfs ROOT] [--proc ROOT]
[--name NAME] [--reserved LIST]) [-o OUT.json]` (without -o: the JSON on stdout)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from numasweep.core import peak as memory_peak
from numasweep.core import firmware as firmware_view
from numasweep.core.errors import NumasweepError
from numasweep.core.io import atomic_write_text, load_yaml, pattern_problem
from numasweep.core.units import format_cpulist, format_size, parse_cpulist, parse_size

SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "arch.schema.yaml"
CACHE_TYPES = ("Data", "Instruction", "Unified")
PCI_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
# PCI class 0x0300xx (VGA) and 0x0302xx (3D controller) from the GPU vendors we launch on.
GPU_CLASSES = ("0x0300", "0x0302")
GPU_VENDORS = {"0x10de": "NVIDIA", "0x1002": "AMD"}


@dataclass
class Node:
    id: int
    cpus: list[int]
    memory_bytes: int
    memory_only: bool = False


@dataclass
class Cache:
    level: int
    type: str
    size_bytes: int
    instances: list[list[int]]


@dataclass
class Gpu:
    id: int
    name: str
    pci: str | None  # None: not recorded (an arch file written from documentation, not the node)
    node: int | None
    vendor: str = "nvidia"  # nvidia (CUDA build of gpu_xfer) or amd (HIP build)


@dataclass
class Topology:
    system: str
    source: str
    cpu_model: str
    hypervisor: str | None
    threads_per_core: int
    nodes: list[Node]
    distances: list[list[int]]
    caches: list[Cache] = field(default_factory=list)
    l3_groups: list[list[int]] = field(default_factory=list)
    smt_siblings: list[list[int]] = field(default_factory=list)
    reserved_cpus: list[int] = field(default_factory=list)
    gpus: list[Gpu] = field(default_factory=list)
    # The theoretical memory bandwidth (core/peak.py), or None with the reason it is unknown.
    memory_peak: memory_peak.MemoryPeak | None = None
    memory_peak_unknown: str = ""
    # HMAT, memory tiers and weighted-interleave weights as sysfs says (numasweep.core.firmware);
    # empty for an arch file, which describes the hardware only.
    firmware: firmware_view.Firmware = field(default_factory=firmware_view.Firmware)

    # -- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d["firmware"] = self.firmware.to_dict()
        return d

    def to_json(self) -> str:
        """topology.json: one key per line, long CPU lists kept on one line so it stays readable."""
        d = self.to_dict()
        lines = []
        for key, value in d.items():
            if key in ("nodes", "caches", "gpus", "distances", "l3_groups", "smt_siblings") and value:
                inner = ",\n    ".join(json.dumps(v) for v in value)
                text = f"[\n    {inner}\n  ]"
            else:
                text = json.dumps(value)
            lines.append(f"  {json.dumps(key)}: {text}")
        return "{\n" + ",\n".join(lines) + "\n}\n"

    @classmethod
    def from_dict(cls, d: dict, where: str = "topology") -> "Topology":
        try:
            topo = cls(
                system=str(d["system"]),
                source=str(d.get("source", "")),
                cpu_model=str(d.get("cpu_model", "")),
                hypervisor=d.get("hypervisor"),
                threads_per_core=int(d["threads_per_core"]),
                nodes=[Node(int(n["id"]), [int(c) for c in n["cpus"]], int(n["memory_bytes"]),
                            bool(n.get("memory_only", False))) for n in d["nodes"]],
                distances=[[int(x) for x in row] for row in d["distances"]],
                caches=[Cache(int(c["level"]), str(c["type"]), int(c["size_bytes"]),
                              [[int(x) for x in inst] for inst in c["instances"]])
                        for c in d.get("caches", [])],
                l3_groups=[[int(x) for x in g] for g in d.get("l3_groups", [])],
                smt_siblings=[[int(x) for x in s] for s in d.get("smt_siblings", [])],
                reserved_cpus=[int(x) for x in d.get("reserved_cpus", [])],
                gpus=[Gpu(int(g["id"]), str(g["name"]), None if g.get("pci") is None else str(g["pci"]),
                          None if g.get("node") is None else int(g["node"]),
                          str(g.get("vendor", "nvidia"))) for g in d.get("gpus", [])],
                memory_peak=memory_peak.MemoryPeak.from_dict(d.get("memory_peak")),
                memory_peak_unknown=str(d.get("memory_peak_unknown", "")),
                firmware=firmware_view.Firmware.from_dict(d.get("firmware")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise NumasweepError(
                f"{where}: not a topology.json ({type(exc).__name__}: {exc}); "
                "rewrite it with `python -m numasweep topology`"
            ) from None
        validate(topo, where)
        return topo

    @classmethod
    def from_json(cls, text: str, where: str = "topology.json") -> "Topology":
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise NumasweepError(f"{where}: not JSON ({exc}); rewrite it with `python -m numasweep topology`") from None
        if not isinstance(d, dict):
            raise NumasweepError(f"{where}: not a topology.json object")
        return cls.from_dict(d, where)

    def digest(self) -> str:
        """sha256 of the canonical JSON; `source` is left out: it says where the description
        came from, not what the machine is, so an arch file and its detection agree. So are the
        memory peak, which detection reads from the DIMMs and an arch file may not state, and
        `firmware`: an arch file has none, and its weights are a setting that changes between
        jobs (each job's provenance records them)."""
        d = self.to_dict()
        d.pop("source")
        for key in ("memory_peak", "memory_peak_unknown", "firmware"):
            d.pop(key)
        canon = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()

    # -- questions placement asks --------------------------------------------------------
    def node_ids(self) -> list[int]:
        return [n.id for n in self.nodes]

    def node(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise NumasweepError(
            f"NUMA node {node_id} does not exist on {self.system} "
            f"(nodes: {format_cpulist(self.node_ids())}); pick one of those"
        )

    def all_cpus(self) -> list[int]:
        return sorted(c for n in self.nodes for c in n.cpus)

    def node_of(self, cpu: int) -> int:
        for n in self.nodes:
            if cpu in n.cpus:
                return n.id
        raise NumasweepError(
            f"CPU {cpu} does not exist on {self.system} (CPUs: {format_cpulist(self.all_cpus())}); pick one of those"
        )

    def l3_group_of(self, cpu: int) -> int:
        for i, group in enumerate(self.l3_groups):
            if cpu in group:
                return i
        return -1

    def core_of(self, cpu: int) -> list[int]:
        for sibs in self.smt_siblings:
            if cpu in sibs:
                return sibs
        return [cpu]

    def free_cores(self, node: int) -> list[int]:
        """First hardware thread of each core of `node` that has no reserved thread, in CPU order."""
        cpus = set(self.node(node).cpus)
        reserved = set(self.reserved_cpus)
        firsts = []
        for sibs in self.smt_siblings or [[c] for c in sorted(cpus)]:
            if sibs[0] in cpus and not reserved.intersection(sibs):
                firsts.append(sibs[0])
        return sorted(firsts)

    def distance(self, a: int, b: int) -> int | None:
        """The firmware distance from node a to node b (None: a node it does not know)."""
        ids = self.node_ids()
        if not self.distances or a not in ids or b not in ids:
            return None
        return self.distances[ids.index(a)][ids.index(b)]

    def l3_positions(self) -> dict[int, int]:
        """Index of each L3 group among the L3 groups of its node (0 = the one with the lowest CPU)."""
        pos: dict[int, int] = {}
        for node in self.nodes:
            inside = [i for i, g in enumerate(self.l3_groups) if set(g) & set(node.cpus)]
            for p, group in enumerate(inside):
                pos[group] = p
        return pos

    def llc_bytes(self, cpus: list[int]) -> int:
        """The last-level cache the CPUs run under: every instance of the highest level holding
        one of them (0: no cache recorded)."""
        if not self.caches:
            return 0
        level = max(c.level for c in self.caches)
        wanted = set(cpus)
        return sum(c.size_bytes for c in self.caches if c.level == level
                   for inst in c.instances if wanted & set(inst))

    def memory_only_nodes(self) -> list[int]:
        return [n.id for n in self.nodes if n.memory_only]

    def gpu(self, gpu_id: int) -> Gpu:
        for g in self.gpus:
            if g.id == gpu_id:
                return g
        have = ",".join(str(g.id) for g in self.gpus) or "none"
        raise NumasweepError(f"GPU {gpu_id} does not exist on {self.system} (GPUs: {have}); pick one of those")


# -- consistency checks, shared by arch files, topology.json and detection --------------------
def validate(topo: Topology, where: str) -> None:
    """Refuse a description that cannot be a real machine; each message names the key and value."""
    ids = topo.node_ids()
    if not ids:
        raise NumasweepError(f"{where}: nodes: no NUMA node described; list at least one")
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise NumasweepError(f"{where}: nodes: node id {dup} appears twice; give each node its own id")
    owner: dict[int, int] = {}
    for n in topo.nodes:
        if n.memory_only and n.cpus:
            raise NumasweepError(
                f"{where}: nodes[id={n.id}]: memory_only node has CPUs {format_cpulist(n.cpus)}; "
                "drop memory_only or the CPUs"
            )
        if not n.cpus and not n.memory_only:
            raise NumasweepError(f"{where}: nodes[id={n.id}]: no CPUs, so memory_only must be true")
        if len(set(n.cpus)) != len(n.cpus):
            dup = next(c for c in n.cpus if n.cpus.count(c) > 1)
            raise NumasweepError(f"{where}: nodes[id={n.id}].cpus: CPU {dup} listed twice")
        for c in n.cpus:
            if c in owner:
                raise NumasweepError(
                    f"{where}: nodes[id={n.id}].cpus: CPU {c} is also in node {owner[c]}; "
                    "a CPU belongs to exactly one node"
                )
            owner[c] = n.id
        if n.memory_bytes < 0:
            raise NumasweepError(f"{where}: nodes[id={n.id}].memory_bytes must not be negative")
    if not owner:
        raise NumasweepError(f"{where}: nodes: no node has CPUs; at least one node must run ranks")
    if len(topo.distances) != len(ids) or any(len(r) != len(ids) for r in topo.distances):
        raise NumasweepError(
            f"{where}: distances: need a {len(ids)}x{len(ids)} matrix (one row and column per node, "
            f"in the order of nodes), got {len(topo.distances)} row(s)"
        )
    for i, row in enumerate(topo.distances):
        if row[i] != 10:
            raise NumasweepError(f"{where}: distances[{i}][{i}] is {row[i]}: a node's distance to itself is 10")
        for j, d in enumerate(row):
            if j != i and d < 10:
                raise NumasweepError(f"{where}: distances[{i}][{j}] is {d}: distances between nodes are at least 10")
    smt_owner: dict[int, int] = {}
    for k, sibs in enumerate(topo.smt_siblings):
        for c in sibs:
            if c not in owner:
                raise NumasweepError(f"{where}: smt_siblings[{k}]: CPU {c} is in no node; list it under nodes")
            if c in smt_owner:
                raise NumasweepError(f"{where}: smt_siblings[{k}]: CPU {c} is already in core {smt_owner[c]}")
            smt_owner[c] = k
        if len({owner[c] for c in sibs}) > 1:
            raise NumasweepError(f"{where}: smt_siblings[{k}]: threads {format_cpulist(sibs)} of one core span nodes")
    if topo.smt_siblings:
        missing = sorted(set(owner) - set(smt_owner))
        if missing:
            raise NumasweepError(f"{where}: smt_siblings: CPUs {format_cpulist(missing)} belong to no core")
        widest = max(len(s) for s in topo.smt_siblings)
        if topo.threads_per_core != widest:
            raise NumasweepError(
                f"{where}: threads_per_core is {topo.threads_per_core} but the widest core has {widest} threads"
            )
    for k, cache in enumerate(topo.caches):
        seen: set[int] = set()
        if cache.size_bytes <= 0:
            raise NumasweepError(f"{where}: caches[{k}].size must be positive")
        memory = sum(n.memory_bytes for n in topo.nodes)
        if 0 < memory < cache.size_bytes:  # a size in the wrong unit, or the machine's memory mistyped
            raise NumasweepError(f"{where}: caches[{k}] (L{cache.level}) is {format_size(cache.size_bytes)}, more than "
                                 f"all the machine's memory ({format_size(memory)}); give one instance's size (lscpu -C "
                                 "lists them) or correct the nodes' memory")
        for inst in cache.instances:
            for c in inst:
                if c not in owner:
                    raise NumasweepError(f"{where}: caches[{k}] (L{cache.level}): CPU {c} is in no node")
                if c in seen:
                    raise NumasweepError(f"{where}: caches[{k}] (L{cache.level}): CPU {c} is in two instances")
                seen.add(c)
    for k, group in enumerate(topo.l3_groups):
        nodes = sorted({owner[c] for c in group if c in owner})
        if len(nodes) > 1:
            # An L3 shared by whole nodes is real (sub-NUMA clustering); one that takes part of
            # a node and part of another is a typo in the CPU lists.
            partial = [n for n in nodes if not set(topo.node(n).cpus) <= set(group)]
            if partial:
                raise NumasweepError(
                    f"{where}: L3 group {k} ({format_cpulist(group)}) takes part of node {partial[0]} and "
                    f"CPUs of node(s) {','.join(str(n) for n in nodes if n != partial[0])}: an L3 group "
                    "lies within one node or covers whole nodes"
                )
    for c in topo.reserved_cpus:
        if c not in owner:
            raise NumasweepError(f"{where}: reserved_cpus: CPU {c} is in no node")
    gids = [g.id for g in topo.gpus]
    for g in topo.gpus:
        if gids.count(g.id) > 1:
            raise NumasweepError(f"{where}: gpus: GPU id {g.id} appears twice")
        if g.node is not None and g.node not in ids:
            raise NumasweepError(
                f"{where}: gpus[id={g.id}].node: NUMA node {g.node} does not exist "
                f"(nodes: {format_cpulist(ids)}); fix the GPU's node"
            )
        if g.pci is not None and not PCI_RE.match(g.pci):
            raise NumasweepError(f"{where}: gpus[id={g.id}].pci: '{g.pci}' is not a PCI address like 0000:c1:00.0")


def _finish(topo: Topology, where: str) -> Topology:
    """Canonical order (nodes by id, caches by level and type, lists by lowest CPU) + checks."""
    topo.nodes.sort(key=lambda n: n.id)
    for n in topo.nodes:
        n.cpus.sort()
        n.memory_only = not n.cpus
    for c in topo.caches:
        c.instances = sorted((sorted(i) for i in c.instances), key=lambda i: i[0])
    topo.caches.sort(key=lambda c: (c.level, CACHE_TYPES.index(c.type) if c.type in CACHE_TYPES else 9))
    l3 = [c for c in topo.caches if c.level == 3]
    topo.l3_groups = [list(i) for i in l3[0].instances] if l3 else []
    topo.smt_siblings = sorted((sorted(s) for s in topo.smt_siblings), key=lambda s: s[0])
    topo.reserved_cpus = sorted(set(topo.reserved_cpus))
    topo.gpus.sort(key=lambda g: g.id)
    validate(topo, where)
    return topo


# -- arch files ------------------------------------------------------------------------------
def _schema_check(data: object, path: str) -> None:
    import jsonschema

    schema = load_yaml(SCHEMA, "schema")
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        key = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise NumasweepError(f"{path}: {key}: {pattern_problem(err) or err.message.splitlines()[0]}")


def _cpus(value: object, where: str) -> list[int]:
    """A CPU list from YAML (cpulist string, int or list), refusing a CPU written twice."""
    parts = value if isinstance(value, list) else str(value).split(",") if str(value).strip() else []
    out: list[int] = []
    for part in parts:
        for c in parse_cpulist(part if isinstance(part, int) else str(part).strip()):
            if c in out:
                raise NumasweepError(f"{where}: CPU {c} listed twice")
            out.append(c)
    return sorted(out)


def arch_to_topology(data: dict, path: str) -> Topology:
    """An arch YAML mapping (already schema-checked) to a Topology."""
    nodes = []
    for i, n in enumerate(data["nodes"]):
        cpus = _cpus(n.get("cpus", ""), f"{path}: nodes/{i}/cpus")
        if n.get("memory_only") and cpus:
            raise NumasweepError(f"{path}: nodes/{i}: memory_only node has CPUs {format_cpulist(cpus)}; drop one")
        if not n.get("memory_only", True) and not cpus:
            raise NumasweepError(f"{path}: nodes/{i}: memory_only is false but the node has no CPUs")
        try:
            mem = parse_size(str(n["memory"]))
        except NumasweepError as exc:
            raise NumasweepError(f"{path}: nodes/{i}/memory: {exc}") from None
        nodes.append(Node(int(n["id"]), cpus, mem, not cpus))
    all_cpus = sorted(c for n in nodes for c in n.cpus)

    smt = data.get("smt_siblings")
    if smt is None:
        siblings = [[c] for c in all_cpus]
    elif isinstance(smt, dict):
        stride = int(smt["stride"])
        groups: dict[int, list[int]] = {}
        for c in all_cpus:
            groups.setdefault(c % stride, []).append(c)
        siblings = list(groups.values())
    else:
        siblings = [_cpus(s, f"{path}: smt_siblings/{k}") for k, s in enumerate(smt)]
    threads = data.get("threads_per_core", max(len(s) for s in siblings) if siblings else 1)

    caches = []
    for k, c in enumerate(data.get("caches", [])):
        inst = c["instances"]
        if inst == "core":
            instances = [list(s) for s in siblings]
        elif inst == "node":
            instances = [list(n.cpus) for n in nodes if n.cpus]
        elif inst == "all":
            instances = [list(all_cpus)]
        else:
            instances = [_cpus(x, f"{path}: caches/{k}/instances") for x in inst]
        try:
            size = parse_size(str(c["size"]))
        except NumasweepError as exc:
            raise NumasweepError(f"{path}: caches/{k}/size: {exc}") from None
        caches.append(Cache(int(c["level"]), str(c["type"]), size, instances))

    gpus = [Gpu(int(g.get("id", k)), str(g["name"]), None if g.get("pci") is None else str(g["pci"]).lower(),
                g.get("node"),
                str(g.get("vendor", "nvidia")))
            for k, g in enumerate(data.get("gpus", []))]
    n_nodes = len(nodes)
    distances = data.get("distances", [[10]] if n_nodes == 1 else None)
    if distances is None:
        raise NumasweepError(f"{path}: distances: required with {n_nodes} nodes (one row per node, in node order)")
    topo = Topology(
        system=str(data["system"]),
        source=f"arch:{path}",
        cpu_model=str(data.get("cpu_model", "")),
        hypervisor=data.get("hypervisor"),
        threads_per_core=int(threads),
        nodes=nodes,
        distances=[list(r) for r in distances],
        caches=caches,
        smt_siblings=siblings,
        reserved_cpus=_cpus(data.get("reserved_cpus", ""), f"{path}: reserved_cpus"),
        gpus=gpus,
        memory_peak=memory_peak.from_arch(data.get("memory_peak"), path),
        memory_peak_unknown="" if data.get("memory_peak") else f"the arch file {path} gives no memory_peak",
    )
    # Distances are written in the file's node order; keep them aligned when _finish sorts nodes.
    order = sorted(range(n_nodes), key=lambda i: nodes[i].id)
    if order != list(range(n_nodes)) and all(len(r) == n_nodes for r in topo.distances):
        topo.distances = [[topo.distances[i][j] for j in order] for i in order]
    return _finish(topo, path)


def load_arch(path: str | os.PathLike) -> Topology:
    """An arch YAML file, schema-checked (errors name the key path and the file) and validated."""
    p = Path(path)
    if not p.is_file():
        raise NumasweepError(f"{p}: no such arch file; see config/arch/ for examples")
    data = load_yaml(p, "arch file")
    _schema_check(data, str(p))
    return arch_to_topology(data, str(p))


def load(path: str | os.PathLike) -> Topology:
    """An arch YAML file or a topology.json, by content."""
    p = Path(path)
    if p.is_dir():
        raise NumasweepError(f"{p}: is a folder; give an arch YAML file (e.g. config/arch/<system>.yaml) "
                             "or a topology.json")
    if not p.is_file():
        raise NumasweepError(f"{p}: no such file; give an arch YAML (config/arch/) or a topology.json")
    text = p.read_text()
    if p.suffix == ".json" or text.lstrip().startswith("{"):
        return Topology.from_json(text, str(p))
    return load_arch(p)


# -- detection -------------------------------------------------------------------------------
def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _sysfs_size(text: str) -> int:
    m = re.match(r"^(\d+)([KMG]?)$", text.strip())
    if not m:
        raise NumasweepError(f"cache size '{text}' in sysfs is not like 32K")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def _cpuinfo(proc: Path) -> tuple[str, set[str]]:
    text = _read(proc / "cpuinfo") or ""
    model, flags = "", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return model or "unknown", flags


def _hypervisor(sys_root: Path, flags: set[str]) -> str | None:
    """Name the hypervisor when the CPU says it runs under one: timings from an emulated
    machine must say so in the report."""
    if "hypervisor" not in flags:
        return None
    for f in ("class/dmi/id/sys_vendor", "class/dmi/id/product_name", "hypervisor/type"):
        value = _read(sys_root / f)
        if value:
            return value
    clocks = _read(sys_root / "devices/system/clocksource/clocksource0/available_clocksource") or ""
    for word, name in (("kvm-clock", "KVM"), ("hyperv_clocksource", "Hyper-V"), ("xen", "Xen")):
        if word in clocks:
            return name
    return "unidentified hypervisor"


def _gpus_sysfs(sys_root: Path, proc_root: Path) -> list[Gpu]:
    base = sys_root / "bus/pci/devices"
    found = []
    for dev in sorted(base.iterdir()) if base.is_dir() else []:
        cls = _read(dev / "class") or ""
        vendor = _read(dev / "vendor") or ""
        if not cls.startswith(GPU_CLASSES) or vendor not in GPU_VENDORS:
            continue
        name = None
        info = _read(proc_root / "driver/nvidia/gpus" / dev.name / "information")
        for line in (info or "").splitlines():
            if line.lower().startswith("model:"):
                name = line.split(":", 1)[1].strip()
        name = name or _read(dev / "product_name")
        if not name:
            device = (_read(dev / "device") or "0x0000")[2:]
            name = f"{GPU_VENDORS[vendor]} GPU [{vendor[2:]}:{device}]"
        found.append((dev.name.lower(), name, _node_of_pci(sys_root, dev.name)))
    return [Gpu(i, name, pci, node) for i, (pci, name, node) in enumerate(found)]


def _node_of_pci(sys_root: Path, pci: str) -> int | None:
    raw = _read(sys_root / "bus/pci/devices" / pci / "numa_node")
    return int(raw) if raw and raw.lstrip("-").isdigit() and int(raw) >= 0 else None


def _gpus_nvidia_smi(sys_root: Path) -> list[Gpu]:
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name,pci.bus_id", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    gpus = []
    for line in proc.stdout.strip().splitlines():
        idx, name, bus = (x.strip() for x in line.split(","))
        dom, rest = bus.split(":", 1)
        pci = f"{int(dom, 16):04x}:{rest}".lower()
        gpus.append(Gpu(int(idx), name, pci, _node_of_pci(sys_root, pci)))
    return gpus


def detect(sysfs_root: str | os.PathLike = "/sys", proc_root: str | os.PathLike = "/proc",
           name: str | None = None, reserved: list[int] | None = None) -> Topology:
    """The running machine (or a captured tree) from sysfs and /proc/cpuinfo."""
    sys_root, proc = Path(sysfs_root), Path(proc_root)
    node_dir = sys_root / "devices/system/node"
    where = f"sysfs:{sys_root}"
    node_ids = sorted(int(p.name[4:]) for p in node_dir.glob("node*") if p.name[4:].isdigit())
    if not node_ids:
        raise NumasweepError(f"{node_dir}: no nodeN folders; is {sys_root} a sysfs tree (pass --sysfs ROOT)?")
    nodes, distances = [], []
    for nid in node_ids:
        d = node_dir / f"node{nid}"
        cpus = parse_cpulist(_read(d / "cpulist") or "")
        m = re.search(r"MemTotal:\s+(\d+)\s*kB", _read(d / "meminfo") or "")
        nodes.append(Node(nid, cpus, int(m.group(1)) * 1024 if m else 0, not cpus))
        distances.append([int(x) for x in (_read(d / "distance") or "").split()])

    cpu_dir = sys_root / "devices/system/cpu"
    caches: dict[tuple[int, str], tuple[int, set[tuple[int, ...]]]] = {}
    siblings: set[tuple[int, ...]] = set()
    for cpu in sorted(c for n in nodes for c in n.cpus):
        sib = _read(cpu_dir / f"cpu{cpu}/topology/thread_siblings_list")
        siblings.add(tuple(parse_cpulist(sib)) if sib else (cpu,))
        for idx in sorted((cpu_dir / f"cpu{cpu}/cache").glob("index*")):
            level, ctype = _read(idx / "level"), _read(idx / "type")
            size, shared = _read(idx / "size"), _read(idx / "shared_cpu_list")
            if not (level and ctype and size and shared):
                continue
            key = (int(level), ctype)
            entry = caches.setdefault(key, (_sysfs_size(size), set()))
            entry[1].add(tuple(parse_cpulist(shared)))
    online = {c for n in nodes for c in n.cpus}
    cache_list = [Cache(lvl, typ, size, [[c for c in i if c in online] for i in inst])
                  for (lvl, typ), (size, inst) in caches.items()]
    sib_list = [[c for c in s if c in online] for s in siblings]

    model, flags = _cpuinfo(proc)
    live = sys_root.resolve() == Path("/sys") and shutil.which("nvidia-smi")
    gpus = _gpus_nvidia_smi(sys_root) if live else []
    gpus = gpus or _gpus_sysfs(sys_root, proc)
    peak, unknown = (memory_peak.detect() if sys_root.resolve() == Path("/sys")
                     else (None, f"{sys_root} is a captured tree: the firmware's DIMM list (dmidecode) is not in it"))
    topo = Topology(
        system=name or (socket.gethostname().split(".")[0] if sys_root.resolve() == Path("/sys") else sys_root.parent.name),
        source=where,
        cpu_model=model,
        hypervisor=_hypervisor(sys_root, flags),
        threads_per_core=max((len(s) for s in sib_list), default=1),
        nodes=nodes,
        distances=distances,
        caches=cache_list,
        smt_siblings=sib_list,
        reserved_cpus=list(reserved or []),
        gpus=gpus,
        memory_peak=peak,
        memory_peak_unknown=unknown,
        firmware=firmware_view.read(sys_root),
    )
    return _finish(topo, where)


def against_here(arch: Topology, here: Topology, path: str) -> list[str]:
    """An arch file set against the machine this runs on (the node a benchmark job runs on):
    refused in one line where it names a NUMA node or CPU the machine lacks (the launch lines
    planned from it bind there, so none could run); one line each for what else differs."""
    nodes, cpus = {n.id for n in here.nodes}, set(here.all_cpus())
    lost_nodes = sorted({n.id for n in arch.nodes} - nodes)
    lost_cpus = sorted(set(arch.all_cpus()) - cpus)
    machine = (f"{here.system} ({len(here.nodes)} NUMA node(s), CPUs {format_cpulist(sorted(cpus))}, "
               f"{here.cpu_model or 'CPU model unknown'})")
    if lost_nodes or lost_cpus:
        missing = " and ".join(p for p in (f"NUMA node(s) {format_cpulist(lost_nodes)}" if lost_nodes else "",
                                           f"CPU(s) {format_cpulist(lost_cpus)}" if lost_cpus else "") if p)
        raise NumasweepError(
            f"{path} describes {arch.system} ({len(arch.nodes)} NUMA node(s), CPUs "
            f"{format_cpulist(arch.all_cpus())}), but this job runs on {machine}: {missing} are not here, so "
            "the launch lines planned from it cannot run; name this node's arch file (`python -m numasweep "
            "topology --detect -o FILE` run on it writes one) or set arch: auto")
    notes = []
    extra_nodes, extra_cpus = sorted(nodes - {n.id for n in arch.nodes}), sorted(cpus - set(arch.all_cpus()))
    if extra_nodes or extra_cpus:
        notes.append(f"{path} leaves out what this node has: "
                     + ", ".join(p for p in (f"NUMA node(s) {format_cpulist(extra_nodes)}" if extra_nodes else "",
                                             f"CPU(s) {format_cpulist(extra_cpus)}" if extra_cpus else "") if p)
                     + f" of {machine}; no job is planned there")
    if arch.cpu_model and here.cpu_model and arch.cpu_model != here.cpu_model:
        notes.append(f"{path} names the CPU {arch.cpu_model!r}, this node has {here.cpu_model!r}: the report's "
                     "caches and peak bandwidth are the arch file's")
    return notes


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m numasweep topology",
                                 description="Write topology.json from an arch file or from this machine.")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--arch", help="arch YAML file (config/arch/*.yaml) or a topology.json")
    src.add_argument("--detect", action="store_true", help="read this machine's sysfs")
    ap.add_argument("--sysfs", default="/sys", help="sysfs root for --detect (a captured tree)")
    ap.add_argument("--proc", default=None, help="proc root for --detect (default: /proc, or ROOT/../proc for a tree)")
    ap.add_argument("--name", help="system name (default: host name)")
    ap.add_argument("--reserved", default="", help="CPUs never given to a rank, e.g. 0,8 (sysfs cannot know them)")
    ap.add_argument("--here", action="store_true",
                    help="with --arch: refuse an arch file that names CPUs or NUMA nodes this machine lacks "
                         "(the workflow's topology job, on the node the benchmarks run on)")
    ap.add_argument("-o", "--output", help="topology.json to write (an arch file too: `arch:` takes a "
                                           "topology.json); without it the JSON goes to stdout, the summary "
                                           "to stderr")
    args = ap.parse_args(argv)
    if args.here and not args.arch:
        raise NumasweepError("topology: --here compares an arch file with this machine: give --arch FILE")
    if args.arch:
        topo = load(args.arch)
        if args.name:
            topo.system = args.name
        if args.here:
            for line in against_here(topo, detect(), args.arch):
                print(f"numasweep: warning: {line}", file=sys.stderr)
    else:
        proc = args.proc or ("/proc" if Path(args.sysfs).resolve() == Path("/sys") else str(Path(args.sysfs).parent / "proc"))
        topo = detect(args.sysfs, proc, args.name, parse_cpulist(args.reserved))
    # Without -o the JSON is the output (`> FILE` gives what -o FILE writes), the summary beside it.
    summary = sys.stdout if args.output else sys.stderr
    if args.output:
        atomic_write_text(args.output, topo.to_json())
    else:
        sys.stdout.write(topo.to_json())
        sys.stdout.flush()
    print(f"{args.output or 'stdout'}: {topo.system}, {len(topo.nodes)} node(s), {len(topo.all_cpus())} CPUs, "
          f"{len(topo.l3_groups)} L3 group(s), {len(topo.gpus)} GPU(s)"
          + (f", under {topo.hypervisor}" if topo.hypervisor else ""), file=summary)
    for line in topo.firmware.summary():
        print(f"  {line}", file=summary)
    for line in topo.firmware.notes():
        print(f"numasweep: warning: {line}", file=sys.stderr)
    return 0
