"""Stage 1 of the log scan in C, where the optional extension ``_litscan`` is built.

The pure-Python prefilter (:mod:`.prefilter`) decides which lines of a block can matter: the
lines that hold an anchor (case-insensitively, ANSI colour removed) or match one of the marker
tails. :class:`LiteralScan` gives exactly the same lines from one C pass over the block, and
records where every line ends and the longest line on the way (what line assembly needs:
:class:`EndsLines`), so the block is never folded, split or de-duplicated in Python:

* **Anchors.** Each anchor of at least 3 bytes is filed under one of its 3-byte grams (the gram
  rarest in the log's first 16 KiB, so the verification runs seldom); the C pass folds each byte's
  case into a rolling gram, tests a 2 MiB bitmap of those grams, verifies the anchors filed under a
  gram that is there, and after a hit skips to the next line. Anchors with a digit are matched with
  their digits (the Python prefilter confirms them the same way); a two-byte anchor (``İ`` in
  UTF-8) is tested where its first byte occurs, a one-byte anchor makes every line holding it a hit.
* **Tails** (:mod:`.tail_anchor`) are run in C where they are a plain sequence of byte sets with
  repeat bounds holding no newline (``\\.[A-Z][A-Za-z0-9]{2,60}: ``), on text folded as the
  prefilter folds it (digits to ``0`` as well); another tail shape makes :func:`build` return
  None and the Python prefilter is used. A tail that may read non-ASCII text differently
  (:attr:`~.tail_anchor.Tail.unicode`) makes every line holding such a byte a hit, as there.
* **ANSI colour.** A line holding an ESC byte is handed back by the C pass; those lines are
  searched again with their escape sequences removed (:data:`~.prefilter.ANSI_BYTES`).

* **Stage 2 uses the same matcher** (:class:`KeywordFinder`): which of the knowledge base's
  keywords occur in a candidate line (:meth:`Scanner.candidates <.scan.Scanner.candidates>`), and
  which literals the alternatives of a fallback marker regex require (:mod:`.gated`), each in one
  C pass over the line instead of a Python loop over thousands of keywords or up to 85 regex
  alternatives tried at every position.

``tests/test_explain_literal_scan.py`` checks that the lines are the Python prefilter's on
generated logs, corpus rows and hostile input. Set ``K3DOCTOR_PURE_PYTHON=1`` to use the Python
prefilter even where the extension is built (the benchmarks compare both). The extension is
built by ``pip install`` where a C compiler and the Python headers are present; without them
the install goes on and explain uses the Python prefilter (the same answers, slower on large
logs: docs/benchmarks-explain.md).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .prefilter import _CASE, ANSI_BYTES, Prefilter
from .tail_anchor import DIFFERENT

try:
    import re._constants as _sc
    import re._parser as _sp
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sc  # type: ignore[no-redef]
    import sre_parse as _sp  # type: ignore[no-redef]

try:
    from . import _litscan  # type: ignore[attr-defined]
except ImportError:  # not built (no C compiler at install time): the Python prefilter is used
    _litscan = None

__all__ = ["LiteralScan", "EndsLines", "KeywordFinder", "build", "keyword_finder", "literal_finder",
           "available", "stage1_description", "tail_program", "PURE_PYTHON_ENV"]

PURE_PYTHON_ENV = "K3DOCTOR_PURE_PYTHON"
GRAM = 3                 # bytes of the gram an anchor is filed under
SAMPLE = 16 << 10        # bytes of the first block whose gram counts choose each anchor's gram
_DIGITS = set(b"0123456789")
_SPACE = set(b" \t\n\r\f\v")
_WORD = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def available() -> bool:
    """Whether the C stage 1 can be used here (built, and not switched off by the environment)."""
    return _litscan is not None and not os.environ.get(PURE_PYTHON_ENV)


def stage1_description() -> str:
    """What ``explain --log`` runs its stage 1 with here (for ``k3doctor version``)."""
    if _litscan is None:
        return "pure Python (the C extension _litscan was not built: no C compiler at install time)"
    if os.environ.get(PURE_PYTHON_ENV):
        return f"pure Python ({PURE_PYTHON_ENV} is set; the C extension is built)"
    return "the C extension _litscan (stage 2's keyword and marker look-ups too)"


# -- tails as byte-set programs ------------------------------------------------------------------
def _category(code: Any) -> set[int] | None:
    name = str(code).rsplit(".", 1)[-1].upper()
    every = set(range(256))
    table = {"CATEGORY_DIGIT": _DIGITS, "CATEGORY_NOT_DIGIT": every - _DIGITS,
             "CATEGORY_SPACE": _SPACE, "CATEGORY_NOT_SPACE": every - _SPACE,
             "CATEGORY_WORD": _WORD, "CATEGORY_NOT_WORD": every - _WORD}
    got = table.get(name)
    return None if got is None else set(got)


def _item_set(op: Any, av: Any) -> set[int] | None:
    """The bytes one parsed item of a ``bytes`` pattern matches (no flags), or None."""
    if op is _sc.LITERAL:
        return {av}
    if op is _sc.NOT_LITERAL:
        return set(range(256)) - {av}
    if op is _sc.ANY:
        return set(range(256)) - {10}
    if op is _sc.IN:
        out: set[int] = set()
        negate = False
        for sop, sav in av:
            if sop is _sc.NEGATE:
                negate = True
            elif sop is _sc.LITERAL:
                out.add(sav)
            elif sop is _sc.RANGE:
                out.update(range(sav[0], sav[1] + 1))
            elif sop is _sc.CATEGORY:
                cat = _category(sav)
                if cat is None:
                    return None
                out |= cat
            else:
                return None
        return set(range(256)) - out if negate else out
    return None


def tail_program(pattern: re.Pattern[bytes]) -> list[tuple[bytes, int, int]] | None:
    """A tail as the C pass runs it: ``[(set, lo, hi)]``, each ``set`` 256 bytes (1: the byte,
    folded as the prefilter folds it, is in the item's set), ``hi`` -1 for no bound; None where the
    tail is no plain sequence of byte sets (a group, an alternation, an assertion, a possessive
    repeat), or a set holds a newline."""
    if not isinstance(pattern.pattern, bytes) or pattern.flags & (re.MULTILINE | re.DOTALL | re.VERBOSE):
        return None
    icase = bool(pattern.flags & re.IGNORECASE)
    try:
        parsed = list(_sp.parse(pattern.pattern, pattern.flags))
    except re.error:
        return None
    out: list[tuple[bytes, int, int]] = []
    maxrepeat = getattr(_sc, "MAXREPEAT", None)
    for op, av in parsed:
        lo, hi = 1, 1
        if op in (_sc.MAX_REPEAT, _sc.MIN_REPEAT):  # (lazy or greedy: the same lines match)
            lo, hi, sub = av
            if len(sub) != 1:
                return None
            op, av = sub[0]
            hi = -1 if hi == maxrepeat else hi
        members = _item_set(op, av)
        if members is None:
            return None
        if icase:  # ASCII letters only, as ``re`` folds the case of bytes
            members |= {c ^ 0x20 for c in members if 65 <= c <= 90 or 97 <= c <= 122}
        # the C pass looks the folded byte up (the tail runs on folded text, as in Python)
        table = bytes(1 if c in members else 0 for c in range(256))
        if table[10]:
            return None
        out.append((table, lo, hi))
    return out or None


# -- the line table ------------------------------------------------------------------------------
class EndsLines:
    """:class:`~.assemble.Lines` from the C pass: where each line ends (``uint32`` per line)."""

    def __init__(self, buf: bytes, ends: bytes, top: int) -> None:
        self.buf = buf
        self._raw = ends
        self._ends = memoryview(ends).cast("I")
        self.top = top

    def __len__(self) -> int:
        return len(self._ends)

    def start(self, i: int) -> int:
        return self._ends[i - 1] + 1 if i else 0

    def end(self, i: int) -> int:
        return self._ends[i]

    def length(self, i: int) -> int:
        return self._ends[i] - (self._ends[i - 1] + 1 if i else 0)

    def at_least(self, n: int) -> list[int]:
        return _litscan.at_least(self._raw, n)  # type: ignore[no-any-return, union-attr]

    def __call__(self, i: int) -> bytes:
        return self.buf[self.start(i): self._ends[i]]

    def lengths(self, idx: Sequence[int]) -> list[int]:
        return _litscan.lengths(self._raw, list(idx))  # type: ignore[no-any-return, union-attr]

    def many(self, idx: list[int]) -> list[bytes]:
        return _litscan.lines(self.buf, self._raw, idx)  # type: ignore[no-any-return, union-attr]


# -- the scanner ---------------------------------------------------------------------------------
class LiteralScan:
    """The lines of a block that the prefilter keeps, found by the C pass (see the module doc)."""

    def __init__(self, matcher: Any) -> None:
        self._matcher = matcher

    def scan(self, buf: bytes) -> tuple[list[int], EndsLines, int]:
        """``(hit line indices in order, the block's lines, newlines)``."""
        hits, ends, newlines, top, esc = self._matcher.scan(buf)
        lines = EndsLines(buf, ends, top)
        if not esc:
            return hits, lines, newlines
        # the lines holding ESC, searched again with their escape sequences removed
        esc = sorted(set(esc))
        got = set(hits).difference(esc)
        stripped = b"\n".join(ANSI_BYTES.sub(b"", line) for line in lines.many(esc))
        got.update(esc[j] for j in self._matcher.scan(stripped, False)[0])
        return sorted(got), lines, newlines

    def hit_lines(self, text: bytes) -> list[int]:
        """Only the hit line indices of ``text`` (rejoined wrapped lines, for line assembly)."""
        return self.scan(text)[0]


def _offsets(anchors: Sequence[bytes], sample: bytes) -> list[int]:
    """For each anchor, where its rarest gram in ``sample`` starts."""
    counts = Counter(sample[i: i + GRAM] for i in range(max(0, len(sample) - GRAM + 1)))
    return [min(range(len(a) - GRAM + 1), key=lambda o: (counts.get(a[o: o + GRAM], 0), o)) for a in anchors]


def build(prefilter: Prefilter, sample: bytes) -> LiteralScan | None:
    """The C stage 1 for ``prefilter``'s anchors and tails (``sample``: the log's first block,
    whose gram counts choose where each anchor is filed), or None: not built, switched off, no
    prefilter (every line is examined) or a tail the C pass cannot run."""
    if not available() or prefilter.every_line:
        return None
    programs = []
    for tail in prefilter.tails:
        prog = tail_program(tail.pattern)
        if prog is None:
            return None
        programs.append(prog)
    words = prefilter.words
    long_words = sorted(w for w in words if len(w) >= GRAM)
    pairs = sorted(w for w in words if len(w) == 2)
    hit = {c for w in words if len(w) == 1 for c in (w[0], w[0] ^ 0x20 if 97 <= w[0] <= 122 else w[0])}
    if any(t.unicode for t in prefilter.tails):  # (as the Python prefilter's DIFFERENT pass)
        hit.update(c for c in range(256) if DIFFERENT.match(bytes([c])))
    hit_bytes = bytes(1 if c in hit else 0 for c in range(256))
    matcher = _litscan.Matcher(long_words, _offsets(long_words, sample[:SAMPLE].translate(_CASE)),  # type: ignore[union-attr]
                               programs, hit_bytes, pairs)
    return LiteralScan(matcher)


# -- stage 2's keyword look-up -------------------------------------------------------------------
class KeywordFinder:
    """Which of the knowledge base's keywords occur in a line, found by the C matcher: the
    keywords of at least 3 bytes, ASCII, are its anchors (filed under their rarest gram among the
    keywords); the others (:attr:`rest`) are tested in Python by the caller."""

    def __init__(self, matcher: Any, ranks: list[int], rest: list[int]) -> None:
        self._matcher = matcher
        self._ranks = ranks
        #: the keyword ranks the C matcher does not hold (shorter than 3 bytes, not ASCII)
        self.rest = rest

    def ranks(self, text: bytes) -> list[int]:
        """The ranks of the C matcher's keywords that occur in ``text``, ascending (ASCII letters
        match in either case)."""
        ranks = self._ranks
        return [ranks[a] for a in self._matcher.which(text)]


def keyword_finder(keywords: Sequence[str]) -> KeywordFinder | None:
    """A :class:`KeywordFinder` for ``keywords`` (lower-cased, in rank order), or None where the
    extension is not built or is switched off (``K3DOCTOR_PURE_PYTHON``)."""
    if not available():
        return None
    ranks = [r for r, k in enumerate(keywords) if len(k) >= GRAM and k.isascii() and "\n" not in k]
    held = set(ranks)
    return _finder([keywords[r].encode("ascii") for r in ranks], ranks,
                   [r for r in range(len(keywords)) if r not in held])


def literal_finder(words: Sequence[bytes]) -> KeywordFinder | None:
    """A :class:`KeywordFinder` for byte literals (each at least 3 bytes, no newline; ranked in
    the order given, every one held), or None where the extension is not built or is switched off."""
    if not available():
        return None
    return _finder(list(words), list(range(len(words))), [])


def _finder(words: list[bytes], ranks: list[int], rest: list[int]) -> KeywordFinder:
    matcher = _litscan.Matcher(words, _offsets(words, b"\n".join(words)), [], bytes(256))  # type: ignore[union-attr]
    return KeywordFinder(matcher, ranks, rest)
