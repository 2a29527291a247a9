"""The ``model`` fact: a compact scan of a local safetensors checkpoint (headers, index, config,
quantised pairs, leftovers; optionally sha256 and zero-range sampling).

Options (``ctx.options``): ``model_dir`` (else the launch fact's ``model`` when it is a local
directory or a repo id found in the local Hugging Face cache), ``deep`` (bool), ``manifest``
(path), ``jobs`` (int), ``sample`` (bool or ranges per shard), ``hf_repo`` (repo id for
re-download commands), ``progress`` (``callable(done_bytes, total_bytes)`` for ``--deep``; not
serialised). Read-only; never prints; never imports or executes code from the model directory.
The schema is documented in :mod:`k3doctor.ckpt.scan`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping

__all__ = ["probe_model", "resolve_model_dir", "model_fact"]


def _hub_cache(launch_env: Any = None) -> Path:
    """The hub cache the engine will use: the launch command's env first, then this process's."""
    env = dict(os.environ)
    if isinstance(launch_env, Mapping):
        env.update({k: v for k, v in launch_env.items() if isinstance(v, str)})
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]) / "hub"
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "huggingface" / "hub"


def _cached_snapshot(repo: str, launch_env: Any = None) -> str | None:
    """``<hub cache>/models--org--name/snapshots/<refs/main>`` when present (read-only lookups)."""
    org, _, name = repo.partition("/")
    return _snapshot_of(_hub_cache(launch_env) / f"models--{org}--{name}")


def _snapshot_of(root: Path) -> str | None:
    from ..boundedio import BoundedReadError, read_bytes

    try:
        commit = read_bytes(root / "refs" / "main", kind="metadata", cap=4096).decode("utf-8").strip()
    except (BoundedReadError, UnicodeDecodeError):
        return None
    if not commit or "/" in commit or commit in (".", ".."):
        return None
    snap = root / "snapshots" / commit
    return str(snap) if commit and snap.is_dir() else None


def resolve_model_dir(ctx: Any) -> tuple[str | None, str | None, str | None]:
    """``(model_dir, launch_repo, how)`` from the options or the launch fact."""
    from ..ckpt.layout import repo_from_launch

    opt = ctx.option("model_dir")
    if opt:
        # a hub-cache repo folder (models--org--name) stands for its refs/main snapshot
        if os.path.basename(os.path.normpath(str(opt))).startswith("models--"):
            snap = _snapshot_of(Path(str(opt)))
            if snap:
                return snap, None, "option-hf-cache-repo"
        return str(opt), None, "option"
    launch = None
    facts = getattr(ctx, "facts", None)
    if facts is not None:
        try:
            if facts.has("launch"):
                launch = facts.get("launch")
        except Exception:  # noqa: BLE001 - no launch fact means no fallback
            launch = None
    model = launch.get("model") if isinstance(launch, Mapping) else None
    if isinstance(model, str) and model:
        if os.path.isdir(model):
            return model, None, "launch"
        repo = repo_from_launch(model)
        if repo:
            snap = _cached_snapshot(repo, launch.get("env") if isinstance(launch, Mapping) else None)
            if snap:
                return snap, repo, "launch-hf-cache"
            return None, repo, None
    return None, None, None


def model_fact(model_dir: str | Path, **scan: Any) -> dict[str, Any]:
    """The ``model`` fact of ``model_dir``: the checkpoint scan (:func:`k3doctor.ckpt.scan.scan_checkpoint`,
    keyword arguments passed on) with its tensor rows folded into the planner's inventory on the way
    (:class:`k3doctor.memory.fold.HeaderFold`), so CKPT and MEM share one parse of each header."""
    from ..ckpt.scan import scan_checkpoint
    from ..memory.fold import HeaderFold

    return scan_checkpoint(model_dir, rows=HeaderFold(model_dir), **scan)


def probe_model(ctx: Any) -> dict[str, Any]:
    """Scan the model directory; raises Skip when no local directory is known."""
    from ..model import Skip

    model_dir, launch_repo, how = resolve_model_dir(ctx)
    if not model_dir:
        if launch_repo:
            raise Skip(f"the launch model {launch_repo!r} is a Hub id with no local copy in the Hugging Face "
                       "cache; pass --model DIR to check a downloaded checkpoint")
        raise Skip("no model directory (use --model DIR or a launch command with a local model path)")
    repo: str | None = ctx.option("hf_repo")
    source: str | None = "option" if repo else None
    if not repo and launch_repo:
        repo, source = launch_repo, "launch"
    deep = bool(ctx.option("deep", False))
    manifest = ctx.option("manifest")
    sample = ctx.option("sample", False)
    timeout = float(getattr(ctx, "timeout", 0) or 0)
    # stop hashing a little before the runner abandons the probe, so partial results come back
    deadline = time.monotonic() + max(1.0, timeout - 2.0) if timeout and (deep or manifest) else None
    progress = ctx.options.get("progress") if hasattr(ctx, "options") else None
    fact = model_fact(model_dir, repo=repo, repo_source=source, deep=deep, manifest=manifest,
                           jobs=ctx.option("jobs"), sample=sample if isinstance(sample, int) else bool(sample),
                           progress=progress if callable(progress) else None, deadline=deadline)
    fact["found_via"] = how
    if not fact.get("repo"):
        # launch id as a fallback for fix commands when the directory layout does not say
        if launch_repo:
            fact["repo"], fact["repo_source"] = launch_repo, "launch"
    return fact
