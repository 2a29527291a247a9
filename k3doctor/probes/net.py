"""Network probes: interfaces and HCAs (``net``) and the route/port to the rendezvous (``rendezvous``).

``net`` fact (DEVELOPERS.md contract)::

    {interfaces: [{name, kind ("physical"|"virtual"|"loopback"), operstate, carrier, mtu,
                   speed_mbps, type, ipv4: [str], ipv6: [str]}],
     infiniband: [{hca, ports: [{port, state, phys_state, link_layer, rate, netdevs: [str]}]}],
     errors: [str],
     hostname: {name, addresses: [ip], loopback: bool, error}}     # addition: the Gloo 127.x trap

``rendezvous`` fact::

    {addr, host, port, resolved: [ip], loopback: bool, source_ip, interface, reachable, bindable,
     error,
     role ("head"|"worker"), node_rank, side ("head"|"network"|"this node"|None),
     error_kind ("bad_address"|"unresolved"|"no_route"|"port_in_use"|"addr_not_local"|
                 "privileged_port"|"bind_failed"|"refused"|"timeout"|None)}   # additions

Options read: ``dist_init_addr`` (``HOST:PORT``; else the ``launch`` fact's ``dist_init_addr``),
``node_rank`` (else the launch's), ``connect_timeout`` (seconds, default 3).
No traffic is sent to find the route: a connected UDP socket only asks the kernel's routing
table. The only packets ever sent are the TCP connect of a worker to the head's port.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Any, Callable, Mapping, Sequence

from ..hostenv.netinfo import ARPHRD_LOOPBACK, interface_kind, is_loopback_ip, parse_hostport, parse_route_table, route_lookup

__all__ = ["known_fact", "route_table_interface", "default_route_interface", "probe_net", "probe_rendezvous", "scan_interfaces", "scan_infiniband", "resolve_host", "local_addresses"]

_DNS_TIMEOUT = 3.0


def _bounded(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    from ..facts import call_with_timeout

    return call_with_timeout(fn, timeout, what)


def known_fact(ctx: Any, name: str) -> Any:
    """A fact already gathered (never probes: the runner holds the facts lock while a probe runs,
    so ``ctx.facts.get`` from inside a probe thread would wait on it)."""
    facts = getattr(ctx, "facts", None)
    if facts is None:
        return None
    try:
        return facts.known().get(name)
    except Exception:  # noqa: BLE001 - a facts object without known(): treat as unknown
        return None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.split()[0], 0) if text.startswith("0x") else int(text.split()[0])
    except (ValueError, IndexError):
        return None


def _psutil_addrs() -> tuple[dict[str, dict[str, list[str]]], dict[str, Any], list[str]]:
    try:
        import psutil  # lazy

        raw = psutil.net_if_addrs()
        stats = psutil.net_if_stats()
    except Exception as exc:  # noqa: BLE001 - psutil missing or broken → reported, not fatal
        return {}, {}, [f"psutil could not list addresses: {type(exc).__name__}: {exc}"]
    out: dict[str, dict[str, list[str]]] = {}
    for name, addrs in raw.items():
        entry = out.setdefault(name, {"ipv4": [], "ipv6": []})
        for a in addrs:
            if a.family == socket.AF_INET:
                entry["ipv4"].append(a.address)
            elif a.family == socket.AF_INET6:
                entry["ipv6"].append(a.address.split("%", 1)[0])
    return out, stats, []


def scan_interfaces(
    sys_root: str = "/sys",
    addrs: Mapping[str, Mapping[str, list[str]]] | None = None,
    stats: Mapping[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Interfaces from ``<sys_root>/class/net`` (plus names only psutil knows), never raising."""
    errors: list[str] = []
    if addrs is None:
        addrs, stats, errs = _psutil_addrs()
        errors += errs
    stats = stats or {}
    base = os.path.join(sys_root, "class", "net")
    try:
        names = sorted(n for n in os.listdir(base) if not n.startswith("."))
    except OSError as exc:
        names = []
        errors.append(f"cannot list {base}: {exc.strerror or exc}")
    interfaces: list[dict[str, Any]] = []
    for name in names:
        entry = os.path.join(base, name)
        mtu_text = _read(os.path.join(entry, "mtu"))
        if mtu_text is None and not os.path.exists(entry):
            errors.append(f"{name}: vanished during the scan (listed in {base}, gone when read)")
            continue
        type_ = _int(_read(os.path.join(entry, "type")))
        try:
            devpath = os.path.realpath(entry)
        except OSError:
            devpath = ""
        has_device = os.path.exists(os.path.join(entry, "device"))
        speed = _int(_read(os.path.join(entry, "speed")))
        operstate = _read(os.path.join(entry, "operstate"))
        if mtu_text is None and operstate is None:
            errors.append(f"{name}: attributes under {entry} are unreadable")
        a = addrs.get(name, {})
        interfaces.append(
            {
                "name": name,
                "kind": interface_kind(name, type_=type_, devpath=devpath, has_device=has_device),
                "operstate": operstate,
                "carrier": _int(_read(os.path.join(entry, "carrier"))),
                "mtu": _int(mtu_text),
                "speed_mbps": speed if speed is not None and speed > 0 else None,
                "type": type_,
                "ipv4": list(a.get("ipv4", [])),
                "ipv6": list(a.get("ipv6", [])),
            }
        )
    seen = {i["name"] for i in interfaces}
    for name in sorted(set(addrs) - seen):
        st = stats.get(name)
        a = addrs[name]
        interfaces.append(
            {
                "name": name,
                "kind": "loopback" if name == "lo" else "virtual",
                "operstate": ("up" if getattr(st, "isup", False) else "down") if st is not None else None,
                "carrier": None,
                "mtu": getattr(st, "mtu", None),
                "speed_mbps": (getattr(st, "speed", 0) or None) if st is not None else None,
                "type": ARPHRD_LOOPBACK if name == "lo" else None,
                "ipv4": list(a.get("ipv4", [])),
                "ipv6": list(a.get("ipv6", [])),
            }
        )
        errors.append(f"{name}: known to psutil but not in {base} (sysfs of another namespace?)")
    return interfaces, errors


