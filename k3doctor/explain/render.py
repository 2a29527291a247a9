"""Output for ``k3doctor explain``: rich (TTY), plain text, and JSON (schema_version 1).

rich is imported inside the functions that print with it, never at module import. Text from the
input (excerpts, evidence, file names, extracted values) passes through
:func:`k3doctor.termsafe.sanitize` in the text and rich formats, so no control sequence from a log
reaches the terminal; the JSON text has its C1 controls escaped too (:func:`~k3doctor.termsafe.json_safe`).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping

from ..termsafe import json_safe, sanitize
from .results import location
from .scan import Match, Report

__all__ = ["SCHEMA_VERSION", "report_json", "report_text", "report_rich", "code_markdown",
           "print_markdown", "list_json", "list_text", "signature_markdown", "signature_json"]

SCHEMA_VERSION = 1


def _select(codes: Iterable[str]) -> str:
    codes = list(codes)
    return f"k3doctor check --select {','.join(codes)}" if codes else ""


def report_json(report: Report, limit: int | None = None) -> str:
    matches = report.matches if limit is None else report.matches[:limit]
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "sources": report.sources,
        "recognised": report.recognised,
        "check_command": _select(report.related_checks()),
        "matches": [m.to_dict() for m in matches],
    }
    if report.notes:  # only when a cap skipped something (schema 1 readers ignore it)
        doc["notes"] = list(report.notes)
    return json_safe(json.dumps(doc, indent=2, ensure_ascii=False))


def _summary(report: Report) -> str:
    n_err = len(report.errors)
    n_ben = len(report.matches) - n_err
    src = report.sources[0] if len(report.sources) == 1 else f"{len(report.sources)} files"
    return (f"{len(report.matches)} recognised ({n_err} error{'s' * (n_err != 1)}, {n_ben} benign) "
            f"in {src}, {report.lines_scanned:,} lines")


def _match_lines(i: int, m: Match) -> list[tuple[str, str]]:
    """(style, text) lines for one match; style is a rich style name or ''."""
    sig = m.sig
    head_style = "bold green" if m.benign else ("bold red" if sig.tier == "cause" else "bold yellow")
    label = "benign" if m.benign else sig.category
    times = f"  x{m.count}" if m.count > 1 else ""
    out = [(head_style, f"{i}. [{label}] {sig.title}{times}  ({sig.id})")]
    out.append(("", f"   first: {m.first_file}:{m.first_line}"))
    out.append(("", f"   Cause: {m.cause}"))
    out.append(("bold", f"   Fix:   {sig.fix}"))
    if m.evidence:
        out.append(("", "   Evidence:"))
        for name, line, text in m.evidence:
            out.append(("dim", f"     {name}:{line}: {text[:200]}"))
    more = [loc for loc in m.locations if loc not in {location(n, l) for n, l, _ in m.evidence}]
    if more:
        out.append(("dim", f"   Also at: {', '.join(more)}{' ...' if m.count > len(m.locations) else ''}"))
    if len(m.files) > 1:
        out.append(("dim", f"   Seen in {len(m.files)} files"))
    if sig.related_checks:
        out.append(("cyan", f"   Prevent: {_select(sig.related_checks)}"))
    for url in sig.references[:2]:
        out.append(("dim", f"   See: {url}"))
    return out


def _blocks(report: Report, limit: int) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = [("bold", _summary(report))]
    shown = report.matches[:limit]
    for i, m in enumerate(shown, 1):
        lines.append(("", ""))
        lines.extend(_match_lines(i, m))
    if len(report.matches) > limit:
        lines.append(("", ""))
        lines.append(("dim", f"... {len(report.matches) - limit} more (use --max 0 to show all)"))
    cmd = _select(report.related_checks())
    if cmd:
        lines.append(("", ""))
        lines.append(("bold cyan", f"Before the next launch: {cmd}"))
    return [(style, sanitize(text)) for style, text in lines]


def report_text(report: Report, echo: Callable[[str], None], limit: int = 10) -> None:
    if not report.matches:
        echo("nothing recognised (no known error signature and no error line in the input)")
        return
    for _style, text in _blocks(report, limit or len(report.matches)):
        echo(text)


def report_rich(report: Report, limit: int = 10) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    if not report.matches:
        console.print("nothing recognised (no known error signature and no error line in the input)")
        return
    for style, text in _blocks(report, limit or len(report.matches)):
        console.print(Text(text, style=style or ""), soft_wrap=True)


def code_markdown(code: str, cls: Any, signatures: Iterable[Any]) -> str:
    """The long-form doc of one check, plus the runtime errors it prevents."""
    title = cls.title()
    family = cls.family() if hasattr(cls, "family") else ""
    parts = [f"# {code}: {title}", ""]
    if family:
        parts += [f"Family: `{family}`", ""]
    doc = cls.doc() if hasattr(cls, "doc") else ""
    parts += [doc or "_No long-form documentation._", ""]
    sigs = [s for s in signatures if code in s.related_checks]
    if sigs:
        parts += ["## Runtime errors this check catches before launch", ""]
        parts += [f"- `{s.id}`: {s.title}" for s in sigs]
        parts.append("")
    parts += ["## Run it", "", "```", f"k3doctor check --select {code}", "```", ""]
    url = getattr(cls, "url", "")
    if url:
        parts += [f"See: {url}", ""]
    return "\n".join(parts)


def signature_markdown(sig: Any) -> str:
    """The long form of one signature: what it means, what to do, where it comes from."""
    kind = "benign (not an error)" if sig.benign else f"{sig.category}, tier {sig.tier}"
    parts = [f"# {sig.id}: {sig.title}", "", f"Category: `{kind}`", "", "## Cause", "", sig.cause, "",
             "## Fix", "", sig.fix, ""]
    if sig.related_checks:
        parts += ["## Prevent", "", "```", _select(sig.related_checks), "```", ""]
    if sig.examples:
        parts += ["## Looks like", ""] + [f"    {ex.splitlines()[0][:160]}" for ex in sig.examples[:3]] + [""]
    if sig.references:
        parts += ["## Sources", ""] + [f"- {u}" for u in sig.references] + [""]
    return "\n".join(parts)


def signature_json(sig: Any) -> str:
    doc = {
        "schema_version": SCHEMA_VERSION, "id": sig.id, "category": sig.category, "title": sig.title,
        "tier": sig.tier, "benign": sig.benign, "cause": sig.cause, "fix": sig.fix,
        "related_checks": list(sig.related_checks), "references": list(sig.references),
        "examples": list(sig.examples),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


def print_markdown(text: str, tty: bool, echo: Callable[[str], None]) -> None:
    if tty:
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        echo(text.rstrip("\n"))


def list_json(checks: Mapping[str, Any] | None, signatures: Iterable[Any]) -> str:
    doc = {
        "schema_version": SCHEMA_VERSION,
        "checks": None if checks is None else [
            {"code": c, "title": cls.title(), "family": cls.family()} for c, cls in sorted(checks.items())
        ],
        "signatures": [
            {"id": s.id, "category": s.category, "title": s.title, "benign": s.benign,
             "related_checks": list(s.related_checks)} for s in signatures
        ],
    }
    return json.dumps(doc, indent=2)


def list_text(checks: Mapping[str, Any] | None, signatures: Iterable[Any],
              echo: Callable[[str], None]) -> None:
    if checks is None:
        echo("Check codes: unavailable (k3doctor.registry could not be loaded)")
    else:
        echo(f"Check codes ({len(checks)}):  k3doctor explain CODE")
        for code, cls in sorted(checks.items()):
            echo(f"  {code:<8} {cls.title()}")
    sigs = list(signatures)
    echo("")
    echo(f"Known error signatures ({len(sigs)}):  k3doctor explain \"<error text>\"")
    current = None
    for s in sigs:
        if s.category != current:
            current = s.category
            echo(f"  [{current}]")
        rel = f"  -> {','.join(s.related_checks)}" if s.related_checks else ""
        echo(f"    {s.id:<34} {s.title}{rel}")
