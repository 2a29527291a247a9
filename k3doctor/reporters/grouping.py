"""Findings with one root cause, shown as one block.

A check marks findings that share a root cause with the same ``Finding.group`` (a plural noun
phrase: "JIT caches on nfs4 (filer:/home) ..."). Two or more such findings of one code and
severity become one :class:`Block` whose message counts and lists the subjects ("7 JIT caches on
nfs4 …: cuda, triton, …") and whose fix keeps each member's distinct command on its own line.
Reporters that show one entry per finding (JSON, SARIF, JUnit) do not group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..model import Finding, Severity

__all__ = ["Block", "blocks"]


@dataclass(frozen=True)
class Block:
    """What the terminal and Markdown reports show for one finding or one group."""

    code: str
    severity: Severity
    subject: str
    message: str
    #: fix paragraphs: one for a single finding; shared head, one per member, shared tail for a group
    fix: tuple[str, ...] = ()
    members: tuple[Finding, ...] = field(default_factory=tuple)


def _common_prefix(seqs: Sequence[list[str]]) -> list[str]:
    out: list[str] = []
    for items in zip(*seqs):
        if len(set(items)) != 1:
            break
        out.append(items[0])
    return out


def _split_subjects(subjects: list[str]) -> tuple[str, list[str]]:
    words = [s.split(" ") for s in subjects]
    common = _common_prefix(words)
    if any(len(w) == len(common) for w in words):  # a subject that is all prefix: no shared part
        common = []
    return " ".join(common), [" ".join(w[len(common):]) for w in words]


def _group_fix(fixes: list[str], labels: list[str]) -> tuple[str, ...]:
    if len(set(fixes)) == 1:
        return (fixes[0],) if fixes[0] else ()
    from .fold import atoms

    words = [atoms(f) for f in fixes]  # compared whole commands at a time, never inside one
    head = _common_prefix(words)
    tail = _common_prefix([list(reversed(w[len(head):])) for w in words])[::-1]
    if len(head) < 3:
        head = []
    if len(tail) < 3:
        tail = []
    parts: list[str] = []
    if head:
        parts.append(" ".join(head))
    for label, w in zip(labels, words):
        middle = " ".join(w[len(head):len(w) - len(tail)]).strip()
        if middle:
            named = label.split("=", 1)[-1] in middle  # "env=GLOO_SOCKET_IFNAME" vs "GLOO_SOCKET_IFNAME=eth0"
            parts.append(f"{label}: {middle}" if head and not named else middle)
    if tail:
        parts.append(" ".join(tail))
    return tuple(parts)


def blocks(findings: Sequence[Finding]) -> list[Block]:
    """Findings as blocks, in the order given; a group takes the place of its first member."""
    groups: dict[tuple[str, Severity, str], list[Finding]] = {}
    for f in findings:
        if f.group:
            groups.setdefault((f.code, f.severity, f.group), []).append(f)
    out: list[Block] = []
    done: set[tuple[str, Severity, str]] = set()
    for f in findings:
        key = (f.code, f.severity, f.group)
        members = groups.get(key) if f.group else None
        if not members or len(members) < 2:
            out.append(Block(f.code, f.severity, f.subject, f.message, (f.fix,) if f.fix else (), (f,)))
            continue
        if key in done:
            continue
        done.add(key)
        subject, labels = _split_subjects([m.subject for m in members])
        labels = [lab or m.code for lab, m in zip(labels, members)]
        message = f"{len(members)} {f.group}: {', '.join(labels)}"
        out.append(Block(f.code, f.severity, subject, message, _group_fix([m.fix for m in members], labels),
                         tuple(members)))
    return out
