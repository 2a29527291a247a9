"""Generalisation probes on the development corpus: a pasted error or benign line keeps its
answer when it arrives framed the way real pastes frame it (rich boxes, markdown quotes, code
ticks, bullets, process/rank/time prefixes, other letter case). Only ``dev`` rows are used."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from k3doctor.explain.fallback import load_fallback, strip_log_prefix, strip_tags
from k3doctor.explain.kb import clean_line
from k3doctor.explain.scan import Scanner

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "errors"
SCANNER = Scanner()


def _rows(name: str) -> list[dict]:
    rows = [json.loads(x) for x in (CORPUS / name).read_text(encoding="utf-8").splitlines() if x.strip()]
    return [r for r in rows if r["split"] == "dev"]


def _per_line(f):
    return lambda t: "\n".join(f(x) if x.strip() else x for x in t.split("\n"))


FRAMES = {
    "box": _per_line(lambda x: "\u2502 " + x + " \u2502"),
    "quote": _per_line(lambda x: "> " + x),
    "ticks": _per_line(lambda x: "`" + x + "`"),
    "bold": _per_line(lambda x: "**" + x + "**"),
    "bullet": _per_line(lambda x: "- " + x),
    "rank": _per_line(lambda x: "[rank0]: " + x),
    "sglang": _per_line(lambda x: "[2025-01-01 00:00:00 TP0] " + x),
    "ray": _per_line(lambda x: "(RayWorkerWrapper pid=123, ip=10.0.0.1) " + x),
    "lower": str.lower,
}


def _top1(text: str) -> str | None:
    m = SCANNER.explain_bytes(text.encode("utf-8", "surrogateescape")).matches
    return m[0].sig.category if m else None


@pytest.mark.parametrize("frame", sorted(FRAMES))
def test_framed_benign_dev_lines_stay_benign(frame):
    f = FRAMES[frame]
    flagged = [r["id"] for r in _rows("benign.jsonl")
               if not all(m.benign for m in SCANNER.explain_bytes(f(r["excerpt"]).encode()).matches)]
    assert not flagged, flagged


@pytest.mark.parametrize("frame", ["box", "quote", "rank", "sglang", "lower"])
def test_framed_dev_errors_keep_their_category(frame):
    """At most 2% of the rows answered right lose their answer under a frame."""
    f = FRAMES[frame]
    rows = _rows("errors.jsonl")
    right = [r for r in rows if _top1(r["excerpt"]) == r["expected_category"]]
    lost = [r["id"] for r in right if _top1(f(r["excerpt"])) != r["expected_category"]]
    assert len(lost) <= 0.02 * len(right), (frame, lost)


def test_prefix_words_do_not_vote_for_a_category():
    fb = load_fallback()
    bare = "RuntimeError: Expect (32 <= headDim <= 2048), got headDimQk=576"
    for prefix in ("[rank3]: ", "(VllmWorker rank=3 pid=9) ERROR 01-02 03:04:05 [core.py:1] ",
                   "[2026-01-01 10:00:00 DP1 TP3 EP3] ", "node7:123:456 [3] "):
        assert fb.score(prefix + bare, []) == fb.score(bare, []), prefix


def test_frames_and_prefixes_are_stripped():
    assert clean_line("\u2502 Tensor parallel size (16) exceeds available GPUs (8). \u2502") == \
        "Tensor parallel size (16) exceeds available GPUs (8)."
    assert clean_line("> - **RuntimeError: x**") == "RuntimeError: x"
    assert strip_log_prefix("(APIServer pid=1) (EngineCore_DP0 pid=2) ERROR 10-30 17:32:00 [x.py:6] boom") == "boom"
    assert strip_tags("[rank0]: WARNING 01-01 00:00:00 [y.py:1] z").startswith("WARNING")


@pytest.mark.parametrize("text", ["(" * 200_000, "\u2502 " * 200_000 + "x", "[rank1]:" * 100_000,
                                  "a:1:2 [3] " * 50_000, "`" * 300_000 + "x" + " " * 300_000])
def test_stripping_is_linear_on_hostile_lines(text):
    t0 = time.perf_counter()
    clean_line(text)
    strip_log_prefix(text)
    strip_tags(text)
    assert time.perf_counter() - t0 < 1.0
