"""NET family: network interfaces for NCCL/Gloo and the rendezvous (domain notes §F)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..check import Check, module_checks
from ..facttypes import ClusterFact, NetFact
from ..hostenv import ifname, sanitize
from ..hostenv.netinfo import candidates
from ..hostenv.topology import launch_env_of, nnodes_of
from ..launch import LaunchSpec
from ..model import Finding, Severity

__all__ = ["CHECKS", "NET001", "NET002", "NET003", "NET004", "NET005", "NET006", "NET007"]

_FIX_ENV = 'eval "$(k3doctor env --dist-init-addr HEAD:PORT)"'


def _net(raw: Any) -> NetFact:
    net = sanitize.net(raw)
    if net is None:
        raise Check.skip("the net fact has no interface list")
    return NetFact.of(net)


def _rdv(raw: Any, required: bool = False) -> dict[str, Any] | None:
    rdv = sanitize.rendezvous(raw)
    if rdv is None and required:
        raise Check.skip("no usable rendezvous fact")
    return rdv


def _by_name(net: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(i.get("name")): i for i in net["interfaces"] if isinstance(i, Mapping)}


def _usable(itf: Mapping[str, Any]) -> str:
    """Empty when the interface can carry traffic, else why not."""
    if str(itf.get("operstate") or "") not in ("up", "unknown"):
        return f"is {itf.get('operstate') or 'in an unknown state'}"
    if itf.get("carrier") == 0:
        return "has no carrier (cable/link down)"
    if not (itf.get("ipv4") or [a for a in itf.get("ipv6") or [] if not str(a).lower().startswith("fe80")]):
        return "has no IP address"
    return ""


def _why_not(itf: Mapping[str, Any]) -> str:
    if itf.get("kind") == "loopback":
        return "is loopback"
    if ifname.is_plumbing(str(itf.get("name"))):
        return "is container/VPN plumbing (docker, veth, bridge, CNI) that other nodes cannot reach"
    return _usable(itf)


def _suggest(rendezvous: Any, net: Mapping[str, Any]) -> str:
    """The interface to pin on this node: the one routing to the head, else the only candidate."""
    rdv = _rdv(rendezvous)
    if rdv is not None and rdv.get("interface") and rdv.get("interface") != "lo":
        return str(rdv["interface"])
    cands = candidates(net["interfaces"])
    return str(cands[0]["name"]) if len(cands) == 1 else ""


def _names_fix(var: str, name: str) -> str:
    if not name:
        return f"set {var} per node to an interface that exists here (`ls /sys/class/net`), or run {_FIX_ENV}"
    from ..hostenv.shell import quote

    value = quote(f"={name}" if var == "NCCL_SOCKET_IFNAME" else name)
    return f"on this node: export {var}={value} (names differ per node; or run {_FIX_ENV})"


class NET001(Check):
    """Socket interface pins (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME) match this node

    ## What it checks
    Parses each variable with its library's own rules and matches it against the interfaces in
    `/sys/class/net` on this node:

    - `NCCL_SOCKET_IFNAME`: comma list of **prefixes**; a leading `^` excludes, a leading `=` asks
      for exact names (`^=` both). `eth1` also matches `eth10` (warning).
    - `GLOO_SOCKET_IFNAME`: comma list of **exact** names; `^lo` or `=eth0` are NCCL syntax and
      Gloo fails with "Unable to find address for: ^lo".
    - `TP_SOCKET_IFNAME` (TensorPipe): one exact name.

    Error when a pinned name does not exist here, matches only interfaces that are down or have
    no address, or the value is malformed (stray comma, whitespace, `^` in the middle).

    ## Why it matters
    Nodes often have different NIC names (`eth0` on one, `ens5f0np0` on the other). A value
    hard-coded for one node breaks the Gloo bootstrap on the other, late, after weights loaded.

    ## How to fix
    Set the variables per node from the interface that routes to the head:
    `eval "$(k3doctor env --dist-init-addr HEAD:PORT)"`, or use an NCCL prefix list that covers
    both names (`NCCL_SOCKET_IFNAME=eth,ens`) — Gloo still needs the exact name per node.
    """


    def run(self, net: NetFact, launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None,
            rendezvous: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        net = _net(net)
        env = launch_env_of(launch, env)
        itfs = _by_name(net)
        names = list(itfs)
        best = _suggest(rendezvous, net)
        for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
            if var not in env:
                continue
            raw = env[var]
            if var == "NCCL_SOCKET_IFNAME":
                sel = ifname.parse_nccl(var, raw)
            elif var == "GLOO_SOCKET_IFNAME":
                sel = ifname.parse_gloo(var, raw)
            else:
                sel = ifname.parse_tp(var, raw)
            ev = {"variable": var, "value": raw, "interfaces": ",".join(names)}
            for err in sel.errors:
                yield self.finding(err, subject=var, evidence=ev, fix=_names_fix(var, best))
            for warn in sel.warnings:
                yield self.finding(warn, subject=var, evidence=ev, fix=f"export {var}={raw.strip()!r}",
                                   severity=Severity.WARNING)
            if sel.errors and not sel.items:
                continue
            chosen = ifname.match(sel, names)
            if not sel.exclude:
                for item, hits in ifname.item_matches(sel, names).items():
                    if not hits and not (item[:1] in "^=" and sel.errors):
                        kind = "prefix" if (var == "NCCL_SOCKET_IFNAME" and not sel.exact) else "interface"
                        yield self.finding(
                            f"{var}={raw}: no {kind} {item!r} on this node (interfaces here: {', '.join(names) or 'none'})",
                            subject=var, evidence={**ev, "missing": item}, fix=_names_fix(var, best),
                            group=f"interface pins naming {item!r}, which this node lacks "
                                  f"(interfaces here: {', '.join(names) or 'none'})")
                    elif len(hits) > 1 and var == "NCCL_SOCKET_IFNAME" and not sel.exact:
                        yield self.finding(
                            f"{var}: prefix {item!r} matches {len(hits)} interfaces ({', '.join(hits)}); "
                            f"NCCL may use any of them",
                            subject=var, evidence={**ev, "matches": ",".join(hits)},
                            fix=f"pin the exact name: export {var}={'=' + item if item in hits else '=' + hits[0]}",
                            severity=Severity.WARNING)
            usable = [n for n in chosen if not _usable(itfs[n]) and itfs[n].get("kind") != "loopback"
                      and not ifname.is_plumbing(n)]
            if chosen and not usable:
                why = "; ".join(f"{n} {_why_not(itfs[n])}" for n in chosen)
                yield self.finding(
                    f"{var}={raw} selects only interfaces that cannot carry cross-node traffic: {why}",
                    subject=var, evidence={**ev, "selected": ",".join(chosen)}, fix=_names_fix(var, best))
            elif sel.exclude and not chosen:
                yield self.finding(f"{var}={raw} excludes every interface on this node", subject=var,
                                   evidence=ev, fix=_names_fix(var, best))


class NET002(Check):
    """NCCL_IB_HCA names InfiniBand/RoCE HCAs (and ports) that exist and are ACTIVE here

    ## What it checks
    Parses `NCCL_IB_HCA` (`<hca>[:<port>]`, comma list, leading `^` excludes, leading `=` exact)
    and matches it against `/sys/class/infiniband`: each listed HCA must exist, a listed port must
    exist and be `ACTIVE`. `mlx5_1` is a prefix and also matches `mlx5_10`…`mlx5_19` (warning).

    ## Why it matters
    A name that matches nothing leaves NCCL without the intended RDMA devices: it falls back to
    TCP sockets (a silent 10× slowdown) or fails to initialise; a prefix that matches too much puts
    traffic on the wrong rails.

    ## How to fix
    List the HCAs present on this node (`ls /sys/class/infiniband`, `ibstat`) and use exact names:
    `export NCCL_IB_HCA==mlx5_0,mlx5_1`; or unset it to let NCCL pick.
    """


    def run(self, net: NetFact, launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        net = _net(net)
        raw = launch_env_of(launch, env).get("NCCL_IB_HCA")
        if raw is None:
            raise self.skip("NCCL_IB_HCA is not set")
        hcas = {str(h["hca"]): h for h in net["infiniband"]}
        sel = ifname.parse_nccl("NCCL_IB_HCA", raw, hca=True)
        ev = {"value": raw, "hcas": ",".join(hcas)}
        present = ", ".join(hcas) or "none"
        fix = (f"export NCCL_IB_HCA=={','.join(hcas)}" if hcas else
               "unset NCCL_IB_HCA on this node (it has no RDMA devices) or expose /dev/infiniband to the container")
        for err in sel.errors:
            yield self.finding(err, subject="NCCL_IB_HCA", evidence=ev, fix=fix)
        if not hcas:
            yield self.finding(f"NCCL_IB_HCA={raw} but this node has no HCA under /sys/class/infiniband",
                               subject="NCCL_IB_HCA", evidence=ev, fix=fix)
            return
        if sel.exclude:
            return
        for item, port in zip(sel.items, sel.ports):
            hits = [h for h in hcas if (h == item if sel.exact else h.startswith(item))]
            if not hits:
                yield self.finding(f"NCCL_IB_HCA: no HCA {item!r} on this node (present: {present})",
                                   subject=item, evidence={**ev, "missing": item}, fix=fix)
                continue
            if len(hits) > 1 and not sel.exact:
                yield self.finding(f"NCCL_IB_HCA: prefix {item!r} matches {', '.join(hits)}",
                                   subject=item, evidence={**ev, "matches": ",".join(hits)},
                                   fix=f"use the exact form: export NCCL_IB_HCA=={raw.lstrip('^=')}",
                                   severity=Severity.WARNING)
            for h in hits:
                ports = [p for p in hcas[h].get("ports") or [] if isinstance(p, Mapping)]
                if port is not None:
                    ports = [p for p in ports if p.get("port") == port]
                    if not ports:
                        yield self.finding(f"NCCL_IB_HCA: {h} has no port {port}", subject=f"{h}:{port}",
                                           evidence=ev, fix=fix)
                        continue
                bad = [p for p in ports if "ACTIVE" not in str(p.get("state") or "").upper()]
                if ports and len(bad) == len(ports):
                    yield self.finding(
                        f"NCCL_IB_HCA: {h} port(s) {', '.join(str(p.get('port')) for p in bad)} not ACTIVE "
                        f"(state {bad[0].get('state')!r}, phys {bad[0].get('phys_state')!r})",
                        subject=h, evidence={**ev, "state": str(bad[0].get("state"))},
                        fix=f"bring the link up (ibstat {h}; check cable/switch) or drop {h} from NCCL_IB_HCA")


class NET003(Check):
    """Interface pins are set when this node has two or more candidate interfaces

    ## What it checks
    Counts the interfaces that could carry cross-node traffic (up, not loopback, not
    docker/veth/bridge/CNI/VPN plumbing, with an address). When `NCCL_SOCKET_IFNAME` or
    `GLOO_SOCKET_IFNAME` is unset and there are two or more, the libraries pick by their own rules
    (NCCL: `ib*` first, then anything but docker/lo/virbr; Gloo: whatever the hostname resolves to).
    Error when a multi-node launch has no candidate at all.

    ## Why it matters
    The automatic pick may be a management or storage network the other nodes cannot reach: NCCL
    bootstrap then hangs, Gloo fails with `connectFullMesh`.

    ## How to fix
    Pin both per node from the interface that routes to the head:
    `eval "$(k3doctor env --dist-init-addr HEAD:PORT)"`.
    """

    severity = Severity.WARNING

    def run(self, net: NetFact, launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None, rendezvous: Mapping[str, Any] | None = None,
            cluster: ClusterFact | None = None,
            options: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        net = _net(net)
        n = nnodes_of(launch, options, cluster)
        if n == 1:
            raise self.skip("single-node launch: no cross-node socket traffic")
        env = launch_env_of(launch, env)
        cands = [str(c["name"]) for c in candidates(net["interfaces"])]
        best = _suggest(rendezvous, net)
        if not cands and (n or 0) > 1:
            yield self.finding("no interface on this node can carry cross-node traffic (none up with an address)",
                               evidence={"interfaces": ",".join(_by_name(net))}, severity=Severity.ERROR,
                               fix="bring up the cluster network interface (ip link / ip addr) before launching")
            return
        if len(cands) < 2:
            return
        for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
            if var in env:
                continue
            route = f"; {best} routes to the head" if best else ""
            yield self.finding(
                f"{var} is unset and this node has {len(cands)} candidate interfaces ({', '.join(cands)}){route}",
                subject=var, evidence={"candidates": ",".join(cands), "route_interface": best or None},
                fix=_names_fix(var, best))


class NET004(Check):
    """This node's hostname does not resolve to a loopback address (the Gloo 127.x trap)

    ## What it checks
    Resolves the hostname (`socket.gethostname()`) as Gloo does when `GLOO_SOCKET_IFNAME` is unset.
    Debian/Ubuntu's `/etc/hosts` maps it to `127.0.1.1`; containers often map it to `127.0.0.1`.

    ## Why it matters
    Gloo binds the address the hostname resolves to. A loopback address binds fine, so nothing
    fails locally; the other nodes then cannot connect and the launch hangs or dies with
    `connectFullMesh failed` / "Unable to resolve hostname … Using the loopback address".

    ## How to fix
    Pin Gloo to the real interface (`export GLOO_SOCKET_IFNAME=<iface>`, or
    `eval "$(k3doctor env --dist-init-addr HEAD:PORT)"`), or map the hostname to the node's
    cluster IP in `/etc/hosts`.
    """


    def run(self, net: NetFact, launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None, rendezvous: Mapping[str, Any] | None = None,
            cluster: ClusterFact | None = None,
            options: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        host = _net(net).get("hostname")
        if not isinstance(host, Mapping):
            raise self.skip("the net fact has no hostname resolution")
        env = launch_env_of(launch, env)
        n = nnodes_of(launch, options, cluster)
        best = _suggest(rendezvous, _net(net))
        ev = {"hostname": str(host.get("name")), "addresses": ",".join(host.get("addresses") or [])}
        if "GLOO_SOCKET_IFNAME" in env:
            return  # Gloo does not use the hostname; NET001 validates the pin
        sev = Severity.ERROR if (n or 0) > 1 else Severity.WARNING
        if n == 1:
            sev = Severity.INFO
        if host.get("error"):
            yield self.finding(f"hostname {host.get('name')!r} does not resolve ({host['error']}); "
                               "Gloo falls back to the loopback address", evidence=ev,
                               fix=_names_fix("GLOO_SOCKET_IFNAME", best), severity=sev)
        elif host.get("loopback"):
            yield self.finding(
                f"hostname {host.get('name')!r} resolves to loopback ({ev['addresses']}); with GLOO_SOCKET_IFNAME "
                "unset, Gloo binds it and the other nodes cannot connect",
                evidence=ev, fix=_names_fix("GLOO_SOCKET_IFNAME", best), severity=sev)


class NET005(Check):
    """The rendezvous (--dist-init-addr) resolves, routes, and its port is bindable (head) or reachable (workers)

    ## What it checks
    Resolves the `--dist-init-addr` host, finds the interface and source address that route to it
    (a connected UDP socket: the kernel's routing decision, no packet sent). On node rank 0 the port
    must be bindable on that address; on the other nodes it must accept a TCP connection within the
    timeout. The finding says which side fails: *this node* (cannot resolve/parse), the *head*
    (port in use, address not on the head, nothing listening) or the *network* (timeout, no route).
    A rendezvous host that resolves to 127.x in a multi-node launch is an error.

    ## Why it matters
    SGLang's `--dist-init-addr` is the TCPStore every rank joins first; a wrong host, a busy port or
    a firewall shows up as a hang at start with no clear message.

    ## How to fix
    Use the head's cluster IP (not a hostname that maps to loopback), a free port on the head, and
    open it between nodes. Workers report "refused" until the head is up: run them after it.
    """


    def run(self, rendezvous: Mapping[str, Any], launch: LaunchSpec | None = None,
            cluster: ClusterFact | None = None,
            options: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        rdv = _rdv(rendezvous, required=True)
        assert rdv is not None
        ev = {k: (",".join(v) if isinstance(v, list) else v) for k, v in rdv.items()
              if k in ("addr", "host", "port", "resolved", "source_ip", "interface", "role", "side", "error_kind",
                       "reachable", "bindable", "loopback", "node_rank")}
        n = nnodes_of(launch, options, cluster)
        if rdv.get("loopback") and (n or 0) > 1:
            yield self.finding(
                f"--dist-init-addr {rdv.get('addr')} resolves to loopback ({ev.get('resolved')}) in a "
                f"{n}-node launch: the other nodes cannot reach it", subject=str(rdv.get("addr")), evidence=ev,
                fix="use the head node's cluster IP: --dist-init-addr <head-ip>:<port>")
        err = rdv.get("error")
        if not err:
            return
        side = rdv.get("side") or "this node"
        sev = Severity.WARNING if (rdv.get("reachable") is False and side == "head") else Severity.ERROR
        port = rdv.get("port")
        fixes = {
            "port_in_use": f"on the head: stop what listens on port {port} (ss -ltnp 'sport = :{port}') or pick "
                           "another port in --dist-init-addr on every node",
            "addr_not_local": "this node is not the host in --dist-init-addr: give the head's own cluster IP, or "
                              "pass this node's real --node-rank",
            "privileged_port": "use a port above 1024 in --dist-init-addr",
            "refused": "start the head (node rank 0) first, then re-run this check on the workers; if the head "
                       "is up, its TCPStore is not on this address/port",
            "timeout": f"open TCP port {port} from this node to the head (firewall / security group) and check "
                       f"the route: ip route get {rdv.get('host')}",
            "no_route": f"this node has no route to {rdv.get('host')}: add the cluster network/route or use the "
                        "head's address on a shared subnet",
            "unresolved": "use the head's IP address in --dist-init-addr, or fix DNS / /etc/hosts on this node",
            "bad_address": "write --dist-init-addr as HOST:PORT (IPv6 as [ADDR]:PORT)",
        }
        fix = fixes.get(str(rdv.get("error_kind")), fixes["bad_address"] if side == "this node" else fixes["timeout"])
        yield self.finding(f"rendezvous {rdv.get('addr')}: {err} (failing side: {side})",
                           subject=str(rdv.get("addr")), evidence=ev, fix=fix,
                           severity=sev)


class NET006(Check):
    """MTU is the same on every interface of the cross-node path

    ## What it checks
    Compares the MTU of the interface that routes to the head with the MTUs of the interfaces
    pinned by `NCCL_SOCKET_IFNAME` / `GLOO_SOCKET_IFNAME`, and — with several nodes' facts
    (`cluster`) — the MTU of each node's route interface.

    ## Why it matters
    Mismatched MTUs (9000 on one end, 1500 on the other) pass small packets (pings, the first
    handshake) and drop large ones: NCCL/Gloo connect and then hang on the first big transfer.

    ## How to fix
    Set one MTU on the path on every node (`ip link set dev <iface> mtu 9000`, or the NIC/netplan
    config) and on the switches between them.
    """

    severity = Severity.WARNING

    def run(self, net: NetFact, cluster: ClusterFact | None = None, launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None,
            rendezvous: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        net = _net(net)
        itfs = _by_name(net)
        env = launch_env_of(launch, env)
        path: dict[str, int] = {}
        rdv = _rdv(rendezvous)
        route_if = rdv.get("interface") if rdv is not None else None
        if route_if in itfs and itfs[route_if].get("mtu") and route_if != "lo":
            path[str(route_if)] = int(itfs[route_if]["mtu"])
        for var, parse in (("NCCL_SOCKET_IFNAME", ifname.parse_nccl), ("GLOO_SOCKET_IFNAME", ifname.parse_gloo)):
            if var in env:
                for n in ifname.match(parse(var, env[var]), list(itfs)):
                    if itfs[n].get("mtu") and not _usable(itfs[n]) and itfs[n].get("kind") != "loopback":
                        path[n] = int(itfs[n]["mtu"])
        if len(set(path.values())) > 1:
            desc = ", ".join(f"{k}={v}" for k, v in sorted(path.items()))
            yield self.finding(f"interfaces on the cross-node path have different MTUs: {desc}",
                               evidence={k: v for k, v in path.items()},
                               fix=f"set one MTU on all of them, e.g. ip link set dev <iface> mtu {max(path.values())}")
        nodes = cluster.get("nodes") if isinstance(cluster, Mapping) else None
        per_node: dict[str, int] = {}
        for node in nodes or []:
            f = node.get("facts") if isinstance(node, Mapping) else None
            if not isinstance(f, Mapping):
                continue
            nnet, nrdv = sanitize.net(f.get("net")), sanitize.rendezvous(f.get("rendezvous"))
            if nnet is None or nrdv is None or not nrdv.get("interface"):
                continue
            for itf in nnet.get("interfaces") or []:
                if isinstance(itf, Mapping) and itf.get("name") == nrdv["interface"] and itf.get("mtu"):
                    label = f"{node.get('hostname') or node.get('node_rank')}:{itf['name']}"
                    per_node[label] = int(itf["mtu"])
        if len(set(per_node.values())) > 1:
            desc = ", ".join(f"{k} mtu {v}" for k, v in sorted(per_node.items()))
            yield self.finding(f"the route interfaces of the nodes have different MTUs: {desc}",
                               evidence=dict(per_node), severity=Severity.ERROR,
                               fix=f"set the same MTU on every node's cluster interface (e.g. {max(per_node.values())})")


class NET007(Check):
    """Pinned interfaces include the one that routes to the rendezvous head

    ## What it checks
    With a rendezvous address, compares the interface the kernel uses to reach the head with the
    interfaces `GLOO_SOCKET_IFNAME`, `TP_SOCKET_IFNAME` and `NCCL_SOCKET_IFNAME` select here.

    ## Why it matters
    Gloo and NCCL advertise the address of the pinned interface to the other ranks. If that
    interface is on a network the other nodes do not route to (management, storage, a docker
    bridge), the bootstrap hangs. A separate fast fabric (IPoIB `ib0`) for NCCL is fine when every
    node has it — hence a warning, not an error.

    ## How to fix
    Pin the interface that reaches the head (`k3doctor env` prints it), or confirm that the pinned
    one is routable from every node.
    """

    severity = Severity.WARNING

    def run(self, net: NetFact, rendezvous: Mapping[str, Any],
            launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        net = _net(net)
        rdv = _rdv(rendezvous, required=True)
        assert rdv is not None
        route_if = rdv.get("interface")
        if not route_if:
            raise self.skip("the route to the rendezvous host is unknown")
        if route_if == "lo":
            raise self.skip("the rendezvous host is this node's loopback")
        env = launch_env_of(launch, env)
        names = list(_by_name(net))
        for var in ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
            if var not in env:
                continue
            if var == "NCCL_SOCKET_IFNAME":
                sel = ifname.parse_nccl(var, env[var])
            else:
                sel = ifname.parse_gloo(var, env[var])
            chosen = ifname.match(sel, names)
            if sel.errors or not chosen or route_if in chosen:
                continue
            yield self.finding(
                f"{var}={env[var]} selects {', '.join(chosen)} but the head {rdv.get('host')} is reached via "
                f"{route_if} ({rdv.get('source_ip')})", subject=var,
                evidence={"variable": var, "value": env[var], "route_interface": str(route_if),
                          "selected": ",".join(chosen)},
                fix=_names_fix(var, str(route_if)),
                severity=Severity.INFO if var == "NCCL_SOCKET_IFNAME" else None)


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('NET', 'network interfaces for NCCL/Gloo and the rendezvous', 40)
CHECKS = module_checks(globals())
