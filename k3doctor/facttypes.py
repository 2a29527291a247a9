"""Typed, frozen facts: what a probe, a snapshot or a ``--target`` profile says, validated once.

Each fact kind is a frozen dataclass built with ``from_json`` (from a probe's result or a snapshot's
``facts`` entry, ``schema_version`` 1) and written back with ``to_json`` (the same document, so a
snapshot round-trips byte for byte). ``from_json`` never raises on a malformed document: a field of
the wrong type is ``None`` (or empty) and the original stays available for the checks that report
what is wrong with it. The typed fields are what checks read (``gpu.devices[0].memory_total``,
``launch.world_size``); each fact is also a read-only :class:`~collections.abc.Mapping` over its
JSON document, for plugin checks written against the dict form.

The :class:`k3doctor.facts.Facts` store converts every fact named in :data:`FACT_TYPES` when it is
set or probed, so checks receive these types whatever the source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .factbase import Fact, _bool, _int, _map, _maps, _str, _strs
from .launch import LaunchSpec

__all__ = ["Fact", "GpuDevice", "GpuFact", "NetInterface", "NetFact", "MountsFact", "PathsFact",
           "ModelFact", "PackagesFact", "ClusterNode", "ClusterFact", "FACT_TYPES", "typed", "as_json"]


# -- gpu -------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class GpuDevice(Fact):
    """One GPU as NVML (or a target profile) describes it."""

    index: int | None = None
    gpu_name: str = ""
    uuid: str | None = None
    cc: tuple[int, int] | None = None
    memory_total: int | None = None
    memory_free: int | None = None
    memory_reserved: int | None = None
    fp8: bool | None = None
    fp4: bool | None = None
    nvlink_domain: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "GpuDevice":
        cc = doc.get("cc")
        ok_cc = isinstance(cc, (list, tuple)) and len(cc) == 2 and all(_int(x) is not None for x in cc)
        cc_pair = (int(cc[0]), int(cc[1])) if ok_cc and isinstance(cc, (list, tuple)) else None
        return cls(doc=doc, index=_int(doc.get("index")), gpu_name=str(doc.get("name") or ""), uuid=_str(doc.get("uuid")),
                   cc=cc_pair, memory_total=_int(doc.get("memory_total")),
                   memory_free=_int(doc.get("memory_free")), memory_reserved=_int(doc.get("memory_reserved")),
                   fp8=_bool(doc.get("fp8")), fp4=_bool(doc.get("fp4")),
                   nvlink_domain=None if doc.get("nvlink_domain") is None else str(doc.get("nvlink_domain")))


@dataclass(frozen=True, eq=False)
class GpuFact(Fact):
    """The ``gpu`` fact: NVML's answer on a live node or in a snapshot, or a ``--target`` profile."""

    name: ClassVar[str] = "gpu"
    ok: bool = False
    source: str = ""
    error: str | None = None
    driver: str | None = None
    cuda_driver: int | None = None
    target: str | None = None
    devices: tuple[GpuDevice, ...] = ()

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "GpuFact":
        return cls(doc=doc, ok=bool(doc.get("ok", True)), source=str(doc.get("source") or ""), error=_str(doc.get("error")),
                   driver=_str(doc.get("driver")), cuda_driver=_int(doc.get("cuda_driver")), target=_str(doc.get("target")),
                   devices=tuple(GpuDevice.from_json(d) for d in _maps(doc.get("devices"))))

    @property
    def min_memory_total(self) -> int | None:
        """The smallest device's total memory (what a per-rank plan must fit), when reported."""
        totals = [d.memory_total for d in self.devices if d.memory_total]
        return min(totals) if totals else None


# -- network and filesystem ------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class NetInterface(Fact):
    """One entry of /sys/class/net."""

    ifname: str = ""
    kind: str | None = None
    operstate: str | None = None
    mtu: int | None = None
    ipv4: tuple[str, ...] = ()
    ipv6: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "NetInterface":
        return cls(doc=doc, ifname=str(doc.get("name") or ""), kind=_str(doc.get("kind")), operstate=_str(doc.get("operstate")),
                   mtu=_int(doc.get("mtu")), ipv4=_strs(doc.get("ipv4")), ipv6=_strs(doc.get("ipv6")))

    @property
    def up(self) -> bool:
        return self.operstate in ("up", "unknown")


