"""Installed versions of the packages that matter, read from metadata without importing them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..facts import ProbeContext

__all__ = ["probe_packages", "PACKAGES", "torch_cuda_version"]

PACKAGES = (
    "torch", "sglang", "sglang-kernel", "sgl-kernel", "vllm", "flashinfer-python", "flashinfer-cubin",
    "flashinfer-jit-cache", "triton", "nvidia-nccl-cu12", "nvidia-nccl-cu13", "safetensors",
    "fastsafetensors", "deep_gemm", "deep-gemm", "deep_ep", "transformers", "huggingface-hub",
    "nvidia-ml-py", "compressed-tensors", "xformers", "flash-attn", "flash_mla", "ray", "numpy",
)

_CUDA_RE = re.compile(r"""^cuda\s*(?::\s*[^=]+)?=\s*['"]([0-9.]+)['"]""", re.M)


def torch_cuda_version(version_py_text: str) -> str | None:
    """The ``cuda = '13.0'`` line of ``torch/version.py`` (None for CPU builds)."""
    m = _CUDA_RE.search(version_py_text)
    return m.group(1) if m else None


def _torch_version_file() -> Path | None:
    """``torch/version.py`` located without importing torch (find_spec of a top-level package
    only searches ``sys.path``; it does not execute the package)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        candidate = Path(loc) / "version.py"
        if candidate.is_file():
            return candidate
    return None


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_versions(paths: list[str] | None = None) -> dict[str, str]:
    """Name -> version from the ``*.dist-info`` directory names on ``sys.path`` (one directory
    listing per path entry instead of a metadata search per package; first entry wins, as for
    imports)."""
    import os
    import sys

    found: dict[str, str] = {}
    for entry in paths if paths is not None else sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for item in names:
            if item.endswith(".dist-info"):
                stem = item[: -len(".dist-info")]
            elif item.endswith(".egg-info"):
                stem = item[: -len(".egg-info")].split("-py", 1)[0]
            else:
                continue
            name, sep, version = stem.partition("-")
            if sep and version:
                found.setdefault(_normalise(name), version)
    return found


def probe_packages(ctx: ProbeContext) -> dict[str, Any]:
    """Versions of torch, the engines, FlashInfer, NCCL, Triton, … (None when not installed),
    plus ``torch_cuda``, the CUDA version torch was built for (read from torch/version.py)."""
    out: dict[str, Any] = {}
    listed = installed_versions()
    for name in PACKAGES:
        out[name] = listed.get(_normalise(name))
    out["torch_cuda"] = None
    path = _torch_version_file()
    if path is not None:
        try:
            out["torch_cuda"] = torch_cuda_version(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            pass
    return out
