"""The base of every typed fact (:class:`Fact`) and the lenient field readers the fact types share.

Kept apart from :mod:`k3doctor.facttypes` so that :class:`k3doctor.launch.LaunchSpec` (the ``launch``
fact) can derive from :class:`Fact` without an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = ["Fact"]


# -- lenient field readers (a malformed value is None, never an exception) ---------------------
def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _maps(v: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(x for x in v if isinstance(x, Mapping)) if isinstance(v, (list, tuple)) else ()


def _strs(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in v if isinstance(x, (str, int))) if isinstance(v, (list, tuple)) else ()


@dataclass(frozen=True, eq=False)
class Fact(Mapping[str, Any]):
    """Base of every fact kind: the JSON document it was read from plus typed fields."""

    #: fact name (``gpu``, ``launch`` …) this type is for
    name: ClassVar[str] = ""
    doc: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Fact":
        """The typed fact of a probe's / snapshot's document (see the module doc)."""
        return cls(doc=doc)

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> Any:
        """``value`` itself when it already is this type, else its typed form (``from_json``)."""
        return value if isinstance(value, cls) else cls.from_json(value)

    def to_json(self) -> dict[str, Any]:
        """The JSON document (what ``k3doctor snapshot`` writes)."""
        return dict(self.doc)

    # read-only Mapping over the document
    def __getitem__(self, key: str) -> Any:
        return self.doc[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.doc)

    def __len__(self) -> int:
        return len(self.doc)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Fact):
            return type(self) is type(other) and dict(self.doc) == dict(other.doc)
        return isinstance(other, Mapping) and dict(self.doc) == dict(other)

    __hash__ = None  # type: ignore[assignment]
