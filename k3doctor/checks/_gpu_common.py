"""Constants and fact helpers shared by the GPU family's modules (:mod:`.gpu`, :mod:`.gpu_health`)."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from ..facttypes import GpuFact
from ..model import Skip

GB = 10**9

#: NVML clock-event ("throttle") reason bits, as in nvml.h / nvidia-ml-py
#: (``nvmlClocksEventReason*``, older alias ``nvmlClocksThrottleReason*``). A test keeps them in
#: step with the installed pynvml.
THROTTLE_BITS: dict[str, int] = {
    "GpuIdle": 0x1,
    "ApplicationsClocksSetting": 0x2,
    "SwPowerCap": 0x4,
    "HwSlowdown": 0x8,
    "SyncBoost": 0x10,
    "SwThermalSlowdown": 0x20,
    "HwThermalSlowdown": 0x40,
    "HwPowerBrakeSlowdown": 0x80,
    "DisplayClockSetting": 0x100,
}
#: Reasons that mean the hardware itself is holding the clocks down (warning at preflight).
HW_THROTTLE_BITS = ("HwSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown")

#: DCGM ``DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE``: this many uncorrectable remapped rows → warn.
ROW_REMAP_UNCORRECTABLE_LIMIT = 512
#: SGLang raises "memory capacity is unbalanced" when min free < local free × this.
SGLANG_IMBALANCE_RATIO = 0.9
#: Free memory below this share of (total − reserved) at preflight → warning.
FREE_MEMORY_RATIO = 0.9
#: Free memory a fresh CUDA context takes before vLLM measures (H200 reading: NVML free
#: 150,109,880,320 B vs ``torch.cuda.mem_get_info`` free 149,557,477,376 B).
CUDA_CONTEXT_BYTES = 552_402_944
#: PyTorch wheel CUDA tags, newest last (``https://download.pytorch.org/whl/cuXYZ``).
TORCH_CUDA_TAGS = (118, 121, 124, 126, 128, 129, 130)



# -- helpers ---------------------------------------------------------------------------------
def _gpu(gpu: Any) -> GpuFact:
    """The gpu fact when NVML answered, else Skip naming GPU001 (also when there is no gpu fact)."""
    if not isinstance(gpu, Mapping) or not gpu.get("ok"):
        reason = gpu.get("error") if isinstance(gpu, Mapping) else "no gpu fact"
        raise Skip(f"requires GPU001 (NVML not reachable: {reason})")
    return GpuFact.of(gpu)


def _devices(gpu: Mapping[str, Any]) -> list[dict[str, Any]]:
    devices = [d for d in gpu.get("devices") or [] if isinstance(d, Mapping)]
    if not devices:
        raise Skip("requires GPU001 (no GPUs reported)")
    return [dict(d) for d in devices]


def _unknown(gpu: Mapping[str, Any], what: str) -> Skip:
    """The skip for a value no device reports: a ``--target`` profile never has live state."""
    if gpu.get("source") == "target":
        return Skip("live GPU state is not in a --target profile (use a live run or a snapshot)")
    return Skip(f"NVML did not report {what} for any GPU")


def _with(gpu: Mapping[str, Any], devices: list[dict[str, Any]], *keys: str, what: str) -> list[dict[str, Any]]:
    """Devices that report every key; skip when none does (e.g. a ``--target`` profile)."""
    have = [d for d in devices if all(d.get(k) is not None for k in keys)]
    if not have:
        raise _unknown(gpu, what)
    return have


def _subject(device: Mapping[str, Any]) -> str:
    return f"gpu={device.get('index')}"


def _index_list(devices: Iterable[Mapping[str, Any]]) -> str:
    return ",".join(str(d.get("index")) for d in devices)


def _gb(value: int | float | None) -> str:
    return "?" if value is None else f"{value / GB:.1f} GB"


def _env(env: Any, launch: Any) -> dict[str, str]:
    """Process env (``env`` fact) overlaid by the launch command's own env (what the engine sees)."""
    merged: dict[str, str] = {}
    if isinstance(env, Mapping):
        merged.update({str(k): str(v) for k, v in env.items() if v is not None})
    if isinstance(launch, Mapping) and isinstance(launch.get("env"), Mapping):
        merged.update({str(k): str(v) for k, v in launch["env"].items() if v is not None})
    return merged


def _falsy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("0", "false", "no", "off")


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def _cuda_version_text(version: int) -> str:
    return f"{version // 1000}.{(version % 1000) // 10}"


def _parse_cuda_version(text: Any) -> int | None:
    """``"13.0"`` / ``"12.8"`` / ``"cu128"`` / ``12080`` → NVML-style integer (13000, 12080)."""
    if isinstance(text, int):
        return text if text >= 1000 else None
    if not isinstance(text, str):
        return None
    match = re.fullmatch(r"\s*(?:cu)?(\d+)\.(\d+)(?:\.\d+)?\s*", text)
    if match:
        return int(match.group(1)) * 1000 + int(match.group(2)) * 10
    match = re.fullmatch(r"\s*cu(\d{2})(\d)\s*", text)
    if match:
        return int(match.group(1)) * 1000 + int(match.group(2)) * 10
    return None


def visible_device_indices(devices: Sequence[Mapping[str, Any]], cvd: str | None) -> list[int]:
    """Indices of the GPUs a CUDA process sees under ``CUDA_VISIBLE_DEVICES`` (NVML ignores it).

    CUDA reads the list left to right and stops at the first entry it cannot resolve (an
    out-of-range index, an unknown UUID, ``-1``, a duplicate); an empty value hides every GPU.
    """
    all_indices = [int(d.get("index", i)) for i, d in enumerate(devices)]
    if cvd is None:
        return all_indices
    chosen: list[int] = []
    for token in (t.strip() for t in cvd.split(",")):
        if not token:
            break
        index: int | None = None
        if re.fullmatch(r"\d+", token):
            index = int(token) if int(token) in all_indices else None
        elif token.upper().startswith(("GPU-", "MIG-")) or re.fullmatch(r"[0-9a-fA-F-]{4,}", token):
            want = token if token.upper().startswith(("GPU-", "MIG-")) else f"GPU-{token}"
            want = want.lower()
            hits = [
                int(d.get("index", i))
                for i, d in enumerate(devices)
                if str(d.get("uuid") or "").lower().startswith(want)
            ]
            index = hits[0] if len(hits) == 1 else None
        if index is None or index in chosen:
            break
        chosen.append(index)
    return chosen


