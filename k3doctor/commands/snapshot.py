"""``k3doctor snapshot``: probe this node and write its facts as JSON (schema_version 1)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from .check import DashDashCommand, common_fact_options

if TYPE_CHECKING:  # pragma: no cover
    from ..facts import Facts


@click.command(cls=DashDashCommand)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE (default: stdout).")
@common_fact_options
@click.option("--only", multiple=True, help="Probe only these facts (gpu, net, mounts, …).")
@click.argument("launch", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def command(ctx: click.Context, output: str | None, model_dir: str | None, env_file: str | None,
            probe_timeout: float, only: tuple[str, ...], launch: tuple[str, ...]) -> None:
    """Probe this node and write its facts as JSON, for `check --snapshot` in CI or on another machine.

    A launch command after `--` is stored with the facts.
    """
    from .. import __version__
    from ..facts import PROBES, snapshot_document
    from ..session import InputError, SessionOptions, build_facts

    unknown = [n for n in only if n not in PROBES]
    if unknown:
        raise click.UsageError(f"--only {', '.join(unknown)}: unknown fact; known: {', '.join(PROBES)}")
    opts = SessionOptions(launch=launch, launch_given=ctx.meta.get("k3doctor.dashdash", False), env_file=env_file,
                          probe_timeout=probe_timeout,
                          options={"model_dir": model_dir} if model_dir else {})
    try:
        facts = build_facts(opts)
    except InputError as exc:
        raise click.UsageError(str(exc)) from None
    names = list(only) or [n for n in PROBES if n != "model" or model_dir or facts.known().get("launch")]
    _collect(facts, names)
    doc = snapshot_document(facts, __version__)
    text = json.dumps(doc, indent=1, sort_keys=False, default=str) + "\n"
    if output:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise click.UsageError(f"--output {output}: cannot write ({exc.strerror or exc})") from None
        errs = doc["probe_errors"]
        sys.stderr.write(f"k3doctor: wrote {len(doc['facts'])} facts to {output}"
                         + (f"; probe errors: {', '.join(errs)}" if errs else "") + "\n")
    else:
        click.echo(text, nl=False)


def _collect(facts: "Facts", names: list[str]) -> None:
    from ..facts import ProbeError
    from ..model import Skip

    interactive = sys.stderr.isatty()
    if interactive:
        from rich.progress import Progress

        with Progress(transient=True) as progress:
            task = progress.add_task("probing", total=len(names))
            for name in names:
                progress.update(task, description=f"probing {name}")
                try:
                    facts.get(name)
                except (ProbeError, Skip):
                    pass
                progress.advance(task)
    else:
        for name in names:
            try:
                facts.get(name)
            except (ProbeError, Skip):
                pass
