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


@pytest.fixture
def emulate_permissions(monkeypatch: pytest.MonkeyPatch) -> None:
    """As root the kernel ignores mode 000; emulate the EACCES any other user gets (checkpoint tests)."""
    import errno
    import os

    from k3doctor.ckpt import hashing, header

    if os.geteuid() != 0:
        return
    real = header.open_readonly

    def fake(path: str) -> int:
        if os.path.exists(path) and os.stat(path).st_mode & 0o777 == 0:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(header, "open_readonly", fake)
    monkeypatch.setattr(hashing, "open_readonly", fake)
