"""Reading k3doctor's own versioned JSON documents (snapshots, manifests) with one-line errors,
through the bounded reader (:mod:`k3doctor.boundedio`): regular files only, capped, timed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .boundedio import BoundedReadError, read_bytes

__all__ = ["load_versioned_json", "loads_or_reason"]

#: the bounded reader's size cap for each document kind (manifests list one hash per shard)
_BOUND_KIND = {"k3doctor.manifest": "manifest", "k3doctor.snapshot": "snapshot"}


def loads_or_reason(text: str | bytes) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, why)`` when ``text`` is not JSON Python can hold: a syntax error
    (with its line and column), a number too long to convert, or nesting too deep."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
    except ValueError as exc:  # e.g. a number with more digits than Python converts
        return None, f"not usable JSON ({str(exc)[:120]})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"


def load_versioned_json(path: str | Path, *, kind: str, schema_version: int, what: str, remedy: str,
                        error: type[Exception]) -> dict[str, Any]:
    """Read ``path`` as a JSON object with ``"kind": kind`` and ``"schema_version": schema_version``.

    Every problem (missing, a directory, unreadable, not UTF-8, not JSON, wrong kind, wrong
    version) raises ``error`` with one line that names the file, says what is wrong and ends with
    ``remedy`` (how to re-create the document).
    """
    p = Path(path)
    try:
        raw = read_bytes(p, kind=_BOUND_KIND.get(kind, "snapshot"))
    except BoundedReadError as exc:
        if exc.reason == "no such file":
            raise error(f"{p}: no such file; {remedy}") from None
        if exc.reason.startswith("is a directory"):
            raise error(f"{p}: is a directory, expected a {what} JSON file") from None
        raise error(f"{p}: {exc.reason}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{p}: not UTF-8 text, so not a {what}; {remedy}") from None
    doc, why = loads_or_reason(text)
    if why:
        raise error(f"{p}: {why}; {remedy}")
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        raise error(f"{p}: not a k3doctor {what} (no \"kind\": \"{kind}\"); {remedy}")
    if doc.get("schema_version") != schema_version:
        raise error(f"{p}: {what} schema_version {doc.get('schema_version')!r} is not supported "
                    f"(this k3doctor reads {schema_version}); {remedy}")
    return doc
