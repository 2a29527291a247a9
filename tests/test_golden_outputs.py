"""The user-visible contract stays put: JSON / JUnit reports, exit codes and check codes over the
demo scenarios and the fixture snapshots match the golden files (tests/golden/make_golden.py).

An intended change regenerates them (``python -m tests.golden.make_golden``) and shows up in the diff.
"""

from __future__ import annotations

import os

import pytest

from tests.golden.make_golden import CASES, HERE, ROOT, render


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_matches_golden(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    want = (HERE / f"{name}.out").read_text(encoding="utf-8")
    got = render(name)
    if got != want:  # show the first differing line, not two 2,000-line blobs
        for i, (a, b) in enumerate(zip(got.splitlines(), want.splitlines()), 1):
            if a != b:
                pytest.fail(f"{name}.out line {i}:\n  golden: {b}\n  now:    {a}\n"
                            "(intended? python -m tests.golden.make_golden)")
        pytest.fail(f"{name}.out: {len(got.splitlines())} lines now, {len(want.splitlines())} golden")


def test_golden_cases_cover_every_exit_path_we_promise():
    codes = {(HERE / f"{n}.out").read_text(encoding="utf-8").split("\n", 1)[0] for n in CASES}
    assert {"exit 0", "exit 1"} <= codes, codes
    assert os.path.isdir(ROOT / "fixtures" / "snapshots")
