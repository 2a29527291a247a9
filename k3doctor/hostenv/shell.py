"""Quote values for ``eval`` in sh, bash, zsh and fish, whatever bytes they contain.

POSIX shells (sh, dash, bash, zsh): single quotes keep every character literal except ``'``
itself, written as ``'\\''``. fish: inside single quotes only ``\\`` and ``'`` are special and are
escaped with a backslash. Names are checked against ``[A-Za-z_][A-Za-z0-9_]*``.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

__all__ = ["SHELLS", "quote", "export_line", "comment_line", "render"]

SHELLS = ("sh", "bash", "zsh", "fish")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quote(value: str, shell: str = "sh") -> str:
    """Quote ``value`` so that the shell reads it back byte for byte."""
    if "\x00" in value:
        raise ValueError("a NUL byte cannot be passed through a shell variable")
    if shell == "fish":
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if shell not in SHELLS:
        raise ValueError(f"unknown shell {shell!r} (use one of {', '.join(SHELLS)})")
    return "'" + value.replace("'", "'\\''") + "'"


def export_line(name: str, value: str, shell: str = "sh") -> str:
    """``export NAME='value'`` (or ``set -gx NAME 'value'`` for fish)."""
    if not _NAME.match(name):
        raise ValueError(f"{name!r} is not a valid environment variable name")
    if shell == "fish":
        return f"set -gx {name} {quote(value, shell)};"
    return f"export {name}={quote(value, shell)}"


def comment_line(text: str) -> str:
    """A ``#`` comment, one line per input line; safe in every supported shell and on a terminal
    (control characters from input are shown as ``\\xNN``, escape sequences dropped)."""
    from ..termsafe import sanitize

    return "\n".join("# " + sanitize(line) for line in (text.splitlines() or [""]))


def render(exports: Mapping[str, str], shell: str = "sh", comments: Iterable[str] = ()) -> str:
    """The whole script: comments first, then one export per line."""
    lines = [comment_line(c) for c in comments]
    lines += [export_line(k, v, shell) for k, v in exports.items()]
    return "\n".join(lines) + "\n"
