"""Every k3doctor command line written in README.md and docs/*.md parses: no documented flag is
stale or misspelt (the command is parsed, not run; the recipes in docs/recipes.md are run by
tests/test_recipes.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from k3doctor.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def documented_commands() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"```(?:bash|console|sh|shell)\n(.*?)```", text, re.S):
            logical = re.sub(r"\\\n\s*", " ", block)
            for line in logical.splitlines():
                line = line.strip()
                m = re.match(r"^(?:\$ )?(?:eval \"\$\()?(k3doctor [a-z].*)$", line)
                if not m:
                    continue
                cmd = m.group(1).split("  #", 1)[0].split(" # ", 1)[0].rstrip(')"').strip()
                out.append((f"{path.name}: {cmd}", cmd))
    return out


CASES = documented_commands()


def test_the_docs_have_commands() -> None:
    assert len(CASES) > 20


@pytest.mark.parametrize("where, cmd", CASES, ids=[w[:90] for w, _ in CASES])
def test_documented_command_parses(where: str, cmd: str) -> None:
    try:
        words = shlex.split(cmd.replace("…", ""))
    except ValueError:
        pytest.skip("not a complete shell line")
    words = words[1:]
    if not words or words[0].startswith("-"):
        return
    with click.Context(main, info_name="k3doctor") as ctx:
        sub = main.get_command(ctx, words[0])
        assert sub is not None, where
        args = words[1:]
        if isinstance(sub, click.Group):
            if not args or args[0].startswith("-"):
                return
            sub = sub.get_command(ctx, args[0])
            assert sub is not None, where
            args = args[1:]
        if "--help" in args or "-h" in args:
            return
        try:
            sub.make_context(words[0], list(args), parent=ctx)
        except click.UsageError as exc:
            if "Missing argument" in str(exc):
                return  # an elided placeholder
            pytest.fail(f"{where}: {exc}")
