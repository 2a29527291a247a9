"""Entry-point discovery: built-ins like plugins, broken plugins and code collisions are reported."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest
from click.testing import CliRunner

from k3doctor import registry as reg_mod
from k3doctor.check import Check
from k3doctor.cli import main


class ACME001(Check):
    """Plugin check that always notes something

    Long doc.
    """

    def run(self, facts: Any):  # type: ignore[no-untyped-def]
        yield self.finding("hello from a plugin", fix="nothing")


class GPU001(Check):  # deliberately collides with the built-in code
    """Impostor

    Long doc.
    """

    def run(self, facts: Any):  # type: ignore[no-untyped-def]
        return []


class FakeEP:
    def __init__(self, name: str, value: str, obj: Any = None, error: Exception | None = None) -> None:
        self.name, self.value, self._obj, self._error = name, value, obj, error

    def load(self) -> Any:
        if self._error:
            raise self._error
        return self._obj


@pytest.fixture()
def fake_plugins(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    real = reg_mod._entry_points()
    assert any(v.startswith("k3doctor.checks") for _, v, _ in real), "built-ins must come from entry points"
    plugins = [
        ("acme", "acme_checks", FakeEP("acme", "acme_checks", types.SimpleNamespace(CHECKS=[ACME001]))),
        ("broken", "broken_checks", FakeEP("broken", "broken_checks", error=ImportError("no module named x"))),
        ("impostor", "impostor_checks", FakeEP("impostor", "impostor_checks", types.SimpleNamespace(CHECKS=[GPU001]))),
    ]
    monkeypatch.setattr(reg_mod, "_entry_points", lambda: real + plugins)
    monkeypatch.setattr(reg_mod, "_CACHE", None)
    yield
    reg_mod._CACHE = None


def test_builtins_are_entry_points() -> None:
    names = {name for name, _, _ in reg_mod._entry_points()}
    assert {"gpu", "arch", "net", "fs", "os", "ckpt", "mem", "clu", "internal", "launch"} <= names


def test_plugin_loaded_and_failures_reported(fake_plugins: None) -> None:
    reg = reg_mod.load_registry()
    assert reg.checks["ACME001"] is ACME001
    assert reg.checks["GPU001"].__module__ == "k3doctor.checks.gpu"  # the built-in wins
    errors = dict(reg.errors)
    assert "ImportError" in errors["broken"] and "collides" in errors["impostor"]


def test_broken_plugin_makes_exit_3(fake_plugins: None) -> None:
    res = CliRunner().invoke(main, ["check", "--target", "h200", "--select", "ACME,INT004", "--format", "json"],
                             catch_exceptions=False)
    doc = json.loads(res.output)
    assert res.exit_code == 3 and doc["exit_code"] == 3
    assert {f["code"] for f in doc["findings"]} == {"ACME001", "INT004"}
