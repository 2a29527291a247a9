"""One real parse per distinct header shape: the scan's content-keyed memo (issue 16).

A MoE checkpoint repeats itself. Kimi-K3's shard N holds layer N-1, and its header is
byte-identical to another layer's once the layer index in the tensor names is normalised (the
offsets are per file and equal). Within one scan, :class:`HeaderMemo` keys each header on its bytes
with the layer token (the first ``.layers.<digits>.`` in its first 4 KB) replaced by a NUL byte
and trailing JSON whitespace stripped; a header whose key was seen, from a shard that verified
clean, reuses that shard's verdict, totals, dtype and span columns and quantisation statistics,
and its tensor names are the template's with the layer prefix substituted (:class:`DerivedNames`,
built only if something asks for them).

Why a hit is exact. Let ``H`` be the template's header bytes, ``tok`` its token, ``N =
H.replace(tok, NUL)``. A shard is a template only when its full path found nothing wrong (header
rules and quantised pairs), ``H`` holds no backslash, every tensor name starts with the same
``Q = P + tok`` (``tok`` being the leftmost ``.layers.<digits>.`` of the first name), and
``H.count(tok)`` equals the number of tensors: the token is then in every name exactly once, as
its prefix, and nowhere else (not in a value, not in ``__metadata__``). A candidate ``H'`` with
token ``tok'`` and no NUL byte whose key equals ``N`` is ``N`` with each NUL replaced by ``tok'``
(plus trailing whitespace, which JSON ignores). No string holds an escape and no token holds a
quote, so ``json.loads(H')`` is ``json.loads(H)`` with every tensor name ``P + tok + s`` renamed
``P + tok' + s`` and every value identical: the same dtypes, shapes, offsets and metadata. The
header rules then give the same answer as long as the file length agrees with the last offset
(checked per file; otherwise the full path runs). The quantisation statistics and the memory
fold depend on names only through suffix tests, ``.experts.<i>.`` patterns and comparisons of
names that share the prefix, none of which can reach into the token's digits (they follow
``layers.``, not ``experts.``), so their results are the template's with the prefix renamed; a
statistic whose key does not start with ``Q`` makes the shard no template.
``tests/test_ckpt_memo.py`` compares the memo path with the full path byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import repeat
from operator import add, itemgetter, methodcaller
from typing import Any, Iterator, Sequence, overload

__all__ = ["PH", "Shape", "HeaderMemo", "DerivedNames", "layer_token"]

#: the layer token's stand-in: a raw NUL is never part of valid JSON text
PH = b"\x00"
_TOKEN = re.compile(rb"\.layers\.\d+\.")
_TOKEN_STR = re.compile(r"\.layers\.\d+\.")
#: the token is looked for in the first bytes of a header (its first name)
_WINDOW = 4096
_JSON_WS = b" \t\n\r"
#: normalised header bytes one scan keeps at most (Kimi-K3: 6 shapes, ~4 MB); a checkpoint of
#: many distinct shapes gets no more templates past it, and its shards take the full path
MEMO_BYTES = 32 << 20


def layer_token(raw: bytes) -> bytes | None:
    """The first ``.layers.<digits>.`` in the first :data:`_WINDOW` bytes of ``raw``, or None."""
    m = _TOKEN.search(raw, 0, _WINDOW)
    return m.group() if m else None


@dataclass(eq=False)
class Shape:
    """A verified header shape: the template shard's verdict and what is derived from it."""

    file: str
    tok: bytes
    prefix: str  # Q = P + tok, the start of every name
    names: list[str]
    buffer_len: int  # the data region the offsets must end at
    tensors: int
    data_bytes: int
    dtype_bytes: dict[str, int]
    dtypes: list[str]
    spans: list[int]
    qstats: dict[str, Any]
    _suffixes: list[str] | None = field(default=None, repr=False)
    #: the normalised index run of this shape (:func:`k3doctor.ckpt.index.verify_runs`)
    run: bytes | None = None
    run_comma: bool = False

    def suffixes(self) -> list[str]:
        if self._suffixes is None:
            self._suffixes = list(map(itemgetter(slice(len(self.prefix), None)), self.names))
        return self._suffixes

    def renamed(self, prefix: str) -> dict[str, Any]:
        """The template's quantisation statistics with its layer prefix replaced by ``prefix``."""
        q, cut = self.qstats, len(self.prefix)
        out = dict(q)
        out["expert_layers"] = {prefix + k[cut:]: v for k, v in (q.get("expert_layers") or {}).items()}
        return out


