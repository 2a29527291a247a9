"""``k3doctor env`` decides its exports from readings alone (no machine access in the decision)."""

from __future__ import annotations

from typing import Any

from k3doctor.hostenv.exports import node_exports
from k3doctor.probes.node_env import HeadRoute, NodeReadings
from k3doctor.reporters.exports import render_exports

ETH = {"name": "ens1f0", "kind": "physical", "operstate": "up", "carrier": 1, "ipv4": ["10.0.0.5"], "ipv6": []}
IB = {"name": "ibp1", "kind": "physical", "operstate": "up", "carrier": 1, "ipv4": ["192.168.9.5"], "ipv6": []}
LOCAL = {"fs_class": "local", "fstype": "tmpfs", "exists": True, "writable": True, "error": None}
NFS = {"fs_class": "network", "fstype": "nfs4", "exists": True, "writable": True, "error": None}
ENV = {"HOME": "/home/u", "USER": "u", "LOCAL_RANK": "3"}


def decide(node: NodeReadings, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"env": ENV, "engine": "any", "user": "u", "cache_root": None, "rank_var": None,
                            "all_caches": False, **kw}
    return node_exports(node, **args)


def test_the_interface_that_routes_to_the_head_is_pinned_exactly() -> None:
    head = HeadRoute("head:5000", "head", 5000, target="10.0.0.1", source_ip="10.0.0.5", route_interface="ens1f0")
    res = decide(NodeReadings(interfaces=(ETH, IB), head=head, paths={"/tmp": LOCAL}))
    assert res["interface"] == "ens1f0" and res["head"] == {"addr": "head:5000", "host": "head", "port": 5000, "ip": "10.0.0.1"}
    assert res["exports"]["NCCL_SOCKET_IFNAME"] == "=ens1f0" and res["exports"]["GLOO_SOCKET_IFNAME"] == "ens1f0"
    assert res["exports"]["SGLANG_HOST_IP"] == res["exports"]["VLLM_HOST_IP"] == "10.0.0.5"


def test_a_loopback_head_is_not_pinned_and_two_candidates_need_an_address() -> None:
    head = HeadRoute("127.0.0.1:5000", "127.0.0.1", 5000, target="127.0.0.1", source_ip="127.0.0.1", route_interface="lo")
    res = decide(NodeReadings(interfaces=(ETH, IB), head=head, paths={"/tmp": LOCAL}))
    assert res["interface"] is None and "NCCL_SOCKET_IFNAME" not in res["exports"]
    assert any("loopback" in n for n in res["notes"])
    assert any("cannot tell which interface" in e for e in res["errors"])


def test_a_head_error_is_reported_and_the_default_route_is_not_guessed() -> None:
    head = HeadRoute("nosuch:1", "nosuch", 1, error="'nosuch' does not resolve")
    res = decide(NodeReadings(interfaces=(ETH, IB), head=head, default_interface="ens1f0", paths={"/tmp": LOCAL}))
    assert res["interface"] is None and res["errors"] == ["head 'nosuch:1': 'nosuch' does not resolve"]


def test_without_a_head_the_default_route_interface_is_used() -> None:
    res = decide(NodeReadings(interfaces=(ETH, IB), default_interface="ibp1", paths={"/tmp": LOCAL}))
    assert res["interface"] == "ibp1" and res["exports"]["VLLM_HOST_IP"] == "192.168.9.5"


def test_caches_on_nfs_move_to_a_node_local_per_rank_dir_and_the_root_skips_nfs() -> None:
    paths = {"/tmp": NFS, "/var/tmp": LOCAL, "/home/u/.triton/cache": NFS}
    res = decide(NodeReadings(interfaces=(ETH,), paths=paths), engine="sglang")
    assert res["cache_root"] == "/var/tmp" and res["rank"] == "3" and res["rank_var"] == "LOCAL_RANK"
    assert res["exports"]["TRITON_CACHE_DIR"] == "/var/tmp/k3doctor-u/rank3/triton"
    assert "/tmp skipped: on nfs4" in res["notes"]
    text = render_exports(res, "sh", "shell")
    assert text.startswith("# k3doctor env (sh)\n") and "export TRITON_CACHE_DIR='/var/tmp/k3doctor-u/rank3/triton'" in text


def test_a_garbage_rank_variable_is_a_note_and_rank_0() -> None:
    res = decide(NodeReadings(interfaces=(ETH,), paths={"/tmp": LOCAL}), rank_var="MY_RANK", env={**ENV, "MY_RANK": "x"})
    assert res["rank"] == "0" and "--rank-var MY_RANK='x' is not an integer; using 0" in res["notes"]
