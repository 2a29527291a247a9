"""NET checks on facts built from the recorded node trees (node-a: eth0/eth1/eth10/ib0/docker0,
node-b: ens5f0np0/ens5f1np1) — the seed's "different NIC names per node" story."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from k3doctor import testing
from k3doctor.checks import net as N
from k3doctor.model import Severity, Skip
from k3doctor.probes.net import scan_infiniband, scan_interfaces

HOST = Path(__file__).resolve().parent.parent / "fixtures" / "host"


def net_fact(node: str, hostname: dict[str, Any] | None = None) -> dict[str, Any]:
    addrs = json.loads((HOST / node / "addrs.json").read_text())
    itfs, errors = scan_interfaces(str(HOST / node / "sys"), addrs=addrs, stats={})
    ib, _ = scan_infiniband(str(HOST / node / "sys"))
    return {"interfaces": itfs, "infiniband": ib, "errors": errors,
            "hostname": hostname or {"name": node, "addresses": ["10.0.0.9"], "loopback": False, "error": None}}


def run(check: type, **facts: Any) -> list:
    options = facts.pop("options", {})
    try:
        return testing.run(check, options, **facts)
    except Skip as exc:
        return [("skip", exc.reason)]


def launch(env: dict[str, str], nnodes: int = 2, **kw: Any) -> dict[str, Any]:
    return {"engine": "sglang", "nnodes": nnodes, "node_rank": 1, "tp": 16, "env": env, **kw}


def test_pin_for_node_a_breaks_node_b() -> None:
    env = {"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"}
    assert run(N.NET001, net=net_fact("node-a"), launch=launch(env)) == []
    found = run(N.NET001, net=net_fact("node-b"), launch=launch(env))
    assert {f.subject for f in found} == {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}
    assert all(f.severity is Severity.ERROR for f in found)
    assert "no prefix 'eth0' on this node" in found[0].message and "ens5f0np0" in found[0].message


def test_fix_names_the_interface_that_routes_to_the_head() -> None:
    rdv = {"addr": "10.0.0.1:5000", "interface": "ens5f0np0", "source_ip": "10.0.0.2", "host": "10.0.0.1"}
    found = run(N.NET001, net=net_fact("node-b"), rendezvous=rdv, launch=launch({"GLOO_SOCKET_IFNAME": "eth0"}))
    assert found[0].fix.startswith("on this node: export GLOO_SOCKET_IFNAME='ens5f0np0'")


def test_gloo_caret_lo_is_invalid_but_fine_for_nccl() -> None:
    found = run(N.NET001, net=net_fact("node-a"), launch=launch({"NCCL_SOCKET_IFNAME": "^lo,docker", "GLOO_SOCKET_IFNAME": "^lo"}))
    assert [f.subject for f in found] == ["GLOO_SOCKET_IFNAME"]
    assert "exact interface names only" in found[0].message


def test_prefix_trap_and_down_interface() -> None:
    found = run(N.NET001, net=net_fact("node-a"), launch=launch({"NCCL_SOCKET_IFNAME": "eth1"}))
    assert [f.severity for f in found] == [Severity.WARNING]
    assert "eth1, eth10" in found[0].message and "=eth1" in found[0].fix
    found = run(N.NET001, net=net_fact("node-a"), launch=launch({"GLOO_SOCKET_IFNAME": "eth10"}))
    assert found[0].severity is Severity.ERROR and "eth10 is down" in found[0].message


def test_garbage_values_become_findings() -> None:
    for raw in ("", "eth0,,", "eth0,^lo", "e\tth0"):
        found = run(N.NET001, net=net_fact("node-a"), launch=launch({"NCCL_SOCKET_IFNAME": raw}))
        assert found and all(f.severity is Severity.ERROR for f in found), raw


def test_tp_socket_ifname_checked() -> None:
    found = run(N.NET001, net=net_fact("node-b"), launch=launch({"TP_SOCKET_IFNAME": "eth0"}))
    assert found[0].subject == "TP_SOCKET_IFNAME"


def test_env_fact_used_without_launch() -> None:
    found = run(N.NET001, net=net_fact("node-b"), env={"GLOO_SOCKET_IFNAME": "eth0"})
    assert found and found[0].subject == "GLOO_SOCKET_IFNAME"


def test_ib_hca() -> None:
    assert run(N.NET002, net=net_fact("node-a"), launch=launch({}))[0][0] == "skip"
    assert run(N.NET002, net=net_fact("node-a"), launch=launch({"NCCL_IB_HCA": "=mlx5_0"})) == []
    found = run(N.NET002, net=net_fact("node-a"), launch=launch({"NCCL_IB_HCA": "mlx5_1"}))
    msgs = [f.message for f in found]
    assert any("matches mlx5_1, mlx5_10" in m for m in msgs)  # prefix trap
    assert any("mlx5_1 port(s) 1 not ACTIVE" in m for m in msgs)
    found = run(N.NET002, net=net_fact("node-a"), launch=launch({"NCCL_IB_HCA": "mlx5_7,=mlx5_0:2"}))
    assert any("no HCA 'mlx5_7'" in f.message for f in found)
    found = run(N.NET002, net=net_fact("node-b"), launch=launch({"NCCL_IB_HCA": "mlx5_0"}))
    assert found and "no HCA under /sys/class/infiniband" in found[0].message


def test_unset_pins_with_several_candidates() -> None:
    found = run(N.NET003, net=net_fact("node-b"), launch=launch({}))
    assert {f.subject for f in found} == {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}
    assert all(f.severity is Severity.WARNING for f in found)
    assert "ens5f0np0, ens5f1np1" in found[0].message
    assert run(N.NET003, net=net_fact("node-b"), launch=launch({}, nnodes=1))[0][0] == "skip"
    pinned = {"NCCL_SOCKET_IFNAME": "=ens5f0np0", "GLOO_SOCKET_IFNAME": "ens5f0np0"}
    assert run(N.NET003, net=net_fact("node-b"), launch=launch(pinned)) == []


def test_hostname_loopback_trap() -> None:
    lo = {"name": "gpu-node-1", "addresses": ["127.0.1.1"], "loopback": True, "error": None}
    found = run(N.NET004, net=net_fact("node-b", lo), launch=launch({}))
    assert found[0].severity is Severity.ERROR and "127.0.1.1" in found[0].message
    assert run(N.NET004, net=net_fact("node-b", lo), launch=launch({"GLOO_SOCKET_IFNAME": "ens5f0np0"})) == []
    assert run(N.NET004, net=net_fact("node-b", lo), launch=launch({}, nnodes=1))[0].severity is Severity.INFO
    bad = {"name": "x", "addresses": [], "loopback": False, "error": "cannot resolve 'x'"}
    assert "does not resolve" in run(N.NET004, net=net_fact("node-b", bad), launch=launch({}))[0].message


@pytest.mark.parametrize(
    "rdv, sev, side, fix",
    [
        ({"error": "127.0.0.1:5000 refused the connection", "side": "head", "reachable": False,
          "error_kind": "refused"}, Severity.WARNING, "head", "start the head"),
        ({"error": "no answer within 3 s", "side": "network", "reachable": False, "error_kind": "timeout"},
         Severity.ERROR, "network", "open TCP port 5000"),
        ({"error": "port 5000 is already in use", "side": "head", "bindable": False, "error_kind": "port_in_use"},
         Severity.ERROR, "head", "ss -ltnp"),
        ({"error": "10.0.0.1 is not an address of this node", "side": "head", "bindable": False,
          "error_kind": "addr_not_local"}, Severity.ERROR, "head", "--node-rank"),
        ({"error": "cannot resolve 'nohost'", "side": "this node", "error_kind": "unresolved"},
         Severity.ERROR, "this node", "/etc/hosts"),
    ],
)
def test_rendezvous_reports_the_failing_side(rdv: dict, sev: Severity, side: str, fix: str) -> None:
    found = run(N.NET005, rendezvous={"addr": "h:5000", "host": "h", "port": 5000, **rdv}, launch=launch({}))
    assert found[-1].severity is sev and f"failing side: {side}" in found[-1].message
    assert fix in found[-1].fix


def test_rendezvous_loopback_in_multinode() -> None:
    found = run(N.NET005, rendezvous={"addr": "localhost:5000", "loopback": True, "resolved": ["127.0.0.1"]},
                launch=launch({}))
    assert found[0].severity is Severity.ERROR and "loopback" in found[0].message


def test_mtu_mismatch_local_and_across_nodes() -> None:
    rdv = {"interface": "eth0", "host": "10.0.0.1"}
    found = run(N.NET006, net=net_fact("node-a"), rendezvous=rdv, launch=launch({"NCCL_SOCKET_IFNAME": "=eth1"}))
    assert found and "eth0=9000" in found[0].message and "eth1=1500" in found[0].message
    assert run(N.NET006, net=net_fact("node-a"), rendezvous=rdv, launch=launch({"NCCL_SOCKET_IFNAME": "=eth0"})) == []
    cluster = {"nodes": [
        {"node_rank": 0, "hostname": "a", "facts": {"net": net_fact("node-a"), "rendezvous": {"interface": "eth0"}}},
        {"node_rank": 1, "hostname": "b", "facts": {"net": net_fact("node-b"), "rendezvous": {"interface": "ens5f0np0"}}},
    ]}
    found = run(N.NET006, net=net_fact("node-b"), cluster=cluster, launch=launch({}))
    assert found[-1].severity is Severity.ERROR and "a:eth0 mtu 9000" in found[-1].message


def test_pinned_interface_not_on_route_to_head() -> None:
    rdv = {"interface": "eth0", "host": "10.0.0.1", "source_ip": "10.0.0.1"}
    found = run(N.NET007, net=net_fact("node-a"), rendezvous=rdv, launch=launch({"GLOO_SOCKET_IFNAME": "eth1"}))
    assert found[0].severity is Severity.WARNING and "reached via eth0" in found[0].message
    found = run(N.NET007, net=net_fact("node-a"), rendezvous=rdv, launch=launch({"NCCL_SOCKET_IFNAME": "ib"}))
    assert found[0].severity is Severity.INFO
    assert run(N.NET007, net=net_fact("node-a"), rendezvous={"interface": None}, launch=launch({}))[0][0] == "skip"


def test_docstrings_have_the_three_sections() -> None:
    for check in N.CHECKS:
        doc = check.doc()
        assert "What it checks" in doc and "Why it matters" in doc and "How to fix" in doc, check.code


def test_exclusion_that_leaves_nothing_usable() -> None:
    found = run(N.NET001, net=net_fact("node-b"), launch=launch({"NCCL_SOCKET_IFNAME": "^ens,lo"}))
    assert found and "excludes every interface" in found[0].message
    found = run(N.NET001, net=net_fact("node-a"), launch=launch({"NCCL_SOCKET_IFNAME": "^eth,ib,veth,lo"}))
    assert found and "cannot carry cross-node traffic" in found[0].message  # only docker0 is left
