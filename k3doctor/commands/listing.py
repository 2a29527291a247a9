"""``k3doctor list`` (the check catalogue) and ``k3doctor version``."""

from __future__ import annotations

import sys

import json

import click

from ..units import GiB
from .options import captured_output, format_option, output_option


@click.command()
@format_option(["rich", "json", "markdown"], "rich")
@output_option()
@click.option("--targets", is_flag=True, help="List the built-in --target GPU profiles instead.")
def command(fmt: str, output: str | None, targets: bool) -> None:
    """List every check (code, family, severity, title), or the --target profiles."""
    with captured_output(output, "the list"):
        if targets:
            _list_targets(fmt)
        else:
            _list_checks(fmt)


def _list_checks(fmt: str) -> None:
    from ..registry import registry

    reg = registry()
    rows = [
        {"code": c, "family": cls.family(), "severity": cls.severity.label, "title": cls.title(),
         "requires": list(cls.requires), "origin": reg.origins[c]}
        for c, cls in reg.checks.items()
    ]
    if fmt == "json":
        click.echo(json.dumps({"schema_version": 1, "checks": rows,
                               "load_errors": [{"entry_point": n, "error": e} for n, e in reg.errors]}, indent=2))
        return
    if fmt == "markdown":
        click.echo("| code | severity | title |\n|---|---|---|")
        for r in rows:
            click.echo(f"| `{r['code']}` | {r['severity']} | {r['title']} |")
        return
    from rich.table import Table

    from ..cli import color_enabled
    from ..reporters.text import make_console

    out = sys.stdout  # click.get_text_stream is deprecated (Click 8.5); CliRunner swaps sys.stdout too
    console = make_console(out, color_enabled(out))
    table = Table(header_style="bold", show_lines=False)
    for col in ("code", "severity", "title", "requires"):
        table.add_column(col, no_wrap=col != "title")
    for r in rows:
        table.add_row(str(r["code"]), str(r["severity"]), str(r["title"]), ", ".join(map(str, r["requires"])))
    console.print(table)
    console.print(f"{len(rows)} checks; `k3doctor explain CODE` shows the long doc.")
    for name, err in reg.errors:
        console.print(f"[red]load error[/red] {name}: {err}")


def _list_targets(fmt: str) -> None:
    from ..targets import TARGETS

    rows = [t.to_dict() for t in TARGETS.values()]
    if fmt == "json":
        click.echo(json.dumps({"schema_version": 1, "targets": rows}, indent=2))
        return
    if fmt == "markdown":
        click.echo("| target | product | memory (GiB) | cc | NVLink | FP8 | FP4 | GPUs/node |")
        click.echo("|---|---|---:|---|---|---|---|---:|")
        for t in rows:
            nvl = "multi-node" if t["mnnvl"] else ("yes" if t["nvlink"] else "no")
            click.echo(f"| `{t['name']}` | {t['product']} | {t['memory_total'] / GiB:.1f} | {t['cc'][0]}.{t['cc'][1]} "
                       f"| {nvl} | {'yes' if t['fp8'] else 'no'} | {'yes' if t['fp4'] else 'no'} | {t['gpus_per_node']} |")
        return
    click.echo(f"{'target':<11} {'product':<24} {'memory':>12} {'cc':>5}  nvlink  fp8  fp4  gpus/node")
    for t in rows:
        gib = t["memory_total"] / GiB
        click.echo(f"{t['name']:<11} {t['product']:<24} {gib:>8.1f} GiB {t['cc'][0]}.{t['cc'][1]:<3}  "
                   f"{'multi' if t['mnnvl'] else ('yes' if t['nvlink'] else 'no'):<6}  "
                   f"{'yes' if t['fp8'] else 'no':<3}  {'yes' if t['fp4'] else 'no':<3}  {t['gpus_per_node']}")


@click.command()
def version_command() -> None:
    """Show the versions of k3doctor, its check families and plugins."""
    from importlib import metadata

    from .. import __version__
    from ..registry import registry

    reg = registry()
    click.echo(f"k3doctor {__version__}")
    families: dict[str, int] = {}
    for code, origin in reg.origins.items():
        families[origin] = families.get(origin, 0) + 1
    for origin, n in sorted(families.items()):
        dist = origin.split(".")[0]
        try:
            ver = metadata.version(dist)
        except metadata.PackageNotFoundError:
            ver = __version__ if dist == "k3doctor" else "?"
        click.echo(f"  {origin:<28} {n:>3} checks  ({dist} {ver})")
    for name, err in reg.errors:
        click.echo(f"  load error {name}: {err}")
    from ..explain.literal_scan import stage1_description

    click.echo(f"  explain --log stage 1: {stage1_description()}")
