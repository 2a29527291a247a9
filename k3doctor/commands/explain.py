"""``k3doctor explain``: error text or rank logs -> root cause and fix; CODE -> the check's doc.

Usage::

    k3doctor explain "RuntimeError: Gloo connectFullMesh failed ..."   # pasted text
    k3doctor explain - < traceback.txt                                   # stdin
    k3doctor explain --log node0/rank*.log node1/rank*.log               # many logs, streamed
    k3doctor explain GPU001                                              # a check's long doc
    k3doctor explain gloo-interface-not-found                            # a signature's cause/fix
    k3doctor explain --list                                              # codes and signatures

Exit codes: 0 something recognised, 1 nothing recognised (or unknown code), 2 usage error.
Only click is imported at module load; the matcher and rich load when the command runs.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

import click

from .options import output_to_file

__all__ = ["command"]

_CODE_LIKE = re.compile(r"^[A-Za-z]{2,4}\d{3}$")
#: a signature id: kebab-case with at least one hyphen (``gloo-interface-not-found``)
_ID_LIKE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)+$")


def _closest(name: str, names: list[str], n: int, cutoff: float) -> list[str]:
    """The known names nearest to ``name`` (spelling first, then shared kebab-case words)."""
    import difflib

    close = difflib.get_close_matches(name, sorted(names), n=n, cutoff=cutoff)
    if not close and "-" in name:  # 'nccl-timeout' -> nccl-watchdog-timeout, ...
        words = set(name.split("-"))
        ranked = sorted(names, key=lambda i: (-len(words & set(i.split("-"))), i))[:n]
        close = [i for i in ranked if words & set(i.split("-"))]
    return close


def _load_checks() -> dict[str, Any] | None:
    """code -> Check class from the team registry, or None when it is not available."""
    try:
        from k3doctor.registry import load_checks  # type: ignore[import-not-found]
    except ImportError:
        return None
    return dict(load_checks())


def _is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _explain_code(code: str, fmt: str) -> int:
    from k3doctor.explain import load_kb
    from k3doctor.explain.render import code_markdown, print_markdown

    checks = _load_checks()
    if checks is None:
        raise click.UsageError("check codes are unavailable: k3doctor.registry could not be imported")
    upper = code.upper()
    if upper not in checks:
        close = _closest(upper, list(checks), n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        click.echo(f"unknown check code {upper!r}.{hint} (k3doctor explain --list shows all codes)", err=True)
        return 1
    cls = checks[upper]
    if fmt == "json":
        import json

        sigs = [s.id for s in load_kb() if upper in s.related_checks]
        click.echo(json.dumps({"schema_version": 1, "code": upper, "title": cls.title(),
                               "family": cls.family(), "doc": cls.doc(), "signatures": sigs}, indent=2))
        return 0
    text = code_markdown(upper, cls, load_kb())
    print_markdown(text, tty=(fmt == "rich" or (fmt == "auto" and _is_tty())), echo=click.echo)
    return 0


def _explain_signature(sid: str, fmt: str) -> int:
    """The cause, fix and sources of one signature id (or of a fallback category)."""
    from k3doctor.explain import load_kb
    from k3doctor.explain.fallback import fallback_signatures
    from k3doctor.explain.render import print_markdown, signature_json, signature_markdown

    by_id = {s.id: s for s in load_kb()} | fallback_signatures()
    sig = by_id.get(sid)
    if sig is None:
        close = _closest(sid, list(by_id), n=5, cutoff=0.55)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        click.echo(f"unknown signature id {sid!r}.{hint} (k3doctor explain --list shows all ids; "
                   f"to explain it as error text, pass it with other words or on stdin: "
                   f"echo '{sid}' | k3doctor explain -)", err=True)
        return 1
    if fmt == "json":
        click.echo(signature_json(sig))
        return 0
    print_markdown(signature_markdown(sig), tty=(fmt == "rich" or (fmt == "auto" and _is_tty())),
                   echo=click.echo)
    return 0


_PASTE_LIMIT = 1 << 20  # stdin up to this size is pasted text (every line examined)


def _explain_stdin() -> Any:
    """Small stdin is treated like pasted text; a large one is streamed like a log file (capped)."""
    import time

    from k3doctor.explain import Scanner
    from k3doctor.explain import source
    from k3doctor.explain.results import _Aggregator

    agg = _Aggregator()
    chunks = source.stdin_chunks(agg.notes)
    head: list[bytes] = []
    size = 0
    for chunk in chunks:
        if chunk is None:
            break
        head.append(chunk)
        size += len(chunk)
        if size >= _PASTE_LIMIT:
            break
    else:
        return Scanner().explain_bytes(b"".join(head), "<stdin>", prefilter=False)
    import itertools

    scanner, t0 = Scanner(), time.perf_counter()
    scanner.scan_chunks(itertools.chain(head, chunks), "<stdin>", agg, 0, prefilter=True)
    return agg.report(["<stdin>"], time.perf_counter() - t0, scanner.fallback)


#: Logs larger than this get a progress bar on an interactive stderr (about a second of scanning).
PROGRESS_MIN_BYTES = 128 * 1024 * 1024


def _scan_with_progress(explain_paths: Any, paths: list[str]) -> Any:
    """Run the log scan, with a bytes/rate/ETA bar on stderr for big logs on a terminal."""
    import os
    import sys

    total = sum(os.path.getsize(p) for p in paths if p != "-" and os.path.isfile(p))
    if total < PROGRESS_MIN_BYTES or "-" in paths or not sys.stderr.isatty():
        return explain_paths(paths)
    from ..ckpt.progress import rich_progress

    with rich_progress("scanning logs") as callback:
        return explain_paths(paths, progress=lambda done: callback(done, total))


def _output(report: Any, fmt: str, limit: int) -> int:
    from k3doctor.explain.render import report_json, report_rich, report_text
    from k3doctor.termsafe import sanitize

    for note in report.notes:
        click.echo(f"note: {sanitize(note)}", err=True)
    if fmt == "json":
        click.echo(report_json(report, None if limit == 0 else limit))
    elif fmt == "rich" or (fmt == "auto" and _is_tty()):
        report_rich(report, limit)
    else:
        report_text(report, click.echo, limit)
    return 0 if report.recognised else 1


def _read_or_fail(read: Any) -> Any:
    """``read()``, with an input that cannot be read turned into a one-line usage error (exit 2)."""
    from k3doctor.boundedio import BoundedReadError
    from k3doctor.termsafe import sanitize

    try:
        return read()
    except BoundedReadError as exc:
        raise click.UsageError(sanitize(str(exc))) from None


@click.command(
    "explain",
    context_settings={"help_option_names": ["-h", "--help"]},
    short_help="Explain an error, a set of rank logs, or a check code.",
)
@click.argument("args", nargs=-1)
@click.option("--log", "logs", multiple=True, metavar="FILE",
              help="Rank log(s) to scan (streamed). Positional arguments after --log are logs too.")
@click.option("--list", "list_", is_flag=True, help="List check codes and known error signatures.")
@click.option("--format", "fmt", type=click.Choice(["auto", "rich", "text", "json"]), default="auto",
              show_default=True, help="Output format (auto: rich on a terminal, text otherwise).")
@click.option("--max", "limit", type=click.IntRange(min=0), default=10, show_default=True,
              help="Matches to show (0: all).")
@click.option("--jobs", type=click.IntRange(1, 64), default=None, metavar="N",
              help="Processes per --log file: 1 scans it in one; N cuts it into N ranges that forked "
                   "helpers read at once (default, for a file of 64 MiB or more: one per usable CPU, "
                   "at most 8, each range at least 32 MiB).")
@output_to_file("the explanation")
@click.pass_context
def command(ctx: click.Context, args: tuple[str, ...], logs: tuple[str, ...], list_: bool,
            fmt: str, limit: int, jobs: int | None) -> None:
    """Explain a failure: pasted TEXT, '-' for stdin, --log FILE..., a check CODE or a signature ID.

    Recognised failures are ranked: the earliest root cause first, symptoms (NCCL watchdog
    timeouts, waiting ranks) after it, harmless lines last and labelled benign. Each match
    names the preflight check that would have caught it (k3doctor check --select ...).
    """
    if list_:
        if args or logs:
            raise click.UsageError("--list takes no other arguments")
        from k3doctor.explain import load_kb
        from k3doctor.explain.render import list_json, list_text

        checks = _load_checks()
        if fmt == "json":
            click.echo(list_json(checks, load_kb()))
        else:
            list_text(checks, load_kb(), click.echo)
        ctx.exit(0)
    if logs:
        from k3doctor.explain import explain_paths

        paths = list(logs) + list(args)
        scan = functools.partial(explain_paths, jobs=jobs)
        ctx.exit(_output(_read_or_fail(lambda: _scan_with_progress(scan, paths)), fmt, limit))
    if not args:
        raise click.UsageError("give error TEXT, '-' to read stdin, --log FILE..., a check CODE, or --list")
    if len(args) == 1 and _CODE_LIKE.match(args[0]):
        ctx.exit(_explain_code(args[0], fmt))
    if len(args) == 1 and _ID_LIKE.match(args[0]):
        ctx.exit(_explain_signature(args[0], fmt))
    if args == ("-",):
        ctx.exit(_output(_read_or_fail(_explain_stdin), fmt, limit))
    from k3doctor.explain import explain_text

    ctx.exit(_output(explain_text(" ".join(args) if len(args) > 1 else args[0]), fmt, limit))
