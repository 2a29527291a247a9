"""Discover checks through the ``k3doctor.checks`` entry-point group.

Built-in families are declared in ``setup.cfg`` exactly like third-party plugins: each entry
point names a module (or object) exposing ``CHECKS`` (a list of :class:`~k3doctor.check.Check`
subclasses; ``module_checks(globals())`` collects a module's own) and, optionally, ``FAMILY =
(prefix, description, order)`` — the description ``k3doctor list`` shows and the display order.
Nothing else lists the families: adding one touches its module and ``setup.cfg``. Loading is deterministic (sorted by entry-point name) and fail-closed: a plugin that
fails to import, or a code that collides with another, becomes a load error the runner reports
under ``INT004`` instead of silently vanishing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Iterable

from .check import CODE_RE, Check

__all__ = ["ENTRY_POINT_GROUP", "builtin_modules", "Registry", "load_registry", "load_checks", "family_docs"]

ENTRY_POINT_GROUP = "k3doctor.checks"


def builtin_modules() -> dict[str, str]:
    """The modules of ``k3doctor.checks`` (used only when k3doctor runs from a source tree that
    was never installed, so there are no entry points)."""
    import pkgutil

    from . import checks

    return {m.name: f"{checks.__name__}.{m.name}" for m in pkgutil.iter_modules(checks.__path__)
            if not m.name.startswith("_")}


@dataclass
class Registry:
    """Checks by code, in a stable order, plus any load errors."""

    checks: dict[str, type[Check]] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: code prefix -> (display order, description), from the modules' ``FAMILY``
    families: dict[str, tuple[int, str]] = field(default_factory=dict)


def _checks_of(obj: Any) -> Iterable[type[Check]]:
    import types

    if isinstance(obj, types.ModuleType) and not hasattr(obj, "CHECKS"):
        from .check import module_checks

        obj = module_checks(vars(obj))
    items = getattr(obj, "CHECKS", obj)
    if callable(items) and not isinstance(items, type):
        items = items()
    if isinstance(items, type):
        items = [items]
    for item in items:
        if not (isinstance(item, type) and issubclass(item, Check)):
            raise TypeError(f"{item!r} is not a k3doctor.check.Check subclass")
        yield item


def _entry_points() -> list[tuple[str, str, Any]]:
    eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    seen: set[tuple[str, str]] = set()
    out = []
    for ep in sorted(eps, key=lambda e: (e.name, e.value)):
        if (ep.name, ep.value) in seen:  # the same distribution seen twice on sys.path
            continue
        seen.add((ep.name, ep.value))
        out.append((ep.name, ep.value, ep))
    return out


def load_registry() -> Registry:
    """Load every check family (entry points, or the built-in list when not installed)."""
    reg = Registry()
    sources = _entry_points()
    loaders: list[tuple[str, str, Any]]
    if any(value.startswith("k3doctor.checks") for _, value, _ in sources):
        loaders = sources
    else:  # running from an uninstalled source tree: same modules, loaded directly
        loaders = [(name, mod, None) for name, mod in sorted(builtin_modules().items())] + sources
    for name, value, ep in loaders:
        try:
            obj = ep.load() if ep is not None else importlib.import_module(value)
            classes = list(_checks_of(obj))
            fam = getattr(obj, "FAMILY", None)
            if (isinstance(fam, tuple) and len(fam) == 3 and isinstance(fam[0], str) and isinstance(fam[1], str)
                    and isinstance(fam[2], int)):
                reg.families.setdefault(fam[0], (fam[2], fam[1]))
        except ModuleNotFoundError as exc:
            if ep is None and exc.name == value:
                continue  # a built-in family not present in this build
            reg.errors.append((name, f"{value}: {type(exc).__name__}: {exc}"))
            continue
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, not fatal
            reg.errors.append((name, f"{value}: {type(exc).__name__}: {exc}"))
            continue
        for cls in classes:
            if not CODE_RE.match(cls.code):
                reg.errors.append((name, f"{cls.__qualname__}: invalid code {cls.code!r}"))
            elif cls.code in reg.checks and reg.checks[cls.code] is not cls:
                reg.errors.append(
                    (name, f"code {cls.code} from {value} collides with {reg.origins[cls.code]}; not loaded")
                )
            else:
                reg.checks[cls.code] = cls
                reg.origins[cls.code] = value
    def key(code: str) -> tuple[int, str, str]:
        fam = code.rstrip("0123456789")
        return (reg.families.get(fam, (1 << 30, ""))[0], fam, code)

    reg.checks = dict(sorted(reg.checks.items(), key=lambda kv: key(kv[0])))
    return reg


def family_docs() -> dict[str, str]:
    """Code prefix -> the family's description, in display order."""
    fams = registry().families
    return {k: doc for k, (_o, doc) in sorted(fams.items(), key=lambda kv: kv[1][0])}


_CACHE: Registry | None = None


def load_checks() -> dict[str, type[Check]]:
    """Code -> check class (cached for the process)."""
    global _CACHE
    if _CACHE is None:
        _CACHE = load_registry()
    return dict(_CACHE.checks)


def registry() -> Registry:
    """The cached registry including load errors."""
    global _CACHE
    if _CACHE is None:
        _CACHE = load_registry()
    return _CACHE
