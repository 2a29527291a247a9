"""``k3doctor manifest create DIR -o m.json``: record size + sha256 of every checkpoint file on the
download node, for ``k3doctor check --model DIR --manifest m.json`` on air-gapped nodes."""

from __future__ import annotations

import os

import click

from ..exitcodes import ExitCode
from ..reporters import REPORTERS
from .options import format_option, output_option

__all__ = ["command"]


class BadInput(click.ClickException):
    """Unusable input (directory, file): a one-line error and exit code 2, like a usage error."""

    exit_code = int(ExitCode.USAGE)


@click.group("manifest")
def command() -> None:
    """Checkpoint manifests (sha256 of every file) for offline verification."""


@command.command("create")
@click.argument("model_dir", type=click.Path(file_okay=False, exists=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Manifest file to write (outside the model directory).")
@click.option("--jobs", type=click.IntRange(1, 256), help="Files hashed in parallel (default: CPUs).")
@click.option("--hf-repo", help="Repo id recorded in the manifest (default: from an HF cache path).")
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def create(model_dir: str, output: str, jobs: int | None, hf_repo: str | None, no_progress: bool) -> None:
    """Hash every file of MODEL_DIR and write the manifest to -o FILE.

    \b
    Download node:   k3doctor manifest create /models/Kimi-K3 -o kimi-k3.manifest.json
    Other nodes:     k3doctor check --model /models/Kimi-K3 --manifest kimi-k3.manifest.json
    """
    import json
    import sys

    from ..ckpt.manifest import ManifestError, create_manifest
    from ..ckpt.progress import rich_progress

    out_abs = os.path.realpath(output)
    dir_abs = os.path.realpath(model_dir)
    if out_abs == dir_abs or out_abs.startswith(dir_abs.rstrip(os.sep) + os.sep):
        raise click.UsageError(f"{output}: write the manifest outside the model directory "
                               f"(it would change the directory it describes), e.g. -o ./manifest.json")
    show = not no_progress and sys.stderr.isatty()
    try:
        with rich_progress("sha256", enabled=show) as cb:
            doc = create_manifest(model_dir, jobs=jobs, repo=hf_repo, progress=cb)
    except ManifestError as exc:  # bad input (not a directory, unreadable): one line, exit 2
        raise BadInput(str(exc)) from None
    try:
        with open(output, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
    except OSError as exc:
        raise BadInput(f"{output}: cannot write ({exc.strerror or exc})") from None
    total = sum(r["size"] for r in doc["files"].values())
    click.echo(f"{output}: {len(doc['files'])} files, {total} bytes, repo {doc.get('repo') or '-'}", err=True)


@command.command("verify")
@click.argument("model_dir", type=click.Path(file_okay=False, exists=False))
@click.argument("manifest_path", metavar="MANIFEST", type=click.Path(dir_okay=False, exists=False))
@click.option("--jobs", type=click.IntRange(1, 256), help="Files hashed in parallel (default: CPUs).")
@click.option("--hf-repo", help="Repo id of this checkpoint (refuses a manifest made for another repo).")
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
@format_option(list(REPORTERS), "rich", "Report format (the formats of `k3doctor check`).")
@output_option("Write the report to FILE instead of stdout.")
@click.option("-v", "--verbose", is_flag=True, help="Also list the checks that passed.")
def verify(model_dir: str, manifest_path: str, jobs: int | None, hf_repo: str | None, no_progress: bool,
           fmt: str, output: str | None, verbose: bool) -> None:
    """Check MODEL_DIR against MANIFEST (sizes, then sha256 of every file); exit 1 on any mismatch.

    Same as `k3doctor check --model MODEL_DIR --manifest MANIFEST --select CKPT001,CKPT009`: the
    same checks through the same runner and reporters, without the other checks.
    """
    import sys

    from ..checks.ckpt import CHECKS, CKPT001, CKPT009
    from ..ckpt.progress import rich_progress
    from ..ckpt.scan import scan_checkpoint
    from ..facts import Facts
    from ..runner import run_checks
    from .run_check import emit_report

    show = not no_progress and sys.stderr.isatty()
    with rich_progress("sha256", enabled=show) as cb:
        fact = scan_checkpoint(model_dir, manifest=manifest_path, jobs=jobs, repo=hf_repo,
                               repo_source="option" if hf_repo else None, progress=cb)
    facts = Facts({"model": fact}, source=f"manifest {manifest_path}")
    report = run_checks({c.code: c for c in CHECKS}, [CKPT001.code, CKPT009.code], facts)
    emit_report(report, fmt, output, verbose)
    deep = fact.get("deep") or {}
    click.echo(f"{deep.get('verified', 0)} of {deep.get('files', 0)} files verified, {deep.get('mismatched', 0)} "
               f"mismatched, {deep.get('bytes', 0)} bytes in {deep.get('seconds', 0)} s", err=True)
    sys.exit(report.exit_code)
