"""The fallback's marker searches (:mod:`k3doctor.explain.gated`) answer exactly what the whole
regexes answer, on every corpus line, every KB example and random text.

Held-out rows take part only as text whose yes/no answers are compared; a failure prints counts,
never a row.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from k3doctor.explain import gated as gated_module
from k3doctor.explain import literal_scan as ls
from k3doctor.explain.fallback import load_fallback
from k3doctor.explain.gated import GatedMarkers, GatedSearch
from k3doctor.explain.kb import load_kb
from k3doctor.explain.prefilter import required_literals
from k3doctor.explain.tail_anchor import alternatives

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "errors"
MODEL = load_fallback()
MARKERS = [name for name in ("strong_markers", "error_markers", "not_error", "hedge", "exception_line",
                             "info_level", "consequence", "hard_markers", "hard_anycase")
           if getattr(MODEL, name) is not None]
needs_c = pytest.mark.skipif(not ls.available(), reason="the optional C extension _litscan is not built here")


def _corpus_lines() -> list[str]:
    lines: list[str] = []
    for name in ("errors.jsonl", "benign.jsonl"):
        for row in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            if row.strip():
                lines += json.loads(row)["excerpt"].splitlines()
    for sig in load_kb():
        for ex in list(sig.examples) + list(sig.near_misses):
            lines += ex.splitlines()
    return lines


LINES = _corpus_lines()


@needs_c
@pytest.mark.parametrize("name", MARKERS)
def test_gated_search_is_the_whole_regex_on_every_corpus_line(name):
    rx = getattr(MODEL, name)
    gated = GatedSearch(rx, plan_after=0)
    differ = sum(gated.search(t) != bool(rx.search(t)) for t in LINES)
    assert len(LINES) > 10_000 and differ == 0, (name, differ, len(LINES))  # (counts only)
    assert gated.markers._finder is not None and gated.markers._plans["rx"].gated, f"{name}: no alternative is gated"


@needs_c
@pytest.mark.parametrize("name", MARKERS)
def test_gated_search_on_random_mixtures_of_its_literals(name):
    """Texts glued from the regex's own literals, in mixed case, with the non-ASCII letters that
    ignore-case matching folds to ASCII (KELVIN SIGN, long s) and ``İ``."""
    rx = getattr(MODEL, name)
    gated = GatedSearch(rx, plan_after=0)
    words = sorted(required_literals(re.compile(alt, rx.flags)) or ()
                   for alt in alternatives(rx.pattern) or [])
    pool = sorted({w for ws in words for w in ws}) + ["Error", "ERROR: ", "failed", "INFO ", "]: "]
    rnd = random.Random(name)
    for _ in range(1500):
        parts = [rnd.choice(pool) for _ in range(rnd.randrange(0, 5))]
        noise = "".join(rnd.choice("ab XYZ_.:/[]()0123\u212a\u017f\u0130") for _ in range(rnd.randrange(0, 10)))
        text = "".join(c.swapcase() if rnd.random() < 0.2 else c for c in noise.join(parts) + noise)
        assert gated.search(text) == bool(rx.search(text)), (name, text)


def test_without_the_extension_the_whole_regex_is_searched(monkeypatch):
    monkeypatch.setenv(ls.PURE_PYTHON_ENV, "1")
    gated = GatedSearch(MODEL.hedge, plan_after=0)
    assert gated.search("this is expected") is True and gated.search("nothing") is False
    assert gated.markers._finder is None


def test_a_regex_that_cannot_be_taken_apart_is_searched_whole():
    for src in (r"(a)\1|bcd", r"(?P<x>abc)|def", r"(?i)abc|def", "abcdef"):
        gated = GatedSearch(re.compile(src), plan_after=0)
        assert gated.search("xx def") is bool(re.search(src, "xx def"))
        assert "rx" not in gated.markers._plans


@pytest.mark.parametrize("src, alts", [
    (r"abc|def", ["abc", "def"]),
    (r"(?:abc|d(?:e|f))|[|x]yz|a\|b", ["abc", "d(?:e|f)", "[|x]yz", r"a\|b"]),
    (r"(?:(?:one)|two)+|three", ["(?:(?:one)|two)+", "three"]),
    (r"(abc)(def)|(?-i:INFO)|(?<=x)yz", ["(abc)(def)", "(?-i:INFO)", "(?<=x)yz"]),
    (r"[]|]x|[^]|]y|[\]|]z", ["[]|]x", "[^]|]y", r"[\]|]z"]),
])
def test_alternatives(src, alts):
    assert alternatives(src) == alts


@pytest.mark.parametrize("src", [r"(a)\1|b", r"(?P<n>a)|b", r"(?i)a|b", r"(a|b", r"a)|b", r"[ab|c"])
def test_alternatives_refuses_what_it_cannot_read(src):
    assert alternatives(src) is None


@needs_c
def test_an_alternative_that_does_not_compile_falls_back_to_the_whole_regex():
    rx = re.compile(r"(?:alpha beta)|(?:gamma delta)")
    gated = GatedSearch(rx, plan_after=0)
    assert gated.search("xx gamma delta") is True
    gated.markers._plans["rx"].gated[0] = "(alpha"  # (as if the source had been read apart wrongly)
    assert gated.search("an alpha beta here") is True and "rx" not in gated.markers._plans


@needs_c
def test_the_model_searches_all_its_markers_through_one_matcher(monkeypatch):
    """Every marker regex of the fallback model is planned on one shared C matcher (after
    :data:`~k3doctor.explain.gated.PLAN_AFTER` searches), and the model's line tests answer as the
    whole regexes do."""
    monkeypatch.setattr(gated_module, "PLAN_AFTER", 0)
    model = load_fallback()
    model.is_error_line("RuntimeError: x")
    markers = model._gated
    assert markers is not None and markers._finder is not None
    assert set(markers._plans) >= {"strong_markers", "error_markers", "hedge", "consequence"}
    whole = type(model)(**{f: getattr(model, f) for f in ("error_markers", "strong_markers", "exception_line",
                                                          "not_error", "hedge", "categories", "info_level",
                                                          "consequence", "hard_markers", "hard_anycase")})
    whole._gated = GatedMarkers({})  # (no plan: every search is the whole regex's)
    whole._gated.regexes = {n: getattr(model, n) for n in MARKERS}
    whole._gated._built = True
    differ = sum((model.is_error_line(t), model.is_soft_line(t), model.is_consequence(t), model.is_hard_error_line(t))
                 != (whole.is_error_line(t), whole.is_soft_line(t), whole.is_consequence(t), whole.is_hard_error_line(t))
                 for t in LINES)
    assert differ == 0, differ


def test_a_few_searches_use_the_whole_regexes():
    """A pasted excerpt of a few lines never pays for planning."""
    gated = GatedSearch(MODEL.hedge, plan_after=3)
    for _ in range(3):
        assert gated.search("this is expected") is True
    assert not gated.markers._built
    assert gated.search("this is expected") is True and gated.markers._built