def scan_infiniband(sys_root: str = "/sys") -> tuple[list[dict[str, Any]], list[str]]:
    """HCAs under ``<sys_root>/class/infiniband`` with port state, link layer (IB/RoCE) and netdevs."""
    base = os.path.join(sys_root, "class", "infiniband")
    errors: list[str] = []
    if not os.path.isdir(base):
        return [], errors
    try:
        hcas = sorted(n for n in os.listdir(base) if not n.startswith("."))
    except OSError as exc:
        return [], [f"cannot list {base}: {exc.strerror or exc}"]
    out: list[dict[str, Any]] = []
    for hca in hcas:
        try:
            netdevs = sorted(n for n in os.listdir(os.path.join(base, hca, "device", "net")) if not n.startswith("."))
        except OSError:
            netdevs = []
        ports_dir = os.path.join(base, hca, "ports")
        try:
            port_names = sorted(os.listdir(ports_dir), key=lambda p: (len(p), p))
        except OSError as exc:
            errors.append(f"{hca}: cannot list ports ({exc.strerror or exc})")
            port_names = []
        ports = []
        for p in port_names:
            pd = os.path.join(ports_dir, p)
            ports.append(
                {
                    "port": _int(p),
                    "state": _read(os.path.join(pd, "state")),
                    "phys_state": _read(os.path.join(pd, "phys_state")),
                    "link_layer": _read(os.path.join(pd, "link_layer")),
                    "rate": _read(os.path.join(pd, "rate")),
                    "netdevs": netdevs,
                }
            )
        out.append({"hca": hca, "ports": ports})
    return out, errors


