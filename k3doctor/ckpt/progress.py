"""A rich progress bar (bytes, rate, ETA) for hashing, as a ``callback(done_bytes, total_bytes)``.

The probes and :mod:`.hashing` only call the callback; the CLI owns the display::

    with rich_progress("sha256") as cb:
        create_manifest(d, progress=cb)
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Iterator

__all__ = ["rich_progress", "format_progress", "status_callback"]


def _throttle(min_interval: float) -> Callable[[int, int], bool]:
    """A thread-safe ``due(done, total)``: True at most every ``min_interval`` s, and at the end."""
    lock = threading.Lock()
    last = [0.0]

    def due(done: int, total: int) -> bool:
        now = time.monotonic()
        with lock:
            if done < total and now - last[0] < min_interval:
                return False
            last[0] = now
        return True

    return due


@contextlib.contextmanager
def rich_progress(description: str = "sha256", *, console: Any = None, enabled: bool = True,
                  min_interval: float = 0.1) -> Iterator[Callable[[int, int], None]]:
    """Yield a thread-safe ``callback(done, total)`` that drives a transient rich bar on stderr."""
    if not enabled:
        yield lambda done, total: None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                               TransferSpeedColumn)

    con = console or Console(stderr=True)
    due = _throttle(min_interval)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=con, transient=True) as bar:
        task = bar.add_task(description, total=None)

        def callback(done: int, total: int) -> None:
            if due(done, total):
                bar.update(task, completed=done, total=total)

        yield callback


def format_progress(done: int, total: int, elapsed: float) -> str:
    """``sha256 12.3/1560.9 GB · 1.42 GB/s · ETA 18m05s`` (for a one-line status display)."""
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else None
    eta_s = "?" if eta is None else f"{int(eta // 60)}m{int(eta % 60):02d}s"
    return f"sha256 {done / 1e9:.1f}/{total / 1e9:.1f} GB · {rate / 1e9:.2f} GB/s · ETA {eta_s}"


def status_callback(update: Callable[[str], None], *, min_interval: float = 0.25) -> Callable[[int, int], None]:
    """A ``callback(done, total)`` that feeds :func:`format_progress` text to ``update`` (e.g. a
    ``rich`` ``console.status(...).update``), for CLIs that already show a live spinner (rich
    allows only one live display at a time)."""
    started = time.monotonic()
    due = _throttle(min_interval)

    def callback(done: int, total: int) -> None:
        if due(done, total):
            update(format_progress(done, total, time.monotonic() - started))

    return callback
