"""Prefilter anchors for marker regexes that require no selective literal.

Most fallback markers require a literal one of which every match holds (``[Ff]ail(?:ed|s)?``
requires ``Fail``/``fail``): :func:`~.prefilter.required_literals` reads it off and the log
prefilter searches for it. A few require only something short and everywhere: a module-qualified
exception name, ``\\b[a-z_]\\w{0,40}(?:\\.\\w{1,40}){1,8}\\.[A-Z][A-Za-z0-9]{2,60}: ``, requires
only ``": "``, which six lines in ten of an engine log hold, so the prefilter passed almost every
line to stage 2 (a 200 MiB log: 26x slower than grep, and the OOM dropped past the examined-lines
budget).

Such a marker alternative is searched instead by a *tail* of its own regex: the pieces from its
first top-level literal on (``\\.[A-Z][A-Za-z0-9]{2,60}: ``). A line the alternative matches
holds a match of every tail of it, so the tail is a necessary condition, and starting with a
literal it keeps ``re``'s fast path (2 GB/s). The tail is run on the prefilter's text: ASCII
capitals folded to small letters and digits to ``0``, ANSI colour removed. It is compiled
``IGNORECASE`` and accepted only when that folding cannot hide a match (:func:`fold_safe`: no
digit literal but ``0``, no negated letter or digit, no back-reference); zero-width assertions at
the tail's top level are dropped (that only widens it). Where the original regex (``str``, on the
decoded line) and the tail (``bytes``) can disagree on non-ASCII text (``\\w``, ``.``, a negated
class), :class:`Tail` says so and the prefilter treats a line holding a byte the two read
differently as a candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:
    import re._constants as _sc
    import re._parser as _sp
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sc  # type: ignore[no-redef]
    import sre_parse as _sp  # type: ignore[no-redef]

__all__ = ["Tail", "alternatives", "tail_of", "fold_safe", "WEAK"]

#: a required literal shorter than this is too common to anchor on (``": "``, ``"."``)
WEAK = 3
_ESCAPE_LEN = {"x": 2, "u": 4, "U": 8}
_QUANT = re.compile(r"(?:[*+?]|\{\d*(?:,\d*)?\})[?+]?")
_ZERO_WIDTH = ("^", "$", r"\b", r"\B", r"\A", r"\Z", "(?=", "(?!", "(?<=", "(?<!")
#: bytes the ``str`` regex on the decoded line can read differently from the ``bytes`` tail:
#: non-ASCII (one character of several bytes, Unicode ``\\w``/``\\s``/``\\d``) and the ASCII
#: separators ``\\x1c``-``\\x1f`` that ``str`` counts as white space
DIFFERENT = re.compile(rb"[\x1c-\x1f\x80-\xff]")


@dataclass(frozen=True)
class Tail:
    """A tail of a marker alternative, compiled for the folded prefilter text."""

    source: str                 #: the marker alternative it was cut from
    pattern: re.Pattern[bytes]  #: the tail, ``bytes``, ``IGNORECASE``
    unicode: bool               #: whether it can read non-ASCII text differently (see the module doc)


def _group_end(src: str, i: int) -> int | None:
    """The index after the ``)`` closing the group opened at ``src[i]``."""
    depth, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            end = _class_end(src, i)
            if end is None:
                return None
            i = end
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _class_end(src: str, i: int) -> int | None:
    """The index after the ``]`` closing the character class opened at ``src[i]``."""
    j = i + 1
    if src[j:j + 1] == "^":
        j += 1
    if src[j:j + 1] == "]":
        j += 1
    while j < len(src):
        if src[j] == "\\":
            j += 2
        elif src[j] == "]":
            return j + 1
        else:
            j += 1
    return None


#: a group with flags of its own (``(?-i:INFO)``): an atom like any group
_SCOPED_FLAGS = re.compile(r"\(\?[aiLmsux]*(?:-[imsx]+)?:")


def _atoms(src: str) -> list[str] | None:
    """The top-level pieces of a regex source, each with its quantifier, and ``"|"`` between
    alternatives; None for what this reader does not take apart (back-references, flags for the
    whole pattern, named groups)."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "|":
            out.append("|")
            i += 1
            continue
        if c == "\\":
            nxt = src[i + 1:i + 2]
            if not nxt or nxt.isdigit() or nxt in "gN":
                return None
            end = i + 2 + _ESCAPE_LEN.get(nxt, 0)
        elif c == "[":
            got = _class_end(src, i)
            if got is None:
                return None
            end = got
        elif c == "(":
            got = _group_end(src, i)
            if got is None or src.startswith("(?", i) and not src.startswith(("(?:", "(?=", "(?!", "(?<=", "(?<!"), i) \
                    and not _SCOPED_FLAGS.match(src, i):
                return None  # flags for the whole pattern, named groups, conditionals
            end = got
        elif c in "*+?{)":
            return None
        else:
            end = i + 1
        q = _QUANT.match(src, end)
        if q and src[end] == "{" and not re.fullmatch(r"\{\d*(?:,\d*)?\}[?+]?", q.group()):
            q = None
        out.append(src[i:q.end() if q else end])
        i = q.end() if q else end
    return out


