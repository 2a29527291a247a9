"""Human output with rich: findings grouped by family, a fix under each, a summary line.

Prose is folded to the terminal width (or ``COLUMNS``); commands in fixes are never broken or
shortened (an over-wide command gets a line of its own, whole); findings with one root cause are
one block (:mod:`.grouping`); no line ends in padding.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from typing import IO, Any

from ..model import Severity, Status
from ..registry import family_docs
from ..runner import Report
from .base import Reporter
from .fold import fold
from .grouping import Block, blocks

__all__ = ["RichReporter", "make_console", "statistics_text", "skip_label"]

_SEV_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_SEV_ICON = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "i"}
_STATUS_STYLE = {Status.PASS: "green", Status.FAIL: "red", Status.SKIP: "dim", Status.CRASH: "bold magenta"}


def _consecutive(codes: list[str]) -> bool:
    """True for codes of one family with consecutive numbers (CKPT001…CKPT010)."""
    fams = {c.rstrip("0123456789") for c in codes}
    nums = [int(c[len(c.rstrip("0123456789")):]) for c in codes]
    return len(fams) == 1 and len(codes) > 2 and nums == list(range(nums[0], nums[0] + len(nums)))


def skip_label(codes: list[str]) -> str:
    """``CKPT001-CKPT010 (10)``, ``NET001, NET002 +3`` or the one code."""
    if len(codes) == 1:
        return codes[0]
    if _consecutive(codes):
        return f"{codes[0]}-{codes[-1]} ({len(codes)})"
    return ", ".join(codes[:4]) + (f" +{len(codes) - 4}" if len(codes) > 4 else "")


def console_width(color: bool) -> int:
    """The terminal's width on a TTY, else ``COLUMNS`` (default 110); at least 40."""
    if color:
        width = shutil.get_terminal_size((110, 24)).columns
    else:
        try:
            width = int(os.environ.get("COLUMNS", "110"))
        except ValueError:
            width = 110
    return max(width, 40)


def make_console(stream: IO[str], color: bool):  # type: ignore[no-untyped-def]
    """A rich Console that writes plain text unless ``color`` (TTY and no NO_COLOR)."""
    from rich.console import Console

    return Console(file=stream, force_terminal=color, no_color=not color, color_system="auto" if color else None,
                   width=console_width(color), highlight=False, soft_wrap=False, emoji=False)


def _print(console: Any, line: str, style: str = "", spans: tuple[tuple[int, int, str], ...] = ()) -> None:
    from rich.text import Text

    from ..termsafe import has_control, sanitize

    if has_control(line):  # input text (a flag, a path, a log line): shown, never executed by the terminal
        line = sanitize(line)
    text = Text(line, style=style)
    for start, end, span_style in spans:
        text.stylize(span_style, start, end)
    console.print(text, soft_wrap=True)


def _render_block(console: Any, b: Block, code_width: int, width: int, verbose: bool) -> None:
    head = f"{_SEV_ICON[b.severity]}  {b.code:<{code_width}}  "
    indent = " " * len(head)
    lines = fold(b.message, width, head, indent, lead=f"{b.subject}:" if b.subject else "", commands=False)
    sev = _SEV_STYLE[b.severity]
    subject_end = len(head) + len(b.subject) + 1 if b.subject else 0
    _print(console, lines[0], spans=((0, len(head), sev),) + (((len(head), subject_end, "bold"),) if b.subject else ()))
    for line in lines[1:]:
        _print(console, line)
    for i, part in enumerate(b.fix):
        first = indent + ("fix: " if i == 0 else "     ")
        fix_lines = fold(part, width, first, indent + "     ")
        _print(console, fix_lines[0], spans=((len(indent), len(indent) + 4, "green bold"),) if i == 0 else ())
        for line in fix_lines[1:]:
            _print(console, line)
    if verbose:
        for f in b.members:
            if f.evidence.get("traceback"):
                for line in str(f.evidence["traceback"]).rstrip().splitlines():
                    _print(console, indent + line.rstrip(), style="dim")


