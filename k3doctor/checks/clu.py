"""CLU family: cross-node consistency of a multi-node deployment (CLU001–CLU010).

Every check reads only the ``cluster`` fact (built live by :func:`k3doctor.cluster.gather` or
offline by :func:`k3doctor.cluster.from_snapshots`): ``nodes[].facts`` holds each node's own
facts (``host``, ``packages``, ``gpu``, ``env``, ``launch``, ``net``, ``rendezvous``, ``model``),
plus the live measurements ``clock``, ``bootstrap`` and ``nccl``. Checks never touch the machine
and never print. Per-node values go into ``evidence`` as ``node<R>.<what>`` keys.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..check import Check, module_checks
from ..model import Finding, Severity

__all__ = [
    "CHECKS",
    "CLU001",
    "CLU002",
    "CLU003",
    "CLU004",
    "CLU005",
    "CLU006",
    "CLU007",
    "CLU008",
    "CLU009",
    "CLU010",
    "IFNAME_VARS",
    "ENV_PREFIXES",
    "PER_NODE_ENV",
    "PER_NODE_FLAGS",
    "interface_matches",
    "suggest_interface",
]

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
def _cluster(facts: Any) -> Mapping[str, Any]:
    cluster = facts.get("cluster")
    if not isinstance(cluster, Mapping):
        raise Check.skip("the cluster fact is malformed (not an object)")
    return cluster


def _nodes(facts: Any, *, need: int = 2) -> list[Mapping[str, Any]]:
    nodes = [n for n in _cluster(facts).get("nodes") or [] if isinstance(n, Mapping)]
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


# -- CLU001 ---------------------------------------------------------------------------------------
class CLU001(Check):
    """Every node joined the multi-node preflight, each with its own rank

    ## What it checks
    That all `--nnodes` nodes arrived at k3doctor's rendezvous within `--timeout` (a node that
    never arrived is named with its expected rank), that no rank was claimed twice, that the store
    could be reached and belonged to this run (run token), and that each node's launch command
    agrees with the rank and node count it joined with. Offline, that the snapshots cover every
    rank the launch commands expect.

    ## Why it matters
    The engine waits at its own rendezvous for the missing node until its timeout (often 30
    minutes) and then fails with a generic error. Two nodes with the same `--node-rank`, or a
    `--nnodes` that disagrees between nodes, hang the engine's TCPStore the same way.

    ## How to fix
    - Start `k3doctor check --nnodes N --node-rank R --dist-init-addr HOST:PORT` on every node
      within `--timeout` seconds of each other (rank 0 first: it hosts the store on
      HOST:PORT+1, or `--store-port`).
    - Check that the store port is open between the nodes (`nc -zv HOST PORT`).
    - Give every node its own `--node-rank` and the same `--nnodes` and `--token`.
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        cluster = _cluster(facts)
        nnodes = int(cluster.get("nnodes") or 0)
        nodes = [n for n in cluster.get("nodes") or [] if isinstance(n, Mapping)]
        store = cluster.get("store") or {}
        where = f"{store.get('host')}:{store.get('port')}" if store else ""
        missing = [int(r) for r in cluster.get("missing_ranks") or []]
        for rank in missing:
            yield self.finding(
                f"node rank {rank} never joined (expected {nnodes} nodes, {len(nodes)} present)",
                subject=f"node_rank={rank}",
                evidence={"expected_rank": rank, "nnodes": nnodes, "joined": len(nodes), "store": where,
                          "joined_hosts": ", ".join(str(n.get("hostname")) for n in nodes)},
                fix=(
                    f"start `k3doctor check --nnodes {nnodes} --node-rank {rank} --dist-init-addr ...` on the node "
                    f"meant to be rank {rank} within --timeout of the others"
                    + (f", and check that TCP port {store.get('port')} on {store.get('host')} is reachable from it" if store else "")
                    if cluster.get("mode") == "live"
                    else f"add that node's snapshot (`k3doctor snapshot -o rank{rank}.json` there) with another --snapshot"
                ),
            )
        for error in cluster.get("errors") or []:
            if "never joined" in str(error):
                continue  # already one finding per missing rank
            yield self.finding(
                f"multi-node rendezvous: {error}",
                evidence={"store": where, "token": cluster.get("token") or ""},
                fix="start every node with the same --nnodes, --dist-init-addr and --token and its own --node-rank, within --timeout of each other",
            )
        for node in nodes:
            launch = _fact(node, "launch")
            if not isinstance(launch, Mapping):
                continue
            node_rank = node.get("node_rank")
            if "--node-rank" in (launch.get("flags") or {}) and launch.get("node_rank") != node_rank and cluster.get("mode") == "live":
                yield self.finding(
                    f"{_label(node)} joined the preflight as rank {node_rank} but its launch command says --node-rank {launch.get('node_rank')}",
                    subject=f"node_rank={node_rank}",
                    evidence={"joined_rank": node_rank, "launch_node_rank": launch.get("node_rank")},
                    fix=f"use the same rank for k3doctor and the engine on {node.get('hostname')} (k3doctor reads it from the launch command when --node-rank is not given)",
                )
            if nnodes and "--nnodes" in (launch.get("flags") or {}) and launch.get("nnodes") != nnodes:
                yield self.finding(
                    f"{_label(node)}: the launch command says --nnodes {launch.get('nnodes')} but the cluster has {nnodes} nodes",
                    subject=f"node_rank={node_rank}",
                    evidence={"launch_nnodes": launch.get("nnodes"), "cluster_nnodes": nnodes},
                    fix=f"give every node the same --nnodes {nnodes}",
                )


