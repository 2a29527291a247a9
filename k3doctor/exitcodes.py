"""Process exit codes: one table for every command."""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    """0 ok, 1 findings at or above ``--fail-on``, 2 usage error, 3 a check or probe crashed."""

    OK = 0
    FINDINGS = 1
    USAGE = 2
    CRASHED = 3
