"""Reporters turn a :class:`~k3doctor.runner.Report` into text. They only format.

``REPORTERS`` maps a ``--format`` name to ``"module:Class"`` (imported on use, so JSON output
never imports rich).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Reporter

__all__ = ["REPORTERS", "get_reporter"]

REPORTERS: dict[str, str] = {
    "rich": "k3doctor.reporters.text:RichReporter",
    "json": "k3doctor.reporters.json_report:JsonReporter",
    "junit": "k3doctor.reporters.junit:JUnitReporter",
    "github": "k3doctor.reporters.github:GitHubReporter",
    "sarif": "k3doctor.reporters.sarif:SarifReporter",
    "gitlab": "k3doctor.reporters.gitlab:GitLabReporter",
    "markdown": "k3doctor.reporters.markdown:MarkdownReporter",
}


def get_reporter(name: str) -> "Reporter":
    module, _, cls = REPORTERS[name].partition(":")
    return getattr(importlib.import_module(module), cls)()  # type: ignore[no-any-return]
