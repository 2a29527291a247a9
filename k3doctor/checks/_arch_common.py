"""Constants and helpers shared by the ARCH family's modules (:mod:`.arch`, :mod:`.arch_plan`)."""

from __future__ import annotations

from typing import Any, Mapping

from ..archrules import (
    ModelInfo,
    device_groups,
    format_cc,
    load_rules,
    resolve_model,
)
from ..check import Check
from ..model import Severity



_ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "nccl": "NCCL", "any": "the engine"}
_SEVERITY = {"error": Severity.ERROR, "warning": Severity.WARNING, "info": Severity.INFO}
_POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256)

#: dense (non-sparse) peak tensor TFLOPS from NVIDIA datasheets, for the MXFP4 speed note.
_BF16_DENSE_TFLOPS = {8: 312, 9: 989}
_B200_FP4_DENSE_TFLOPS = 9000

CP_WORLD_SIZE_ERROR = (
    "cp_world_size must be positive, required by downstream unified code path. Use 1 if CP is not enabled."
)



# -- shared helpers --------------------------------------------------------------------------
def _groups_or_skip(gpu: Mapping[str, Any], check: Check) -> list[tuple[tuple[int, int], tuple[str, ...], int]]:
    if gpu.get("ok") is False:
        raise check.skip(f"no GPU information ({gpu.get('error') or 'NVML failed'})")
    groups = device_groups(gpu)
    if not groups:
        raise check.skip("the gpu fact lists no device with a compute capability")
    return groups


def _where(gpu: Mapping[str, Any] | None) -> str:
    if gpu and gpu.get("source") == "target":
        return f"target {gpu.get('target') or 'profile'}"
    return "this node"


def _gpu_desc(gpu: Mapping[str, Any] | None, cc: tuple[int, int], names: tuple[str, ...], count: int) -> str:
    return f"{_where(gpu)} has {count}× {' / '.join(names) or 'GPU'} (SM {format_cc(cc)})"


def _int(launch: Mapping[str, Any], key: str, default: int = 1) -> int:
    value = launch.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def _model(launch: Mapping[str, Any] | None, model: Mapping[str, Any] | None) -> ModelInfo:
    return resolve_model(launch, model, load_rules())


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in _POW2 if d <= limit and n % d == 0]


def _quote(engine: str, error: str, verbatim: bool) -> str:
    name = _ENGINE_NAMES.get(engine, engine)
    return f"{name} raises: “{error}”" if verbatim else f"{name} fails: {error}"


