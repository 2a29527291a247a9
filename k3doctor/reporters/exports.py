"""Format the ``k3doctor env`` result: shell exports safe for ``eval``, or JSON. Only formats."""

from __future__ import annotations

import json
from typing import Any, Mapping

__all__ = ["render_exports"]


def render_exports(result: Mapping[str, Any], shell: str, fmt: str) -> str:
    """The text to print: ``fmt`` ``json`` (the result plus ``shell``) or ``shell`` (a header comment,
    the notes and problems as ``#`` comments, then one export per line in ``shell``'s syntax)."""
    if fmt == "json":
        return json.dumps({"shell": shell, **result}, indent=2, sort_keys=True) + "\n"
    from ..hostenv.shell import comment_line, export_line

    lines = [comment_line(f"k3doctor env ({shell})")]
    lines += [comment_line(n) for n in result["notes"]]
    lines += [comment_line("problem: " + e) for e in result["errors"]]
    lines += [export_line(k, v, shell) for k, v in result["exports"].items()]
    return "\n".join(lines) + "\n"
