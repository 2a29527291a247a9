"""CLU checks over the ``cluster`` fact, offline mode (``from_snapshots``) and the pieces of the
multi-node preflight that need no network: interface selection, bandwidth formula, torch-less mode."""

from __future__ import annotations

import copy
import sys
from typing import Any

import pytest

from k3doctor.check import Check
from k3doctor.checks import clu
from k3doctor.cluster import (
    ClusterOptions,
    ClusterUnavailable,
    choose_gloo_interface,
    default_store_port,
    from_snapshots,
    gather,
    parse_addr,
)
from k3doctor.cluster.nccl_test import bus_bandwidth, expected_busbw, parse_size
from k3doctor.facts import SNAPSHOT_SCHEMA_VERSION, Facts
from k3doctor.model import Severity, Status
from k3doctor.runner import run_checks

SEED = (
    "NCCL_MNNVL_ENABLE=1 NCCL_CUMEM_ENABLE=1 SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 "
    "sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 "
    "--tp-size 16 --ep-size 16 --moe-runner-backend marlin --decode-attention-backend flashmla "
    "--enable-symm-mem --mem-fraction-static 0.85 "
    "--reasoning-parser kimi_k3 --tool-call-parser kimi_k3 --host 0.0.0.0 --port 30000 "
    "--nnodes 2 --node-rank {rank} --dist-init-addr 10.0.0.1:5000"
)


def _launch(rank: int, command: str = SEED) -> dict[str, Any]:
    launch = pytest.importorskip("k3doctor.launch")
    return launch.parse_launch(command.format(rank=rank)).to_dict()


def _devices(n: int = 8, **over: Any) -> list[dict[str, Any]]:
    base = {"name": "NVIDIA H200", "memory_total": 150754820096, "mig_current": False, "ecc_current": True,
            "persistence": True, "cc": [9, 0]}
    return [dict(base, index=i, **over) for i in range(n)]


def _net(name: str, ip: str) -> dict[str, Any]:
    return {
        "interfaces": [
            {"name": "lo", "kind": "loopback", "operstate": "unknown", "ipv4": ["127.0.0.1/8"], "ipv6": []},
            {"name": name, "kind": "physical", "operstate": "up", "speed_mbps": 100000, "ipv4": [f"{ip}/24"], "ipv6": []},
            {"name": "docker0", "kind": "virtual", "operstate": "down", "ipv4": ["172.17.0.1/16"], "ipv6": []},
        ],
        "infiniband": [],
        "errors": [],
    }


def snapshot(rank: int, nic: str = "eth0", **facts: Any) -> dict[str, Any]:
    """A snapshot document of one node of the seed's 2 × 8 H200 deployment."""
    host = f"gpu-node-{rank}"
    base: dict[str, Any] = {
        "host": {"hostname": host, "python": "3.11.7", "time_unix": 1764670000.0},
        "packages": {"torch": "2.9.1", "torch_cuda": "12.9", "sglang": "0.5.6", "vllm": None,
                     "nvidia-nccl-cu12": "2.27.5", "flashinfer-python": "0.5.3", "triton": "3.5.1"},
        "gpu": {"ok": True, "source": "nvml", "driver": "580.95.05", "cuda_driver": 13000, "devices": _devices()},
        "env": {"NCCL_MNNVL_ENABLE": "1", "TRITON_CACHE_DIR": f"/tmp/triton-{host}", "HOME": "/home/me"},
        "launch": _launch(rank),
        "net": _net(nic, f"10.0.0.{rank + 1}"),
        "rendezvous": {"interface": nic, "source_ip": f"10.0.0.{rank + 1}"},
        "model": {"path": "/models/Kimi-K3", "fingerprint": "sha256:aaaa"},
    }
    base.update(facts)
    return {"schema_version": SNAPSHOT_SCHEMA_VERSION, "kind": "k3doctor.snapshot", "tool": "k3doctor",
            "version": "0.1.0", "hostname": host, "facts": base, "probe_errors": {}}


def run(code: str, cluster: dict[str, Any]) -> tuple[Status, list[Any], str]:
    checks = {c.code: c for c in clu.CHECKS}
    report = run_checks(checks, [code], Facts({"cluster": cluster}, source="test"))
    result = report.results[0]
    assert result.status is not Status.CRASH, result.reason
    return result.status, list(result.findings), result.reason


