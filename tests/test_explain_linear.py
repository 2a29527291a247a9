"""The explain engine is linear-time: no signature backtracks on long keyword + filler lines.

Every signature's literal keywords are followed by 100k characters of filler of several classes
(spaces, letters, digits, punctuation, a mix, repeated keyword fragments, repeated example
prefixes), which is what makes a backtracking regex explode. Each line goes through the same path
as pasted text (the scanner caps the line it hands to the regexes), under a budget of CPU time
(the process's own: other work on a shared machine does not count against it).

Two static checks keep the patterns linear without timing anything: no unbounded repeat nested in
another, and no pattern that a search can start with an unbounded repeat (``\\w+ is not
supported``: ``re.search`` retries it at every position of a long run of word characters, O(n^2);
``\\b\\w{1,80} is not supported`` starts only where a run starts).
"""

from __future__ import annotations

import time

try:
    import re._constants as sre_c
    import re._parser as sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse as sre_p  # type: ignore[no-redef]

import pytest

from k3doctor.explain import load_kb
from k3doctor.explain.scan import Scanner

FILLER = 100_000
#: CPU seconds for all the filler lines of one signature (a quadratic pattern took 5-9 s per line)
BUDGET_PER_SIGNATURE = 3.0


def _fillers(sig) -> dict[str, str]:
    units = {"spaces": " ", "letters": "a", "digits": "1", "punct": ":", "mixed": "ab 1:/.(",
             "brackets": "[(a", "slashes": "a/", "words": "x_y."}
    for i, kw in enumerate(sig.keywords[:3]):
        units[f"kw{i}-frag"] = kw[: max(1, len(kw) // 2)]
    for i, ex in enumerate(sig.examples[:2]):
        first = ex.splitlines()[0] if ex.strip() else ex
        units[f"ex{i}-prefix"] = first[: max(3, len(first) // 2)]
    return {name: (u * (FILLER // len(u) + 1))[:FILLER] for name, u in units.items() if u}


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


@pytest.mark.parametrize("sig", load_kb(), ids=lambda s: s.id)
def test_keyword_plus_filler_lines_stay_within_budget(scanner: Scanner, sig) -> None:
    head = " ".join(sig.keywords)
    t0 = time.process_time()
    slowest = (0.0, "")
    for name, filler in _fillers(sig).items():
        t = time.process_time()
        scanner.explain_bytes((head + filler).encode(), prefilter=False)
        slowest = max(slowest, (time.process_time() - t, name))
    total = time.process_time() - t0
    assert total < BUDGET_PER_SIGNATURE, f"{sig.id}: {total:.2f} s (slowest filler {slowest[1]}: {slowest[0]:.2f} s)"


def _repeats(pattern: str) -> list[tuple[int, bool]]:
    """(nesting depth, unbounded) for every repeat in ``pattern``."""
    out: list[tuple[int, bool]] = []

    def walk(items, depth: int) -> None:
        for op, av in items:
            if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
                lo, hi, sub = av
                # an optional group (?:...)? runs at most once; a body that starts with a literal
                # separator (``(?:\.\d+)*``) cannot split one run two ways: neither nests
                body = list(sub)
                separated = bool(body) and body[0][0] == sre_c.LITERAL
                counts = hi != 1 and not separated
                out.append((depth, hi == sre_c.MAXREPEAT))
                walk(sub, depth + 1 if counts else depth)
            elif op == sre_c.SUBPATTERN:
                walk(av[-1], depth)
            elif op == sre_c.BRANCH:
                for b in av[1]:
                    walk(b, depth)
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
                walk(av[1], depth)

    walk(sre_p.parse(pattern), 0)
    return out


def test_no_nested_unbounded_quantifiers() -> None:
    bad = []
    for sig in load_kb():
        for p in list(sig.patterns) + list(sig.extract.values()) + ([sig.context] if sig.context else []):
            reps = _repeats(p)
            if any(unbounded and depth > 0 for depth, unbounded in reps):
                bad.append(f"{sig.id}: {p}")
    assert not bad, "nested unbounded quantifiers:\n" + "\n".join(bad)


def test_the_check_above_would_catch_a_nested_quantifier() -> None:
    assert any(d > 0 and u for d, u in _repeats(r"(?:\w+\s?)+x"))
    assert not any(d > 0 and u for d, u in _repeats(r"(?: \([^)]{0,200}\))?\d+"))


def test_the_fallback_markers_have_no_nested_unbounded_quantifiers() -> None:
    """The markers (error, strong, hard, exception, not_error, info_level, hedge) run on every
    candidate line's first LINE_CHARS characters; they stay linear like the signatures."""
    from importlib import resources

    from k3doctor.explain.kb import tomllib

    text = (resources.files("k3doctor.explain") / "kb" / "fallback.toml").read_text(encoding="utf-8")
    markers = tomllib.loads(text)["markers"]
    assert "hard" in markers
    bad = [f"{key}: {p}" for key, pats in markers.items() for p in pats
           if any(unbounded and depth > 0 for depth, unbounded in _repeats(p))]
    assert not bad, "nested unbounded quantifiers:\n" + "\n".join(bad)


def leading_unbounded(pattern: str) -> bool:
    """Whether a search can start a match of ``pattern`` with an unbounded repeat: nothing before
    it (an anchor, a look-around, a literal or a class) decides where a match may start, so on a
    long run of the repeated class every position starts a scan to the run's end."""

    def leads(items) -> bool:
        for op, av in items:
            if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) or op is getattr(sre_c, "POSSESSIVE_REPEAT", None):
                lo, hi, sub = av
                if hi == sre_c.MAXREPEAT:
                    return True
                if lo == 0:  # an optional head: what comes after it may lead as well
                    if leads(sub):
                        return True
                    continue
                return leads(sub)
            if op == sre_c.SUBPATTERN:
                return leads(av[-1])
            if op == sre_c.BRANCH:
                return any(leads(b) for b in av[1])
            return False  # an anchor, a look-around, a literal or a class decides the start
        return False

    return leads(sre_p.parse(pattern))


def test_the_leading_repeat_check_catches_what_it_should() -> None:
    for bad in (r"\w+ is not supported", r"\d+ Insufficient", r"(?:foo|\d+)x", r"(?:ab)?[^ ]*x", r".*?x"):
        assert leading_unbounded(bad), bad
    for good in (r"\b\w+ is not", r"(?<!\d)\d+ x", r"x\w+", r"\w{1,80} x", r"^\s*x", r"(?:ab)?c\w*"):
        assert not leading_unbounded(good), good


def test_no_pattern_starts_with_an_unbounded_repeat() -> None:
    from importlib import resources

    from k3doctor.explain.kb import tomllib

    bad = [f"{sig.id}: {p}" for sig in load_kb()
           for p in list(sig.patterns) + list(sig.extract.values()) + ([sig.context] if sig.context else [])
           if leading_unbounded(p)]
    text = (resources.files("k3doctor.explain") / "kb" / "fallback.toml").read_text(encoding="utf-8")
    bad += [f"marker {key}: {p}" for key, pats in tomllib.loads(text)["markers"].items() for p in pats
            if leading_unbounded(p)]
    assert not bad, "patterns a search retries at every position (quadratic on a long run):\n" + "\n".join(bad)


def test_a_long_run_after_a_keyword_costs_linear_time(scanner: Scanner) -> None:
    """The two patterns the check above found (a 16k-character run of digits after "must be
    positive" took 0.8 s, 2 s for letters) now cost what any line does."""
    for filler in ("1", "a"):
        line = ("cp_world_size must be positive " + filler * 100_000).encode()
        t = time.process_time()
        scanner.explain_bytes(line, prefilter=False)
        assert time.process_time() - t < 0.5, filler
