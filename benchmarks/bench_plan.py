#!/usr/bin/env python3
"""Benchmark `k3doctor plan` for Kimi-K3: from shard headers (full-size sparse fixture, 96 shards,
497,220 tensors), from config.json alone, and `--search`. Targets: < 1 s each.

    python benchmarks/bench_plan.py [--repeat 5] [--dir /tmp/k3-bench]   (results: docs/benchmarks-plan.md)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SEED = ("sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp-size 16 --ep-size 16 "
        "--moe-runner-backend marlin --mem-fraction-static 0.85 --nnodes 2 --node-rank 0 "
        "--dist-init-addr 10.0.0.1:5000").split()


CPU: list[float] = []


def _time(fn, repeat: int) -> list[float]:
    """Wall seconds per run; CPU seconds of this process go to CPU (the shared 2-core box is noisy)."""
    out = []
    CPU.clear()
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        out.append(time.perf_counter() - t)
        CPU.append(time.process_time() - c)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", help="where to build the sparse K3 fixture (default: a temp dir)")
    a = ap.parse_args()
    from fixtures.checkpoints.generate import make_kimi_k3
    from k3doctor.memory import Parallel, compute_plan, load_inventory, resolve_gpu
    from k3doctor.memory.search import search_plans

    tmp = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="k3-bench-"))
    if not (tmp / "config.json").exists():
        make_kimi_k3(tmp)
    gpu = resolve_gpu("h200")
    par = Parallel("sglang", tp=16, ep=16, mem_fraction=0.85, nnodes=2, gpus_per_node=8, moe_backend="marlin")
    rows = []

    def headers():  # cold: load_inventory caches nothing
        compute_plan(load_inventory(tmp), par, gpu)

    def config():
        compute_plan(load_inventory("moonshotai/Kimi-K3"), par, gpu)

    def search():
        search_plans(load_inventory(tmp), Parallel("sglang", moe_backend="marlin"), gpu)

    inv = load_inventory(tmp)

    def search_only():
        search_plans(inv, Parallel("sglang", moe_backend="marlin"), gpu)

    for name, fn in (("plan, K3 from shard headers (in-process)", headers),
                     ("plan, K3 from config.json (in-process)", config),
                     ("plan --search, K3 headers read + 89 candidate plans (in-process)", search),
                     ("plan --search, 89 candidate plans, inventory already read", search_only)):
        ts = _time(fn, a.repeat)
        rows.append((name, statistics.median(ts), max(ts), statistics.median(CPU)))

    def cli(*extra):
        cmd = [sys.executable, "-c", "import sys; from k3doctor.commands.plan import command; command(sys.argv[1:])",
               "--gpu", "h200", "--json", *extra]
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)

    def bare():
        subprocess.run([sys.executable, "-c", "import k3doctor.commands.plan, rich.console"], cwd=ROOT, check=False)

    rows.append(("python start + imports only (baseline of the CLI rows)", statistics.median(_time(bare, 3)), 0.0, None))
    for name, extra in (("`plan --model DIR --json -- <seed>` (CLI process, incl. imports)", ["--model", str(tmp), "--", *SEED]),
                        ("`plan --search --json` (CLI process, incl. imports)", ["--model", str(tmp), "--search"])):
        ts = _time(lambda: cli(*extra), max(1, a.repeat // 2))
        rows.append((name, statistics.median(ts), max(ts), None))
    import os

    print(f"load average before/after: {os.getloadavg()[0]:.2f} (1 min), CPUs: {os.cpu_count()}")
    print()
    print("| case | median wall s | max wall s | median CPU s |")
    print("|---|---:|---:|---:|")
    for name, med, mx, cpu in rows:
        print(f"| {name} | {med:.3f} | {mx:.3f} | {'-' if cpu is None else f'{cpu:.3f}'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
