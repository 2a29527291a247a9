"""NET checks and ``k3doctor env`` against the real kernel, in network namespaces.

Two "nodes" joined by a veth pair whose ends are named differently — ``eth0`` on the head (node
rank 0) and ``ens5f0np0`` on the worker — and a third namespace whose interface is named with
``$``, a backtick and both quotes. Traffic stays inside these namespaces. Skipped (with the
reason) unless running as root with ``ip netns`` permitted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
TAG = f"k3d{os.getpid() % 100000}"
HEAD, WORKER, ODD = f"{TAG}h", f"{TAG}w", f"{TAG}o"
ODD_NAME = "e$`'\"x"
PORT = 29511


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20, check=check)


def _netns_unavailable() -> str:
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "iproute2 `ip` not installed"
    probe = f"{TAG}p"
    r = _ip("netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"`ip netns add` not permitted here: {r.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return ""


_WHY = _netns_unavailable()
pytestmark = pytest.mark.skipif(bool(_WHY), reason=_WHY or "netns available")


@pytest.fixture(scope="module")
def nodes() -> Iterator[None]:
    made: list[str] = []
    try:
        for ns in (HEAD, WORKER, ODD):
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        # head eth0 <-> worker ens5f0np0
        _ip("link", "add", f"{TAG}a", "type", "veth", "peer", "name", f"{TAG}b")
        _ip("link", "set", f"{TAG}a", "netns", HEAD)
        _ip("link", "set", f"{TAG}b", "netns", WORKER)
        _ip("-n", HEAD, "link", "set", f"{TAG}a", "name", "eth0")
        _ip("-n", WORKER, "link", "set", f"{TAG}b", "name", "ens5f0np0")
        _ip("-n", HEAD, "addr", "add", "10.77.0.1/24", "dev", "eth0")
        _ip("-n", WORKER, "addr", "add", "10.77.0.2/24", "dev", "ens5f0np0")
        _ip("-n", WORKER, "link", "set", "ens5f0np0", "mtu", "9000")
        # head eth1 <-> odd-named interface
        _ip("link", "add", f"{TAG}c", "type", "veth", "peer", "name", f"{TAG}d")
        _ip("link", "set", f"{TAG}c", "netns", HEAD)
        _ip("link", "set", f"{TAG}d", "netns", ODD)
        _ip("-n", HEAD, "link", "set", f"{TAG}c", "name", "eth1")
        _ip("-n", ODD, "link", "set", f"{TAG}d", "name", ODD_NAME)
        _ip("-n", HEAD, "addr", "add", "10.78.0.1/24", "dev", "eth1")
        _ip("-n", ODD, "addr", "add", "10.78.0.2/24", "dev", ODD_NAME)
        for ns, dev in ((HEAD, "eth0"), (HEAD, "eth1"), (WORKER, "ens5f0np0"), (ODD, ODD_NAME)):
            _ip("-n", ns, "link", "set", dev, "up")
        yield
    finally:
        for ns in made:
            _ip("netns", "del", ns, check=False)


def in_ns(ns: str, code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "MASTER_ADDR", "TRITON_CACHE_DIR"):
        env.pop(var, None)
    return subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code, *args],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT))


CHECKS_SCRIPT = r"""
import json, sys
from k3doctor.facts import Facts
from k3doctor.model import Skip
from k3doctor.checks import net
from k3doctor.check import call_run
opts = json.loads(sys.argv[1]); launch = json.loads(sys.argv[2])
facts = Facts(live=True, options=opts)
facts.set("launch", launch)
out = {"rendezvous": facts.get("rendezvous"), "findings": {}}
for c in net.CHECKS:
    try:
        out["findings"][c.code] = [[f.severity.label, f.message] for f in call_run(c(), facts)]
    except Skip as e:
        out["findings"][c.code] = "skip: " + e.reason
