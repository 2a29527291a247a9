"""Make text that came from input safe to print on a terminal.

A log, a file name or a pasted error may carry terminal control sequences: colour (CSI), a window
title (OSC 0), a clipboard write (OSC 52), a hyperlink (OSC 8), device control strings (DCS), or
lone control characters (BEL, backspace, carriage return, the 8-bit C1 controls). Printed as they
are, they act on the reader's terminal. :func:`sanitize` removes every escape sequence whole (its
introducer, parameters and string body) and writes every other C0/C1 control character, and DEL,
as a visible ``\\xNN`` escape. Newline and tab are kept. The result contains no byte a terminal
would act on.

:func:`json_safe` is for JSON text printed with ``ensure_ascii=False``: ``json`` escapes C0
controls but passes DEL and C1 (U+0080..U+009F) through raw; it writes those as ``\\u00NN``, which
every JSON parser reads back as the same character.

Both are linear in the text (no nested or backtracking quantifiers) and import nothing heavy.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

__all__ = ["sanitize", "json_safe", "has_control", "safe_console"]

#: A whole escape sequence: 7-bit and 8-bit CSI; OSC/DCS/SOS/PM/APC strings up to their terminator
#: (BEL or ST), the next ESC, the end of the line or of the text; any other ESC sequence.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x9c|\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
)
#: A control character left after the sequences are gone (C0 but tab and newline, DEL, C1).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_C1_OR_DEL = re.compile(r"[\x7f-\x9f]")


def _escape(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()):02x}"


def has_control(text: str) -> bool:
    """True when ``text`` holds a character a terminal would act on (other than tab and newline)."""
    return _CONTROL.search(text) is not None


def sanitize(text: str) -> str:
    """``text`` with escape sequences removed and other control characters shown as ``\\xNN``."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_escape, _SEQUENCE.sub("", text))


def json_safe(doc: str) -> str:
    """JSON text with DEL and C1 controls written as ``\\u00NN`` escapes (same parsed value)."""
    if not _C1_OR_DEL.search(doc):
        return doc
    return _C1_OR_DEL.sub(lambda m: f"\\u{ord(m.group()):04x}", doc)


def safe_console(**kwargs: Any) -> Any:
    """A rich ``Console`` (same arguments) that sanitizes the text of everything it prints, while
    keeping its own styling: the text of each rendered segment goes through :func:`sanitize` just
    before rich adds its colour codes, so a model name, a tensor name or a log line that carries an
    escape sequence is shown, never acted on, even on a colour terminal."""
    return _safe_console_class()(**kwargs)


_SAFE_CONSOLE: list[Any] = []


def _safe_console_class() -> Any:
    if _SAFE_CONSOLE:
        return _SAFE_CONSOLE[0]
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            return super()._render_buffer(
                seg if seg.control or not has_control(seg.text) else Segment(sanitize(seg.text), seg.style)
                for seg in buffer
            )

    _SAFE_CONSOLE.append(SafeConsole)
    return SafeConsole

