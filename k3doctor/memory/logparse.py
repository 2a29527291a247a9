"""Measured per-rank weight memory from engine logs.

* SGLang ``model_runner.load_model``: "Load weight end. ... avail mem=A GB, mem usage=W GB." —
  ``get_available_gpu_memory`` divides bytes by ``1 << 30``, so SGLang's "GB" is GiB. Older
  releases print only ``avail mem``; then W = (avail at "Load weight begin") − (avail at end).
* vLLM ``gpu_model_runner.load_model``: "Model loading took W GiB" (``m.consumed_memory /
  GiB_bytes``; older releases "Loading model weights took W GB", also computed with ``2**30``).
"""

from __future__ import annotations

import re

__all__ = ["measured_weight_gib", "LOG_PATTERNS"]

_SG_END = re.compile(r"Load weight end\..*?avail mem=([\d.]+) ?GB(?:, mem usage=([\d.]+) ?GB)?")
_SG_BEGIN = re.compile(r"Load weight begin\. avail mem=([\d.]+) ?GB")
_VLLM = re.compile(r"(?:Model loading took|Loading model weights took) ([\d.]+) ?Gi?B")
LOG_PATTERNS = {"sglang": _SG_END.pattern, "vllm": _VLLM.pattern}


def measured_weight_gib(text: str) -> tuple[float, str] | None:
    """(largest per-rank weight GiB found, engine) or None."""
    vals = [float(m.group(2)) for m in _SG_END.finditer(text) if m.group(2)]
    if vals:
        return max(vals), "sglang"
    begins = [float(x) for x in _SG_BEGIN.findall(text)]
    ends = [float(m.group(1)) for m in _SG_END.finditer(text)]
    if begins and ends:
        return round(begins[0] - ends[0], 4), "sglang"  # first rank's pair
    v = [float(x) for x in _VLLM.findall(text)]
    if v:
        return max(v), "vllm"
    return None
