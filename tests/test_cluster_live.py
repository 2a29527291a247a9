"""Live multi-node preflight: real processes meeting through torch.distributed's TCPStore.

Every "node" is a separate Python process running :func:`k3doctor.cluster.gather` and then the CLU
checks; on loopback, or — as root where network namespaces are permitted — in namespaces of their
own joined by a veth pair whose ends have different names (``ethA`` / ``ensB``), running the real
Gloo bootstrap across them. Every wait is bounded: each process has a hard timeout and is killed
by the test if it overruns.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():  # pragma: no cover
    pytest.skip("this torch build has no torch.distributed", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent

#: One node: read the spec, optionally simulate a skewed clock or a node that stalls before the
#: bootstrap, run gather + the CLU checks, write the result. Progress goes to stderr.
RUNNER = r'''
import json, subprocess, sys, time
sys.path.insert(0, sys.argv[2])
spec = json.load(open(sys.argv[1]))
from k3doctor import cluster
from k3doctor.cluster import _live
from k3doctor.checks import clu
from k3doctor.facts import Facts
from k3doctor.runner import run_checks

if spec.get("clock_offset"):
    _live._now = lambda: time.time() + spec["clock_offset"]
if spec.get("stall_bootstrap"):
    _live._Live.run_bootstrap = lambda self: time.sleep(3600)
snap = spec["snapshot"]
if spec.get("probe_net"):
    # this namespace's real interfaces, in the net fact's shape
    raw = json.loads(subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True, timeout=10).stdout)
    snap["facts"]["net"] = {"interfaces": [
        {"name": i["ifname"], "kind": "loopback" if i["ifname"] == "lo" else "physical", "operstate": i.get("operstate", "").lower(),
         "ipv4": [a["local"] + "/" + str(a["prefixlen"]) for a in i.get("addr_info", []) if a.get("family") == "inet"],
         "ipv6": []} for i in raw], "infiniband": [], "errors": []}
opts = cluster.ClusterOptions(**spec["opts"])
t0 = time.monotonic()
fact = cluster.gather(snap, opts, lambda m: print("PROGRESS", m, file=sys.stderr, flush=True))
elapsed = time.monotonic() - t0
report = run_checks({c.code: c for c in clu.CHECKS}, [c.code for c in clu.CHECKS], Facts({"cluster": fact}, source="live"))
findings = [f.to_dict() for f in report.findings]
status = {r.code: [r.status.value, r.reason] for r in report.results}
json.dump({"cluster": fact, "findings": findings, "status": status, "elapsed": elapsed}, open(spec["out"], "w"), default=str)
'''

PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def snapshot(rank: int, **facts: Any) -> dict[str, Any]:
    host = f"node-{rank}"
    base: dict[str, Any] = {
        "host": {"hostname": host, "python": "3.11"},
        "packages": {"torch": "2.13.0", "torch_cuda": None, "sglang": "0.5.6", "nvidia-nccl-cu12": "2.27.5"},
        "env": {},
        "rendezvous": {"interface": "lo", "source_ip": "127.0.0.1"},
    }
    base.update(facts)
    return {"schema_version": 1, "kind": "k3doctor.snapshot", "tool": "k3doctor", "version": "0.1.0",
            "hostname": host, "facts": base, "probe_errors": {}}


class Node:
    """One node process; ``ns`` runs it inside a network namespace."""

    def __init__(self, tmp: Path, rank: int, snap: dict[str, Any], opts: dict[str, Any], ns: str | None = None, **extra: Any) -> None:
        runner = tmp / "runner.py"
        if not runner.exists():
            runner.write_text(RUNNER)
        self.out = tmp / f"out{rank}-{id(self)}.json"
        self.err = tmp / f"err{rank}-{id(self)}.txt"
        spec = tmp / f"spec{rank}-{id(self)}.json"
        spec.write_text(json.dumps({"snapshot": snap, "opts": opts, "out": str(self.out), **extra}))
        argv = [PYTHON, str(runner), str(spec), str(ROOT)]
        if ns:
            argv = ["ip", "netns", "exec", ns, *argv]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.err.open("w"), start_new_session=True)

    def result(self, timeout: float) -> dict[str, Any]:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"node process overran {timeout} s; stderr:\n{self.stderr()[-3000:]}")
        assert self.out.exists(), f"node wrote no result (exit {self.proc.returncode}); stderr:\n{self.stderr()[-3000:]}"
        data: dict[str, Any] = json.loads(self.out.read_text())
        data["codes"] = sorted({f["code"] for f in data["findings"]})
        return data

    def stderr(self) -> str:
        return self.err.read_text(errors="replace") if self.err.exists() else ""

    def wait_for(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.stderr().splitlines():
                if text in line:
                    return line
            time.sleep(0.1)
        pytest.fail(f"{text!r} not seen within {timeout} s; stderr:\n{self.stderr()[-3000:]}")

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[list[Node]]:
    started: list[Node] = []
    yield started
    for node in started:
        if node.proc.poll() is None:
            node.kill()


def opts(rank: int, n: int, port: int, timeout: float = 20, host: str = "127.0.0.1", **over: Any) -> dict[str, Any]:
    return {"nnodes": n, "node_rank": rank, "dist_init_addr": f"{host}:{port - 1}", "store_port": port, "timeout": timeout, **over}


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


# -- loopback -----------------------------------------------------------------------------------
def test_three_nodes_join_exchange_and_pass_the_gloo_bootstrap(tmp_path: Path, nodes: list[Node]) -> None:
    port = free_port()
    for r in range(3):
        nodes.append(Node(tmp_path, r, snapshot(r), opts(r, 3, port)))
    results = [n.result(60) for n in nodes]
    tokens = {res["cluster"]["token"] for res in results}
    assert len(tokens) == 1 and None not in tokens
    for r, res in enumerate(results):
        cl = res["cluster"]
        assert cl["self_rank"] == r and cl["missing_ranks"] == [] and cl["errors"] == []
        assert [n["hostname"] for n in cl["nodes"]] == ["node-0", "node-1", "node-2"]
        assert cl["nodes"][(r + 1) % 3]["facts"]["packages"]["torch"] == "2.13.0"
        boot = cl["bootstrap"]
        assert boot["ran"] and boot["ok"], boot
        assert [e["ifname"] for e in boot["nodes"]] == ["lo"] * 3
        assert {e["source"] for e in boot["nodes"]} == {"k3doctor (route to the rendezvous address)"}
        assert cl["clock"]["measured"] and all(abs(e["offset_s"]) < 0.5 for e in cl["clock"]["nodes"])
        assert res["codes"] == [], res["findings"]
        assert res["status"]["CLU009"][0] == "pass"
    log = nodes[0].stderr()
    assert f"run token {tokens.pop()}" in log and "3/3 nodes joined" in log
    assert results[0]["cluster"]["store"]["bind"] == f"127.0.0.1:{port}"


def test_a_node_that_never_joins_is_named_within_the_timeout(tmp_path: Path, nodes: list[Node]) -> None:
    port = free_port()
    for r in (0, 1):
        nodes.append(Node(tmp_path, r, snapshot(r), opts(r, 3, port, timeout=4)))
    for res in (n.result(40) for n in nodes):
        assert res["elapsed"] < 4 + 15, res["elapsed"]
        assert res["cluster"]["missing_ranks"] == [2]
        missing = [f for f in res["findings"] if f["code"] == "CLU001"]
        assert missing and "node rank 2 never joined" in missing[0]["message"] and missing[0]["evidence"]["expected_rank"] == 2
        assert res["status"]["CLU009"][0] == "skip" and "never joined" in res["status"]["CLU009"][1]
    assert "2/3 nodes joined" in nodes[0].stderr()


def test_version_skew_and_clock_skew_are_found_on_every_node(tmp_path: Path, nodes: list[Node]) -> None:
    port = free_port()
    skewed = snapshot(1)
    skewed["facts"]["packages"]["torch"] = "2.12.1"
    nodes.append(Node(tmp_path, 0, snapshot(0), opts(0, 2, port)))
    nodes.append(Node(tmp_path, 1, skewed, opts(1, 2, port), clock_offset=2.5))
    for res in (n.result(60) for n in nodes):
        assert "CLU003" in res["codes"] and "CLU008" in res["codes"]
        torch_f = next(f for f in res["findings"] if f["code"] == "CLU003")
        assert "2.12.1 on node 1 (node-1)" in torch_f["message"]
        offset = res["cluster"]["clock"]["nodes"][1]["offset_s"]
        assert 2.4 < offset < 3.2, offset  # a late wake-up can only overstate the offset
        assert res["cluster"]["bootstrap"]["ok"]


def test_different_nic_names_with_a_pinned_name_fail_fast_with_the_gloo_error(tmp_path: Path, nodes: list[Node]) -> None:
    port = free_port()

    def net(name: str) -> dict[str, Any]:
        return {"interfaces": [{"name": "lo", "kind": "loopback", "operstate": "unknown", "ipv4": ["127.0.0.1/8"], "ipv6": []},
                               {"name": name, "kind": "physical", "operstate": "up", "ipv4": ["192.0.2.7/24"], "ipv6": []}]}

    # the name pinned on both nodes exists (per the net facts) only on node 0 -- and on this host not at all
    for r, nic in ((0, "k3dnic0"), (1, "k3dens5")):
        snap = snapshot(r, net=net(nic), env={"GLOO_SOCKET_IFNAME": "k3dnic0"}, rendezvous={"interface": nic})
        nodes.append(Node(tmp_path, r, snap, opts(r, 2, port, timeout=15)))
    for res in (n.result(60) for n in nodes):
        assert res["elapsed"] < 15 + 10
        assert "CLU002" in res["codes"] and "CLU009" in res["codes"]
        nic = next(f for f in res["findings"] if f["code"] == "CLU002")
        assert "node 1 (node-1) has no interface 'k3dnic0'" in nic["message"]
        assert "node 1 (node-1): GLOO_SOCKET_IFNAME=k3dens5" in nic["fix"] and 'eval "$(k3doctor env)"' in nic["fix"]
        boot = next(f for f in res["findings"] if f["code"] == "CLU009")
        assert "Unable to find address for: k3dnic0" in boot["message"]


def test_a_store_of_another_run_is_not_joined(tmp_path: Path, nodes: list[Node]) -> None:
    port = free_port()
    nodes.append(Node(tmp_path, 0, snapshot(0), opts(0, 2, port, timeout=4, token="runaaaa")))
    nodes.append(Node(tmp_path, 1, snapshot(1), opts(1, 2, port, timeout=4, token="runbbbb")))
    first, second = (n.result(40) for n in nodes)
    assert first["cluster"]["missing_ranks"] == [1] and first["cluster"]["token"] == "runaaaa"
    assert any("belongs to another preflight" in e and "runaaaa" in e for e in second["cluster"]["errors"])
    assert len(second["cluster"]["nodes"]) == 1
    assert "CLU001" in second["codes"]


def test_a_rank_claimed_twice_turns_the_second_node_away(tmp_path: Path, nodes: list[Node]) -> None:
    port = free_port()
    nodes.append(Node(tmp_path, 0, snapshot(0), opts(0, 2, port, timeout=6, bind_all=True)))
    nodes.append(Node(tmp_path, 1, snapshot(1), opts(1, 2, port, timeout=6)))
    time.sleep(1.0)
    twin = snapshot(1)
    twin["hostname"] = "node-1-twin"
    nodes.append(Node(tmp_path, 1, twin, opts(1, 2, port, timeout=6)))
    results = [n.result(60) for n in nodes]
    assert results[0]["cluster"]["store"]["bind"] in (f"[::]:{port}", f"0.0.0.0:{port}")  # --bind-all
    turned_away = [r for r in results[1:] if any("is already taken" in e for e in r["cluster"]["errors"])]
    assert len(turned_away) == 1 and "CLU001" in turned_away[0]["codes"]
    assert results[0]["cluster"]["missing_ranks"] == []


def test_no_rank_zero_is_a_bounded_finding(tmp_path: Path, nodes: list[Node]) -> None:
    port = free_port()
    nodes.append(Node(tmp_path, 1, snapshot(1), opts(1, 2, port, timeout=3)))
    res = nodes[0].result(40)
    assert res["elapsed"] < 3 + 10
    assert res["cluster"]["missing_ranks"] == [0]
    messages = [f["message"] for f in res["findings"] if f["code"] == "CLU001"]
    assert any("node rank 0 never joined" in m for m in messages)
    assert any("could not reach k3doctor's store" in m for m in messages)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill"])
def test_stopping_a_node_leaves_no_gloo_process_behind(tmp_path: Path, nodes: list[Node], sig: signal.Signals) -> None:
    port = free_port()
    nodes.append(Node(tmp_path, 0, snapshot(0), opts(0, 2, port, timeout=120)))
    nodes.append(Node(tmp_path, 1, snapshot(1), opts(1, 2, port, timeout=120), stall_bootstrap=True))
    line = nodes[0].wait_for("bootstrap: test process", 60)
    child = int(line.split("test process", 1)[1].split()[0])
    assert not gone(child)
    time.sleep(0.5)  # the child is inside init_process_group, waiting for node 1 that never comes
    os.kill(nodes[0].proc.pid, sig)
    nodes[0].proc.wait(timeout=15)
    deadline = time.monotonic() + 10
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone(child), f"Gloo test process {child} survived {sig.name} of its node"


def test_nccl_path_across_nodes_with_the_gloo_backend_on_cpu(tmp_path: Path, nodes: list[Node]) -> None:
    """`--nccl` machinery (one process per device, global and per-node groups, busbw) on CPU."""
    port = free_port()
    extra = {"nccl": True, "nccl_args": ["--backend", "gloo", "--nprocs", "2", "--sizes", "64K", "--iters", "2", "--warmup", "1"]}
    for r in range(2):
        nodes.append(Node(tmp_path, r, snapshot(r), opts(r, 2, port, timeout=30, **extra)))
    for res in (n.result(120) for n in nodes):
        nccl = res["cluster"]["nccl"]
        assert nccl["ran"] and nccl["across_nodes"], nccl
        for entry in nccl["nodes"]:
            result = entry["result"]
            assert entry["ok"], result
            assert result["world_size"] == 4 and result["local"]["world_size"] == 2 and result["global"]["world_size"] == 4
            assert result["local"]["results"][0]["correct"] and result["global"]["results"][0]["busbw_GBps"] > 0
        assert res["status"]["CLU010"][0] == "pass"


# -- network namespaces: two "hosts" whose NICs have different names -------------------------------
def _netns_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if not shutil.which("ip"):
        return "iproute2 (`ip`) is not installed"
    name = f"k3dprobe{os.getpid()}"
    res = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True, timeout=10)
    if res.returncode != 0:
        return f"`ip netns add` is not permitted here: {res.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)
    return None


@pytest.fixture
def two_hosts() -> Iterator[tuple[str, str]]:
    """Namespaces A (NIC ``ethA``, 198.18.0.1) and B (NIC ``ensB``, 198.18.0.2) joined by a veth pair
    (198.18.0.0/15 is the benchmarking range; nothing outside these namespaces is addressed)."""
    reason = _netns_reason()
    if reason:
        pytest.skip(reason)
    a, b = f"k3dA{os.getpid()}", f"k3dB{os.getpid()}"
    cmds = [
        ["ip", "netns", "add", a], ["ip", "netns", "add", b],
        ["ip", "link", "add", "ethA", "netns", a, "type", "veth", "peer", "name", "ensB", "netns", b],
        ["ip", "-n", a, "addr", "add", "198.18.0.1/24", "dev", "ethA"], ["ip", "-n", b, "addr", "add", "198.18.0.2/24", "dev", "ensB"],
        ["ip", "-n", a, "link", "set", "lo", "up"], ["ip", "-n", b, "link", "set", "lo", "up"],
        ["ip", "-n", a, "link", "set", "ethA", "up"], ["ip", "-n", b, "link", "set", "ensB", "up"],
    ]
    try:
        for cmd in cmds:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            if res.returncode != 0:
                pytest.skip(f"cannot build the namespaces ({' '.join(cmd)}): {res.stderr.strip()}")
        yield a, b
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def _ns_snapshot(rank: int, nic: str, gloo: str) -> dict[str, Any]:
    return snapshot(rank, env={"GLOO_SOCKET_IFNAME": gloo}, rendezvous={"interface": nic, "source_ip": f"198.18.0.{rank + 1}"})


def test_netns_per_node_gloo_ifname_passes(tmp_path: Path, nodes: list[Node], two_hosts: tuple[str, str]) -> None:
    port = free_port()
    for r, (ns, nic) in enumerate(zip(two_hosts, ("ethA", "ensB"))):
        nodes.append(Node(tmp_path, r, _ns_snapshot(r, nic, nic), opts(r, 2, port, timeout=20, host="198.18.0.1"), ns=ns, probe_net=True))
    for res in (n.result(60) for n in nodes):
        cl = res["cluster"]
        assert cl["bootstrap"]["ok"], cl["bootstrap"]
        assert [e["ifname"] for e in cl["bootstrap"]["nodes"]] == ["ethA", "ensB"]
        assert [e["ipv4"] for e in cl["bootstrap"]["nodes"]] == ["198.18.0.1", "198.18.0.2"]
        assert res["status"]["CLU002"][0] == "pass" and res["status"]["CLU009"][0] == "pass", res["findings"]
    assert "listens on 198.18.0.1:" in nodes[0].stderr()  # the selected interface, not all addresses


def test_netns_hard_coded_name_on_one_node_only_is_found_within_the_timeout(tmp_path: Path, nodes: list[Node], two_hosts: tuple[str, str]) -> None:
    port = free_port()
    timeout = 20
    for r, (ns, nic) in enumerate(zip(two_hosts, ("ethA", "ensB"))):
        nodes.append(Node(tmp_path, r, _ns_snapshot(r, nic, "ethA"), opts(r, 2, port, timeout=timeout, host="198.18.0.1"), ns=ns, probe_net=True))
    for res in (n.result(timeout + 40) for n in nodes):
        assert res["elapsed"] < timeout, res["elapsed"]  # node 1 fails at once; node 0 stops waiting for it
        nic = next(f for f in res["findings"] if f["code"] == "CLU002")
        assert "node 1 (node-1) has no interface 'ethA'" in nic["message"]
        assert "node 0 (node-0): GLOO_SOCKET_IFNAME=ethA" in nic["fix"] and "node 1 (node-1): GLOO_SOCKET_IFNAME=ensB" in nic["fix"]
        boot = next(f for f in res["findings"] if f["code"] == "CLU009")
        assert boot["severity"] == "error" and "Unable to find address for: ethA" in boot["message"]
        assert "GLOO_SOCKET_IFNAME=ensB" in boot["fix"]


# -- GPU ------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_nccl_allreduce_over_the_local_gpus() -> None:
    res = subprocess.run([PYTHON, "-m", "k3doctor.cluster.nccl_test", "--json", "--timeout", "240"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["ok"], summary
    assert summary["local"]["results"] and all(r["correct"] for r in summary["local"]["results"])
    if summary["gpus_per_node"] > 1:
        assert summary["busbw_peak_GBps"] > 0
    print(json.dumps(summary, indent=1))
