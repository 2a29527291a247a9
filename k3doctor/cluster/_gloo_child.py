"""The Gloo bootstrap test, run in a child process of :func:`k3doctor.cluster.gather`.

``python -m k3doctor.cluster._gloo_child --host H --port P --prefix K --rank R --world N
--timeout T`` joins a Gloo process group through the preflight's TCPStore (keys under ``K``) with
the interface in ``GLOO_SOCKET_IFNAME`` (as the engine would), all-reduces a small and a 1 MiB
tensor and prints one JSON line: ``{ok, error, init_s, allreduce_s, value, expected, ifname}``.
It runs in a child so that the parent can kill it when Gloo hangs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from ._proc import arm_parent_death_signal


def _run(args: argparse.Namespace) -> dict[str, Any]:
    import datetime

    import torch
    import torch.distributed as dist

    out: dict[str, Any] = {"ok": False, "error": None, "ifname": os.environ.get("GLOO_SOCKET_IFNAME")}
    timeout = datetime.timedelta(seconds=args.timeout)
    started = time.monotonic()
    try:
        store = dist.TCPStore(args.host, args.port, None, False, timeout=timeout)
        prefixed = dist.PrefixStore(args.prefix, store)
        dist.init_process_group("gloo", store=prefixed, rank=args.rank, world_size=args.world, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - the error text is the finding's evidence
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["stage"] = "init_process_group"
        return out
    out["init_s"] = round(time.monotonic() - started, 4)
    try:
        value = torch.full((4,), float(args.rank + 1))
        dist.all_reduce(value)
        expected = args.world * (args.world + 1) / 2
        out["value"] = float(value[0])
        out["expected"] = expected
        big = torch.ones(1 << 18)  # 1 MiB of float32
        t0 = time.monotonic()
        dist.all_reduce(big)
        out["allreduce_s"] = round(time.monotonic() - t0, 4)
        out["ok"] = bool(abs(out["value"] - expected) < 1e-6 and float(big[0]) == float(args.world))
        if not out["ok"]:
            out["error"] = f"all-reduce returned {out['value']} (expected {expected})"
        out["stage"] = "all_reduce"
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["stage"] = "all_reduce"
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001
            pass
    return out


def main(argv: list[str] | None = None) -> int:
    arm_parent_death_signal()
    parser = argparse.ArgumentParser(prog="python -m k3doctor.cluster._gloo_child")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--timeout", type=float, required=True)
    args = parser.parse_args(argv)
    result = _run(args)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
