"""How many ranks write a node's caches, and which environment the launch sees.

Pure functions of fact values (the ``launch``, ``env``, ``gpu`` and ``cluster`` facts and the
command-line options) for the signature-style checks, which receive those values by name.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["launch_env_of", "nnodes_of", "ranks_per_node_of"]


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def launch_env_of(launch: Any, env: Any = None) -> dict[str, str]:
    """The launch's environment (``launch["env"]``) when a launch is given, else the ``env`` fact."""
    if isinstance(launch, Mapping) and isinstance(launch.get("env"), Mapping):
        return {str(k): str(v) for k, v in launch["env"].items() if v is not None}
    if isinstance(env, Mapping):
        return {str(k): str(v) for k, v in env.items() if v is not None}
    return {}


def nnodes_of(launch: Any, options: Mapping[str, Any] | None = None, cluster: Any = None) -> int | None:
    """Nodes of the deployment: the ``--nnodes`` option, the launch, else the cluster fact."""
    n = _int((options or {}).get("nnodes"))
    if n:
        return n
    if isinstance(launch, Mapping):
        n = _int(launch.get("nnodes"))
        if n:
            return n
    if isinstance(cluster, Mapping) and isinstance(cluster.get("nodes"), list) and cluster["nodes"]:
        return len(cluster["nodes"])
    return None


def ranks_per_node_of(launch: Any, gpu: Any = None) -> tuple[int | None, str]:
    """``(ranks, how)``: processes per node that run kernels — gpus_per_node, the plan, or the GPUs seen."""
    if isinstance(launch, Mapping):
        g = _int(launch.get("gpus_per_node"))
        if g:
            return g, "launch gpus_per_node"
        world = 1
        known = False
        keys = ("tp", "pp") if launch.get("enable_dp_attention") else ("tp", "pp", "dp")
        for key in keys:
            v = _int(launch.get(key))
            if v:
                known = known or v > 1
                world *= v
        n = _int(launch.get("nnodes")) or 1
        if known and world >= n:
            return max(1, world // n), f"launch plan (tp×pp×dp={world} over {n} node(s))"
    if isinstance(gpu, Mapping) and isinstance(gpu.get("devices"), list) and gpu["devices"]:
        return len(gpu["devices"]), "GPUs on this node"
    return None, "unknown"
