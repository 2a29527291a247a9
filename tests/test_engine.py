"""The check engine: prerequisites, skips, crashes, probe failures/timeouts, selection, exit codes."""

from __future__ import annotations

import time

import pytest

from k3doctor.check import Check
from k3doctor.checks.internal import CHECKS as INT_CHECKS
from k3doctor.facts import Facts, ProbeTimeout, call_with_timeout
from k3doctor.model import Severity, Status
from k3doctor.runner import run_checks
from k3doctor.selection import SelectionError, apply_selection


class ZZZ001(Check):
    """Root check that fails when fact `a` is false

    Long doc.
    """

    facts = ("a",)

    def run(self, facts):  # type: ignore[no-untyped-def]
        if not facts.get("a"):
            yield self.finding("a is false", fix="set a")


class ZZZ002(Check):
    """Depends on ZZZ001

    Long doc.
    """

    requires = ("ZZZ001",)

    def run(self, facts):  # type: ignore[no-untyped-def]
        yield self.finding("ran", severity=Severity.INFO)


class ZZZ003(Check):
    """Crashes

    Long doc.
    """

    def run(self, facts):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("boom")


class ZZZ004(Check):
    """Reads a probed fact

    Long doc.
    """

    facts = ("slow",)

    def run(self, facts):  # type: ignore[no-untyped-def]
        facts.get("slow")
        return []


class ZZZ005(Check):
    """Skips itself

    Long doc.
    """

    def run(self, facts):  # type: ignore[no-untyped-def]
        raise self.skip("cannot decide without X")


def registry(*classes: type[Check]) -> dict[str, type[Check]]:
    reg = {c.code: c for c in classes}
    reg.update({c.code: c for c in INT_CHECKS})
    return reg


def test_requires_skips_dependents_with_reason() -> None:
    reg = registry(ZZZ001, ZZZ002)
    report = run_checks(reg, ["ZZZ001", "ZZZ002"], Facts({"a": False}))
    by = {r.code: r for r in report.results}
    assert by["ZZZ001"].status is Status.FAIL
    assert by["ZZZ002"].status is Status.SKIP and by["ZZZ002"].reason == "requires ZZZ001, which failed"
    assert report.exit_code == 1
    ok = run_checks(reg, ["ZZZ002"], Facts({"a": True}))
    # the prerequisite ran silently, the dependent ran and reported only an info finding
    assert [r.code for r in ok.results] == ["ZZZ002"] and ok.results[0].status is Status.PASS
    assert ok.exit_code == 0


def test_crash_is_isolated_and_reported_as_int002() -> None:
    reg = registry(ZZZ001, ZZZ003)
    report = run_checks(reg, ["ZZZ001", "ZZZ003", "INT002"], Facts({"a": True}))
    by = {r.code: r for r in report.results}
    assert by["ZZZ001"].status is Status.PASS
    assert by["ZZZ003"].status is Status.CRASH and "ZeroDivisionError" in by["ZZZ003"].reason
    assert by["INT002"].status is Status.FAIL
    assert any(f.code == "INT002" and "ZZZ003" in f.message for f in report.findings)
    assert report.exit_code == 3


def test_probe_timeout_becomes_int003_and_dependent_skip() -> None:
    def slow(ctx):  # type: ignore[no-untyped-def]
        time.sleep(5)

    facts = Facts(live=True, probes={"slow": slow}, probe_timeout=0.2)
    reg = registry(ZZZ004)
    t0 = time.perf_counter()
    report = run_checks(reg, ["ZZZ004", "INT001", "INT003"], facts)
    assert time.perf_counter() - t0 < 2
    by = {r.code: r for r in report.results}
    assert by["ZZZ004"].status is Status.SKIP and "timed out" in by["ZZZ004"].reason
    assert by["INT003"].status is Status.FAIL and by["INT001"].status is Status.PASS
    assert report.exit_code == 1


def test_probe_crash_becomes_int001_exit_3() -> None:
    def broken(ctx):  # type: ignore[no-untyped-def]
        raise OSError("permission denied: /sys/class/net")

    facts = Facts(live=True, probes={"slow": broken})
    report = run_checks(registry(ZZZ004), ["ZZZ004", "INT001"], facts)
    assert any(f.code == "INT001" and "permission denied" in f.message for f in report.findings)
    assert report.exit_code == 3


def test_skip_and_missing_fact() -> None:
    report = run_checks(registry(ZZZ001, ZZZ005), ["ZZZ001", "ZZZ005"], Facts({}))
    by = {r.code: r for r in report.results}
    assert by["ZZZ001"].status is Status.SKIP and "not in this static fact set" in by["ZZZ001"].reason
    assert by["ZZZ005"].reason == "cannot decide without X"
    assert report.exit_code == 0


def test_fail_on_warning() -> None:
    class ZZZ006(Check):
        """Warns

        Long doc.
        """

        def run(self, facts):  # type: ignore[no-untyped-def]
            yield self.finding("careful", severity=Severity.WARNING)

    reg = registry(ZZZ006)
    assert run_checks(reg, ["ZZZ006"], Facts({})).exit_code == 0
    assert run_checks(reg, ["ZZZ006"], Facts({}), fail_on=Severity.WARNING).exit_code == 1


def test_selection_rules() -> None:
    codes = ["GPU001", "GPU002", "GPU010", "NET001", "CKPT001"]
    assert apply_selection(codes, [], []) == codes
    assert apply_selection(codes, ["GPU"], []) == ["GPU001", "GPU002", "GPU010"]
    assert apply_selection(codes, ["GPU00"], []) == ["GPU001", "GPU002"]
    assert apply_selection(codes, ["GPU"], ["GPU002"]) == ["GPU001", "GPU010"]
    # the longer (more specific) selector wins
    assert apply_selection(codes, ["GPU002"], ["GPU"]) == ["GPU002"]
    assert apply_selection(codes, [], ["GPU", "NET"]) == ["CKPT001"]
    with pytest.raises(SelectionError, match="XYZ"):
        apply_selection(codes, ["XYZ"], [])


def test_check_class_validation() -> None:
    with pytest.raises(TypeError, match="must match"):
        type("bad-code", (Check,), {"__doc__": "t", "code": "lowercase1"})
    with pytest.raises(TypeError, match="docstring"):
        type("ZZZ099", (Check,), {})


def test_call_with_timeout_reraises_and_times_out() -> None:
    with pytest.raises(ValueError):
        call_with_timeout(lambda: int("x"), 1, "t")
    with pytest.raises(ProbeTimeout):
        call_with_timeout(lambda: time.sleep(2), 0.05, "t")
    assert call_with_timeout(lambda: 42, 1, "t") == 42


def test_verbose_rich_report_shows_the_crash_traceback() -> None:
    import io

    from k3doctor.reporters.text import RichReporter

    report = run_checks(registry(ZZZ003), ["ZZZ003", "INT002"], Facts({}))
    quiet, loud = io.StringIO(), io.StringIO()
    RichReporter().render(report, quiet, verbose=False)
    RichReporter().render(report, loud, verbose=True)
    assert "ZeroDivisionError" in quiet.getvalue()
    assert "Traceback" in loud.getvalue() and "Traceback" not in quiet.getvalue()
