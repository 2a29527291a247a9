"""Shared pieces of the multi-node preflight that need no torch."""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

__all__ = [
    "CLOCK_SKEW_THRESHOLD_S",
    "DEFAULT_TIMEOUT_S",
    "INSTALL_HINT",
    "ClusterUnavailable",
    "require_torch",
    "parse_addr",
    "default_store_port",
    "choose_gloo_interface",
    "interface_ipv4",
    "node_entry",
    "tail",
]

#: Clock skew above this many seconds between a node and rank 0 is a finding (CLU008).
CLOCK_SKEW_THRESHOLD_S = 1.0
#: Default bound of every wait of a live multi-node preflight, in seconds.
DEFAULT_TIMEOUT_S = 60.0

INSTALL_HINT = (
    "multi-node preflight needs torch (torch.distributed with Gloo): "
    "pip install 'k3doctor[distributed]' -- on a CPU-only CI machine install a CPU build first "
    "(pip install torch --index-url https://download.pytorch.org/whl/cpu) so that pip does not pull "
    "a multi-gigabyte CUDA build; on the GPU nodes the engine's own torch is already there"
)


class ClusterUnavailable(Exception):
    """torch (with torch.distributed) is not installed; the message says how to install it."""


def require_torch() -> None:
    """Raise :class:`ClusterUnavailable` unless torch.distributed with Gloo can be imported.

    When torch is not imported yet, c10d's C++ warnings (socket retries while nodes are still
    starting) are silenced for this process and its children: the outcome is reported as data."""
    if "torch" not in sys.modules:
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    try:
        import torch.distributed as dist
    except Exception as exc:  # noqa: BLE001 - ImportError or a broken install
        raise ClusterUnavailable(f"{INSTALL_HINT} (import torch.distributed failed: {exc})") from None
    if not dist.is_available():
        raise ClusterUnavailable(f"{INSTALL_HINT} (this torch build has no torch.distributed)")


def parse_addr(addr: str) -> tuple[str, int]:
    """``"host:port"`` / ``"[v6]:port"`` -> (host, port); ``ValueError`` with the reason
    (:func:`k3doctor.hostenv.netinfo.parse_hostport`, with the port required)."""
    from ..hostenv.netinfo import parse_hostport

    host, port, err = parse_hostport(addr)
    if err:
        raise ValueError(f"--dist-init-addr {addr!r}: {err}")
    if port is None:
        raise ValueError(f"--dist-init-addr {addr!r}: expected HOST:PORT (e.g. 10.0.0.1:5000)")
    return host, port


def default_store_port(engine_port: int) -> int:
    """k3doctor's store port: the engine's rendezvous port + 1 (the engine's own port stays free,
    so a preflight can run while a previous engine still holds it; same firewall rules apply)."""
    return engine_port + 1 if engine_port < 65535 else engine_port - 1


def _interfaces(facts: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    net = facts.get("net")
    if not isinstance(net, Mapping):
        return []
    return [i for i in net.get("interfaces") or [] if isinstance(i, Mapping) and i.get("name")]


def interface_ipv4(facts: Mapping[str, Any], name: str | None) -> str | None:
    """The first IPv4 address (without prefix length) of interface ``name`` in the ``net`` fact."""
    for iface in _interfaces(facts):
        if iface.get("name") == name:
            for addr in iface.get("ipv4") or []:
                return str(addr).split("/")[0]
    return None


def choose_gloo_interface(facts: Mapping[str, Any], override: str | None = None) -> tuple[str | None, str]:
    """The interface this node's Gloo bootstrap uses, and where that choice came from.

    Order: ``--gloo-ifname``; ``GLOO_SOCKET_IFNAME`` pinned in the launch command; in the
    environment; k3doctor's own choice (the ``rendezvous`` fact's route to the head); else
    ``None`` (Gloo resolves the hostname itself).
    """
    if override:
        return override, "option --gloo-ifname"
    launch = facts.get("launch")
    if isinstance(launch, Mapping):
        pinned = (launch.get("env_assignments") or {}).get("GLOO_SOCKET_IFNAME")
        if pinned:
            return str(pinned), "launch GLOO_SOCKET_IFNAME"
    env = facts.get("env")
    if isinstance(env, Mapping) and env.get("GLOO_SOCKET_IFNAME"):
        return str(env["GLOO_SOCKET_IFNAME"]), "env GLOO_SOCKET_IFNAME"
    rdv = facts.get("rendezvous")
    if isinstance(rdv, Mapping) and rdv.get("interface"):
        return str(rdv["interface"]), "k3doctor (route to the rendezvous address)"
    return None, "gloo default (hostname resolution)"


def node_entry(doc: Mapping[str, Any], node_rank: int) -> dict[str, Any]:
    """One ``cluster.nodes[]`` entry from a snapshot document."""
    facts: Mapping[str, Any] = doc["facts"] if isinstance(doc.get("facts"), Mapping) else {}
    host: Mapping[str, Any] = facts["host"] if isinstance(facts.get("host"), Mapping) else {}
    return {
        "node_rank": node_rank,
        "hostname": str(doc.get("hostname") or host.get("hostname") or f"rank{node_rank}"),
        "version": doc.get("version"),
        "facts": dict(facts),
        "probe_errors": dict(doc.get("probe_errors") or {}),
    }


def resolve_host(host: str) -> list[str]:
    """IP addresses of ``host`` (literal or name); empty when it does not resolve or the DNS server
    does not answer in time (the one time-bounded resolver, :func:`k3doctor.probes.net.resolve_host`)."""
    from ..probes.net import resolve_host as bounded_resolve

    return bounded_resolve(host)[0]


def tail(text: str, lines: int = 12, limit: int = 2000) -> str:
    """The last ``lines`` non-empty lines of ``text``, at most ``limit`` characters."""
    kept = [ln for ln in (text or "").splitlines() if ln.strip()][-lines:]
    return "\n".join(kept)[-limit:]
