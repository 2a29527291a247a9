"""A marker regex's yes/no search that runs only the alternatives that can match the line.

The fallback's marker regexes (``kb/fallback.toml``: ``[markers]``) are alternations of a hundred
or more alternatives, and Python's ``re`` tries each of them at every position of a line: tens of
microseconds per line, for every line stage 2 tests as a possible error line. Most alternatives
require a literal (``CUDA out of memory``, ``deprecated``): :func:`~.prefilter.required_literals`
derives, for each alternative, literals one of which is in every line it matches. Where the C
extension is built (:func:`~.literal_scan.literal_finder`), one C pass over the line finds which of
those literals occur (case-insensitively: a superset of the case-sensitive occurrences), and only
the alternatives one of whose literals occurs are searched; the alternatives with no literal of at
least 3 bytes are searched on every line, as one regex.

The answer is always the whole regex's (``bool(rx.search(text))``): an alternative is skipped only
where a literal that every match of it holds is absent. ``tests/test_explain_gated.py`` compares
the two on every corpus line, every KB example and random text. Where the extension is not built
(or ``K3DOCTOR_PURE_PYTHON`` is set), and for a regex whose alternatives cannot be read, the
whole regex is searched.
"""

from __future__ import annotations

import re

from .literal_scan import KeywordFinder, literal_finder
from .prefilter import required_literals
from .tail_anchor import _class_end, _group_end

__all__ = ["GatedSearch"]

MIN_BYTES = 3  # the C pass files a literal under a 3-byte gram


class GatedSearch:
    """``search(text) -> bool``, the same as ``bool(rx.search(text))`` (see the module doc)."""

    def __init__(self, rx: re.Pattern[str]) -> None:
        self.rx = rx
        self._built = False
        self._finder: KeywordFinder | None = None
        self._always: re.Pattern[str] | None = None
        #: the gated alternatives: sources, each compiled when a line first needs it
        self._gated: list[re.Pattern[str] | str] = []
        #: per literal the finder holds (by rank): the gated alternatives that require it
        self._alts_of: list[list[int]] = []

    def _build(self) -> None:
        self._built = True
        alts = split_alternatives(self.rx.pattern)
        if not alts or len(alts) < 2:
            return
        always: list[str] = []
        gated: list[tuple[str, set[bytes]]] = []
        for alt in alts:
            try:
                req = required_literals(alt, self.rx.flags)
            except re.error:
                return  # (not a whole alternative: the reader took the source apart wrongly)
            except (RecursionError, ValueError, TypeError, KeyError, AttributeError, IndexError):
                req = None  # (no literal derived: searched on every line)
            # (only ASCII text is gated: a literal it can hold is ASCII; a non-ASCII one, such as the
            # KELVIN SIGN variant of an ignore-case "k", cannot occur in it)
            lits = None if req is None else {w.encode("ascii").lower() for w in req if w.isascii()}
            if lits and min(map(len, lits)) >= MIN_BYTES and all(b"\n" not in w for w in lits):
                gated.append((alt, lits))
            else:
                always.append(alt)
        if not gated:
            return
        words = sorted({w for _alt, lits in gated for w in lits})
        finder = literal_finder(words)
        if finder is None:
            return
        rank = {w: r for r, w in enumerate(words)}
        alts_of: list[list[int]] = [[] for _ in words]
        for k, (_alt, lits) in enumerate(gated):
            for w in lits:
                alts_of[rank[w]].append(k)
        self._gated = [alt for alt, _lits in gated]
        self._always = re.compile("|".join(f"(?:{a})" for a in always), self.rx.flags) if always else None
        self._alts_of = alts_of
        self._finder = finder

    def search(self, text: str) -> bool:
        """Whether ``rx`` matches somewhere in ``text``."""
        if not self._built:
            self._build()
        finder = self._finder
        if finder is None or not text.isascii():
            return self.rx.search(text) is not None
        if self._always is not None and self._always.search(text):
            return True
        ranks = finder.ranks(text.encode("ascii"))
        if not ranks:
            return False
        tried: set[int] = set()
        gated, alts_of = self._gated, self._alts_of
        for r in ranks:
            for k in alts_of[r]:
                if k not in tried:
                    tried.add(k)
                    rx = gated[k]
                    if isinstance(rx, str):
                        try:
                            rx = gated[k] = re.compile(rx, self.rx.flags)
                        except re.error:  # (read apart wrongly: the whole regex from here on)
                            self._finder = None
                            return self.rx.search(text) is not None
                    if rx.search(text):
                        return True
        return False


def split_alternatives(src: str) -> list[str] | None:
    """The top-level alternatives of a regex source, a group that is a whole alternative
    (``(?:...)``, ``(...)``) taken apart as well; None where the source holds what this reader does
    not take apart (a back-reference, a named group, flags for the whole pattern)."""
    parts: list[str] = []
    start, i, n = 0, 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            if src[i + 1:i + 2].isdigit() or src[i + 1:i + 2] in ("g", "k", "P", ""):
                return None
            i += 2
            continue
        end: int | None = i + 1
        if c == "[":
            end = _class_end(src, i)
        elif c == "(":
            if src.startswith(("(?P", "(?("), i) or re.match(r"\(\?[aiLmsux-]+\)", src[i:]):
                return None
            end = _group_end(src, i)
        elif c == ")":
            return None
        elif c == "|":
            parts.append(src[start:i])
            start = i + 1
        if end is None:
            return None
        i = end
    parts.append(src[start:])
    out: list[str] = []
    for p in parts:
        whole = p.startswith("(") and _group_end(p, 0) == len(p)
        inner = p[3:-1] if whole and p.startswith("(?:") else p[1:-1] if whole and not p.startswith("(?") else None
        if inner is None:
            out.append(p)
            continue
        got = split_alternatives(inner)
        if got is None:
            return None
        out += got
    return out
