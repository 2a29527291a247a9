"""Interface selectors, route tables, HOST:PORT parsing and the sysfs scan on recorded trees."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from k3doctor.hostenv import ifname
from k3doctor.hostenv.netinfo import candidates, is_loopback_ip, parse_hostport, parse_route_table, route_lookup
from k3doctor.probes.net import scan_infiniband, scan_interfaces

HOST = Path(__file__).resolve().parent.parent / "fixtures" / "host"
NAMES = ["eth0", "eth1", "eth10", "ib0", "docker0", "lo"]


def addrs(node: str) -> dict:
    return json.loads((HOST / node / "addrs.json").read_text())


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("eth", ["eth0", "eth1", "eth10"]),
        ("eth1", ["eth1", "eth10"]),  # the prefix trap
        ("=eth1", ["eth1"]),
        ("^docker,lo", ["eth0", "eth1", "eth10", "ib0"]),
        ("^=eth1,lo", ["eth0", "eth10", "ib0", "docker0"]),
        ("eth0,ib", ["eth0", "ib0"]),
        ("ens", []),
    ],
)
def test_nccl_selector_semantics(raw: str, expected: list[str]) -> None:
    sel = ifname.parse_nccl("NCCL_SOCKET_IFNAME", raw)
    assert not sel.errors
    assert ifname.match(sel, NAMES) == expected


@pytest.mark.parametrize(
    "raw, needle",
    [
        ("", "empty"),
        ("eth0,,eth1", "stray comma"),
        ("eth0,^lo", "only special at the very start"),
        ("eth 0", "cannot be an interface name"),
        ("averyveryverylongname0", "longer than 15"),
    ],
)
def test_nccl_selector_garbage_is_an_error_not_a_crash(raw: str, needle: str) -> None:
    sel = ifname.parse_nccl("NCCL_SOCKET_IFNAME", raw)
    assert any(needle in e for e in sel.errors), sel.errors


def test_gloo_rejects_nccl_syntax_and_takes_exact_names() -> None:
    sel = ifname.parse_gloo("GLOO_SOCKET_IFNAME", "^lo")
    assert sel.errors and "Unable to find address for: ^lo" in sel.errors[0]
    ok = ifname.parse_gloo("GLOO_SOCKET_IFNAME", "eth1")
    assert not ok.errors and ifname.match(ok, NAMES) == ["eth1"]  # no prefix match onto eth10
    assert ifname.parse_tp("TP_SOCKET_IFNAME", "eth0,eth1").errors


def test_ib_hca_ports_and_exclusion() -> None:
    sel = ifname.parse_nccl("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:x", hca=True)
    assert sel.exact and sel.items == ("mlx5_0", "mlx5_1") and sel.ports[0] == 1
    assert any("not a number" in e for e in sel.errors)
    assert ifname.parse_nccl("NCCL_IB_HCA", "^mlx5_bond_0", hca=True).exclude


def test_hostport_forms() -> None:
    assert parse_hostport("10.0.0.1:5000") == ("10.0.0.1", 5000, "")
    assert parse_hostport("tcp://head-0:29500") == ("head-0", 29500, "")
    assert parse_hostport("[fd00::1]:5000") == ("fd00::1", 5000, "")
    assert parse_hostport("head:notaport")[2]
    assert parse_hostport("head:70000")[2]
    assert parse_hostport("  ")[2]
    assert parse_hostport("[fd00::1:5000")[2]
    assert is_loopback_ip("127.0.1.1") and is_loopback_ip("::1") and not is_loopback_ip("10.0.0.1")


def test_route_table_longest_prefix() -> None:
    routes = parse_route_table((HOST / "node-a" / "proc" / "net" / "route").read_text())
    assert route_lookup("10.0.0.7", routes)["iface"] == "eth0"
    assert route_lookup("10.1.0.7", routes)["iface"] == "ib0"
    assert route_lookup("8.8.8.8", routes)["iface"] == "eth1"  # default route
    assert route_lookup("not-an-ip", routes) is None


def test_h200_reading_scan() -> None:
    itfs, errors = scan_interfaces(str(HOST / "h200" / "sys"), addrs={}, stats={})
    by = {i["name"]: i for i in itfs}
    assert set(by) == {"eth0", "ifb0", "ifb1", "lo"}
    assert by["eth0"]["kind"] == "physical" and by["eth0"]["mtu"] == 1400 and by["eth0"]["speed_mbps"] is None
    assert by["ifb0"]["kind"] == "virtual" and by["ifb0"]["carrier"] is None  # EINVAL on the real node
    assert by["lo"]["kind"] == "loopback" and by["lo"]["type"] == 772
    assert errors == []
    assert scan_infiniband(str(HOST / "h200" / "sys")) == ([], [])


def test_node_a_scan_kinds_candidates_and_vanished_interface() -> None:
    itfs, errors = scan_interfaces(str(HOST / "node-a" / "sys"), addrs=addrs("node-a"), stats={})
    by = {i["name"]: i for i in itfs}
    assert "vanished0" not in by and any("vanished0" in e and "vanished" in e for e in errors)
    assert by["docker0"]["kind"] == "virtual" and by["veth1a2b3c"]["kind"] == "virtual"
    assert by["ib0"]["type"] == 32 and by["ib0"]["kind"] == "physical"
    assert [c["name"] for c in candidates(itfs)] == ["eth0", "eth1", "ib0"]  # eth10 down, docker0 plumbing
    ib, ib_errors = scan_infiniband(str(HOST / "node-a" / "sys"))
    hcas = {h["hca"]: h for h in ib}
    assert hcas["mlx5_0"]["ports"][0]["state"] == "4: ACTIVE" and hcas["mlx5_0"]["ports"][0]["netdevs"] == ["ib0"]
    assert hcas["mlx5_1"]["ports"][0]["link_layer"] == "Ethernet"
    assert ib_errors == []


def test_unreadable_sysfs_is_an_error_entry(tmp_path: Path) -> None:
    itfs, errors = scan_interfaces(str(tmp_path / "nope"), addrs={}, stats={})
    assert itfs == [] and "cannot list" in errors[0]
    # an interface directory whose attributes cannot be read
    (tmp_path / "class" / "net" / "weird0").mkdir(parents=True)
    itfs, errors = scan_interfaces(str(tmp_path), addrs={}, stats={})
    assert itfs[0]["name"] == "weird0" and itfs[0]["mtu"] is None
    assert any("unreadable" in e for e in errors)


def test_psutil_only_interfaces_are_reported() -> None:
    itfs, errors = scan_interfaces(str(HOST / "h200" / "sys"), addrs={"wg0": {"ipv4": ["10.9.0.1"], "ipv6": []}}, stats={})
    assert any(i["name"] == "wg0" for i in itfs) and any("wg0" in e for e in errors)


def test_live_scan_matches_this_kernel() -> None:
    itfs, _ = scan_interfaces()
    assert {i["name"] for i in itfs} >= set(os.listdir("/sys/class/net"))
