#!/usr/bin/env python3
"""This round's DEV rows only, with what explain answers now (held-out rows are counted, never shown).

    python tools/rounds/dev_rows.py N [--all]

Run python -m fixtures.errors.build_corpus first. Without --all only dev rows that are wrong,
silent, answered only by the low-confidence fallback, or benign lines that alarm are printed.
"""
import sys
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from validate_explain import load_sample, split_of_sample, top1, alarms  # noqa: E402
from k3doctor.explain.scan import Scanner  # noqa: E402

if len(sys.argv) < 2 or not sys.argv[1].isdigit():
    raise SystemExit("usage: python tools/rounds/dev_rows.py N [--all]   (N: the round number)")
n = int(sys.argv[1]); show_all = "--all" in sys.argv
paths = [p for p in (ROOT / f"fixtures/errors/collected/r{n}_errors.jsonl", ROOT / f"fixtures/errors/collected/r{n}_benign.jsonl") if p.exists()]
if not paths:
    raise SystemExit(f"dev_rows.py: no fixtures/errors/collected/r{n}_*.jsonl under {ROOT} (run it from the checkout's root)")
errors, benign = load_sample(paths)
split = split_of_sample()
sc = Scanner()
hidden = 0
for r in errors:
    s = split(r)
    if s != "dev":
        hidden += 1; continue
    cat, sid, conf = top1(sc, r["excerpt"], False)
    ok = cat == r["expected_category"]
    tag = "RIGHT" if ok else ("SILENT" if cat is None else "WRONG")
    if conf == "low" and ok:
        tag = "RIGHT(fallback)"
    if show_all or tag != "RIGHT":
        print(f"[{tag}] expected {r['expected_category']} got {cat} ({sid}) {r['source']}\n    {r['excerpt'][:600]!r}\n")
for r in benign:
    s = split(r)
    if s != "dev":
        hidden += 1; continue
    a = alarms(sc, r["excerpt"], False)
    if show_all or a:
        print(f"[BENIGN {'ALARM ' + ','.join(a) if a else 'ok'}] {r['source']}\n    {r['excerpt'][:400]!r}\n")
print(f"({hidden} non-dev rows of this round not shown)")
