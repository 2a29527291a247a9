"""The log-mode prefilter never changes a result: its anchors are derived from the KB and the
fallback's markers, and a scan with it equals a scan of every line.

Held-out corpus rows take part, but a failure names their id only (reading them would be tuning).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from k3doctor.explain import scan as scan_mod
from k3doctor.explain.fallback import load_fallback
from k3doctor.explain.kb import load_kb
from k3doctor.explain.prefilter import Prefilter, derive_anchors, required_literals
from k3doctor.explain.scan import Scanner

from fixtures.errors.framings import WRAPS

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "errors"
SCANNER = Scanner()


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


ERRORS = _rows("errors.jsonl")
BENIGN = _rows("benign.jsonl")


def summary(data: bytes, prefilter: bool, scanner: Scanner = SCANNER) -> tuple:
    """Everything a report says, except what stage 1 is about (candidate line count, time)."""
    r = scanner.explain_bytes(data, prefilter=prefilter)
    return ([(m.sig.id, m.count, m.first_file, m.first_line, m.excerpt, dict(m.values), list(m.locations),
              list(m.evidence), m.ts, m.confidence, m.verdict) for m in r.matches],
            r.lines_scanned, r.bytes_scanned, r.notes)


def _same(data: bytes, scanner: Scanner = SCANNER) -> bool:
    return summary(data, True, scanner) == summary(data, False, scanner)


# -- the literals a regex requires ------------------------------------------------------------

@pytest.mark.parametrize("pattern, want", [
    (r"[Ff]ail(?:ed|s)?", {"Fail", "Failed", "Fails", "fail", "failed", "fails"}),
    (r"\bError \d{3}: ", {"Error "}),
    (r"(?:CUDA )?out of memory\b", {"out of memory", "CUDA out of memory"}),
    (r"\b(?:[Cc]an ?not|[Uu]nable to)\b", {"Can not", "Cannot", "can not", "cannot", "Unable to", "unable to"}),
    (r"\w+ timed out", {" timed out"}),
    (r"(?:ab)+c", {"ab"}),
    (r"(?i)oom", {"oom", "ooM", "oOm", "oOM", "Oom", "OoM", "OOm", "OOM"}),
])
def test_required_literals(pattern: str, want: set[str]) -> None:
    assert required_literals(pattern) == want


@pytest.mark.parametrize("pattern", [r"\w+", r"a|\d", r"(?:xyz)?", r".{3}", r"[^a]b?"])
def test_no_literal_is_invented(pattern: str) -> None:
    assert required_literals(pattern) is None


def test_the_fallback_markers_give_anchors_and_every_marked_corpus_line_holds_one() -> None:
    fb = load_fallback()
    for rx in (fb.error_markers, fb.strong_markers):
        lits = required_literals(rx)
        assert lits, rx.pattern[:80]
        for r in ERRORS + BENIGN:
            for line in r["excerpt"].splitlines():
                if rx.search(line):
                    assert any(a in line for a in lits), r["id"]


def test_the_packaged_kb_has_a_prefilter() -> None:
    assert not SCANNER.prefilter.every_line
    keywords = {k.lower() for s in load_kb() for k in s.keywords}  # keywords match case-insensitively
    assert keywords <= {a.lower() for a in SCANNER.prefilter.anchors or ()}


# -- equal results with and without the prefilter ---------------------------------------------

@pytest.mark.parametrize("sig", load_kb(), ids=lambda s: s.id)
def test_every_example_and_near_miss_gives_the_same_result(sig) -> None:  # type: ignore[no-untyped-def]
    for text in sig.examples + sig.near_misses:
        assert _same(text.encode("utf-8", "surrogateescape")), (sig.id, text)


def test_every_corpus_row_gives_the_same_result() -> None:
    bad = [r["id"] for r in ERRORS + BENIGN if not _same(r["excerpt"].encode("utf-8", "surrogateescape"))]
    assert not bad, bad


_WORD = re.compile(r"[A-Za-z]{3,}")


def _colour(text: str, rnd: random.Random) -> str:
    """ANSI colour around and inside some words (stage 2 strips it, so stage 1 must see through it)."""
    def sub(m: re.Match[str]) -> str:
        w = m.group(0)
        if rnd.random() < 0.3:
            cut = rnd.randrange(1, len(w))
            return w[:cut] + "\x1b[1m" + w[cut:] + "\x1b[0m"
        return f"\x1b[3{rnd.randrange(8)}m{w}\x1b[0m" if rnd.random() < 0.3 else w
    return _WORD.sub(sub, text)


@pytest.mark.parametrize("seed", [1, 2])
def test_corpus_rows_in_colour_with_other_numbers_and_crlf_give_the_same_result(seed: int) -> None:
    rnd = random.Random(seed)
    bad = []
    for r in ERRORS + BENIGN:
        text = _colour(r["excerpt"], rnd)
        text = re.sub(r"\d", lambda _: str(rnd.randrange(10)), text)
        if rnd.random() < 0.3:
            text = text.replace("\n", "\r\n")
        if not _same(text.encode("utf-8", "surrogateescape")):
            bad.append(r["id"])
    assert not bad, bad


@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_wrapped_corpus_rows_give_the_same_result(wrap: str) -> None:
    """Line assembly (a wrapped line rejoined) happens in both modes alike: an anchor the wrap cut in
    two is found in the joined line, and a joined line is examined when any piece is a candidate."""
    f = WRAPS[wrap]
    rows = random.Random(wrap).sample(ERRORS + BENIGN, 400)
    bad = [r["id"] for r in rows if not _same(f(r["excerpt"]).encode("utf-8", "surrogateescape"))]
    assert not bad, bad


def test_an_anchor_cut_by_a_wrap_is_found_in_log_mode() -> None:
    line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB (GPU 3; 79.11 GiB total)"
    for width in (40, 52, 61):  # cuts inside "OutOfMemoryError", "out of memory", "allocate"
        text = "\n".join(line[i:i + width] for i in range(0, len(line), width)) + "\n"
        s = summary(text.encode(), True)
        assert s == summary(text.encode(), False)
        assert s[0][0][0] == "torch-cuda-oom", (width, s[0])


def test_rows_inside_noise_across_block_boundaries_give_the_same_result(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Small blocks, so rows, their context windows and their timestamps straddle boundaries."""
    monkeypatch.setattr(scan_mod, "BLOCK", 512)
    rnd = random.Random(5)
    noise = [f"[2026-11-30 10:{m:02d}:{s:02d} TP{m % 8}] Decode batch. #running-req: {s}, #token: {m * s}\n"
             for m in range(60) for s in range(0, 60, 7)]
    for chunk in range(0, len(ERRORS), 60):
        parts = []
        for r in ERRORS[chunk:chunk + 60]:
            parts += rnd.sample(noise, rnd.randrange(0, 6))
            parts.append(r["excerpt"] + "\n")
        data = "".join(parts).encode("utf-8", "surrogateescape")
        assert _same(data), f"rows {chunk}-{chunk + 59}"


