"""Coerce host facts (possibly from a hand-edited or truncated snapshot) into the documented shapes.

Checks call these first, so a wrong type becomes "unknown" (None / empty) rather than a crash.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["as_int", "as_str", "str_list", "net", "rendezvous", "paths", "limits"]


def as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    return None


def as_str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def str_list(v: Any) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def net(value: Any) -> dict[str, Any] | None:
    """The ``net`` fact with typed fields, or None when it has no interface list."""
    if not isinstance(value, Mapping) or not isinstance(value.get("interfaces"), list):
        return None
    itfs = []
    for i in value["interfaces"]:
        if not isinstance(i, Mapping) or not isinstance(i.get("name"), str) or not i["name"]:
            continue
        kind = i.get("kind") if i.get("kind") in ("physical", "virtual", "loopback") else "virtual"
        itfs.append({"name": i["name"], "kind": kind, "operstate": as_str(i.get("operstate")),
                     "carrier": as_int(i.get("carrier")), "mtu": as_int(i.get("mtu")),
                     "speed_mbps": as_int(i.get("speed_mbps")), "type": as_int(i.get("type")),
                     "ipv4": str_list(i.get("ipv4")), "ipv6": str_list(i.get("ipv6"))})
    ib = []
    raw_ib = value.get("infiniband")
    for h in raw_ib if isinstance(raw_ib, list) else []:
        if not isinstance(h, Mapping) or not isinstance(h.get("hca"), str):
            continue
        raw_ports = h.get("ports")
        ports = [{"port": as_int(p.get("port")), "state": as_str(p.get("state")),
                  "phys_state": as_str(p.get("phys_state")), "link_layer": as_str(p.get("link_layer")),
                  "rate": as_str(p.get("rate")), "netdevs": str_list(p.get("netdevs"))}
                 for p in (raw_ports if isinstance(raw_ports, list) else []) if isinstance(p, Mapping)]
        ib.append({"hca": h["hca"], "ports": ports})
    host = value.get("hostname")
    hostname = None
    if isinstance(host, Mapping):
        hostname = {"name": as_str(host.get("name")), "addresses": str_list(host.get("addresses")),
                    "loopback": host.get("loopback") is True, "error": as_str(host.get("error"))}
    return {"interfaces": itfs, "infiniband": ib, "errors": str_list(value.get("errors")), "hostname": hostname}


def rendezvous(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        return None
    out: dict[str, Any] = {k: as_str(value.get(k)) for k in
                           ("addr", "host", "source_ip", "interface", "error", "role", "side", "error_kind")}
    out["port"] = as_int(value.get("port"))
    out["node_rank"] = as_int(value.get("node_rank"))
    out["resolved"] = str_list(value.get("resolved"))
    for k in ("loopback", "reachable", "bindable"):
        v = value.get(k)
        out[k] = v if isinstance(v, bool) else None
    return out


_PATH_STR = ("key", "label", "path", "variable", "source", "subdir", "note", "realpath", "checked_path",
             "mount_point", "fstype", "fs_class", "mount_source", "error")


def paths(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, Mapping) or not isinstance(value.get("entries"), list):
        return None
    entries = []
    for e in value["entries"]:
        if not isinstance(e, Mapping) or not isinstance(e.get("key"), str):
            continue
        d: dict[str, Any] = {k: as_str(e.get(k)) for k in _PATH_STR}
        d["fs_class"] = d["fs_class"] or "unknown"
        for k in ("explicit", "jit", "exists", "writable"):
            d[k] = e.get(k) if isinstance(e.get(k), bool) else None
        d["free_bytes"], d["total_bytes"] = as_int(e.get("free_bytes")), as_int(e.get("total_bytes"))
        entries.append(d)
    est = value.get("load_estimate")
    if isinstance(est, Mapping):
        est = {"file": as_str(est.get("file")), "bytes_read": as_int(est.get("bytes_read")),
               "seconds": est.get("seconds") if isinstance(est.get("seconds"), (int, float)) else None,
               "bytes_per_s": as_int(est.get("bytes_per_s")), "shard_count": as_int(est.get("shard_count")),
               "total_bytes": as_int(est.get("total_bytes")),
               "estimated_s": est.get("estimated_s") if isinstance(est.get("estimated_s"), (int, float)) else None,
               "error": as_str(est.get("error"))}
    else:
        est = None
    return {"entries": entries, "load_estimate": est}


def limits(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        return None

    def pair(v: Any) -> dict[str, int | None]:
        v = v if isinstance(v, Mapping) else {}
        return {"soft": as_int(v.get("soft")), "hard": as_int(v.get("hard"))}

    shm = value.get("shm")
    shm_d = None
    if isinstance(shm, Mapping):
        shm_d = {"path": as_str(shm.get("path")), "total_bytes": as_int(shm.get("total_bytes")),
                 "free_bytes": as_int(shm.get("free_bytes")), "fstype": as_str(shm.get("fstype")),
                 "error": as_str(shm.get("error"))}
    return {"shm": shm_d, "memlock": pair(value.get("memlock")), "nofile": pair(value.get("nofile")),
            "mem_total": as_int(value.get("mem_total")), "mem_available": as_int(value.get("mem_available")),
            "cgroup_memory_limit": as_int(value.get("cgroup_memory_limit")),
            "rdma_devices": as_int(value.get("rdma_devices")) or 0}
