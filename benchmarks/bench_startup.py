"""Start-up cost: `k3doctor --help` and `k3doctor check --snapshot` against `python -c pass`.

Run: ``python benchmarks/bench_startup.py [--runs 15]``. Prints the median wall time of each
command and its ratio to the `python -c pass` baseline measured in the same run, and whether the
command imported torch. Not a test: numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _time(argv: list[str], runs: int) -> float:
    samples = []
    env = dict(os.environ, NO_COLOR="1")
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _imports_torch(args: list[str]) -> bool:
    code = ("import sys\nfrom k3doctor.cli import run\nrun(%r)\n"
            "sys.stderr.write('TORCH=%%s' %% ('torch' in sys.modules))\n") % (args,)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return "TORCH=True" in proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ns = ap.parse_args()
    snap_dir = Path(tempfile.mkdtemp(prefix="k3d-bench-"))
    node0 = ROOT / "k3doctor" / "data" / "demo" / "node0.json"
    snapshot = str(node0 if node0.exists() else snap_dir / "node.json")
    if not node0.exists():
        subprocess.run([sys.executable, "-m", "k3doctor", "snapshot", "-o", snapshot], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    py = sys.executable
    launch = ["--", "sglang", "serve", "--model-path", "moonshotai/Kimi-K3", "--tp-size", "16", "--ep-size", "16"]
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "k3doctor --help": [py, "-m", "k3doctor", "--help"],
        "k3doctor check --snapshot": [py, "-m", "k3doctor", "check", "--snapshot", snapshot, *launch],
        "k3doctor check --snapshot --format json": [py, "-m", "k3doctor", "check", "--snapshot", snapshot,
                                                    "--format", "json", *launch],
    }
    base = None
    rows = []
    for name, argv in cases.items():
        t = _time(argv, ns.runs)
        base = base or t
        rows.append({"case": name, "median_s": round(t, 4), "ratio": round(t / base, 2)})
    torch_help = _imports_torch(["--help"])
    torch_check = _imports_torch(["check", "--snapshot", snapshot, "--format", "json", *launch])
    print(f"cores={os.cpu_count()} runs={ns.runs} python={sys.version.split()[0]}")
    print(f"{'case':<42} {'median':>9} {'x python -c pass':>17}")
    for r in rows:
        print(f"{r['case']:<42} {r['median_s'] * 1000:>7.0f}ms {r['ratio']:>16.2f}x")
    print(f"imports torch: --help={torch_help} check --snapshot={torch_check}")
    print(json.dumps({"rows": rows, "torch_help": torch_help, "torch_check": torch_check}))


if __name__ == "__main__":
    main()