def alternatives(src: str) -> list[str] | None:
    """The alternatives of a marker regex source, with top-level ``(?:...)`` unwrapped, so that a
    line the regex matches is matched by one of them; None where the source cannot be read."""
    atoms = _atoms(src)
    if atoms is None:
        return None
    parts: list[list[str]] = [[]]
    for a in atoms:
        if a == "|":
            parts.append([])
        else:
            parts[-1].append(a)
    out: list[str] = []
    for p in parts:
        if len(p) == 1 and p[0].startswith("(") and p[0].endswith(")") and (
                p[0].startswith("(?:") or not p[0].startswith("(?")):
            inner = alternatives(p[0][3:-1] if p[0].startswith("(?:") else p[0][1:-1])
            if inner is None:
                return None
            out += inner
        else:
            out.append("".join(p))
    return out


def _is_digit_code(c: int) -> bool:
    return 48 <= c <= 57


def _is_alnum_code(c: int) -> bool:
    return c < 128 and chr(c).isalnum()


def _set_ok(av: list) -> bool:
    """A character class matches the folded form of every character it matches."""
    negate = bool(av) and av[0][0] is _sc.NEGATE
    has_digit = has_zero = False
    for op, val in av:
        if op is _sc.NEGATE:
            continue
        if op is _sc.LITERAL:
            if negate and _is_alnum_code(val):
                return False
            has_digit |= _is_digit_code(val)
            has_zero |= val == 48
        elif op is _sc.RANGE:
            lo, hi = val
            if negate and any(_is_alnum_code(c) for c in range(lo, min(hi, 127) + 1)):
                return False
            has_digit |= lo <= 57 and hi >= 48
            has_zero |= lo <= 48 <= hi
        elif op is _sc.CATEGORY:
            if negate and val not in (_sc.CATEGORY_SPACE, _sc.CATEGORY_NOT_SPACE):
                return False
            has_zero |= val in (_sc.CATEGORY_DIGIT, _sc.CATEGORY_WORD)
        else:
            return False
    return negate or not has_digit or has_zero


def fold_safe(items: list) -> bool:
    """Whether ``items`` (parsed), compiled ``IGNORECASE``, matches the folded form of every line
    that they match (digits read as ``0``, capitals as small letters)."""
    for op, av in items:
        if op is _sc.LITERAL:
            if _is_digit_code(av) and av != 48:
                return False
        elif op is _sc.NOT_LITERAL:
            if _is_alnum_code(av):
                return False
        elif op is _sc.IN:
            if not _set_ok(av):
                return False
        elif op is _sc.SUBPATTERN:
            if av[2] or not fold_safe(list(av[3])):  # (flags removed: not read here)
                return False
        elif op is _sc.BRANCH:
            if not all(fold_safe(list(b)) for b in av[1]):
                return False
        elif op in _REPEATS:
            if not fold_safe(list(av[2])):
                return False
        elif op is _sc.ASSERT:
            if not fold_safe(list(av[1])):
                return False
        elif op not in (_sc.ANY, _sc.CATEGORY, _sc.AT):
            return False  # ASSERT_NOT, GROUPREF, conditionals, atomic groups
    return True


_REPEATS = tuple(getattr(_sc, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sc, n))


def _unicode(items: list) -> bool:
    """Whether ``items`` can match non-ASCII text (``str`` and ``bytes`` regexes then differ)."""
    for op, av in items:
        if op in (_sc.ANY, _sc.NOT_LITERAL, _sc.CATEGORY, _sc.AT):
            return True
        if op is _sc.IN and (av and av[0][0] is _sc.NEGATE or any(o is _sc.CATEGORY for o, _ in av)
                             or any(o is _sc.RANGE and v[1] > 127 for o, v in av)):
            return True
        if op is _sc.SUBPATTERN and _unicode(list(av[3])):
            return True
        if op is _sc.BRANCH and any(_unicode(list(b)) for b in av[1]):
            return True
        if op in _REPEATS and _unicode(list(av[2])):
            return True
        if op is _sc.ASSERT and _unicode(list(av[1])):
            return True
    return False


def _single_literal(atom: str) -> bool:
    """``atom`` is one literal character, neither a digit nor a letter's only case (any case is fine)."""
    try:
        items = list(_sp.parse(atom))
    except re.error:
        return False
    return len(items) == 1 and items[0][0] is _sc.LITERAL and not _is_digit_code(items[0][1])


def tail_of(alternative: str, flags: int = 0) -> Tail | None:
    """The longest tail of ``alternative`` (a marker regex source without top-level ``|``) that
    starts with a literal, drops its top-level zero-width assertions, and is :func:`fold_safe`;
    None when there is none (``flags``: the marker's compile flags; only 0 is taken apart)."""
    if flags & ~re.UNICODE:
        return None
    atoms = _atoms(alternative)
    if atoms is None or "|" in atoms:
        return None
    for k, atom in enumerate(atoms):
        if not _single_literal(atom):
            continue
        kept = [a for a in atoms[k:] if not a.startswith(_ZERO_WIDTH)]
        if len(kept) < 2 or (len(kept) < WEAK and all(map(_single_literal, kept))):
            return None  # no more selective than the short literal it would replace
        src = "".join(kept)
        try:
            items = list(_sp.parse(src))
            pattern = re.compile(src.encode("ascii"), re.IGNORECASE)
        except (re.error, UnicodeEncodeError):
            return None
        if not fold_safe(items):
            return None
        return Tail(alternative, pattern, _unicode(items))
    return None
