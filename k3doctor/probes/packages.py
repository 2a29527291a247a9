"""Installed versions of the packages that matter, read from metadata without importing them."""

from __future__ import annotations

import re
from importlib import metadata
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
    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if str(f).replace("\\", "/") == "torch/version.py":
            return Path(str(dist.locate_file(f)))
    return None


def probe_packages(ctx: ProbeContext) -> dict[str, Any]:
    """Versions of torch, the engines, FlashInfer, NCCL, Triton, … (None when not installed),
    plus ``torch_cuda``, the CUDA version torch was built for (read from torch/version.py)."""
    out: dict[str, Any] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["torch_cuda"] = None
    path = _torch_version_file()
    if path is not None:
        try:
            out["torch_cuda"] = torch_cuda_version(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            pass
    return out