def pair(**per_node: Any) -> dict[str, Any]:
    """Two seed nodes; ``per_node`` maps a fact name to ``(node0_value, node1_value)``."""
    docs = [snapshot(0), snapshot(1)]
    for name, values in per_node.items():
        for doc, value in zip(docs, values):
            doc["facts"][name] = value
    return from_snapshots(docs)


# -- the registry contract ----------------------------------------------------------------------
@pytest.mark.parametrize("cls", clu.CHECKS, ids=lambda c: c.code)
def test_every_check_documents_itself(cls: type[Check]) -> None:
    assert cls.family() == "CLU" and cls.title()
    doc = cls.doc()
    for heading in ("What it checks", "Why it matters", "How to fix"):
        assert heading in doc, f"{cls.code} lacks '{heading}'"
    assert cls.needs() == ("cluster",)


def test_single_node_cluster_fact_is_missing_so_checks_skip() -> None:
    report = run_checks({c.code: c for c in clu.CHECKS}, [c.code for c in clu.CHECKS], Facts({}, source="test"))
    assert {r.status for r in report.results} == {Status.SKIP}
    assert "multi-node" in report.results[0].reason


# -- offline mode ---------------------------------------------------------------------------------
def test_identical_nodes_pass_and_live_only_checks_skip_with_reason() -> None:
    cluster = from_snapshots([snapshot(1), snapshot(0)])
    assert [n["node_rank"] for n in cluster["nodes"]] == [0, 1]
    assert cluster["missing_ranks"] == [] and cluster["errors"] == []
    for code in ("CLU001", "CLU002", "CLU003", "CLU004", "CLU005", "CLU006", "CLU007"):
        status, findings, _ = run(code, cluster)
        assert status is Status.PASS, (code, [f.message for f in findings])
    for code, words in (("CLU008", "live"), ("CLU009", "live"), ("CLU010", "--nccl")):
        status, _, reason = run(code, cluster)
        assert status is Status.SKIP and words in reason


def test_snapshot_missing_for_an_expected_rank_names_it() -> None:
    docs = [snapshot(0), snapshot(1)]
    for d in docs:
        d["facts"]["launch"]["nnodes"] = 3
    cluster = from_snapshots(docs)
    assert cluster["missing_ranks"] == [2]
    status, findings, _ = run("CLU001", cluster)
    assert status is Status.FAIL
    assert any("node rank 2 never joined" in f.message and f.evidence["expected_rank"] == 2 for f in findings)
    assert any("rank2.json" in f.fix for f in findings)


def test_two_snapshots_claiming_one_rank_are_reported() -> None:
    cluster = from_snapshots([snapshot(0), snapshot(0)])
    assert [n["node_rank"] for n in cluster["nodes"]] == [0, 1]
    status, findings, _ = run("CLU001", cluster)
    assert status is Status.FAIL and any("claim node rank 0" in f.message for f in findings)


# -- CLU002 NIC names -----------------------------------------------------------------------------
def test_pinned_gloo_name_missing_on_one_node_is_an_error_with_per_node_fix() -> None:
    docs = [snapshot(0, nic="eth0"), snapshot(1, nic="ens5")]
    for d in docs:
        d["facts"]["env"]["GLOO_SOCKET_IFNAME"] = "eth0"
    status, findings, _ = run("CLU002", from_snapshots(docs))
    assert status is Status.FAIL
    (f,) = findings
    assert f.severity is Severity.ERROR and "node 1 (gpu-node-1) has no interface 'eth0'" in f.message
    assert 'eval "$(k3doctor env)"' in f.fix
    assert "node 0 (gpu-node-0): GLOO_SOCKET_IFNAME=eth0" in f.fix and "node 1 (gpu-node-1): GLOO_SOCKET_IFNAME=ens5" in f.fix
    assert f.evidence["node1.GLOO_SOCKET_IFNAME"] == "eth0" and "ens5" in str(f.evidence["node1.interfaces"])


def test_pinned_name_in_the_launch_command_counts_and_nccl_prefixes_follow_nccl_rules() -> None:
    cmd = "NCCL_SOCKET_IFNAME=eth " + SEED
    docs = [snapshot(0, nic="eth0", launch=_launch(0, cmd)), snapshot(1, nic="ens5", launch=_launch(1, cmd))]
    status, findings, _ = run("CLU002", from_snapshots(docs))
    assert status is Status.FAIL
    assert "NCCL_SOCKET_IFNAME" in findings[0].message and findings[0].evidence["node1.source"] == "launch command"
    assert "NCCL_SOCKET_IFNAME=ens5,eth0" in findings[0].fix
    # an exclusion list selects something on both nodes: fine
    cmd = "NCCL_SOCKET_IFNAME=^lo,docker " + SEED
    docs = [snapshot(0, nic="eth0", launch=_launch(0, cmd)), snapshot(1, nic="ens5", launch=_launch(1, cmd))]
    assert run("CLU002", from_snapshots(docs))[0] is Status.PASS


