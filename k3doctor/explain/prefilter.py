"""Stage 1 of the log scan: which lines of a block can matter, with anchors derived from the KB.

A line can change the result of a scan only if a signature's literal keyword occurs on it
(:meth:`Scanner.candidates` tests nothing else first) or if the fallback counts it as an error
line (one of its ``error`` or ``strong`` marker regexes matches). So the anchors are

* every signature keyword, and
* for each marker regex, a set of literals one of which occurs in every match of it
  (:func:`required_literals`, read off the parsed regex: ``[Ff]ail(?:ed|s)?`` gives
  ``Fail``/``fail``; ``\\bError \\d{3}: `` gives ``Error ``),

computed when the scanner is built. A signature or marker added, removed or reworded changes the
anchors with it; one whose literals cannot be derived turns the prefilter off (every line is
examined) instead of skipping lines. ``tests/test_explain_prefilter.py`` checks that a scan gives
the same result with and without the prefilter on every example and corpus row.

Speed. CPython has no multi-literal search: ``re`` runs a flat alternation of ~1000 literals at
microseconds per byte, and one ``bytes.find`` per anchor is ~1000 passes. What makes it cheap:

* An engine log is mostly the same few line *shapes* with different numbers. A block is folded
  (digits to ``0``, capitals to small letters, by ``bytes.translate``, offsets unchanged), split
  into lines and de-duplicated with ``set``; shapes already known to carry no anchor, or known to
  carry one, are looked up in a cache kept across blocks in two generations (:class:`_Recent`:
  unique request ids cannot flush the common shapes), and only the new distinct shapes are
  searched. The lines whose shape hit are then located in the block. When most shapes are new
  (random bytes), the folded block is searched directly instead.
* The search is one ``re`` pass per *pivot* byte, so every pass keeps ``re``'s literal-first-byte
  fast path (``memchr``): each anchor is filed under one of its bytes, chosen by a weighted cover
  against the byte frequencies of the log's own first block (:func:`_pivoted`); the bytes after
  the pivot form a prefix-factored alternation and a look-behind checks the whole anchor, so a
  pass finds exactly the anchors.
* Folding digits weakens an anchor that holds one (``c1083`` becomes ``c0000``, which a random
  hex id carries one line in ten), so those anchors have passes of their own, and a line whose
  shape holds only such a folded anchor is a candidate only when its own text (digits kept)
  holds the anchor: exact, at a few ``in`` tests per such line.
* Request, tensor and object ids make a new shape per line (``chatcmpl-3fa9…`` folds to
  ``chatcmpl-0fa0…``). The new shapes are screened by their *hex shape* (the letters ``a``-``f``
  folded to ``0`` as well), of which a log has few, each searched once for the anchors' hex
  shapes: a shape whose hex shape holds none needs only the passes of the few anchors whose hex
  shape is too weak to screen by (``c1083``, ``exceed``) and of the tails (:meth:`Prefilter._todo_hits`).
* A line holding KELVIN SIGN or I WITH DOT ABOVE is always a candidate: ``str.lower`` turns
  them into ASCII letters in stage 2, which the byte fold cannot see (:data:`LOWER_TO_ASCII`).

ANSI colour is removed before the search, as stage 2 removes it before matching keywords.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import chain, compress, count, repeat
from typing import Any

from .tail_anchor import DIFFERENT, WEAK, Tail, alternatives, tail_of

try:
    import re._constants as _sc
    import re._parser as _sp
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sc  # type: ignore[no-redef]
    import sre_parse as _sp  # type: ignore[no-redef]

__all__ = ["Prefilter", "required_literals", "derive_anchors", "fold"]

_UPPER = bytes(range(ord("A"), ord("Z") + 1))
_FOLD = bytes.maketrans(b"0123456789" + _UPPER, b"0000000000" + _UPPER.lower())
#: the bytes form of ``scan._ANSI`` (same sequences; ASCII only, so stripping before or after
#: decoding removes the same text, and digit folding does not change what it matches)
ANSI_BYTES = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]")
_MAX_SET = 64            # literal alternatives kept per regex piece before it counts as inexact
CLEAN_CACHE = 16384      # line shapes remembered across blocks (per generation, per kind)
CLEAN_LINE = 1024        # longer shapes are not remembered (bounded memory)
CACHE_BYTES = 2 << 20    # ... nor more than this many bytes of them per generation
SAMPLE = 256 << 10       # bytes of the first block whose byte frequencies choose the pivots
#: folded text to its *hex shape*: the hex letters ``a``-``f`` to ``0`` as well (digits already are)
_HEX = bytes.maketrans(b"abcdef", b"000000")
#: an anchor whose hex shape keeps fewer bytes than this besides ``0`` is searched exactly only
#: (``c1083`` and ``exceed`` become ``00000`` and ``0x0000``, which every hex id holds); 2 measured
#: best on generated logs (3: ``fail`` searched exactly as well, 11% slower with unique ids; 1:
#: ``exceed`` screened, and every ``0x…`` address passes the screen)
HEX_FIXED = 2
SCREEN_MIN = 256         # fewer new shapes in a block are searched without the hex-shape screen


def fold(data: bytes) -> bytes:
    """``data`` with every ASCII digit replaced by ``0`` and every ASCII capital by its small
    letter (same length, same offsets): signatures match case-insensitively, so the anchors are
    searched in folded text as folded literals."""
    return data.translate(_FOLD)


# -- literals a regex requires ------------------------------------------------------------------
# Each piece of a parsed regex is either *exact* (it matches exactly one of a small set of strings)
# or *inexact* with a requirement (a set of literals one of which occurs in every match; None: no
# requirement known). A sequence concatenates runs of exact pieces into longer literals.

_Req = frozenset[str] | None


_ICASE_EXTRA = "\u0130\u0131\u017f\u212a"  # characters ``re`` also folds onto ASCII letters


def _case_variants(ch: str) -> set[str]:
    """Every character that ``ch`` matches under ``re.IGNORECASE`` (tested with ``re`` itself)."""
    return set(_case_variants_of(ch))


@lru_cache(maxsize=4096)
def _case_variants_of(ch: str) -> frozenset[str]:
    cands = {ch, ch.lower(), ch.upper(), ch.swapcase(), *_ICASE_EXTRA}
    return frozenset(c for c in cands if len(c) == 1 and re.fullmatch(re.escape(ch), c, re.IGNORECASE))


def _chars(code: int, icase: bool) -> set[str]:
    return _case_variants(chr(code)) if icase else {chr(code)}


def _product(a: set[str], b: set[str]) -> set[str] | None:
    if len(a) * len(b) > _MAX_SET:
        return None
    return {x + y for x in a for y in b}


def _usable(s: set[str] | frozenset[str] | None) -> bool:
    return bool(s) and min(map(len, s)) > 0  # type: ignore[arg-type]


def _better(a: _Req, b: _Req) -> _Req:
    """The more selective of two requirements (longest shortest literal, then fewest)."""
    if not _usable(a):
        return b if _usable(b) else None
    if not _usable(b):
        return a
    assert a is not None and b is not None
    ka, kb = (min(map(len, a)), -len(a)), (min(map(len, b)), -len(b))
    return a if ka >= kb else b


def _charset(av: list, icase: bool) -> set[str] | None:
    out: set[str] = set()
    for op, val in av:
        if op is _sc.LITERAL:
            out |= _chars(val, icase)
        elif op is _sc.RANGE and val[1] - val[0] < 16:
            for c in range(val[0], val[1] + 1):
                out |= _chars(c, icase)
        else:
            return None  # NEGATE, CATEGORY (digits, word chars), wide ranges
        if len(out) > 16:
            return None
    return out


_REPEATS = tuple(getattr(_sc, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sc, n))
_ATOMIC = getattr(_sc, "ATOMIC_GROUP", None)


def _piece(op: Any, av: Any, icase: bool) -> tuple[set[str] | None, _Req]:
    """(the exact strings it matches or None, a requirement) of one parsed item."""
    if op is _sc.LITERAL:
        return _chars(av, icase), None
    if op is _sc.IN:
        return _charset(av, icase), None
    if op in (_sc.AT, _sc.ASSERT, _sc.ASSERT_NOT):  # zero-width: adjacent pieces stay adjacent
        return {""}, None
    if op is _sc.SUBPATTERN:
        _g, add, dele, sub = av
        flag = _sc.SRE_FLAG_IGNORECASE
        return _sequence(sub, (icase or bool(add & flag)) and not dele & flag)
    if _ATOMIC is not None and op is _ATOMIC:
        return _sequence(av, icase)
    if op is _sc.BRANCH:
        exact: set[str] | None = set()
        reqs: set[str] | None = set()
        for branch in av[1]:
            e, r = _sequence(branch, icase)
            exact = exact | e if exact is not None and e is not None and len(exact) + len(e) <= _MAX_SET else None
            req = frozenset(e) if e is not None and _usable(e) else r
            reqs = reqs | req if reqs is not None and req is not None else None
        return exact, (frozenset(reqs) if reqs else None)
    if op in _REPEATS:
        lo, hi, sub = av
        e, r = _sequence(sub, icase)
        if lo == hi == 1:
            return e, r
        if lo == 0 and hi == 1 and e is not None:
            return e | {""}, None
        if lo >= 1:
            return None, (frozenset(e) if e is not None and _usable(e) else r)
        return None, None
    return None, None  # ANY, NOT_LITERAL, GROUPREF, categories ...


def _sequence(items: Iterable, icase: bool) -> tuple[set[str] | None, _Req]:
    """(the exact strings of the whole sequence or None, its best requirement)."""
    best: _Req = None
    run: set[str] = {""}          # the current run of adjacent exact pieces
    exact: set[str] | None = {""}
    for op, av in items:
        e, r = _piece(op, av, icase)
        if e is None:
            best = _better(_better(best, r), frozenset(run))
            run, exact = {""}, None
            continue
        exact = _product(exact, e) if exact is not None else None
        joined = _product(run, e)
        if joined is None:
            best = _better(best, frozenset(run))
            run = set(e)
        else:
            run = joined
    return exact, _better(best, frozenset(run))


def required_literals(rx: re.Pattern[str] | str, flags: int = 0) -> frozenset[str] | None:
    """Literals one of which occurs in every match of ``rx`` (a source is read with ``flags``);
    None when none can be derived.

    Conservative by construction: a piece it cannot read (``\\w+``, ``.``) only ends a run of
    literals, so the answer is always a necessary condition (never a guess)."""
    pattern, flags = (rx.pattern, rx.flags) if isinstance(rx, re.Pattern) else (rx, flags)
    parsed = _sp.parse(pattern, flags)
    icase = bool(parsed.state.flags & _sc.SRE_FLAG_IGNORECASE)
    exact, req = _sequence(list(parsed), icase)
    if exact is not None and _usable(exact):
        return frozenset(exact)
    return frozenset(req) if req is not None and _usable(req) else None


def derive_anchors(keywords: Iterable[str], marker_regexes: Iterable[re.Pattern[str]]
                   ) -> tuple[tuple[str, ...], tuple[Tail, ...]] | None:
    """The anchor literals and regex tails (:mod:`.tail_anchor`) for these signature keywords and
    fallback marker regexes, or None when some of them require nothing (then every line must be
    examined). Each alternative of a marker is anchored by its required literals, or, when those
    are shorter than :data:`~.tail_anchor.WEAK` characters (``": "``), by a tail of its regex."""
    out: set[str] = set()
    tails: list[Tail] = []
    for k in keywords:
        if not k:
            return None
        out.add(k)
    for rx in marker_regexes:
        for alt in alternatives(rx.pattern) or [rx.pattern]:
            try:
                req = required_literals(re.compile(alt, rx.flags))
            except re.error:
                req = required_literals(rx)
            if req is not None and min(map(len, req)) >= WEAK:
                out |= req
                continue
            tail = tail_of(alt, rx.flags)
            if tail is not None:
                tails.append(tail)
            elif req is not None:
                out |= req
            else:
                return None
    return tuple(sorted(out)), tuple(tails)


# -- the prefilter ------------------------------------------------------------------------------

#: the cost of one pass over a text, in stops: a pass whose pivot byte has frequency ``f`` costs
#: about ``PASS_COST + f`` (measured on generated server logs: 0.005-0.02 are best; 0.01 taken)
PASS_COST = 0.01


def byte_frequencies(sample: bytes) -> dict[int, float]:
    """The share of each byte value in ``sample`` (folded text: what the passes will search)."""
    n = len(sample) or 1
    return {c: k / n for c, k in Counter(sample).items()}


def _pivoted(words: Iterable[bytes], freq: Mapping[int, float], keep: int = 2) -> dict[int, list[tuple[bytes, bytes]]]:
    """The anchors grouped by a *pivot* byte: ``{byte: [(rest after the pivot, anchor)]}``.

    ``re`` makes one pass per group (a literal first byte keeps its fast path: ``memchr``), and a
    pass stops at every occurrence of its pivot, so a group costs about ``PASS_COST`` plus the
    pivot's frequency in the text (``freq``, measured on the log itself). The pivot is any byte of
    the anchor but its last ``keep`` (where the anchor is long enough); the rest is matched after
    it and the whole anchor is then checked with a look-behind, so the search finds exactly the
    anchors. Greedy weighted cover: take the byte with the most remaining anchors per cost (on
    binary data every byte is as frequent, and the fewest passes win)."""
    groups: dict[int, list[tuple[bytes, bytes]]] = defaultdict(list)
    todo = {w: set(w[: max(1, len(w) - keep)]) for w in set(words)}
    cover: dict[int, int] = defaultdict(int)
    for cands in todo.values():
        for c in cands:
            cover[c] += 1
    while todo:
        best = max((c for c in cover if cover[c]), key=lambda c: (cover[c] / (PASS_COST + freq.get(c, 0.0)), -c))
        pivot = bytes([best])
        for w in [w for w, cands in todo.items() if best in cands]:
            i = w.find(pivot, 0, max(1, len(w) - keep))
            groups[best].append((w[i + 1:], w if i else b""))
            for c in todo.pop(w):
                cover[c] -= 1
    return groups


_ESC = [re.escape(bytes([c])) for c in range(256)]


def _trie_regex(items: Sequence[tuple[bytes, bytes]]) -> bytes:
    """An alternation of the rests factored by common prefix; where a rest ends, a look-behind
    for its whole anchor (none when the pivot was the anchor's first byte)."""
    trie: dict = {}
    for rest, whole in items:
        node = trie
        for c in rest:
            node = node.setdefault(c, {})
        node.setdefault(None, set()).add(whole)

    def emit(node: dict) -> bytes:
        alts = []
        wholes = node.get(None, set())
        if b"" in wholes:  # the anchor is found: longer rests add nothing to a search
            return b""
        if wholes:
            alts.append(b"|".join(b"(?<=" + re.escape(w) + b")" for w in sorted(wholes)))
        alts += [_ESC[c] + emit(child) for c, child in sorted(
            (k, v) for k, v in node.items() if k is not None)]
        return alts[0] if len(alts) == 1 and b"|" not in alts[0] else b"(?:" + b"|".join(alts) + b")"

    return emit(trie)


class _Recent:
    """Line shapes remembered across blocks, at most ``2 * cap``, in two generations: when the
    young one is full it becomes the old one and the old one is dropped, so the shapes seen in the
    last generation outlive a turnover (a log of unique request ids does not flush the common
    shapes, as one bounded set cleared when full did)."""

    def __init__(self, cap: int, cap_bytes: int = CACHE_BYTES) -> None:
        self.cap, self.cap_bytes = cap, cap_bytes
        self.young: dict[bytes, tuple[bytes, ...]] = {}
        self.old: dict[bytes, tuple[bytes, ...]] = {}
        self.young_bytes = 0

    def add(self, items: Iterable[tuple[bytes, tuple[bytes, ...]]]) -> None:
        for k, v in items:
            if len(self.young) >= self.cap or self.young_bytes >= self.cap_bytes:
                self.old, self.young, self.young_bytes = self.young, {}, 0
            self.young[k] = v
            self.young_bytes += len(k)

    def add_keys(self, keys: Sequence[bytes]) -> None:
        """:meth:`add` with the value ``()`` for each key, a generation's room at a time in C (a
        block of request-id lines brings thousands of new shapes)."""
        at = 0
        while at < len(keys):
            if len(self.young) >= self.cap or self.young_bytes >= self.cap_bytes:
                self.old, self.young, self.young_bytes = self.young, {}, 0
            part = keys[at: at + self.cap - len(self.young)]
            room = self.cap_bytes - self.young_bytes
            if sum(map(len, part)) > room:  # (rare: long shapes) one at a time up to the byte cap
                part = part[:1]
            self.young.update(zip(part, repeat(())))
            self.young_bytes += sum(map(len, part))
            at += len(part)

    def __contains__(self, key: bytes) -> bool:
        return key in self.young or key in self.old

    # (``set.difference(dict)`` walks the set and looks each shape up in the dict: the cost is the
    # block's shapes, not the cache; ``set -= keys`` or ``set & keys`` would walk the cache)
    def missing(self, shapes: set[bytes]) -> set[bytes]:
        """The shapes not remembered."""
        return shapes.difference(self.young).difference(self.old)

    def present(self, shapes: set[bytes]) -> dict[bytes, tuple[bytes, ...]]:
        """The remembered shapes among ``shapes``, with their values."""
        old, young = self.old, self.young
        out = {k: old[k] for k in shapes.difference(shapes.difference(old))}
        out.update((k, young[k]) for k in shapes.difference(shapes.difference(young)))
        return out


#: characters whose ``str.lower()`` holds an ASCII letter (KELVIN SIGN -> ``k``, I WITH DOT ABOVE
#: -> ``i`` + a combining dot): stage 2 lower-cases lines with ``str.lower``, so a line holding one
#: can match a keyword that its ASCII-folded bytes do not show; such lines are always candidates
LOWER_TO_ASCII = ("\u212a", "\u0130")
_CASE = bytes.maketrans(_UPPER, _UPPER.lower())


class Prefilter:
    """Finds the lines of a block that carry an anchor (see the module doc).

    Folding digits to ``0`` makes an anchor that holds a digit weak (``c1083`` becomes ``c0000``,
    which random hex ids carry), so those anchors are searched apart: a line whose shape holds only
    such a folded anchor is a candidate when its own text (ANSI colour removed, capitals folded,
    digits kept) holds one of them unfolded; the other anchors have no digit, and a shape holds one
    exactly when its lines do."""

    def __init__(self, anchors: Iterable[str] | None, tails: Iterable[Tail] = ()) -> None:
        #: None: no prefilter possible; every line is a candidate
        self.anchors: tuple[str, ...] | None = None if anchors is None else tuple(anchors)
        #: regex tails searched beside the literals (:mod:`.tail_anchor`), and the pass for the
        #: lines whose bytes one of them may read differently from its marker
        self.tails: tuple[Tail, ...] = () if anchors is None else tuple(tails)
        self._tail_passes = [t.pattern for t in self.tails] + (
            [DIFFERENT] if any(t.unicode for t in self.tails) else [])
        words = {a.encode("utf-8").translate(_CASE) for a in self.anchors or () if "\n" not in a}
        if self.anchors is not None:
            words.update(c.encode("utf-8") for c in LOWER_TO_ASCII)
        digits = {w for w in words if any(48 <= c <= 57 for c in w)}
        self._words = sorted(words - digits)
        self._digit_words = sorted({fold(w) for w in digits})
        #: a line hit only by a folded digit anchor holds one of these (case-folded, digits kept)
        self._confirm = tuple(sorted(digits))
        #: the same anchors by their folded form (several fold alike: ``errno 98``, ``errno 99``)
        by_fold: dict[bytes, list[bytes]] = defaultdict(list)
        for d in self._confirm:
            by_fold[fold(d)].append(d)
        self._confirm_by_fold = {f: tuple(ds) for f, ds in by_fold.items()}
        #: the folded forms with their hex shapes, and the digit anchors found by hex shape
        self._confirm_hex = tuple((f, f.translate(_HEX)) for f in sorted(by_fold))
        self._digit_by_hex: dict[bytes, tuple[bytes, ...]] = {}
        #: shapes known to carry an anchor: () for a plain anchor, else the digit anchors whose
        #: folded form they hold (each line of the shape is then checked for one of them)
        self._known = _Recent(CLEAN_CACHE)
        #: the passes for text and for binary blocks, built from the first block of each kind
        self._passes: dict[bool, tuple[list[re.Pattern[bytes]], list[re.Pattern[bytes]]]] = {}
        self._clean = _Recent(CLEAN_CACHE)  # shapes known to carry no anchor
        # the hex-shape screen (see :meth:`_todo_hits`): the anchors whose hex shape keeps at least
        # HEX_FIXED other bytes are screened by it; the others (and the tails) are searched exactly
        def fixed(w: bytes) -> int:
            h = w.translate(_HEX)
            return len(h) - h.count(b"0")

        self._weak_words = [w for w in self._words if fixed(w) < HEX_FIXED]
        self._weak_digit_words = [w for w in self._digit_words if fixed(w) < HEX_FIXED]
        self._hex_words = sorted({w.translate(_HEX) for w in self._words + self._digit_words
                                  if fixed(w) >= HEX_FIXED})
        self._weak_passes: tuple[list[re.Pattern[bytes]], list[re.Pattern[bytes]]] | None = None
        self._hex_passes: list[re.Pattern[bytes]] | None = None
        self._clean_hex = _Recent(CLEAN_CACHE)  # hex shapes known to hold no screened anchor
        self._maybe_hex = _Recent(CLEAN_CACHE)  # hex shapes that may hold one

    @staticmethod
    def _compile(groups: dict[int, list[tuple[bytes, bytes]]]) -> list[re.Pattern[bytes]]:
        return [re.compile(_ESC[first] + _trie_regex(items)) for first, items in sorted(groups.items())]

    def _passes_for(self, binary: bool, sample: bytes) -> tuple[list[re.Pattern[bytes]], list[re.Pattern[bytes]]]:
        """The passes for the plain and for the digit anchors, pivoted for the byte frequencies of
        ``sample`` (folded; the first block of this kind: text, or binary data)."""
        got = self._passes.get(binary)
        if got is None:
            freq = byte_frequencies(sample[:SAMPLE])
            keep = 1 if binary else 2
            got = self._passes[binary] = (self._compile(_pivoted(self._words, freq, keep)) + self._tail_passes,
                                          self._compile(_pivoted(self._digit_words, freq, keep)))
        return got

    def _screen_passes(self, sample: bytes) -> tuple[list[re.Pattern[bytes]], list[re.Pattern[bytes]],
                                                      list[re.Pattern[bytes]]]:
        """The passes of the hex-shape screen, pivoted for ``sample`` (folded): the exact passes for
        the weak plain anchors and the tails, for the weak digit anchors, and the passes for the
        screened anchors' hex shapes (run on hex-shaped text)."""
        if self._weak_passes is None or self._hex_passes is None:
            freq = byte_frequencies(sample[:SAMPLE])
            self._weak_passes = (self._compile(_pivoted(self._weak_words, freq)) + self._tail_passes,
                                 self._compile(_pivoted(self._weak_digit_words, freq)))
            hex_freq = byte_frequencies(sample[:SAMPLE].translate(_HEX))
            self._hex_passes = self._compile(_pivoted(self._hex_words, hex_freq))
        return self._weak_passes[0], self._weak_passes[1], self._hex_passes

    def _todo_hits(self, todo: list[bytes], block: bytes) -> tuple[set[int], set[int]]:
        """:meth:`_hits` of the new shapes ``todo`` (joined by newlines), screened by hex shape.

        A log's request and tensor ids make thousands of new shapes per block (``chatcmpl-3fa9…``
        folds to ``chatcmpl-0fa0…``, a new shape each time), and searching them all with every
        pass was a third of stage 1. Their *hex shapes* (the hex letters folded to ``0`` as well)
        are few: an anchor occurs in a shape only if its hex shape occurs in the shape's hex shape,
        so a shape whose hex shape holds none of the screened anchors' hex shapes (a cached
        verdict, searched once per hex shape) needs only the exact passes of the weak anchors and
        the tails; the others get every pass, as before. The result is exactly :meth:`_hits`."""
        if not self._hex_words or len(todo) < SCREEN_MIN:  # (a paste: not worth compiling the screen)
            return self._hits(b"\n".join(todo), False, block)
        text = b"\n".join(todo)
        if b"\x1b" in text:  # (once, as _hits does: escape sequences hold no newline)
            text = ANSI_BYTES.sub(b"", text)
        plain, digit = self._passes_for(False, block)
        weak_plain, weak_digit, hex_passes = self._screen_passes(block)
        hexed = text.translate(_HEX).split(b"\n")
        shapes = set(hexed)
        clean_hex, maybe_hex = self._clean_hex, self._maybe_hex
        fresh = [h for h in shapes if h not in clean_hex and h not in maybe_hex]
        maybe: set[bytes] = set()
        if fresh:
            maybe = {fresh[i] for i in self._hit_lines(b"\n".join(fresh), hex_passes)}
            maybe_hex.add_keys([h for h in fresh if h in maybe and len(h) <= CLEAN_LINE])
            clean_hex.add_keys([h for h in fresh if h not in maybe and len(h) <= CLEAN_LINE])
        maybe.update(h for h in shapes if h in maybe_hex)
        hit = set(self._hit_lines(text, weak_plain)) if weak_plain else set()
        found = set(self._hit_lines(text, weak_digit)) if weak_digit else set()
        screened = list(compress(count(), map(maybe.__contains__, hexed)))
        if screened:
            parts = text.split(b"\n")
            sub = b"\n".join([parts[i] for i in screened])
            hit_s = self._hit_lines(sub, plain)
            hit.update(screened[j] for j in hit_s)
            if digit:
                found.update(screened[j] for j in self._hit_lines(sub, digit))
        return hit, found - hit

    @property
    def every_line(self) -> bool:
        return self.anchors is None

    @property
    def words(self) -> frozenset[bytes]:
        """Every anchor as the search looks for it (UTF-8, ASCII capitals folded, digits kept), with
        the :data:`LOWER_TO_ASCII` characters; the C stage 1 (:mod:`.literal_scan`) searches these."""
        return frozenset(self._words) | frozenset(self._confirm)

    @staticmethod
    def _hit_lines(text: bytes, passes: list[re.Pattern[bytes]]) -> list[int]:
        """Indices of the lines of ``text`` (folded, ANSI colour removed) where a pass matches."""
        where: set[int] = set()
        for rx in passes:
            search, find = rx.search, text.find
            m = search(text)
            while m:
                nl = find(b"\n", m.start())  # (a tail's match may run past its line)
                where.add(text.rfind(b"\n", 0, m.start()) + 1)
                if nl < 0:
                    break
                m = search(text, nl + 1)
        out, at, line = [], 0, 0
        for st in sorted(where):
            line += text.count(b"\n", at, st)
            at = st
            out.append(line)
        return out

    def _hits(self, text: bytes, binary: bool, block: bytes) -> tuple[set[int], set[int]]:
        """Lines of ``text`` (folded) hit by a plain anchor, and the others hit by a folded digit
        anchor only (``block``: the folded block ``text`` comes from)."""
        if b"\x1b" in text:  # escape sequences hold no newline: line indices stay the same
            text = ANSI_BYTES.sub(b"", text)
        plain, digit = self._passes_for(binary, block)
        hit = set(self._hit_lines(text, plain))
        return hit, set(self._hit_lines(text, digit)) - hit if digit else set()

    def _holds(self, line: bytes, anchors: tuple[bytes, ...]) -> bool:
        """Whether ``line`` (raw) holds one of the digit ``anchors`` (case-folded, digits kept)."""
        if b"\x1b" in line:
            line = ANSI_BYTES.sub(b"", line)
        return any(map(line.translate(_CASE).__contains__, anchors))

    def _digit_anchors(self, shape: bytes) -> tuple[bytes, ...]:
        """Digit anchors that a line of ``shape`` may hold: every one whose folded form is in
        ``shape`` (a line holds one of those only), and perhaps others, which change nothing (a
        line that holds a digit anchor holds its folded form)."""
        if b"\x1b" in shape:
            shape = ANSI_BYTES.sub(b"", shape)
        # By the shape's hex shape (a log of request ids sends hundreds of new shapes per block
        # here, but few hex shapes): the anchors whose hex shape it holds, found once per hex shape
        h = shape.translate(_HEX)
        got = self._digit_by_hex.get(h)
        if got is None:
            by_fold = self._confirm_by_fold
            got = tuple(chain.from_iterable(by_fold[f] for f, fh in self._confirm_hex if fh in h))
            if len(h) <= CLEAN_LINE:  # (bounded memory, as the shape caches)
                if len(self._digit_by_hex) >= CLEAN_CACHE:
                    self._digit_by_hex.clear()
                self._digit_by_hex[h] = got
        return got

    def candidates(self, buf: bytes, folded: bytes | None = None, lines: list[bytes] | None = None,
                   ends: list[int] | None = None) -> tuple[list[tuple[int, int, int]], int]:
        """``(start, end, line index)`` of the lines of ``buf`` that carry an anchor, in order,
        and the number of newlines in ``buf`` (``folded``, ``lines``, ``ends``: :func:`fold` of
        ``buf``, its split at newlines and the running sum of their lengths, where the caller has
        them)."""
        if folded is None or lines is None:
            folded = fold(buf)
            lines = folded.split(b"\n")
            ends = None
        newlines = len(lines) - 1
        if self.every_line:
            return self._spans(lines, range(len(lines) - (not lines[-1])), ends), newlines
        new = self._clean.missing(set(lines))
        if not new:
            return [], newlines
        if 4 * len(new) > len(lines):  # mostly new shapes: de-duplication does not pay
            binary = folded.count(b"\x00") * 512 > len(folded)  # text logs hold no NUL bytes
            hit, digit = self._hits(folded, binary, folded)
            spans = self._spans(lines, sorted(hit | digit), ends)
            return [s for s in spans if s[2] not in digit or self._holds(buf[s[0]:s[1]], self._confirm)], newlines
        known = self._known
        todo = list(known.missing(new))
        found: dict[bytes, tuple[bytes, ...]] = {}  # shapes of this block found to hit now
        if todo:
            hit_i, digit_i = self._todo_hits(todo, folded)
            found = {todo[i]: () for i in hit_i}
            found.update((todo[i], self._digit_anchors(todo[i])) for i in digit_i)
            known.add((k, v) for k, v in found.items() if len(k) <= CLEAN_LINE)
            self._clean.add_keys([t for t in todo if t not in found and len(t) <= CLEAN_LINE])
        hits = known.present(new)
        hits.update(found)
        if not hits:
            return [], newlines
        # (each line's hash was computed by set() above and is cached by bytes)
        spans = self._spans(lines, compress(count(), map(hits.__contains__, lines)), ends)
        return [s for s in spans if not hits[lines[s[2]]] or self._holds(buf[s[0]:s[1]], hits[lines[s[2]]])], \
            newlines

    @staticmethod
    def _spans(lines: list[bytes], idx: Iterable[int], ends: list[int] | None = None) -> list[tuple[int, int, int]]:
        if ends is not None:  # line i ends at ends[i] + i (its newline not counted)
            return [(ends[i] + i - len(lines[i]), ends[i] + i, i) for i in idx]
        out = []
        pos, at = 0, 0
        for i in idx:
            if i > at:
                pos += sum(map(len, lines[at:i])) + (i - at)
                at = i
            out.append((pos, pos + len(lines[i]), i))
        return out
