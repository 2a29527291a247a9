"""The base class every check (built-in or plugin) derives from.

A check is a small class::

    class GPU001(Check):
        '''NVIDIA driver reachable through NVML

        Long-form Markdown documentation, shown by ``k3doctor explain GPU001``:
        what it checks, why it matters at launch, how to fix.
        '''
        facts = ("gpu",)
        def run(self, facts):
            gpu = facts.get("gpu")
            if not gpu["ok"]:
                yield self.finding("NVML could not be initialised: ...", fix="...")

The first docstring line is the title; the rest is the long doc. ``run`` is a pure function of
facts: it never touches the machine and never prints. It yields :class:`Finding` objects (no
findings means pass) or raises :class:`Skip` when it cannot decide.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, ClassVar, Iterable, Mapping, Protocol

from .model import EvidenceValue, Finding, Severity, Skip

__all__ = ["Check", "CODE_RE", "FAMILIES"]

CODE_RE = re.compile(r"^[A-Z]{2,4}\d{3}$")

#: Built-in families: prefix -> one-line description (shown by ``k3doctor list``).
FAMILIES: dict[str, str] = {
    "GPU": "GPU health and capacity through NVML",
    "ARCH": "launch flags, backends and env vars vs the GPU architecture; parallel-plan arithmetic",
    "NET": "network interfaces for NCCL/Gloo and the rendezvous",
    "FS": "filesystems of JIT caches, model and cache directories",
    "OS": "operating-system limits (shm, memlock, open files, host RAM)",
    "CKPT": "safetensors checkpoint integrity",
    "MEM": "per-rank memory projection",
    "CLU": "cross-node consistency (multi-node)",
    "INT": "k3doctor itself (crashed probes/checks, plugin failures, bad input)",
    "CMD": "the launch command itself (values that do not parse, unknown flags)",
}


class Check:
    """Base class for all checks. Subclasses set ``facts``, ``requires`` and implement ``run``."""

    #: Stable code, e.g. ``GPU001``. Defaults to the class name.
    code: ClassVar[str] = ""
    #: Fact names this check reads (``facts.get(name)``); missing facts make the check skip.
    facts: ClassVar[tuple[str, ...]] = ()
    #: Codes of checks that must have passed; if one did not, this check is skipped with the reason.
    requires: ClassVar[tuple[str, ...]] = ()
    #: Default severity of this check's findings.
    severity: ClassVar[Severity] = Severity.ERROR
    #: Optional reference URL shown with the doc.
    url: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls) or cls.__dict__.get("_abstract", False):
            return
        if not cls.__dict__.get("code"):
            cls.code = cls.__name__
        if not CODE_RE.match(cls.code):
            raise TypeError(f"check {cls.__qualname__}: code {cls.code!r} must match {CODE_RE.pattern}")
        if not (cls.__doc__ or "").strip():
            raise TypeError(f"check {cls.code}: a docstring (title + long doc) is required")
        if not isinstance(cls.requires, tuple) or not isinstance(cls.facts, tuple):
            raise TypeError(f"check {cls.code}: 'requires' and 'facts' must be tuples")

    # -- metadata -------------------------------------------------------------------------
    @classmethod
    def family(cls) -> str:
        return re.sub(r"\d+$", "", cls.code)

    @classmethod
    def title(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "").splitlines()[0].strip()

    @classmethod
    def doc(cls) -> str:
        lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
        return "\n".join(lines[1:]).strip()

    # -- behaviour ------------------------------------------------------------------------
    def run(self, facts: "FactsLike") -> Iterable[Finding]:
        """Yield findings (none = pass) or raise :class:`Skip`."""
        raise NotImplementedError

    def finding(
        self,
        message: str,
        *,
        subject: str = "",
        evidence: Mapping[str, EvidenceValue] | None = None,
        fix: str = "",
        severity: Severity | None = None,
    ) -> Finding:
        """Build a finding carrying this check's code and (by default) its severity."""
        return Finding(
            code=self.code,
            severity=self.severity if severity is None else severity,
            message=message,
            subject=subject,
            evidence=dict(evidence or {}),
            fix=fix,
        )

    @staticmethod
    def skip(reason: str) -> Skip:
        """``raise self.skip("why")`` when the check cannot decide."""
        return Skip(reason)


class FactsLike(Protocol):
    """What ``run`` receives: ``get(name)`` returns the fact or raises Skip; ``has(name)``;
    ``option(name)`` reads a command-line option (``model_dir``, ``deep``, …)."""

    def get(self, name: str) -> Any: ...

    def has(self, name: str) -> bool: ...

    def option(self, name: str, default: Any = None) -> Any: ...
