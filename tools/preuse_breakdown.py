"""Where fresh rows were missed: each collection round's *dev* rows, explained by the code and KB
of the commit the round was scored against, broken down by what answered.

Every round's first-score record (``fixtures/errors/scores/rNN-first-score.json``) says how many of
its rows the KB of ``kb_commit`` named right before any rule used them: the honest estimate for
errors nobody here has read. This tool says *why* the others were missed, from the dev rows only:

* **silent**: nothing answered;
* **wrong, signature**: a signature answered, with another category;
* **wrong, fallback**: no signature answered and the fallback (``confidence = "low"``) named
  another category;

and how often each source was right when it answered, with the commonest (expected <- given)
category pairs. Held-out rows are never read: a round's rows are matched to the built corpus's
``split == "dev"`` rows by source and excerpt, and the rest are skipped.

    python tools/preuse_breakdown.py                # rounds 14 and later, a table
    python tools/preuse_breakdown.py --from 30      # rounds 30 and later
    python tools/preuse_breakdown.py --json         # counts, machine-readable

Each distinct ``kb_commit`` is checked out once with ``git worktree add --detach`` into a temporary
directory (removed afterwards) and imported in a fresh interpreter, so a round is explained by the
code of its time as well as its KB. Needs the git history (a full clone); a commit that is not
there is reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "errors"

#: run inside the checked-out commit: one JSON line per row (the row's id, category, id, confidence)
_SCORER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from k3doctor.explain.scan import Scanner
scanner = Scanner()
for line in sys.stdin:
    row = json.loads(line)
    report = scanner.explain_bytes(row["excerpt"].encode("utf-8", "surrogateescape"), prefilter=True)
    first = report.matches[0] if report.matches else None
    alarms = [m.sig.id for m in report.matches if not m.benign]
    print(json.dumps({"id": row["id"], "category": first.sig.category if first else None,
                      "sig": first.sig.id if first else None,
                      "confidence": first.confidence if first else "", "alarms": alarms}))
"""


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def rounds(start: int) -> list[tuple[int, str, list[dict], list[dict]]]:
    """``(round, kb_commit, dev error rows, dev benign rows)`` of every scored round from ``start``."""
    dev = {(r["source"], r["excerpt"]): r for r in _rows("errors.jsonl") if r["split"] == "dev"}
    dev_benign = {(r["source"], r["excerpt"]): r for r in _rows("benign.jsonl") if r["split"] == "dev"}
    out = []
    for path in sorted(CORPUS.glob("scores/r*-first-score.json")):
        m = re.fullmatch(r"r(\d+)-first-score\.json", path.name)
        if not m or int(m.group(1)) < start:
            continue
        n = int(m.group(1))
        try:
            commit = json.loads(path.read_text(encoding="utf-8")).get("kb_commit")
        except (OSError, ValueError) as exc:
            raise SystemExit(f"{path}: not a first-score record ({exc})") from None
        if not commit:
            continue
        errors, benign = [], []
        for f in sorted(CORPUS.glob(f"collected/r{n}_*.jsonl")):
            for line in f.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    raise SystemExit(f"{f}: a line that is not JSON") from None
                key = (row.get("source"), row.get("excerpt"))
                if key in dev:
                    errors.append(dev[key])
                elif key in dev_benign:
                    benign.append(dev_benign[key])
        if errors or benign:
            out.append((n, commit, errors, benign))
    return out


def score_at(commit: str, rows: list[dict], tmp: Path) -> list[dict] | None:
    """The answers of the code and KB of ``commit`` on ``rows`` (None: the commit is not here, or
    its package failed to run on them)."""
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "-q", f"{commit}^{{commit}}"],
                          capture_output=True, text=True)
    if full.returncode:
        return None
    tree = tmp / full.stdout.strip()
    if not tree.exists():
        made = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), commit],
                              capture_output=True, text=True)
        if made.returncode:
            return None
    done = subprocess.run([sys.executable, "-c", _SCORER, str(tree)], input="".join(json.dumps(r) + "\n" for r in rows),
                          capture_output=True, text=True)
    if done.returncode:  # (that commit's package does not import or run here: say so, skip it)
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"{commit[:12]}: its explain did not run ({last})", file=sys.stderr)
        return None
    return [json.loads(line) for line in done.stdout.splitlines()]


def breakdown(start: int) -> dict:
    """The counts over every round from ``start`` (see the module doc)."""
    errors: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    per_round: dict[int, dict] = {}
    missing: list[int] = []
    benign_rows = benign_alarms = 0
    try:
        with tempfile.TemporaryDirectory(prefix="k3d-preuse-") as name:
            tmp = Path(name)
            for n, commit, rows, benign in rounds(start):
                got = score_at(commit, rows + benign, tmp)
                if got is None:
                    missing.append(n)
                    continue
                expected: dict[str, str] = {r["id"]: r["expected_category"] for r in rows}
                here: Counter[str] = Counter()
                for answer in got:
                    if answer["id"] not in expected:
                        benign_rows += 1
                        benign_alarms += bool(answer["alarms"])
                        continue
                    exp, cat = expected[answer["id"]], answer["category"]
                    source = "fallback" if answer["confidence"] == "low" else "signature"
                    if cat is None:
                        kind = "silent"
                    elif cat == exp:
                        kind = f"right, {source}"
                    else:
                        kind = f"wrong, {source}"
                        pairs[(exp, cat)] += 1
                    here[kind] += 1
                errors.update(here)
                per_round[n] = {"commit": commit[:12], "rows": len(rows), **here}
    finally:  # (the temporary trees are gone now: forget them)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True)
    return {"rows": sum(errors.values()), "errors": dict(errors),
            "pairs": [[e, g, k] for (e, g), k in pairs.most_common()],
            "benign": {"rows": benign_rows, "alarms": benign_alarms},
            "rounds": per_round, "commits_missing": missing}


def _share(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "0/0"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="start", type=int, default=14, help="first round (default 14)")
    ap.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = ap.parse_args(argv)
    got = breakdown(args.start)
    if args.json:
        print(json.dumps(got, indent=1, sort_keys=True))
        return 0
    e, n = got["errors"], got["rows"]
    if not n:
        print(f"no dev rows to explain: no round from {args.start} on has a first-score record "
              "(fixtures/errors/scores/rNN-first-score.json with a kb_commit) and dev rows in the corpus"
              + (f"; skipped rounds {got['commits_missing']}" if got["commits_missing"] else ""))
        return 0
    print(f"dev rows of rounds {args.start}+, each scored by the commit its round was scored against: {n}")
    print(f"  right: {_share(e.get('right, signature', 0) + e.get('right, fallback', 0), n)}")
    print(f"  silent: {_share(e.get('silent', 0), n)}")
    for source in ("signature", "fallback"):
        right, wrong = e.get(f"right, {source}", 0), e.get(f"wrong, {source}", 0)
        print(f"  {source} answered {right + wrong}: right {_share(right, right + wrong)}, "
              f"wrong {wrong} ({100 * wrong / n:.1f}% of all rows)")
    print(f"  dev benign rows: {got['benign']['rows']}, flagged then: {got['benign']['alarms']}")
    print("  commonest wrong answers (expected <- given): " +
          (", ".join(f"{a} <- {b} {k}" for a, b, k in got["pairs"][:10]) or "none"))
    if got["commits_missing"]:
        print(f"  skipped (kb_commit not in this clone, or its explain did not run): rounds {got['commits_missing']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