# -- CLU002 ---------------------------------------------------------------------------------------
class CLU002(Check):
    """A pinned NIC name (GLOO/NCCL/TP_SOCKET_IFNAME) exists on every node

    ## What it checks
    For `GLOO_SOCKET_IFNAME`, `NCCL_SOCKET_IFNAME` and `TP_SOCKET_IFNAME` set in the environment
    or in the launch command, whether the value selects an interface with an address on *each*
    node, using each library's syntax: Gloo and TensorPipe take a comma list of **exact** names
    (every process must list the same number); NCCL takes **prefixes**, `^` to exclude and `=`
    for exact names. Each node's interfaces come from its `net` fact.

    ## Why it matters
    Nodes often name their NICs differently (`eth0` on one, `ens5` or `enp65s0f0` on another).
    One hard-coded name then exists on only one node: Gloo dies with "Unable to find address
    for: eth0" on the others, or the node that has the name waits for them until the Gloo
    timeout — the seed deployment's bootstrap failure, found only after model build.

    ## How to fix
    Do not hard-code one name for all nodes. Run `eval "$(k3doctor env)"` on each node right
    before the launch command: it exports that node's own interface (the one that routes to the
    rendezvous head). The finding lists the per-node values. For NCCL alone, a prefix list that
    covers every node (`NCCL_SOCKET_IFNAME=eth,ens`) also works; Gloo needs one exact name per
    node.
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        nodes = _nodes(facts, need=1)
        for var, kind in IFNAME_VARS.items():
            settings = {int(n.get("node_rank", 0)): _pinned(n, var) for n in nodes}
            if not any(v for v, _ in settings.values()):
                continue
            bad: list[Mapping[str, Any]] = []
            unknown: list[Mapping[str, Any]] = []
            ev: dict[str, Any] = {"variable": var}
            for node in nodes:
                r = int(node.get("node_rank", 0))
                value, source = settings[r]
                ifaces = _interfaces(node)
                ev[f"node{r}.hostname"] = str(node.get("hostname") or "")
                ev[f"node{r}.{var}"] = value
                ev[f"node{r}.source"] = source or None
                if ifaces is None:
                    unknown.append(node)
                    continue
                ev[f"node{r}.interfaces"] = ", ".join(f"{i['name']}{'' if _has_address(i) else ' (no address)'}" for i in ifaces)
                if value is None:
                    continue
                usable = [str(i["name"]) for i in ifaces if _has_address(i)]
                hits = interface_matches(value, kind, usable)
                wanted = len([p for p in value.split(",") if p.strip()]) if kind == "exact" else 1
                if (len(hits) < wanted) if kind == "exact" else (not hits):
                    bad.append(node)
            if bad:
                detail = "; ".join(
                    f"{_label(n)} has no {'interface' if kind == 'exact' else 'interface matching'} "
                    f"{settings[int(n.get('node_rank', 0))][0]!r} with an address "
                    f"(it has {', '.join(str(i['name']) for i in _interfaces(n) or []) or 'none'})"
                    for n in bad
                )
                yield self.finding(
                    f"{var} is pinned but the name does not exist on every node: {detail}",
                    subject=f"env={var}",
                    evidence=ev,
                    fix=_per_node_fix(nodes, [var]) + (
                        "; or, for NCCL only, a prefix list covering every node: NCCL_SOCKET_IFNAME="
                        + ",".join(sorted({s for s in (suggest_interface(n) for n in nodes) if s}))
                        if kind == "prefix" else ""
                    ),
                )
            if kind == "exact":
                counts = {r: len([p for p in (v or "").split(",") if p.strip()]) for r, (v, _) in settings.items() if v}
                if len(set(counts.values())) > 1:
                    yield self.finding(
                        f"{var} lists a different number of interfaces on different nodes ({_per_node_text(counts, nodes)}); "
                        "every Gloo process must list the same number",
                        subject=f"env={var}",
                        evidence=_evidence(counts, "count", nodes),
                        fix=f"give every node exactly one interface in {var}: " + _per_node_fix(nodes, [var]),
                    )
            if unknown and not bad:
                names = ", ".join(_label(n) for n in unknown)
                yield self.finding(
                    f"{var} is pinned but the interfaces of {names} are unknown (no net fact), so it cannot be verified there",
                    subject=f"env={var}",
                    severity=Severity.INFO,
                    evidence=ev,
                    fix="re-run the preflight on those nodes with the net probe (or a snapshot that includes it)",
                )


# -- CLU003 ---------------------------------------------------------------------------------------
_NCCL_DISTS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
#: (label, where, severity): where is ("gpu", key) / ("packages", dist) / ("host", key) / ("node", key).
_SOFTWARE: tuple[tuple[str, tuple[str, ...], Severity], ...] = (
    ("NVIDIA driver", ("gpu", "driver"), Severity.ERROR),
    ("CUDA driver API version", ("gpu", "cuda_driver"), Severity.ERROR),
    ("torch", ("packages", "torch"), Severity.ERROR),
    ("torch CUDA build", ("packages", "torch_cuda"), Severity.ERROR),
    ("NCCL", ("nccl",), Severity.ERROR),
    ("sglang", ("packages", "sglang"), Severity.ERROR),
    ("sgl-kernel", ("packages", "sgl-kernel"), Severity.ERROR),
    ("vllm", ("packages", "vllm"), Severity.ERROR),
    ("flashinfer-python", ("packages", "flashinfer-python"), Severity.ERROR),
    ("triton", ("packages", "triton"), Severity.ERROR),
    ("deep_gemm", ("packages", "deep_gemm"), Severity.ERROR),
    ("transformers", ("packages", "transformers"), Severity.WARNING),
    ("safetensors", ("packages", "safetensors"), Severity.WARNING),
    ("fastsafetensors", ("packages", "fastsafetensors"), Severity.WARNING),
    ("Python", ("host", "python"), Severity.WARNING),
    ("k3doctor", ("node", "version"), Severity.WARNING),
)


def _software_getter(where: tuple[str, ...]) -> Callable[[Mapping[str, Any]], Any]:
    def get(node: Mapping[str, Any]) -> Any:
        if where[0] == "node":
            if node.get(where[1]) is None:
                raise KeyError(where[1])
            return node[where[1]]
        if where[0] == "nccl":
            pkgs = _fact(node, "packages")
            if not isinstance(pkgs, Mapping) or not any(d in pkgs for d in _NCCL_DISTS):
                raise KeyError("nccl")
            return next((f"{d} {pkgs[d]}" for d in _NCCL_DISTS if pkgs.get(d)), None)
        fact = _fact(node, where[0])
        if not isinstance(fact, Mapping) or where[1] not in fact:
            raise KeyError(where[1])
        if where[0] == "gpu" and not fact.get("ok", True):
            raise KeyError(where[1])
        return fact[where[1]]

    return get


class CLU003(Check):
    """Driver, CUDA, NCCL, torch and engine versions match across nodes

    ## What it checks
    The NVIDIA driver and CUDA driver API version (`gpu` fact), torch and its CUDA build, the
    NCCL wheel, SGLang / sgl-kernel / vLLM / FlashInfer / Triton / DeepGEMM (errors), and
    transformers / safetensors / fastsafetensors / Python / k3doctor (warnings), node by node.
    A package installed on some nodes and missing on others is a difference too.

    ## Why it matters
    Ranks of one model must run the same kernels and the same collective protocol. Mixed NCCL
    versions hang or fail at communicator init; mixed torch / engine versions disagree on
    weight layouts, CUDA-graph shapes or pickled control messages; mixed drivers show up in bug
    reports as hangs nobody can reproduce on one node.

    ## How to fix
    Install the same versions on every node — ideally the same container image. The finding
    names the majority version and the nodes that differ (`pip install PKG==VERSION` there, or
    the same driver package and a reboot).
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        nodes = _nodes(facts)
        for label, where, severity in _SOFTWARE:
            values = _differences(nodes, _software_getter(where))
            if values is None:
                continue
            target = _majority(values, nodes)
            odd = [r for r, v in values.items() if repr(v) != repr(target)]
            by_rank = {int(n.get("node_rank", 0)): n for n in nodes}
            if where[0] == "packages" and target is not None:
                how = f"pip install '{where[1]}=={target}'"
            elif where[0] == "packages":
                how = f"pip uninstall {where[1]} (or install the same version everywhere)"
            elif where == ("nccl",) and target:
                how = "pip install '" + str(target).replace(" ", "==") + "'"
            elif where[0] == "gpu":
                how = f"install NVIDIA driver {target if where[1] == 'driver' else 'of the same branch'} and reboot"
            else:
                how = f"use {label} {target}"
            yield self.finding(
                f"{label} differs across nodes: {_per_node_text(values, nodes, 'not installed')}",
                subject=f"{where[0]}={where[-1]}",
                severity=severity,
                evidence={"majority": _ev(target), **_evidence(values, "version", nodes)},
                fix=f"on {', '.join(_label(by_rank[r]) for r in odd)}: {how} (same image on every node is simplest)",
            )


