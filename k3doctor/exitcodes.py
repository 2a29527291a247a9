"""Process exit codes: one table for every command (the README's "Exit codes" section is this
table; ``tests/test_gate.py`` keeps the two the same, and ``k3doctor --help`` prints it)."""

from __future__ import annotations

import enum

__all__ = ["ExitCode", "EXIT_CODE_MEANINGS"]


class ExitCode(enum.IntEnum):
    """0 ok, 1 findings at or above ``--fail-on``, 2 usage error, 3 a check or probe crashed,
    4 ``--strict`` and a selected check was skipped or could not run."""

    OK = 0
    FINDINGS = 1
    USAGE = 2
    CRASHED = 3
    SKIPPED = 4


#: the documented meaning of each code; when several apply, the lowest row that applies wins in
#: the order crash (3) > findings (1) > strict skip (4) > ok (0)
EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "no finding at or above `--fail-on` (default `error`)",
    ExitCode.FINDINGS: "findings at or above `--fail-on`; `plan`: the plan does not fit",
    ExitCode.USAGE: "usage error: unknown option or target, bad config file, malformed snapshot, "
                    "empty or unknown launch command",
    ExitCode.CRASHED: "a check or probe crashed, or a check plugin failed to load (`INT001`, `INT002`, `INT004`)",
    ExitCode.SKIPPED: "`--strict` only: a selected check was skipped or could not run (and nothing above applies)",
}
