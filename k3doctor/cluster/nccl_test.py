"""All-reduce bus-bandwidth test, one process per GPU: ``python -m k3doctor.cluster.nccl_test``.

Standalone on one node::

    python -m k3doctor.cluster.nccl_test --json                 # all visible GPUs, NCCL
    python -m k3doctor.cluster.nccl_test --nprocs 2 --backend gloo --sizes 64K,1M   # CPU (CI)

Across nodes (what ``k3doctor check --nccl`` runs on every node at once; the processes meet in
k3doctor's TCPStore under ``--prefix``; every node needs the same number of GPUs)::

    python -m k3doctor.cluster.nccl_test --json --nnodes 2 --node-rank R \\
        --store-host HEAD --store-port PORT --prefix k3doctor/TOKEN/nccl

The launcher never initialises CUDA itself; it starts one worker process per GPU (each in its
own session, killed as a group on ``--timeout`` or Ctrl-C). Each size is all-reduced
``--warmup`` + ``--iters`` times; the slowest rank's mean time ``t`` gives, as in nccl-tests,
``algbw = bytes / t`` and ``busbw = algbw · 2(n−1)/n``. The result is one JSON line (``--json``)
or a table: ``{ok, error, backend, world_size, nnodes, gpus_per_node, device, local: {...},
global: {...} | None, busbw_peak_GBps, expected_busbw_GBps, expected_basis}``, where ``local`` is
the all-reduce inside one node (NVLink / PCIe) and ``global`` across all nodes (network).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import sys
import time
from typing import Any

from ._proc import arm_parent_death_signal, child_env, kill_group, last_json_line

__all__ = ["main", "bus_bandwidth", "expected_busbw", "parse_size"]

#: Rough all-reduce bus bandwidth (GB/s) nccl-tests reaches inside one NVLink/NVSwitch node, by
#: GPU model substring (first match wins). Orientation values, not guarantees.
NVLINK_BUSBW_GBPS: tuple[tuple[str, float, str], ...] = (
    ("GB300", 700.0, "NVLink 5 (GB300)"),
    ("GB200", 700.0, "NVLink 5 (GB200)"),
    ("B300", 700.0, "NVLink 5 (B300)"),
    ("B200", 700.0, "NVLink 5 (B200)"),
    ("H200", 360.0, "NVLink 4 / NVSwitch (H200 SXM)"),
    ("H100", 360.0, "NVLink 4 / NVSwitch (H100 SXM)"),
    ("H800", 180.0, "NVLink 4, 400 GB/s (H800)"),
    ("H20", 360.0, "NVLink 4 / NVSwitch (H20)"),
    ("A100", 230.0, "NVLink 3 / NVSwitch (A100 SXM)"),
    ("A800", 150.0, "NVLink 3, 400 GB/s (A800)"),
)
PCIE_BUSBW_GBPS = 20.0


def parse_size(text: str) -> int:
    """``"64K"``, ``"16M"``, ``"1G"`` or plain bytes -> bytes (binary units)."""
    t = text.strip().upper().rstrip("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in "KMG" else t
    value = int(float(num) * mult)
    if value <= 0:
        raise ValueError(f"size {text!r} must be positive")
    return value


def bus_bandwidth(nbytes: int, seconds: float, world: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (10^9 bytes/s) for an all-reduce of ``nbytes`` on ``world`` ranks."""
    if seconds <= 0:
        return 0.0, 0.0
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * (2 * (world - 1) / world if world > 0 else 0.0)


def expected_busbw(device: str | None, world: int, backend: str) -> tuple[float | None, str]:
    """Expected intra-node all-reduce bus bandwidth for ``world`` GPUs named ``device``."""
    if backend != "nccl":
        return None, f"{backend} backend on CPU"
    if world < 2:
        return None, "one GPU: an all-reduce moves no data between GPUs (busbw is 0 by definition)"
    name = device or ""
    if "PCIE" in name.upper():
        return PCIE_BUSBW_GBPS, f"PCIe ({name})"
    for key, value, basis in NVLINK_BUSBW_GBPS:
        if key in name:
            return value, basis
    return None, f"no expectation recorded for {name or 'this GPU'}"


