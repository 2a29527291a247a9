"""Run selected checks over facts: prerequisites first, crashes isolated, results collected.

The runner is the only place that decides a check's status:

* a check whose prerequisite (``requires``) did not pass is skipped with that reason;
* a check that raises :class:`Skip` (or reads a fact that is not available) is skipped;
* a check whose probe failed or timed out is skipped, and the probe failure itself is reported
  once by the ``INT`` checks, which run last over what happened in this run;
* a check that raises anything else is a crash (``INT002``), and the run goes on.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field, replace
from graphlib import CycleError, TopologicalSorter
from typing import Callable, Iterable, Mapping

from .check import Check, call_run
from .exitcodes import ExitCode
from .facts import Facts, ProbeError, ProbeTimeout
from .model import CheckResult, Finding, Severity, Skip, Status

__all__ = ["Report", "run_checks", "RunEvent"]

RunEvent = Callable[[str, str, "CheckResult | None"], None]


@dataclass
class Report:
    """Everything a reporter needs."""

    results: list[CheckResult]
    duration_s: float
    source: str
    fail_on: Severity = Severity.ERROR
    meta: dict[str, object] = field(default_factory=dict)
    #: ``--strict``: a selected check that was skipped or could not run fails the gate (exit 4)
    strict: bool = False
    #: the effective configuration (config file + command line), recorded in the JSON output
    config: dict[str, object] | None = None
    #: (node label, facts) of the run, for ``--report report.html``; never in the JSON report
    node_facts: list[tuple[str, Facts]] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        out = [f for r in self.results for f in r.findings]
        return sorted(out, key=lambda f: (-int(f.severity), f.code, f.subject))

    def counts(self) -> dict[str, int]:
        c = {"error": 0, "warning": 0, "info": 0, "pass": 0, "fail": 0, "skip": 0, "crash": 0}
        for r in self.results:
            c[r.status.value] += 1
        for f in self.findings:
            c[f.severity.label] += 1
        c["checks"] = len(self.results)
        return c

    @property
    def crashed(self) -> bool:
        if any(r.status is Status.CRASH for r in self.results):
            return True
        return any(f.code in CRASH_CODES for f in self.findings)

    @property
    def ran(self) -> int:
        """Checks that ran to a verdict (passed or failed)."""
        return sum(r.status in (Status.PASS, Status.FAIL) for r in self.results)

    def skip_reasons(self) -> dict[str, list[str]]:
        """reason -> codes of the checks skipped for it, most common first."""
        by: dict[str, list[str]] = {}
        for r in self.results:
            if r.status is Status.SKIP:
                by.setdefault(r.reason, []).append(r.code)
        return dict(sorted(by.items(), key=lambda kv: -len(kv[1])))

    @property
    def exit_code(self) -> int:
        """The one exit-code rule (see :class:`ExitCode`): crash > findings > strict skip > ok."""
        if self.crashed:
            return int(ExitCode.CRASHED)
        if any(f.severity >= self.fail_on for f in self.findings):
            return int(ExitCode.FINDINGS)
        if self.strict and any(r.status is Status.SKIP for r in self.results):
            return int(ExitCode.SKIPPED)
        return int(ExitCode.OK)

    def with_severities(self, overrides: Mapping[str, str]) -> "Report":
        """The report with per-code severity overrides applied (``severity = {FS004 = "warning"}``);
        a check's status follows its findings' new severities."""
        if not overrides:
            return self
        wanted = {code.upper(): Severity.parse(sev) for code, sev in overrides.items()}
        results = []
        for r in self.results:
            sev = next((wanted[k] for k in sorted(wanted, key=len, reverse=True) if r.code.startswith(k)), None)
            if sev is None or not r.findings:
                results.append(r)
                continue
            findings = tuple(replace(f, severity=sev) for f in r.findings)
            status = r.status
            if status in (Status.PASS, Status.FAIL):
                status = Status.FAIL if any(f.severity >= Severity.WARNING for f in findings) else Status.PASS
            results.append(replace(r, findings=findings, status=status))
        return replace(self, results=results)


#: INT codes that mean k3doctor itself (a probe, a check, a plugin) broke: exit code 3.
CRASH_CODES = frozenset({"INT001", "INT002", "INT004"})


def _order(checks: dict[str, type[Check]], wanted: Iterable[str]) -> list[str]:
    """Wanted codes plus their prerequisites, prerequisites first (INT checks always last)."""
    needed: set[str] = set()
    stack = list(wanted)
    while stack:
        code = stack.pop()
        if code in needed or code not in checks:
            continue
        needed.add(code)
        stack.extend(checks[code].requires)
    graph = {c: [r for r in checks[c].requires if r in needed] for c in needed}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise RuntimeError(f"check prerequisites form a cycle: {exc.args[1]}") from None
    # stable: keep registry order where the graph allows it
    rank = {c: i for i, c in enumerate(checks)}
    done: set[str] = set()
    result: list[str] = []
    remaining = sorted(order, key=lambda c: (c.startswith("INT"), rank.get(c, 0)))
    while remaining:
        for c in remaining:
            if all(r in done or r not in needed for r in checks[c].requires):
                result.append(c)
                done.add(c)
                remaining.remove(c)
                break
    return result


def run_checks(
    checks: dict[str, type[Check]],
    selected: list[str],
    facts: Facts,
    *,
    fail_on: Severity = Severity.ERROR,
    on_event: RunEvent | None = None,
    plugin_errors: list[tuple[str, str]] | None = None,
) -> Report:
    """Run ``selected`` codes (and, silently, their prerequisites) and return the report."""
    started = time.perf_counter()
    results: dict[str, CheckResult] = {}
    crashes: list[dict[str, str]] = []
    order = _order(checks, selected)
    for code in order:
        cls = checks[code]
        if code.startswith("INT"):
            facts.set(
                "run",
                {
                    "probe_errors": {
                        n: {"detail": e.detail, "timeout": isinstance(e, ProbeTimeout)}
                        for n, e in sorted(facts.errors.items())
                    },
                    "check_crashes": crashes,
                    "plugin_errors": [{"entry_point": n, "error": e} for n, e in (plugin_errors or [])],
                },
            )
        if on_event:
            on_event("start", code, None)
        result = _run_one(cls, facts, results, crashes)
        results[code] = result
        if on_event:
            on_event("finish", code, result)
    wanted = set(selected)
    kept = [results[c] for c in order if c in wanted]
    return Report(results=kept, duration_s=time.perf_counter() - started, source=facts.source, fail_on=fail_on)


def _run_one(
    cls: type[Check], facts: Facts, results: dict[str, CheckResult], crashes: list[dict[str, str]]
) -> CheckResult:
    code, title = cls.code, cls.title()
    for req in cls.requires:
        prior = results.get(req)
        if prior is not None and prior.status is not Status.PASS:
            why = {Status.FAIL: "failed", Status.SKIP: "was skipped", Status.CRASH: "crashed"}[prior.status]
            return CheckResult(code=code, title=title, status=Status.SKIP, reason=f"requires {req}, which {why}")
    t0 = time.perf_counter()
    try:
        findings = tuple(call_run(cls(), facts) or ())
    except Skip as exc:
        return CheckResult(code=code, title=title, status=Status.SKIP, reason=exc.reason,
                           duration_s=time.perf_counter() - t0)
    except ProbeTimeout as exc:
        return CheckResult(code=code, title=title, status=Status.SKIP,
                           reason=f"probe {exc.fact!r} timed out ({exc.detail}); see INT003",
                           duration_s=time.perf_counter() - t0)
    except ProbeError as exc:
        return CheckResult(code=code, title=title, status=Status.SKIP,
                           reason=f"probe {exc.fact!r} failed; see INT001", duration_s=time.perf_counter() - t0)
    except Exception as exc:  # noqa: BLE001 - fail closed: a crash is a result, not an abort
        tb = traceback.format_exc(limit=8)
        crashes.append({"code": code, "error": f"{type(exc).__name__}: {exc}", "traceback": tb})
        return CheckResult(code=code, title=title, status=Status.CRASH,
                           reason=f"{type(exc).__name__}: {exc}", duration_s=time.perf_counter() - t0)
    for f in findings:
        if not isinstance(f, Finding):
            crashes.append({"code": code, "error": f"yielded {type(f).__name__}, not a Finding", "traceback": ""})
            return CheckResult(code=code, title=title, status=Status.CRASH,
                               reason=f"check yielded {type(f).__name__}, not a Finding",
                               duration_s=time.perf_counter() - t0)
    status = Status.FAIL if any(f.severity >= Severity.WARNING for f in findings) else Status.PASS
    return CheckResult(code=code, title=title, status=status, duration_s=time.perf_counter() - t0,
                       findings=findings)
