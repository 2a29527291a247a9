"""Two cores on one large log: a forked helper runs stage 1 on the second half of the file.

Stage 1 (fold, split, de-duplicate, search for anchors, assemble wrapped lines) is nearly all the
time ``explain --log`` spends on a large log, and it is per block. For a regular file of at least
:data:`SPLIT_MIN` bytes on a machine with two or more usable CPUs, a forked child runs stage 1 on
the blocks from a :data:`~.scan.BLOCK` boundary near the middle (:data:`PARENT_SHARE`) on, while
the parent scans the part before it as usual; the child sends each block's candidate spans (offsets, line indices, rejoined wrapped
lines) through a pipe, and the parent runs stage 2 on them in file order, reading the candidate
lines and their context back with ``pread``. The child cuts its blocks exactly where a scan of the
whole file would (it starts with the partial line the parent's last block leaves over), so the
report is the same as a one-process scan; ``tests/test_explain_split.py`` checks that on generated
logs with wrapped lines, long lines and a line across the split.

The child reads with ``pread`` only (the parent's file offset is shared and left alone), writes
only to its pipe, and ends with ``os._exit``. Where it cannot go on (a line longer than
:data:`~.results.MAX_LINE` in its half, more candidates than :data:`MAX_SPANS` or :data:`MAX_SENT`
bytes of them, any error) it
says so and stops; the parent then scans the rest itself from the end of the last block it got.
"""

from __future__ import annotations

import errno
import marshal
import os
import select
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from .results import MAX_LINE

if TYPE_CHECKING:  # pragma: no cover
    from .scan import Scanner

__all__ = ["SPLIT_MIN", "Block", "FileView", "Helper", "usable_cpus"]

SPLIT_MIN = 64 << 20     # smaller files are scanned in one process (a fork is not worth it)
MAX_SPANS = 500_000      # candidate spans the child sends before it gives the rest back
MAX_SENT = 64 << 20      # ... and bytes (rejoined lines travel whole): the parent holds what is unread
#: the parent's share of the file: it also runs stage 2 on every candidate and reads the child's
#: back, so it takes a little less than half (measured: docs/benchmarks.md, explain --log)
PARENT_SHARE = 0.45
_HEAD = 8                # frame header: payload length, 8 bytes little-endian


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Block:
    """One block of the child's half, as stage 1 left it."""

    offset: int          #: absolute file offset of the block's first byte
    length: int
    newlines: int
    spans: list[tuple[int, int, int]]
    joined: dict[int, tuple[bytes, bytes | None]]

    @property
    def end(self) -> int:
        return self.offset + self.length


class FileView:
    """The bytes of ``[offset, offset + length)`` of a file, read on demand with ``pread``: the
    slicing and ``find`` that stage 2 uses on an in-memory block."""

    def __init__(self, fd: int, offset: int, length: int) -> None:
        self.fd, self.offset, self.length = fd, offset, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, key: slice) -> bytes:
        start, stop, _step = key.indices(self.length)
        if stop <= start:
            return b""
        return _pread_all(self.fd, stop - start, self.offset + start)

    def find(self, sub: bytes, start: int = 0) -> int:
        """The first index of ``sub`` (one byte: a newline) at or after ``start``, or -1."""
        pos = max(0, start)
        while pos < self.length:
            piece = self[pos: min(self.length, pos + (64 << 10))]
            at = piece.find(sub)
            if at >= 0:
                return pos + at
            pos += len(piece)
        return -1