# -- worker -----------------------------------------------------------------------------------
def _bench(dist: Any, torch: Any, group: Any, world: int, sizes: list[int], device: Any, iters: int, warmup: int) -> list[dict[str, Any]]:
    out = []
    for nbytes in sizes:
        x = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=device)
        for _ in range(warmup):
            dist.all_reduce(x, group=group)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier(group=group)
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x, group=group)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64, device=device)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
        x.fill_(1.0)
        dist.all_reduce(x, group=group)
        correct = bool(float(x[0]) == float(world) and float(x[-1]) == float(world))
        seconds = float(elapsed[0])
        algbw, busbw = bus_bandwidth(nbytes, seconds, world)
        out.append({"bytes": nbytes, "time_us": round(seconds * 1e6, 2), "algbw_GBps": round(algbw, 3), "busbw_GBps": round(busbw, 3), "correct": correct})
        del x
    return out


def _worker(args: argparse.Namespace) -> int:
    arm_parent_death_signal()
    import torch
    import torch.distributed as dist

    local, per_node = args.local_rank, args.nprocs
    rank, world = args.node_rank * per_node + local, args.nnodes * per_node
    timeout = datetime.timedelta(seconds=args.timeout)
    result: dict[str, Any] = {"ok": False, "rank": rank}
    try:
        if args.backend == "nccl":
            torch.cuda.set_device(local)
            device = torch.device("cuda", local)
            result["device"] = torch.cuda.get_device_name(device)
        else:
            device = torch.device("cpu")
            result["device"] = "cpu"
        store = dist.TCPStore(args.store_host, args.store_port, None, False, timeout=timeout)
        dist.init_process_group(args.backend, store=dist.PrefixStore(args.prefix, store), rank=rank, world_size=world, timeout=timeout)
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
        groups = [dist.new_group(list(range(n * per_node, (n + 1) * per_node))) for n in range(args.nnodes)] if args.nnodes > 1 else [None]
        mine = groups[args.node_rank] if args.nnodes > 1 else None
        result["local"] = {"world_size": per_node, "results": _bench(dist, torch, mine, per_node, sizes, device, args.iters, args.warmup)}
        if args.nnodes > 1:
            result["global"] = {"world_size": world, "results": _bench(dist, torch, None, world, sizes, device, args.iters, args.warmup)}
        result["ok"] = all(r["correct"] for part in ("local", "global") if part in result for r in result[part]["results"])
        if not result["ok"]:
            result["error"] = "all-reduce returned wrong values"
        dist.destroy_process_group()
    except Exception as exc:  # noqa: BLE001 - reported by the launcher
        result["error"] = f"{type(exc).__name__}: {str(exc).strip()[:1500]}"
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0 if result["ok"] else 1


# -- launcher ---------------------------------------------------------------------------------
def _gpu_count() -> int:
    """Visible GPUs, counted through NVML where torch supports it (no CUDA context in the launcher)."""
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import torch

    return int(torch.cuda.device_count())


def _peak(part: dict[str, Any] | None) -> float | None:
    if not part or not part.get("results"):
        return None
    return max(float(r["busbw_GBps"]) for r in part["results"])


