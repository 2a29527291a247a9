"""``--select`` / ``--ignore`` by code (GPU004), prefix (GPU00) or family (GPU, gpu)."""

from __future__ import annotations

from typing import Iterable, Sequence

__all__ = ["SelectionError", "split_selectors", "matches", "apply_selection"]


class SelectionError(ValueError):
    """A selector that matches no known check."""


def split_selectors(values: Sequence[str] | None) -> list[str]:
    """Accept repeated options and comma lists: ``--select GPU,NET001``."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip().upper() for part in value.split(",") if part.strip())
    return out


def matches(code: str, selector: str) -> bool:
    """True when the selector is the code, a prefix of it, or its family."""
    return code.upper().startswith(selector.upper())


def apply_selection(codes: Iterable[str], select: Sequence[str], ignore: Sequence[str]) -> list[str]:
    """Codes kept after selection; the longest matching selector wins (flake8's rule)."""
    codes = list(codes)
    for selector in [*select, *ignore]:
        if not any(matches(c, selector) for c in codes):
            raise SelectionError(f"selector {selector!r} matches no check (see `k3doctor list`)")
    kept = []
    for code in codes:
        if select:
            sel = max((len(s) for s in select if matches(code, s)), default=-1)
        else:
            sel = 0
        ign = max((len(s) for s in ignore if matches(code, s)), default=-1)
        if sel >= 0 and sel > ign:
            kept.append(code)
    return kept
