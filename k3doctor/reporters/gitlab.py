"""GitLab code quality report (``artifacts: reports: codequality``): a JSON array of issues."""

from __future__ import annotations

import json
from typing import IO

from ..model import Severity
from ..runner import Report
from .base import Reporter
from .sarif import _rel, anchor_path, fingerprint

_SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "minor", Severity.INFO: "info"}


class GitLabReporter(Reporter):
    """``--format gitlab``: one issue per finding (GitLab shows them on the merge request)."""

    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        path = _rel(anchor_path(report))
        issues = []
        for f in report.findings:
            issues.append({
                "type": "issue",
                "check_name": f.code,
                "description": (f"{f.code} {f.subject}: " if f.subject else f"{f.code}: ") + f.message,
                "content": {"body": f"fix: {f.fix}" if f.fix else ""},
                "categories": ["Bug Risk"],
                "fingerprint": fingerprint(f.code, f.subject, f.message),
                "severity": _SEVERITY[f.severity],
                "location": {"path": path, "lines": {"begin": 1}},
            })
        json.dump(issues, stream, indent=2, default=str)
        stream.write("\n")
