"""Filesystem probes: the mount table (``mounts``) and every cache / model directory (``paths``).

``mounts`` fact::

    {source: "<proc_root>/self/mountinfo" | "<proc_root>/mounts" | None,
     mounts: [{mount_id, parent_id, dev, root, mount_point, options, optional: [str], fstype,
               source, super_options}],
     errors: [str]}

``paths`` fact::

    {engine, env_source ("launch"|"env"|"process"),
     entries: [{key ("triton"|"inductor"|"flashinfer"|"deepgemm_sglang"|"deepgemm"|"vllm"|"cuda"|
                     "deepep"|"hf_hub"|"home"|"model"),
                label, path, variable, explicit, source, jit, subdir, note,
                realpath, checked_path (nearest existing ancestor), exists,
                mount_point, fstype, fs_class ("network"|"local"|"unknown"), mount_source,
                writable, free_bytes, total_bytes, error}],
     load_estimate: null | {file, offset, bytes_read, seconds, bytes_per_s, shard_count,
                            total_bytes, estimated_s, error},
     errors: [str]}

Options read: ``model_dir`` (else the launch's ``model`` when it is a local directory),
``measure_load`` (bool: opt-in timed read of one shard region), ``measure_bytes`` (default
256 MiB), ``fs_timeout`` (seconds per path, default 3). Every ``stat``/``statvfs``/``realpath``
runs in a bounded helper: a stale NFS mount yields an ``error`` ("no answer within 3 s"),
never a hang.
"""

from __future__ import annotations

import os
import posixpath
import time
from typing import Any, Callable, Mapping, Sequence

from ..hostenv.caches import resolve_caches
from ..hostenv.mountinfo import classify_fs, find_mount, parse_mountinfo, parse_proc_mounts
from .net import known_fact

__all__ = ["probe_mounts", "probe_paths", "read_mounts", "inspect_path", "measure_read"]

from ..units import MiB