class DerivedNames(Sequence[str]):
    """The tensor names of a shard that hit the memo: the template's names with the layer prefix
    replaced, in header order; built on first use (the index check usually never asks)."""

    __slots__ = ("shape", "prefix", "tok", "_list")

    def __init__(self, shape: Shape, prefix: str, tok: bytes) -> None:
        self.shape, self.prefix, self.tok = shape, prefix, tok
        self._list: list[str] | None = None

    def materialise(self) -> list[str]:
        if self._list is None:
            self._list = list(map(add, repeat(self.prefix), self.shape.suffixes()))
        return self._list

    def __len__(self) -> int:
        return len(self.shape.names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.materialise())

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        return self.materialise()[i]



class HeaderMemo:
    """The memo of one scan: normalised header bytes -> :class:`Shape` (looked up by length, then
    compared with ``bytes.startswith``: a memcmp, no hashing of the ~800 KB keys)."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.shapes: dict[int, list[tuple[bytes, Shape]]] = {}
        self.hits = 0
        #: bytes of normalised headers it may still keep (:data:`MEMO_BYTES`)
        self.room = MEMO_BYTES if max_bytes is None else max_bytes

    @staticmethod
    def key(raw: bytes) -> tuple[bytes, bytes, int] | None:
        """``(token, normalised bytes, their length without trailing JSON whitespace)`` of header
        bytes ``raw``, or None when it has no layer token or holds a NUL byte (the stand-in must be
        unambiguous)."""
        tok = layer_token(raw)
        if tok is None or PH in raw:
            return None
        k = len(raw)
        while k and raw[k - 1] in _JSON_WS and len(raw) - k < 64:
            k -= 1
        if k and raw[k - 1] in _JSON_WS:
            k = len(raw.rstrip(_JSON_WS))
        norm = raw.replace(tok, PH)
        return tok, norm, len(norm) - (len(raw) - k)

    def _find(self, key: tuple[bytes, bytes, int]) -> Shape | None:
        for norm, shape in self.shapes.get(key[2], ()):
            if key[1].startswith(norm):
                return shape
        return None

    def hit(self, key: tuple[bytes, bytes, int], buffer_len: int) -> tuple[Shape, str] | None:
        """The shape and this shard's name prefix when ``key`` is a known shape whose offsets end
        where this file's data region does."""
        shape = self._find(key)
        if shape is None or shape.buffer_len != buffer_len:
            return None
        self.hits += 1
        return shape, shape.prefix[:len(shape.prefix) - len(shape.tok)] + key[0].decode("ascii")

    def templates(self) -> dict[str, Shape]:
        """The template shard of each shape -> its shape."""
        return {s.file: s for shapes in self.shapes.values() for _, s in shapes}

    def register(self, key: tuple[bytes, bytes, int], tokens: int, file: str, buffer_len: int, res: Any,
                 names: list[str], qstats: dict[str, Any], clean: bool) -> None:
        """Make the shard just scanned in full a template, if it verified clean and normalises
        exactly (see the module docstring); otherwise leave the memo as it is. ``tokens``: how
        often the token is in the header bytes (0 when they hold a backslash)."""
        tok, norm, n = key
        if n > self.room or self._find(key) is not None or not clean or not names or res.dtypes is None \
                or res.spans is None or len(res.spans) != len(names) or tokens != len(names):
            return
        m = _TOKEN_STR.search(names[0])
        if m is None or m.group().encode("ascii") != tok:
            return
        prefix = names[0][:m.end()]
        if not all(map(methodcaller("startswith", prefix), names)):
            return
        if not all(k.startswith(prefix) for k in (qstats.get("expert_layers") or {})):
            return
        shape = Shape(file, tok, prefix, names, buffer_len, res.tensors, res.data_bytes, dict(res.dtype_bytes),
                      res.dtypes, res.spans, qstats)
        self.shapes.setdefault(n, []).append((norm[:n], shape))
        self.room -= n
