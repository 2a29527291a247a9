"""Read the launch command out of a real launch script (``--launch-file deploy/launch.sh``).

A deployment's launch script is shell, not one command line: a shebang, comments, ``set -e``,
``export`` lines, ``cd``, backslash continuations, ``exec``. The script is never run. It is read as
text: logical lines are joined across backslash continuations; assignments (``export A=b``,
``A=b``) are collected in order and expand ``$A`` / ``${A}`` / ``${A:-default}`` in later lines
(then the process environment, so a pod's or job's real variables count); the one line that is an
SGLang or vLLM launch (optionally behind ``exec``, ``env``, ``nohup``, ``docker run``) is the
command, and the script's exported variables become its leading ``VAR=value`` words.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Mapping

from .launch import LaunchError, parse_launch

__all__ = ["read_launch_file"]

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
#: shell builtins and set-up commands that are never the launch
_NOT_LAUNCH = {"set", "cd", "source", ".", "ulimit", "echo", "printf", "trap", "umask", "mkdir", "eval",
               "unset", "shopt", "if", "then", "fi", "else", "for", "do", "done", "while", "case", "esac",
               "function", "return", "exit", "wait", "sleep", "true", ":", "local", "declare", "readonly"}
_PREFIX = {"exec", "nohup", "time", "stdbuf"}


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, text) with continuations joined and comments dropped."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buf:
            start = lineno
            if lineno == 1 and line.startswith("#!"):
                continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            buf.append(line[:-1])
            continue
        buf.append(line)
        joined = " ".join(part.strip() for part in buf).strip()
        buf = []
        if joined and not joined.startswith("#"):
            out.append((start, joined))
    if buf:
        out.append((start, " ".join(part.strip() for part in buf).strip()))
    return out


def _expand(word: str, scope: Mapping[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(4)
        value = scope.get(name)
        if m.group(2) is not None:  # ${A:-default} / ${A-default} / ${A:=default}
            empty_counts = m.group(2).startswith(":")
            if value is None or (empty_counts and value == ""):
                return _expand(m.group(3), scope)
            return value
        return value if value is not None else m.group(0)

    return _VAR.sub(sub, word)


def read_launch_file(path: str | Path, process_env: Mapping[str, str] | None = None) -> list[str]:
    """The launch command of ``path`` as words (``VAR=value`` words first); :class:`LaunchError`
    names the file and line when the script has no launch, several, or broken quoting."""
    p = Path(path)
    from .boundedio import BoundedReadError, read_text

    try:
        text = read_text(p, kind="launch script", errors="replace")  # bounded: a FIFO or /dev/zero is refused
    except BoundedReadError as exc:
        raise LaunchError(f"--launch-file {p}: cannot read ({exc.reason})") from None
    scope: dict[str, str] = dict(process_env or {})
    assigned: dict[str, str] = {}
    found: list[tuple[int, list[str]]] = []
    for lineno, line in _logical_lines(text):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise LaunchError(f"--launch-file {p}:{lineno}: {exc} (fix the quoting)") from None
        if not words:
            continue
        if words[0] in ("export", "declare", "readonly", "local"):
            for word in words[1:]:
                m = _ASSIGN.match(word)
                if m:
                    value = _expand(m.group(2), scope)
                    scope[m.group(1)] = assigned[m.group(1)] = value
            continue
        if all(_ASSIGN.match(w) for w in words):  # plain `A=b`: a shell variable, not in the engine's env
            for word in words:
                m = _ASSIGN.match(word)
                assert m is not None
                scope[m.group(1)] = _expand(m.group(2), scope)
                if m.group(1) in assigned:  # re-assigning an exported variable keeps it exported
                    assigned[m.group(1)] = scope[m.group(1)]
            continue
        i = 0
        while i < len(words) and words[i] in _PREFIX:
            i += 1
        if i >= len(words) or words[i] in _NOT_LAUNCH:
            continue
        command = [_expand(w, scope) for w in words[i:]]
        try:
            parse_launch(command)
        except LaunchError:
            continue  # another command of the script (a download, a health probe, ...)
        found.append((lineno, command))
    if not found:
        raise LaunchError(f"--launch-file {p}: no SGLang or vLLM launch found (looked for `sglang serve`, "
                          "`python -m sglang.launch_server`, `vllm serve`, `python -m vllm.entrypoints...`)")
    if len(found) > 1:
        lines = ", ".join(str(n) for n, _ in found)
        raise LaunchError(f"--launch-file {p}: several launches (lines {lines}); keep one per script, "
                          "or pass the one to check after `--`")
    _, command = found[0]
    return [f"{k}={v}" for k, v in assigned.items()] + command