def resolve_host(host: str, timeout: float = _DNS_TIMEOUT) -> tuple[list[str], str]:
    """``(addresses, error)``; bounded, because a dead DNS server blocks ``getaddrinfo`` for long."""
    from ..facts import ProbeTimeout

    def lookup() -> list[str]:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        seen: list[str] = []
        for fam, *_rest, sa in infos:
            ip = str(sa[0]).split("%", 1)[0]
            if fam in (socket.AF_INET, socket.AF_INET6) and ip not in seen:
                seen.append(ip)
        return seen

    try:
        return _bounded(lookup, timeout, f"resolve {host}"), ""
    except ProbeTimeout:
        return [], f"resolving {host!r} gave no answer within {timeout:g} s (DNS server unreachable?)"
    except (socket.gaierror, UnicodeError, OSError) as exc:
        return [], f"cannot resolve {host!r}: {getattr(exc, 'strerror', None) or exc}"


def _hostname_fact() -> dict[str, Any]:
    name = socket.gethostname()
    addresses, error = resolve_host(name)
    return {
        "name": name,
        "addresses": addresses,
        "loopback": bool(addresses) and all(is_loopback_ip(a) for a in addresses),
        "error": error or None,
    }


def probe_net(ctx: Any, sys_root: str = "/sys") -> dict[str, Any]:
    """Interfaces (sysfs + psutil), InfiniBand/RoCE HCAs and how this node's hostname resolves."""
    interfaces, errors = scan_interfaces(sys_root)
    ib, ib_errors = scan_infiniband(sys_root)
    return {
        "interfaces": interfaces,
        "infiniband": ib,
        "errors": errors + ib_errors,
        "hostname": _hostname_fact(),
    }


