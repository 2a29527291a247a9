"""One bounded reader for every file k3doctor reads from a user: type-checked, size-capped, timed.

A path given to k3doctor (``config.json``, the safetensors index, HF metadata, manifests,
snapshots, env files, logs) may be a FIFO, ``/dev/zero``, ``/proc/kmsg``, a 40 GB file or a file on
a stale NFS mount. :func:`read_bytes` opens it non-blocking, checks it is a regular file (unless the
caller allows streams), refuses it above the cap for its *kind* before reading, and stops at the cap
and at a deadline while reading, so no input can hang a run or blow its memory. Every refusal is a
:class:`BoundedReadError` whose message is one line naming the file, what is wrong and the fix.

:func:`iter_chunks` is the streaming form (logs, stdin): it yields byte blocks up to a total cap and
reports whether the cap cut the stream.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import time
from collections.abc import Iterator

__all__ = ["BoundedReadError", "LIMITS", "DEFAULT_TIMEOUT_S", "read_bytes", "read_text", "open_fd",
           "iter_chunks", "file_kind_word", "is_regular_file"]

_MIB = 1 << 20

#: Size caps per kind of input, in bytes. The K3 index (497,220 tensors) is 59.8 MB, so the index cap
#: leaves 4x headroom; configs and HF metadata are kilobytes in practice.
LIMITS: dict[str, int] = {
    "config": 64 * _MIB,       # config.json, generation_config.json, quant side files
    "index": 256 * _MIB,       # model.safetensors.index.json
    "metadata": 16 * _MIB,     # HF cache refs, .metadata files, README front matter
    "manifest": 64 * _MIB,     # k3doctor manifest (one sha256 per file: ~150 bytes a file)
    "snapshot": 16 * _MIB,     # k3doctor snapshot JSON (a real node's is ~20 KB, a K3 model fact ~1 MB)
    "env": 16 * _MIB,          # --env-file, launch scripts
    "log": 4096 * _MIB,        # engine logs (streamed; see iter_chunks)
}

#: cap for a regular file whose size the kernel reports as 0 (procfs, sysfs): such files are small
#: when they are what the user meant, and unbounded when they are not
_PSEUDO_CAP = 16 * _MIB

#: Wall-clock budget for one file (reading a config must never take longer than this).
DEFAULT_TIMEOUT_S = 10.0

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_BLOCK = 1 << 20


class BoundedReadError(Exception):
    """A file that could not be read within its bounds; ``str()`` is one line naming the file."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def file_kind_word(mode: int) -> str:
    """``'a FIFO'``, ``'a character device'`` ... for an ``st_mode`` (used in messages)."""
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a regular file")):
        if test(mode):
            return word
    return "not a regular file"


def _human(n: int) -> str:
    return f"{n / _MIB:.1f} MiB" if n >= _MIB else f"{n} bytes"


def open_fd(path: str | os.PathLike[str], *, kind: str, allow_stream: bool = False) -> int:
    """Open ``path`` read-only and non-blocking; refuse anything but a regular file unless
    ``allow_stream`` (then FIFOs and character devices are accepted and read under the caps).

    Directories, sockets and block devices are always refused. The returned fd is non-blocking.
    """
    try:
        fd = os.open(os.fspath(path), _READ_FLAGS)
    except FileNotFoundError:
        raise BoundedReadError(path, "no such file") from None
    except IsADirectoryError:
        raise BoundedReadError(path, f"is a directory, expected a {kind} file") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:   # a FIFO or socket without a writer, opened non-blocking
            raise BoundedReadError(path, f"is not a regular file (no writer on it); give a {kind} file") from None
        raise BoundedReadError(path, f"cannot open ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise BoundedReadError(path, f"cannot stat ({exc.strerror or exc})") from None
    regular = stat.S_ISREG(mode)
    stream_ok = allow_stream and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode))
    if not (regular or stream_ok):
        os.close(fd)
        what = file_kind_word(mode)
        raise BoundedReadError(path, f"is {what}, not a regular file; give the path of the {kind} file itself")
    return fd


