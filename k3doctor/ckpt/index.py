"""``model.safetensors.index.json`` parsed in slices, so its memory is the file plus the result.

The index is one small object (``metadata``) and one large flat map (``weight_map``: tensor name ->
shard file; 497,220 entries and 59.8 MB for Kimi-K3). ``json.loads`` of the whole file holds its
bytes, its decoded text and the growing dict at once (a 74 MB index peaked at 345 MB RSS).
:func:`loads_index` decodes and parses the map a few MB at a time with the C decoder, adding each
slice's entries to one dict in which every shard file name is one shared string, and parses the
rest of the document with the map replaced by ``{}``.

It takes the plain layout only: UTF-8 without a byte-order mark, no backslash in the file, and a
map whose slices parse on their own. For anything else (and for every invalid file) it returns
None and the caller uses :func:`json.loads`, which reports the error; so a document this returns
is the one ``json.loads`` returns.
"""

from __future__ import annotations

import json
import re
from operator import methodcaller
from typing import Any, Mapping, NamedTuple, Sequence

from .memo import PH, Shape

__all__ = ["loads_index", "split_index", "verify_runs", "ShardNames", "Split"]

_KEY = re.compile(rb'"weight_map"[ \t\n\r]*:[ \t\n\r]*\{')
#: the end of one entry and the start of the next (a string value, a comma, the next key); with
#: no backslash in the file a quote always opens or closes a string, so this is an entry boundary
_BOUNDARY = re.compile(rb'"[ \t\n\r]*,[ \t\n\r]*"')
#: bytes of the map parsed per slice
_SLICE = 4 << 20


def _map_end(raw: bytes, start: int) -> int:
    """Index of the ``}`` closing the map whose content starts at ``start``: the first ``}`` with
    an even number of quotes between (no string holds an escaped quote here); -1 if none."""
    quotes, at = 0, start
    k = raw.find(b"}", start)
    while k >= 0:
        quotes += raw.count(b'"', at, k)  # counted once per stretch: linear in the file
        if quotes % 2 == 0:
            return k
        at, k = k, raw.find(b"}", k + 1)
    return -1


#: an index split by :func:`split_index`: (the document with an empty weight_map, start, end)
Split = tuple[dict[str, Any], int, int]


