"""Built-in GPU profiles for static checks without hardware (``--target h200-141g``).

Memory totals are what NVML reports as ``memory.total`` (bytes), not the marketing number: an
H200 SXM reports 150,754,820,096 bytes (143,771 MiB) — see ../shared/reference/h200-reading.json.
Values for parts we have no reading of come from NVIDIA datasheets (HBM capacity) and are marked
``measured=False``; the usable figure differs by the driver-reserved ~0.5–0.7 GiB.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

__all__ = ["Target", "TARGETS", "get_target", "gpu_fact_for_target", "TargetError", "MAX_GPUS_PER_NODE"]

#: the most GPUs one node may be given (--gpus, `gpus` in a config file): more than any real node, few
#: enough that a static gpu fact of that many devices is cheap
MAX_GPUS_PER_NODE = 1024

from .units import MiB as MIB, NVML_IDLE_RESERVE


@dataclass(frozen=True)
class Target:
    """One GPU model as k3doctor needs to know it."""

    name: str
    product: str
    memory_total: int
    cc: tuple[int, int]
    nvlink: bool
    #: NVLink domain spans nodes (GB200/GB300 NVL72 with NVLink switch trays + IMEX)
    mnnvl: bool
    fp8: bool
    fp4: bool
    gpus_per_node: int
    measured: bool
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "product": self.product,
            "memory_total": self.memory_total,
            "cc": list(self.cc),
            "nvlink": self.nvlink,
            "mnnvl": self.mnnvl,
            "fp8": self.fp8,
            "fp4": self.fp4,
            "gpus_per_node": self.gpus_per_node,
            "measured": self.measured,
            "source": self.source,
        }


_DS = "NVIDIA datasheet HBM capacity (not a NVML reading)"
TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("a100-80g", "NVIDIA A100-SXM4-80GB", 81920 * MIB, (8, 0), True, False, False, False, 8, False,
               "NVML reports 81920 MiB on A100-SXM4-80GB (nvidia-smi, common reports)"),
        Target("h100-80g", "NVIDIA H100 80GB HBM3", 81559 * MIB, (9, 0), True, False, True, False, 8, False,
               "NVML reports 81559 MiB on H100 SXM (nvidia-smi, common reports)"),
        Target("h20-96g", "NVIDIA H20", 97871 * MIB, (9, 0), True, False, True, False, 8, False,
               "NVML reports 97871 MiB on H20 (nvidia-smi, common reports)"),
        Target("h200-141g", "NVIDIA H200", 150754820096, (9, 0), True, False, True, False, 8, True,
               "measured: ../shared/reference/h200-reading.json (NVML memory.total)"),
        Target("b200", "NVIDIA B200", 183359 * MIB, (10, 0), True, False, True, True, 8, False,
               "NVML reports ~183359 MiB on B200 (nvidia-smi, common reports); 192 GB HBM3e " + _DS),
        Target("b300", "NVIDIA B300 SXM6 AC", 275040 * MIB, (10, 3), True, False, True, True, 8, False,
               "288 GB HBM3e " + _DS + "; ~268.6 GiB usable"),
        Target("gb200", "NVIDIA GB200", 189471 * MIB, (10, 0), True, True, True, True, 4, False,
               "186 GB HBM3e per GPU " + _DS + "; NVL72 multi-node NVLink"),
        Target("gb300", "NVIDIA GB300", 284208 * MIB, (10, 3), True, True, True, True, 4, False,
               "288 GB HBM3e per GPU " + _DS + "; NVL72 multi-node NVLink"),
    )
}

_ALIASES = {
    "h200": "h200-141g", "h100": "h100-80g", "h20": "h20-96g", "a100": "a100-80g",
    "h200-141gb": "h200-141g", "h100-80gb": "h100-80g", "a100-80gb": "a100-80g",
}


class TargetError(KeyError):
    """Unknown target name; the message lists close matches and all known names."""

    def __str__(self) -> str:
        return str(self.args[0])


def get_target(name: str) -> Target:
    """Look up a target by name (case-insensitive, a few aliases); raise :class:`TargetError`."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key in TARGETS:
        return TARGETS[key]
    close = difflib.get_close_matches(key, list(TARGETS) + list(_ALIASES), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise TargetError(f"unknown --target {name!r}.{hint} Known targets: {', '.join(TARGETS)}")


def gpu_fact_for_target(target: Target, count: int | None = None) -> dict[str, Any]:
    """A ``gpu`` fact describing ``count`` idle GPUs of this model (static mode)."""
    n = target.gpus_per_node if count is None else count
    if not 1 <= n <= MAX_GPUS_PER_NODE:
        raise TargetError(f"{n} GPUs per node: expected 1 to {MAX_GPUS_PER_NODE}")
    reserved = NVML_IDLE_RESERVE
    devices = []
    for i in range(n):
        devices.append(
            {
                "index": i,
                "name": target.product,
                "uuid": None,
                "cc": list(target.cc),
                "memory_total": target.memory_total,
                "memory_reserved": reserved,
                "memory_free": target.memory_total - reserved,
                "memory_used": 0,
                "fp8": target.fp8,
                "fp4": target.fp4,
                "nvlink_domain": "multi-node" if target.mnnvl else ("node" if target.nvlink else "none"),
                "processes": [],
            }
        )
    return {
        "ok": True,
        "error": None,
        "source": "target",
        "target": target.name,
        "driver": None,
        "cuda_driver": None,
        "devices": devices,
    }
