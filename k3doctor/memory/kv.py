"""KV cache and recurrent state per rank (domain.md §B, kimi-k3.md §7)."""

from __future__ import annotations

from math import ceil

from . import constants as C
from .placement import Parallel, pp_partition
from .spec import ModelSpec

__all__ = ["kv_dtype_bytes", "kv_bytes_per_token", "kda_state_bytes", "stage_layer_sets", "hybrid_page"]


def kv_dtype_bytes(dtype: str | None, spec: ModelSpec | None = None) -> float:
    d = (dtype or "auto").lower()
    if d not in C.KV_DTYPE_BYTES:
        raise ValueError(f"unknown --kv-cache-dtype {dtype!r} (use one of {', '.join(sorted(C.KV_DTYPE_BYTES))})")
    return C.KV_DTYPE_BYTES[d]


def stage_layer_sets(spec: ModelSpec, par: Parallel, stage: int) -> tuple[list[int], list[int], list[int]]:
    """(attention layers holding a KV cache, KDA layers, sliding-window layers) on ``stage``."""
    mine = pp_partition(par, spec.layers)[stage]
    kda = set(spec.kda_layers)
    sliding = set(spec.sliding_layers)
    if spec.layer_mixers:  # hybrids: only the attention mixers keep a KV cache
        kda |= {i for i, m in enumerate(spec.layer_mixers) if m != "attn"}
    attn = [i for i in mine if i not in kda and i not in sliding]
    return attn, [i for i in mine if i in kda], [i for i in mine if i in sliding]


def kv_bytes_per_token(spec: ModelSpec, par: Parallel, stage: int, dtype: str | None) -> float:
    """Bytes one token of context costs on one rank of ``stage`` (full-attention layers only).

    MLA: the 576-wide latent is one "head" and is held in full on every attention-TP rank
    (sgl MLATokenToKVPool; vLLM MLAAttentionSpec), divided only by DCP.
    GQA: K and V split by KV heads over attention-TP; a rank holds at least one head.
    """
    attn, _, _ = stage_layer_sets(spec, par, stage)
    b = kv_dtype_bytes(dtype, spec)
    if spec.mla:
        per_layer = (spec.kv_lora_rank + spec.qk_rope) * b
        if (dtype or "").lower() == "fp8_ds_mla":
            per_layer = 656
        return len(attn) * per_layer / max(1, par.dcp)
    heads_local = max(1, ceil(spec.kv_heads / par.attn_tp))
    return len(attn) * 2 * heads_local * spec.head_dim * b


def sliding_bytes_per_request(spec: ModelSpec, par: Parallel, stage: int, dtype: str | None) -> float:
    """Sliding-window layers hold at most ``window`` tokens per request (gpt-oss)."""
    _, _, sliding = stage_layer_sets(spec, par, stage)
    if not sliding:
        return 0.0
    heads_local = max(1, ceil(spec.kv_heads / par.attn_tp))
    return len(sliding) * spec.sliding_window * 2 * heads_local * spec.head_dim * kv_dtype_bytes(dtype, spec)


def kda_state_bytes(spec: ModelSpec, attn_tp: int, ssm_dtype: str | None = None, conv_bytes: int = 2) -> int:
    """One request slot's KDA state on one rank, summed over *one* layer (kimi-k3.md §7.2):
    ``(H/T)·d·d·s + 3·(H·d/T)·(k−1)·c`` with ``s`` = 4 (fp32, default) or 2 (bf16)."""
    s = 2 if (ssm_dtype or "").lower() in ("bfloat16", "bf16", "float16") else 4
    h = spec.kda_heads // attn_tp
    d = spec.kda_head_dim
    return h * d * d * s + 3 * (spec.kda_heads * d // attn_tp) * (spec.kda_conv - 1) * conv_bytes


def hybrid_page(spec: ModelSpec, par: Parallel, dtype: str | None) -> tuple[int, int]:
    """vLLM hybrid allocator: (attention block size in tokens, unified page bytes).

    The attention block grows (in multiples of 64) until one attention page holds one KDA state
    page; both then use that page size (LMCache recipe: 768 tokens at TP8, kimi-k3.md §5.3)."""
    per_tok_layer = (spec.kv_lora_rank + spec.qk_rope) * kv_dtype_bytes(dtype, spec)
    state = kda_state_bytes(spec, par.attn_tp, par.mamba_ssm_dtype)
    m = C.VLLM_HYBRID_BLOCK_MULTIPLE
    bs = max(m, ceil(state / per_tok_layer / m) * m)
    return bs, int(bs * per_tok_layer)