def split_index(raw: bytes) -> Split | None:
    """``(the document with an empty weight_map, start, end)`` of an index in the plain layout:
    the map's content is ``raw[start:end]``; None for any other layout."""
    if raw.startswith(b"\xef\xbb\xbf") or b"\\" in raw:
        return None
    found = _KEY.search(raw)
    if found is None or _KEY.search(raw, found.end()) is not None:
        return None
    start = found.end()
    end = _map_end(raw, start)
    if end < 0:
        return None
    try:
        doc = json.loads(raw[:start - 1] + b"{}" + raw[end + 1:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("weight_map") != {}:
        return None  # the key found was not the document's own weight_map
    return doc, start, end


def loads_index(raw: bytes, split: Split | None = None) -> dict[str, Any] | None:
    """``json.loads(raw)`` for an index in the plain layout, with less memory; None otherwise.
    ``split``: :func:`split_index` of ``raw``, if the caller has it."""
    split = split or split_index(raw)
    if split is None:
        return None
    doc, start, end = split
    wm: dict[str, Any] = {}
    shared: dict[Any, Any] = {}
    i = start
    while i < end:
        cut = end
        nxt = end
        if i + _SLICE < end:
            m = _BOUNDARY.search(raw, i + _SLICE, end)
            if m is not None:
                cut, nxt = m.start() + 1, m.end() - 1  # after this value's quote / at the next key's
        try:
            part = json.loads(b"{" + raw[i:cut] + b"}")
        except (ValueError, RecursionError):
            return None
        values = list(part.values())
        try:  # one string per shard file, not one per entry (~40 MB for Kimi-K3)
            values = list(map(shared.setdefault, values, values))
        except TypeError:  # an unhashable value: not a weight map, json.loads' result is kept as is
            pass
        wm.update(zip(part, values))
        del part, values
        i = nxt
    doc["weight_map"] = wm
    return doc


# ------------------------------------------------------------------------------------------
# verifying the map against the shards already scanned, without building it
# ------------------------------------------------------------------------------------------
#: the value's stand-in in a normalised run (the layer token's is :data:`.memo.PH`); a raw
#: control byte is never part of valid JSON text
PH_FILE = b"\x01"
#: one entry of string -> string (JSON string content without escapes or control bytes), and
#: the separator after it
_ENTRY = re.compile(rb'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*(,[ \t\n\r]*)?')
_AFTER_RUN = re.compile(rb"[ \t\n\r]*(,[ \t\n\r]*)?")
_LEADING_WS = re.compile(rb"[ \t\n\r]*")
#: entries of shards without a memoised shape that :func:`verify_runs` reads one by one at most
#: (beyond this, parsing the whole map is cheaper)
_MAX_SINGLE = 20_000


class ShardNames(NamedTuple):
    """What :func:`verify_runs` knows of one shard: its tensor names and, for a shard of a
    memoised header shape (:mod:`.memo`), the shape and the shard's layer token."""

    names: Sequence[str]
    shape: Shape | None
    tok: bytes | None


def _after_quotes(raw: bytes, p: int, end: int, k: int) -> int:
    """The position just after the ``k``-th ``"`` at or after ``p`` (before ``end``), or -1:
    galloping ``bytes.count`` passes, then a short walk."""
    have, at, step = 0, p, max(4096, 32 * k)
    while True:
        hi = min(end, at + step)
        c = raw.count(b'"', at, hi)
        if have + c >= k:
            break
        if hi >= end:
            return -1
        have, at, step = have + c, hi, step * 2
    while hi - at > 4096:
        mid = (at + hi) // 2
        c = raw.count(b'"', at, mid)
        if have + c >= k:
            hi = mid
        else:
            have, at = have + c, mid
    i = at - 1
    for _ in range(k - have):
        i = raw.index(b'"', i + 1)
    return i + 1


def _plain(file: str) -> bytes | None:
    """``file`` as JSON string content (UTF-8), when it needs no escaping; else None."""
    try:
        b = file.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return b if json.dumps(file, ensure_ascii=False)[1:-1] == file else None


def _run_in_full(raw: bytes, p: int, end: int, file: str, names: Sequence[str]) -> int:
    """The end of the run of entries at ``p`` when they are exactly ``names`` -> ``file`` (each
    once, any order), parsed with the C decoder; -1 otherwise."""
    n = len(names)
    stop = _after_quotes(raw, p, end, 4 * n)  # a run of string -> string entries has 4 quotes each
    if stop < 0:
        return -1
    try:
        part = json.loads(b"{" + raw[p:stop] + b"}")
    except (ValueError, RecursionError):
        return -1
    if len(part) != n or set(part.values()) != {file} or part.keys() != set(names):
        return -1
    return stop


def _normalised(run: bytes, tok: bytes, fq: bytes, n: int) -> bytes | None:
    """``run`` with its layer tokens and file values replaced by stand-ins, when the token is in
    each of its ``n`` names once and nowhere else and the quoted file name only in the values."""
    if run.count(tok) != n:
        return None
    norm = run.replace(tok, PH)
    if norm.count(fq) != n:
        return None
    return norm.replace(fq, PH_FILE)


class _Walk:
    """The state of :func:`verify_runs` over one map."""

    def __init__(self, raw: bytes, end: int, shards: Mapping[str, ShardNames]) -> None:
        self.raw, self.end, self.shards = raw, end, shards
        self.counts: dict[str, int] = {}
        self.runs: set[str] = set()  # shards whose whole run was verified
        self.single: dict[str, set[str]] = {}  # the entries of the other shards: file -> names
        self.seen: set[str] = set()  # ... all their names

    def memo_run(self, p: int, file: str, sh: ShardNames) -> int:
        """The end of ``file``'s whole run at ``p`` (after its separator), or -1."""
        raw, shape, tok = self.raw, sh.shape, sh.tok
        assert shape is not None and tok is not None
        fb = _plain(file)
        if fb is None or file in self.counts:
            return -1
        fq = b'"' + fb + b'"'
        stop, comma = -1, False
        if shape.run is not None:
            want = shape.run.replace(PH_FILE, fq).replace(PH, tok)
            if raw.startswith(want, p):
                stop, comma = p + len(want), shape.run_comma
        if stop < 0:
            stop = _run_in_full(raw, p, self.end, file, sh.names)
            if stop < 0:
                return -1
            sep = _AFTER_RUN.match(raw, stop)
            assert sep is not None
            comma = sep.group(1) is not None
            if shape.run is None:
                shape.run, shape.run_comma = _normalised(raw[p:sep.end()], tok, fq, len(sh.names)), comma
            stop = sep.end()
        if comma != (stop < self.end) or (comma and raw[stop:stop + 1] != b'"'):
            return -1
        self.counts[file] = len(sh.names)
        self.runs.add(file)
        return stop

    def entry(self, p: int, m: re.Match[bytes], file: str) -> int:
        """One entry of a shard without a memoised shape: its end, or -1."""
        try:
            name = m.group(1).decode("utf-8")
        except UnicodeDecodeError:
            return -1
        if name in self.seen or len(self.seen) >= _MAX_SINGLE:
            return -1
        self.seen.add(name)
        self.single.setdefault(file, set()).add(name)
        self.counts[file] = self.counts.get(file, 0) + 1
        stop = m.end()
        if (m.group(3) is not None) != (stop < self.end):
            return -1
        return stop

    def agrees(self) -> bool:
        """Every shard with names was seen, the single entries are exactly the other shards'
        names, and no name is in two shards (the index would hold it once): the names of
        memoised shapes all start with their shard's prefix, and these prefixes are distinct and
        none starts another."""
        shards, counts = self.shards, self.counts
        if any(len(sh.names) and f not in counts for f, sh in shards.items()):
            return False
        prefixes: list[str] = []
        other: list[str] = []
        for f in counts:
            sh = shards[f]
            if f in self.runs:
                assert sh.shape is not None and sh.tok is not None
                prefixes.append(sh.shape.prefix[:len(sh.shape.prefix) - len(sh.shape.tok)] + sh.tok.decode("ascii"))
            else:
                if counts[f] != len(sh.names) or set(sh.names) != self.single[f]:
                    return False
                other.extend(sh.names)
        prefixes.sort()
        if any(b.startswith(a) for a, b in zip(prefixes, prefixes[1:])):
            return False
        return not (other and prefixes and any(map(methodcaller("startswith", tuple(prefixes)), other)))


def verify_runs(raw: bytes, split: Split,
                shards: Mapping[str, ShardNames]) -> tuple[dict[str, Any], dict[str, int]] | None:
    """``(the document with an empty weight_map, {file: tensors})`` when the index ``raw``
    (:func:`split_index` gave ``split``) has a ``weight_map`` of exactly {name: file} over
    ``shards``; None otherwise, and the caller parses the index in full. Needs memoised header
    shapes (:mod:`.memo`) whose shards each hold one contiguous run of the map; the entries of
    other shards are read one by one (at most :data:`_MAX_SINGLE`).

    The map is never built: the first run of a shape is parsed with the C decoder, compared with
    its shard's names and kept normalised (layer token and file name replaced by stand-ins); a
    later shard of that shape is checked by comparing the bytes with that run rewritten for its
    token and file name (``bytes.startswith``). Equal bytes are the same JSON entries with the
    names renamed exactly as the header memo renames them (:mod:`.memo`), since the token is in
    each name once and the file name only in the values.
    """
    single = sum(len(sh.names) for sh in shards.values() if sh.shape is None or sh.tok is None)
    if single > _MAX_SINGLE or single == sum(len(sh.names) for sh in shards.values()):
        return None
    doc, start, end = split
    walk = _Walk(raw, end, shards)
    p = _LEADING_WS.match(raw, start).end()  # type: ignore[union-attr]
    while p < end:
        m = _ENTRY.match(raw, p)
        if m is None:
            return None
        try:
            file = m.group(2).decode("utf-8")
        except UnicodeDecodeError:
            return None
        sh = shards.get(file)
        if sh is None:
            return None
        p = walk.memo_run(p, file, sh) if sh.shape is not None and sh.tok is not None else walk.entry(p, m, file)
        if p < 0:
            return None
    return (doc, walk.counts) if walk.agrees() else None
