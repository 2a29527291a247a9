"""GitHub Actions workflow commands (``::error title=…::message``)."""

from __future__ import annotations

from typing import IO

from ..model import Severity
from ..runner import Report
from .base import Reporter

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class GitHubReporter(Reporter):
    """Annotations shown on the workflow run; one per finding, plus a summary notice."""

    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        for f in report.findings:
            title = f"{f.code}" + (f" {f.subject}" if f.subject else "")
            body = f.message + (f"\nfix: {f.fix}" if f.fix else "")
            stream.write(f"::{_LEVEL[f.severity]} title={_escape_prop(title)}::{_escape_data(body)}\n")
        c = report.counts()
        stream.write(
            f"::notice title=k3doctor::{c['error']} errors, {c['warning']} warnings, {c['info']} notes; "
            f"{report.ran} ran ({c['pass']} passed), {c['skip']} skipped, {c['crash']} crashed "
            f"(exit {report.exit_code})\n"
        )
        reasons = report.skip_reasons()
        if reasons:  # one annotation: GitHub shows at most 10 per level and step
            body = "\n".join(f"{', '.join(codes)}: {reason}" for reason, codes in reasons.items())
            level = "warning" if report.strict else "notice"
            stream.write(f"::{level} title=k3doctor skipped {c['skip']} checks::{_escape_data(body)}\n")
