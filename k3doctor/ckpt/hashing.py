"""Parallel, bounded-memory content hashing and zero-range sampling of checkpoint files.

* :func:`hash_files` — sha256 (or git blob sha1) of many files with a thread pool: hashlib releases
  the GIL while hashing, so ``jobs`` threads scale like ``xargs -P jobs sha256sum``. Each worker
  reuses one ``chunk``-sized buffer (``readinto``), so memory is ``jobs x chunk`` whatever the file
  sizes. Progress goes to ``progress(done_bytes, total_bytes)`` (thread-safe, from worker threads);
  nothing here prints.
* :func:`sample_file` — stratified random ranges of a file's data region, flagged when all zero,
  plus sparse holes found with ``SEEK_HOLE``/``SEEK_DATA`` (no data read for those).
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable

from .header import open_readonly

__all__ = ["HashJob", "hash_files", "sample_file", "DEFAULT_CHUNK"]

DEFAULT_CHUNK = 4 << 20
#: all workers' read buffers together stay under this (a 128-core box does not get 512 MB of buffers)
BUFFER_BUDGET = 128 << 20
Progress = Callable[[int, int], None]


class HashJob:
    """One file to hash: absolute ``path``, relative ``file``, ``algo`` (sha256|git-sha1), ``size``."""

    __slots__ = ("path", "file", "algo", "size")

    def __init__(self, path: str, file: str, algo: str = "sha256", size: int = 0) -> None:
        self.path, self.file, self.algo, self.size = path, file, algo, size


class _Meter:
    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.done, self.progress = total, 0, progress
        self.lock = threading.Lock()

    def add(self, n: int) -> None:
        if self.progress is None:
            return
        with self.lock:
            self.done += n
            done = self.done
        try:
            self.progress(done, self.total)
        except Exception:  # noqa: BLE001 - a broken display must not break verification
            self.progress = None


def _hash_one(job: HashJob, meter: _Meter, chunk: int, deadline: float | None,
              local: threading.local) -> dict[str, Any]:
    buf = getattr(local, "buf", None)
    if buf is None or len(buf) != chunk:
        buf = local.buf = bytearray(chunk)
    view = memoryview(buf)
    out: dict[str, Any] = {"file": job.file, "algo": job.algo}
    try:
        fd = open_readonly(job.path)
    except OSError as exc:
        out["error"] = f"{exc.strerror or exc}"
        return out
    try:
        size = os.fstat(fd).st_size
        h = hashlib.sha256() if job.algo == "sha256" else hashlib.sha1(b"blob %d\0" % size)
        if hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except OSError:
                pass
        done = 0
        readinto = os.readv
        while done < size:  # a file is hashed to the size it had when opened (a /proc file never ends)
            n = readinto(fd, [view[:min(chunk, size - done)]])
            if not n:
                break
            h.update(view[:n])
            done += n
            meter.add(n)
            if deadline is not None and time.monotonic() > deadline:
                out["error"] = "time limit reached before the file was fully read"
                out["bytes"] = done
                return out
        out["actual"] = h.hexdigest()
        out["bytes"] = done
    except OSError as exc:
        out["error"] = f"{exc.strerror or exc}"
    finally:
        os.close(fd)
    return out


def hash_files(jobs: Iterable[HashJob], *, workers: int | None = None, chunk: int | None = None,
               progress: Progress | None = None, deadline: float | None = None) -> list[dict[str, Any]]:
    """Hash every job; returns ``[{"file", "algo", "actual"|"error", "bytes"}]`` in input order.

    Largest files start first (the pool finishes together); ``deadline`` is a ``time.monotonic()``
    value after which unfinished files report an error instead of a digest. Each worker reuses one
    buffer of ``chunk`` bytes (default 4 MiB, less when ``workers`` x 4 MiB would exceed
    :data:`BUFFER_BUDGET`).
    """
    jobs = list(jobs)
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs) or 1))
    if chunk is None:
        chunk = max(256 << 10, min(DEFAULT_CHUNK, BUFFER_BUDGET // workers))
    meter = _Meter(sum(j.size for j in jobs), progress)
    local = threading.local()
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i].size)
    results: list[dict[str, Any] | None] = [None] * len(jobs)
    if workers == 1:
        for i in order:
            results[i] = _hash_one(jobs[i], meter, chunk, deadline, local)
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="k3doctor-hash") as pool:
            futs = {i: pool.submit(_hash_one, jobs[i], meter, chunk, deadline, local) for i in order}
            for i, fut in futs.items():
                results[i] = fut.result()
    return [r for r in results if r is not None]


def _holes(fd: int, start: int, size: int, limit: int = 4) -> list[list[int]]:
    """Sparse holes in ``[start, size)`` via SEEK_HOLE/SEEK_DATA (empty where unsupported)."""
    seek_hole = getattr(os, "SEEK_HOLE", None)
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_hole is None or seek_data is None or start >= size:
        return []
    holes: list[list[int]] = []
    pos = start
    try:
        while pos < size and len(holes) < limit:
            h = os.lseek(fd, pos, seek_hole)
            if h >= size:
                break
            try:
                d = os.lseek(fd, h, seek_data)
            except OSError:  # ENXIO: the hole runs to the end of the file
                d = size
            holes.append([max(h, start), d])
            pos = d
    except OSError:
        return holes
    return holes


def sample_file(path: str, data_start: int, *, ranges: int = 8, range_bytes: int = 1 << 20,
                seed: int | None = None, min_zero: int = 64 << 10) -> dict[str, Any]:
    """Read ``ranges`` stratified random ranges of ``[data_start, size)``; report all-zero ones.

    The data region is cut into ``ranges`` equal strata with one range in each, so any zero-filled
    run longer than two strata is always hit. Ranges shorter than ``min_zero`` are not judged.
    Returns ``{"read_bytes", "ranges": n, "zero": [[begin, end], ...], "holes": [[begin, end]], "error"?}``.
    """
    out: dict[str, Any] = {"read_bytes": 0, "ranges": 0, "zero": [], "holes": []}
    try:
        fd = open_readonly(path)
    except OSError as exc:
        out["error"] = exc.strerror or str(exc)
        return out
    try:
        size = os.fstat(fd).st_size
        span = size - data_start
        if span <= 0:
            return out
        out["holes"] = _holes(fd, data_start, size)
        rng = random.Random(seed)
        k = max(1, min(ranges, span // max(1, min_zero) or 1))
        stratum = span // k
        length = max(1, min(range_bytes, stratum))
        zero = bytes(length)
        for i in range(k):
            lo = data_start + i * stratum
            off = lo + rng.randrange(0, max(1, stratum - length + 1))
            b = os.pread(fd, length, off)
            out["read_bytes"] += len(b)
            out["ranges"] += 1
            if len(b) >= min(min_zero, length) and b == zero[: len(b)]:
                out["zero"].append([off, off + len(b)])
    except OSError as exc:
        out["error"] = exc.strerror or str(exc)
    finally:
        os.close(fd)
    return out
