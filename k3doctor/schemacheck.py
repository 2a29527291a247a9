"""Validate a JSON document against one of k3doctor's published JSON Schemas (a small subset of
draft 2020-12), without a dependency: what a snapshot file must look like before a check reads it.

Supported keywords: ``$ref`` (``#/$defs/name``), ``type`` (one or a list), ``const``, ``enum``,
``minimum``/``maximum``, ``properties``, ``additionalProperties`` (schema or boolean), ``required``,
``items``, ``prefixItems``, ``minItems``/``maxItems``. Stricter than the standard in two ways that
matter to the checks reading the values: an ``integer`` is a JSON integer (``1.0`` is not one, nor is
``true``) and a ``number`` is finite (``NaN`` and ``Infinity``, which Python's json reads, are not).

    problems = validate(doc, load_schema("snapshot"))   # [(path, message)], at most ``limit``
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["load_schema", "validate", "describe"]

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and math.isfinite(v)),
    "null": lambda v: v is None,
}
_NAMES = {"object": "an object", "array": "a list", "string": "a string", "boolean": "true/false",
          "integer": "an integer", "number": "a finite number", "null": "null"}


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The packaged schema ``k3doctor/data/schemas/<name>.schema.json``."""
    text = resources.files("k3doctor").joinpath(f"data/schemas/{name}.schema.json").read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


def describe(value: Any) -> str:
    """A short, safe rendering of a found value for a message (``'x'`` (a string), ``NaN`` …)."""
    for name in ("boolean", "null", "integer", "string", "array", "object"):
        if _TYPES[name](value):
            shown = json.dumps(value)[:40] if name in ("integer", "string", "boolean", "null") else ""
            return f"{shown} ({_NAMES[name]})" if shown else _NAMES[name]
    return f"{value!r}"[:40]


def validate(doc: Any, schema: dict[str, Any], *, limit: int = 20) -> list[tuple[str, str]]:
    """``(path, message)`` for each place ``doc`` breaks ``schema`` (``path`` like
    ``facts.gpu.devices[1].memory_total``), at most ``limit`` of them."""
    out: list[tuple[str, str]] = []
    _check(doc, schema, schema, "", out, limit)
    return out


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref!r}")
        node = root["$defs"][ref[len("#/$defs/"):]]
    return node


def _check(value: Any, node: dict[str, Any], root: dict[str, Any], path: str, out: list[tuple[str, str]],
           limit: int) -> None:
    if len(out) >= limit:
        return
    node = _resolve(node, root)
    where = path or "(document)"
    if "const" in node and value != node["const"]:
        out.append((where, f"is {describe(value)}, expected {json.dumps(node['const'])}"))
        return
    if "enum" in node and value not in node["enum"]:
        out.append((where, f"is {describe(value)}, expected one of {', '.join(map(json.dumps, node['enum']))}"))
        return
    types = node.get("type")
    if types is not None:
        wanted = [types] if isinstance(types, str) else list(types)
        if not any(_TYPES[t](value) for t in wanted):
            names = " or ".join(_NAMES[t] for t in wanted if t != "null")
            out.append((where, f"is {describe(value)}, expected {names or 'null'}"))
            return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in node and value < node["minimum"]:
            out.append((where, f"is {value}, expected at least {node['minimum']}"))
        elif "maximum" in node and value > node["maximum"]:
            out.append((where, f"is {value}, expected at most {node['maximum']}"))
    elif isinstance(value, dict):
        _check_object(value, node, root, path, out, limit)
    elif isinstance(value, list):
        _check_array(value, node, root, path, out, limit)


def _check_object(value: dict[str, Any], node: dict[str, Any], root: dict[str, Any], path: str,
                  out: list[tuple[str, str]], limit: int) -> None:
    for key in node.get("required", ()):
        if key not in value:
            out.append((path or "(document)", f"has no {key!r}"))
    props = node.get("properties", {})
    extra = node.get("additionalProperties", True)
    for key, item in value.items():
        sub = f"{path}.{key}" if path else str(key)
        if key in props:
            _check(item, props[key], root, sub, out, limit)
        elif extra is False:
            out.append((sub, "is not a known field"))
        elif isinstance(extra, dict):
            _check(item, extra, root, sub, out, limit)
        if len(out) >= limit:
            return


def _check_array(value: list[Any], node: dict[str, Any], root: dict[str, Any], path: str,
                 out: list[tuple[str, str]], limit: int) -> None:
    if len(value) < node.get("minItems", 0):
        out.append((path, f"has {len(value)} items, expected at least {node['minItems']}"))
        return
    if "maxItems" in node and len(value) > node["maxItems"]:
        out.append((path, f"has {len(value)} items, expected at most {node['maxItems']}"))
        return
    prefix = node.get("prefixItems", [])
    items = node.get("items")
    for i, item in enumerate(value):
        sub = prefix[i] if i < len(prefix) else items
        if sub is not None:
            _check(item, sub, root, f"{path}[{i}]", out, limit)
        if len(out) >= limit:
            return
