"""Human output with rich: findings grouped by family, a fix under each, a summary line."""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from typing import IO

from ..model import Severity, Status
from ..registry import family_docs
from ..runner import Report
from .base import Reporter

_SEV_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_SEV_ICON = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "i"}
_STATUS_STYLE = {Status.PASS: "green", Status.FAIL: "red", Status.SKIP: "dim", Status.CRASH: "bold magenta"}


def _consecutive(codes: list[str]) -> bool:
    """True for codes of one family with consecutive numbers (CKPT001…CKPT010)."""
    fams = {c.rstrip("0123456789") for c in codes}
    nums = [int(c[len(c.rstrip("0123456789")):]) for c in codes]
    return len(fams) == 1 and len(codes) > 2 and nums == list(range(nums[0], nums[0] + len(nums)))


def make_console(stream: IO[str], color: bool):  # type: ignore[no-untyped-def]
    """A rich Console that writes plain text unless ``color`` (TTY and no NO_COLOR)."""
    from rich.console import Console

    width = shutil.get_terminal_size((110, 24)).columns if color else int(os.environ.get("COLUMNS", "110"))
    return Console(file=stream, force_terminal=color, no_color=not color, color_system="auto" if color else None,
                   width=max(width, 60), highlight=False, soft_wrap=False, emoji=False)


class RichReporter(Reporter):
    """The default terminal report."""

    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        from rich.table import Table
        from rich.text import Text

        console = make_console(stream, color)
        title = report.meta.get("title")
        if title:
            console.rule(Text(str(title), style="bold"))
        by_family: dict[str, list] = defaultdict(list)  # type: ignore[type-arg]
        for f in report.findings:
            by_family[f.code.rstrip("0123456789")].append(f)
        order = sorted(by_family, key=lambda fam: (-max(int(f.severity) for f in by_family[fam]), fam))
        for fam in order:
            table = Table(show_header=False, box=None, pad_edge=False, expand=False, padding=(0, 1))
            table.add_column(width=1, no_wrap=True)
            table.add_column(no_wrap=True)
            table.add_column(ratio=1)
            for f in by_family[fam]:
                body = Text()
                if f.subject:
                    body.append(f"{f.subject}: ", style="bold")
                body.append(f.message)
                if f.fix:
                    body.append("\nfix: ", style="green bold")
                    body.append(f.fix)
                if verbose and f.evidence.get("traceback"):
                    body.append("\n" + str(f.evidence["traceback"]).rstrip(), style="dim")
                table.add_row(Text(_SEV_ICON[f.severity], style=_SEV_STYLE[f.severity]),
                              Text(f.code, style=_SEV_STYLE[f.severity]), body)
            console.print(Text(f"{fam} — {family_docs().get(fam, 'plugin checks')}", style="bold underline"))
            console.print(table)
            console.print()
        if verbose:
            table = Table(title="checks", show_lines=False, header_style="bold")
            table.add_column("code", no_wrap=True)
            table.add_column("status", no_wrap=True)
            table.add_column("title")
            table.add_column("reason / findings")
            for r in report.results:
                detail = r.reason if r.status in (Status.SKIP, Status.CRASH) else (
                    f"{len(r.findings)} finding(s)" if r.findings else "")
                table.add_row(r.code, Text(r.status.value, style=_STATUS_STYLE[r.status]), r.title, detail)
            console.print(table)
        else:
            skipped = [r for r in report.results if r.status is Status.SKIP]
            if skipped:
                reasons: dict[str, list[str]] = defaultdict(list)
                for r in skipped:
                    reasons[r.reason].append(r.code)
                console.print(Text(f"skipped ({len(skipped)}; -v lists every check)", style="dim bold"))
                table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 1))
                table.add_column(no_wrap=True, style="dim")
                table.add_column(ratio=1, style="dim")
                for reason, codes in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
                    shown = codes[0] if len(codes) == 1 else (
                        f"{codes[0]}…{codes[-1]} ({len(codes)})" if _consecutive(codes) else
                        ", ".join(codes[:4]) + (f" +{len(codes) - 4}" if len(codes) > 4 else ""))
                    table.add_row(" " + shown, reason)
                console.print(table)
                console.print()
        c = report.counts()
        line = Text()
        worst = "bold red" if c["error"] else ("yellow" if c["warning"] else "bold green")
        line.append(f"{c['error']} error{'s' * (c['error'] != 1)}", style="bold red" if c["error"] else "")
        line.append(", ")
        line.append(f"{c['warning']} warning{'s' * (c['warning'] != 1)}", style="yellow" if c["warning"] else "")
        line.append(f", {c['info']} note{'s' * (c['info'] != 1)}")
        line.append(f"  ·  {c['pass']} passed, {c['fail']} failed, {c['skip']} skipped")
        if c["crash"]:
            line.append(f", {c['crash']} crashed", style="bold magenta")
        line.append(f"  ·  {report.duration_s:.2f} s  ·  {report.source}")
        line.append(f"  ·  exit {report.exit_code}", style=worst)
        console.print(line)