def _bounded(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    from ..facts import call_with_timeout

    return call_with_timeout(fn, timeout, what)


def read_mounts(proc_root: str = "/proc") -> dict[str, Any]:
    """Parse ``<proc_root>/self/mountinfo``, falling back to ``<proc_root>/mounts``."""
    errors: list[str] = []
    for rel, parser in (("self/mountinfo", parse_mountinfo), ("mounts", parse_proc_mounts)):
        path = os.path.join(proc_root, rel)
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                text = fh.read()
        except OSError as exc:
            errors.append(f"cannot read {path}: {exc.strerror or exc}")
            continue
        mounts, errs = parser(text)
        if not mounts:
            errors.append(f"{path}: no mount could be parsed")
            errors += errs
            continue
        return {"source": path, "mounts": mounts, "errors": errors + errs}
    return {"source": None, "mounts": [], "errors": errors}


def probe_mounts(ctx: Any, proc_root: str = "/proc") -> dict[str, Any]:
    """The mount table of this process's mount namespace."""
    return read_mounts(proc_root)


def inspect_path(path: str, mounts: Sequence[Mapping[str, Any]], timeout: float = 3.0) -> dict[str, Any]:
    """Where ``path`` lives (mount, fs type), whether it (or the ancestor that would hold it) is
    writable, and free space — bounded by ``timeout`` seconds."""
    from ..facts import ProbeTimeout

    out: dict[str, Any] = {
        "realpath": None, "checked_path": None, "exists": None, "mount_point": None, "fstype": None,
        "fs_class": "unknown", "mount_source": None, "writable": None, "free_bytes": None,
        "total_bytes": None, "error": None,
    }
    if not path or not path.startswith("/"):
        out["error"] = f"not an absolute path: {path!r}"
        return out

    def work() -> dict[str, Any]:
        real = os.path.realpath(path)
        probe = real
        while probe != "/" and not os.path.exists(probe):
            probe = posixpath.dirname(probe)
        res: dict[str, Any] = {"realpath": real, "checked_path": probe, "exists": os.path.isdir(real)}
        try:
            st = os.statvfs(probe)
            res["free_bytes"] = st.f_bavail * st.f_frsize
            res["total_bytes"] = st.f_blocks * st.f_frsize
        except OSError as exc:
            res["error"] = f"statvfs {probe}: {exc.strerror or exc}"
        res["writable"] = os.access(probe, os.W_OK | os.X_OK)
        return res

    try:
        out.update(_bounded(work, timeout, f"stat {path}"))
    except ProbeTimeout:
        out["error"] = f"no answer within {timeout:g} s (stale or hung network mount?)"
    except OSError as exc:
        out["error"] = f"{exc.strerror or exc}"
    where = out["realpath"] or path
    m = find_mount(where, mounts)
    if m is not None:
        out["mount_point"] = m.get("mount_point")
        out["fstype"] = m.get("fstype")
        out["mount_source"] = m.get("source")
        out["fs_class"] = classify_fs(m.get("fstype"))
    return out


def measure_read(model_dir: str, *, budget_bytes: int = 256 * MiB, seconds: float = 8.0) -> dict[str, Any]:
    """Time a read of one shard region (the middle of the largest ``*.safetensors``).

    The region's clean pages are first dropped from the page cache (``POSIX_FADV_DONTNEED``) so the
    figure is the storage's, not RAM's. Reads at most ``budget_bytes`` and stops after ``seconds``.
    """
    out: dict[str, Any] = {"file": None, "offset": None, "bytes_read": 0, "seconds": None,
                           "bytes_per_s": None, "shard_count": 0, "total_bytes": 0,
                           "estimated_s": None, "error": None}
    shards: list[tuple[int, str]] = []
    try:
        with os.scandir(model_dir) as it:
            for e in it:
                if e.name.endswith(".safetensors") and e.is_file():
                    shards.append((e.stat().st_size, e.path))
    except OSError as exc:
        out["error"] = f"cannot list {model_dir}: {exc.strerror or exc}"
        return out
    if not shards:
        out["error"] = f"no *.safetensors files in {model_dir}"
        return out
    shards.sort()
    size, path = shards[-1]
    out.update(file=path, shard_count=len(shards), total_bytes=sum(s for s, _ in shards))
    length = min(budget_bytes, size)
    offset = max(0, (size - length) // 2) // MiB * MiB
    out["offset"] = offset
    chunk = 16 * MiB
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        out["error"] = f"cannot open {path}: {exc.strerror or exc}"
        return out
    try:
        if hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
        start = time.perf_counter()
        done = 0
        while done < length and time.perf_counter() - start < seconds:
            data = os.pread(fd, min(chunk, length - done), offset + done)
            if not data:
                break
            done += len(data)
        elapsed = time.perf_counter() - start
    except OSError as exc:
        out["error"] = f"read error in {path}: {exc.strerror or exc}"
        return out
    finally:
        os.close(fd)
    out["bytes_read"] = done
    out["seconds"] = round(elapsed, 6)
    if done and elapsed > 0:
        rate = done / elapsed
        out["bytes_per_s"] = int(rate)
        out["estimated_s"] = round(out["total_bytes"] / rate, 1)
    return out


def _env_and_engine(ctx: Any) -> tuple[dict[str, str], str | None, str, Mapping[str, Any] | None]:
    launch = known_fact(ctx, "launch")
    launch = launch if isinstance(launch, Mapping) else None
    env_fact = known_fact(ctx, "env")
    env_fact = env_fact if isinstance(env_fact, Mapping) else None
    engine = str(launch.get("engine")).lower() if launch and launch.get("engine") else None
    if launch and isinstance(launch.get("env"), Mapping):
        return {str(k): str(v) for k, v in launch["env"].items() if v is not None}, engine, "launch", launch
    if env_fact:
        env = {str(k): str(v) for k, v in env_fact.items() if v is not None}
        for var in ("HOME", "USER", "TMPDIR"):  # the env fact may omit these; the process knows them
            if var not in env and os.environ.get(var):
                env[var] = os.environ[var]
        return env, engine, "env", launch
    return dict(os.environ), engine, "process", launch


def probe_paths(ctx: Any, proc_root: str = "/proc") -> dict[str, Any]:
    """Every JIT/hub cache dir the launch will use, ``$HOME`` and the model dir: fs type, writability,
    free space; with ``measure_load`` a timed read of one shard region."""
    errors: list[str] = []
    mounts_fact = known_fact(ctx, "mounts")
    if not isinstance(mounts_fact, Mapping):
        mounts_fact = read_mounts(proc_root)
    mounts = list(mounts_fact.get("mounts") or [])
    if not mounts:
        errors.append("no mount table: filesystem types are unknown")
    try:
        timeout = float(ctx.option("fs_timeout", 3.0))
    except (TypeError, ValueError):
        timeout = 3.0
    env, engine, env_source, launch = _env_and_engine(ctx)
    try:
        import pwd

        pw = pwd.getpwuid(os.getuid())
        home_default, user_default = pw.pw_dir, pw.pw_name
    except (KeyError, ImportError):
        home_default, user_default = "/", "unknown"
    # One hung mount must not eat the probe's whole time limit: paths on a mount that already
    # failed to answer are not waited on again, and all waits share ~60 % of the probe's limit.
    deadline = time.monotonic() + 0.6 * float(getattr(ctx, "timeout", 20.0) or 20.0)
    hung: dict[str, str] = {}

    def inspect(path: str) -> dict[str, Any]:
        m = find_mount(path, mounts) if path.startswith("/") else None
        mp = str(m.get("mount_point")) if m is not None else None
        if mp is not None and mp in hung:
            info = inspect_path("", [], 0.0)
            info.update(mount_point=mp, fstype=m.get("fstype"), fs_class=classify_fs(m.get("fstype")),  # type: ignore[union-attr]
                        mount_source=m.get("source"), realpath=None,  # type: ignore[union-attr]
                        error=f"not checked: {mp} did not answer for {hung[mp]}")
            return info
        left = deadline - time.monotonic()
        if left <= 0.05:
            info = inspect_path("", [], 0.0)
            info["error"] = "not checked: the probe's time for filesystem checks ran out"
            return info
        info = inspect_path(path, mounts, min(timeout, left))
        if info.get("error") and "no answer" in str(info["error"]) and info.get("mount_point"):
            hung[str(info["mount_point"])] = path
        return info

    entries: list[dict[str, Any]] = []
    for cache in resolve_caches(env, engine=engine, home=home_default, user=user_default):
        entry = cache.to_dict()
        entry.update(inspect(cache.path))
        entries.append(entry)
    model_dir = ctx.option("model_dir")
    if not model_dir and launch and isinstance(launch.get("model"), str) and launch["model"].startswith("/"):
        model_dir = launch["model"]
    load_estimate = None
    if model_dir:
        entry = {"key": "model", "label": "model directory", "path": str(model_dir), "variable": "",
                 "explicit": True, "source": "option", "jit": False, "subdir": "", "note": ""}
        entry.update(inspect(str(model_dir)))
        entries.append(entry)
        if ctx.option("measure_load", False) and entry.get("exists"):
            from ..facts import ProbeTimeout

            try:
                budget = int(ctx.option("measure_bytes", 256 * MiB))
            except (TypeError, ValueError):
                budget = 256 * MiB
            read_s = max(1.0, min(8.0, float(getattr(ctx, "timeout", 20.0)) / 3))
            try:
                load_estimate = _bounded(lambda: measure_read(str(model_dir), budget_bytes=budget, seconds=read_s),
                                         read_s + timeout, "timed read")
            except ProbeTimeout:
                load_estimate = {"error": f"the timed read gave no answer within {read_s + timeout:g} s"}
    return {"engine": engine, "env_source": env_source, "entries": entries,
            "load_estimate": load_estimate, "errors": errors + list(mounts_fact.get("errors") or [])}
