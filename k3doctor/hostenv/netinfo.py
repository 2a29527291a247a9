"""Pure network helpers: interface kinds, candidates, ``/proc/net/route``, ``HOST:PORT`` parsing."""

from __future__ import annotations

import ipaddress
import socket
import struct
from typing import Any, Iterable, Mapping, Sequence

from .ifname import is_plumbing

__all__ = [
    "ARPHRD_LOOPBACK",
    "ARPHRD_INFINIBAND",
    "interface_kind",
    "candidates",
    "parse_route_table",
    "route_lookup",
    "parse_hostport",
    "is_loopback_ip",
]

ARPHRD_ETHER = 1
ARPHRD_INFINIBAND = 32
ARPHRD_LOOPBACK = 772


def interface_kind(name: str, *, type_: int | None, devpath: str, has_device: bool) -> str:
    """``"loopback"``, ``"virtual"`` or ``"physical"`` from sysfs facts.

    Physical NICs (including virtio and SR-IOV VFs) resolve under ``/devices/pci…`` and have a
    ``device`` link; bridges, veth, docker, bonds and ``lo`` live under ``/devices/virtual/``.
    """
    if type_ == ARPHRD_LOOPBACK or name == "lo":
        return "loopback"
    if "/devices/virtual/" in devpath or not has_device:
        return "virtual"
    if is_plumbing(name):
        return "virtual"
    return "physical"


def candidates(interfaces: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Interfaces NCCL/Gloo could use for cross-node traffic.

    Up (or ``unknown``, as veth/virtio report), not loopback, not container/VPN plumbing by name
    (docker*, veth*, br-*, cni*, …), with at least one non-link-local address. A virtual ``eth0``
    in a pod *is* a candidate: that is the pod's network.
    """
    out = []
    for itf in interfaces:
        name = str(itf.get("name", ""))
        if itf.get("kind") == "loopback" or is_plumbing(name):
            continue
        if str(itf.get("operstate") or "") not in ("up", "unknown"):
            continue
        if itf.get("carrier") == 0:
            continue
        addrs = [a for a in (itf.get("ipv4") or [])] + [
            a for a in (itf.get("ipv6") or []) if not str(a).lower().startswith("fe80")
        ]
        if not addrs:
            continue
        out.append(itf)
    return out


def parse_route_table(text: str) -> list[dict[str, Any]]:
    """Parse ``/proc/net/route`` (hex, little-endian) into ``{iface, dest, mask, gateway, metric, mtu}``."""
    routes: list[dict[str, Any]] = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 11:
            continue
        try:
            dest = socket.inet_ntoa(struct.pack("<I", int(fields[1], 16)))
            gateway = socket.inet_ntoa(struct.pack("<I", int(fields[2], 16)))
            mask = socket.inet_ntoa(struct.pack("<I", int(fields[7], 16)))
            flags = int(fields[3], 16)
            metric = int(fields[6])
            mtu = int(fields[8])
        except (ValueError, struct.error):
            continue
        if not flags & 0x1:  # RTF_UP
            continue
        routes.append({"iface": fields[0], "dest": dest, "mask": mask, "gateway": gateway,
                       "metric": metric, "mtu": mtu})
    return routes


def route_lookup(ip: str, routes: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """Longest-prefix (then lowest-metric) IPv4 route for ``ip``; None when nothing routes it."""
    try:
        addr = ipaddress.IPv4Address(ip)
    except ValueError:
        return None
    best: Mapping[str, Any] | None = None
    best_key = (-1, 0)
    for r in routes:
        try:
            net = ipaddress.IPv4Network(f"{r['dest']}/{r['mask']}", strict=False)
        except ValueError:
            continue
        if addr in net:
            key = (net.prefixlen, -int(r.get("metric") or 0))
            if key > best_key:
                best, best_key = r, key
    return best


def parse_hostport(addr: str, default_port: int | None = None) -> tuple[str, int | None, str]:
    """``(host, port, error)`` from ``HOST:PORT``, ``[V6]:PORT``, ``tcp://HOST:PORT`` or ``HOST``."""
    text = (addr or "").strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.rstrip("/")
    if not text:
        return "", None, f"empty rendezvous address {addr!r}"
    host, port_text = text, ""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return "", None, f"unbalanced '[' in {addr!r}"
        host, rest = text[1:end], text[end + 1:]
        if rest.startswith(":"):
            port_text = rest[1:]
        elif rest:
            return "", None, f"unexpected {rest!r} after ']' in {addr!r}"
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif text.count(":") > 1:
        host = text  # bare IPv6 without a port
    if not host:
        return "", None, f"no host in {addr!r}"
    if any(c.isspace() for c in host) or any(c in host for c in "/@?#"):
        return "", None, f"{host!r} is not a host name or address"
    port = default_port
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return host, None, f"port {port_text!r} in {addr!r} is not a number in 1..65535"
        port = int(port_text)
    return host, port, ""


def is_loopback_ip(ip: str) -> bool:
    """127.0.0.0/8 or ::1 (and IPv4-mapped loopback)."""
    try:
        a = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        a = a.ipv4_mapped
    return a.is_loopback
