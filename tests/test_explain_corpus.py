"""Top-1 category accuracy on real error excerpts from public issue reports.

``fixtures/errors/corpus.jsonl`` holds excerpts (quoted from the linked GitHub issues/PRs),
each with its source URL and the expected category; benign lines have category "benign".
The figures are published in docs/explain.md.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from k3doctor.explain.kb import CATEGORIES
from k3doctor.explain.scan import Scanner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "errors"


def _load(name: str) -> list[dict]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# corpus.jsonl: the development set; heldout.jsonl: collected after the KB was frozen
# (its pre-tuning score is recorded in docs/explain.md), now part of the regression set.
ROWS = _load("corpus.jsonl") + _load("heldout.jsonl")
ERRORS = [r for r in ROWS if r["expected_category"] != "benign"]
BENIGN = [r for r in ROWS if r["expected_category"] == "benign"]
SCANNER = Scanner()


def top1(text: str, prefilter: bool):
    report = SCANNER.explain_bytes(text.encode("utf-8"), prefilter=prefilter)
    return report.matches[0] if report.matches else None


def accuracy(rows, prefilter: bool, transform=lambda s: s):
    hits, misses = 0, []
    for r in rows:
        m = top1(transform(r["excerpt"]), prefilter)
        got = m.sig.category if m else None
        if got == r["expected_category"]:
            hits += 1
        else:
            misses.append((r["source"], r["expected_category"], got))
    return hits / len(rows), misses


def test_corpus_shape():
    assert len(ERRORS) >= 50 and len(BENIGN) >= 8
    assert len({r["excerpt"] for r in ROWS}) == len(ROWS)  # no duplicates
    for r in ROWS:
        assert set(r) == {"excerpt", "source", "expected_category"}
        assert r["source"].startswith("https://github.com/")
        assert r["expected_category"] in CATEGORIES
    # real reports from many projects, not one
    assert len({r["source"].split("/")[3] for r in ROWS}) >= 20


@pytest.mark.parametrize("prefilter", [False, True], ids=["text-mode", "log-mode"])
def test_top1_category_accuracy(prefilter):
    acc, misses = accuracy(ERRORS, prefilter)
    print(f"top-1 accuracy ({'log' if prefilter else 'text'} mode): {acc:.1%} on {len(ERRORS)}; misses: {misses}")
    assert acc >= 0.90, misses


@pytest.mark.parametrize("prefilter", [False, True], ids=["text-mode", "log-mode"])
def test_no_benign_line_is_reported_as_an_error(prefilter):
    for r in BENIGN:
        report = SCANNER.explain_bytes(r["excerpt"].encode(), prefilter=prefilter)
        assert report.matches, f"benign line not recognised: {r['excerpt']}"
        assert all(m.benign for m in report.matches), (r["excerpt"], [m.sig.id for m in report.matches])


def test_benign_lines_never_outrank_errors():
    for r in ERRORS[:20]:
        for b in BENIGN:
            text = b["excerpt"] + "\n" + r["excerpt"] + "\n" + b["excerpt"]
            m = top1(text, True)
            assert m is not None and not m.benign, (b["excerpt"], r["source"])


_HEX = re.compile(r"\b[0-9a-f]{6,}\b")
_NUM = re.compile(r"\d+\.\d+|\d{4,}")  # sizes, times, pids, ports; short codes (errno, Xid, SM) keep their meaning
_HOST = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*-?[a-z0-9]*)(?=:\d+:\d+ \[)")


def _perturb(seed: int):
    rnd = random.Random(seed)

    def f(text: str) -> str:
        text = _HEX.sub(lambda m: "".join(rnd.choice("0123456789abcdef") for _ in m.group(0)), text)
        text = _NUM.sub(lambda m: re.sub(r"\d", lambda _: str(rnd.randrange(10)), m.group(0)), text)
        text = _HOST.sub(lambda m: rnd.choice(["gpu-node-17", "h200b", "worker3"]), text)
        return text.replace("/home/", "/scratch/users/").replace("/root/", "/opt/svc/")

    return f


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_patterns_generalise_beyond_the_corpus_strings(seed):
    """Numbers, hashes, paths and hostnames in the excerpts are rewritten; accuracy holds."""
    acc, misses = accuracy(ERRORS, True, _perturb(seed))
    assert acc >= 0.90, misses
