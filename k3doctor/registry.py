"""Discover checks through the ``k3doctor.checks`` entry-point group.

Built-in families are declared in ``setup.cfg`` exactly like third-party plugins: each entry
point names a module (or object) exposing ``CHECKS``, a list of :class:`~k3doctor.check.Check`
subclasses. Loading is deterministic (sorted by entry-point name) and fail-closed: a plugin that
fails to import, or a code that collides with another, becomes a load error the runner reports
under ``INT004`` instead of silently vanishing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Iterable

from .check import CODE_RE, Check

__all__ = ["ENTRY_POINT_GROUP", "BUILTIN_MODULES", "Registry", "load_registry", "load_checks"]

ENTRY_POINT_GROUP = "k3doctor.checks"

#: Used only when k3doctor runs from a source tree that was never installed (no entry points).
BUILTIN_MODULES: dict[str, str] = {
    "arch": "k3doctor.checks.arch",
    "ckpt": "k3doctor.checks.ckpt",
    "clu": "k3doctor.checks.clu",
    "fs": "k3doctor.checks.fs",
    "gpu": "k3doctor.checks.gpu",
    "internal": "k3doctor.checks.internal",
    "launch": "k3doctor.checks.launch",
    "mem": "k3doctor.checks.mem",
    "net": "k3doctor.checks.net",
    "os": "k3doctor.checks.oslimits",
}


@dataclass
class Registry:
    """Checks by code, in a stable order, plus any load errors."""

    checks: dict[str, type[Check]] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    errors: list[tuple[str, str]] = field(default_factory=list)


def _checks_of(obj: Any) -> Iterable[type[Check]]:
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
        loaders = [(name, mod, None) for name, mod in sorted(BUILTIN_MODULES.items())] + sources
    for name, value, ep in loaders:
        try:
            obj = ep.load() if ep is not None else importlib.import_module(value)
            classes = list(_checks_of(obj))
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
    reg.checks = dict(sorted(reg.checks.items(), key=lambda kv: _sort_key(kv[0])))
    return reg


def _sort_key(code: str) -> tuple[int, str]:
    order = ["CMD", "GPU", "ARCH", "NET", "FS", "OS", "CKPT", "MEM", "CLU", "INT"]
    fam = code.rstrip("0123456789")
    return (order.index(fam) if fam in order else len(order), code)


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
