"""The base class every check (built-in or plugin) derives from.

A check is a small class whose ``run`` signature names the facts it reads::

    class OS003(Check):
        '''Open-file limit is high enough

        Long-form Markdown documentation, shown by ``k3doctor explain OS003``:
        what it checks, why it matters at launch, how to fix.
        '''
        def run(self, limits: Mapping[str, Any], launch: Mapping[str, Any] | None = None):
            if limits["nofile"]["soft"] < 65536:
                yield self.finding("ulimit -n is ...", fix="ulimit -n 1048576")

The runner injects each parameter by name from the facts (``gpu``, ``launch``, ``limits``, ``net``,
``mounts``, ``paths``, ``env``, ``host``, ``packages``, ``model``, ``cluster``, ``rendezvous``);
``options`` receives the command-line options, ``facts`` the whole fact set (for the derived
helpers that read several facts). A parameter without a default is required: when its fact is
missing the check is skipped with the reason, before ``run`` is called. A parameter with a default
receives the default when the fact is missing. The older form ``run(self, facts)`` (one parameter
named ``facts``) still works and reads facts itself.

The first docstring line is the title; the rest is the long doc. ``run`` is a pure function of
facts: it never touches the machine and never prints. It yields :class:`Finding` objects (no
findings means pass) or raises :class:`Skip` when it cannot decide.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, ClassVar, Iterable, Mapping, Protocol

from .model import EvidenceValue, Finding, Severity, Skip

__all__ = ["Check", "CODE_RE", "SPECIAL_PARAMS", "module_checks", "call_run", "inject", "fact_params"]

#: ``run`` parameters that are not facts: the command-line options and the fact set itself
SPECIAL_PARAMS = ("facts", "options")

CODE_RE = re.compile(r"^[A-Z]{2,4}\d{3}$")

class Check:
    """Base class for all checks. Subclasses implement ``run`` (whose parameters name the facts
    it needs) and may set ``requires`` and ``severity``."""

    #: Stable code, e.g. ``GPU001``. Defaults to the class name.
    code: ClassVar[str] = ""
    #: (required, optional) fact parameters of ``run``; None for a legacy ``run(self, facts)``
    _params: ClassVar[tuple[tuple[str, ...], tuple[str, ...]] | None] = None
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
        if not isinstance(cls.requires, tuple):
            raise TypeError(f"check {cls.code}: 'requires' must be a tuple")
        cls._params = _signature_params(cls)

    # -- metadata -------------------------------------------------------------------------
    @classmethod
    def family(cls) -> str:
        return re.sub(r"\d+$", "", cls.code)

    @classmethod
    def needs(cls) -> tuple[str, ...]:
        """The facts ``run`` names, required ones first (its signature is the contract); empty for
        the legacy ``run(self, facts)`` form."""
        if cls._params is None:
            return ()
        required, optional = cls._params
        return tuple(p for p in required + optional if p not in SPECIAL_PARAMS)

    @classmethod
    def title(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "").splitlines()[0].strip()

    @classmethod
    def doc(cls) -> str:
        lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
        return "\n".join(lines[1:]).strip()

    # -- behaviour ------------------------------------------------------------------------
    def run(self, *args: Any, **kwargs: Any) -> Iterable[Finding]:
        """Yield findings (none = pass) or raise :class:`Skip`; the parameters name the facts
        (see the module doc), or the single parameter ``facts`` receives them all."""
        raise NotImplementedError

    def finding(
        self,
        message: str,
        *,
        subject: str = "",
        evidence: Mapping[str, EvidenceValue] | None = None,
        fix: str = "",
        severity: Severity | None = None,
        group: str = "",
    ) -> Finding:
        """Build a finding carrying this check's code and (by default) its severity; ``group``
        names a root cause shared with other findings (they are reported as one block)."""
        return Finding(
            code=self.code,
            severity=self.severity if severity is None else severity,
            message=message,
            subject=subject,
            evidence=dict(evidence or {}),
            fix=fix,
            group=group,
        )

    @staticmethod
    def skip(reason: str) -> Skip:
        """``raise self.skip("why")`` when the check cannot decide."""
        return Skip(reason)


def module_checks(namespace: Mapping[str, Any]) -> list[type["Check"]]:
    """The checks a family module defines (``CHECKS = module_checks(globals())``), by code: a new
    check is one class, and no list is kept by hand."""
    mod = namespace.get("__name__")
    found = [v for v in namespace.values()
             if isinstance(v, type) and issubclass(v, Check) and v is not Check and v.__module__ == mod
             and not v.__dict__.get("_abstract", False)]
    return sorted(found, key=lambda c: (re.sub(r"\d+$", "", c.code), int(re.sub(r"^\D+", "", c.code))))


def _signature_params(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(required, optional) parameter names of ``cls.run`` after ``self``; None for the legacy
    single-``facts`` form."""
    run = cls.__dict__.get("run") or getattr(cls, "run", None)
    if run is None or run is Check.run:
        return None
    params = fact_params(run, skip_first=True, owner=cls.__name__)
    return None if params[0] + params[1] in ((), ("facts",)) else params


def fact_params(fn: Any, *, skip_first: bool = False, owner: str = "") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(required, optional) parameter names of ``fn`` (a check's ``run`` or a derived fact's
    function): required ones have no default."""
    params = list(inspect.signature(fn).parameters.values())[1 if skip_first else 0:]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise TypeError(f"{owner or getattr(fn, '__qualname__', fn)}: takes named facts, not *args/**kwargs")
    required = tuple(p.name for p in params if p.default is p.empty)
    optional = tuple(p.name for p in params if p.default is not p.empty)
    return required, optional


def inject(fn: Any, params: tuple[tuple[str, ...], tuple[str, ...]], facts: "FactsLike",
           call: Callable[[Callable[[], Any]], Any] | None = None) -> Any:
    """Call ``fn`` with the facts its parameters name: a required fact that is missing raises
    :class:`Skip` with the reason (in parameter order); an optional one that is unavailable keeps
    its default. ``options`` receives the command-line options, ``facts`` the fact set. ``call``
    runs the prepared call (e.g. under a time limit) once every fact is gathered."""
    required, optional = params
    kwargs: dict[str, Any] = {}
    for name in required + optional:
        if name == "facts":
            kwargs[name] = facts
        elif name == "options":
            kwargs[name] = getattr(facts, "options", {}) or {}
        elif name in required:
            kwargs[name] = facts.get(name)  # raises Skip with the reason when unavailable
        elif facts.has(name):
            from .facts import ProbeError

            try:
                kwargs[name] = facts.get(name)
            except (Skip, ProbeError):  # an optional fact that is unavailable keeps its default
                pass
    return call(lambda: fn(**kwargs)) if call is not None else fn(**kwargs)


def call_run(check: "Check", facts: "FactsLike") -> Iterable[Finding]:
    """Call ``check.run`` with what its signature asks for (see the module doc). A missing
    required fact raises :class:`Skip` (probe failures propagate as the facts raise them)."""
    params = type(check)._params
    if params is None:
        return check.run(facts)  # type: ignore[call-arg]
    return inject(check.run, params, facts)  # type: ignore[no-any-return]


class FactsLike(Protocol):
    """What ``run`` receives: ``get(name)`` returns the fact or raises Skip; ``has(name)``;
    ``option(name)`` reads a command-line option (``model_dir``, ``deep``, …)."""

    def get(self, name: str) -> Any: ...

    def has(self, name: str) -> bool: ...

    def option(self, name: str, default: Any = None) -> Any: ...