def local_addresses(interfaces: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """ip -> interface name for every address on this node."""
    out: dict[str, str] = {}
    for itf in interfaces:
        for ip in list(itf.get("ipv4") or []) + list(itf.get("ipv6") or []):
            out.setdefault(str(ip), str(itf.get("name")))
    return out


def source_route(ip: str) -> tuple[str | None, str]:
    """``(source_ip, error)`` via a connected UDP socket: the kernel picks the route, nothing is sent."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((ip, 9))
            return str(s.getsockname()[0]).split("%", 1)[0], ""
    except OSError as exc:
        if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return None, f"no route to {ip} from this node ({exc.strerror})"
        return None, f"route lookup for {ip} failed: {exc.strerror or exc}"


def _settings(ctx: Any) -> tuple[str | None, int | None, float]:
    addr = ctx.option("dist_init_addr")
    node_rank = ctx.option("node_rank")
    launch = known_fact(ctx, "launch")
    if isinstance(launch, Mapping):
        addr = addr or launch.get("dist_init_addr")
        if node_rank is None:
            node_rank = launch.get("node_rank")
    try:
        rank = int(node_rank) if node_rank is not None else None
    except (TypeError, ValueError):
        rank = None
    try:
        timeout = float(ctx.option("connect_timeout", 3.0))
    except (TypeError, ValueError):
        timeout = 3.0
    timeout = max(0.1, min(timeout, float(getattr(ctx, "timeout", 20.0)) / 3))
    return (str(addr) if addr else None), rank, timeout


def rendezvous(addr: str, node_rank: int | None, *, timeout: float = 3.0,
               interfaces: Sequence[Mapping[str, Any]] | None = None, proc_root: str = "/proc") -> dict[str, Any]:
    """The ``rendezvous`` fact for ``addr`` (``HOST:PORT``) seen from this node."""
    out: dict[str, Any] = {
        "addr": addr, "host": None, "port": None, "resolved": [], "loopback": False,
        "source_ip": None, "interface": None, "reachable": None, "bindable": None, "error": None,
        "role": None, "node_rank": node_rank, "side": None, "error_kind": None,
    }
    host, port, err = parse_hostport(addr)
    out["host"], out["port"] = host or None, port
    if err:
        out["error"], out["side"], out["error_kind"] = err, "this node", "bad_address"
        return out
    resolved, err = resolve_host(host)
    out["resolved"] = resolved
    if err or not resolved:
        out["error"], out["side"] = err or f"{host!r} resolves to no address", "this node"
        out["error_kind"] = "unresolved"
        return out
    out["loopback"] = all(is_loopback_ip(ip) for ip in resolved)
    if interfaces is None:
        interfaces, _ = scan_interfaces()
    local = local_addresses(interfaces)
    target = next((ip for ip in resolved if ":" not in ip), resolved[0])
    src, err = source_route(target)
    if src is None:
        out["error"], out["side"], out["error_kind"] = err, "network", "no_route"
        return out
    out["source_ip"] = src
    out["interface"] = local.get(src) or ("lo" if is_loopback_ip(src) else None)
    if out["interface"] is None:
        out["interface"] = route_table_interface(target, proc_root)
    is_local = any(ip in local for ip in resolved) or out["loopback"]
    role = "head" if (node_rank == 0 if node_rank is not None else is_local) else "worker"
    out["role"] = role
    if port is None:
        out["error"], out["side"] = f"no port in {addr!r} (expected HOST:PORT)", "this node"
        out["error_kind"] = "bad_address"
        return out
    if role == "head":
        out.update(_try_bind(target, port))
    else:
        out.update(_try_connect(target, port, timeout))
    return out


def _try_bind(ip: str, port: int) -> dict[str, Any]:
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((ip, port))
        return {"bindable": True}
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            kind, why = "port_in_use", f"port {port} is already in use on this node (another server or a previous run still up)"
        elif exc.errno == errno.EADDRNOTAVAIL:
            kind, why = "addr_not_local", f"{ip} is not an address of this node, yet this node is rank 0 (the head)"
        elif exc.errno == errno.EACCES:
            kind, why = "privileged_port", f"binding port {port} needs privileges (ports < 1024)"
        else:
            kind, why = "bind_failed", f"cannot bind {ip}:{port}: {exc.strerror or exc}"
        return {"bindable": False, "error": why, "side": "head", "error_kind": kind}


def _try_connect(ip: str, port: int, timeout: float) -> dict[str, Any]:
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            return {"reachable": True}
    except ConnectionRefusedError:
        return {"reachable": False, "side": "head", "error_kind": "refused",
                "error": f"{ip}:{port} refused the connection: nothing listens there yet (start the head, node rank 0, first)"}
    except socket.timeout:
        return {"reachable": False, "side": "network", "error_kind": "timeout",
                "error": f"no answer from {ip}:{port} within {timeout:g} s (firewall, security group or wrong subnet)"}
    except OSError as exc:
        return {"reachable": False, "side": "network", "error_kind": "no_route", "error": f"cannot connect to {ip}:{port}: {exc.strerror or exc}"}


def probe_rendezvous(ctx: Any) -> dict[str, Any]:
    """Route, address and port of the ``--dist-init-addr`` head as seen from this node."""
    from ..model import Skip

    addr, node_rank, timeout = _settings(ctx)
    if not addr:
        raise Skip("no rendezvous address (pass --dist-init-addr HOST:PORT or a launch command with one)")
    net = known_fact(ctx, "net")
    interfaces = net.get("interfaces") if isinstance(net, Mapping) else None
    return rendezvous(addr, node_rank, timeout=timeout, interfaces=interfaces)


def route_table_interface(ip: str, proc_root: str = "/proc") -> str | None:
    """The interface of the longest-prefix IPv4 route to ``ip`` in ``<proc_root>/net/route``."""
    try:
        with open(os.path.join(proc_root, "net", "route"), encoding="ascii", errors="replace") as fh:
            r = route_lookup(ip, parse_route_table(fh.read()))
    except OSError:
        return None
    return str(r["iface"]) if r else None


def default_route_interface(proc_root: str = "/proc") -> str | None:
    """The interface of the IPv4 default route, from ``<proc_root>/net/route``."""
    try:
        with open(os.path.join(proc_root, "net", "route"), encoding="ascii", errors="replace") as fh:
            routes = parse_route_table(fh.read())
    except OSError:
        return None
    r = route_lookup("0.0.0.1", [x for x in routes if x["mask"] == "0.0.0.0"])
    return str(r["iface"]) if r else None
