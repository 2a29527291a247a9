"""Byte units and their formatting: the one place GiB is defined.

Bytes travel as ints everywhere (findings' evidence included); these constants turn them into what a
person reads. ``NVML_IDLE_RESERVE`` is the one figure for "free memory of an idle GPU": NVML total
minus the driver/firmware reservation seen on the H200 reading (../shared/reference/h200-reading.json:
616 MiB between ``memory.total`` and ``memory.free`` with no process on the device).
"""

from __future__ import annotations

__all__ = ["KiB", "MiB", "GiB", "TiB", "NVML_IDLE_RESERVE", "gib"]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40

#: total − free of an idle H200 (driver/firmware reservation), used for static targets
NVML_IDLE_RESERVE = 616 * MiB


def gib(n: float, digits: int = 2) -> str:
    """``12.34 GiB`` for a byte count."""
    return f"{n / GiB:.{digits}f} GiB"