print(json.dumps(out))
"""


def run_checks(ns: str, node_rank: int, env: dict[str, str]) -> dict:
    opts = {"dist_init_addr": f"10.77.0.1:{PORT}", "node_rank": node_rank}
    launch = {"engine": "sglang", "nnodes": 2, "node_rank": node_rank, "tp": 16,
              "dist_init_addr": f"10.77.0.1:{PORT}", "env": env}
    r = in_ns(ns, CHECKS_SCRIPT, json.dumps(opts), json.dumps(launch))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_worker_sees_its_own_nic_name_and_the_route(nodes: None) -> None:
    res = run_checks(WORKER, 1, {"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"})
    rdv = res["rendezvous"]
    assert rdv["interface"] == "ens5f0np0" and rdv["source_ip"] == "10.77.0.2" and rdv["role"] == "worker"
    net001 = res["findings"]["NET001"]
    assert [sev for sev, _ in net001] == ["error", "error"]
    assert all("ens5f0np0" in msg for _, msg in net001)
    # nothing listens on the head yet: the head side is reported, as a warning
    assert any("failing side: head" in m and sev == "warning" for sev, m in res["findings"]["NET005"])


def test_head_pins_pass_and_port_is_bindable(nodes: None) -> None:
    res = run_checks(HEAD, 0, {"NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0"})
    assert res["rendezvous"]["bindable"] is True and res["rendezvous"]["interface"] == "eth0"
    assert res["findings"]["NET001"] == [] and res["findings"]["NET005"] == []


LISTEN = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.1", int(sys.argv[1]))); s.listen(8); print("ready", flush=True)
time.sleep(30)
"""


def test_worker_reaches_head_and_busy_port_fails_on_head(nodes: None) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    srv = subprocess.Popen(["ip", "netns", "exec", HEAD, sys.executable, "-c", LISTEN, str(PORT)],
                           stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert srv.stdout is not None and srv.stdout.readline().strip() == "ready"
        res = run_checks(WORKER, 1, {"NCCL_SOCKET_IFNAME": "=ens5f0np0", "GLOO_SOCKET_IFNAME": "ens5f0np0"})
        assert res["rendezvous"]["reachable"] is True
        assert res["findings"]["NET001"] == [] and res["findings"]["NET005"] == []
        head = run_checks(HEAD, 0, {})
        assert head["rendezvous"]["bindable"] is False
        assert any("already in use" in m and "failing side: head" in m for _, m in head["findings"]["NET005"])
    finally:
        srv.kill()
        srv.wait(timeout=10)


ENV_SCRIPT = "from k3doctor.commands.env import command; command()"


def test_k3doctor_env_per_node(nodes: None) -> None:
    outs = {}
    for ns, want_if, want_ip in ((HEAD, "eth0", "10.77.0.1"), (WORKER, "ens5f0np0", "10.77.0.2")):
        r = in_ns(ns, ENV_SCRIPT, "--dist-init-addr", f"10.77.0.1:{PORT}", "--shell", "bash", "--format", "json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["exports"]["GLOO_SOCKET_IFNAME"] == want_if
        assert doc["exports"]["NCCL_SOCKET_IFNAME"] == "=" + want_if
        assert doc["exports"]["SGLANG_HOST_IP"] == want_ip
        outs[ns] = doc
    assert outs[HEAD]["interface"] != outs[WORKER]["interface"]


@pytest.mark.parametrize("shell", ["bash", "sh", "dash", "zsh"])
def test_env_output_is_eval_safe_with_hostile_interface_name(nodes: None, shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} not installed")
    fmt_shell = "sh" if shell == "dash" else shell
    r = in_ns(ODD, ENV_SCRIPT, "--dist-init-addr", f"10.78.0.1:{PORT}", "--shell", fmt_shell)
    assert r.returncode == 0, r.stderr
    # feed the script as the eval argument, the way users run it
    out = subprocess.run([shell, "-c", 'eval "$K3D_OUT"; printf "%s|%s|%s" "$GLOO_SOCKET_IFNAME" '
                                       '"$NCCL_SOCKET_IFNAME" "$SGLANG_HOST_IP"'],
                         env={"K3D_OUT": r.stdout, "PATH": os.environ.get("PATH", "")},
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"{ODD_NAME}|={ODD_NAME}|10.78.0.2"


def test_fish_output_parses_back(nodes: None) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish not installed")
    r = in_ns(ODD, ENV_SCRIPT, "--dist-init-addr", f"10.78.0.1:{PORT}", "--shell", "fish")
    out = subprocess.run(["fish", "-c", r.stdout + "; printf '%s' $GLOO_SOCKET_IFNAME"], capture_output=True,
                         text=True, timeout=20)
    assert out.stdout == ODD_NAME