def test_per_node_names_that_exist_pass_but_unequal_gloo_counts_fail() -> None:
    docs = [snapshot(0, nic="eth0"), snapshot(1, nic="ens5")]
    docs[0]["facts"]["env"]["GLOO_SOCKET_IFNAME"] = "eth0"
    docs[1]["facts"]["env"]["GLOO_SOCKET_IFNAME"] = "ens5"
    assert run("CLU002", from_snapshots(docs))[0] is Status.PASS
    docs[0]["facts"]["env"]["GLOO_SOCKET_IFNAME"] = "eth0,lo"
    status, findings, _ = run("CLU002", from_snapshots(docs))
    assert status is Status.FAIL and "different number of interfaces" in findings[0].message


def test_interface_matching_follows_each_library() -> None:
    names = ["lo", "eth0", "eth10", "ens5", "docker0"]
    assert clu.interface_matches("eth1", "prefix", names) == ["eth10"]
    assert clu.interface_matches("=eth1", "prefix", names) == []
    assert clu.interface_matches("^lo,docker", "prefix", names) == ["eth0", "eth10", "ens5"]
    assert clu.interface_matches("eth", "exact", names) == []
    assert clu.interface_matches("^lo", "exact", names) == []
    assert clu.interface_matches("ens5", "exact", names) == ["ens5"]


# -- CLU003 / CLU004 ------------------------------------------------------------------------------
def test_version_skew_names_each_node_and_the_fix() -> None:
    docs = [snapshot(0), snapshot(1), snapshot(2)]
    docs[2]["facts"]["packages"] = dict(docs[2]["facts"]["packages"], torch="2.8.0", sglang=None)
    docs[1]["facts"]["gpu"] = dict(docs[1]["facts"]["gpu"], driver="570.172.08")
    status, findings, _ = run("CLU003", from_snapshots(docs))
    assert status is Status.FAIL
    by = {f.subject: f for f in findings}
    torch = by["packages=torch"]
    assert torch.severity is Severity.ERROR and "2.8.0 on node 2 (gpu-node-2)" in torch.message
    assert torch.evidence["majority"] == "2.9.1" and "pip install 'torch==2.9.1'" in torch.fix and "node 2" in torch.fix
    assert "not installed" in by["packages=sglang"].message
    assert "580.95.05" in by["gpu=driver"].fix and by["gpu=driver"].evidence["node1.version"] == "570.172.08"


def test_gpu_inventory_differences() -> None:
    gpu0 = {"ok": True, "driver": "580.95.05", "cuda_driver": 13000, "devices": _devices(8)}
    gpu1 = {"ok": True, "driver": "580.95.05", "cuda_driver": 13000, "devices": _devices(7, persistence=False)}
    gpu1["devices"][3] = dict(gpu1["devices"][3], mig_current=True)
    status, findings, _ = run("CLU004", pair(gpu=(gpu0, gpu1)))
    assert status is Status.FAIL
    by = {f.subject: f for f in findings}
    assert by["gpu.count"].severity is Severity.ERROR and by["gpu.count"].evidence["node1.count"] == 7
    assert by["gpu.mig_current"].severity is Severity.ERROR and "nvidia-smi -mig 0" in by["gpu.mig_current"].fix
    assert by["gpu.persistence"].severity is Severity.WARNING
    assert "gpu.name" not in by and "gpu.memory_total" not in by


# -- CLU005 model ---------------------------------------------------------------------------------
def test_model_fingerprint_difference_and_missing_copy() -> None:
    status, findings, _ = run("CLU005", pair(model=({"path": "/m", "fingerprint": "sha256:aaaa"}, {"path": "/m", "fingerprint": "sha256:bbbb"})))
    assert status is Status.FAIL and "differs" in findings[0].message and findings[0].evidence["node1.fingerprint"] == "sha256:bbbb"
    docs = [snapshot(0), snapshot(1), snapshot(2)]
    del docs[2]["facts"]["model"]
    status, findings, _ = run("CLU005", from_snapshots(docs))
    assert status is Status.FAIL and "missing on node 2 (gpu-node-2)" in findings[0].message


