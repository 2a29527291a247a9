"""Frozen, typed data that flows from checks to reporters.

A :class:`Finding` is one problem (or note) a check found; a :class:`CheckResult` says how a
check ended (pass, fail, skip with a reason, or crash). Numbers stay numbers (bytes as ints)
until a reporter formats them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping, Union

__all__ = ["Severity", "Status", "Finding", "CheckResult", "Skip", "EvidenceValue"]

EvidenceValue = Union[int, float, str, bool, None]


class Severity(enum.IntEnum):
    """Ordered severity: ``max()`` over findings gives the worst one."""

    INFO = 10
    WARNING = 20
    ERROR = 30

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use error, warning or info)") from None


class Status(str, enum.Enum):
    """How one check ended."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    CRASH = "crash"


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One thing a check found.

    ``evidence`` holds raw values (bytes as ints, compute capability as ``"9.0"``), never
    preformatted sizes; ``fix`` is the concrete change (env var, flag or command).
    """

    code: str
    severity: Severity
    message: str
    subject: str = ""
    evidence: Mapping[str, EvidenceValue] = field(default_factory=dict)
    fix: str = ""
    #: root cause shared with other findings of this code (a plural noun phrase, e.g. "JIT caches on
    #: nfs4 (filer:/home) written by 16 ranks"); reporters show such findings as one block
    group: str = ""

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {
            "code": self.code,
            "severity": self.severity.label,
            "message": self.message,
            "subject": self.subject,
            "evidence": dict(self.evidence),
            "fix": self.fix,
        }
        if self.group:
            d["group"] = self.group
        return d


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """The outcome of running one check."""

    code: str
    title: str
    status: Status
    reason: str = ""
    duration_s: float = 0.0
    findings: tuple[Finding, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "status": self.status.value,
            "reason": self.reason,
            "duration_s": round(self.duration_s, 6),
        }


class Skip(Exception):
    """Raised by a check (or a fact lookup) that cannot decide; the reason is shown to the user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
