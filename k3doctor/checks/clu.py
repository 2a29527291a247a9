"""CLU family: cross-node consistency of a multi-node deployment (CLU001–CLU010).

Every check reads only the ``cluster`` fact (built live by :func:`k3doctor.cluster.gather` or
offline by :func:`k3doctor.cluster.from_snapshots`): ``nodes[].facts`` holds each node's own
facts (``host``, ``packages``, ``gpu``, ``env``, ``launch``, ``net``, ``rendezvous``, ``model``),
plus the live measurements ``clock``, ``bootstrap`` and ``nccl``. Checks never touch the machine
and never print. Per-node values go into ``evidence`` as ``node<R>.<what>`` keys.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

from ..check import Check, module_checks
from ..facttypes import ClusterFact
from ..model import Finding, Severity
from ._clu_common import (  # noqa: F401 - the family's shared constants and helpers
    ENV_PREFIXES, IFNAME_VARS, PER_NODE_ENV, PER_NODE_FLAGS, _cluster, _differences, _ev, _evidence,
    _fact, _has_address, _interfaces, _label, _majority, _nodes, _per_node_fix, _per_node_text,
    _pinned, interface_matches, suggest_interface,
)
from .clu_runtime import (  # noqa: F401 - re-exported: tests and plugins import them from here
    CLU006, CLU007, CLU008, CLU009, CLU010, NCCL_BUSBW_WARN_RATIO, network_GBps,
)
from . import clu_runtime as _runtime


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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        cluster = _cluster(cluster)
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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        nodes = _nodes(cluster, need=1)
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
                missing = "; ".join(f"{_label(n)} lacks {settings[int(n.get('node_rank', 0))][0]!r}" for n in bad)
                yield self.finding(
                    f"{var} is pinned but the name does not exist on every node: {detail}",
                    subject=f"env={var}",
                    evidence=ev,
                    group=f"interface pins whose name is missing on a node ({missing})",
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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        nodes = _nodes(cluster)
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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        nodes = _nodes(cluster)
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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        nodes = _nodes(cluster)
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


FAMILY = ('CLU', 'cross-node consistency (multi-node)', 90)
CHECKS = sorted(module_checks(globals()) + _runtime.CHECKS, key=lambda c: c.code)

