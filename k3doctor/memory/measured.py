"""An engine log's figures set beside the projection: which term differs, by how much.

vLLM sizes the KV cache as ``--gpu-memory-utilization`` × CUDA-visible total − weights − the profile
run's overhead (activation peak + non-torch memory). With the measured weights and the measured
"Available KV cache memory", that overhead is known exactly, so a gap between the projection and
the engine can be put on the weights or on the overhead instead of being guessed at.
"""

from __future__ import annotations

from typing import Any

from .logparse import EngineLogFigures

__all__ = ["compare"]

from ..units import GiB


def _g(b: float) -> str:
    return f"{b / GiB:.2f} GiB"


def compare(plan: Any, fig: EngineLogFigures) -> tuple[dict[str, Any], list[str]]:
    """(JSON section, human lines) comparing ``fig`` with ``plan``; bytes as ints."""
    doc: dict[str, Any] = {"figures": fig.to_dict()}
    lines: list[str] = []
    proj_w = int(plan.max_rank_weights_bytes)
    meas_w = int(round(fig.weights_gib * GiB)) if fig.weights_gib is not None else None
    if meas_w is not None:
        err = 100.0 * (proj_w - meas_w) / meas_w if meas_w else 0.0
        doc.update(measured_weights_bytes=meas_w, projected_weights_bytes=proj_w, weights_error_pct=round(err, 2))
        lines.append(f"weights: {_g(meas_w)} measured, {_g(proj_w)} projected ({err:+.1f}%)")
    if fig.available_kv_gib is not None and plan.engine == "vllm":
        meas_kv = int(round(fig.available_kv_gib * GiB))
        proj_kv = int(plan.kv_avail_bytes)
        doc.update(measured_available_kv_bytes=meas_kv, projected_available_kv_bytes=proj_kv)
        line = f"available KV: {_g(meas_kv)} measured, {_g(proj_kv)} projected"
        w = meas_w if meas_w is not None else proj_w
        implied = int(plan.budget_bytes) - w - meas_kv
        doc.update(implied_overhead_bytes=implied, projected_overhead_bytes=int(plan.overhead_bytes))
        line += (f"; with {'the measured' if meas_w is not None else 'the projected'} weights, vLLM charged "
                 f"{_g(implied)} besides weights where the projection charges {_g(plan.overhead_bytes)} "
                 f"(budget {_g(plan.budget_bytes)}: {plan.budget_basis})")
        lines.append(line)
        if meas_w is not None and abs(implied - plan.overhead_bytes) > abs(meas_w - proj_w):
            lines.append("the larger gap is in the profile-run overhead (activation peak / sampler / non-torch), "
                         "not in the weights")
        elif meas_w is not None and abs(meas_w - proj_w) > 0:
            lines.append("the larger gap is in the weights")
    if fig.estimated_max_model_len is not None or fig.needed_kv_gib is not None:
        parts = []
        if fig.needed_kv_gib is not None and fig.max_model_len is not None:
            need = int(round(fig.needed_kv_gib * GiB))
            doc.update(measured_kv_need_bytes=need, max_model_len=fig.max_model_len)
            parts.append(f"{fig.max_model_len:,} tokens need {_g(need)} per the engine"
                         + (f" ({_g(plan.kv_need_bytes)} projected)" if plan.kv_need_bytes is not None else ""))
        if fig.estimated_max_model_len is not None:
            doc["estimated_max_model_len"] = fig.estimated_max_model_len
            parts.append(f"the engine's largest context {fig.estimated_max_model_len:,} "
                         f"({plan.max_context:,} projected)")
        lines.append("; ".join(parts))
    if fig.kv_cache_tokens is not None:
        doc["kv_cache_tokens"] = fig.kv_cache_tokens
        lines.append(f"KV cache: {fig.kv_cache_tokens:,} tokens per the engine ({plan.kv_tokens:,} projected)")
    return doc, lines
