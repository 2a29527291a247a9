#!/usr/bin/env python3
"""Benchmark ``k3doctor explain --log`` on a large synthetic rank log against ``grep -E -c``.

Generates a synthetic SGLang/vLLM/NCCL log (default 1 GiB) into /tmp, then measures, in the
same run and on the same file (page cache warmed by a first read), interleaved pair by pair:

* ``grep -E -c`` with the 15 patterns an operator would try first (``OBVIOUS``);
* ``k3doctor explain --log FILE --format json`` (the click command, in a fresh interpreter);
* with ``--kb-grep``, once: ``grep -F -i -c`` with the prefilter's anchors (every KB keyword and
  the literals the fallback's error markers require), i.e. grep given the literals that an exact
  ``explain --log`` must find, case-insensitively (a reference, not the target).

Each tool runs as a whole process; wall time and peak RSS (VmHWM) are its own. Timed runs are not
polled (polling /proc takes CPU time from a multi-process explain); memory comes from one more,
polled run of each command. ``--pure-python`` adds the default explain with its pure-Python stage 1
(``K3DOCTOR_PURE_PYTHON=1``) to the same interleaved runs. The load average is printed before and
after (the machine is shared). The log is deleted afterwards
unless --keep is given; never commit it.

    python benchmarks/bench_explain.py                 # 1 GiB, prints a Markdown table
    python benchmarks/bench_explain.py --size-mb 200   # quicker
    python benchmarks/bench_explain.py --write docs/benchmarks-explain.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NORMAL = [  # what a healthy SGLang/vLLM/NCCL rank prints, most of the time
    "[{ts} TP{r}] Decode batch. #running-req: {a}, #token: {b}, token usage: 0.{c:02d}, cuda graph: True, gen throughput (token/s): {d}.{c:02d}, #queue-req: 0",
    "[{ts} TP{r}] Decode batch. #running-req: {a}, #token: {b}, token usage: 0.{c:02d}, cuda graph: True, gen throughput (token/s): {d}.{c:02d}, #queue-req: {c}",
    "[{ts} TP{r}] Prefill batch. #new-seq: 1, #new-token: {b}, #cached-token: {a}, token usage: 0.{c:02d}, #running-req: {a}, #queue-req: 0",
    "[{ts}] INFO:     10.0.{r}.{a}:{d} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
    "[{ts}] INFO:     10.0.{r}.{a}:{d} - \"GET /health HTTP/1.1\" 200 OK",
    "[{ts}] INFO:     10.0.{r}.{a}:{d} - \"GET /metrics HTTP/1.1\" 200 OK",
    "INFO {vts} [logger.py:{a}] Received request chatcmpl-{hex}: prompt: '', params: SamplingParams(n=1, temperature=0.{c}, top_p=0.95, max_tokens={b}), lora_request: None.",
    "INFO {vts} [engine.py:{a}] Finished request chatcmpl-{hex}.",
    "(VllmWorker rank={r} pid={d}) INFO {vts} [gpu_model_runner.py:1167] Model loading took {c}.{a:02d} GiB and {b}.5 seconds",
    "INFO {vts} [loggers.py:116] Engine 000: Avg prompt throughput: {d}.{c} tokens/s, Avg generation throughput: {b}.{a} tokens/s, Running: {a} reqs, Waiting: 0 reqs, GPU KV cache usage: {c}.1%, Prefix cache hit rate: {a}.0%",
    "node-{r}:{d}:{d} [{r}] NCCL INFO Channel {c:02d}/32 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15",
    "node-{r}:{d}:{d} [{r}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "node-{r}:{d}:{d} [{r}] NCCL INFO comm 0x{hex} rank {r} nRanks 64 nNodes 8 localRanks 8 localRank {r}",
    "Loading safetensors checkpoint shards:  {c}% Completed | {a}/96 [01:{c:02d}<02:{a:02d}, 20.{c}s/it]",
    "[{ts} TP{r}] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128]",
    "[{ts} TP{r}] Load weight end. type=KimiK3ForCausalLM, dtype=torch.bfloat16, avail mem={c}.{a:02d} GB, mem usage={b}.{c:02d} GB.",
    "[{ts} TP{r}] Cache flushed successfully!",
]
SPRINKLE = [  # a realistic share of scary-but-harmless lines and colour
    "[{ts} TP{r}] Using default MoE config. Performance might be sub-optimal! Config file not found at /opt/sglang/configs/E=896,N=512,device_name=NVIDIA_H200.json",
    "node-{r}:{d}:{d} [{r}] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
    "\x1b[32mINFO\x1b[0m {vts} [api_server.py:{a}] Route: /v1/models, Methods: GET",
    "WARNING {vts} [custom_all_reduce.py:137] Custom allreduce is disabled because this process group spans across nodes.",
    "[{ts}] INFO:     10.0.{r}.{a}:{d} - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request",
    "WARNING {vts} [serving_chat.py:{a}] Request chatcmpl-{hex} was aborted by the client.",
]
SCATTERED = [  # errors a long-running server logs now and then, each handled and served on
    "ERROR {vts} [serving_chat.py:{a}] Error in chat completion stream generator: request chatcmpl-{hex} disconnected.",
    "[{ts} TP{r}] ERROR: invalid JSON schema in response_format for request {hex}: expected object, got string",
    "Traceback (most recent call last):",
    "  File \"/usr/lib/python3.12/site-packages/sglang/srt/entrypoints/http_server.py\", line {a}, in generate_request",
    "ValueError: The input ({b} tokens) is longer than the model's context length ({d} tokens).",
]
PLANTED = [
    "[{ts} TP5] Scheduler hit an exception: Traceback (most recent call last):",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 15.50 GiB. GPU 5 has a total capacity of 139.81 GiB of which 3.12 GiB is free.",
    "[rank{r}]:[E1130 10:20:00.000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
]


#: ``grep -E -c`` patterns an operator would try first on an engine log
OBVIOUS = ("Error", "error", "ERROR", "WARN", "Traceback", "Exception", "FAILED", "Failed", "failed",
           "out of memory", "timed out", "Timeout", "Xid", "Killed", "Segmentation fault")


def _fill(tpl: str, rnd: random.Random) -> str:
    s = rnd.randrange(60)
    return tpl.format(
        ts=f"2026-11-30 10:{rnd.randrange(60):02d}:{s:02d}", vts=f"11-30 10:{rnd.randrange(60):02d}:{s:02d}",
        r=rnd.randrange(16), a=rnd.randrange(100), b=rnd.randrange(10000), c=rnd.randrange(100), d=rnd.randrange(100000),
        hex=f"{rnd.getrandbits(48):012x}",
    )


_HEX_ID = re.compile(rb"(?:(?<=chatcmpl-)|(?<=comm 0x))[0-9a-f]{12}")


def generate(path: Path, size_mb: int, seed: int = 0, unique_ids: bool = False) -> int:
    """Write ~size_mb MiB of log; return the number of planted error lines.

    Mostly INFO noise (request logs, decode batches, NCCL init), a realistic share of benign
    warnings and colour, a handled error with its traceback every ~200 KiB, a few invalid UTF-8
    bytes; past the middle, one scheduler OOM and then repeated NCCL watchdog timeouts. The log is
    drawn from 24 distinct 1 MiB blocks, so its request and communicator ids recur every ~24 MiB;
    ``unique_ids`` gives every written block fresh ids, as a real server's log has."""
    rnd = random.Random(seed)
    blocks = []
    for _ in range(24):  # distinct 1 MiB blocks, drawn at random on write
        lines, n = [], 0
        while n < 1 << 20:
            x = rnd.random()
            if x < 0.0006:
                tpls = SCATTERED if rnd.random() < 0.5 else SCATTERED[:2]
                lines += [_fill(t, rnd) for t in tpls]
            elif x < 0.004:
                lines.append(_fill(rnd.choice(SPRINKLE), rnd))
            else:
                lines.append(_fill(rnd.choice(NORMAL), rnd))
            if rnd.random() < 0.0005:
                lines[-1] = lines[-1][:20] + "\udcff\udcfe" + lines[-1][20:]  # a few invalid UTF-8 bytes
            n += len(lines[-1]) + 1
        blocks.append(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    target = size_mb << 20
    planted = 0
    written = 0
    with open(path, "wb") as f:
        while written < target:
            b = rnd.choice(blocks)
            if unique_ids:
                b = _HEX_ID.sub(lambda _m: b"%012x" % rnd.getrandbits(48), b)
            f.write(b)
            written += len(b)
            if written > target // 2 and planted == 0:
                for tpl in PLANTED:
                    f.write((_fill(tpl, rnd) + "\n").encode())
                    planted += 1
            elif planted and rnd.random() < 0.02:
                f.write((_fill(PLANTED[2], rnd) + "\n").encode())  # repeated symptoms
                planted += 1
    return planted


def _status(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` size field (``VmHWM``, ``VmRSS``) of a live process, in bytes."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _pss(pid: int) -> int:
    """Proportional set size of a live process in bytes (``/proc/PID/smaps_rollup``): each page
    shared with N processes counts 1/N, so the sum over a process tree is the memory it holds."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def run_child(argv: list[str], stdout_path: str, poll: bool = True) -> tuple[float, int, int, int, int]:
    """(wall seconds, peak RSS bytes, exit code, peak RSS of the whole process tree, peak PSS of
    the tree) of one run; with ``poll`` false, only the wall time and exit code (the memory
    figures 0).

    Timed runs are not polled: reading /proc every few milliseconds takes CPU time from the
    command measured, and on a machine with as many CPUs as ``explain`` runs processes that
    slowed explain (and not the one-process grep) by up to a third. Memory is measured in a
    separate run of each command.

    Peak RSS is the process's VmHWM, polled every 5 ms until it exits (VmHWM only grows and is
    reset by execve, so it excludes the pages the child inherited from this Python parent;
    ru_maxrss from wait4 would include them). The tree figure is the largest sum, at one poll, of
    the process's VmRSS and its children's (``explain --log`` forks a helper on a large log; the
    pages they share are counted twice, so it is an upper bound). The PSS figure (sampled every
    25 ms: reading smaps costs more) counts shared pages once: the tree's real footprint.
    """
    with open(stdout_path, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        if not poll:
            proc.wait()
            return time.perf_counter() - t0, 0, proc.returncode, 0, 0
        peak = tree = pss = polls = 0
        while proc.poll() is None:
            peak = max(peak, _status(proc.pid, "VmHWM"))
            kids = _children(proc.pid)
            tree = max(tree, _status(proc.pid, "VmRSS") + sum(_status(c, "VmRSS") for c in kids))
            if polls % 5 == 0:
                pss = max(pss, _pss(proc.pid) + sum(_pss(c) for c in kids))
            polls += 1
            time.sleep(0.005)
        wall = time.perf_counter() - t0
    return wall, peak, proc.returncode, max(tree, peak), pss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--path", default=None, help="log path (default: a temp file in /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved (grep, explain) pairs")
    ap.add_argument("--write", default=None, help="write the Markdown result to this file")
    ap.add_argument("--kb-grep", action="store_true", help="also time grep -F -i with the prefilter's anchors (once)")
    ap.add_argument("--sweep", default="", metavar="N,N,...",
                    help="also time explain --jobs N for each N, in the same interleaved pairs")
    ap.add_argument("--pure-python", action="store_true",
                    help="also time the default explain with the pure-Python stage 1 (K3DOCTOR_PURE_PYTHON=1), "
                         "in the same interleaved pairs")
    ap.add_argument("--unique-ids", action="store_true",
                    help="fresh request/communicator ids in every block (a real server's log; slower to generate)")
    ap.add_argument("--generate-only", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.size_mb < 1 or args.repeat < 1:
        ap.error("--size-mb and --repeat must be at least 1 (a log of 0 MiB has nothing to measure)")
    if args.generate_only:
        print(generate(Path(args.generate_only), args.size_mb, unique_ids=args.unique_ids))
        return 0

    from k3doctor.explain import load_kb

    sigs = load_kb()
    # The baseline is what an operator would grep an engine log for. (Until issue 16 it was every KB
    # regex converted to ERE: 875 patterns, some of which GNU grep read differently, and it matched 0
    # lines, so its time meant nothing.)
    eres = list(OBVIOUS)
    skipped = sum(len(s.patterns) for s in sigs)
    tmpdir = Path(tempfile.mkdtemp(prefix="k3bench-", dir="/tmp"))
    log = Path(args.path) if args.path else tmpdir / "synthetic-rank.log"
    pats = tmpdir / "patterns.ere"
    pats.write_text("\n".join(eres) + "\n")

    t0 = time.perf_counter()
    planted = int(subprocess.run(
        [sys.executable, __file__, "--generate-only", str(log), "--size-mb", str(args.size_mb)]
        + (["--unique-ids"] if args.unique_ids else []),
        check=True, capture_output=True, text=True).stdout.strip())
    gen_s = time.perf_counter() - t0
    size = log.stat().st_size
    with open(log, "rb", buffering=0) as f:  # warm the page cache for both tools
        buf = bytearray(1 << 20)
        while f.readinto(buf):
            pass
        del buf

    os.environ["LC_ALL"] = "C"  # grep's fast byte path; the explain child ignores the locale
    grep_argv = ["grep", "-E", "-c", "-a", "|".join(eres), str(log)]
    k3_argv = [sys.executable, "-c",
               "import sys; sys.path.insert(0, %r); from k3doctor.commands.explain import command; "
               "command(['--log', %r, '--format', 'json', '--max', '0'])" % (str(ROOT), str(log))]
    one_argv = k3_argv[:-1] + [k3_argv[-1].replace("'--max', '0'", "'--max', '0', '--jobs', '1'")]
    results: dict[str, list[tuple[float, int, int, int, int]]] = {"grep": [], "k3": [], "kb": [], "one": [], "py": []}
    py_argv = ["env", "K3DOCTOR_PURE_PYTHON=1"] + k3_argv if args.pure_python else []
    sweep = [int(n) for n in args.sweep.split(",") if n.strip()]
    sweep_argv = {n: k3_argv[:-1] + [k3_argv[-1].replace("'--max', '0'", f"'--max', '0', '--jobs', '{n}'")]
                  for n in sweep}
    for n in sweep:
        results[f"j{n}"] = []
    kb_argv: list[str] = []
    if args.kb_grep:
        from k3doctor.explain.scan import Scanner

        kws = tmpdir / "anchors.txt"
        anchors = sorted(a for a in Scanner().prefilter.anchors or () if "\n" not in a)
        kws.write_text("\n".join(anchors) + "\n")
        kb_argv = ["grep", "-F", "-i", "-c", "-a", "-f", str(kws), str(log)]
    load_before = os.getloadavg()
    runs: dict[str, tuple[list[str], str]] = {"grep": (grep_argv, "grep.out")}
    if kb_argv:
        runs["kb"] = (kb_argv, "kb.out")
    runs["k3"] = (k3_argv, "k3.json")
    runs["one"] = (one_argv, "one.json")
    runs.update({f"j{n}": (argv, f"j{n}.json") for n, argv in sweep_argv.items()})
    if py_argv:
        runs["py"] = (py_argv, "py.json")
    for _ in range(args.repeat):  # timed, interleaved, not polled
        for key, (argv, out) in runs.items():
            results[key].append(run_child(argv, str(tmpdir / out), poll=False))
    for key, (argv, out) in runs.items():  # memory: one polled run of each
        _w, peak, _rc, tree_, pss_ = run_child(argv, str(tmpdir / out))
        results[key] = [(w, peak, rc, tree_, pss_) for w, _p, rc, _t, _s in results[key]]
    load_after = os.getloadavg()
    kb_line = ""
    if kb_argv:
        kb_ratios = sorted(kb[0] / g[0] for g, kb in zip(results["grep"], results["kb"]) if g[0])
        kb_lines = int((tmpdir / "kb.out").read_text().strip() or 0)
        kb_line = (f"\n- Reference, interleaved in the same pairs: `grep -F -i -c -f <the prefilter's {len(anchors)} "
                   f"anchors>` (the literals an exact explain must find) took {min(r[0] for r in results['kb']):.2f} s, "
                   f"median **{kb_ratios[len(kb_ratios) // 2]:.2f}x** the 15-pattern grep "
                   f"({kb_ratios[0]:.2f}-{kb_ratios[-1]:.2f}x); it matched {kb_lines} lines.")
    ratios = sorted(k3[0] / g[0] for g, k3 in zip(results["grep"], results["k3"]) if g[0])
    g = min(results["grep"], key=lambda r: r[0])
    k = min(results["k3"], key=lambda r: r[0])
    o = min(results["one"], key=lambda r: r[0])
    one_ratios = sorted(r[0] / g_[0] for g_, r in zip(results["grep"], results["one"]) if g_[0])
    tree = max(r[3] for r in results["k3"])
    tree_pss = max(r[4] for r in results["k3"])
    same = json.loads((tmpdir / "one.json").read_text())["matches"] == json.loads((tmpdir / "k3.json").read_text())["matches"]
    for n in sweep:
        same = same and json.loads((tmpdir / f"j{n}.json").read_text())["matches"] == json.loads(
            (tmpdir / "one.json").read_text())["matches"]
    sweep_rows = ""
    if py_argv:
        same = same and json.loads((tmpdir / "py.json").read_text())["matches"] == json.loads(
            (tmpdir / "one.json").read_text())["matches"]
        rs = sorted(r[0] / g_[0] for g_, r in zip(results["grep"], results["py"]) if g_[0])
        best = min(results["py"], key=lambda r: r[0])
        sweep_rows += (f"| `K3DOCTOR_PURE_PYTHON=1 ...` (default, the pure-Python stage 1) | {best[0]:.2f} | "
                       f"{best[1] / 1e6:.1f} (tree {max(r[3] for r in results['py']) / 1e6:.1f}, PSS "
                       f"{max(r[4] for r in results['py']) / 1e6:.1f}) | {size / 1e6 / best[0]:.0f} "
                       f"| **{rs[len(rs) // 2]:.2f}x** ({rs[0]:.2f}-{rs[-1]:.2f}x) |\n")
    for n in sweep:
        rs = sorted(r[0] / g_[0] for g_, r in zip(results["grep"], results[f"j{n}"]) if g_[0])
        best = min(results[f"j{n}"], key=lambda r: r[0])
        sweep_rows += (f"| `... --jobs {n}` | {best[0]:.2f} | {best[1] / 1e6:.1f} (tree "
                       f"{max(r[3] for r in results[f'j{n}']) / 1e6:.1f}, PSS "
                       f"{max(r[4] for r in results[f'j{n}']) / 1e6:.1f}) | {size / 1e6 / best[0]:.0f} "
                       f"| **{rs[len(rs) // 2]:.2f}x** ({rs[0]:.2f}-{rs[-1]:.2f}x) |\n")
    grep_lines = int((tmpdir / "grep.out").read_text().strip() or 0)
    doc = json.loads((tmpdir / "k3.json").read_text())
    got = [m["id"] for m in doc["matches"]]
    counts = {m["id"]: m["count"] for m in doc["matches"]}

    ok = got[:1] == ["torch-cuda-oom"] and counts.get("nccl-watchdog-timeout", 0) == planted - 2
    ratio = ratios[len(ratios) // 2] if ratios else float("inf")
    from k3doctor.explain.literal_scan import available as c_stage1
    from k3doctor.explain.split_scan import usable_cpus

    one_ratio = one_ratios[len(one_ratios) // 2]
    md = f"""# `k3doctor explain --log` benchmark

Generated by `python benchmarks/bench_explain.py --size-mb {args.size_mb}{' --unique-ids' if args.unique_ids else ''}` (same run, same file,
page cache warm; {args.repeat} interleaved timed runs of each, best times shown, not polled; memory from one
more polled run of each). Machine: {os.cpu_count()} CPUs visible,
{usable_cpus()} usable (shared;
load average {load_before[0]:.1f} before, {load_after[0]:.1f} after), Python
{sys.version.split()[0]}, `{subprocess.run(['grep', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}`;
explain's stage 1: {'the C extension (k3doctor/explain/_litscan.c)' if c_stage1() else 'pure Python (the C extension is not built here, or K3DOCTOR_PURE_PYTHON is set)'}.

| | wall (s) | peak RSS (MB) | throughput (MB/s) | ratio to grep (median, range) |
|---|---:|---:|---:|---|
| `grep -E -c '<{len(eres)} obvious patterns>'` (LC_ALL=C) | {g[0]:.2f} | {g[1] / 1e6:.1f} | {size / 1e6 / g[0]:.0f} | 1x |
| `k3doctor explain --log FILE --format json` (default: forked helpers, one per usable CPU up to 8) | {k[0]:.2f} | {k[1] / 1e6:.1f} (tree {tree / 1e6:.1f}, PSS {tree_pss / 1e6:.1f}) | {size / 1e6 / k[0]:.0f} | **{ratio:.2f}x** ({ratios[0]:.2f}-{ratios[-1]:.2f}x) |
| `k3doctor explain --log FILE --format json --jobs 1` (one process) | {o[0]:.2f} | {o[1] / 1e6:.1f} | {size / 1e6 / o[0]:.0f} | {one_ratio:.2f}x ({one_ratios[0]:.2f}-{one_ratios[-1]:.2f}x) |
{sweep_rows}
- Log: {size / 2**20:.0f} MiB synthetic SGLang/vLLM/NCCL rank log ({gen_s:.1f} s to generate;
  request and communicator ids {'fresh in every block' if args.unique_ids else 'recurring every ~24 MiB'}), with
  ANSI colour, a few invalid UTF-8 bytes, benign warnings, and {planted} planted error lines
  (one OOM with its traceback header, then repeated NCCL watchdog timeouts).
- Ratio explain / grep, median of {len(ratios)} interleaved pairs: **{ratio:.2f}x** (min {ratios[0]:.2f}x,
  max {ratios[-1]:.2f}x; target <= 2x); one process: {one_ratio:.2f}x
  ({one_ratios[0]:.2f}-{one_ratios[-1]:.2f}x). The reports are {'identical' if same else 'DIFFERENT'}.
  Peak RSS target < 100 MB: **{'met' if k[1] < 100e6 else 'NOT met'}** per process
  ({k[1] / 1e6:.1f} MB, one process {o[1] / 1e6:.1f} MB); the parent and its helpers together peak at
  {tree / 1e6:.1f} MB RSS (shared pages counted once per process) and {tree_pss / 1e6:.1f} MB PSS
  (shared pages counted once).
- grep matched {grep_lines} lines; explain ranked {got[:4]} (OOM first, symptoms after):
  {'correct' if ok else 'UNEXPECTED'}.
- grep patterns: `{"|".join(eres)}` (explain runs its {skipped} KB patterns behind anchors derived
  from the KB).{kb_line}
"""
    print(md)
    if args.write:
        Path(args.write).write_text(md)
    if not args.keep:
        log.unlink(missing_ok=True)
    for p in tmpdir.iterdir():
        if p != log:
            p.unlink()
    if not args.keep:
        tmpdir.rmdir()
    return 0 if ok and same else 1


if __name__ == "__main__":
    raise SystemExit(main())
