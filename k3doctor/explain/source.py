"""Where ``explain`` reads from: log files and stdin, as bounded streams of byte blocks.

Every input goes through :mod:`k3doctor.boundedio` (file type checked before reading, reads under
caps). What one input may cost is fixed here:

* a regular log file is scanned whole up to :data:`FILE_CAP`; a larger one is scanned as its head
  and its last :data:`FILE_TAIL` bytes, and the middle is named as skipped;
* a stream (stdin from a pipe or a device, a FIFO, a ``/proc``-style file whose size reads 0) is
  scanned for its first :data:`STREAM_HEAD` bytes; reading goes on, keeping only the last
  :data:`STREAM_TAIL` bytes, until the stream ends or :data:`STREAM_READ_MAX` bytes were read,
  and that tail is scanned too. So ``/dev/zero`` and ``/dev/urandom`` end, in seconds;
* a stream that is silent for :data:`IDLE_TIMEOUT_S` ends the read with an error, except a pipe
  or terminal on stdin, which is the user's own producer;
* kernel interface files (``/proc``, ``/sys``) are refused: ``/proc/kmsg`` would block and drain
  the kernel log, ``/proc/self/pagemap`` never ends.

:func:`log_chunks` yields ``bytes`` blocks and ``None`` where bytes were skipped; the scanner
starts a fresh line after a ``None``. What was skipped is appended to ``notes`` as one line each.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections import deque
from itertools import islice
from collections.abc import Iterator

from ..boundedio import LIMITS, BoundedReadError, iter_chunks, open_fd

__all__ = ["BLOCK", "FILE_CAP", "FILE_TAIL", "STREAM_HEAD", "STREAM_TAIL", "STREAM_READ_MAX",
           "IDLE_TIMEOUT_S", "BoundedReadError", "open_log", "stdin_chunks", "log_chunks", "human"]

_MIB = 1 << 20
BLOCK = 4 * _MIB                 # bytes per block handed to the scanner
FILE_CAP = LIMITS["log"]         # bytes of one regular file scanned in full
FILE_TAIL = 256 * _MIB           # of a larger file: its last bytes, after the head
STREAM_HEAD = 64 * _MIB          # bytes of a stream scanned from its start
STREAM_TAIL = 16 * _MIB          # and from its end (kept in memory while reading on)
STREAM_READ_MAX = 512 * _MIB     # a stream is not read past this
IDLE_TIMEOUT_S = 5.0             # a file-like stream silent this long ends with an error

_KERNEL_DIRS = ("/proc", "/sys")


def human(n: int) -> str:
    """``n`` bytes as ``'12.3 MiB'`` (or ``'512 bytes'``)."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / _MIB:.1f} MiB" if n >= _MIB else f"{n} bytes"


def _is_kernel_file(real: str) -> bool:
    return any(real == d or real.startswith(d + "/") for d in _KERNEL_DIRS)


def open_log(path: str) -> int:
    """A read-only fd for the log ``path``, or :class:`BoundedReadError` (one line, names the file).

    Regular files, FIFOs and character devices are accepted; directories, sockets, block devices
    and kernel interface files are refused before anything is read.
    """
    if _is_kernel_file(os.path.realpath(path)):
        raise BoundedReadError(path, "is a kernel interface file, not a log; save it to a file first "
                                     "(e.g. dmesg > kernel.log) and pass that")
    return open_fd(path, kind="log", allow_stream=True)


def _stdin_fd(fd: int) -> int:
    """``fd`` (stdin's) when it can be read, else :class:`BoundedReadError` saying how to give input."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        why = "closed" if exc.errno == errno.EBADF else f"not usable ({exc.strerror})"
        raise BoundedReadError("<stdin>", f"standard input is {why}; pipe the error text in "
                                          "(... | k3doctor explain -) or pass --log FILE") from None
    try:  # a pipe or socket links to "pipe:[N]" (not a path); only a path can name a kernel file
        target = os.readlink(f"/proc/self/fd/{fd}")
        real = os.path.realpath(target) if target.startswith("/") else ""
    except OSError:
        real = ""
    if _is_kernel_file(real):
        raise BoundedReadError("<stdin>", f"standard input is {real}, a kernel interface file, not a log; "
                                          "save it to a file first (e.g. dmesg > kernel.log)")
    if stat.S_ISDIR(mode):
        raise BoundedReadError("<stdin>", "standard input is a directory; redirect a log file into it "
                                          "or pass --log FILE")
    return fd


def stdin_chunks(notes: list[str]) -> Iterator[bytes | None]:
    """:func:`log_chunks` for standard input; an in-memory ``sys.stdin`` (tests, embedding) is read
    through its ``read`` under the same stream caps."""
    stream = sys.stdin
    if stream is None or getattr(stream, "closed", False):
        _stdin_fd(-1)  # raises the "closed" error
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd >= 0:
        yield from log_chunks(_stdin_fd(fd), "<stdin>", notes, is_stdin=True)
        return
    buffer = getattr(stream, "buffer", None)

    def reads() -> Iterator[bytes]:
        got = 0
        while got < STREAM_READ_MAX:
            try:
                b = buffer.read(BLOCK) if buffer is not None else stream.read(BLOCK).encode("utf-8", "replace")
            except (OSError, ValueError) as exc:
                raise BoundedReadError("<stdin>", f"standard input cannot be read ({exc})") from None
            if not b:
                return
            got += len(b)
            yield b

    yield from _stream_chunks(reads(), "<stdin>", notes)


def _sized_file(fd: int) -> int | None:
    """The size of a seekable regular file with a size, else None (a stream)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size <= 0:
        return None
    try:
        os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        return None
    return st.st_size


