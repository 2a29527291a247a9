"""SARIF 2.1.0 for GitHub code scanning (``github/codeql-action/upload-sarif``).

One rule per check that ran (id = code, name = title, help = the check's long doc), one result
per finding. Code scanning needs a file location; a finding about a node has none, so each result
points at the file the run was driven by: ``--launch-file``, else the config file, else the first
snapshot, else ``k3doctor.toml``.
"""

from __future__ import annotations

import hashlib
import json
from typing import IO, Any

from .. import __version__
from ..model import Severity
from ..runner import Report
from .base import Reporter

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def anchor_path(report: Report) -> str:
    """The repository file findings are attached to (see the module doc)."""
    meta: dict[str, Any] = dict(report.meta)
    config = report.config or {}
    for candidate in (meta.get("launch_file"), config.get("file"), *(meta.get("snapshots") or [])):
        if candidate:
            return str(candidate)
    return "k3doctor.toml"


def fingerprint(code: str, subject: str, message: str) -> str:
    """Stable across runs for the same finding (code, subject, message)."""
    return hashlib.sha256(f"{code}\0{subject}\0{message}".encode()).hexdigest()[:32]


def _rel(path: str) -> str:
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


class SarifReporter(Reporter):
    """``--format sarif``."""

    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        from ..registry import registry

        checks = registry().checks
        rules: list[dict[str, Any]] = []
        index: dict[str, int] = {}
        for r in report.results:
            cls = checks.get(r.code)
            doc = (cls.doc() if cls is not None and hasattr(cls, "doc") else "") or r.title
            index[r.code] = len(rules)
            rules.append({
                "id": r.code, "name": r.title, "shortDescription": {"text": r.title},
                "help": {"text": doc, "markdown": doc},
                "defaultConfiguration": {"level": _LEVEL[cls.severity] if cls is not None else "error"},
                "properties": {"tags": ["k3doctor", r.code.rstrip("0123456789")]},
            })
        uri = _rel(anchor_path(report))
        results = []
        for f in report.findings:
            text = (f"{f.subject}: " if f.subject else "") + f.message + (f"\nfix: {f.fix}" if f.fix else "")
            res: dict[str, Any] = {
                "ruleId": f.code, "level": _LEVEL[f.severity], "message": {"text": text},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri},
                                                    "region": {"startLine": 1}}}],
                "partialFingerprints": {"k3doctor/v1": fingerprint(f.code, f.subject, f.message)},
                "properties": {"subject": f.subject, "fix": f.fix, "evidence": dict(f.evidence)},
            }
            if f.code in index:
                res["ruleIndex"] = index[f.code]
            results.append(res)
        sarif: dict[str, Any] = {
            "$schema": SARIF_SCHEMA, "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {"name": "k3doctor", "version": __version__, "semanticVersion": __version__,
                                    "informationUri": "https://github.com/k3doctor/k3doctor", "rules": rules}},
                "results": results,
                "invocations": [{"executionSuccessful": not report.crashed, "exitCode": report.exit_code}],
            }],
        }
        json.dump(sarif, stream, indent=2, default=str)
        stream.write("\n")
