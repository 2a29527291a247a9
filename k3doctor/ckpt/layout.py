"""Where a checkpoint came from: Hugging Face ``local_dir`` download, hub cache snapshot, or plain.

Read-only: huggingface_hub's own readers create directories and delete "corrupt" metadata, so
the few files involved are parsed here directly (formats from ``huggingface_hub``
``_local_folder.py`` and ``file_download.py``):

* ``local_dir``: ``<dir>/.cache/huggingface/download/<relpath>.metadata`` = three lines: commit
  hash, etag (sha256 of the content for LFS files, git blob sha1 otherwise), unix timestamp; the
  metadata is current only if the file's mtime - 1 <= timestamp. Interrupted downloads leave
  ``<relpath>.<etag>.incomplete`` next to the metadata.
* hub cache: ``<cache>/models--{org}--{name}/snapshots/<commit>/<relpath>`` is a relative symlink to
  ``../../blobs/<etag>``; interrupted downloads leave ``blobs/<etag>.incomplete``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..boundedio import BoundedReadError, read_bytes

#: a ``.metadata`` file is three short lines (commit, etag, timestamp)
_LOCAL_METADATA_CAP = 4096
__all__ = ["HEX64", "HEX40", "detect_layout", "recorded_hashes", "incomplete_parts", "repo_from_launch"]

HEX64 = re.compile(r"^[0-9a-f]{64}$")
HEX40 = re.compile(r"^[0-9a-f]{40}$")
_REPO_DIR = re.compile(r"^models--(?P<org>[^/]+?)--(?P<name>[^/]+)$")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def checkpoint_dir(model_dir: str | Path, error: type[Exception]) -> Path:
    """``model_dir`` as a Path; ``error`` (one line with the fix) when it is not a directory."""
    d = Path(model_dir)
    if not d.is_dir():
        raise error(f"{d}: not a directory; pass the checkpoint directory (the one holding config.json)")
    return d


def detect_layout(model_dir: str | Path) -> dict[str, Any]:
    """``{"layout": "hf_cache"|"hf_local_dir"|"plain", "repo", "revision", "cache_dir"}``."""
    d = Path(model_dir)
    out: dict[str, Any] = {"layout": "plain", "repo": None, "revision": None, "cache_dir": None}
    parts = d.absolute().parts
    if len(parts) >= 3 and parts[-2] == "snapshots":
        m = _REPO_DIR.match(parts[-3])
        if m:
            out.update(layout="hf_cache", repo=f"{m['org']}/{m['name']}", revision=parts[-1],
                       cache_dir=str(Path(*parts[:-3])))
            return out
    meta_dir = d / ".cache" / "huggingface" / "download"
    if meta_dir.is_dir():
        out["layout"] = "hf_local_dir"
        for p in sorted(meta_dir.glob("*.metadata"))[:1]:
            try:
                first = read_bytes(p, kind="metadata").decode("utf-8", "replace").split("\n", 1)[0].strip()
            except BoundedReadError:
                continue
            if HEX40.match(first):
                out["revision"] = first
    return out


def _read_local_metadata(path: Path) -> tuple[str, str, float] | None:
    try:
        lines = read_bytes(path, kind="metadata", cap=_LOCAL_METADATA_CAP).decode("utf-8", "replace").splitlines()
        return lines[0].strip(), lines[1].strip(), float(lines[2].strip())
    except (BoundedReadError, IndexError, ValueError):
        return None


def recorded_hashes(model_dir: str | Path, layout: dict[str, Any], files: list[str]) -> dict[str, dict[str, Any]]:
    """Locally recorded content hashes for ``files`` (relative names).

    ``{file: {"algo": "sha256"|"git-sha1", "expected": hex, "source": "hf-cache-blob"|
    "hf-local-metadata", "stale": bool}}``; files without a usable record are absent.
    """
    d = Path(model_dir)
    out: dict[str, dict[str, Any]] = {}
    if layout.get("layout") == "hf_cache":
        for f in files:
            p = d / f
            try:
                target = os.readlink(p)
            except OSError:
                continue
            etag = os.path.basename(target)
            if HEX64.match(etag):
                out[f] = {"algo": "sha256", "expected": etag, "source": "hf-cache-blob", "stale": False}
            elif HEX40.match(etag):
                out[f] = {"algo": "git-sha1", "expected": etag, "source": "hf-cache-blob", "stale": False}
    elif layout.get("layout") == "hf_local_dir":
        meta_dir = d / ".cache" / "huggingface" / "download"
        for f in files:
            rec = _read_local_metadata(meta_dir / f"{f}.metadata")
            if rec is None:
                continue
            _, etag, ts = rec
            algo = "sha256" if HEX64.match(etag) else "git-sha1" if HEX40.match(etag) else None
            if algo is None:
                continue
            try:
                stale = os.stat(d / f).st_mtime - 1 > ts
            except OSError:
                stale = False
            out[f] = {"algo": algo, "expected": etag, "source": "hf-local-metadata", "stale": stale}
    return out


def incomplete_parts(model_dir: str | Path, layout: dict[str, Any], limit: int = 200) -> list[dict[str, Any]]:
    """Leftover partial downloads: ``[{"path", "size", "file"?}]`` (``file`` = the shard it was for)."""
    d = Path(model_dir)
    found: list[dict[str, Any]] = []
    roots: list[Path] = []
    if layout.get("layout") == "hf_cache":
        roots.append(d.parent.parent / "blobs")
    roots.append(d / ".cache" / "huggingface" / "download")
    roots.append(d)
    blob_to_file: dict[str, str] = {}
    if layout.get("layout") == "hf_cache":
        try:
            for entry in os.scandir(d):
                if entry.is_symlink():
                    blob_to_file[os.path.basename(os.readlink(entry.path))] = entry.name
        except OSError:
            pass
    for root in roots:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for e in entries:
            if not e.name.endswith(".incomplete"):
                continue
            try:
                size = e.stat(follow_symlinks=False).st_size
            except OSError:
                size = None
            rec: dict[str, Any] = {"path": e.path, "size": size}
            stem = e.name[: -len(".incomplete")]
            if root.name == "blobs":
                rec["file"] = blob_to_file.get(stem)
            elif root.name == "download":
                # <relpath>.<etag>.incomplete
                rel, _, etag = stem.rpartition(".")
                rec["file"] = rel or None
            found.append(rec)
            if len(found) >= limit:
                return found
    return found


def repo_from_launch(model: Any) -> str | None:
    """A launch ``--model`` value that looks like a Hub repo id (``org/name``), else None."""
    if isinstance(model, str) and _REPO_ID.match(model) and not os.path.exists(model):
        return model
    return None
