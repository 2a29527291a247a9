"""Where fresh rows are lost: each collection round's dev rows, replayed against the KB that first
scored them, split by what answered them.

A round's pre-use record (``fixtures/errors/scores/rNN-first-score.json``) counts how many of its
rows ``explain`` got right before any rule used them, but not *why* the others were missed. This
script answers that for the **dev rows only**: for every round with a record, it extracts
``k3doctor/`` as committed at the record's ``kb_commit`` (``git archive``, into a temporary
directory; the working tree is not touched), explains each of the round's dev rows with that
package in a subprocess, and sorts each answer into

* a signature that named the right category, or the wrong one,
* the fallback (no signature matched) with the right category, or the wrong one,
* silence ("nothing recognised"),

and does the same for the round's dev benign rows (an alarm is a non-benign match).

    python benchmarks/replay_fresh.py                 # rounds 81 on (about a minute per commit)
    python benchmarks/replay_fresh.py --from-round 60 --to-round 97
    python benchmarks/replay_fresh.py --misses        # also list the dev rows that were missed
    python benchmarks/replay_fresh.py --tiers         # by the tier of the answering signature

``--tiers`` also explains each dev row with the fallback alone (no signature, the same package) and
splits the signature answers by the tier of the signature (cause, generic, symptom, benign): how
often each tier was right, and, where a signature answered, whether the fallback alone would have
named the same category or the right one. It says whether letting the fallback overrule a weak
(generic or symptom) signature would gain rows on errors nobody had written a rule for yet.

Held-out rows (errors and benign) are dropped before anything is explained: their answers are
never computed, so they cannot be printed. A round's rows are found by their excerpts in
``fixtures/errors/collected/rNN_*.jsonl`` and their split read from the built corpus.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "errors"

#: run inside the subprocess, with the old package first on sys.path: reads rows from stdin,
#: writes one ``[category, id, confidence, alarm ids, tier, fallback-alone category]`` per row (the
#: last two only with a second argument ``tiers``; the tier is ``?`` for a package without tiers)
_WORKER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from k3doctor.explain.scan import Scanner
sc = Scanner()
alone = Scanner(signatures=[]) if sys.argv[2:] == ["tiers"] else None
out = []
for r in json.load(sys.stdin):
    text = r["excerpt"].encode("utf-8", "surrogateescape")
    rep = sc.explain_bytes(text, prefilter=False)
    m = rep.matches[0] if rep.matches else None
    row = [m.sig.category if m else None, m.sig.id if m else None,
           m.confidence if m else "", [x.sig.id for x in rep.matches if not x.benign]]
    if alone is not None:
        fb = alone.explain_bytes(text, prefilter=False).matches
        row += [getattr(m.sig, "tier", "?") if m else None, fb[0].sig.category if fb else None]
    out.append(row)
json.dump(out, sys.stdout)
"""


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def round_rows(n: int | str, corpus: dict[str, dict], benign: bool) -> list[dict]:
    """Round ``n``'s dev rows (errors, or benign), as the built corpus holds them (``n``: the
    round's label, a number with an optional letter for a later batch: ``104b``)."""
    out = []
    for path in sorted((CORPUS / "collected").glob(f"r{n}_*.jsonl")):
        if ("benign" in path.name) != benign:
            continue
        for r in load(path):
            row = corpus.get(r.get("excerpt", ""))
            if row is not None and row["split"] == "dev":
                out.append(row)
    return out


def records(first: int, last: int) -> dict[str, str]:
    """round label -> kb_commit, from the pre-use records (``r104b-first-score.json``: a second
    batch of round 104, scored against its own commit)."""
    out = {}
    for path in (CORPUS / "scores").glob("r*-first-score.json"):
        m = re.match(r"r((\d+)[a-z]?)-first-score\.json$", path.name)
        if m and first <= int(m.group(2)) <= last:
            commit = json.loads(path.read_text(encoding="utf-8")).get("kb_commit")
            if commit:
                out[m.group(1)] = commit
    return out


def _order(label: str) -> tuple[int, str]:
    return int(label.rstrip("abcdefghijklmnopqrstuvwxyz")), label


