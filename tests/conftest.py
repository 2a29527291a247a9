"""Shared test configuration: GPU tests run only where NVML sees a GPU."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@functools.lru_cache(maxsize=1)
def _gpu_available() -> tuple[bool, str]:
    try:
        import pynvml
    except ImportError:
        return False, "nvidia-ml-py not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - any NVML failure means no usable GPU
        return False, f"NVML unavailable ({type(exc).__name__})"
    try:
        count = pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
    return (count > 0, f"{count} GPUs")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ok, why = _gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
