"""JUnit XML: one testcase per check (fail → <failure>, skip → <skipped>, crash → <error>)."""

from __future__ import annotations

from typing import IO
from xml.etree import ElementTree as ET

from ..model import Status
from ..runner import Report
from .base import Reporter


class JUnitReporter(Reporter):
    """For CI systems that render test reports (GitLab, Jenkins, GitHub test-reporter actions)."""

    def render(self, report: Report, stream: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        c = report.counts()
        suite = ET.Element(
            "testsuite",
            name="k3doctor",
            tests=str(c["checks"]),
            failures=str(c["fail"]),
            errors=str(c["crash"]),
            skipped=str(c["skip"]),
            time=f"{report.duration_s:.6f}",
        )
        for r in report.results:
            family = r.code.rstrip("0123456789")
            case = ET.SubElement(suite, "testcase", classname=f"k3doctor.{family}", name=f"{r.code} {r.title}",
                                 time=f"{r.duration_s:.6f}")
            text = "\n".join(
                f"[{f.severity.label}] {f.subject + ': ' if f.subject else ''}{f.message}"
                + (f"\n  fix: {f.fix}" if f.fix else "")
                for f in r.findings
            )
            if r.status is Status.FAIL:
                first = r.findings[0].message if r.findings else r.reason
                ET.SubElement(case, "failure", message=first, type=r.code).text = text
            elif r.status is Status.CRASH:
                ET.SubElement(case, "error", message=r.reason, type="crash").text = r.reason
            elif r.status is Status.SKIP:
                ET.SubElement(case, "skipped", message=r.reason)
            elif text:
                ET.SubElement(case, "system-out").text = text
        ET.indent(suite)
        stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        stream.write(ET.tostring(suite, encoding="unicode"))
        stream.write("\n")
