"""Option spellings shared by every command, so ``--format``, ``-o/--output``, ``--target`` and
``--gpus`` mean the same everywhere (older spellings stay as aliases: ``--gpu`` for ``--target``,
``--gpus-per-node`` for ``--gpus``, ``--json`` for ``--format json``)."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import click

from ..targets import MAX_GPUS_PER_NODE

__all__ = ["format_option", "output_option", "target_options", "config_options", "apply_config",
           "write_text_output"]

Decorator = Callable[[Any], Any]


def format_option(choices: Sequence[str], default: str, help_text: str = "Output format.") -> Decorator:
    """``--format`` (``-f``) with the command's formats."""
    return click.option("--format", "-f", "fmt", type=click.Choice(list(choices)), default=default,
                        show_default=True, help=help_text)


def output_option(help_text: str = "Write the output to FILE instead of stdout.") -> Decorator:
    """``-o`` / ``--output FILE``."""
    return click.option("--output", "-o", "output", type=click.Path(dir_okay=False), help=help_text)


def target_options(target_help: str, gpus_help: str) -> Decorator:
    """``--target`` (alias ``--gpu``) and ``--gpus`` (alias ``--gpus-per-node``)."""
    def deco(fn: Any) -> Any:
        fn = click.option("--gpus", "--gpus-per-node", "gpus", type=click.IntRange(1, MAX_GPUS_PER_NODE), help=gpus_help)(fn)
        fn = click.option("--target", "--gpu", "target", metavar="GPU", help=target_help)(fn)
        return fn
    return deco


def config_options(fn: Any) -> Any:
    """``--config FILE`` and ``--isolated`` (as ruff has)."""
    fn = click.option("--isolated", is_flag=True,
                      help="Ignore every config file (pyproject.toml [tool.k3doctor], k3doctor.toml).")(fn)
    fn = click.option("--config", "config_file", type=click.Path(dir_okay=False),
                      help="Read settings from FILE instead of the nearest k3doctor.toml / pyproject.toml.")(fn)
    return fn


def apply_config(ctx: click.Context, kw: dict[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """Fill options the command line did not set from the config file; return the effective
    configuration (option values after the merge, and the file they came from).

    ``mapping`` is config key -> keyword name of the command's option. A usage error names the file.
    """
    from ..config import ConfigError, resolve_config

    try:
        config = resolve_config(kw.get("config_file"), bool(kw.get("isolated")))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    from_file: list[str] = []
    for key, name in mapping.items():
        if key not in config.values:
            continue
        source = ctx.get_parameter_source(name) if name in ctx.params else None
        if source is None or source in (click.core.ParameterSource.DEFAULT,
                                        click.core.ParameterSource.DEFAULT_MAP):
            value = config.values[key]
            kw[name] = tuple(value) if isinstance(value, list) else value
            from_file.append(key)
    effective: dict[str, Any] = {"file": str(config.path) if config.path else None, "from_file": from_file}
    for key, name in mapping.items():
        value = kw.get(name)
        if value not in (None, (), [], {}):
            effective[key] = list(value) if isinstance(value, tuple) else value
    if config.ignore_reasons:
        effective["ignore_reasons"] = dict(config.ignore_reasons)
    return effective


def write_text_output(text: str, output: str | None, what: str) -> None:
    """Write ``text`` to ``output`` (or stdout), without trailing spaces on any line."""
    import sys

    clean = "\n".join(line.rstrip() for line in text.split("\n"))
    if not output:
        sys.stdout.write(clean)
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(clean)
    except OSError as exc:
        raise click.UsageError(f"--output {output}: cannot write ({exc.strerror or exc})") from None
    sys.stderr.write(f"k3doctor: wrote {what} to {output}\n")


class captured_output:
    """``with captured_output(output, "plan"):`` sends what the command prints to stdout to
    ``-o FILE`` instead (no line ends in padding); without ``output`` it does nothing."""

    def __init__(self, output: str | None, what: str) -> None:
        self.output = output
        self.what = what
        self._saved: Any = None
        self._buf: Any = None

    def __enter__(self) -> "captured_output":
        if self.output:
            import io
            import sys

            self._saved, self._buf = sys.stdout, io.StringIO()
            sys.stdout = self._buf
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self.output:
            return
        import sys

        sys.stdout = self._saved
        write_text_output(self._buf.getvalue(), self.output, self.what)


def output_to_file(what: str, help_text: str = "Write the output to FILE instead of stdout.") -> Decorator:
    """Add ``-o/--output FILE`` to a command whose body prints to stdout (decorate the callback,
    above ``click.pass_context``)."""
    import functools

    def deco(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            output = kwargs.pop("output", None)
            with captured_output(output, what):
                return fn(*args, **kwargs)
        return output_option(help_text)(wrapper)
    return deco
