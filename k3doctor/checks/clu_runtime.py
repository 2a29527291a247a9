"""CLU family, runtime half: environment, launch, clocks, the bootstrap test and NCCL bandwidth
across nodes (CLU006-CLU010). Node inventory consistency is :mod:`.clu`; both register as CLU."""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from ..check import Check, module_checks
from ..facttypes import ClusterFact
from ..model import Finding, Severity
from ._clu_common import (  # noqa: F401 - the family's shared constants and helpers
    ENV_PREFIXES, PER_NODE_ENV, PER_NODE_FLAGS, _ENV_ERROR_PREFIXES, _cluster, _ev, _evidence,
    _fact, _has_address, _interfaces, _is_strict_majority, _label, _majority, _nodes, _per_node_fix,
    _per_node_text, _show, interface_matches,
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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        nodes = _nodes(cluster)
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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        nodes = _nodes(cluster)
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

    severity = Severity.WARNING

    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        cluster = _cluster(cluster)
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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        cluster = _cluster(cluster)
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


    def run(self, cluster: ClusterFact) -> Iterator[Finding]:
        cluster = _cluster(cluster)
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

FAMILY = ("CLU", "cross-node consistency (multi-node)", 90)
CHECKS = module_checks(globals())
