"""Checkpoint-integrity benchmarks: same-run ratios against simple floors.

A. ``k3doctor check --model <Kimi-K3 full-size skeleton> --select CKPT`` vs the floor "read the 96
   shard headers and the 60 MB index and json.loads them" — both as fresh Python subprocesses
   (interpreter start-up included on both sides), interleaved, wall time and peak RSS. Also the
   same pair in-process (``model_fact``: the scan with the memory fold, as ``check`` runs it, vs
   the floor function). Targets: <= 1.5x the floor,
   < 2 s.
B. ``--deep`` throughput (``k3doctor check --manifest m.json --select CKPT009``, sha256 of every
   file) vs ``xargs -P <cores> -n 1 sha256sum`` over the same files; peak RSS. Targets: >= 0.95x,
   RSS < 200 MB.

Usage::

    python benchmarks/bench_ckpt.py                    # both, prints a Markdown report
    python benchmarks/bench_ckpt.py --repeat 7 --deep-files 8 --deep-mib 128 --md docs/benchmarks-ckpt.md

Runs from the repository root; generated data goes to a temporary directory that is removed.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FLOOR = r"""
import glob, json, os, resource, struct, sys, time
d = sys.argv[1]
t = time.perf_counter()
for p in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
    with open(p, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        json.loads(f.read(n))
with open(os.path.join(d, "model.safetensors.index.json"), "rb") as f:
    json.loads(f.read())
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
print(json.dumps({"inner": time.perf_counter() - t,
                  "rss_kb": int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}),
      file=sys.stderr)
"""

# k3doctor's own CLI entry, in-process, reporting its peak RSS (and its children's, if any) on
# stderr after the report
WRAP = r"""
import json, resource, runpy, sys
sys.argv = ["k3doctor"] + sys.argv[1:]
code = 0
try:
    runpy.run_module("k3doctor", run_name="__main__")
except SystemExit as e:
    code = e.code or 0
# VmHWM is this process's own peak (ru_maxrss would include the benchmark parent's RSS at fork)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
print(json.dumps({"exit": code, "rss_kb": int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "children_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}), file=sys.stderr)
"""


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, dict, str]:
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    wall = time.perf_counter() - t
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "{}"
    try:
        info = json.loads(last)
    except ValueError:
        info = {"error": p.stderr[-500:]}
    return wall, info, p.stdout


def _stats(xs: list[float]) -> dict[str, float]:
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def _env(tmp: Path) -> dict[str, str]:
    """Like an installed tool: byte-code cached (outside the repo), not recompiled on every run."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def bench_check(k3: Path, repeat: int, tmp: Path) -> dict:
    floor_w, check_w, floor_rss, check_rss, child_rss = [], [], [], [], []
    env = _env(tmp)
    _run([sys.executable, "-c", WRAP, "check", "--model", str(k3), "--select", "CKPT", "--format", "json"], env)
    for _ in range(repeat):
        w, info, _ = _run([sys.executable, "-c", FLOOR, str(k3)], env)
        floor_w.append(w)
        floor_rss.append(info.get("rss_kb", 0))
        w, info, out = _run([sys.executable, "-c", WRAP, "check", "--model", str(k3), "--select", "CKPT",
                             "--format", "json"], env)
        rep = json.loads(out)
        assert info.get("exit") == 0 and rep["summary"]["failed"] == 0, (info, out[:500])
        check_w.append(w)
        check_rss.append(info["rss_kb"])
        child_rss.append(info["children_rss_kb"])
    # in-process pair (no interpreter start-up, no CLI): the scan alone vs the floor alone
    from k3doctor.probes.checkpoint import model_fact

    def floor_fn() -> None:
        import glob
        import struct
        for p in sorted(glob.glob(str(k3 / "*.safetensors"))):
            with open(p, "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
                json.loads(f.read(n))
        with open(k3 / "model.safetensors.index.json", "rb") as f:
            json.loads(f.read())

    in_floor, in_scan = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        floor_fn()
        in_floor.append(time.perf_counter() - t)
        t = time.perf_counter()
        fact = model_fact(k3)  # the scan and the memory fold, in this process
        in_scan.append(time.perf_counter() - t)
        assert fact["problem_counts"] == {} and fact["totals"]["tensors"] == 497_220
    return {"floor": _stats(floor_w), "check": _stats(check_w),
            "ratio_median": statistics.median(check_w) / statistics.median(floor_w),
            "ratio_min": min(check_w) / min(floor_w),
            "floor_rss_kb": max(floor_rss), "check_rss_kb": max(check_rss), "helper_rss_kb": max(child_rss),
            "inproc_floor": _stats(in_floor), "inproc_scan": _stats(in_scan),
            "inproc_ratio_median": statistics.median(in_scan) / statistics.median(in_floor),
            "inproc_ratio_min": min(in_scan) / min(in_floor)}


def _make_deep_set(dest: Path, files: int, mib: int) -> int:
    from fixtures.checkpoints.generate import write_shard

    dest.mkdir(parents=True)
    total = 0
    n = files
    for i in range(n):
        rows = (mib << 20) // 4096
        info = write_shard(dest / f"model-{i + 1:05d}-of-{n:05d}.safetensors",
                           [(f"model.layers.{i}.blob", "U8", [rows, 4096])], data=lambda name, k: os.urandom(k))
        total += info["data_len"]
    wm = {f"model.layers.{i}.blob": f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)}
    (dest / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": wm}))
    (dest / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    return total


def bench_deep(tmp: Path, files: int, mib: int, repeat: int) -> dict:
    d = tmp / "deep"
    _make_deep_set(d, files, mib)
    cores = os.cpu_count() or 1
    env = _env(tmp)
    m = tmp / "m.json"
    w, info, _ = _run([sys.executable, "-c", WRAP, "manifest", "create", str(d), "-o", str(m), "--no-progress"], env)
    assert info.get("exit") == 0, info
    names = sorted(str(p) for p in d.iterdir())
    size = sum(os.path.getsize(p) for p in names)
    base_w, ours_w, ours_rss = [], [], []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(["xargs", "-P", str(cores), "-n", "1", "sha256sum"], input="\n".join(names), text=True,
                       capture_output=True, check=True)
        base_w.append(time.perf_counter() - t)
        w, info, out = _run([sys.executable, "-c", WRAP, "check", "--model", str(d), "--manifest", str(m),
                             "--jobs", str(cores), "--select", "CKPT009", "--format", "json"], env)
        rep = json.loads(out)
        assert info.get("exit") == 0 and rep["summary"]["passed"] == 1, out[:500]
        ours_w.append(w)
        ours_rss.append(info["rss_kb"])
    return {"bytes": size, "files": len(names), "cores": cores,
            "sha256sum_Bps": _stats([size / x for x in base_w]), "k3doctor_Bps": _stats([size / x for x in ours_w]),
            "ratio_median": statistics.median(base_w) / statistics.median(ours_w),
            "ratio_best": min(base_w) / min(ours_w), "rss_kb": max(ours_rss), "manifest_create_s": w}


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def report(a: dict | None, b: dict | None, meta: dict) -> str:
    L = ["# Checkpoint benchmarks (`benchmarks/bench_ckpt.py`)", "",
         f"Machine: {meta['machine']}; Python {meta['python']}; {meta['cores']} cores; load average before/after "
         f"{meta['load_before']} → {meta['load_after']}; repeat {meta['repeat']} (interleaved). "
         "All ratios are from the same run. Subprocesses run with byte-code caching on (as installed; "
         "this sandbox sets PYTHONDONTWRITEBYTECODE=1, which would add ~0.1 s of compiling to every CLI run).", ""]
    if a:
        L += ["## A. `k3doctor check --model <Kimi-K3 full skeleton> --select CKPT`", "",
              "96 shards, 497,220 tensors, 1,560,860,324,864 data bytes, 60 MB index (sparse skeleton).",
              "Floor = a fresh Python that reads the 96 headers + the index and `json.loads` them. Peak RSS = "
              "VmHWM of the process (the scan runs in it; there is no helper process).", "",
              "| | min s | median s | peak RSS MB |", "|---|---|---|---|",
              f"| floor (subprocess) | {a['floor']['min']:.3f} | {a['floor']['median']:.3f} | {a['floor_rss_kb'] / 1024:.0f} |",
              f"| `k3doctor check` (subprocess, CLI + report) | {a['check']['min']:.3f} | {a['check']['median']:.3f} | "
              f"{a['check_rss_kb'] / 1024:.0f} |",
              f"| floor (in-process) | {a['inproc_floor']['min']:.3f} | {a['inproc_floor']['median']:.3f} | |",
              f"| `model_fact` (in-process: scan + memory fold) | {a['inproc_scan']['min']:.3f} | {a['inproc_scan']['median']:.3f} | |",
              "", f"Ratio check/floor: median {a['ratio_median']:.2f}×, best {a['ratio_min']:.2f}× "
              f"(in-process cost: median {a['inproc_ratio_median']:.2f}×, best {a['inproc_ratio_min']:.2f}× "
              "the floor; all of it on one core). "
              f"Target ≤ 1.5× and < 2 s.", ""]
    if b:
        L += ["## B. `--deep` sha256 throughput", "",
              f"{b['files']} files, {b['bytes']} bytes (random data, page-cache warm for both), {b['cores']} cores.", "",
              "| | min MB/s | median MB/s | max MB/s |", "|---|---|---|---|",
              f"| `xargs -P {b['cores']} -n 1 sha256sum` | {b['sha256sum_Bps']['min'] / 1e6:.0f} | "
              f"{b['sha256sum_Bps']['median'] / 1e6:.0f} | {b['sha256sum_Bps']['max'] / 1e6:.0f} |",
              f"| `k3doctor check --manifest --jobs {b['cores']}` (whole CLI run) | {b['k3doctor_Bps']['min'] / 1e6:.0f} | "
              f"{b['k3doctor_Bps']['median'] / 1e6:.0f} | {b['k3doctor_Bps']['max'] / 1e6:.0f} |",
              "", f"Throughput ratio k3doctor/sha256sum: median {b['ratio_median']:.2f}×, best {b['ratio_best']:.2f}× "
              f"(target ≥ 0.95×). Peak RSS {b['rss_kb'] / 1024:.0f} MB (target < 200 MB).", ""]
    return "\n".join(L)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--k3-dir", help="reuse an existing Kimi-K3 skeleton (fixtures.checkpoints.generate.make_kimi_k3)")
    ap.add_argument("--deep-files", type=int, default=8)
    ap.add_argument("--deep-mib", type=int, default=128)
    ap.add_argument("--only", choices=["check", "deep"])
    ap.add_argument("--md", help="also write the Markdown report to this file")
    ap.add_argument("--json", help="also write the raw numbers to this file")
    args = ap.parse_args()
    meta = {"machine": platform.platform(), "python": platform.python_version(), "cores": os.cpu_count(),
            "repeat": args.repeat, "load_before": _load()}
    tmp = Path(tempfile.mkdtemp(prefix="k3doctor-bench-"))
    try:
        a = b = None
        if args.only in (None, "check"):
            k3 = Path(args.k3_dir) if args.k3_dir else tmp / "Kimi-K3"
            if not args.k3_dir:
                from fixtures.checkpoints.generate import make_kimi_k3
                t = time.perf_counter()
                make_kimi_k3(k3)
                meta["k3_generate_s"] = round(time.perf_counter() - t, 2)
            a = bench_check(k3, args.repeat, tmp)
        if args.only in (None, "deep"):
            b = bench_deep(tmp, args.deep_files, args.deep_mib, args.repeat)
        meta["load_after"] = _load()
        text = report(a, b, meta)
        print(text)
        if args.md:
            Path(args.md).write_text(text + "\n")
        if args.json:
            Path(args.json).write_text(json.dumps({"meta": meta, "check": a, "deep": b}, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
