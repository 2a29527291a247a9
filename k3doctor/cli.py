"""Command-line interface. Thin: parse options, build facts, run, hand the report to a reporter.

Only ``click`` is imported at start-up; every command imports what it needs when it runs, so
``k3doctor --help`` stays fast and never imports torch.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Sequence

import click

from . import __version__

#: command name -> "module:attribute" (imported when the command is used or listed in --help).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("k3doctor.commands.check:command", "Run the preflight checks (live, --snapshot or --target)."),
    "snapshot": ("k3doctor.commands.snapshot:command", "Probe this node and write its facts as JSON."),
    "demo": ("k3doctor.commands.demo:command", "Run the seed's 2×8 H200 Kimi-K3 deployment statically."),
    "explain": ("k3doctor.commands.explain:command", "Explain an error text, log files, or a check CODE."),
    "plan": ("k3doctor.commands.plan:command", "Project per-rank GPU memory for a model and parallel plan."),
    "env": ("k3doctor.commands.env:command", "Print the exports that fix this node (NIC pins, cache dirs)."),
    "manifest": ("k3doctor.commands.manifest:command", "Create or verify a sha256 manifest of a checkpoint."),
    "list": ("k3doctor.commands.listing:command", "List every check: code, severity, title."),
    "version": ("k3doctor.commands.listing:version_command", "Show versions of k3doctor and its plugins."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when used; --help shows their short help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(LAZY_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in LAZY_COMMANDS:
            return None
        if _is_help_listing():  # --help lists names and short help without importing the commands
            return click.Command(name, help=LAZY_COMMANDS[name][1], short_help=LAZY_COMMANDS[name][1])
        module, _, attr = LAZY_COMMANDS[name][0].partition(":")
        try:
            cmd = getattr(importlib.import_module(module), attr)
        except ImportError as exc:
            raise click.ClickException(f"command {name!r} is not available in this build: {exc}") from None
        return cmd  # type: ignore[no-any-return]


_HELP_LISTING = False


def _is_help_listing() -> bool:
    return _HELP_LISTING


class _Main(LazyGroup):
    """The top-level group. A usage error quotes what the user typed (an option, a value, a path),
    and that text may carry terminal escapes: the message is sanitised before click prints it."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        _tolerant_streams()
        return super().main(*args, **kwargs)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            raise _safe(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            raise _safe(exc) from None
        except Exception as exc:
            from .exitcodes import ExitCode
            from .explain.kb import KBError  # (imported only on this failure path)

            if not isinstance(exc, KBError):
                raise
            # a packaged data file that does not parse (a damaged install or an edited checkout):
            # name it and the fix, no traceback
            click.echo(f"k3doctor: the installed knowledge base is damaged: {exc}. Reinstall k3doctor "
                       "(pip install --force-reinstall k3doctor) or, in a checkout, restore the file "
                       "(git checkout -- k3doctor/explain/kb/).", err=True)
            ctx.exit(int(ExitCode.CRASHED))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        global _HELP_LISTING
        _HELP_LISTING = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            _HELP_LISTING = False


def _tolerant_streams() -> None:
    """stdout/stderr keep their encoding but write what it cannot encode as ``\\uXXXX``: under
    ``PYTHONIOENCODING=ascii`` or a Latin-1 terminal, a report's "—" or "×" must not end the run
    with a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "strict") == "strict":
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a detached or closed stream: leave it
                pass


def _safe(exc: click.ClickException) -> click.ClickException:
    from .termsafe import sanitize

    exc.message = sanitize(exc.message)  # type: ignore[misc]  # click marks it Final; the text is what we fix
    return exc


def _exit_code_epilog() -> str:
    from .exitcodes import EXIT_CODE_MEANINGS

    rows = "\n".join(f"  {int(code)}  {text.replace('`', '')}" for code, text in EXIT_CODE_MEANINGS.items())
    return "\b\nExit codes (precedence 3, 1, 4):\n" + rows


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=_exit_code_epilog())
@click.version_option(__version__, "-V", "--version", prog_name="k3doctor")
def main() -> None:
    """k3doctor: preflight diagnostics for multi-node MoE serving (Kimi-K3, DeepSeek-V3, …)
    with SGLang or vLLM on NVIDIA GPUs.

    Start with `k3doctor demo`, then `k3doctor check -- <your launch command>`.
    """


def run(argv: Sequence[str] | None = None) -> int:
    """Entry point that returns the exit code instead of exiting (for tests and benchmarks)."""
    try:
        rv = main.main(args=list(argv) if argv is not None else None, prog_name="k3doctor", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return int(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    return int(rv) if isinstance(rv, int) else 0


def color_enabled(stream: Any) -> bool:
    """Colour only on a TTY, never with NO_COLOR set (https://no-color.org); FORCE_COLOR forces it."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
