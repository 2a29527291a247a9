"""JSON reporter (schema_version 1; see README "JSON output")."""

from __future__ import annotations

import json
from typing import IO, Any

from .. import __version__
from ..runner import Report
from .base import SCHEMA_VERSION, Reporter


def report_document(report: Report) -> dict[str, Any]:
    """The JSON document: tool, version, exit_code, summary, findings, results."""
    counts = report.counts()
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "k3doctor",
        "version": __version__,
        "exit_code": report.exit_code,
        "source": report.source,
        "fail_on": report.fail_on.label,
        "summary": {
            "checks": counts["checks"],
            "passed": counts["pass"],
            "failed": counts["fail"],
            "skipped": counts["skip"],
            "crashed": counts["crash"],
            "errors": counts["error"],
            "warnings": counts["warning"],
            "infos": counts["info"],
            "ran": report.ran,
            "skip_reasons": report.skip_reasons(),
            "strict": report.strict,
            "duration_s": round(report.duration_s, 6),
        },
        "meta": report.meta,
        **({"config": report.config} if report.config is not None else {}),
        "findings": [f.to_dict() for f in report.findings],
        "results": [r.to_dict() for r in report.results],
    }


class JsonReporter(Reporter):
    """Machine-readable output for CI and scripts."""

    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        json.dump(report_document(report), stream, indent=2, default=str)
        stream.write("\n")