def iter_chunks(fd: int, *, path: str | os.PathLike[str], kind: str, cap: int | None = None,
                timeout: float | None = DEFAULT_TIMEOUT_S, block: int = _BLOCK,
                idle_timeout: float | None = None) -> Iterator[bytes]:
    """Yield blocks read from ``fd`` until EOF, the byte ``cap`` or the deadline.

    Stopping at the cap is silent here (the caller compares the bytes it got with ``cap`` to say
    what was skipped); passing the deadline raises :class:`BoundedReadError`. A non-blocking fd that
    has no data waits in ``select`` for what is left of the deadline, so ``/proc/kmsg`` or an idle
    FIFO cannot hang the run. ``timeout=None`` waits without a deadline (stdin from a pipe).
    ``idle_timeout`` bounds each wait for data instead (a stream that stops producing for that long
    raises), also on a blocking fd: the wait is a ``select`` before the read.
    """
    limit = LIMITS.get(kind, LIMITS["config"]) if cap is None else cap
    deadline = None if timeout is None else time.monotonic() + timeout
    got = 0
    while got < limit:
        want = min(block, limit - got)
        if idle_timeout is not None and not _readable_within(fd, idle_timeout):
            raise BoundedReadError(path, f"no data for {idle_timeout:g} s (a stream that never ends?); "
                                         f"give a regular {kind} file")
        try:
            b = os.read(fd, want)
        except BlockingIOError:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise BoundedReadError(path, f"no data within {timeout:g} s (a stream that never ends or a hung "
                                             f"mount?); give a regular {kind} file") from None
            if idle_timeout is None:
                select.select([fd], [], [], left)
            continue
        except InterruptedError:
            continue
        except OSError as exc:
            raise BoundedReadError(path, f"read failed ({exc.strerror or exc})") from None
        if not b:
            return
        got += len(b)
        yield b
        if deadline is not None and time.monotonic() > deadline:
            raise BoundedReadError(path, f"reading took longer than {timeout:g} s; give a regular {kind} file "
                                         "on a local disk")


def _readable_within(fd: int, seconds: float) -> bool:
    """True when ``fd`` has data (or EOF, or an error) to read within ``seconds``."""
    try:
        ready, _, _ = select.select([fd], [], [], seconds)
    except (OSError, ValueError):
        return True  # let the read itself report the error
    return bool(ready)


def read_bytes(path: str | os.PathLike[str], *, kind: str, cap: int | None = None,
               timeout: float | None = DEFAULT_TIMEOUT_S, allow_stream: bool = False) -> bytes:
    """The whole content of ``path`` (a *kind* from :data:`LIMITS`), or :class:`BoundedReadError`.

    A regular file larger than the cap is refused from its ``st_size`` before anything is read;
    a file whose size the kernel does not report (``/proc``, a stream) is read up to the cap and
    refused if it goes past it.
    """
    limit = LIMITS.get(kind, LIMITS["config"]) if cap is None else cap
    fd = open_fd(path, kind=kind, allow_stream=allow_stream)
    try:
        st = os.fstat(fd)
        size = st.st_size
        if size > limit:
            raise BoundedReadError(path, f"is {_human(size)}, more than the {_human(limit)} cap for a {kind} file; "
                                         f"is this the right file?")
        block = _BLOCK
        if size == 0 and stat.S_ISREG(st.st_mode):
            # procfs/sysfs files report 0 bytes and may produce any amount (/proc/self/pagemap)
            limit = min(limit, _PSEUDO_CAP)
        elif stat.S_ISREG(st.st_mode):
            block = size + 1  # one read, one buffer: a 60 MB index costs 60 MB, not twice that
        parts = list(iter_chunks(fd, path=path, kind=kind, cap=limit + 1, timeout=timeout, block=block))
    finally:
        os.close(fd)
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    del parts
    if len(data) > limit:
        raise BoundedReadError(path, f"is more than the {_human(limit)} cap for a {kind} file "
                                     "(it kept producing data); is this the right file?")
    return data


def read_text(path: str | os.PathLike[str], *, kind: str, cap: int | None = None,
              timeout: float | None = DEFAULT_TIMEOUT_S, errors: str = "strict") -> str:
    """:func:`read_bytes` decoded as UTF-8 (BOM tolerated); with ``errors="strict"`` a file that is
    not UTF-8 raises :class:`BoundedReadError` saying so."""
    raw = read_bytes(path, kind=kind, cap=cap, timeout=timeout)
    try:
        return raw.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError as exc:
        raise BoundedReadError(path, f"is not UTF-8 text (byte {exc.start}); expected a {kind} file") from None


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a regular file (following symlinks), without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
