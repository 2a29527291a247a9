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
import stat
import struct
from itertools import chain, compress, repeat
from operator import eq, itemgetter, mul, sub
from typing import Any

__all__ = ["MAX_HEADER_SIZE", "DTYPE_BITS", "HeaderResult", "read_header", "open_readonly", "problem"]

MAX_HEADER_SIZE = 100_000_000

#: safetensors dtype -> bits per element (``F4``/``F6_*``/``F8_E8M0`` since safetensors 0.6)
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
    "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}

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
                 "dtypes", "spans")

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


def read_header(path: str, file: str, *, validate: bool = True) -> HeaderResult:
    """Read ``path`` (shown as ``file``) and validate its header; never raises for bad input."""
    res = HeaderResult(file)
    try:
        fd = open_readonly(path)
    except OSError as exc:
        res.problems.append(_stat_problem(path, file, exc))
        return res
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            res.problems.append(problem("is_directory", file))
            return res
        if not stat.S_ISREG(st.st_mode):
            res.problems.append(problem("not_regular", file, mode=stat.S_IFMT(st.st_mode)))
            return res
        size = res.size = st.st_size
        if size == 0:
            res.problems.append(problem("empty_file", file, size=0))
            return res
        if size < 8:
            res.problems.append(problem("too_small", file, size=size))
            return res
        head = os.pread(fd, 8, 0)
        if head.startswith(b"version "):
            res.problems.append(problem("lfs_pointer", file, size=size))
            return res
        (n,) = _U64.unpack(head)
        res.header_len = n
        if n > MAX_HEADER_SIZE:
            res.problems.append(problem("header_too_large", file, header_len=n, limit=MAX_HEADER_SIZE, size=size))
            return res
        if 8 + n > size:
            res.problems.append(problem("header_beyond_file", file, header_len=n, size=size))
            return res
        raw = _read_exact(fd, n, 8)
    except OSError as exc:
        res.problems.append(_stat_problem(path, file, exc))
        return res
    finally:
        os.close(fd)
    if len(raw) != n:
        res.problems.append(problem("header_beyond_file", file, header_len=n, size=8 + len(raw)))
        return res
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        res.problems.append(problem("header_not_utf8", file, offset=8 + exc.start, header_len=n))
        return res
    try:
        header = json.loads(text)
    except ValueError as exc:
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
_SHAPE = itemgetter("shape")
_OFFS = itemgetter("data_offsets")


#: whole bytes per element for byte-aligned dtypes (F4/F6 go through the bit-exact slow path)
_DTYPE_BYTES = {k: v // 8 for k, v in DTYPE_BITS.items() if v % 8 == 0}


def _validate_fast(res: HeaderResult, header: dict[str, Any], buffer_len: int) -> bool:
    """The common case (a well-formed header in offset order) checked with C-level passes only.

    Returns False when anything is off; the caller then runs the per-tensor :func:`_validate`
    that names the offending tensor.
    """
    meta = header.pop("__metadata__", None)
    try:
        infos = list(header.values())
        if not infos:
            return False
        dtypes = list(map(_DTYPE, infos))
        dset = set(dtypes)
        if not dset.issubset(_DTYPE_BYTES):
            return False
        flat = list(chain.from_iterable(map(_OFFS, infos)))
        if len(flat) != 2 * len(infos):
            return False
        # contiguous from 0, ending at the end of the file; ints only (a float or bool makes the sum non-int)
        if flat[0] != 0 or flat[-1] != buffer_len or flat[1:-1:2] != flat[2::2] or type(sum(flat)) is not int:
            return False
        spans = list(map(sub, flat[1::2], flat[0::2]))
        if min(spans) < 0:
            return False
        numels = list(map(math.prod, map(_SHAPE, infos)))
        if type(sum(numels)) is not int or list(map(mul, numels, map(_DTYPE_BYTES.__getitem__, dtypes))) != spans:
            return False
        if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
            return False
    except (TypeError, KeyError, ValueError, AttributeError):
        return False
    finally:
        if meta is not None:
            header["__metadata__"] = meta
    res.tensors = len(infos)
    if len(dset) == 1:
        res.dtype_bytes = {dtypes[0]: flat[-1]}
    else:
        res.dtype_bytes = {d: sum(compress(spans, map(eq, dtypes, repeat(d)))) for d in dset}
    res.data_bytes = flat[-1]
    res.dtypes, res.spans = dtypes, spans
    return True


def _validate(res: HeaderResult, header: dict[str, Any], buffer_len: int) -> None:
    """safetensors ``Metadata::validate`` + the file-length rule (fast path first)."""
    if _validate_fast(res, header, buffer_len):
        return
    file = res.file
    probs = res.problems
    bits_of = DTYPE_BITS.get
    prod = math.prod
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        probs.append(problem("bad_metadata", file, json_type=type(meta).__name__))
    spans: list[tuple[int, int, str]] = []
    dtype_bytes: dict[str, int] = {}
    in_order = True
    prev_end = 0
    count = 0
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
        bits = bits_of(dtype)
        if bits is None:
            probs.append(problem("unknown_dtype", file, name, dtype=str(dtype)[:40]))
            continue
        if type(begin) is not int or type(end) is not int or type(shape) is not list:
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
        if begin != prev_end:
            in_order = False
        prev_end = end
        spans.append((begin, end, name))
        dtype_bytes[dtype] = dtype_bytes.get(dtype, 0) + (end - begin)
    res.tensors = count
    res.dtype_bytes = dtype_bytes
    data_end = prev_end
    if not in_order:
        spans.sort()
        expect = 0
        for begin, end, name in spans:
            if begin > expect:
                probs.append(problem("offsets_gap", file, name, gap_begin=expect, gap_end=begin, gap_bytes=begin - expect))
            elif begin < expect:
                prev_name = _owner(spans, begin, name)
                probs.append(problem("offsets_overlap", file, name, begin=begin, previous_end=expect,
                                     overlap_bytes=expect - begin, other_tensor=prev_name))
            expect = max(expect, end)
        data_end = expect
    res.data_bytes = sum(dtype_bytes.values())
    size = res.size or 0
    if data_end > buffer_len:
        victim = next((nm for b, e, nm in sorted(spans, key=lambda s: s[1]) if e > buffer_len), None)
        probs.append(problem("truncated", res.file, victim, size=size, expected_size=size - buffer_len + data_end,
                             missing_bytes=data_end - buffer_len))
    elif data_end < buffer_len:
        probs.append(problem("trailing_bytes", res.file, size=size, expected_size=size - buffer_len + data_end,
                             extra_bytes=buffer_len - data_end))


def _owner(spans: list[tuple[int, int, str]], offset: int, exclude: str) -> str | None:
    for b, e, nm in spans:
        if b <= offset < e and nm != exclude:
            return nm
    return None
