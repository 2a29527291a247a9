"""Constants and helpers shared by the CLU family's modules (:mod:`.clu`, :mod:`.clu_runtime`)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Mapping, Sequence

from ..check import Check
from ..facttypes import ClusterFact

#: Interface-pinning variables: name -> "exact" (Gloo, TensorPipe) or "prefix" (NCCL's list syntax).
IFNAME_VARS: dict[str, str] = {"GLOO_SOCKET_IFNAME": "exact", "NCCL_SOCKET_IFNAME": "prefix", "TP_SOCKET_IFNAME": "exact"}
#: Environment prefixes compared across nodes (CLU006).
ENV_PREFIXES = ("NCCL_", "GLOO_", "TRITON_", "SGLANG_", "SGL_", "VLLM_", "CUDA_", "TORCHINDUCTOR_", "PYTORCH_", "FLASHINFER_", "DG_")
#: Variables that are per-node by nature (interface/HCA names, advertised addresses): not compared.
PER_NODE_ENV = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "NCCL_IB_HCA", "SGLANG_HOST_IP", "VLLM_HOST_IP", "SGLANG_LOCAL_IP_NIC")
#: Launch flags that differ per node by design (CLU007 ignores them).
PER_NODE_FLAGS = ("--node-rank", "-r", "--headless", "--data-parallel-start-rank", "--data-parallel-rank")
#: Environment families whose differences change the engine's code path or the collectives (error).
_ENV_ERROR_PREFIXES = ("NCCL_", "GLOO_", "SGLANG_", "SGL_", "VLLM_")


# -- helpers --------------------------------------------------------------------------------------
def _cluster(cluster: Any) -> ClusterFact:
    if not isinstance(cluster, Mapping):
        raise Check.skip("the cluster fact is malformed (not an object)")
    return ClusterFact.of(cluster)


def _nodes(cluster: Any, *, need: int = 2) -> list[Mapping[str, Any]]:
    nodes = [n for n in _cluster(cluster).get("nodes") or [] if isinstance(n, Mapping)]
    if len(nodes) < need:
        raise Check.skip(f"facts from {len(nodes)} node(s): nothing to compare across nodes")
    return sorted(nodes, key=lambda n: int(n.get("node_rank", 0)))


def _label(node: Mapping[str, Any]) -> str:
    return f"node {node.get('node_rank')} ({node.get('hostname') or '?'})"


def _fact(node: Mapping[str, Any], name: str) -> Any:
    facts = node.get("facts")
    return facts.get(name) if isinstance(facts, Mapping) else None


def _show(value: Any, none: str = "unknown") -> str:
    if value is None:
        return none
    if isinstance(value, (list, tuple)):
        return ", ".join(_show(v, none) for v in value) or "none"
    return str(value)


def _ev(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else _show(value)


def _is_strict_majority(values: Mapping[int, Any], value: Any) -> bool:
    counts = Counter(repr(v) for v in values.values())
    return counts[repr(value)] * 2 > len(values)


def _majority(values: Mapping[int, Any], nodes: Sequence[Mapping[str, Any]]) -> Any:
    """The most common value; ties go to the lowest node rank's value."""
    counts = Counter(repr(v) for v in values.values())
    best = max(counts.values())
    for node in nodes:
        r = int(node.get("node_rank", 0))
        if r in values and counts[repr(values[r])] == best:
            return values[r]
    return next(iter(values.values()))


def _differences(
    nodes: Sequence[Mapping[str, Any]], getter: Callable[[Mapping[str, Any]], Any]
) -> dict[int, Any] | None:
    """``{rank: value}`` over the nodes where ``getter`` knows the value (raises KeyError for
    unknown) when those values are not all equal; else ``None``."""
    values: dict[int, Any] = {}
    for node in nodes:
        try:
            values[int(node.get("node_rank", 0))] = getter(node)
        except KeyError:
            continue
    if len(values) < 2 or len({repr(v) for v in values.values()}) == 1:
        return None
    return values


def _per_node_text(values: Mapping[int, Any], nodes: Sequence[Mapping[str, Any]], none: str = "unknown") -> str:
    by_rank = {int(n.get("node_rank", 0)): n for n in nodes}
    return "; ".join(f"{_show(v, none)} on {_label(by_rank[r])}" for r, v in sorted(values.items()))


def _evidence(values: Mapping[int, Any], what: str, nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    by_rank = {int(n.get("node_rank", 0)): n for n in nodes}
    ev: dict[str, Any] = {}
    for r, v in sorted(values.items()):
        ev[f"node{r}.hostname"] = str(by_rank[r].get("hostname") or "")
        ev[f"node{r}.{what}"] = _ev(v)
    return ev


def _interfaces(node: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    net = _fact(node, "net")
    if not isinstance(net, Mapping) or not isinstance(net.get("interfaces"), list):
        return None
    return [i for i in net["interfaces"] if isinstance(i, Mapping) and i.get("name")]


def _has_address(iface: Mapping[str, Any]) -> bool:
    return bool(iface.get("ipv4") or iface.get("ipv6"))


def interface_matches(spec: str, kind: str, names: Sequence[str]) -> list[str]:
    """Interfaces among ``names`` that ``spec`` selects: ``kind`` ``"exact"`` is Gloo's comma list of
    exact names; ``"prefix"`` is NCCL's syntax (prefixes, ``^`` excludes, ``=`` exact)."""
    text = spec.strip()
    if kind == "exact":
        wanted = [p.strip() for p in text.split(",") if p.strip()]
        return [n for n in wanted if n in names]
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    parts = [p.strip() for p in text.split(",") if p.strip()]

    def hit(name: str) -> bool:
        return any(name == p if exact else name.startswith(p) for p in parts)

    return [n for n in names if hit(n) != exclude]


def suggest_interface(node: Mapping[str, Any]) -> str | None:
    """The interface this node should name: its route to the rendezvous head, else its first
    physical, up interface with an IPv4 address, else any non-loopback one with an address."""
    ifaces = _interfaces(node) or []
    names = {str(i["name"]) for i in ifaces}
    rdv = _fact(node, "rendezvous")
    if isinstance(rdv, Mapping) and rdv.get("interface") and (not names or rdv["interface"] in names):
        return str(rdv["interface"])
    for want_physical in (True, False):
        for iface in ifaces:
            if iface.get("kind") == "loopback" or str(iface.get("name")) == "lo" or not iface.get("ipv4"):
                continue
            if want_physical and (iface.get("kind") != "physical" or iface.get("operstate") not in ("up", "unknown")):
                continue
            return str(iface["name"])
    return None


def _pinned(node: Mapping[str, Any], var: str) -> tuple[str | None, str]:
    """The value of ``var`` the engine on this node would see, and where it was set."""
    launch = _fact(node, "launch")
    if isinstance(launch, Mapping):
        value = (launch.get("env_assignments") or {}).get(var)
        if value:
            return str(value), "launch command"
    env = _fact(node, "env")
    if isinstance(env, Mapping) and env.get(var):
        return str(env[var]), "environment"
    return None, ""


def _per_node_fix(nodes: Sequence[Mapping[str, Any]], variables: Sequence[str]) -> str:
    parts = []
    for node in nodes:
        name = suggest_interface(node)
        assign = " ".join(f"{v}={name}" for v in variables) if name else "(no usable interface recorded)"
        parts.append(f"{_label(node)}: {assign}")
    return (
        'run `eval "$(k3doctor env)"` on each node right before the launch command (it exports that node\'s '
        "own interface) instead of one hard-coded name; the per-node values are " + "; ".join(parts)
    )