def launch(args: argparse.Namespace) -> dict[str, Any]:
    """Start the workers, wait (bounded), and return the summary."""
    import subprocess

    import torch.distributed as dist

    nprocs = args.nprocs or (_gpu_count() if args.backend == "nccl" else 2)
    summary: dict[str, Any] = {"ok": False, "error": None, "backend": args.backend, "nnodes": args.nnodes, "node_rank": args.node_rank, "gpus_per_node": nprocs,
                               "world_size": nprocs * args.nnodes, "local": None, "global": None}
    if nprocs < 1:
        summary["error"] = "no CUDA GPU visible to torch (torch.cuda.device_count() == 0)"
        return summary
    store = None
    if args.store_host:
        host, port, prefix = args.store_host, args.store_port, args.prefix
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)
        host, port, prefix = "127.0.0.1", sock.getsockname()[1], "nccl_test"
        store = dist.TCPStore(host, port, None, True, timeout=datetime.timedelta(seconds=args.timeout), wait_for_workers=False, master_listen_fd=sock.detach(), use_libuv=True)
    procs: list[subprocess.Popen[str]] = []
    deadline = time.monotonic() + args.timeout
    try:
        for local in range(nprocs):
            argv = [sys.executable, "-m", "k3doctor.cluster.nccl_test", "--worker", "--local-rank", str(local), "--nprocs", str(nprocs),
                    "--nnodes", str(args.nnodes), "--node-rank", str(args.node_rank), "--store-host", host, "--store-port", str(port),
                    "--prefix", prefix, "--backend", args.backend, "--sizes", args.sizes, "--iters", str(args.iters),
                    "--warmup", str(args.warmup), "--timeout", str(args.timeout)]
            procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          errors="replace", env=child_env(), start_new_session=True))
        outputs: list[tuple[str, str]] = []
        for proc in procs:
            try:
                outputs.append(proc.communicate(timeout=max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                summary["error"] = f"the all-reduce did not finish within {args.timeout:g} s (a rank hung); the workers were killed"
                return summary
    finally:
        for proc in procs:
            kill_group(proc)
        del store
    results = [last_json_line(out) or {"ok": False, "error": f"worker exited {p.returncode}: {err.strip()[-800:]}"} for p, (out, err) in zip(procs, outputs)]
    first = results[0]
    summary["device"] = first.get("device")
    summary["local"], summary["global"] = first.get("local"), first.get("global")
    errors = [r.get("error") for r in results if not r.get("ok") and r.get("error")]
    summary["ok"] = all(r.get("ok") for r in results)
    summary["error"] = errors[0] if errors else None
    summary["busbw_peak_GBps"] = _peak(summary["local"])
    summary["global_busbw_peak_GBps"] = _peak(summary["global"])
    summary["expected_busbw_GBps"], summary["expected_basis"] = expected_busbw(summary.get("device"), nprocs, args.backend)
    return summary


def _table(summary: dict[str, Any]) -> str:
    lines = [f"all-reduce ({summary['backend']}), {summary['gpus_per_node']} processes per node × {summary['nnodes']} node(s), device {summary.get('device')}"]
    for part in ("local", "global"):
        data = summary.get(part)
        if not data:
            continue
        lines.append(f"  {part} all-reduce over {data['world_size']} processes")
        lines.append(f"  {'bytes':>12}  {'time_us':>10}  {'algbw GB/s':>11}  {'busbw GB/s':>11}")
        for r in data["results"]:
            lines.append(f"  {r['bytes']:>12}  {r['time_us']:>10}  {r['algbw_GBps']:>11}  {r['busbw_GBps']:>11}{'' if r['correct'] else '  WRONG'}")
    if summary.get("busbw_peak_GBps") is not None:
        expected = summary.get("expected_busbw_GBps")
        lines.append(f"  peak busbw {summary['busbw_peak_GBps']} GB/s; "
                     + (f"expected ≈ {expected:g} GB/s for {summary.get('expected_basis')}" if expected else f"no expectation: {summary.get('expected_basis')}"))
    if summary.get("global_busbw_peak_GBps") is not None:
        lines.append(f"  peak busbw across nodes {summary['global_busbw_peak_GBps']} GB/s")
    if summary.get("error"):
        lines.append(f"  error: {summary['error']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m k3doctor.cluster.nccl_test", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nprocs", type=int, default=0, help="processes per node (default: every visible GPU; 2 for gloo)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    parser.add_argument("--sizes", default="1M,16M,128M,512M", help="comma list of message sizes (K/M/G suffixes)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before every worker is killed")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    parser.add_argument("--nnodes", type=int, default=1)
    parser.add_argument("--node-rank", type=int, default=0)
    parser.add_argument("--store-host", default="")
    parser.add_argument("--store-port", type=int, default=0)
    parser.add_argument("--prefix", default="nccl_test")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--local-rank", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args)
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    summary = launch(args)
    print(json.dumps(summary) if args.json else _table(summary), flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
