"""Reporter interface and shared formatting helpers."""

from __future__ import annotations

import abc
from typing import IO

from ..runner import Report

__all__ = ["Reporter", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


class Reporter(abc.ABC):
    """Formats a report onto a stream. ``color`` is decided by the caller (TTY, NO_COLOR)."""

    @abc.abstractmethod
    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        """Write the report."""
