"""Meta-tests that keep the check catalogue honest (style.md A12)."""

from __future__ import annotations

import re
from pathlib import Path

from k3doctor.check import CODE_RE
from k3doctor.registry import family_docs
from k3doctor.registry import load_checks

ROOT = Path(__file__).resolve().parent.parent
TESTS = "\n".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))


def test_every_check_is_documented_and_in_a_known_family() -> None:
    checks = load_checks()
    assert len(checks) >= 60
    for code, cls in checks.items():
        assert CODE_RE.match(code) and cls.family() in family_docs(), code
        assert cls.title() and not cls.title().endswith("."), code
        for heading in ("What it checks", "Why it matters", "How to fix"):
            assert heading in cls.doc(), f"{code}: no '{heading}' section"


def test_every_check_is_exercised_by_some_test() -> None:
    """Each code appears in the tests (pass/fail cases live next to the family's tests)."""
    missing = [code for code in load_checks() if not re.search(rf"\b{code}\b", TESTS)]
    assert missing == [], missing
