"""Checkpoint manifests: sha256 + size of every file, made on the download node, checked offline.

Document (JSON)::

    {"kind": "k3doctor.manifest", "schema_version": 1, "created": "2026-…Z", "tool": "k3doctor",
     "repo": "moonshotai/Kimi-K3" | null, "revision": "<commit>" | null,
     "files": {"model-00001-of-000096.safetensors": {"size": 16990915840, "sha256": "…"}, …}}

``k3doctor manifest create DIR -o m.json`` writes it; ``k3doctor check --model DIR --manifest m.json``
verifies against it (missing files, size changes without reading, then sha256).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from . import layout as _layout
from .hashing import HashJob, hash_files
from .layout import HEX64

__all__ = ["MANIFEST_KIND", "MANIFEST_SCHEMA", "ManifestError", "create_manifest", "load_manifest", "manifest_files"]

MANIFEST_KIND = "k3doctor.manifest"
MANIFEST_SCHEMA = 1
_SKIP_DIRS = {".cache", ".git", ".huggingface"}


class ManifestError(Exception):
    """A manifest cannot be read or is malformed; the message is one line naming the file and the fix."""


def manifest_files(model_dir: str | Path) -> list[str]:
    """Every regular file under ``model_dir`` (relative, ``/``-separated), excluding download
    bookkeeping (``.cache/``, ``.git/``, ``*.incomplete``, ``*.lock``). Symlinks are followed."""
    root = Path(model_dir)
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(x for x in dirnames if x not in _SKIP_DIRS)
        rel_dir = os.path.relpath(dirpath, root)
        for name in sorted(filenames):
            if name.endswith((".incomplete", ".lock")):
                continue
            p = os.path.join(dirpath, name)
            if os.path.isfile(p):
                out.append(name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/"))
    return out


def create_manifest(model_dir: str | Path, *, jobs: int | None = None, repo: str | None = None,
                    progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Hash every file of ``model_dir`` and return the manifest document (nothing is written).

    Raises :class:`ManifestError` when the directory is unusable or a file cannot be read.
    """
    root = _layout.checkpoint_dir(model_dir, ManifestError)
    files = manifest_files(root)
    if not files:
        raise ManifestError(f"{root}: no files to record")
    lay = _layout.detect_layout(root)
    jobs_ = []
    for f in files:
        real = os.path.realpath(root / f)
        if any(real == d or real.startswith(d + "/") for d in ("/proc", "/sys", "/dev")):
            raise ManifestError(f"{root / f}: a link to {real}, a kernel or device file, not checkpoint data; "
                                "remove the link and retry")
        try:
            jobs_.append(HashJob(str(root / f), f, "sha256", os.stat(root / f).st_size))
        except OSError as exc:
            raise ManifestError(f"{root / f}: cannot stat ({exc.strerror or exc})") from None
    results = hash_files(jobs_, workers=jobs, progress=progress)
    entries: dict[str, dict[str, Any]] = {}
    for job, r in zip(jobs_, results):
        if "error" in r:
            raise ManifestError(f"{job.path}: cannot read ({r['error']}); fix the file or its permissions and retry")
        entries[job.file] = {"size": r["bytes"], "sha256": r["actual"]}
    return {"kind": MANIFEST_KIND, "schema_version": MANIFEST_SCHEMA, "tool": "k3doctor",
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "repo": repo or lay.get("repo"), "revision": lay.get("revision"), "files": entries}


def load_manifest(path: str | Path) -> dict[str, Any]:
    """Read and validate a manifest; raise :class:`ManifestError` with a one-line reason and fix."""
    from ..jsondoc import load_versioned_json

    p = Path(path)
    redo = "re-create it on the download node with `k3doctor manifest create DIR -o m.json`"
    doc = load_versioned_json(p, kind=MANIFEST_KIND, schema_version=MANIFEST_SCHEMA, what="manifest",
                              remedy=redo, error=ManifestError)
    files = doc.get("files")
    if not isinstance(files, dict) or not files:
        raise ManifestError(f"{p}: manifest has no \"files\"; {redo}")
    for name, rec in files.items():
        if (not isinstance(name, str) or name.startswith("/") or ".." in name.split("/")
                or not isinstance(rec, dict) or not isinstance(rec.get("size"), int)
                or not isinstance(rec.get("sha256"), str) or not HEX64.match(rec["sha256"])):
            raise ManifestError(f"{p}: bad entry for {name!r} (need a relative path with "
                                f"{{\"size\": int, \"sha256\": 64 hex}}); {redo}")
    return doc