class RichReporter(Reporter):
    """The default terminal report."""

    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        console = make_console(stream, color)
        width = console.width
        title = report.meta.get("title")
        if title:
            console.rule(str(title), style="bold")
        by_family: dict[str, list] = defaultdict(list)  # type: ignore[type-arg]
        for f in report.findings:
            by_family[f.code.rstrip("0123456789")].append(f)
        order = sorted(by_family, key=lambda fam: (-max(int(f.severity) for f in by_family[fam]), fam))
        for fam in order:
            for line in fold(f"{fam} — {family_docs().get(fam, 'plugin checks')}", width):
                _print(console, line, style="bold underline")
            code_width = max(len(f.code) for f in by_family[fam])
            for b in blocks(by_family[fam]):
                _render_block(console, b, code_width, width, verbose)
            console.print()
        if verbose:
            self._all_checks(console, report, width)
        else:
            self._skipped(console, report, width)
        for line in summary_lines(report, width):
            _print(console, line, style=_summary_style(report))

    @staticmethod
    def _skipped(console: Any, report: Report, width: int) -> None:
        reasons = report.skip_reasons()
        if not reasons:
            return
        n = sum(len(v) for v in reasons.values())
        _print(console, f"skipped ({n}; -v lists every check)", style="dim bold")
        labels = {reason: skip_label(codes) for reason, codes in reasons.items()}
        col = min(max(len(v) for v in labels.values()) + 3, width // 3)
        for reason, label in labels.items():
            head = f" {label}".ljust(col) if len(label) + 3 <= col else f" {label}  "
            for line in fold(reason, width, head, " " * col):
                _print(console, line, style="dim")
        console.print()

    @staticmethod
    def _all_checks(console: Any, report: Report, width: int) -> None:
        _print(console, "checks", style="bold")
        for r in report.results:
            detail = r.reason if r.status in (Status.SKIP, Status.CRASH) else (
                f"{len(r.findings)} finding{'s' * (len(r.findings) != 1)}" if r.findings else "")
            head = f" {r.code:<8} {r.status.value:<6} "
            text = r.title + (f" — {detail}" if detail else "")
            lines = fold(text, width, head, " " * len(head))
            _print(console, lines[0], spans=((len(r.code) + 2, len(r.code) + 2 + 6, _STATUS_STYLE[r.status]),))
            for line in lines[1:]:
                _print(console, line)
        console.print()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def summary_lines(report: Report, width: int) -> list[str]:
    """The closing lines: counts of findings and of checks (ran, skipped), source, exit code;
    a warning when nothing ran; what ``--strict`` makes of the skips."""
    c = report.counts()
    parts = [f"{_plural(c['error'], 'error')}, {_plural(c['warning'], 'warning')}, {_plural(c['info'], 'note')}",
             f"{report.ran} ran ({c['pass']} passed, {c['fail']} failed), {c['skip']} skipped"
             + (f", {c['crash']} crashed" if c["crash"] else ""),
             f"{report.duration_s:.2f} s", str(report.source), f"exit {report.exit_code}"]
    lines: list[str] = []
    line = ""
    for part in parts:  # fold between the parts, never inside one
        if line and len(line) + 3 + len(part) > width:
            lines.append(line)
            line = part
        else:
            line = f"{line} \u00b7 {part}" if line else part
    lines.append(line)
    if c["checks"] and report.ran == 0 and not c["crash"]:
        lines += fold("nothing was checked: every selected check was skipped"
                      + ("" if report.strict else " (--strict makes this fail the gate, exit 4)"), width)
    elif report.strict and c["skip"]:
        lines += fold(f"--strict: {_plural(c['skip'], 'selected check')} skipped"
                      + (" (exit 4)" if report.exit_code == 4 else ""), width)
    return lines


def _summary_style(report: Report) -> str:
    c = report.counts()
    if c["error"] or c["crash"]:
        return "bold red"
    if c["warning"] or report.exit_code:
        return "yellow"
    return "bold green"


def statistics_text(report: Report) -> str:
    """``--statistics``: findings per code, most first (count, code, severity, title)."""
    counts: dict[str, int] = defaultdict(int)
    worst: dict[str, Severity] = {}
    for f in report.findings:
        counts[f.code] += 1
        worst[f.code] = max(worst.get(f.code, f.severity), f.severity)
    titles = {r.code: r.title for r in report.results}
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if not rows:
        return "no findings\n"
    n_width = max(len(str(n)) for _, n in rows)
    c_width = max(len(code) for code, _ in rows)
    out = [f"{n:>{n_width}}  {code:<{c_width}}  {worst[code].label:<7}  {titles.get(code, '')}".rstrip()
           for code, n in rows]
    return "\n".join(out) + "\n"
