"""Markdown: for a job summary (``$GITHUB_STEP_SUMMARY``), a merge-request comment or a ticket."""

from __future__ import annotations

from typing import IO

from ..model import Severity, Status
from ..runner import Report
from .base import Reporter
from .grouping import blocks

_ICON = {Severity.ERROR: "❌ error", Severity.WARNING: "⚠️ warning", Severity.INFO: "ℹ️ note"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _code(text: str) -> str:
    """Inline code that survives backticks inside the text."""
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


class MarkdownReporter(Reporter):
    """``--format markdown``: a summary, one section per finding block, the skipped checks."""

    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        c = report.counts()
        out = [f"## k3doctor: {c['error']} errors, {c['warning']} warnings, {c['info']} notes (exit {report.exit_code})",
               "",
               f"{report.ran} checks ran ({c['pass']} passed, {c['fail']} failed), {c['skip']} skipped"
               + (f", {c['crash']} crashed" if c["crash"] else "") + f" · {report.source}",
               ""]
        if report.findings:
            out += ["| | code | subject | finding |", "|---|---|---|---|"]
            for b in blocks(report.findings):
                out.append(f"| {_ICON[b.severity]} | `{b.code}` | {_cell(b.subject)} | {_cell(b.message)} |")
            out.append("")
            fixes = [b for b in blocks(report.findings) if b.fix]
            if fixes:
                out += ["### Fixes", ""]
                for b in fixes:
                    out.append(f"- **{b.code}**{(' ' + _cell(b.subject)) if b.subject else ''}:")
                    for part in b.fix:
                        out.append(f"  - {_code(part)}")
                out.append("")
        reasons = report.skip_reasons()
        if reasons:
            out += ["<details><summary>skipped checks</summary>", "", "| checks | reason |", "|---|---|"]
            for reason, codes in reasons.items():
                out.append(f"| {', '.join(codes)} | {_cell(reason)} |")
            out += ["", "</details>", ""]
        if verbose:
            out += ["| code | status | title |", "|---|---|---|"]
            out += [f"| `{r.code}` | {r.status.value} | {_cell(r.title)} |" for r in report.results]
            out.append("")
        if report.strict and any(r.status is Status.SKIP for r in report.results):
            out += ["`--strict`: a selected check was skipped.", ""]
        stream.write("\n".join(out))
