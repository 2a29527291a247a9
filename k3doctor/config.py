"""Project configuration: ``[tool.k3doctor]`` in pyproject.toml, or a ``k3doctor.toml``.

Found upward from the current directory (in each directory ``k3doctor.toml`` first, then a
``pyproject.toml`` that has a ``[tool.k3doctor]`` table), as ruff finds its settings.
``--config FILE`` names the file instead; ``--isolated`` ignores every file. Options given on the
command line override the file. Keys (TOML, dashes or underscores)::

    [tool.k3doctor]
    select = ["NET", "FS", "MEM"]          # or "NET,FS"
    ignore = ["NET003"]                    # or a table: {NET003 = "rail-optimised fabric"}
    target = "h200-141g"
    gpus = 8
    strict = true
    fail-on = "warning"
    format = "github"
    model = "/models/Kimi-K3"
    launch-file = "deploy/launch.sh"
    severity = {FS004 = "warning", NET003 = "info"}
"""

from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Config", "ConfigError", "KEYS", "find_config", "load_config", "resolve_config"]

CONFIG_NAME = "k3doctor.toml"

#: key -> (expected type, what it means); the keys double as option names (``fail-on`` -> ``fail_on``)
KEYS: dict[str, tuple[str, str]] = {
    "select": ("list", "codes, prefixes or families to run"),
    "ignore": ("list|table", "codes, prefixes or families to skip (a table gives the reason)"),
    "target": ("str", "GPU profile for static checks"),
    "gpus": ("int", "GPUs per node with target"),
    "strict": ("bool", "a skipped or unrunnable selected check fails the gate (exit 4)"),
    "fail-on": ("str", "lowest severity that fails: error, warning or info"),
    "format": ("str", "report format"),
    "output": ("str", "write the report to this file"),
    "model": ("str", "local model directory"),
    "launch-file": ("str", "launch script to read the launch command from"),
    "env-file": ("str", "shell file of export lines the launch sources"),
    "severity": ("table", "per-code severity overrides: CODE = error|warning|info"),
}

_SEVERITIES = ("error", "warning", "info")


class ConfigError(ValueError):
    """A config file that cannot be used: the message names the file, the key and the fix."""


@dataclass(frozen=True)
class Config:
    """Settings read from one file (``path`` is None when no file applies)."""

    path: Path | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    ignore_reasons: Mapping[str, str] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def _has_tool_table(pyproject: Path) -> bool:
    from .boundedio import BoundedReadError, read_text

    try:
        data = tomllib.loads(read_text(pyproject, kind="config"))
    except (BoundedReadError, tomllib.TOMLDecodeError, RecursionError):
        return False
    return isinstance(data.get("tool"), dict) and "k3doctor" in data["tool"]


def find_config(start: Path | None = None) -> Path | None:
    """The nearest ``k3doctor.toml`` or ``pyproject.toml`` with ``[tool.k3doctor]``, upward."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / CONFIG_NAME
        if own.is_file():
            return own
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject
    return None


def load_config(path: Path) -> Config:
    """Read and validate one file; :class:`ConfigError` names what is wrong."""
    from .boundedio import BoundedReadError, read_text

    try:
        text = read_text(path, kind="config")  # a FIFO or /dev/zero is refused, not read forever
    except BoundedReadError as exc:
        if exc.reason.startswith("is not UTF-8"):
            raise ConfigError(f"{path}: not UTF-8 text; a config file is TOML") from None
        raise ConfigError(f"{path}: cannot read the config file ({exc.reason})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML (nested too deeply)") from None
    if path.name == "pyproject.toml" or "tool" in data:
        table = (data.get("tool") or {}).get("k3doctor") if isinstance(data.get("tool"), dict) else None
        if table is None:
            raise ConfigError(f"{path}: no [tool.k3doctor] table (add one, or name a k3doctor.toml)")
        where = f"{path} [tool.k3doctor]"
    else:
        table = data
        where = str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table of settings")
    values, reasons = _validate(table, where, path.parent)
    return Config(path=path, values=values, ignore_reasons=reasons)


def _validate(table: Mapping[str, Any], where: str, base: Path) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for raw_key, value in table.items():
        key = str(raw_key).replace("_", "-")
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(KEYS)})"
            raise ConfigError(f"{where}: unknown key {raw_key!r}{hint}")
        kind = KEYS[key][0]
        bad = f"{where}: {raw_key} = {value!r}: expected "
        if key in ("select", "ignore"):
            if isinstance(value, str):
                value = [value]
            if key == "ignore" and isinstance(value, dict):
                reasons.update({str(k).upper(): str(v) for k, v in value.items()})
                value = list(value)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(bad + ("a list of codes" if kind == "list" else "a list of codes or a table"))
            values[key] = [str(v) for v in value]
        elif kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(bad + "true or false")
            values[key] = value
        elif kind == "int":
            from .targets import MAX_GPUS_PER_NODE

            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_GPUS_PER_NODE:
                raise ConfigError(bad + f"an integer from 1 to {MAX_GPUS_PER_NODE}")
            values[key] = value
        elif key == "severity":
            if not isinstance(value, dict):
                raise ConfigError(bad + 'a table such as {FS004 = "warning"}')
            out: dict[str, str] = {}
            for code, sev in value.items():
                if not isinstance(sev, str) or sev.lower() not in _SEVERITIES:
                    raise ConfigError(f"{where}: severity.{code} = {sev!r}: expected error, warning or info")
                out[str(code).upper()] = sev.lower()
            values[key] = out
        else:
            if not isinstance(value, str) or not value:
                raise ConfigError(bad + "a non-empty string")
            if key == "fail-on" and value.lower() not in _SEVERITIES:
                raise ConfigError(bad + "error, warning or info")
            if key in ("model", "launch-file", "env-file", "output") and not os.path.isabs(value):
                value = str(base / value)  # paths are relative to the config file, as in ruff
            values[key] = value.lower() if key == "fail-on" else value
    return values, reasons


def resolve_config(config_file: str | None, isolated: bool, start: Path | None = None) -> Config:
    """The configuration a command runs with: ``--config FILE``, else the nearest file, else none."""
    if isolated:
        if config_file:
            raise ConfigError("--config and --isolated are alternatives: --isolated ignores every config file")
        return Config()
    if config_file:
        path = Path(config_file)
        if not path.exists():
            raise ConfigError(f"--config {config_file}: no such file")
        if not path.is_file():
            raise ConfigError(f"--config {config_file}: not a regular file; give the path of a TOML config file")
        return load_config(path)
    found = find_config(start)
    return load_config(found) if found is not None else Config()