def test_the_shape_cache_does_not_hide_a_line_in_a_later_block(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(scan_mod, "BLOCK", 256)
    clean = b"INFO 11-30 10:00:01 [loggers.py:116] Engine 000: Avg prompt throughput: 1.0 tokens/s\n"
    oom = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    data = clean * 40 + oom + clean * 40 + oom.replace(b"2.00", b"4.00")
    s = summary(data, True)
    assert s == summary(data, False)
    assert s[0][0][0] == "torch-cuda-oom" and s[0][0][1] == 2


# -- derived, not listed ----------------------------------------------------------------------

def test_a_new_signature_keyword_is_an_anchor_without_any_list_to_edit() -> None:
    from k3doctor.explain.kb import Signature

    sig = Signature(id="zq-made-up", category="other", title="t", keywords=("qqzzy frobnication",),
                    patterns=(r"qqzzy frobnication of (?P<what>\w+)",), cause="c", fix="f")
    scanner = Scanner(signatures=list(load_kb()) + [sig])
    data = b"INFO fine\n" * 50 + b"stage 3: qqzzy frobnication of widgets\n"
    assert _same(data, scanner)
    assert [m.sig.id for m in scanner.explain_bytes(data, prefilter=True).matches] == ["zq-made-up"]


def test_a_marker_without_a_literal_turns_the_prefilter_off() -> None:
    fb = load_fallback()
    loose = type(fb)(error_markers=re.compile(r"\w+ went wrong|\d+"), strong_markers=fb.strong_markers,
                     exception_line=fb.exception_line, not_error=fb.not_error, hedge=fb.hedge,
                     categories=fb.categories)
    scanner = Scanner(fallback=loose)
    assert scanner.prefilter.every_line
    data = b"INFO fine\n" * 5 + b"something 12 went wrong\n"
    assert _same(data, scanner)


def test_prefilter_finds_exactly_the_lines_holding_an_anchor() -> None:
    pf = Prefilter(["Xid", "out of memory", "Error", "\u00e9chec"])
    buf = ("ok\nNVRM: Xid 79\nfine\nCUDA \x1b[1mout of\x1b[0m memory\nError: x\n\u00e9chec 3\n"
           "nothing\nXi d\n").encode()
    spans, newlines = pf.candidates(buf)
    assert newlines == buf.count(b"\n")
    lines = buf.split(b"\n")
    assert [i for _, _, i in spans] == [1, 3, 4, 5]
    assert all(buf[st:en] == lines[i] for st, en, i in spans)
    assert derive_anchors(["a", ""], []) is None


# -- the hex-shape screen -----------------------------------------------------------------------

def _unscreened(anchors: tuple[str, ...], tails: tuple) -> Prefilter:  # type: ignore[type-arg]
    pf = Prefilter(anchors, tails)
    pf._hex_words = []  # every new shape searched with every pass, as before the screen
    return pf


def _id_heavy_blocks(anchors: list[str], seed: int) -> list[bytes]:
    """Blocks of a log whose request ids make a new shape per line, with anchors (and near misses
    that only the hex fold makes look alike) put inside ids, in capitals and in colour."""
    rnd = random.Random(seed)
    steady = [f"[2026-11-30 10:00:{s:02d} TP{s % 8}] Decode batch. #running-req: {s}, #token: {s * 7}"
              for s in range(60)]
    blocks = []
    for _ in range(3):
        lines = []
        for _ in range(6000):
            x = rnd.random()
            if x < 0.85:  # (new shapes stay under a quarter of the lines: the de-duplicating path)
                lines.append(rnd.choice(steady))
                continue
            rid = f"{rnd.getrandbits(64):016x}"
            line = f"INFO 11-30 10:00:00 [logger.py:43] Received request chatcmpl-{rid}: params: n=1"
            if x < 0.89:
                a = rnd.choice(anchors)
                a = a.upper() if rnd.random() < 0.3 else a
                if rnd.random() < 0.3:  # a near miss: hex letters and digits swapped for others
                    a = a.translate(str.maketrans("abcdef0123456789", "fedcba9876543210"))
                a = f"\x1b[31m{a}\x1b[0m" if rnd.random() < 0.1 else a
                cut = rnd.randrange(len(rid) + 1)
                line = line.replace(rid, rid[:cut] + a + rid[cut:])
            lines.append(line)
        blocks.append(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    return blocks


@pytest.mark.parametrize("seed", [1, 2])
def test_the_hex_shape_screen_finds_exactly_what_every_pass_finds(seed: int) -> None:
    """The screen skips the full passes only for shapes that cannot hold a screened anchor; on
    id-heavy blocks (the screen's case) its candidates equal those of every pass on every shape."""
    pf = SCANNER.prefilter
    assert pf.anchors is not None and pf._hex_words and pf._weak_words
    anchors = [a for a in pf.anchors if "\n" not in a]
    picked = random.Random(seed).sample(anchors, 400) + ["c1083", "exceeded", "fail", "Xid 79", "sm100"]
    screened, plain = Prefilter(pf.anchors, pf.tails), _unscreened(pf.anchors, pf.tails)
    for block in _id_heavy_blocks(picked, seed):
        got = screened.candidates(block)
        assert got == plain.candidates(block)
        assert len(got[0]) > 100
    assert screened._clean_hex.young and plain._known.young  # both took the de-duplicating path


def test_an_anchor_the_screen_cannot_take_is_still_found() -> None:
    """``c1083`` and ``exceed`` fold to hex shapes every id holds (``00000``, ``0x0000``): they are
    searched exactly, beside the screen, and found inside ids."""
    pf = Prefilter(["c1083", "exceed", "out of memory"])
    assert pf._weak_digit_words == [b"c0000"] and b"exceed" in pf._weak_words
    rows = [f"req {i:04x}{'deadbeef' * 2} ok" for i in range(4000)]
    rows[100] = "req 00c1083aa ok"
    rows[2000] = "req EXCEEDaa ok"
    rows[3000] = "req 00c1084aa ok"  # its folded form holds c0000, but not the anchor
    buf = ("\n".join(rows + ["fine"] * 12000) + "\n").encode()
    spans, _n = pf.candidates(buf)
    assert [i for _s, _e, i in spans] == [100, 2000]


def test_recent_add_keys_keeps_what_add_keeps() -> None:
    from k3doctor.explain.prefilter import _Recent

    keys = [b"k%05d" % i + b"x" * (i % 7) for i in range(1000)]
    for cap, cap_bytes in ((300, 4000), (300, 1000)):  # the count cap first, then the byte cap
        a, b = _Recent(cap, cap_bytes), _Recent(cap, cap_bytes)
        for part in (keys[:10], keys[10:700], keys[700:]):
            a.add((k, ()) for k in part)
            b.add_keys(part)
            assert (a.young, a.old, a.young_bytes) == (b.young, b.old, b.young_bytes)
        assert keys[-1] in b and keys[0] not in b


def test_the_digit_anchor_cache_keeps_no_long_shape() -> None:
    pf = Prefilter(["c1083"])
    long_shape = b"c0000 " + b"x" * 5000
    assert pf._digit_anchors(long_shape) == (b"c1083",) and not pf._digit_by_hex
    assert pf._digit_anchors(b"c0000 short") == (b"c1083",) and len(pf._digit_by_hex) == 1
