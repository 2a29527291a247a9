"""The RoPE cos/sin tables an engine keeps on every GPU, from config.json.

Both engines build each attention layer's rotary embedding through a cache keyed by its shape, so a
model holds one ``cos_sin_cache`` buffer per distinct (head size, rotary width, positions, RoPE
parameters) — usually one, two for Gemma-3/4 (sliding and global layers). The buffer is created on
the device while the model is built, so it is inside both engines' weight-load figure, on every
rank (it is not sharded) and on every pipeline stage. Its shape, read in each engine's rotary
embedding source:

* rows: ``max_position_embeddings``; ``× factor`` for ``linear`` and ``dynamic`` scaling;
  ``original_max_position_embeddings × factor`` for YaRN (``yarn``, ``deepseek_yarn``); the short
  table over the original length plus the long one for ``longrope``. vLLM's multimodal RoPE
  (``mrope_section``: Qwen2-VL … Qwen3.5) builds 4 × ``max_position_embeddings`` rows; SGLang's
  does not.
* columns: the rotary width (``head_dim × partial_rotary_factor``, or ``rotary_dim``; MLA's
  ``qk_rope_head_dim``); Gemma-4's proportional RoPE spans the whole head.
* dtype: the model dtype in vLLM (2 bytes); float32 in SGLang on CUDA and ROCm ("cache needs to be
  in FP32 for numerical stability").

Attention without rotary embeddings has none: Nemotron-H, MLA with ``mla_use_nope`` (Kimi Linear /
K3) or ``qk_rope_head_dim`` 0, ALiBi and learned-position families.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["rope_tables", "rope_cache_bytes"]

_NO_ROPE_TYPES = ("nemotron_h", "bloom", "mpt", "gpt2", "opt", "gpt_bigcode", "bert")
# multimodal-RoPE families (their published configs carry ``mrope_section``; trimmed copies may not)
_MROPE_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "qwen3_omni_moe",
                "glm4v", "glm4v_moe")


def _text_config(top: Mapping[str, Any]) -> Mapping[str, Any]:
    t = top.get("text_config")
    if isinstance(t, Mapping) and (str(top.get("model_type", "")).lower() == "kimi_k3" or "hidden_size" not in top):
        return t
    return top


def _num(x: Any, default: float = 0.0) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def _params(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """RoPE parameters in one dict: ``rope_parameters`` (new transformers) over ``rope_scaling``."""
    out: dict[str, Any] = {}
    for key in ("rope_scaling", "rope_parameters"):
        v = cfg.get(key)
        if isinstance(v, Mapping):
            out.update(v)
    if "rope_type" not in out and "type" in out:
        out["rope_type"] = out["type"]
    return out


def _rows(p: Mapping[str, Any], max_pos: int, engine: str, mrope: bool = False) -> int:
    kind = str(p.get("rope_type") or "default").lower()
    factor = _num(p.get("factor"), 1.0) or 1.0
    original = int(_num(p.get("original_max_position_embeddings")))
    if kind in ("linear", "dynamic") and "alpha" not in p:
        rows = int(max_pos * factor)
    elif kind in ("yarn", "deepseek_yarn", "deepseek_llama_scaling") and original:
        rows = int(original * factor)
    elif kind == "longrope" and original:
        rows = original + max_pos
    else:
        rows = max_pos
    if engine == "vllm" and (mrope or p.get("mrope_section")):
        rows *= 4  # vLLM MRotaryEmbedding.cache_max_position_num
    return rows


def _width(cfg: Mapping[str, Any], p: Mapping[str, Any], head: int) -> int:
    if str(p.get("rope_type") or "").lower() == "proportional":
        return head  # Gemma-4: zero-padded to the full head
    if _num(cfg.get("rotary_dim")):
        return int(_num(cfg.get("rotary_dim")))
    prf = _num(p.get("partial_rotary_factor"), _num(cfg.get("partial_rotary_factor"), 1.0)) or 1.0
    return int(head * prf)


def rope_tables(top: Mapping[str, Any], engine: str) -> list[tuple[str, int, int]]:
    """The ``(name, rows, columns)`` of each RoPE table ``engine`` builds for this config."""
    if not isinstance(top, Mapping):
        return []
    cfg = _text_config(top)
    mt = str(cfg.get("model_type") or top.get("model_type") or "").lower()
    if mt in _NO_ROPE_TYPES or cfg.get("alibi") or cfg.get("mla_use_nope") or cfg.get("position_embedding_type") in ("absolute", "none"):
        return []
    max_pos = int(_num(cfg.get("max_position_embeddings")))
    if max_pos <= 0:
        return []
    p = _params(cfg)
    if cfg.get("compress_ratios") and cfg.get("compress_rope_theta"):
        return _deepseek_v4_tables(cfg, p, max_pos, engine)
    if "qk_rope_head_dim" in cfg or cfg.get("kv_lora_rank"):  # MLA: the rotary part of the head
        rope = int(_num(cfg.get("qk_rope_head_dim")))
        return [("mla", _rows(p, max_pos, engine), rope)] if rope > 0 else []
    heads = int(_num(cfg.get("num_attention_heads")))
    hidden = int(_num(cfg.get("hidden_size")))
    head = int(_num(cfg.get("head_dim"))) or (hidden // heads if heads else 0)
    if head <= 0:
        return []
    per_kind = {k: v for k, v in p.items() if isinstance(v, Mapping)}
    if per_kind:  # Gemma-4: rope_parameters per attention kind
        out = []
        for kind, sub in sorted(per_kind.items()):
            h = int(_num(cfg.get("global_head_dim"))) or head if kind.startswith("full") else head
            out.append((kind, _rows(sub, max_pos, engine), _width(cfg, sub, h)))
        return out
    mrope = str(top.get("model_type") or "").lower() in _MROPE_TYPES
    out = [("global", _rows(p, max_pos, engine, mrope), _width(cfg, p, head))]
    if mt.startswith("gemma3") and _num(cfg.get("rope_local_base_freq")):
        out.append(("local", max_pos, _width(cfg, {}, head)))  # sliding layers: their own base, unscaled
    return out


def _deepseek_v4_tables(cfg: Mapping[str, Any], p: Mapping[str, Any], max_pos: int, engine: str) -> list[tuple[str, int, int]]:
    """DeepSeek-V4 builds two RoPEs (``rope_theta`` for the uncompressed layers,
    ``compress_rope_theta`` for the compressed ones, both YaRN-scaled over
    ``original_max_position_embeddings x factor`` rows). SGLang also keeps each one's
    ``freqs_cis`` (complex64, rope/2 pairs = the size of a float32 table) from the cached
    ``precompute_freqs_cis`` (srt/layers/deepseek_v4_rope.py, ``lru_cache(2)``) beside the
    ``get_rope_wrapper`` cache."""
    rope = int(_num(cfg.get("qk_rope_head_dim")))
    if rope <= 0:
        return []
    rows = _rows(p, max_pos, engine)
    out = [("window", rows, rope), ("compressed", rows, rope)]
    if engine == "sglang":
        out += [("window freqs_cis", rows, rope), ("compressed freqs_cis", rows, rope)]
    return out


def rope_cache_bytes(top: Mapping[str, Any], engine: str) -> int:
    """Bytes of RoPE tables one rank holds (every rank, every pipeline stage)."""
    elem = 4 if engine == "sglang" else 2
    return sum(rows * cols * elem for _n, rows, cols in rope_tables(top, engine))
