"""The ``env`` command's probe: what this node looks like to a rank about to start.

Reads (each bounded: DNS and every path inspection have their own time limit):

* the interfaces of ``sys_root`` (this host's addresses only when ``sys_root`` is the live ``/sys``),
* the route from this node to the head ``HOST:PORT`` (resolve, kernel source-address lookup,
  ``<proc_root>/net/route``) and the default route's interface,
* the mount table, the node-local directories that could hold the per-rank caches, and every JIT
  cache directory the environment points at.

It returns plain data (:class:`NodeReadings`); :func:`k3doctor.hostenv.exports.node_exports` decides
what to export from it without touching the machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["NodeReadings", "HeadRoute", "read_node", "cache_root_candidates", "ROOT_CANDIDATES", "PATH_TIMEOUT_S"]

#: node-local bases tried in order for the per-rank cache directories (after ``$TMPDIR``)
ROOT_CANDIDATES = ("/tmp", "/var/tmp", "/dev/shm")
#: limit for one path inspection (a stale NFS mount must not hang ``env``)
PATH_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class HeadRoute:
    """How this node reaches the head: parse, DNS and route-lookup results (errors as text)."""

    addr: str
    host: str | None = None
    port: int | None = None
    error: str | None = None
    target: str | None = None
    source_ip: str | None = None
    route_interface: str | None = None


@dataclass(frozen=True)
class NodeReadings:
    """Everything ``k3doctor env`` reads from the node."""

    interfaces: tuple[Mapping[str, Any], ...] = ()
    scan_errors: tuple[str, ...] = ()
    head: HeadRoute | None = None
    default_interface: str | None = None
    #: path -> :func:`k3doctor.probes.fs.inspect_path` result, for cache roots and cache dirs
    paths: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def cache_root_candidates(env: Mapping[str, str]) -> list[str]:
    """Node-local bases for the per-rank caches, in the order they are tried: ``$TMPDIR``, then
    :data:`ROOT_CANDIDATES` (absolute paths only)."""
    return [r for r in (env.get("TMPDIR") or "", *ROOT_CANDIDATES) if r.startswith("/")]


def head_address(dist_init_addr: str | None, env: Mapping[str, str]) -> str | None:
    """``--dist-init-addr``, else ``MASTER_ADDR[:MASTER_PORT]`` of the environment."""
    if dist_init_addr:
        return dist_init_addr
    if env.get("MASTER_ADDR"):
        return env["MASTER_ADDR"] + (f":{env['MASTER_PORT']}" if env.get("MASTER_PORT") else "")
    return None


def _head_route(addr: str, local: Mapping[str, str], proc_root: str) -> HeadRoute:
    from ..hostenv.netinfo import parse_hostport
    from .net import resolve_host, route_table_interface, source_route

    host, port, err = parse_hostport(addr)
    if err:
        return HeadRoute(addr, host or None, port, error=err)
    resolved, err = resolve_host(host)
    if err:
        return HeadRoute(addr, host or None, port, error=err)
    if not resolved:
        return HeadRoute(addr, host or None, port)
    target = next((ip for ip in resolved if ":" not in ip), resolved[0])
    src, err = source_route(target)
    if src is None:
        return HeadRoute(addr, host or None, port, error=err, target=target)
    iface = local.get(src) or route_table_interface(target, proc_root)
    return HeadRoute(addr, host or None, port, target=target, source_ip=src, route_interface=iface)


def read_node(*, dist_init_addr: str | None, env: Mapping[str, str], cache_paths: list[str],
              cache_root: str | None, sys_root: str = "/sys", proc_root: str = "/proc") -> NodeReadings:
    """What ``env`` needs to know about this node (read-only; every wait bounded)."""
    from .fs import inspect_path, read_mounts
    from .net import default_route_interface, local_addresses, scan_interfaces

    # A recorded --sys-root tree is another machine: do not mix in this host's addresses.
    live = os.path.realpath(sys_root) == "/sys"
    interfaces, scan_errors = scan_interfaces(sys_root) if live else scan_interfaces(sys_root, addrs={}, stats={})
    addr = head_address(dist_init_addr, env)
    head = _head_route(addr, local_addresses(interfaces), proc_root) if addr else None
    mounts = read_mounts(proc_root)["mounts"]
    roots = [cache_root] if cache_root else cache_root_candidates(env)
    paths = {p: inspect_path(p, mounts, PATH_TIMEOUT_S) for p in dict.fromkeys([*roots, *(c for c in cache_paths if c)])}
    return NodeReadings(interfaces=tuple(interfaces), scan_errors=tuple(scan_errors), head=head,
                        default_interface=default_route_interface(proc_root), paths=paths)