def _pread_all(fd: int, n: int, at: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = os.pread(fd, n - got, at + got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


class Helper:
    """The forked child and its pipe, seen from the parent."""

    def __init__(self, pid: int, rfd: int, split_at: int, carry_from: int) -> None:
        #: the child's chunks start at ``split_at``; its first block at ``carry_from``, the start of
        #: the partial line before the split (where the parent's last block ended)
        self.pid, self.rfd, self.split_at, self.carry_from = pid, rfd, split_at, carry_from
        self._buf = bytearray()
        self._eof = False
        #: why the child stopped early (None: it finished its half)
        self.stopped: str | None = None

    @classmethod
    def start(cls, scanner: "Scanner", fd: int, begin: int, end: int) -> "Helper | None":
        """Fork a child for the blocks of ``[split, end)`` of ``fd``, where ``split`` is the
        :data:`~.scan.BLOCK` boundary nearest :data:`PARENT_SHARE` of ``[begin, end)``; None when there is
        no such boundary with a newline in the block before it, or fork fails."""
        from .scan import BLOCK

        k = round((end - begin) / BLOCK * PARENT_SHARE)
        split = begin + k * BLOCK
        if k < 1 or split >= end:
            return None
        prev = _pread_all(fd, BLOCK, split - BLOCK)
        nl = prev.rfind(b"\n")
        if nl < 0:
            return None  # a line longer than a block at the split: one process reads it
        carry_from = split - BLOCK + nl + 1
        scanner.prefilter  # built before the fork: both processes use the same anchors  # noqa: B018
        rfd, wfd = os.pipe()
        try:
            with warnings.catch_warnings():  # (3.12+ warns when the parent has threads: the
                warnings.simplefilter("ignore", DeprecationWarning)  # child runs no other code)
                pid = os.fork()
        except OSError:
            os.close(rfd)
            os.close(wfd)
            return None
        if pid == 0:  # pragma: no cover - the child (measured by the parent's tests)
            code = 0
            try:
                os.close(rfd)
                _child(scanner, fd, wfd, carry_from, split, end)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(wfd)
        os.set_blocking(rfd, False)
        return cls(pid, rfd, split, carry_from)

    # -- reading the pipe -----------------------------------------------------------------------
    def drain(self) -> None:
        """Take what the child has written so far (the parent calls this between its blocks, so
        the child never waits on a full pipe)."""
        while not self._eof:
            try:
                got = os.read(self.rfd, 1 << 20)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            if not got:
                self._eof = True
                return
            self._buf += got

    def _frame(self) -> Any:
        if len(self._buf) < _HEAD:
            return None
        n = int.from_bytes(self._buf[:_HEAD], "little")
        if len(self._buf) < _HEAD + n:
            return None
        obj = marshal.loads(bytes(self._buf[_HEAD:_HEAD + n]))
        del self._buf[:_HEAD + n]
        return obj

    def blocks(self) -> Iterator[Block]:
        """The child's blocks in file order; afterwards :attr:`stopped` says whether it finished."""
        while True:
            obj = self._frame()
            if obj is None:
                if self._eof:
                    self.stopped = self.stopped or "the helper process ended early"
                    return
                select.select([self.rfd], [], [], 1.0)
                self.drain()
                continue
            kind = obj[0]
            if kind == "block":
                yield Block(*obj[1:])
            elif kind == "end":
                return
            else:
                self.stopped = str(obj[1])
                return

    def close(self) -> None:
        """Stop the child if it still runs, reap it, close the pipe."""
        try:
            os.close(self.rfd)
        except OSError:
            pass
        try:
            pid, _status = os.waitpid(self.pid, os.WNOHANG)
            if pid == 0:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        except OSError as exc:  # pragma: no cover
            if exc.errno != errno.ESRCH:
                raise


def _send(wfd: int, obj: Any) -> int:
    """Write one frame; returns its size."""
    data = marshal.dumps(obj)
    view = memoryview(len(data).to_bytes(_HEAD, "little") + data)
    size = len(view)
    while view:
        n = os.write(wfd, view)
        view = view[n:]
    return size


def _child(scanner: "Scanner", fd: int, wfd: int, carry_from: int, split: int, end: int) -> None:  # pragma: no cover
    """Stage 1 on ``[carry_from, end)``, cut into blocks as one process scanning from the start of
    the file would cut them (:meth:`Scanner.scan_chunks`): the partial line before ``split`` is
    the carry, each block ends at the last newline of what was read, and the last block takes the
    final partial line."""
    from .scan import BLOCK

    os.set_blocking(wfd, True)
    carry = _pread_all(fd, split - carry_from, carry_from)
    pending, pending_at, sent, sent_bytes = b"", carry_from, 0, 0
    pos = split
    while pos < end:
        chunk = _pread_all(fd, min(BLOCK, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        buf = carry + chunk if carry else chunk
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE:
                _flush(scanner, wfd, pending, pending_at)  # (the parent reads the long line itself)
                _send(wfd, ("stop", f"a line longer than {MAX_LINE >> 20} MiB after the split"))
                return
            carry = buf
            continue
        spans, size = _flush(scanner, wfd, pending, pending_at)
        sent, sent_bytes = sent + spans, sent_bytes + size
        if sent > MAX_SPANS or sent_bytes > MAX_SENT:
            _send(wfd, ("stop", f"more than {MAX_SPANS:,} candidate lines or {MAX_SENT >> 20} MiB of them "
                                "after the split"))
            return
        pending_at += len(pending)
        pending, carry = buf[: cut + 1], buf[cut + 1:]
    _flush(scanner, wfd, pending + carry, pending_at)
    _send(wfd, ("end",))


def _flush(scanner: "Scanner", wfd: int, block: bytes, at: int) -> tuple[int, int]:  # pragma: no cover
    """Stage 1 on one block, sent; returns (candidate spans, bytes sent)."""
    if not block:
        return 0, 0
    spans, joined, newlines = scanner._stage1(block, True)
    keep = {i: joined[i] for _s, _e, i in spans if i in joined} if joined else {}
    return len(spans), _send(wfd, ("block", at, len(block), newlines, spans, keep))
