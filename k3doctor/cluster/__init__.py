"""Multi-node preflight: the nodes meet through torch.distributed and build the ``cluster`` fact.

Live mode (:func:`gather`): every node probes locally, then the nodes rendezvous through
torch.distributed's ``TCPStore`` (hosted by node rank 0), exchange their snapshots (the JSON of
:func:`k3doctor.facts.snapshot_document`), measure clock skew against rank 0, and run a real Gloo
all-reduce across the nodes over the interface each node selected (optionally an NCCL all-reduce
over all local GPUs). Offline mode (:func:`from_snapshots`) builds the same fact from saved
snapshots. The CLU checks (``k3doctor/checks/clu.py``) read only this fact.

Network failures never raise: they become data (``missing_ranks``, ``errors``,
``bootstrap.ok = False`` …) that the CLU checks turn into findings. Only a missing torch raises
:class:`ClusterUnavailable`, whose message says how to install it.

The ``cluster`` fact::

    {
      "mode": "live" | "snapshots",
      "nnodes": int, "self_rank": int | None, "token": str | None,
      "store": {"host", "port", "bind", "engine_port"} | None,
      "nodes": [{"node_rank", "hostname", "version", "facts", "probe_errors"}],
      "missing_ranks": [int], "errors": [str],
      "clock": {"measured": bool, "reason", "reference_rank", "threshold_s",
                "nodes": [{"node_rank", "offset_s", "uncertainty_s", "rtt_s"}]},
      "bootstrap": {"ran": bool, "reason", "backend": "gloo", "ok": bool | None, "timeout_s",
                    "nodes": [{"node_rank", "hostname", "ifname", "source", "ipv4", "ok",
                               "error", "seconds", "returncode", "timed_out"}]},
      "nccl": None | {"ran", "reason", "nodes": [{"node_rank", "hostname", "result": {...}}]},
    }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ._common import (
    CLOCK_SKEW_THRESHOLD_S,
    DEFAULT_TIMEOUT_S,
    INSTALL_HINT,
    ClusterUnavailable,
    choose_gloo_interface,
    default_store_port,
    parse_addr,
    require_torch,
)
from ._offline import from_snapshots

__all__ = [
    "ClusterOptions",
    "ClusterUnavailable",
    "INSTALL_HINT",
    "CLOCK_SKEW_THRESHOLD_S",
    "gather",
    "from_snapshots",
    "default_store_port",
    "parse_addr",
    "choose_gloo_interface",
]

Progress = Callable[[str], None]


@dataclass
class ClusterOptions:
    """How this node takes part in a multi-node preflight.

    ``store_port`` ``None`` means :func:`default_store_port` (the engine's rendezvous port + 1);
    ``timeout`` bounds every wait (joining, the Gloo test, the final barrier); ``token`` ``None``
    means rank 0 makes one up (reported through ``progress``) and the other nodes adopt it;
    ``bind_all`` lets the store listen on every address instead of only the ``dist_init_addr``
    host; ``gloo_ifname`` overrides the interface of the bootstrap test on this node.
    """

    nnodes: int
    node_rank: int
    dist_init_addr: str
    store_port: int | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    token: str | None = None
    nccl: bool = False
    bind_all: bool = False
    gloo_ifname: str | None = None
    #: extra arguments for ``python -m k3doctor.cluster.nccl_test`` (CI without GPUs:
    #: ``("--backend", "gloo", "--nprocs", "2", "--sizes", "64K")``)
    nccl_args: tuple[str, ...] = ()


def gather(local_snapshot: dict[str, Any], opts: ClusterOptions, progress: Progress | None = None) -> dict[str, Any]:
    """Rendezvous with the other nodes and return the ``cluster`` fact (see the module doc).

    Never raises for network failures; raises :class:`ClusterUnavailable` when torch (with
    torch.distributed) is not installed, and ``ValueError`` for invalid options.
    """
    require_torch()
    from ._live import run_live

    return run_live(local_snapshot, opts, progress or (lambda _msg: None))
