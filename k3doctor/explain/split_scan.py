"""Several cores on one large log: forked helpers run stage 1 on the later parts of the file.

Stage 1 (fold, split, de-duplicate, search for anchors, assemble wrapped lines) is nearly all the
time ``explain --log`` spends on a large log, and it is per block. For a regular file of at least
:data:`SPLIT_MIN` bytes on a machine with two or more usable CPUs (:func:`usable_cpus`: the
affinity mask and a cgroup CPU quota, whichever is less), the file is cut at :data:`~.scan.BLOCK`
boundaries into one range per process (:func:`boundaries`). The parent scans the first range as
usual; each forked child runs stage 1 on its own range and sends each block's candidate spans
(offsets, line indices, rejoined wrapped lines) through its pipe, and the parent runs stage 2 on
them in file order, reading the candidate lines and their context back with ``pread``. Stage 2
costs the parent a little per candidate, so its own range is the smaller one
(:func:`parent_share`). Each child cuts its blocks exactly where a scan of the whole file would
(it starts with the partial line the range before it leaves over, and leaves its own last partial
line to the next range), so the report is the same as a one-process scan;
``tests/test_explain_split.py`` checks that on generated logs with wrapped lines, long lines and
lines across the cuts, for two and more processes.

A child reads with ``pread`` only (the parent's file offset is shared and left alone), writes
only to its pipe, and ends with ``os._exit``. Where it cannot go on (a line longer than
:data:`~.results.MAX_LINE` in its range, more candidates than :data:`MAX_SPANS` or :data:`MAX_SENT`
bytes of them, any error) it says so and stops; the parent then scans the rest of that range
itself from the end of the last block it got.
"""

from __future__ import annotations

import errno
import marshal
import os
import select
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .results import MAX_LINE

if TYPE_CHECKING:  # pragma: no cover
    from .scan import Scanner

__all__ = ["SPLIT_MIN", "MAX_PROCS", "Block", "FileView", "Helper", "boundaries", "parent_share",
           "start_helpers", "usable_cpus"]

SPLIT_MIN = 64 << 20     # smaller files are scanned in one process (a fork is not worth it)
RANGE_MIN = 32 << 20     # by default each process gets at least this much of the file
MAX_PROCS = 8            # processes per file by default (``--jobs`` may ask for more)
MAX_SPANS = 500_000      # candidate spans a child sends before it gives the rest back
MAX_SENT = 64 << 20      # ... and bytes (rejoined lines travel whole): the parent holds what is unread
#: what stage 2 and reading a child's candidates back cost the parent, per byte of a child's
#: range, as a fraction of what stage 1 costs per byte (measured: docs/benchmarks-explain.md);
#: it sets the parent's share (0.45 with two processes)
PARENT_COST = 0.18
_HEAD = 8                # frame header: payload length, 8 bytes little-endian
_CPU_MAX = "/sys/fs/cgroup/cpu.max"                    # cgroup v2
_CFS_QUOTA = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"     # cgroup v1
_CFS_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_period_us"


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity mask (where the OS has one), and no more than a
    cgroup CPU quota allows (a container limited to 2 CPUs on a 64-core host gets 2)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, n if quota is None else min(n, quota))


