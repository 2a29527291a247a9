"""The precision gates of ``k3doctor explain`` one by one: error top-1 and benign alarms with each
combination of gates on (dev split in full; held-out as aggregate counts only).

    python benchmarks/explain_gates.py [--log]

The gates (k3doctor/explain/fallback.py ``GATES``): ``warning`` (a WARNING line that names no
failure is soft), ``fallback`` (a fallback verdict needs a hard error line), ``corroboration``
(soft matches stand only beside a hard error line). Columns: dev top-1; dev benign alarms;
the same benign rows with every line's level and log prefix removed ("bare", as pasted or as
SGLang prints them); dev errors the fallback alone gets right (no signature: the gate's cost on
errors nobody wrote a signature for); held-out top-1 and benign alarms. ``--misses GATES`` prints the dev rows that
this combination loses or gains against no gate (dev only; comma-separated gate names or 'none').
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.validate_explain import alarms, evaluate, load, pct, top1  # noqa: E402
from k3doctor.explain.fallback import GATES, load_fallback, strip_log_prefix  # noqa: E402
from k3doctor.explain.scan import Scanner  # noqa: E402


def scanner_with(gates: frozenset[str]) -> Scanner:
    return Scanner(fallback=dataclasses.replace(load_fallback(), gates=gates))


def parse(spec: str) -> frozenset[str]:
    got = frozenset() if spec == "none" else frozenset(s.strip() for s in spec.split(",") if s.strip())
    if not got <= GATES:
        raise SystemExit(f"unknown gate(s): {sorted(got - GATES)}; known: {sorted(GATES)}")
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", action="store_true", help="log mode (stage-1 prefilter) instead of text mode")
    ap.add_argument("--misses", metavar="GATES", help="dev rows this combination changes against no gate")
    ap.add_argument("--sample", nargs="+", type=Path, metavar="JSONL",
                    help="score these collected rows (counts only) instead of the corpus")
    args = ap.parse_args(argv)
    errors, benign = load("errors.jsonl"), load("benign.jsonl")
    if args.sample:
        rows = [json.loads(ln) for p in args.sample for ln in p.read_text(encoding="utf-8").splitlines()
                if ln.strip()]
        errors = [{"id": str(i), **r, "split": "dev"} for i, r in enumerate(rows) if r["expected_category"] != "benign"]
        benign = [{"id": str(i), **r, "split": "dev"} for i, r in enumerate(rows) if r["expected_category"] == "benign"]
        print(f"sample: {len(errors)} error rows, {len(benign)} benign rows (reported in the dev columns)")
    if args.misses:
        base, other = scanner_with(frozenset()), scanner_with(parse(args.misses))
        for r in errors:
            if r["split"] != "dev":
                continue
            a, b = top1(base, r["excerpt"], args.log), top1(other, r["excerpt"], args.log)
            want = r["expected_category"]
            if (a[0] == want) != (b[0] == want):
                print(f"{'LOST' if a[0] == want else 'GAINED'} {r['id']} {want}: {a[1]} -> {b[1]}")
                print("    " + r["excerpt"][:300].replace("\n", " | "))
        for r in benign:
            if r["split"] != "dev":
                continue
            a, b = alarms(base, r["excerpt"], args.log), alarms(other, r["excerpt"], args.log)
            if bool(a) != bool(b):
                print(f"{'ALARM' if b else 'QUIET'} {r['id']}: {a} -> {b}")
                print("    " + r["excerpt"][:300].replace("\n", " | "))
        return 0
    names = sorted(GATES)
    dev_err = [r for r in errors if r["split"] == "dev"]
    # the dev benign rows as if pasted without their level (or printed by a logger that has none,
    # as SGLang's): every line's log prefix, level included, removed
    bare = [{**r, "excerpt": "\n".join(strip_log_prefix(ln) for ln in r["excerpt"].splitlines())}
            for r in benign if r["split"] == "dev"]
    print(f"{'gates':<31} {'dev top-1':>15} {'dev benign':>10} {'bare':>7} {'fb-alone':>8} "
          f"{'held-out top-1':>15} {'held-out benign':>15}")
    for k in range(len(names) + 1):
        for combo in itertools.combinations(names, k):
            scanner = scanner_with(frozenset(combo))
            res = evaluate(scanner, errors, benign, args.log)
            dev, held = res["dev"], res["heldout"]
            stripped = sum(bool(alarms(scanner, r["excerpt"], args.log)) for r in bare)
            # the fallback alone (no signature): what the gate costs on errors nobody wrote one for
            alone = Scanner(signatures=[], fallback=scanner.fallback)
            right = sum(top1(alone, r["excerpt"], args.log)[0] == r["expected_category"] for r in dev_err)
            print(f"{'+'.join(combo) or 'none':<31} {pct(dev['top1'], dev['rows']):>15} "
                  f"{dev['benign_alarms']:>4}/{dev['benign_rows']:<5} {stripped:>3}/{len(bare):<3} "
                  f"{right:>4}/{len(dev_err):<3} {pct(held['top1'], held['rows']):>15} "
                  f"{held['benign_alarms']:>8}/{held['benign_rows']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
