"""Speed of a refactor: two checkouts of k3doctor, the same commands, interleaved, median of N.

Run: ``python benchmarks/bench_refactor.py BEFORE_DIR AFTER_DIR K3_SKELETON [N]`` where the dirs are
checkouts (e.g. ``git worktree add /tmp/before <commit>``) and K3_SKELETON a directory made by
``fixtures.checkpoints.generate.make_kimi_k3``. Prints a Markdown table of the median wall time of
each command on each checkout and their ratio. Not a test: numbers go to docs/benchmarks.md.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

if len(sys.argv) < 4:
    sys.exit(__doc__)
BEFORE, AFTER, K3 = sys.argv[1:4]
N = int(sys.argv[4]) if len(sys.argv) > 4 else 5
TREES = {"before": BEFORE, "after": AFTER}
SNAP = os.path.join(AFTER, "fixtures", "snapshots", "h200-1gpu.json")
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "k3doctor --help": [sys.executable, "-m", "k3doctor", "--help"],
    "check --snapshot h200-1gpu": [sys.executable, "-m", "k3doctor", "check", "--snapshot", SNAP, "--format", "json"],
    "K3 header verdict (--select CKPT)": [sys.executable, "-m", "k3doctor", "check", "--model", K3, "--select", "CKPT", "--format", "json"],
    "plan K3 from 96 headers": [sys.executable, "-m", "k3doctor", "plan", "--model", K3, "--engine", "sglang", "--tp", "16", "--ep", "16", "--gpu", "h200", "--format", "json"],
    "plan --search K3 from 96 headers": [sys.executable, "-m", "k3doctor", "plan", "--model", K3, "--engine", "sglang", "--gpu", "h200", "--search", "--format", "json"],
}
res = {(c, t): [] for c in CASES for t in TREES}
# like an installed tool: byte code cached (outside the checkouts; PYTHONPYCACHEPREFIX mirrors the
# absolute paths, so the two trees do not share it), a first run of each case compiles it
CACHE = tempfile.mkdtemp(prefix="k3bench-pyc-")
BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
for warm in (True, *([False] * N)):
    for c, argv in CASES.items():
        for t, root in TREES.items():
            env = dict(BASE_ENV, PYTHONPATH=root, NO_COLOR="1", PYTHONPYCACHEPREFIX=CACHE)
            t0 = time.perf_counter()
            p = subprocess.run(argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if not warm:
                res[(c, t)].append(time.perf_counter() - t0)
            if p.returncode not in (0, 1):
                print("rc", p.returncode, c, t, p.stderr[-300:])
print(f"| case | {' | '.join(TREES)} | after/before |\n|---|---:|---:|---:|")
for c in CASES:
    b, a = (statistics.median(res[(c, t)]) for t in TREES)
    print(f"| {c} | {b:.3f} s | {a:.3f} s | {a / b:.2f} |")