def explain_at(commit: str, rows: list[dict], tiers: bool = False) -> list[list]:
    """Each row explained by the package as committed at ``commit`` (rows: dev only); with
    ``tiers``, also the answering signature's tier and the fallback alone's category."""
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "k3doctor"],
                          capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory(prefix="k3d-replay-") as tmp:
        with tarfile.open(fileobj=BytesIO(blob)) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, filter="data")
            else:  # pragma: no cover - Python without extraction filters (our own git archive)
                tar.extractall(tmp)
        res = subprocess.run([sys.executable, "-c", _WORKER, tmp] + (["tiers"] if tiers else []),
                             input=json.dumps(rows),
                             capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from-round", type=int, default=81, metavar="N")
    ap.add_argument("--to-round", type=int, default=10**6, metavar="N")
    ap.add_argument("--misses", action="store_true", help="list the missed dev rows (id, want, got)")
    ap.add_argument("--tiers", action="store_true",
                    help="split the signature answers by tier, against the fallback alone")
    args = ap.parse_args(argv)

    errors = {r["excerpt"]: r for r in load(CORPUS / "errors.jsonl")}
    benign = {r["excerpt"]: r for r in load(CORPUS / "benign.jsonl")}
    by_commit: dict[str, list[str]] = collections.defaultdict(list)
    for n, commit in sorted(records(args.from_round, args.to_round).items(), key=lambda kv: _order(kv[0])):
        by_commit[commit].append(n)
    if not by_commit:
        print("no pre-use records in that range", file=sys.stderr)
        return 2
    total: collections.Counter[str] = collections.Counter()
    per_sig: collections.Counter[str] = collections.Counter()
    misses = []
    tiers: collections.Counter[tuple[str, str]] = collections.Counter()
    for commit, rounds in by_commit.items():
        rows = [r for n in rounds for r in round_rows(n, errors, benign=False)]
        bens = [r for n in rounds for r in round_rows(n, benign, benign=True)]
        try:
            got = explain_at(commit, rows + bens, args.tiers)
        except subprocess.CalledProcessError as exc:
            tail = (exc.stderr or b"")[-400:]
            tail = tail.decode("utf-8", "replace") if isinstance(tail, bytes) else tail
            print(f"rounds {','.join(rounds)}: cannot explain with the package at {commit[:12]} "
                  f"({' '.join(map(str, exc.cmd[:3]))} failed): {tail.strip()}", file=sys.stderr)
            return 3
        c: collections.Counter[str] = collections.Counter()
        for r, (cat, sid, conf, _, *extra) in zip(rows, got[:len(rows)]):
            if extra and cat is not None and conf != "low":
                count_tier(tiers, r["expected_category"], cat, *extra)
            if cat is None:
                kind = "silent"
            else:
                source = "fallback" if conf == "low" else "signature"
                kind = f"{source} {'right' if cat == r['expected_category'] else 'wrong'}"
                if kind == "signature wrong":
                    per_sig[sid] += 1
            c[kind] += 1
            if cat != r["expected_category"]:
                misses.append((r["id"], r["expected_category"], cat, sid, r["source"]))
        c["rows"] = len(rows)
        c["benign rows"] = len(bens)
        c["benign alarms"] = sum(bool(a) for *_, a in got[len(rows):])
        total.update(c)
        print(f"{commit[:8]} rounds {','.join(rounds)}: " + ", ".join(
            f"{k} {c[k]}" for k in ("rows", "signature right", "signature wrong", "fallback right",
                                    "fallback wrong", "silent", "benign rows", "benign alarms")))
    n = total["rows"] or 1
    seen = sorted((label for labels in by_commit.values() for label in labels), key=_order)
    print(f"\ndev rows of rounds {seen[0]}-{seen[-1]}, each against its round's kb_commit: {total['rows']}")
    for k in ("signature right", "signature wrong", "fallback right", "fallback wrong", "silent"):
        print(f"  {k:16s} {total[k]:4d} ({100 * total[k] / n:.1f}%)")
    sig = total["signature right"] + total["signature wrong"]
    fb = total["fallback right"] + total["fallback wrong"]
    if sig:
        print(f"  a signature answered {sig} ({100 * sig / n:.1f}%), right {100 * total['signature right'] / sig:.1f}% of those")
    if fb:
        print(f"  the fallback answered {fb} ({100 * fb / n:.1f}%), right {100 * total['fallback right'] / fb:.1f}% of those")
    print(f"  benign dev rows: {total['benign alarms']} alarms of {total['benign rows']}")
    if per_sig:
        print("  signatures that answered wrong: " + ", ".join(f"{k} {v}" for k, v in per_sig.most_common()))
    if args.tiers:
        print_tiers(tiers)
    if args.misses:
        for m in misses:
            print("  - {} want {}, got {} ({})  {}".format(*m))
    return 0


def count_tier(c: "collections.Counter[tuple[str, str]]", want: str, got: str, tier: str,
               alone: str | None) -> None:
    """Count one signature answer (category ``got`` from a signature of ``tier``) against the right
    category ``want`` and the fallback alone's category ``alone`` (None: it was silent)."""
    ok, alone_ok = got == want, alone == want
    c[(tier, "answered")] += 1
    c[(tier, "right")] += ok
    if not ok:
        c[(tier, "wrong, fallback agreed")] += alone == got
        c[(tier, "wrong, fallback right")] += alone_ok
    else:
        c[(tier, "right, fallback not")] += not alone_ok


def print_tiers(c: "collections.Counter[tuple[str, str]]") -> None:
    """The signature answers by tier, and what the fallback alone would have said instead."""
    order = ["cause", "generic", "symptom", "benign", "?"]
    seen = sorted({t for t, _ in c}, key=lambda t: (order.index(t) if t in order else len(order), t))
    print("  signature answers by tier (right/answered): " + ", ".join(
        f"{t} {c[(t, 'right')]}/{c[(t, 'answered')]}" for t in seen))
    wrong = sum(c[(t, "answered")] - c[(t, "right")] for t in seen)
    agreed = sum(c[(t, "wrong, fallback agreed")] for t in seen)
    right = sum(c[(t, "wrong, fallback right")] for t in seen)
    print(f"  where a signature was wrong ({wrong}): the fallback alone named the same category on {agreed}, "
          f"the right one on {right}")
    weak = ("generic", "symptom")
    gain = sum(c[(t, "wrong, fallback right")] for t in weak)
    loss = sum(c[(t, "right, fallback not")] for t in weak)
    print(f"  the fallback instead of a generic or symptom signature: {gain} rows gained, {loss} lost")


if __name__ == "__main__":
    sys.exit(main())
