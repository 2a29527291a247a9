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

import json
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


def _pick_root(requested: str | None, mounts: list[dict[str, Any]], env: dict[str, str]) -> tuple[str, list[str]]:
    from ..probes.fs import inspect_path

    notes: list[str] = []
    if requested:
        info = inspect_path(requested, mounts, 3.0)
        if info["fs_class"] == "network":
            notes.append(f"--cache-root {requested} is on {info['fstype']}: ranks of other nodes may share it")
        return requested, notes
    options = [env.get("TMPDIR") or "", "/tmp", "/var/tmp", "/dev/shm"]
    for root in [o for o in options if o.startswith("/")]:
        info = inspect_path(root, mounts, 3.0)
        if info["fs_class"] != "network" and info["exists"] and info["writable"] and not info["error"]:
            return root, notes
        why = info["error"] or (f"on {info['fstype']}" if info["fs_class"] == "network" else "missing or not writable")
        notes.append(f"{root} skipped: {why}")
    return "/tmp", notes + ["no node-local writable directory found; using /tmp"]


def build(*, dist_init_addr: str | None, engine: str, cache_root: str | None, rank_var: str | None,
          all_caches: bool, sys_root: str = "/sys", proc_root: str = "/proc",
          environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Compute the exports (pure of printing; reads the machine through the probes' helpers)."""
    env = dict(os.environ if environ is None else environ)
    exports: dict[str, str] = {}
    notes: list[str] = []
    errors: list[str] = []
    result: dict[str, Any] = {"interface": None, "source_ip": None, "head": None}
    iface, src = _pin_interface(dist_init_addr, engine, sys_root, proc_root, env, exports, notes, errors, result)
    result["interface"], result["source_ip"] = iface, src
    cache_info = _cache_exports(engine, cache_root, rank_var, all_caches, proc_root, env, exports, notes)
    result.update(exports=exports, notes=notes, errors=errors, **cache_info)
    return result


def _pin_interface(dist_init_addr: str | None, engine: str, sys_root: str, proc_root: str, env: dict[str, str],
                   exports: dict[str, str], notes: list[str], errors: list[str],
                   result: dict[str, Any]) -> tuple[str | None, str | None]:
    """The interface to pin (the one that routes to the head, else the only candidate, else the
    default route) and its source address; adds the NCCL/Gloo/engine host-IP exports."""
    from ..hostenv.netinfo import candidates
    from ..probes.net import default_route_interface, local_addresses, scan_interfaces

    # A recorded --sys-root tree is another machine: do not mix in this host's addresses.
    live = os.path.realpath(sys_root) == "/sys"
    interfaces, scan_errors = scan_interfaces(sys_root) if live else scan_interfaces(sys_root, addrs={}, stats={})
    notes += scan_errors
    by_name = {str(i["name"]): i for i in interfaces}
    addr = dist_init_addr
    if not addr and env.get("MASTER_ADDR"):
        addr = env["MASTER_ADDR"] + (f":{env['MASTER_PORT']}" if env.get("MASTER_PORT") else "")
    iface, src = _route_to_head(addr, local_addresses(interfaces), proc_root, notes, errors, result) if addr else (None, None)
    if iface is None and not errors:
        cands = candidates(interfaces)
        if len(cands) == 1:
            iface = str(cands[0]["name"])
            notes.append(f"{iface} is the only candidate interface (no usable head address)")
        else:
            default_if = default_route_interface(proc_root)
            if default_if in by_name:
                iface = default_if
                notes.append(f"{iface} carries the default route (no usable head address; pass "
                             "--dist-init-addr HEAD:PORT to pick the interface that reaches the head)")
            else:
                errors.append("cannot tell which interface to pin: give --dist-init-addr HEAD:PORT "
                              f"(candidates: {', '.join(str(c['name']) for c in cands) or 'none'})")
    if iface:
        itf = by_name.get(iface, {})
        if src is None:
            src = next(iter(itf.get("ipv4") or []), None)
        exports["NCCL_SOCKET_IFNAME"] = "=" + iface
        exports["GLOO_SOCKET_IFNAME"] = iface
        if src:
            if engine in ("sglang", "any"):
                exports["SGLANG_HOST_IP"] = src
            if engine in ("vllm", "any"):
                exports["VLLM_HOST_IP"] = src
    return iface, src


def _route_to_head(addr: str, local: dict[str, str], proc_root: str, notes: list[str], errors: list[str],
                   result: dict[str, Any]) -> tuple[str | None, str | None]:
    """(interface, source IP) of the route from this node to the head ``addr`` (HOST:PORT)."""
    from ..hostenv.netinfo import is_loopback_ip, parse_hostport
    from ..probes.net import resolve_host, route_table_interface, source_route

    host, port, err = parse_hostport(addr)
    result["head"] = {"addr": addr, "host": host or None, "port": port}
    resolved: list[str] = []
    if not err:
        resolved, err = resolve_host(host)
    if err:
        errors.append(f"head {addr!r}: {err}")
        return None, None
    if not resolved:
        return None, None
    target = next((ip for ip in resolved if ":" not in ip), resolved[0])
    result["head"]["ip"] = target
    src, err = source_route(target)
    if src is None:
        errors.append(f"head {addr!r}: {err}")
        return None, None
    if is_loopback_ip(src):
        notes.append(f"the head {host} is this node's loopback ({target}); not pinning lo — "
                     "use the head's cluster IP in --dist-init-addr")
        return None, None
    iface = local.get(src) or route_table_interface(target, proc_root)
    if iface:
        notes.append(f"{iface} routes to the head {host} ({target}) from {src}")
    else:
        notes.append(f"the route to {target} leaves from {src}, which no listed interface carries")
    return iface, src


def _cache_exports(engine: str, cache_root: str | None, rank_var: str | None, all_caches: bool, proc_root: str,
                   env: dict[str, str], exports: dict[str, str], notes: list[str]) -> dict[str, Any]:
    """Per-rank node-local directories for the JIT caches that sit on a network filesystem (all of
    them with ``all_caches``); returns the rank and cache facts for the result."""
    from ..hostenv.caches import local_cache_dir, rank_key, resolve_caches
    from ..probes.fs import inspect_path, read_mounts

    mounts = read_mounts(proc_root)["mounts"]
    if rank_var:
        value = env.get(rank_var, "")
        if value.strip().isdigit():
            rvar, rank, problems = rank_var, str(int(value)), []
        else:
            rvar, rank, problems = rank_var, "0", [f"--rank-var {rank_var}={value!r} is not an integer; using 0"]
    else:
        rvar, rank, problems = rank_key(env)
    notes += problems
    root, root_notes = _pick_root(cache_root, mounts, env)
    notes += root_notes
    user = env.get("USER") or env.get("LOGNAME") or _login_name()
    caches = []
    for cache in resolve_caches(env, engine=None if engine == "any" else engine, user=user):
        if not cache.jit:
            continue
        info = inspect_path(cache.path, mounts, 3.0) if cache.path else {"fs_class": "unknown", "error": "no path"}
        shared = info["fs_class"] == "network" or bool(info.get("error"))
        caches.append({"key": cache.key, "variable": cache.variable, "path": cache.path,
                       "fstype": info.get("fstype"), "shared": shared})
        if shared or all_caches:
            exports[cache.variable] = local_cache_dir(root, user, rank, cache.key)
            if shared:
                notes.append(f"{cache.variable}: {cache.path or '?'} is on {info.get('fstype') or info.get('error')}; "
                             "moved to a node-local per-rank directory")
    return {"rank_var": rvar or None, "rank": rank, "cache_root": root, "caches": caches}


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
@click.option("--rank-var", metavar="VAR", help="Variable holding this process's rank (default: LOCAL_RANK, RANK, SLURM_PROCID, …).")
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
    from ..hostenv.shell import SHELLS, comment_line, export_line

    if shell is None:
        guess = os.path.basename(os.environ.get("SHELL", ""))
        shell = guess if guess in SHELLS else "sh"
    res = build(dist_init_addr=dist_init_addr, engine=engine, cache_root=cache_root, rank_var=rank_var,
                all_caches=all_caches, sys_root=sys_root, proc_root=proc_root)
    if fmt == "json":
        click.echo(json.dumps({"shell": shell, **res}, indent=2, sort_keys=True))
    else:
        lines = [comment_line(f"k3doctor env ({shell})")]
        lines += [comment_line(n) for n in res["notes"]]
        lines += [comment_line("problem: " + e) for e in res["errors"]]
        lines += [export_line(k, v, shell) for k, v in res["exports"].items()]
        sys.stdout.write("\n".join(lines) + "\n")
    for e in res["errors"]:
        click.echo(f"k3doctor env: {e}", err=True)
    if res["interface"] is None:
        sys.exit(1)
