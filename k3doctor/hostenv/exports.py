"""What ``k3doctor env`` exports, decided from the node's readings without touching the machine.

* NIC pins from the interface that routes to the head: ``NCCL_SOCKET_IFNAME==<if>`` (exact form, so
  ``eth1`` cannot also match ``eth10``), ``GLOO_SOCKET_IFNAME=<if>``, ``SGLANG_HOST_IP`` /
  ``VLLM_HOST_IP``; without a usable head, the only candidate interface or the default route's.
* Node-local, per-rank directories for the JIT caches on a shared filesystem (every JIT cache with
  ``all_caches``): ``<root>/k3doctor-<user>/rank<N>/<cache>``.

The readings come from :func:`k3doctor.probes.node_env.read_node`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..probes.node_env import NodeReadings

__all__ = ["node_exports", "cache_dirs_to_read"]


def cache_dirs_to_read(env: Mapping[str, str], engine: str, user: str) -> list[Any]:
    """The JIT cache directories the environment points at (what the probe inspects)."""
    from .caches import resolve_caches

    return [c for c in resolve_caches(env, engine=None if engine == "any" else engine, user=user) if c.jit]


def node_exports(node: NodeReadings, *, env: Mapping[str, str], engine: str, user: str,
                 cache_root: str | None, rank_var: str | None, all_caches: bool) -> dict[str, Any]:
    """The ``env`` result: ``exports``, ``notes``, ``errors``, the pinned interface and its source IP,
    the head, the rank and the cache facts (the ``--format json`` document, less ``shell``)."""
    exports: dict[str, str] = {}
    notes: list[str] = list(node.scan_errors)
    errors: list[str] = []
    iface, src, head = _pin_interface(node, engine, exports, notes, errors)
    caches = _cache_exports(node, env, user, cache_root, rank_var, all_caches, engine, exports, notes)
    return {"interface": iface, "source_ip": src, "head": head, "exports": exports, "notes": notes,
            "errors": errors, **caches}


def _head_doc(node: NodeReadings) -> dict[str, Any] | None:
    h = node.head
    if h is None:
        return None
    doc: dict[str, Any] = {"addr": h.addr, "host": h.host, "port": h.port}
    if h.target:
        doc["ip"] = h.target
    return doc


def _route_to_head(node: NodeReadings, notes: list[str], errors: list[str]) -> tuple[str | None, str | None]:
    """(interface, source IP) of the route from this node to the head."""
    from .netinfo import is_loopback_ip

    h = node.head
    if h is None:
        return None, None
    if h.error:
        errors.append(f"head {h.addr!r}: {h.error}")
        return None, None
    if not h.target or not h.source_ip:
        return None, None
    if is_loopback_ip(h.source_ip):
        notes.append(f"the head {h.host} is this node's loopback ({h.target}); not pinning lo — "
                     "use the head's cluster IP in --dist-init-addr")
        return None, None
    if h.route_interface:
        notes.append(f"{h.route_interface} routes to the head {h.host} ({h.target}) from {h.source_ip}")
    else:
        notes.append(f"the route to {h.target} leaves from {h.source_ip}, which no listed interface carries")
    return h.route_interface, h.source_ip


def _fallback_interface(node: NodeReadings, by_name: Mapping[str, Mapping[str, Any]],
                        notes: list[str], errors: list[str]) -> str | None:
    from .netinfo import candidates

    cands = candidates(node.interfaces)
    if len(cands) == 1:
        iface = str(cands[0]["name"])
        notes.append(f"{iface} is the only candidate interface (no usable head address)")
        return iface
    if node.default_interface in by_name:
        notes.append(f"{node.default_interface} carries the default route (no usable head address; pass "
                     "--dist-init-addr HEAD:PORT to pick the interface that reaches the head)")
        return node.default_interface
    errors.append("cannot tell which interface to pin: give --dist-init-addr HEAD:PORT "
                  f"(candidates: {', '.join(str(c['name']) for c in cands) or 'none'})")
    return None


def _pin_interface(node: NodeReadings, engine: str, exports: dict[str, str], notes: list[str],
                   errors: list[str]) -> tuple[str | None, str | None, dict[str, Any] | None]:
    by_name = {str(i["name"]): i for i in node.interfaces}
    iface, src = _route_to_head(node, notes, errors)
    if iface is None and not errors:
        iface = _fallback_interface(node, by_name, notes, errors)
    if iface:
        if src is None:
            src = next(iter(by_name.get(iface, {}).get("ipv4") or []), None)
        exports["NCCL_SOCKET_IFNAME"] = "=" + iface
        exports["GLOO_SOCKET_IFNAME"] = iface
        if src and engine in ("sglang", "any"):
            exports["SGLANG_HOST_IP"] = src
        if src and engine in ("vllm", "any"):
            exports["VLLM_HOST_IP"] = src
    return iface, src, _head_doc(node)


def _pick_root(node: NodeReadings, requested: str | None, candidates: Sequence[str]) -> tuple[str, list[str]]:
    notes: list[str] = []
    if requested:
        info = node.paths.get(requested) or {}
        if info.get("fs_class") == "network":
            notes.append(f"--cache-root {requested} is on {info.get('fstype')}: ranks of other nodes may share it")
        return requested, notes
    for root in candidates:
        info = node.paths.get(root) or {"fs_class": "unknown", "error": "not inspected"}
        if info["fs_class"] != "network" and info.get("exists") and info.get("writable") and not info.get("error"):
            return root, notes
        why = info.get("error") or (f"on {info.get('fstype')}" if info["fs_class"] == "network" else "missing or not writable")
        notes.append(f"{root} skipped: {why}")
    return "/tmp", notes + ["no node-local writable directory found; using /tmp"]


def _rank(env: Mapping[str, str], rank_var: str | None) -> tuple[str, str, list[str]]:
    from .caches import rank_key

    if not rank_var:
        return rank_key(env)
    value = env.get(rank_var, "")
    if value.strip().isdigit():
        return rank_var, str(int(value)), []
    return rank_var, "0", [f"--rank-var {rank_var}={value!r} is not an integer; using 0"]


def _cache_exports(node: NodeReadings, env: Mapping[str, str], user: str, cache_root: str | None,
                   rank_var: str | None, all_caches: bool, engine: str, exports: dict[str, str],
                   notes: list[str]) -> dict[str, Any]:
    from ..probes.node_env import cache_root_candidates
    from .caches import local_cache_dir

    rvar, rank, problems = _rank(env, rank_var)
    notes += problems
    root, root_notes = _pick_root(node, cache_root, cache_root_candidates(env))
    notes += root_notes
    caches = []
    for cache in cache_dirs_to_read(env, engine, user):
        info = node.paths.get(cache.path) if cache.path else None
        info = info or {"fs_class": "unknown", "error": "no path"}
        shared = info.get("fs_class") == "network" or bool(info.get("error"))
        caches.append({"key": cache.key, "variable": cache.variable, "path": cache.path,
                       "fstype": info.get("fstype"), "shared": shared})
        if shared or all_caches:
            exports[cache.variable] = local_cache_dir(root, user, rank, cache.key)
            if shared:
                notes.append(f"{cache.variable}: {cache.path or '?'} is on {info.get('fstype') or info.get('error')}; "
                             "moved to a node-local per-rank directory")
    return {"rank_var": rvar or None, "rank": rank, "cache_root": root, "caches": caches}
