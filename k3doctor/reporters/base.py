"""Reporter interface and shared formatting helpers."""

from __future__ import annotations

import abc
from typing import IO

from ..runner import Report

__all__ = ["Reporter", "human_bytes", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


class Reporter(abc.ABC):
    """Formats a report onto a stream. ``color`` is decided by the caller (TTY, NO_COLOR)."""

    @abc.abstractmethod
    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        """Write the report."""


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB' (binary units, as nvidia-smi and the engines print GiB)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} TiB"
