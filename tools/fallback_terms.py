"""Candidate category terms for the explain fallback (``k3doctor/explain/kb/fallback.toml``),
derived from the development split of the error corpus, and an audit of the shipped terms.

    python tools/fallback_terms.py                  # candidates (words and word pairs)
    python tools/fallback_terms.py --audit          # shipped terms: dev threads per category
    python tools/fallback_terms.py --min-threads 4 --precision 0.8

Only ``split == "dev"`` rows are read (held-out rows are never opened). For each dev error row the
text the fallback classifies is rebuilt: its error lines (``FallbackModel.is_error_line``), with
log prefixes and source paths removed, lower-cased. A candidate is a word (letters, digits, ``_``,
``-``, ``.``, at least 4 characters, not a number or a hex id) or a pair of adjacent words; it is
counted once per *thread* (not per row: several rows of one thread are one piece of evidence).
A candidate is printed when at least ``--min-threads`` threads hold it, at least ``--precision`` of
them expect one category, and it is not already a term of that category. The output is a list to
curate by hand: keep the engine-meaningful words (an API, a library, a failure the engines name),
drop the thread-specific ones (a model name, a host, a path), and give the kept ones a weight.

``--audit`` prints every shipped term with the dev threads per category that hold it, and flags
(``!``) a term whose threads mostly expect another category (at least 3 threads): a term that
votes against the evidence.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from k3doctor.explain.fallback import _drop_source_paths, load_fallback, strip_log_prefix  # noqa: E402

_WORD = re.compile(r"[a-z][a-z0-9_.\-]{2,60}[a-z0-9]")
_NOISE = re.compile(r"^(?:[0-9a-f]{6,}|.*\d{3,}.*|[\w-]+\.(?:py|cc|cpp|cu|cuh|h|hpp|json|so|log))$")
_STOP = frozenset("""
this that with from have been were will when then than there their they what which while into
your does only some more most must also just like such each other after before about above below
line file call most very used using uses use same does done cannot could would should error errors
failed fail fails failure exception traceback recent last most call found none true false self
""".split())


def dev_texts(model) -> list[tuple[str, str, str]]:
    """(thread, expected category, classified text) of every dev error row."""
    path = ROOT / "fixtures" / "errors" / "errors.jsonl"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r["split"] != "dev":
            continue
        lines = [ln for ln in r["excerpt"].splitlines() if model.is_error_line(ln)]
        text = "\n".join(_drop_source_paths(strip_log_prefix(ln)) for ln in lines).lower()
        out.append((r["thread"], r["expected_category"], text))
    return out


def candidates(texts: list[tuple[str, str, str]]) -> dict[str, Counter]:
    """candidate -> Counter(category -> number of threads holding it)."""
    seen: dict[str, dict[str, str]] = defaultdict(dict)   # cand -> thread -> category
    for thread, cat, text in texts:
        grams: set[str] = set()
        for ln in text.splitlines():
            words = [w for w in _WORD.findall(ln) if not _NOISE.match(w)]
            grams.update(w for w in words if w not in _STOP)
            grams.update(f"{a} {b}" for a, b in zip(words, words[1:]) if not (a in _STOP and b in _STOP))
        for g in grams:
            seen[g][thread] = cat
    return {g: Counter(th.values()) for g, th in seen.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audit", action="store_true", help="shipped terms: dev threads per category")
    ap.add_argument("--min-threads", type=int, default=3)
    ap.add_argument("--precision", type=float, default=0.75)
    ap.add_argument("--category", help="only this category")
    args = ap.parse_args(argv)
    model = load_fallback()
    texts = dev_texts(model)
    if args.audit:
        for cat in model.categories:
            if args.category and cat.name != args.category:
                continue
            print(f"[{cat.name}]")
            for t in cat.terms:
                got = Counter()
                threads: dict[str, str] = {}
                for thread, want, text in texts:
                    if t.occurs_in(text):
                        threads[thread] = want
                got = Counter(threads.values())
                n = sum(got.values())
                flag = "!" if n >= 3 and got[cat.name] * 2 < n else " "
                print(f" {flag} {t.text!r:<36} w={t.weight:<4g} threads={n:<3} "
                      + ", ".join(f"{c} {k}" for c, k in got.most_common(4)))
        return 0
    shipped = {c.name: {t.text for t in c.terms} for c in model.categories}
    rows = []
    for g, got in candidates(texts).items():
        n = sum(got.values())
        if n < args.min_threads:
            continue
        cat, k = got.most_common(1)[0]
        if k / n < args.precision or cat not in shipped or (args.category and cat != args.category):
            continue
        if any(g in s or s in g for s in shipped[cat]):
            continue
        rows.append((cat, -k, g, n))
    for cat, negk, g, n in sorted(rows):
        print(f"{cat:<12} {-negk:>3}/{n:<3} {g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