def test_model_without_fingerprint_skips_that_part_but_deep_hashes_compare() -> None:
    status, _, reason = run("CLU005", pair(model=({"path": "/m"}, {"path": "/m"})))
    assert status is Status.SKIP and "fingerprint" in reason
    deep = ({"path": "/m", "fingerprint": "f", "sha256": {"model-00001-of-00096.safetensors": "ab"}},
            {"path": "/m", "fingerprint": "f", "sha256": [{"file": "model-00001-of-00096.safetensors", "sha256": "cd"}]})
    status, findings, _ = run("CLU005", pair(model=deep))
    assert status is Status.FAIL and findings[0].subject == "shard=model-00001-of-00096.safetensors"


# -- CLU006 / CLU007 ------------------------------------------------------------------------------
def test_engine_env_differences_but_not_per_node_variables() -> None:
    env0 = {"NCCL_IB_DISABLE": "0", "TRITON_CACHE_DIR": "/tmp/a", "GLOO_SOCKET_IFNAME": "eth0", "CUDA_DEVICE_MAX_CONNECTIONS": "8", "HOME": "/a"}
    env1 = {"NCCL_IB_DISABLE": "1", "TRITON_CACHE_DIR": "/tmp/b", "GLOO_SOCKET_IFNAME": "ens5", "HOME": "/b"}
    status, findings, _ = run("CLU006", pair(env=(env0, env1)))
    assert status is Status.FAIL
    by = {f.subject: f for f in findings}
    assert set(by) == {"env=NCCL_IB_DISABLE", "env=CUDA_DEVICE_MAX_CONNECTIONS"}  # not *_SOCKET_IFNAME, *_CACHE_DIR, HOME
    assert by["env=NCCL_IB_DISABLE"].severity is Severity.ERROR
    assert by["env=CUDA_DEVICE_MAX_CONNECTIONS"].severity is Severity.WARNING and "unset" not in by["env=CUDA_DEVICE_MAX_CONNECTIONS"].fix


def test_launch_differs_beyond_node_rank() -> None:
    assert run("CLU007", pair())[0] is Status.PASS  # node ranks 0 and 1 differ by design
    other = SEED.replace("--mem-fraction-static 0.85", "--mem-fraction-static 0.80")
    status, findings, _ = run("CLU007", pair(launch=(_launch(0), _launch(1, other))))
    assert status is Status.FAIL
    assert "--mem-fraction-static" in findings[0].message and findings[0].evidence["node1.--mem-fraction-static"] == 0.8


# -- live-only facts, as data -----------------------------------------------------------------------
def _live(**over: Any) -> dict[str, Any]:
    cluster = from_snapshots([snapshot(0), snapshot(1)])
    cluster.update(mode="live", self_rank=0, token="t0k3n", store={"host": "10.0.0.1", "port": 5001})
    cluster.update(over)
    return cluster


def test_clock_skew_above_one_second() -> None:
    clock = {"measured": True, "threshold_s": 1.0, "reference_rank": 0, "nodes": [
        {"node_rank": 0, "offset_s": 0.0, "uncertainty_s": 0.0},
        {"node_rank": 1, "offset_s": -2.5, "uncertainty_s": 0.001, "rtt_s": 0.002}]}
    status, findings, _ = run("CLU008", _live(clock=clock))
    assert status is Status.FAIL and findings[0].severity is Severity.WARNING
    assert "-2.500 s off node 0" in findings[0].message and "set-ntp" in findings[0].fix
    clock["nodes"][1]["offset_s"] = 0.9
    assert run("CLU008", _live(clock=clock))[0] is Status.PASS


def test_bootstrap_failure_names_interfaces_and_quotes_gloo() -> None:
    error = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find address for: eth0"
    boot = {"ran": True, "ok": False, "timeout_s": 30, "nodes": [
        {"node_rank": 0, "hostname": "gpu-node-0", "ifname": "eth0", "source": "env GLOO_SOCKET_IFNAME", "ok": False,
         "error": "stopped early: node 1 failed first", "aborted": True},
        {"node_rank": 1, "hostname": "gpu-node-1", "ifname": "eth0", "source": "env GLOO_SOCKET_IFNAME", "ok": False, "error": error}]}
    docs = [snapshot(0, nic="eth0"), snapshot(1, nic="ens5")]
    cluster = from_snapshots(docs)
    cluster.update(mode="live", bootstrap=boot)
    status, findings, _ = run("CLU009", cluster)
    assert status is Status.FAIL
    f = findings[0]
    assert "GLOO_SOCKET_IFNAME=eth0" in f.message and "Unable to find address for: eth0" in f.message and "node 1" in f.message
    assert "GLOO_SOCKET_IFNAME=ens5" in f.fix and f.evidence["node1.ifname"] == "eth0"
    boot_ok = copy.deepcopy(boot)
    for e in boot_ok["nodes"]:
        e.update(ok=True, error=None)
    boot_ok["ok"] = True
    cluster.update(bootstrap=boot_ok)
    assert run("CLU009", cluster)[0] is Status.PASS


