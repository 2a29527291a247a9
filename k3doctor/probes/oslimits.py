"""Operating-system limits that engines trip over: ``/dev/shm``, ``ulimit -l``, ``ulimit -n``, RAM.

``limits`` fact (sizes in bytes; ``-1`` = unlimited; absent/None = unknown)::

    {shm: {path, total_bytes, free_bytes, fstype, error},
     memlock: {soft, hard},          # RLIMIT_MEMLOCK, bytes
     nofile: {soft, hard},           # RLIMIT_NOFILE, descriptors
     mem_total, mem_available,       # /proc/meminfo
     cgroup_memory_limit,            # cgroup v2 memory.max or v1 limit_in_bytes; None = no limit
     rdma_devices: int,              # entries in /sys/class/infiniband
     errors: [str]}
"""

from __future__ import annotations

import os
from typing import Any

from ..hostenv.mountinfo import find_mount, parse_mountinfo

__all__ = ["probe_limits", "read_limits"]

_NO_LIMIT = 1 << 60  # cgroup v1 reports "no limit" as a huge page-aligned number


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _rlimit(which: str) -> dict[str, int | None]:
    try:
        import resource

        res = getattr(resource, which)
        soft, hard = resource.getrlimit(res)
    except (ImportError, AttributeError, OSError, ValueError):
        return {"soft": None, "hard": None}

    def norm(v: int) -> int:
        return -1 if v == resource.RLIM_INFINITY else int(v)

    return {"soft": norm(soft), "hard": norm(hard)}


def _meminfo(text: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            mult = 1024 if len(parts) > 1 and parts[1].lower() == "kb" else 1
            out[key.strip()] = int(parts[0]) * mult
    return out


def _cgroup_limit(sys_root: str) -> int | None:
    for rel in ("fs/cgroup/memory.max", "fs/cgroup/memory/memory.limit_in_bytes"):
        text = _read(os.path.join(sys_root, rel))
        if text is None:
            continue
        text = text.strip()
        if text == "max" or not text.isdigit():
            return None
        value = int(text)
        return None if value >= _NO_LIMIT else value
    return None


def read_limits(proc_root: str = "/proc", sys_root: str = "/sys", shm_path: str = "/dev/shm",
                timeout: float = 3.0) -> dict[str, Any]:
    """Read every limit; unreadable items become ``errors`` entries, never exceptions."""
    from ..facts import ProbeTimeout, call_with_timeout

    errors: list[str] = []
    shm: dict[str, Any] = {"path": shm_path, "total_bytes": None, "free_bytes": None, "fstype": None, "error": None}
    try:
        st = call_with_timeout(lambda: os.statvfs(shm_path), timeout, "statvfs /dev/shm")
        shm["total_bytes"] = st.f_blocks * st.f_frsize
        shm["free_bytes"] = st.f_bavail * st.f_frsize
    except ProbeTimeout:
        shm["error"] = f"statvfs {shm_path}: no answer within {timeout:g} s"
    except OSError as exc:
        shm["error"] = f"statvfs {shm_path}: {exc.strerror or exc}"
    mi = _read(os.path.join(proc_root, "self", "mountinfo"))
    if mi is not None:
        m = find_mount(shm_path, parse_mountinfo(mi)[0])
        if m is not None and m.get("mount_point") == shm_path:
            shm["fstype"] = m.get("fstype")
    meminfo_text = _read(os.path.join(proc_root, "meminfo"))
    if meminfo_text is None:
        errors.append(f"cannot read {os.path.join(proc_root, 'meminfo')}")
    meminfo = _meminfo(meminfo_text)
    try:
        rdma = len(os.listdir(os.path.join(sys_root, "class", "infiniband")))
    except OSError:
        rdma = 0
    return {
        "shm": shm,
        "memlock": _rlimit("RLIMIT_MEMLOCK"),
        "nofile": _rlimit("RLIMIT_NOFILE"),
        "mem_total": meminfo.get("MemTotal"),
        "mem_available": meminfo.get("MemAvailable"),
        "cgroup_memory_limit": _cgroup_limit(sys_root),
        "rdma_devices": rdma,
        "errors": errors,
    }


def probe_limits(ctx: Any, proc_root: str = "/proc", sys_root: str = "/sys", shm_path: str = "/dev/shm") -> dict[str, Any]:
    """/dev/shm size, RLIMIT_MEMLOCK and RLIMIT_NOFILE, host RAM and the cgroup memory limit."""
    return read_limits(proc_root, sys_root, shm_path)
