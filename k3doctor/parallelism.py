"""The engines' parallel-size arithmetic, written once (the launch spec, its typed fact and the
memory planner's :class:`~k3doctor.memory.placement.Parallel` all use it)."""

from __future__ import annotations

__all__ = ["world_size"]


def world_size(engine: str, tp: int, pp: int, dp: int, dp_attention: bool) -> int:
    """GPUs a plan uses: SGLang with DP attention ``tp·pp`` (the DP groups live inside TP);
    otherwise ``tp·pp·dp`` (vLLM always)."""
    if engine == "sglang" and dp_attention:
        return tp * pp
    return tp * pp * dp