def test_nccl_results() -> None:
    def node(r: int, ok: bool, peak: float | None, error: str | None = None) -> dict[str, Any]:
        return {"node_rank": r, "hostname": f"gpu-node-{r}", "ok": ok, "result": {
            "ok": ok, "error": error, "world_size": 8, "busbw_peak_GBps": peak, "expected_busbw_GBps": 360.0,
            "expected_basis": "NVLink 4 / NVSwitch (H200 SXM)", "global_busbw_peak_GBps": None}}

    good = {"ran": True, "across_nodes": False, "nodes": [node(0, True, 372.0), node(1, True, 365.0)]}
    assert run("CLU010", _live(nccl=good))[0] is Status.PASS
    bad = {"ran": True, "across_nodes": False, "nodes": [node(0, True, 372.0), node(1, True, 41.0), node(2, False, None, "NCCL error: unhandled system error")]}
    status, findings, _ = run("CLU010", _live(nccl=bad))
    assert status is Status.FAIL
    by = {f.subject: f for f in findings}
    assert by["node_rank=1"].severity is Severity.WARNING and by["node_rank=1"].evidence["busbw_peak_GBps"] == 41.0
    assert by["node_rank=2"].severity is Severity.ERROR and "unhandled system error" in by["node_rank=2"].message
    assert run("CLU010", _live(nccl=None))[0] is Status.SKIP


def test_live_rendezvous_errors_become_findings() -> None:
    cluster = _live(missing_ranks=[1], nodes=from_snapshots([snapshot(0)])["nodes"],
                    errors=["node rank 1 never joined within 5 s (expected 2 nodes, 1 joined)",
                            "the store at 10.0.0.1:5001 belongs to another preflight (its run token is x)"])
    status, findings, _ = run("CLU001", cluster)
    assert status is Status.FAIL
    messages = [f.message for f in findings]
    assert len(messages) == 2 and "node rank 1 never joined" in messages[0] and "another preflight" in messages[1]
    assert "--node-rank 1" in findings[0].fix and "5001" in findings[0].fix


# -- pure helpers -----------------------------------------------------------------------------------
def test_addresses_ports_and_interface_choice() -> None:
    assert parse_addr("10.0.0.1:5000") == ("10.0.0.1", 5000)
    assert parse_addr("[fd00::1]:5000") == ("fd00::1", 5000)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_addr("10.0.0.1")
    assert default_store_port(5000) == 5001
    facts = snapshot(1, nic="ens5")["facts"]
    assert choose_gloo_interface(facts) == ("ens5", "k3doctor (route to the rendezvous address)")
    facts["env"]["GLOO_SOCKET_IFNAME"] = "eth0"
    assert choose_gloo_interface(facts) == ("eth0", "env GLOO_SOCKET_IFNAME")
    assert choose_gloo_interface(facts, "bond0") == ("bond0", "option --gloo-ifname")
    assert choose_gloo_interface({}) == (None, "gloo default (hostname resolution)")


def test_bus_bandwidth_follows_nccl_tests() -> None:
    algbw, busbw = bus_bandwidth(1 << 30, 0.01, 8)
    assert algbw == pytest.approx(107.374, rel=1e-3) and busbw == pytest.approx(algbw * 14 / 8)
    assert bus_bandwidth(1 << 20, 0.001, 1)[1] == 0.0
    assert parse_size("64K") == 65536 and parse_size("1G") == 1 << 30 and parse_size("512") == 512
    assert expected_busbw("NVIDIA H200", 8, "nccl")[0] == 360.0
    assert expected_busbw("NVIDIA H200", 1, "nccl")[0] is None


def test_without_torch_the_multinode_mode_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "torch.distributed", None)
    with pytest.raises(ClusterUnavailable, match=r"pip install 'k3doctor\[distributed\]'") as info:
        gather(snapshot(0), ClusterOptions(nnodes=2, node_rank=0, dist_init_addr="127.0.0.1:5000"))
    assert "CPU build" in str(info.value)
