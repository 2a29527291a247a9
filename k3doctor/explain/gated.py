"""A marker regex's yes/no search that runs only the alternatives that can match the line.

The fallback's marker regexes (``kb/fallback.toml``: ``[markers]``) are alternations of 5 to 85
alternatives, and Python's ``re`` tries each of them at every position of a line: tens of
microseconds per line, for every line stage 2 tests as a possible error line. Most alternatives
require a literal (``CUDA out of memory``, ``deprecated``): :func:`~.prefilter.required_literals`
derives, for each alternative, literals one of which is in every line it matches. Where the C
extension is built (:func:`~.literal_scan.literal_finder`), one C matcher over the literals of all
the marker regexes finds which occur in an ASCII line (case-insensitively: a superset of the
case-sensitive occurrences; once per line for all the regexes), and only the alternatives one of
whose literals occurs are searched; the alternatives with no literal of at least 3 bytes are
searched on every line, as one regex. A line that is not ASCII, and the first :data:`PLAN_AFTER`
searches of a run, use the whole regexes.

The answer is always the whole regex's (``bool(rx.search(text))``): an alternative is skipped only
where a literal that every match of it holds is absent. ``tests/test_explain_gated.py`` compares
the two on every corpus line, every KB example and random text. Where the extension is not built
(or ``K3DOCTOR_PURE_PYTHON`` is set), and for a regex whose alternatives cannot be read, the
whole regex is searched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .literal_scan import KeywordFinder, literal_finder
from .prefilter import required_literals
from .tail_anchor import alternatives

__all__ = ["GatedMarkers", "GatedSearch"]

MIN_BYTES = 3  # the C pass files a literal under a 3-byte gram
#: searches answered by the whole regexes before the plans are made (planning reads every
#: alternative, ~0.1 s: a pasted excerpt of a few lines never pays for it, a log soon does)
PLAN_AFTER = 256


@dataclass
class _Plan:
    """How one regex is searched: the alternatives with no usable literal as one regex, and the
    others, each searched only where one of its literals occurs."""

    rx: re.Pattern[str]
    always: re.Pattern[str] | None
    #: the gated alternatives: sources, each compiled when a line first needs it
    gated: list[re.Pattern[str] | str]
    #: per literal (its rank in the shared finder): the gated alternatives that require it
    alts_of: dict[int, list[int]] = field(default_factory=dict)

    def alternative(self, k: int) -> re.Pattern[str] | None:
        rx = self.gated[k]
        if isinstance(rx, str):
            try:
                rx = self.gated[k] = re.compile(rx, self.rx.flags)
            except re.error:  # (read apart wrongly)
                return None
        return rx


def _plan(rx: re.Pattern[str]) -> tuple[re.Pattern[str] | None, list[tuple[str, set[bytes]]]] | None:
    """The always-searched part of ``rx`` and its gated alternatives with their literals (lower-cased
    ASCII bytes, each of at least :data:`MIN_BYTES`); None where ``rx`` is searched whole."""
    alts = alternatives(rx.pattern)
    if not alts or len(alts) < 2:
        return None
    always: list[str] = []
    gated: list[tuple[str, set[bytes]]] = []
    for alt in alts:
        try:
            req = required_literals(alt, rx.flags)
        except re.error:
            return None  # (not a whole alternative: the reader took the source apart wrongly)
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
        return None
    return (re.compile("|".join(f"(?:{a})" for a in always), rx.flags) if always else None), gated


class GatedMarkers:
    """Yes/no searches of several regexes (by name), each the same as ``bool(rx.search(text))``,
    sharing one C matcher over the literals all of them require (see the module doc). A text asked
    about by several regexes in a row is passed over once."""

    def __init__(self, regexes: Mapping[str, re.Pattern[str]], plan_after: int | None = None) -> None:
        self.regexes = dict(regexes)
        #: whole-regex searches left before the plans are made (:data:`PLAN_AFTER`)
        self._wait = PLAN_AFTER if plan_after is None else plan_after
        self._built = False
        self._finder: KeywordFinder | None = None
        self._plans: dict[str, _Plan] = {}
        self._last: tuple[str, list[int]] = ("", [])

    def _build(self) -> None:
        self._built = True
        planned = {name: got for name, rx in self.regexes.items() if (got := _plan(rx)) is not None}
        if not planned:
            return
        words = sorted({w for _always, gated in planned.values() for _alt, lits in gated for w in lits})
        finder = literal_finder(words)
        if finder is None:
            return
        rank = {w: r for r, w in enumerate(words)}
        for name, (always, gated) in planned.items():
            plan = _Plan(self.regexes[name], always, [alt for alt, _lits in gated])
            for k, (_alt, lits) in enumerate(gated):
                for w in lits:
                    plan.alts_of.setdefault(rank[w], []).append(k)
            self._plans[name] = plan
        self._finder = finder
        self._last = ("", finder.ranks(b""))

    def search(self, name: str, text: str) -> bool:
        """Whether the regex ``name`` matches somewhere in ``text``."""
        if not self._built:
            if self._wait > 0:
                self._wait -= 1
                return self.regexes[name].search(text) is not None
            self._build()
        plan = self._plans.get(name)
        if plan is None or self._finder is None or not text.isascii():
            return self.regexes[name].search(text) is not None
        if plan.always is not None and plan.always.search(text):
            return True
        if self._last[0] == text:
            ranks = self._last[1]
        else:
            ranks = self._finder.ranks(text.encode("ascii"))
            self._last = (text, ranks)
        tried: set[int] = set()
        for r in ranks:
            for k in plan.alts_of.get(r, ()):
                if k in tried:
                    continue
                tried.add(k)
                rx = plan.alternative(k)
                if rx is None:  # (the whole regex from here on)
                    del self._plans[name]
                    return plan.rx.search(text) is not None
                if rx.search(text):
                    return True
        return False


class GatedSearch:
    """One regex's :class:`GatedMarkers` search: ``search(text) -> bool``."""

    def __init__(self, rx: re.Pattern[str], plan_after: int | None = None) -> None:
        self.rx = rx
        self.markers = GatedMarkers({"rx": rx}, plan_after)

    def search(self, text: str) -> bool:
        return self.markers.search("rx", text)
