"""The README's promises: quick start commands, the catalogue, the CI wiring."""

from __future__ import annotations

import re
from pathlib import Path

from tools.update_readme import updated

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_catalogue_is_current() -> None:
    assert updated(README) == README, "run `python tools/update_readme.py`"


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one() -> None:
    section = README.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in section.strip().splitlines() if line.strip()]
    assert commands == ["pip install . && k3doctor demo", "pip install -e '.[dev]' && python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    fresh = ci.split("# -- step 2", 1)[0]
    # step 1 runs both commands verbatim, in a fresh venv, before anything installs torch
    for command in commands:
        assert command in fresh, command
    assert "python3 -m venv" in fresh and "torch==" not in fresh
    assert "torch==" in ci.split("# -- step 2", 1)[1]


def test_every_documented_code_exists() -> None:
    from k3doctor.registry import load_checks

    codes = set(load_checks())
    mentioned = set(re.findall(r"`([A-Z]{2,4}\d{3})`", README))
    assert mentioned <= codes, mentioned - codes
