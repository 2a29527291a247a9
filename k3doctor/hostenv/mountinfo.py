"""Parse ``/proc/self/mountinfo`` (and ``/proc/mounts``), find the mount of a path, classify fs types.

mountinfo line (``proc_pid_mountinfo(5)``)::

    36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
    (1)(2) (3)   (4)   (5)      (6)      (7)   (8)  (9)   (10)         (11)

Field 7 is zero or more optional fields, ended by a lone ``-`` (8); the fs type (9) is the first
field after it. Paths escape space, tab, newline and backslash as three-digit octal (``\\040``).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Iterable, Mapping

__all__ = [
    "unescape",
    "parse_mountinfo",
    "parse_proc_mounts",
    "find_mount",
    "classify_fs",
    "is_shared_fs",
    "NETWORK_FS",
    "LOCAL_FS",
]

_OCTAL = re.compile(r"\\([0-7]{3})")

#: Shared / network filesystems (domain notes §E); any ``fuse`` or ``fuse.*`` type is added by rule.
NETWORK_FS = frozenset(
    {
        "nfs", "nfs4", "lustre", "gpfs", "beegfs", "ceph", "cifs", "smb3", "smbfs", "9p",
        "virtiofs", "afs", "panfs", "wekafs", "glusterfs", "ocfs2", "gfs2", "davfs", "pvfs2",
        "orangefs", "cvfs", "quobyte", "efs", "mfs", "juicefs", "alluxio", "fuse",
    }
)

#: Node-local filesystems.
LOCAL_FS = frozenset(
    {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "tmpfs", "overlay", "ramfs", "f2fs",
        "bcachefs", "squashfs", "devtmpfs", "fuseblk", "vfat", "exfat", "ntfs", "ntfs3", "jfs",
        "reiserfs", "erofs", "iso9660", "aufs", "shiftfs",
    }
)


def unescape(field: str) -> str:
    """Undo the kernel's octal escapes (``\\040`` -> space, ``\\134`` -> backslash)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


MountRow = dict[str, Any]


def _parse_lines(text: str, what: str,
                 row: Callable[[list[str]], "MountRow | str"]) -> tuple[list[MountRow], list[str]]:
    """Each non-blank line split on spaces through ``row``: a mount dict, or the reason the line
    is malformed (reported as ``<what> line N: <reason>: <line>``, never raised)."""
    mounts: list[MountRow] = []
    errors: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        got = row(line.split(" "))
        if isinstance(got, str):
            errors.append(f"{what} line {lineno}: {got}: {line[:120]!r}")
        else:
            mounts.append(got)
    return mounts, errors


def _mountinfo_row(fields: list[str]) -> "MountRow | str":
    try:
        sep = fields.index("-", 6)
    except ValueError:
        return "no ' - ' separator"
    if len(fields) < sep + 3:
        return "missing fs type or source"
    try:
        mount_id, parent_id = int(fields[0]), int(fields[1])
    except ValueError:
        return "mount ids are not numbers"
    return {
        "mount_id": mount_id, "parent_id": parent_id, "dev": fields[2],
        "root": unescape(fields[3]), "mount_point": unescape(fields[4]), "options": fields[5],
        "optional": fields[6:sep], "fstype": unescape(fields[sep + 1]), "source": unescape(fields[sep + 2]),
        "super_options": fields[sep + 3] if len(fields) > sep + 3 else "",
    }


def _proc_mounts_row(fields: list[str]) -> "MountRow | str":
    if len(fields) < 4:
        return "fewer than 4 fields"
    return {
        "mount_id": None, "parent_id": None, "dev": "", "root": "/", "mount_point": unescape(fields[1]),
        "options": fields[3], "optional": [], "fstype": unescape(fields[2]), "source": unescape(fields[0]),
        "super_options": "",
    }


def parse_mountinfo(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Parse mountinfo text into mount dicts; malformed lines become error strings, not exceptions."""
    return _parse_lines(text, "mountinfo", _mountinfo_row)


def parse_proc_mounts(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Parse ``/proc/mounts`` (``source mount_point fstype options 0 0``), the fallback source."""
    return _parse_lines(text, "mounts", _proc_mounts_row)


def _under(path: str, mount_point: str) -> bool:
    if mount_point == "/":
        return path.startswith("/")
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def find_mount(path: str, mounts: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The mount that holds absolute ``path``: the longest mount point that is a prefix of it.

    Among mounts on the same mount point the last one listed wins (it is stacked on top).
    """
    path = posixpath.normpath(path) if path else path
    best: Mapping[str, Any] | None = None
    best_len = -1
    for m in mounts:
        mp = str(m.get("mount_point") or "")
        if not mp.startswith("/") or not _under(path, mp):
            continue
        length = len(mp.rstrip("/"))
        if length >= best_len:
            best, best_len = m, length
    return best


def classify_fs(fstype: str | None) -> str:
    """``"network"`` (shared between nodes), ``"local"`` or ``"unknown"``."""
    if not fstype:
        return "unknown"
    t = fstype.strip().lower()
    if t in NETWORK_FS or t.startswith("fuse.") or t.startswith("nfs"):
        return "network"
    if t in LOCAL_FS:
        return "local"
    return "unknown"


def is_shared_fs(fstype: str | None) -> bool:
    """True for shared/network filesystems (nfs, lustre, gpfs, any ``fuse.*``, …)."""
    return classify_fs(fstype) == "network"
