"""``k3doctor env``: print the exports that fix this node at run time.

* NIC pins from the interface that routes to the head (``--dist-init-addr``, else
  ``MASTER_ADDR[:MASTER_PORT]``): ``NCCL_SOCKET_IFNAME==<if>`` (exact form, so ``eth1`` cannot
  also match ``eth10``), ``GLOO_SOCKET_IFNAME=<if>``, ``SGLANG_HOST_IP``/``VLLM_HOST_IP``.
* Node-local, per-rank JIT cache directories for every cache that sits on a shared filesystem
  (all of them with ``--all-caches``): ``<root>/k3doctor-<user>/rank<N>/<cache>``, ``N`` from the
  launcher's rank variable (``LOCAL_RANK``, ``RANK``, ``SLURM_PROCID``, … or ``--rank-var``).

The output is safe for ``eval "$(k3doctor env)"`` whatever the interface names contain: values
are single-quoted for the chosen shell; notes are ``#`` comments; problems go to stderr.
Exit status: 0, or 1 when the interface could not be determined (the cache exports are still
printed), 2 for bad options.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from .options import format_option, output_option

__all__ = ["command", "build"]


def _login_name() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return str(os.getuid())


def build(*, dist_init_addr: str | None, engine: str, cache_root: str | None, rank_var: str | None,
          all_caches: bool, sys_root: str = "/sys", proc_root: str = "/proc",
          environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Read the node (:func:`~k3doctor.probes.node_env.read_node`, every wait bounded), then decide
    the exports from those readings (:func:`~k3doctor.hostenv.exports.node_exports`)."""
    from ..hostenv.exports import cache_dirs_to_read, node_exports
    from ..probes.node_env import read_node

    env = dict(os.environ if environ is None else environ)
    user = env.get("USER") or env.get("LOGNAME") or _login_name()
    paths = [c.path for c in cache_dirs_to_read(env, engine, user)]
    node = read_node(dist_init_addr=dist_init_addr, env=env, cache_paths=paths, cache_root=cache_root,
                     sys_root=sys_root, proc_root=proc_root)
    return node_exports(node, env=env, engine=engine, user=user, cache_root=cache_root, rank_var=rank_var,
                        all_caches=all_caches)


def _rank_var_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--rank-var must name an environment variable (letters, digits, ``_``; not a digit first)."""
    import re

    if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", value):
        raise click.BadParameter(f"{value!r} is not an environment variable name (e.g. LOCAL_RANK, SLURM_LOCALID)")
    return value


@click.command("env")
@click.option("--dist-init-addr", envvar="K3DOCTOR_DIST_INIT_ADDR", metavar="HOST:PORT",
              help="The head (node rank 0) address; default MASTER_ADDR[:MASTER_PORT].")
@click.option("--shell", "shell", type=click.Choice(["sh", "bash", "zsh", "fish"]),
              help="Syntax of the output (default: from $SHELL, else sh).")
@format_option(["shell", "json"], "shell")
@output_option("Write the exports to FILE (to `source` later) instead of stdout.")
@click.option("--engine", type=click.Choice(["sglang", "vllm", "any"]), default="any", show_default=True,
              help="Which engine's variables to print (host IP, DeepGEMM cache).")
@click.option("--cache-root", metavar="DIR", help="Node-local base for the cache dirs (default: $TMPDIR or /tmp).")
@click.option("--rank-var", metavar="VAR", callback=_rank_var_name, help="Variable holding this process's rank (default: LOCAL_RANK, RANK, SLURM_PROCID, …).")
@click.option("--all-caches", is_flag=True, help="Pin every JIT cache, not only those on a shared filesystem.")
@click.option("--sys-root", default="/sys", hidden=True)
@click.option("--proc-root", default="/proc", hidden=True)
def command(dist_init_addr: str | None, shell: str | None, fmt: str, output: str | None, engine: str,
            cache_root: str | None, rank_var: str | None, all_caches: bool, sys_root: str, proc_root: str) -> None:
    """Print the exports that fix this node: NIC pins and per-rank node-local cache dirs.

    Use as: eval "$(k3doctor env --dist-init-addr HEAD:PORT)"
    """
    from .options import captured_output

    with captured_output(output, "the exports"):
        _env(dist_init_addr, shell, fmt, engine, cache_root, rank_var, all_caches, sys_root, proc_root)


def _env(dist_init_addr: str | None, shell: str | None, fmt: str, engine: str, cache_root: str | None,
         rank_var: str | None, all_caches: bool, sys_root: str, proc_root: str) -> None:
    from ..hostenv.shell import SHELLS
    from ..reporters.exports import render_exports

    if shell is None:
        guess = os.path.basename(os.environ.get("SHELL", ""))
        shell = guess if guess in SHELLS else "sh"
    res = build(dist_init_addr=dist_init_addr, engine=engine, cache_root=cache_root, rank_var=rank_var,
                all_caches=all_caches, sys_root=sys_root, proc_root=proc_root)
    text = render_exports(res, shell, fmt)
    if fmt == "json":
        click.echo(text, nl=False)
    else:
        sys.stdout.write(text)
    for e in res["errors"]:
        click.echo(f"k3doctor env: {e}", err=True)
    if res["interface"] is None:
        sys.exit(1)
