"""A check's ``run`` signature is its contract: the runner injects facts by parameter name and
skips the check, with the reason, when a required fact is missing (issue 14)."""

from __future__ import annotations

from typing import Any, Mapping

import pytest

from k3doctor.check import Check
from k3doctor.facts import Facts
from k3doctor.model import Status
from k3doctor.runner import run_checks
from k3doctor.testing import run, skip_reason


class XSIG001(Check):
    """needs the gpu fact, reads launch when there is one

    doc
    """

    def run(self, gpu: Mapping[str, Any], launch: Mapping[str, Any] | None = None,
            options: Mapping[str, Any] | None = None):
        yield self.finding(f"{len(gpu['devices'])} GPU(s); launch {'given' if launch else 'absent'}; "
                           f"option x={(options or {}).get('x')}")


class XSIG002(Check):
    """the older form still works

    doc
    """

    facts = ("gpu",)

    def run(self, facts):
        yield self.finding(f"legacy {len(facts.get('gpu')['devices'])}")


def test_required_and_optional_facts_are_injected_by_name():
    f = run(XSIG001, options={"x": 7}, gpu={"devices": [{}, {}]})
    assert f[0].message == "2 GPU(s); launch absent; option x=7"
    f = run(XSIG001, gpu={"devices": [{}]}, launch={"engine": "vllm"})
    assert f[0].message.startswith("1 GPU(s); launch given")
    assert XSIG001.needs() == ("gpu", "launch")


def test_a_missing_required_fact_skips_before_run_with_the_reason():
    reason = skip_reason(XSIG001, launch={"engine": "vllm"})
    assert "gpu" in reason
    report = run_checks({"XSIG001": XSIG001}, ["XSIG001"], Facts({}, source="test"))
    (result,) = report.results
    assert result.status is Status.SKIP and "gpu" in result.reason


def test_legacy_run_facts_form_is_unchanged():
    assert run(XSIG002, gpu={"devices": [{}]})[0].message == "legacy 1"
    assert XSIG002.needs() == ()  # the legacy form names no facts: it reads them itself


def test_star_args_are_refused_at_class_creation():
    with pytest.raises(TypeError, match="named facts"):
        class XSIG003(Check):  # noqa: F841 - defining it is the test
            """bad

            doc
            """

            def run(self, **facts):
                return ()


def test_every_builtin_check_names_its_facts_in_its_signature():
    """The signature is the contract: no built-in check takes the whole fact set."""
    from k3doctor.registry import load_registry

    reg = load_registry()
    legacy = [code for code, cls in reg.checks.items() if cls._params is None or "facts" in cls.needs()
              or "facts" in (cls._params[0] + cls._params[1])]
    assert legacy == []
    assert all(cls.needs() for cls in reg.checks.values())