# -- CLU004 ---------------------------------------------------------------------------------------
def _devices(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    gpu = _fact(node, "gpu")
    if not isinstance(gpu, Mapping) or not gpu.get("ok", False) or not isinstance(gpu.get("devices"), list):
        raise KeyError("gpu")
    return [d for d in gpu["devices"] if isinstance(d, Mapping)]


def _per_device(key: str) -> Callable[[Mapping[str, Any]], Any]:
    def get(node: Mapping[str, Any]) -> Any:
        devices = _devices(node)
        if not devices or all(key not in d for d in devices):
            raise KeyError(key)
        return sorted({repr(d.get(key)): d.get(key) for d in devices}.values(), key=repr)

    return get


_GPU_ASPECTS: tuple[tuple[str, str, Callable[[Mapping[str, Any]], Any], Severity, str], ...] = (
    ("GPU count", "count", lambda n: len(_devices(n)), Severity.ERROR,
     "every node needs the same number of visible GPUs: check CUDA_VISIBLE_DEVICES and `nvidia-smi -L` on the odd node"),
    ("GPU model", "name", _per_device("name"), Severity.ERROR,
     "run the deployment on nodes with the same GPU model (per-rank memory and kernels are planned for one)"),
    ("GPU memory", "memory_total", _per_device("memory_total"), Severity.ERROR,
     "use nodes with the same GPU memory size (a different SKU or a MIG slice is visible on one node)"),
    ("MIG mode", "mig_current", _per_device("mig_current"), Severity.ERROR,
     "disable MIG on every GPU of the deployment: `sudo nvidia-smi -mig 0` and reset the GPUs"),
    ("ECC mode", "ecc_current", _per_device("ecc_current"), Severity.WARNING,
     "set the same ECC mode everywhere (`sudo nvidia-smi -e 1`, takes effect after a GPU reset/reboot)"),
    ("persistence mode", "persistence", _per_device("persistence"), Severity.WARNING,
     "enable persistence on every node: `sudo nvidia-smi -pm 1` (or the nvidia-persistenced service)"),
)


class CLU004(Check):
    """GPU model, count, memory, MIG, ECC and persistence match across nodes

    ## What it checks
    From each node's `gpu` fact: the number of GPUs, their model names and total memory, MIG
    mode (errors), ECC mode and persistence mode (warnings). Values are compared as the set over
    each node's GPUs, so a node with one odd GPU differs too.

    ## Why it matters
    The parallel plan (TP16 across 2×8 GPUs, the per-rank weight share, the KV budget) is
    computed for one GPU type and count. A node with 7 visible GPUs, a smaller SKU or a MIG
    slice makes the engine fail at init or run out of memory on some ranks only; mixed ECC mode
    changes usable memory; no persistence mode slows every CUDA init on that node.

    ## How to fix
    Use identical nodes; the finding lists per-node values and the command for the odd nodes.
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        nodes = _nodes(facts)
        for label, key, getter, severity, fix in _GPU_ASPECTS:
            values = _differences(nodes, getter)
            if values is None:
                continue
            yield self.finding(
                f"{label} differs across nodes: {_per_node_text(values, nodes)}",
                subject=f"gpu.{key}",
                severity=severity,
                evidence=_evidence(values, key, nodes),
                fix=fix,
            )


# -- CLU005 ---------------------------------------------------------------------------------------
def _model_missing(model: Any) -> str | None:
    if not isinstance(model, Mapping):
        return "no model fact (the checkpoint was not scanned on this node)"
    for key in ("exists", "found"):
        if model.get(key) is False:
            return str(model.get("error") or "the model directory does not exist")
    if model.get("ok") is False:
        return str(model.get("error") or "the checkpoint scan failed")
    return None


def _hashes(model: Mapping[str, Any]) -> dict[str, str]:
    raw = model.get("sha256")
    if isinstance(raw, Mapping):
        return {str(k): str(v) for k, v in raw.items() if v}
    if isinstance(raw, list):
        out = {}
        for item in raw:
            if isinstance(item, Mapping) and item.get("file") and item.get("sha256"):
                out[str(item["file"])] = str(item["sha256"])
        return out
    return {}


class CLU005(Check):
    """The same model checkpoint is present on every node

    ## What it checks
    Each node's `model` fact: the checkpoint must be present on every node that has a model fact
    elsewhere, and its `fingerprint` (config + index + shard sizes + safetensors header hashes)
    must be the same everywhere. With `--deep`, the per-file sha256 results are compared file by
    file. If no node's model fact carries a fingerprint, that part is skipped with the reason.

    ## Why it matters
    Each rank loads its share of the weights from its own node's copy. A partial download, an
    older revision or a different quantisation on one node is found only at minute 11 of the
    load — or never, as silently wrong outputs.

    ## How to fix
    Copy the checkpoint from a good node (`rsync -a --checksum GOOD:/models/Kimi-K3/ /models/Kimi-K3/`)
    or download the same revision there (`hf download REPO --revision SHA --local-dir DIR`), then
    re-run the preflight.
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        nodes = _nodes(facts)
        models = {int(n.get("node_rank", 0)): _fact(n, "model") for n in nodes}
        if not any(isinstance(m, Mapping) for m in models.values()):
            raise self.skip("no node recorded a model fact (give --model DIR or a launch command with a local model path)")
        by_rank = {int(n.get("node_rank", 0)): n for n in nodes}
        present = {r: m for r, m in models.items() if _model_missing(m) is None}
        for r, m in models.items():
            why = _model_missing(m)
            if why is not None and present:
                path = (m or {}).get("path") if isinstance(m, Mapping) else None
                yield self.finding(
                    f"the model is missing on {_label(by_rank[r])}: {why}",
                    subject=f"node_rank={r}",
                    evidence={"node_rank": r, "hostname": str(by_rank[r].get("hostname")), "path": path, "reason": why},
                    fix=f"copy the checkpoint to {by_rank[r].get('hostname')} from a node that has it (rsync -a --checksum) and re-run",
                )
        prints = {r: m.get("fingerprint") for r, m in present.items() if isinstance(m.get("fingerprint"), str)}
        if not prints:
            if len(present) >= 2:
                raise self.skip("the model facts carry no fingerprint (this checkpoint probe does not compute one), so the copies cannot be compared")
            return
        if len(set(prints.values())) > 1:
            target = _majority(prints, nodes)
            odd = [r for r, p in prints.items() if p != target]
            yield self.finding(
                f"the model checkpoint differs across nodes (fingerprint {_per_node_text(prints, nodes)})",
                subject="model.fingerprint",
                evidence={"majority": target, **_evidence(prints, "fingerprint", nodes),
                          **{f"node{r}.path": _ev(present[r].get("path")) for r in prints}},
                fix=f"re-copy the checkpoint to {', '.join(_label(by_rank[r]) for r in odd)} from a node with fingerprint {target} "
                "(rsync -a --checksum), or download the same revision there",
            )
        hashes = {r: _hashes(m) for r, m in present.items() if _hashes(m)}
        if len(hashes) >= 2:
            files = sorted({f for h in hashes.values() for f in h})
            for name in files:
                values = {r: h.get(name) for r, h in hashes.items() if name in h}
                if len(values) >= 2 and len(set(values.values())) > 1:
                    yield self.finding(
                        f"shard {name} has different sha256 on different nodes: {_per_node_text(values, nodes)}",
                        subject=f"shard={name}",
                        evidence=_evidence(values, "sha256", nodes),
                        fix=f"re-download {name} on the nodes whose hash differs from the published one (hf download REPO {name} --local-dir DIR)",
                    )


# -- CLU006 ---------------------------------------------------------------------------------------
def _effective_env(node: Mapping[str, Any]) -> dict[str, str] | None:
    env = _fact(node, "env")
    launch = _fact(node, "launch")
    if not isinstance(env, Mapping) and not isinstance(launch, Mapping):
        return None
    out = {str(k): str(v) for k, v in (env or {}).items()} if isinstance(env, Mapping) else {}
    if isinstance(launch, Mapping):
        out.update({str(k): str(v) for k, v in (launch.get("env_assignments") or {}).items()})
    return {
        k: v for k, v in out.items()
        if k.startswith(ENV_PREFIXES) and k not in PER_NODE_ENV and not k.endswith("_CACHE_DIR")
    }


class CLU006(Check):
    """Engine-relevant environment variables match across nodes

    ## What it checks
    `NCCL_*`, `GLOO_*`, `SGLANG_*`/`SGL_*`, `VLLM_*` (errors) and `TRITON_*`, `CUDA_*`,
    `TORCHINDUCTOR_*`, `PYTORCH_*`, `FLASHINFER_*`, `DG_*` (warnings) as each engine would see
    them (the process environment plus the launch command's `VAR=value` words). Per-node by
    nature and therefore not compared: interface and HCA names (`*_SOCKET_IFNAME`, `NCCL_IB_HCA`,
    see CLU002), advertised host IPs, and `*_CACHE_DIR` paths.

    ## Why it matters
    A variable set on one node only changes that node's code path: an NCCL protocol or transport
    setting on one side hangs communicator init; a `VLLM_*`/`SGLANG_*` feature flag on one node
    builds different kernels or graph shapes than its peers (vLLM hangs when leader and workers
    differ in one setting).

    ## How to fix
    Set the same values on every node, from one env file shared by all launch scripts
    (`--env-file`), or unset the stray variable on the odd node.
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        nodes = _nodes(facts)
        envs = {int(n.get("node_rank", 0)): _effective_env(n) for n in nodes}
        known = {r: e for r, e in envs.items() if e is not None}
        if len(known) < 2:
            raise self.skip("fewer than two nodes recorded their environment")
        for var in sorted({k for e in known.values() for k in e}):
            values = {r: e.get(var) for r, e in known.items()}
            if len({repr(v) for v in values.values()}) == 1:
                continue
            severity = Severity.ERROR if var.startswith(_ENV_ERROR_PREFIXES) else Severity.WARNING
            target = _majority(values, nodes)
            if not _is_strict_majority(values, target):
                how = f"choose one value of {var} (or none) and use it on every node"
            elif target is None:
                how = f"unset {var} on every node, or set it everywhere"
            else:
                how = f"export {var}={target} on every node"
            yield self.finding(
                f"{var} differs across nodes: {_per_node_text(values, nodes, 'unset')}",
                subject=f"env={var}",
                severity=severity,
                evidence={"variable": var, **_evidence(values, "value", nodes)},
                fix=how + " (one shared env file for all launch scripts keeps them in step)",
            )


# -- CLU007 ---------------------------------------------------------------------------------------
def _launch_view(node: Mapping[str, Any]) -> dict[str, Any]:
    launch = _fact(node, "launch")
    if not isinstance(launch, Mapping):
        raise KeyError("launch")
    flags = {str(k): v for k, v in (launch.get("flags") or {}).items() if str(k) not in PER_NODE_FLAGS}
    view = {"engine": launch.get("engine"), "entry": launch.get("entry"), "positional": launch.get("positional") or []}
    view.update({f: _ev(v) for f, v in flags.items()})
    return view


class CLU007(Check):
    """The launch command is the same on every node (apart from the node rank)

    ## What it checks
    Each node's parsed launch command (`launch` fact): the engine, its entry point, positional
    arguments and every flag with its value, ignoring flags that differ per node by design
    (`--node-rank`, vLLM's `--headless` and data-parallel start rank). Environment assignments
    are compared by CLU006.

    ## Why it matters
    Every rank derives the parallel layout, quantisation, memory fraction and CUDA-graph sizes
    from its own command line. One differing flag builds a different model on one node: the
    collectives then hang or the node dies late with a shape mismatch.

    ## How to fix
    Generate every node's command from one template that substitutes only the node rank
    (e.g. `--node-rank $NODE_RANK`), then re-run the preflight.
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        nodes = _nodes(facts)
        views: dict[int, dict[str, Any]] = {}
        for node in nodes:
            try:
                views[int(node.get("node_rank", 0))] = _launch_view(node)
            except KeyError:
                continue
        if len(views) < 2:
            raise self.skip("fewer than two nodes recorded a launch command (give it after `--` on every node)")
        by_rank = {int(n.get("node_rank", 0)): n for n in nodes}
        keys = sorted({k for v in views.values() for k in v})
        diffs: list[str] = []
        ev: dict[str, Any] = {}
        for key in keys:
            values = {r: v.get(key) for r, v in views.items()}
            if len({repr(x) for x in values.values()}) == 1:
                continue
            diffs.append(key)
            for r, x in values.items():
                ev[f"node{r}.{key}"] = _ev(x)
        if not diffs:
            return
        missing_launch = [r for r in by_rank if r not in views]
        text = "; ".join(
            f"{k}: " + ", ".join(f"{_show(views[r].get(k)) if k in views[r] else 'absent'} on node {r}" for r in sorted(views))
            for k in diffs
        )
        yield self.finding(
            f"the launch command differs across nodes beyond the node rank: {text}",
            subject="launch",
            evidence={**ev, **({"nodes_without_launch": ", ".join(map(str, missing_launch))} if missing_launch else {})},
            fix="generate every node's launch command from one template that substitutes only --node-rank; "
            f"make {', '.join(diffs)} identical on all nodes",
        )


# -- CLU008 ---------------------------------------------------------------------------------------
class CLU008(Check):
    """Node clocks agree within 1 s

    ## What it checks
    During the live preflight rank 0 releases a key in the TCPStore while the other nodes wait
    on it; each node records its `time.time()` when it wakes and a store round trip. The offset
    to rank 0's clock is known to within half a round trip (best of three rounds). A node whose
    offset exceeds 1 s beyond that uncertainty is reported. Skipped for saved snapshots.

    ## Why it matters
    Skewed clocks make multi-node logs and traces impossible to line up when a launch fails,
    break time-based leases and certificate checks (TLS to storage or the model hub), and
    confuse watchdogs that compare timestamps across ranks.

    ## How to fix
    Enable time synchronisation on every node (`timedatectl set-ntp true`, or chrony/ntpd against
    the same server: `chronyc tracking` shows the current offset).
    """

    facts = ("cluster",)
    severity = Severity.WARNING

    def run(self, facts: Any) -> Iterator[Finding]:
        cluster = _cluster(facts)
        clock = cluster.get("clock") or {}
        if not clock.get("measured"):
            raise self.skip(str(clock.get("reason") or "clock skew was not measured"))
        threshold = float(clock.get("threshold_s") or 1.0)
        hosts = {int(n.get("node_rank", 0)): n.get("hostname") for n in cluster.get("nodes") or [] if isinstance(n, Mapping)}
        ref = int(clock.get("reference_rank") or 0)
        for entry in clock.get("nodes") or []:
            offset, unc = entry.get("offset_s"), entry.get("uncertainty_s") or 0.0
            if offset is None or abs(float(offset)) - float(unc) <= threshold:
                continue
            r = int(entry.get("node_rank", 0))
            yield self.finding(
                f"the clock of node {r} ({hosts.get(r, '?')}) is {float(offset):+.3f} s off node {ref} ({hosts.get(ref, '?')}) "
                f"(± {float(unc):.3f} s; limit {threshold:g} s)",
                subject=f"node_rank={r}",
                evidence={"node_rank": r, "offset_s": float(offset), "uncertainty_s": float(unc), "rtt_s": entry.get("rtt_s"), "threshold_s": threshold},
                fix=f"enable NTP on {hosts.get(r, 'that node')} and node {ref} against the same server (timedatectl set-ntp true; chronyc tracking)",
            )


# -- CLU009 ---------------------------------------------------------------------------------------
def _root_error(entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    failed = [e for e in entries if e.get("ok") is not True and e.get("error")]
    for e in failed:
        text = str(e["error"]).lower()
        if e.get("aborted") or text.startswith("stopped early"):
            continue
        if "timeout" not in text and "timed out" not in text and "no boot result" not in text:
            return e
    return failed[0] if failed else None


class CLU009(Check):
    """Gloo bootstrap across the nodes works over each node's interface

    ## What it checks
    The live preflight runs a real Gloo all-reduce across all nodes — the same CPU-side group
    SGLang and vLLM create first — with each node's `GLOO_SOCKET_IFNAME` (from `--gloo-ifname`,
    the launch command, the environment, or k3doctor's own choice: the interface that routes to
    the rendezvous head), bounded by `--timeout` and run in a child process that is killed if
    it hangs. A failure names every node's interface and quotes Gloo's error.

    ## Why it matters
    This is where multi-node launches fail after minutes of model build: "Unable to find address
    for: eth0" on a node without that NIC, `connectFullMesh failed` when a node advertises an
    unroutable or loopback address, or a silent hang when a firewall drops the connections.

    ## How to fix
    - "Unable to find address for: X": X does not exist (or has no address) on that node; run
      `eval "$(k3doctor env)"` on each node to export its own interface (values in the finding).
    - Timeouts / `connectFullMesh`: the nodes' addresses cannot reach each other on the selected
      interfaces; choose the interface on the shared network, and open TCP between the nodes
      (Gloo uses ephemeral ports).
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        cluster = _cluster(facts)
        boot = cluster.get("bootstrap") or {}
        if not boot.get("ran"):
            raise self.skip(str(boot.get("reason") or "the bootstrap test did not run"))
        entries = [e for e in boot.get("nodes") or [] if isinstance(e, Mapping)]
        if boot.get("ok") and all(e.get("ok") for e in entries):
            return
        nodes = {int(n.get("node_rank", 0)): n for n in cluster.get("nodes") or [] if isinstance(n, Mapping)}
        ev: dict[str, Any] = {"timeout_s": boot.get("timeout_s")}
        parts = []
        for e in entries:
            r = int(e.get("node_rank", 0))
            ev[f"node{r}.hostname"] = str(e.get("hostname") or "")
            ev[f"node{r}.ifname"] = e.get("ifname")
            ev[f"node{r}.source"] = e.get("source")
            ev[f"node{r}.ipv4"] = e.get("ipv4")
            ev[f"node{r}.ok"] = e.get("ok")
            ev[f"node{r}.error"] = (str(e.get("error"))[:500] if e.get("error") else None)
            parts.append(f"node {r} ({e.get('hostname')}) GLOO_SOCKET_IFNAME={e.get('ifname') or '(unset)'} [{e.get('source') or '?'}]"
                         f" {'ok' if e.get('ok') else 'failed'}")
        root = _root_error(entries)
        quote = f'; Gloo said on node {root.get("node_rank")}: "{str(root.get("error"))[:300]}"' if root else ""
        absent = []
        for e in entries:
            node = nodes.get(int(e.get("node_rank", 0)))
            ifaces = _interfaces(node) if node else None
            if e.get("ifname") and ifaces is not None:
                names = [str(i["name"]) for i in ifaces if _has_address(i)]
                if not interface_matches(str(e["ifname"]), "exact", names):
                    absent.append(node)
        if absent or "unable to find address" in quote.lower():
            fix = _per_node_fix([nodes[r] for r in sorted(nodes)], ["GLOO_SOCKET_IFNAME"])
        else:
            fix = (
                "the selected interfaces cannot reach each other: pick on each node the interface on the network shared "
                "with the head (`ip route get HEAD_IP`), allow TCP between the nodes on all ports (Gloo uses ephemeral "
                'ports), and run `eval "$(k3doctor env)"` on each node; ' + _per_node_fix([nodes[r] for r in sorted(nodes)], ["GLOO_SOCKET_IFNAME"])
            )
        yield self.finding(
            "Gloo all-reduce across the nodes failed: " + "; ".join(parts) + quote,
            subject="bootstrap=gloo",
            evidence=ev,
            fix=fix,
        )


# -- CLU010 ---------------------------------------------------------------------------------------
#: Share of the expected bus bandwidth below which CLU010 warns.
NCCL_BUSBW_WARN_RATIO = 0.5


def _rate_gbps(text: Any) -> float:
    try:
        return float(str(text).split()[0])
    except (ValueError, IndexError):
        return 0.0


def network_GBps(node: Mapping[str, Any]) -> tuple[float | None, str]:
    """A node's network bandwidth for NCCL in GB/s: the sum of its active InfiniBand/RoCE ports,
    else the fastest physical, up Ethernet interface; ``None`` when the net fact does not say."""
    net = _fact(node, "net")
    if not isinstance(net, Mapping):
        return None, "no net fact"
    ports = [p for hca in net.get("infiniband") or [] if isinstance(hca, Mapping) for p in hca.get("ports") or []
             if isinstance(p, Mapping) and "ACTIVE" in str(p.get("state", "")).upper()]
    if ports:
        total = sum(_rate_gbps(p.get("rate")) for p in ports)
        if total > 0:
            return total / 8, f"{len(ports)} active IB/RoCE port(s), {total:g} Gb/s"
    speeds = [int(i.get("speed_mbps") or 0) for i in _interfaces(node) or [] if i.get("kind") == "physical" and i.get("operstate") == "up"]
    if speeds and max(speeds) > 0:
        return max(speeds) / 8000, f"Ethernet {max(speeds) / 1000:g} Gb/s"
    return None, "link speeds unknown"


class CLU010(Check):
    """NCCL all-reduce over each node's GPUs works and reaches the expected bus bandwidth

    ## What it checks
    With `--nccl`, each node runs an NCCL all-reduce across all its GPUs (one process per GPU,
    `python -m k3doctor.cluster.nccl_test`) and reports the bus bandwidth with nccl-tests'
    formula (busbw = bytes / time × 2(n−1)/n). A failed run is an error; a peak bus bandwidth
    below half of the expectation for the GPU and link (NVLink generation or PCIe) is a warning.

    ## Why it matters
    Tensor and expert parallelism all-reduce and all-to-all every layer. A GPU whose NVLinks are
    down, a missing fabric manager on NVSwitch systems, or NCCL falling back to PCIe/shared
    memory shows up as a fraction of the expected bandwidth — and as a slow or hanging engine.

    ## How to fix
    Look at `nvidia-smi nvlink --status` and `nvidia-smi topo -m`; on NVSwitch systems check that
    `nvidia-fabricmanager` runs; re-run with `NCCL_DEBUG=INFO` to see which transport NCCL picked.
    """

    facts = ("cluster",)

    def run(self, facts: Any) -> Iterator[Finding]:
        cluster = _cluster(facts)
        nccl = cluster.get("nccl")
        if not isinstance(nccl, Mapping):
            raise self.skip("the NCCL test was not requested (run the live preflight with --nccl)")
        if not nccl.get("ran"):
            raise self.skip(str(nccl.get("reason") or "the NCCL test did not run"))
        for entry in nccl.get("nodes") or []:
            if not isinstance(entry, Mapping):
                continue
            r = entry.get("node_rank")
            host = entry.get("hostname")
            result: Mapping[str, Any] = entry["result"] if isinstance(entry.get("result"), Mapping) else {}
            if not entry.get("ok"):
                yield self.finding(
                    f"NCCL all-reduce failed on node {r} ({host}): {result.get('error') or entry.get('error') or 'no result'}",
                    subject=f"node_rank={r}",
                    evidence={"node_rank": r, "hostname": host, "error": str(result.get("error") or entry.get("error") or "")[:500],
                              "world_size": result.get("world_size")},
                    fix="re-run `python -m k3doctor.cluster.nccl_test` on that node with NCCL_DEBUG=INFO and check `nvidia-smi topo -m`",
                )
                continue
            peak, expected = result.get("busbw_peak_GBps"), result.get("expected_busbw_GBps")
            if isinstance(peak, (int, float)) and isinstance(expected, (int, float)) and expected > 0 and peak < expected * NCCL_BUSBW_WARN_RATIO:
                yield self.finding(
                    f"NCCL all-reduce bus bandwidth on node {r} ({host}) is {peak:.1f} GB/s, below half of the "
                    f"{expected:.0f} GB/s expected for {result.get('expected_basis')}",
                    subject=f"node_rank={r}",
                    severity=Severity.WARNING,
                    evidence={"node_rank": r, "hostname": host, "busbw_peak_GBps": float(peak), "expected_busbw_GBps": float(expected),
                              "world_size": result.get("world_size"), "basis": result.get("expected_basis")},
                    fix="check `nvidia-smi nvlink --status` / `nvidia-smi topo -m` and nvidia-fabricmanager on that node; "
                    "NCCL_DEBUG=INFO shows the transport NCCL chose",
                )
        yield from self._across(cluster, nccl)

    def _across(self, cluster: Mapping[str, Any], nccl: Mapping[str, Any]) -> Iterator[Finding]:
        entries = [e for e in nccl.get("nodes") or [] if isinstance(e, Mapping) and e.get("ok")]
        peaks = [e["result"].get("global_busbw_peak_GBps") for e in entries if isinstance(e.get("result"), Mapping)]
        if not nccl.get("across_nodes") or not peaks or peaks[0] is None:
            return
        nodes = [n for n in cluster.get("nodes") or [] if isinstance(n, Mapping)]
        nets = [(network_GBps(n), n) for n in nodes]
        known = [(bw, basis, n) for (bw, basis), n in nets if bw]
        if len(known) != len(nodes) or not known:
            return
        bw, basis, slowest = min(known, key=lambda k: k[0])
        expected = bw * 0.9
        local = [e["result"].get("expected_busbw_GBps") for e in entries if e["result"].get("expected_busbw_GBps")]
        if local:
            expected = min(expected, min(local))
        peak = float(peaks[0])
        if peak < expected * NCCL_BUSBW_WARN_RATIO:
            yield self.finding(
                f"NCCL all-reduce across the nodes reaches {peak:.1f} GB/s bus bandwidth, below half of the {expected:.0f} GB/s "
                f"the network allows ({_label(slowest)}: {basis})",
                subject="nccl=global",
                severity=Severity.WARNING,
                evidence={"global_busbw_peak_GBps": peak, "expected_busbw_GBps": round(expected, 3), "basis": basis,
                          "world_size": entries[0]["result"].get("world_size")},
                fix="check with NCCL_DEBUG=INFO that NCCL uses the IB/RoCE HCAs (NET/IB, not NET/Socket); check NCCL_IB_HCA, "
                "NCCL_IB_DISABLE and that GPUDirect RDMA (nvidia-peermem) is loaded",
            )


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('CLU', 'cross-node consistency (multi-node)', 90)
CHECKS = module_checks(globals())