def _cgroup_quota() -> int | None:
    """Whole CPUs a cgroup CPU quota allows (v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us`` /
    ``cpu.cfs_period_us``), at least 1; None without a quota or where none can be read."""
    try:
        with open(_CPU_MAX, "rb") as f:  # "max 100000" (no quota) or "200000 100000"
            quota, period = f.read(64).split()[:2]
        return None if quota == b"max" or int(period) <= 0 else max(1, int(quota) // int(period))
    except (OSError, ValueError):
        pass
    try:
        with open(_CFS_QUOTA, "rb") as q, open(_CFS_PERIOD, "rb") as pd:  # -1: no quota
            quota_us, period_us = int(q.read(32)), int(pd.read(32))
        return None if quota_us <= 0 or period_us <= 0 else max(1, quota_us // period_us)
    except (OSError, ValueError):
        return None


def parent_share(procs: int) -> float:
    """The parent's share of a file scanned by ``procs`` processes: each child gets ``(1 - p) /
    (procs - 1)``, and the parent's stage 1 on ``p`` plus its :data:`PARENT_COST` on the
    children's ranges should take as long as one child's range."""
    if procs < 2:
        return 1.0
    h = 1.0 / (procs - 1)
    return max(0.0, (h - PARENT_COST) / (1.0 - PARENT_COST + h))


def boundaries(begin: int, end: int, procs: int, block: int) -> list[int]:
    """Where the ranges of ``procs`` processes start after the parent's, as absolute offsets on
    ``block`` boundaries: strictly increasing, after at least one block of the parent's and at
    least one block before ``end`` (fewer than ``procs - 1`` where the file is too short to give
    each range a block)."""
    if procs < 2 or end - begin <= block:
        return []
    p = parent_share(procs)
    h = (1.0 - p) / (procs - 1)
    blocks = (end - begin) / block
    out: list[int] = []
    for i in range(procs - 1):
        k = max(1, round(blocks * (p + i * h)))
        at = begin + k * block
        if at <= end - block and (not out or at > out[-1]):
            out.append(at)
    return out


@dataclass(frozen=True)
class Block:
    """One block of a child's range, as stage 1 left it."""

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

    def __init__(self, pid: int | None, rfd: int, split_at: int, carry_from: int, stop: int, final: bool) -> None:
        #: the child's chunks are ``[split_at, stop)``; its first block starts at ``carry_from``, the
        #: start of the partial line before the cut (where the range before it left off); unless
        #: ``final``, its last partial line is left to the next range
        self.pid, self.rfd, self.split_at, self.carry_from = pid, rfd, split_at, carry_from
        self.stop, self.final = stop, final
        self._buf = bytearray()
        self._eof = False
        #: why the child stopped early (None: it finished its range)
        self.stopped: str | None = None

    @classmethod
    def start(cls, scanner: "Scanner", fd: int, carry_from: int, split: int, stop: int,
              final: bool) -> "Helper":
        """Fork a child for the blocks of ``[split, stop)`` of ``fd`` (``split`` on a
        :data:`~.scan.BLOCK` boundary, ``carry_from`` the start of the line across it; ``final``:
        ``stop`` is the end of the file, so the child also scans the last partial line). Where
        fork fails, a helper that has stopped before its first block: the parent scans its range."""
        scanner.prefilter  # built before the fork: every process uses the same anchors  # noqa: B018
        rfd, wfd = os.pipe()
        try:
            with warnings.catch_warnings():  # (3.12+ warns when the parent has threads: the
                warnings.simplefilter("ignore", DeprecationWarning)  # child runs no other code)
                pid = os.fork()
        except OSError as exc:
            os.close(wfd)
            helper = cls(None, rfd, split, carry_from, stop, final)
            helper._eof, helper.stopped = True, f"no helper process ({exc.strerror or exc})"
            return helper
        if pid == 0:  # pragma: no cover - the child (measured by the parent's tests)
            code = 0
            try:
                os.close(rfd)
                _child(scanner, fd, wfd, carry_from, split, stop, final)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(wfd)
        os.set_blocking(rfd, False)
        return cls(pid, rfd, split, carry_from, stop, final)

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

    def blocks(self, others: "Sequence[Helper]" = ()) -> Iterator[Block]:
        """The child's blocks in file order; afterwards :attr:`stopped` says whether it finished.
        While it waits, it also takes what ``others`` (the later children) wrote, so none of them
        waits on a full pipe."""
        while True:
            obj = self._frame()
            if obj is None:
                if self._eof:
                    self.stopped = self.stopped or "the helper process ended early"
                    return
                select.select([self.rfd], [], [], 1.0)
                self.drain()
                for other in others:
                    other.drain()
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
        if self.rfd >= 0:  # (closed once: the number may be reused by a later open)
            try:
                os.close(self.rfd)
            except OSError:
                pass
            self.rfd = -1
        if self.pid is None:
            return
        pid, self.pid = self.pid, None  # (reaped once: a second close must not signal a reused pid)
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        except OSError as exc:  # pragma: no cover
            if exc.errno != errno.ESRCH:
                raise


def start_helpers(scanner: "Scanner", fd: int, begin: int, end: int, procs: int) -> list[Helper]:
    """Helpers for all ranges but the parent's (the first) of ``[begin, end)`` cut for ``procs``
    processes (:func:`boundaries`), in file order. A cut inside a line longer than a block (no
    newline in the block before it) is dropped: the range before it reads on to the next cut."""
    from .scan import BLOCK

    starts = []
    for at in boundaries(begin, end, procs, BLOCK):
        nl = _pread_all(fd, BLOCK, at - BLOCK).rfind(b"\n")
        if nl >= 0:
            starts.append((at - BLOCK + nl + 1, at))
    stops = [at for _c, at in starts[1:]] + [end]
    return [Helper.start(scanner, fd, carry_from, at, stop, stop == end)
            for (carry_from, at), stop in zip(starts, stops)]


def _send(wfd: int, obj: Any) -> int:
    """Write one frame; returns its size."""
    data = marshal.dumps(obj)
    view = memoryview(len(data).to_bytes(_HEAD, "little") + data)
    size = len(view)
    while view:
        n = os.write(wfd, view)
        view = view[n:]
    return size


def _child(scanner: "Scanner", fd: int, wfd: int, carry_from: int, split: int, end: int,
           final: bool = True) -> None:  # pragma: no cover
    """Stage 1 on ``[carry_from, end)``, cut into blocks as one process scanning from the start of
    the file would cut them (:meth:`Scanner.scan_chunks`): the partial line before ``split`` is
    the carry, each block ends at the last newline of what was read, and the last block takes the
    final partial line when ``final`` (else the next range starts with it)."""
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
                _send(wfd, ("stop", f"a line longer than {MAX_LINE >> 20} MiB in its range"))
                return
            carry = buf
            continue
        spans, size = _flush(scanner, wfd, pending, pending_at)
        sent, sent_bytes = sent + spans, sent_bytes + size
        if sent > MAX_SPANS or sent_bytes > MAX_SENT:
            _send(wfd, ("stop", f"more than {MAX_SPANS:,} candidate lines or {MAX_SENT >> 20} MiB of them "
                                "in its range"))
            return
        pending_at += len(pending)
        pending, carry = buf[: cut + 1], buf[cut + 1:]
    _flush(scanner, wfd, pending + carry if final else pending, pending_at)
    _send(wfd, ("end",))


def _flush(scanner: "Scanner", wfd: int, block: bytes, at: int) -> tuple[int, int]:  # pragma: no cover
    """Stage 1 on one block, sent; returns (candidate spans, bytes sent)."""
    if not block:
        return 0, 0
    spans, joined, newlines = scanner._stage1(block, True)
    keep = {i: joined[i] for _s, _e, i in spans if i in joined} if joined else {}
    return len(spans), _send(wfd, ("block", at, len(block), newlines, spans, keep))
