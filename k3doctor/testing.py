"""Helpers for testing checks (k3doctor's own and plugins'): run one check on facts given as
keyword arguments, through the same parameter injection the runner uses.

    from k3doctor.testing import run, skip_reason

    findings = run(OS003, limits={"nofile": {"soft": 1024, "hard": 4096}})
    assert findings[0].code == "OS003"
    assert "no usable limits fact" in skip_reason(OS003, limits=None)
"""

from __future__ import annotations

from typing import Any, Mapping

from .check import Check, call_run
from .facts import Facts
from .model import Finding, Skip

__all__ = ["run", "skip_reason", "facts_of"]


def facts_of(options: Mapping[str, Any] | None = None, **facts: Any) -> Facts:
    """A static fact set: the keyword arguments whose value is not None, and ``options``."""
    return Facts({k: v for k, v in facts.items() if v is not None}, options=dict(options or {}), source="test")


def run(check: type[Check], options: Mapping[str, Any] | None = None, **facts: Any) -> list[Finding]:
    """The check's findings on these facts (raises :class:`Skip` when it skips)."""
    return list(call_run(check(), facts_of(options, **facts)) or ())


def skip_reason(check: type[Check], options: Mapping[str, Any] | None = None, **facts: Any) -> str:
    """Why the check skips on these facts; AssertionError when it does not skip."""
    try:
        out = run(check, options, **facts)
    except Skip as exc:
        return exc.reason
    raise AssertionError(f"{check.code} did not skip; it returned {len(out)} finding(s)")
