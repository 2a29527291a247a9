"""k3doctor commands against their naive floors, interleaved in one run (issue 16, item 4).

Each figure runs the k3doctor command and its baseline alternately (pair 1: baseline, command;
pair 2: baseline, command; ...) as fresh processes, and prints the median ratio command/baseline
with its min-max over the pairs, plus both peak RSS figures:

* ``verdict``: ``k3doctor check --model <full-size K3 skeleton> --select CKPT`` vs the naive floor
  (a fresh Python that reads ``model.safetensors.index.json`` and every shard header and
  ``json.loads`` each);
* ``deep``: ``k3doctor check --manifest m.json --select CKPT009 --jobs 2`` (sha256 of every file) vs
  ``xargs -P2 -n1 sha256sum`` and vs ``openssl dgst -sha256`` over the same files;
* ``help``: ``k3doctor --help`` vs ``python -c pass``.

The data is generated here (the K3 skeleton: ~130 MB of headers and index, sparse shards; random
files for ``deep``) in a temporary directory that is removed. All figures together take about
1-2 minutes on a 2-core machine. Usage::

    python benchmarks/bench_floors.py                     # all figures, 9 pairs each
    python benchmarks/bench_floors.py --only verdict --pairs 15
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))
# the naive floor (read the index and every header, json.loads each), shared with bench_ckpt.py
from bench_ckpt import FLOOR  # noqa: E402

#: runs argv[2:] and prints its wall time and peak RSS (RUSAGE_CHILDREN of this wrapper: the
#: command and what it waited for, nothing else) as JSON
WRAP = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, shell=sys.argv[1] == "sh")
wall = time.perf_counter() - t
print(json.dumps({"rc": p.returncode, "wall": wall, "rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                  "err": p.stderr.decode(errors="replace")[-300:]}))
"""


def _env(tmp: Path) -> dict[str, str]:
    """Like an installed tool: byte code cached (outside the repository), not recompiled per run."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run(cmd: list[str] | str, env: dict[str, str]) -> dict:
    shell = isinstance(cmd, str)
    argv = [sys.executable, "-c", WRAP, "sh" if shell else "exec", *([cmd] if shell else cmd)]
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    r = json.loads(p.stdout)
    return r


def pairs(name: str, cmd: list[str] | str, base: list[str] | str, n: int, env: dict[str, str],
          ok: Callable[[dict], bool] = lambda r: r["rc"] == 0) -> dict:
    """``n`` interleaved (baseline, command) runs after one warm-up of each."""
    _run(base, env)
    _run(cmd, env)
    b_w, c_w, ratios, b_rss, c_rss = [], [], [], [], []
    for _ in range(n):
        b = _run(base, env)
        c = _run(cmd, env)
        if not ok(c) or b["rc"] != 0:
            raise SystemExit(f"{name}: a run failed: command {c}, baseline {b}")
        b_w.append(b["wall"])
        c_w.append(c["wall"])
        ratios.append(c["wall"] / b["wall"])
        b_rss.append(b["rss_kb"])
        c_rss.append(c["rss_kb"])
    return {"name": name, "pairs": n, "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "cmd_median_s": statistics.median(c_w), "base_median_s": statistics.median(b_w),
            "cmd_rss_mb": max(c_rss) / 1024, "base_rss_mb": max(b_rss) / 1024}


def bench_verdict(tmp: Path, n: int, env: dict[str, str]) -> dict:
    from fixtures.checkpoints.generate import make_kimi_k3

    k3 = tmp / "Kimi-K3"
    make_kimi_k3(k3)
    cmd = [sys.executable, "-m", "k3doctor", "check", "--model", str(k3), "--select", "CKPT", "--format", "json"]
    r = pairs("header verdict vs naive floor", cmd, [sys.executable, "-c", FLOOR, str(k3)], n, env)
    shutil.rmtree(k3, ignore_errors=True)
    return r


def bench_deep(tmp: Path, n: int, env: dict[str, str], files: int = 4, mib: int = 64) -> list[dict]:
    import hashlib

    d = tmp / "deep"
    d.mkdir()
    man = {"kind": "k3doctor.manifest", "schema_version": 1, "repo": None, "files": {}}
    block = os.urandom(1 << 20)
    for i in range(files):
        p = d / f"model-{i + 1:05d}-of-{files:05d}.safetensors"
        h = hashlib.sha256()
        with open(p, "wb") as f:
            for k in range(mib):
                chunk = bytes([k & 255]) + block[1:]
                f.write(chunk)
                h.update(chunk)
        man["files"][p.name] = {"size": p.stat().st_size, "sha256": h.hexdigest()}
    mpath = tmp / "m.json"
    mpath.write_text(json.dumps(man))
    # warm the page cache for both sides
    for p in d.iterdir():
        p.read_bytes()
    cmd = [sys.executable, "-m", "k3doctor", "check", "--model", str(d), "--manifest", str(mpath),
           "--select", "CKPT009", "--jobs", "2", "--format", "json"]
    ok = (lambda r: r["rc"] in (0, 1))  # the files are not safetensors: CKPT001 would fail, CKPT009 passes
    out = [pairs("deep sha256 vs xargs -P2 sha256sum", cmd,
                 f"ls {d}/*.safetensors | xargs -P2 -n1 sha256sum", n, env, ok)]
    if shutil.which("openssl"):
        out.append(pairs("deep sha256 vs openssl dgst -sha256", cmd, f"openssl dgst -sha256 {d}/*.safetensors",
                         n, env, ok))
    return out


def bench_help(n: int, env: dict[str, str]) -> dict:
    return pairs("--help vs python -c pass", [sys.executable, "-m", "k3doctor", "--help"],
                 [sys.executable, "-c", "pass"], n, env)


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--only", choices=["verdict", "deep", "help"], action="append")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    only = set(args.only or ["verdict", "deep", "help"])
    tmp = Path(tempfile.mkdtemp(prefix="k3doctor-floors-"))
    t0 = time.perf_counter()
    load0 = _load()
    rows: list[dict] = []
    try:
        env = _env(tmp)
        if "help" in only:
            rows.append(bench_help(max(args.pairs, 15), env))
        if "deep" in only:
            rows += bench_deep(tmp, args.pairs, env)
        if "verdict" in only:
            rows.append(bench_verdict(tmp, args.pairs, env))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{platform.platform()}; Python {platform.python_version()}; {os.cpu_count()} cores; "
          f"load {load0} -> {_load()}; {time.perf_counter() - t0:.0f} s")
    print()
    print("| figure | pairs | ratio median (min-max) | k3doctor median s | baseline median s | RSS MB k3doctor / baseline |")
    print("|---|---:|---|---:|---:|---|")
    for r in rows:
        print(f"| {r['name']} | {r['pairs']} | {r['ratio_median']:.2f}x ({r['ratio_min']:.2f}-{r['ratio_max']:.2f}) | "
              f"{r['cmd_median_s']:.3f} | {r['base_median_s']:.3f} | {r['cmd_rss_mb']:.0f} / {r['base_rss_mb']:.0f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
