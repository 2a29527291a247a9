"""Offline mode: the ``cluster`` fact from saved snapshots (``k3doctor check --snapshot a --snapshot b``)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ._common import CLOCK_SKEW_THRESHOLD_S, node_entry

__all__ = ["from_snapshots"]


def _launch_rank(doc: Mapping[str, Any]) -> int | None:
    launch = (doc.get("facts") or {}).get("launch")
    if isinstance(launch, Mapping) and isinstance(launch.get("node_rank"), int):
        return int(launch["node_rank"])
    return None


def _launch_nnodes(doc: Mapping[str, Any]) -> int | None:
    launch = (doc.get("facts") or {}).get("launch")
    if isinstance(launch, Mapping) and isinstance(launch.get("nnodes"), int) and launch["nnodes"] > 0:
        return int(launch["nnodes"])
    return None


def from_snapshots(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Build the ``cluster`` fact from snapshot documents (as :func:`k3doctor.facts.load_snapshot`
    returns them). Node ranks come from each snapshot's ``launch.node_rank``; when those are
    absent or clash, the order of the files is used and the clash is recorded in ``errors``."""
    errors: list[str] = []
    ranks = [_launch_rank(d) for d in docs]
    known = [r for r in ranks if r is not None]
    if len(known) == len(docs) and len(set(known)) == len(known):
        assigned = [int(r) for r in ranks]  # type: ignore[arg-type]
    else:
        if len(set(known)) != len(known):
            dup = sorted({r for r in known if known.count(r) > 1})
            hosts = [str(d.get("hostname") or "?") for d, r in zip(docs, ranks) if r in dup]
            errors.append(
                f"several snapshots claim node rank {', '.join(map(str, dup))} ({', '.join(hosts)}); "
                "ranks were assigned in the order the snapshots were given"
            )
        assigned = list(range(len(docs)))
    nodes = sorted((node_entry(d, r) for d, r in zip(docs, assigned)), key=lambda n: n["node_rank"])
    expected = max([n for n in (_launch_nnodes(d) for d in docs) if n] or [len(docs)])
    missing = sorted(set(range(expected)) - set(assigned))
    return {
        "mode": "snapshots",
        "nnodes": max(expected, len(docs)),
        "self_rank": None,
        "token": None,
        "store": None,
        "nodes": nodes,
        "missing_ranks": missing,
        "errors": errors,
        "clock": {
            "measured": False,
            "reason": "clock skew is measured only in a live multi-node run (not from saved snapshots)",
            "threshold_s": CLOCK_SKEW_THRESHOLD_S,
            "nodes": [],
        },
        "bootstrap": {
            "ran": False,
            "reason": "the Gloo bootstrap test runs only in a live multi-node run (not from saved snapshots)",
            "backend": "gloo",
            "ok": None,
            "nodes": [],
        },
        "nccl": None,
    }
