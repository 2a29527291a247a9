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

__all__ = ["rich_progress"]


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
    lock = threading.Lock()
    last = [0.0]
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=con, transient=True) as bar:
        task = bar.add_task(description, total=None)

        def callback(done: int, total: int) -> None:
            now = time.monotonic()
            with lock:
                if done < total and now - last[0] < min_interval:
                    return
                last[0] = now
            bar.update(task, completed=done, total=total)

        yield callback
