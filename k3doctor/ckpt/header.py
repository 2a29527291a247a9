"""Read and validate one safetensors header without touching tensor data.

Format (huggingface/safetensors README, ``safetensors/src/tensor.rs``): an 8-byte little-endian
u64 ``N``, ``N`` bytes of UTF-8 JSON mapping tensor name -> ``{"dtype", "shape",
"data_offsets": [begin, end)}`` (plus an optional ``__metadata__`` str->str map), then the data
buffer. The library rejects, in this order: fewer than 8 bytes; ``N`` > 100,000,000; ``8 + N`` past
the end of the file; non-UTF-8; bad JSON or an unknown dtype; offsets that are not contiguous from
0 (holes, overlaps); ``end - begin`` != ``numel * bits / 8``; and a buffer whose end is not the end
of the file. :func:`read_header` reports the same conditions as *problems* (dicts with a ``kind``)
naming the file and, where one is to blame, the tensor.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import struct
from itertools import chain, compress, repeat
from operator import eq, itemgetter, mul, sub
from typing import Any, Iterator

from ..dtypes import DTYPE_BITS

__all__ = ["MAX_HEADER_SIZE", "LARGE_HEADER", "iter_entry_batches", "BatchValidator", "DTYPE_BITS", "HeaderResult", "read_header", "parse_header", "header_bytes", "open_readonly", "problem"]

MAX_HEADER_SIZE = 100_000_000
#: headers above this size (real ones are < 1 MB: Kimi-K3's largest is 823 KB) are parsed in
#: batches of entries, so a 99 MB header of tiny tensors costs about its own size in memory
LARGE_HEADER = 16 << 20
_BATCH_ENTRIES = 1 << 15

_U64 = struct.Struct("<Q")
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def problem(kind: str, file: str, tensor: str | None = None, **detail: Any) -> dict[str, Any]:
    """One problem record (JSON-serialisable): ``kind``, ``file``, optional ``tensor``, raw numbers."""
    p: dict[str, Any] = {"kind": kind, "file": file}
    if tensor is not None:
        p["tensor"] = tensor
    p.update(detail)
    return p


def open_readonly(path: str) -> int:
    """``os.open`` read-only (never creates, never truncates); non-blocking so a FIFO cannot hang."""
    fd = os.open(path, _READ_FLAGS | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _read_exact(fd: int, n: int, offset: int) -> bytes:
    chunks = []
    while n > 0:
        b = os.pread(fd, min(n, 64 << 20), offset)
        if not b:
            break
        chunks.append(b)
        n -= len(b)
        offset += len(b)
    return b"".join(chunks)


class HeaderResult:
    """What :func:`read_header` learned about one file (``header`` is the parsed JSON or None)."""

    __slots__ = ("file", "size", "header_len", "header", "problems", "data_bytes", "tensors", "dtype_bytes",
                 "dtypes", "spans", "text")

    def __init__(self, file: str) -> None:
        self.file = file
        self.size: int | None = None
        self.header_len: int | None = None
        self.header: dict[str, Any] | None = None
        self.problems: list[dict[str, Any]] = []
        self.data_bytes = 0
        self.tensors = 0
        self.dtype_bytes: dict[str, int] = {}
        #: per-tensor dtypes and byte spans in header order (``__metadata__`` left out), kept by
        #: the fast validation path for the memory inventory; None otherwise
        self.dtypes: list[str] | None = None
        self.spans: list[int] | None = None
        #: the decoded header of a header above :data:`LARGE_HEADER` (``header`` is then None):
        #: parse and validate it in batches with :meth:`batches`, never as one dict
        self.text: str | None = None

    def batches(self, batch: int = 0) -> Iterator[dict[str, Any]]:
        """A large header's entries in batches of dicts, validated as they go (:func:`iter_entry_batches`
        + :class:`BatchValidator`); problems land in ``problems``, totals in this result."""
        text, self.text = self.text, None
        if text is None:
            return
        v = BatchValidator(self, (self.size or 0) - 8 - (self.header_len or 0), keep_spans=False)
        try:
            for b in iter_entry_batches(text, batch or _BATCH_ENTRIES):
                v.feed(b)
                yield b
        except (ValueError, RecursionError) as exc:
            pos = getattr(exc, "pos", None)
            self.problems.append(problem("header_invalid_json", self.file, offset=None if pos is None else 8 + pos,
                                         error=str(getattr(exc, "msg", exc)), header_len=self.header_len))
            return
        v.finish()

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> dict[str, Any]:
        return {"file": self.file, "size": self.size, "header_len": self.header_len,
                "tensors": self.tensors, "data_bytes": self.data_bytes,
                "dtype_bytes": dict(sorted(self.dtype_bytes.items())), "ok": self.ok}


def _stat_problem(path: str, file: str, exc: OSError) -> dict[str, Any]:
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return problem("dangling_symlink", file, target=os.readlink(path))
        return problem("not_found", file)
    if exc.errno in (errno.EACCES, errno.EPERM):
        return problem("unreadable", file, error=exc.strerror or str(exc))
    if exc.errno == errno.EISDIR:
        return problem("is_directory", file)
    return problem("io_error", file, error=f"{exc.strerror or exc} (errno {exc.errno})")


def header_bytes(path: str, file: str, res: HeaderResult | None = None) -> tuple[bytes | None, dict[str, Any] | None]:
    """``(JSON header bytes, None)`` of shard ``path`` (shown as ``file``), or ``(None, problem)``.

    The one place a shard header is read: opened non-blocking and refused unless it is a regular
    file (a FIFO or ``/dev/zero`` in place of a shard cannot hang or fill memory), the 8-byte length
    checked against the safetensors cap and the file size before anything else is read. ``res``
    (optional) receives ``size`` and ``header_len``.
    """
    try:
        fd = open_readonly(path)
    except OSError as exc:
        return None, _stat_problem(path, file, exc)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            return None, problem("is_directory", file)
        if not stat.S_ISREG(st.st_mode):
            return None, problem("not_regular", file, mode=stat.S_IFMT(st.st_mode))
        size = st.st_size
        if res is not None:
            res.size = size
        if size == 0:
            return None, problem("empty_file", file, size=0)
        if size < 8:
            return None, problem("too_small", file, size=size)
        head = os.pread(fd, 8, 0)
        if head.startswith(b"version "):
            return None, problem("lfs_pointer", file, size=size)
        (n,) = _U64.unpack(head)
        if res is not None:
            res.header_len = n
        if n > MAX_HEADER_SIZE:
            return None, problem("header_too_large", file, header_len=n, limit=MAX_HEADER_SIZE, size=size)
        if 8 + n > size:
            return None, problem("header_beyond_file", file, header_len=n, size=size)
        raw = _read_exact(fd, n, 8)
    except OSError as exc:
        return None, _stat_problem(path, file, exc)
    finally:
        os.close(fd)
    if len(raw) != n:
        return None, problem("header_beyond_file", file, header_len=n, size=8 + len(raw))
    return raw, None


def read_header(path: str, file: str, *, validate: bool = True) -> HeaderResult:
    """Read ``path`` (shown as ``file``) and validate its header; never raises for bad input."""
    res = HeaderResult(file)
    raw, prob = header_bytes(path, file, res)
    if raw is None:
        assert prob is not None
        res.problems.append(prob)
        return res
    return parse_header(res, raw, validate=validate)


def parse_header(res: HeaderResult, raw: bytes, *, validate: bool = True) -> HeaderResult:
    """Parse and validate the header bytes ``raw`` of ``res.file`` (``res.size`` set by
    :func:`header_bytes`) into ``res``; never raises for bad input."""
    file = res.file
    n = len(raw)
    size = res.size or 0
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        res.problems.append(problem("header_not_utf8", file, offset=8 + exc.start, header_len=n))
        return res
    del raw
    if n > LARGE_HEADER:
        res.text = text
        return res
    try:
        header = json.loads(text)
    except (ValueError, RecursionError) as exc:
        pos = getattr(exc, "pos", None)
        res.problems.append(problem("header_invalid_json", file, offset=None if pos is None else 8 + pos,
                                    error=str(getattr(exc, "msg", exc)), header_len=n))
        return res
    if not isinstance(header, dict):
        res.problems.append(problem("header_not_object", file, json_type=type(header).__name__))
        return res
    res.header = header
    if validate:
        _validate(res, header, size - 8 - n)
    return res


_DTYPE = itemgetter("dtype")
_INT_ONLY = {int}
_LIST_ONLY = {list}
_SHAPE = itemgetter("shape")
_OFFS = itemgetter("data_offsets")


#: whole bytes per element for byte-aligned dtypes (F4/F6 go through the bit-exact slow path)
_DTYPE_BYTES = {k: v // 8 for k, v in DTYPE_BITS.items() if v % 8 == 0}


def _columns_fast(header: dict[str, Any], start: int, end: int | None) -> tuple[list[str], list[int], int] | None:
    """``(dtypes, spans, last end)`` of a well-formed run of entries in offset order from ``start``
    (ending at ``end`` when given), checked with C-level passes only; None when anything is off
    (the per-tensor :class:`BatchValidator` then names the offending tensor)."""
    meta = header.pop("__metadata__", None)
    try:
        infos = list(header.values())
        if not infos:
            return None
        dtypes = list(map(_DTYPE, infos))
        if not set(dtypes).issubset(_DTYPE_BYTES):
            return None
        flat = list(chain.from_iterable(map(_OFFS, infos)))
        if len(flat) != 2 * len(infos):
            return None
        # contiguous from start (to end); ints only: a float, or a JSON true/false (bool, which sums
        # as an int), goes to the per-tensor rules, which report it (safetensors refuses both)
        if flat[0] != start or (end is not None and flat[-1] != end) or flat[1:-1:2] != flat[2::2] \
                or set(map(type, flat)) != _INT_ONLY:
            return None
        spans = list(map(sub, flat[1::2], flat[0::2]))
        if min(spans) < 0:
            return None
        shapes = list(map(_SHAPE, infos))
        dims = list(chain.from_iterable(shapes))
        # dimensions are non-negative JSON integers (a boolean multiplies as 0/1, two negatives as a
        # positive: safetensors refuses both); the per-tensor rules name the entry
        if (dims and (set(map(type, dims)) != _INT_ONLY or min(dims) < 0)) or set(map(type, shapes)) != _LIST_ONLY:
            return None
        numels = list(map(math.prod, shapes))
        if list(map(mul, numels, map(_DTYPE_BYTES.__getitem__, dtypes))) != spans:
            return None
        if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
            return None
    except (TypeError, KeyError, ValueError, AttributeError):
        return None
    finally:
        if meta is not None:
            header["__metadata__"] = meta
    return dtypes, spans, flat[-1]


def _validate_fast(res: HeaderResult, header: dict[str, Any], buffer_len: int) -> bool:
    """The common case (a well-formed header in offset order) checked with C-level passes only.

    Returns False when anything is off; the caller then runs the per-tensor validation that
    names the offending tensor.
    """
    got = _columns_fast(header, 0, buffer_len)
    if got is None:
        return False
    dtypes, spans, end = got
    dset = set(dtypes)
    res.tensors = len(dtypes)
    if len(dset) == 1:
        res.dtype_bytes = {dtypes[0]: end}
    else:
        res.dtype_bytes = {d: sum(compress(spans, map(eq, dtypes, repeat(d)))) for d in dset}
    res.data_bytes = end
    res.dtypes, res.spans = dtypes, spans
    return True


def _validate(res: HeaderResult, header: dict[str, Any], buffer_len: int) -> None:
    """safetensors ``Metadata::validate`` + the file-length rule (fast path first)."""
    if _validate_fast(res, header, buffer_len):
        return
    v = BatchValidator(res, buffer_len)
    v.feed(header)
    v.finish()


class BatchValidator:
    """The per-tensor safetensors rules over a header given in one or more batches (dicts in
    header order): dtype, shape and span of every entry, then holes, overlaps and the file length
    at :meth:`finish`. ``keep_spans=False`` (large headers) keeps the spans only once the offsets
    leave file order, so a well-formed header costs no per-tensor memory here."""

    def __init__(self, res: HeaderResult, buffer_len: int, keep_spans: bool = True) -> None:
        self.res, self.buffer_len, self.keep = res, buffer_len, keep_spans
        self.spans: list[tuple[int, int, str]] = []
        self.dtype_bytes: dict[str, int] = {}
        self.in_order = True
        self.prev_end = 0
        self.count = 0
        self.first: str | None = None

    def feed(self, header: dict[str, Any]) -> None:
        res, file, probs = self.res, self.res.file, self.res.problems
        bits_of = DTYPE_BITS.get
        prod = math.prod
        meta = header.get("__metadata__")
        if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
            probs.append(problem("bad_metadata", file, json_type=type(meta).__name__))
        if not self.keep and self.in_order and self._fast(header):
            return
        spans, dtype_bytes = self.spans, self.dtype_bytes
        prev_end, in_order, count = self.prev_end, self.in_order, self.count
        for name, info in header.items():
            if name == "__metadata__":
                continue
            count += 1
            try:
                dtype = info["dtype"]
                shape = info["shape"]
                begin, end = info["data_offsets"]
            except (TypeError, KeyError, ValueError):
                probs.append(problem("bad_entry", file, name, entry=json.dumps(info)[:200]))
                continue
            bits = bits_of(dtype) if type(dtype) is str else None  # a list/dict dtype is unhashable
            if bits is None:
                probs.append(problem("unknown_dtype", file, name, dtype=str(dtype)[:40]))
                continue
            if type(begin) is not int or type(end) is not int or type(shape) is not list \
                    or any(type(d) is not int for d in shape):
                probs.append(problem("bad_entry", file, name, entry=json.dumps(info)[:200]))
                continue
            try:
                numel = prod(shape)
            except TypeError:
                probs.append(problem("bad_entry", file, name, entry=json.dumps(info)[:200]))
                continue
            if type(numel) is not int or numel < 0 or (shape and min(shape) < 0):  # slow path only
                probs.append(problem("bad_entry", file, name, entry=json.dumps(info)[:200]))
                continue
            nbits = numel * bits
            if end < begin:
                probs.append(problem("offsets_reversed", file, name, begin=begin, end=end))
                in_order = False
                continue
            if nbits % 8:
                probs.append(problem("misaligned", file, name, dtype=dtype, shape=str(shape), bits=nbits))
            elif end - begin != nbits >> 3:
                probs.append(problem("shape_mismatch", file, name, dtype=dtype, shape=str(shape),
                                     expected_bytes=nbits >> 3, span_bytes=end - begin))
            if begin != prev_end and in_order:
                in_order = False
                if not self.keep and prev_end:  # what was in order so far, as one span
                    spans.append((0, prev_end, self.first or name))
            if self.first is None:
                self.first = name
            prev_end = end
            if self.keep or not in_order:
                spans.append((begin, end, name))
            dtype_bytes[dtype] = dtype_bytes.get(dtype, 0) + (end - begin)
            if len(probs) > _MAX_PROBLEMS:
                break
        res.tensors = self.count = count
        self.prev_end, self.in_order = prev_end, in_order

    def _fast(self, header: dict[str, Any]) -> bool:
        """One batch in file order, checked with the C-level passes of :func:`_validate_fast`."""
        got = _columns_fast(header, self.prev_end, None)
        if got is None:
            return False
        dtypes, spans, end = got
        if self.first is None and dtypes:
            self.first = next(k for k in header if k != "__metadata__")
        for d in set(dtypes):
            self.dtype_bytes[d] = self.dtype_bytes.get(d, 0) + sum(compress(spans, map(eq, dtypes, repeat(d))))
        self.count += len(dtypes)
        self.res.tensors = self.count
        self.prev_end = end
        return True

    def finish(self) -> None:
        res, file, probs, spans, buffer_len = self.res, self.res.file, self.res.problems, self.spans, self.buffer_len
        res.tensors = self.count
        res.dtype_bytes = self.dtype_bytes
        data_end = self.prev_end
        if not self.in_order:
            spans.sort()
            expect = 0
            for begin, end, name in spans:
                if begin > expect:
                    probs.append(problem("offsets_gap", file, name, gap_begin=expect, gap_end=begin,
                                         gap_bytes=begin - expect))
                elif begin < expect:
                    prev_name = _owner(spans, begin, name)
                    probs.append(problem("offsets_overlap", file, name, begin=begin, previous_end=expect,
                                         overlap_bytes=expect - begin, other_tensor=prev_name))
                expect = max(expect, end)
            data_end = expect
        res.data_bytes = sum(self.dtype_bytes.values())
        size = res.size or 0
        if data_end > buffer_len:
            victim = next((nm for b, e, nm in sorted(spans, key=lambda s: s[1]) if e > buffer_len), None)
            probs.append(problem("truncated", res.file, victim, size=size, expected_size=size - buffer_len + data_end,
                                 missing_bytes=data_end - buffer_len))
        elif data_end < buffer_len:
            probs.append(problem("trailing_bytes", res.file, size=size, expected_size=size - buffer_len + data_end,
                                 extra_bytes=buffer_len - data_end))


#: a header this broken stops being walked (the fact keeps 50 problems per kind anyway)
_MAX_PROBLEMS = 10_000


#: where one entry of a header object ends and the next begins (``...]},"next"``); an unescaped
#: quote after a comma cannot be inside a string, so a piece that parses was cut between entries
_ENTRY_END = re.compile(r'\]\s*\}\s*,\s*"')
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i


#: characters of header text parsed per batch
_BATCH_CHARS = 2 << 20


def iter_entry_batches(text: str, batch: int = _BATCH_ENTRIES) -> Iterator[dict[str, Any]]:
    """The entries of the JSON object ``text`` in order, as dicts of about ``batch`` entries or
    :data:`_BATCH_CHARS` characters, never one dict of them all. Raises
    :class:`json.JSONDecodeError` where :func:`json.loads` would (positions in ``text``).

    Each batch is a piece cut at an entry boundary and parsed by the C decoder as its own object;
    a piece that does not parse (a cut inside a key, or invalid JSON) is walked entry by entry
    with the C scanner, which either finds the real boundary or raises with the exact position.
    """
    i = _skip_ws(text, 0)
    if text[i:i + 1] != "{":
        raise json.JSONDecodeError("Expecting value", text, i)
    i = _skip_ws(text, i + 1)
    if text[i:i + 1] == "}":
        if _skip_ws(text, i + 1) != len(text):
            raise json.JSONDecodeError("Extra data", text, i + 1)
        return
    n = len(text)
    while True:
        m = _ENTRY_END.search(text, min(n, i + _BATCH_CHARS))
        cut = m.start() + 1 + text[m.start() + 1:m.end()].index("}") + 1 if m else None  # after "]}" of the last whole entry
        piece = text[i:cut] if cut else text[i:]
        try:
            doc = json.loads("{" + piece + ("}" if cut else ""))
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict):
            yield doc
            if m is None:  # the last piece carried the closing brace
                return
            i = m.end() - 1  # at the next entry's quote
            continue
        doc, i = _entries_slow(text, i, batch)
        yield doc
        if i < 0:
            return


def _entries_slow(text: str, i: int, batch: int) -> tuple[dict[str, Any], int]:
    """Up to ``batch`` entries from ``i`` (at a key's quote) with the C scanner: ``(dict, next i)``,
    next i = -1 at the end of the object; raises :class:`json.JSONDecodeError`."""
    import json.decoder
    import json.scanner
    from json import JSONDecodeError

    scan = getattr(json.scanner, "make_scanner")(json.JSONDecoder())
    scanstring = getattr(json.decoder, "scanstring")
    out: dict[str, Any] = {}
    while True:
        if text[i:i + 1] != '"':
            raise JSONDecodeError("Expecting property name enclosed in double quotes", text, i)
        key, i = scanstring(text, i + 1)
        i = _skip_ws(text, i)
        if text[i:i + 1] != ":":
            raise JSONDecodeError("Expecting ':' delimiter", text, i)
        i = _skip_ws(text, i + 1)
        try:
            out[key], i = scan(text, i)
        except StopIteration as exc:
            raise JSONDecodeError("Expecting value", text, exc.value) from None
        i = _skip_ws(text, i)
        c = text[i:i + 1]
        if c == "}":
            if _skip_ws(text, i + 1) != len(text):
                raise JSONDecodeError("Extra data", text, i + 1)
            return out, -1
        if c != ",":
            raise JSONDecodeError("Expecting ',' delimiter", text, i)
        i = _skip_ws(text, i + 1)
        if len(out) >= batch:
            return out, i


def _owner(spans: list[tuple[int, int, str]], offset: int, exclude: str) -> str | None:
    for b, e, nm in spans:
        if b <= offset < e and nm != exclude:
            return nm
    return None