def log_chunks(fd: int, name: str, notes: list[str], *, is_stdin: bool = False) -> Iterator[bytes | None]:
    """The bytes to scan from ``fd``, in blocks; ``None`` marks a skip (see the module doc)."""
    size = _sized_file(fd)
    if size is not None:
        yield from _file_chunks(fd, name, size, notes)
        return
    mode = os.fstat(fd).st_mode
    user_stream = is_stdin and (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd))
    idle = None if user_stream else IDLE_TIMEOUT_S
    yield from _stream_chunks(iter_chunks(fd, path=name, kind="log", cap=STREAM_READ_MAX, timeout=None,
                                          block=BLOCK, idle_timeout=idle), name, notes)


def _data_extents(fd: int, begin: int, end: int) -> Iterator[tuple[int, int]]:
    """The ranges of ``[begin, end)`` that hold data: a sparse file's holes (``SEEK_HOLE``) read as
    NUL bytes, which carry no text, so they are not read. Where the filesystem cannot say, the whole
    range is data."""
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        yield begin, end
        return
    pos = begin
    while pos < end:
        try:
            a = os.lseek(fd, pos, seek_data)
            b = os.lseek(fd, a, seek_hole)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after pos
                return
            yield pos, end  # the filesystem cannot tell holes: read it all
            return
        if a >= end:
            return
        yield a, min(b, end)
        pos = b


def _range_chunks(fd: int, name: str, begin: int, end: int, holes: list[int]) -> Iterator[bytes | None]:
    """The blocks of ``[begin, end)``, holes skipped (each skip a ``None``; their bytes added to
    ``holes``)."""
    pos = begin
    for a, b in _data_extents(fd, begin, end):
        if a > pos:
            holes[0] += a - pos
            yield None
        os.lseek(fd, a, os.SEEK_SET)
        yield from iter_chunks(fd, path=name, kind="log", cap=b - a, timeout=None, block=BLOCK)
        pos = b
    if end > pos:
        holes[0] += end - pos


def whole_range(fd: int) -> tuple[int, int] | None:
    """``(begin, end)`` of a regular file that :func:`log_chunks` reads whole, as one run of data
    with no hole in it, else None (the file offset is left at ``begin``)."""
    size = _sized_file(fd)
    if size is None:
        return None
    begin = os.lseek(fd, 0, os.SEEK_CUR)
    try:
        if not 0 < size - begin <= FILE_CAP:
            return None
        return (begin, size) if list(islice(_data_extents(fd, begin, size), 2)) == [(begin, size)] else None
    finally:
        os.lseek(fd, begin, os.SEEK_SET)


def range_chunks(fd: int, name: str, begin: int, end: int) -> Iterator[bytes | None]:
    """The blocks of ``[begin, end)`` of a file with no holes there (:func:`whole_range`)."""
    yield from _range_chunks(fd, name, begin, end, [0])


def _file_chunks(fd: int, name: str, size: int, notes: list[str]) -> Iterator[bytes | None]:
    start = os.lseek(fd, 0, os.SEEK_CUR)
    size -= start
    holes = [0]
    if size <= FILE_CAP:
        yield from _range_chunks(fd, name, start, start + size, holes)
    else:
        head = FILE_CAP - FILE_TAIL
        yield from _range_chunks(fd, name, start, start + head, holes)
        notes.append(f"{name}: {human(size)} is more than the {human(FILE_CAP)} scanned per file; scanned the "
                     f"first {human(head)} and the last {human(FILE_TAIL)}, skipped bytes {head:,}-"
                     f"{size - FILE_TAIL:,} (line numbers after the skip count from there)")
        yield None
        yield from _range_chunks(fd, name, start + size - FILE_TAIL, start + size, holes)
    if holes[0]:
        notes.append(f"{name}: {human(holes[0])} of holes (a sparse file: they read as NUL bytes, no text) "
                     "were not read (line numbers after a hole count from there)")


def _stream_chunks(chunks: Iterator[bytes], name: str, notes: list[str]) -> Iterator[bytes | None]:
    got = 0
    for chunk in chunks:
        got += len(chunk)
        yield chunk
        if got >= STREAM_HEAD:
            break
    else:
        return
    tail: deque[bytes] = deque()
    kept = 0
    for chunk in chunks:
        got += len(chunk)
        tail.append(chunk)
        kept += len(chunk)
        while kept - len(tail[0]) >= STREAM_TAIL:
            kept -= len(tail.popleft())
    if not tail:
        return
    skipped = got - STREAM_HEAD - kept
    ended = "it kept producing data, so reading stopped there" if got >= STREAM_READ_MAX else "then it ended"
    if skipped > 0:
        notes.append(f"{name}: a stream of {human(got)} read ({ended}); scanned the first {human(STREAM_HEAD)} "
                     f"and the last {human(kept)}, skipped {human(skipped)} between them "
                     f"(line numbers after the skip count from there)")
        yield None
    elif got >= STREAM_READ_MAX:
        notes.append(f"{name}: a stream of {human(got)} read ({ended}); all of it was scanned")
    yield from tail