@dataclass(frozen=True, eq=False)
class NetFact(Fact):
    """The ``net`` fact: interfaces, InfiniBand ports, hostname resolution."""

    name: ClassVar[str] = "net"
    interfaces: tuple[NetInterface, ...] = ()
    infiniband: tuple[Mapping[str, Any], ...] = ()
    errors: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "NetFact":
        return cls(doc=doc, interfaces=tuple(NetInterface.from_json(i) for i in _maps(doc.get("interfaces"))),
                   infiniband=_maps(doc.get("infiniband")), errors=_strs(doc.get("errors")))

    def interface(self, name: str) -> NetInterface | None:
        """The interface called ``name`` on this node, or None."""
        return next((i for i in self.interfaces if i.ifname == name), None)


@dataclass(frozen=True, eq=False)
class MountsFact(Fact):
    """The ``mounts`` fact: /proc/self/mountinfo, one entry per mount point."""

    name: ClassVar[str] = "mounts"
    mounts: tuple[Mapping[str, Any], ...] = ()
    errors: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "MountsFact":
        return cls(doc=doc, mounts=_maps(doc.get("mounts")), errors=_strs(doc.get("errors")))


@dataclass(frozen=True, eq=False)
class PathsFact(Fact):
    """The ``paths`` fact: the JIT/compile cache directories the engine will use, and their filesystems."""

    name: ClassVar[str] = "paths"
    engine: str | None = None
    entries: tuple[Mapping[str, Any], ...] = ()
    errors: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PathsFact":
        return cls(doc=doc, engine=_str(doc.get("engine")), entries=_maps(doc.get("entries")), errors=_strs(doc.get("errors")))


# -- model and packages ----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ModelFact(Fact):
    """The ``model`` fact: the checkpoint scan (problems found) and the tensor inventory it carries."""

    name: ClassVar[str] = "model"
    dir: str | None = None
    exists: bool = False
    repo: str | None = None
    found_via: str | None = None
    problems: tuple[Mapping[str, Any], ...] = ()
    inventory: Mapping[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "ModelFact":
        inv = doc.get("inventory")
        return cls(doc=doc, dir=_str(doc.get("dir")), exists=bool(doc.get("exists")), repo=_str(doc.get("repo")),
                   found_via=_str(doc.get("found_via")), problems=_maps(doc.get("problems")),
                   inventory=inv if isinstance(inv, Mapping) else None)


@dataclass(frozen=True, eq=False)
class PackagesFact(Fact):
    """The ``packages`` fact: installed distribution versions (None = not installed), torch's CUDA."""

    name: ClassVar[str] = "packages"
    versions: Mapping[str, str | None] = field(default_factory=dict, repr=False)
    torch_cuda: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PackagesFact":
        return cls(doc=doc, versions={str(k): _str(v) for k, v in doc.items() if k != "torch_cuda"},
                   torch_cuda=_str(doc.get("torch_cuda")))

    def version(self, dist: str) -> str | None:
        """The installed version of ``dist``, or None."""
        return self.versions.get(dist)


# -- cluster ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ClusterNode(Fact):
    """One node of the ``cluster`` fact, with that node's own facts (as JSON documents)."""

    node_rank: int = 0
    hostname: str | None = None
    facts: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "ClusterNode":
        return cls(doc=doc, node_rank=_int(doc.get("node_rank")) or 0, hostname=_str(doc.get("hostname")),
                   facts=_map(doc.get("facts")))


@dataclass(frozen=True, eq=False)
class ClusterFact(Fact):
    """The ``cluster`` fact: every node's facts (from snapshots or the live exchange) and the
    cross-node measurements (clock, Gloo bootstrap, NCCL test)."""

    name: ClassVar[str] = "cluster"
    mode: str | None = None
    nnodes: int = 0
    nodes: tuple[ClusterNode, ...] = ()

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "ClusterFact":
        nodes = tuple(sorted((ClusterNode.from_json(n) for n in _maps(doc.get("nodes"))), key=lambda n: n.node_rank))
        return cls(doc=doc, mode=_str(doc.get("mode")), nnodes=_int(doc.get("nnodes")) or 0, nodes=nodes)


#: fact name -> its type (the store converts these when they are set or probed)
FACT_TYPES: dict[str, type[Fact]] = {t.name: t for t in (GpuFact, LaunchSpec, NetFact, MountsFact, PathsFact, ModelFact,
                                                          PackagesFact, ClusterFact)}


def typed(name: str, value: Any) -> Any:
    """``value`` as its typed fact when ``name`` has a type and ``value`` is a JSON object; other
    values (None, a malformed non-object, facts without a type) unchanged."""
    cls = FACT_TYPES.get(name)
    if cls is None or isinstance(value, Fact) or not isinstance(value, Mapping):
        return value
    return cls.from_json(value)


def as_json(value: Any) -> Any:
    """A fact's JSON form (typed facts through ``to_json``; anything else unchanged)."""
    return value.to_json() if isinstance(value, Fact) else value
