"""Reject config.json values no real model has, before the projection uses them.

A damaged or hostile config.json (``num_hidden_layers: 1e9``, ``num_attention_heads: 0``,
``bits: 0``, an ignore list of 300,000 names) must end in one clear message naming the field, not
in a division by zero, an overflow or a projection that runs for minutes. The limits are far above
any published model (Kimi-K3: 61 layers, 7,168 hidden, 896 routed experts; the largest vocabularies
are ~260k) and far below what would make the projection slow.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

__all__ = ["check_config_limits", "SIZE_LIMITS"]

_LAYERS, _WIDTH, _EXPERTS, _HEADS = 4096, 1 << 20, 1 << 16, 1 << 14
#: config field -> (smallest allowed, largest allowed); checked wherever the field is a number
SIZE_LIMITS: dict[str, tuple[int, int]] = {
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layers", "n_layer", "depth", "num_nextn_predict_layers",
                     "first_k_dense_replace", "moe_layer_freq", "interleave_moe_layer_step", "decoder_sparse_step"),
                    (0, _LAYERS)),
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "intermediate_size", "moe_intermediate_size",
                     "shared_expert_intermediate_size", "ffn_hidden_size", "q_lora_rank", "kv_lora_rank",
                     "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "head_dim", "embed_dim",
                     "projection_dim", "out_hidden_size"), (0, _WIDTH)),
    **dict.fromkeys(("num_attention_heads", "num_key_value_heads", "n_head", "num_heads", "n_heads"), (1, _HEADS)),
    **dict.fromkeys(("n_routed_experts", "num_experts", "num_local_experts", "n_shared_experts",
                     "num_shared_experts", "num_experts_per_tok", "moe_topk", "top_k"), (0, _EXPERTS)),
    "vocab_size": (0, 1 << 24),
    "patch_size": (1, 4096),
}
_QUANT_LIMITS: dict[str, tuple[int, int]] = {"bits": (1, 16), "w_bit": (1, 16), "num_bits": (1, 16),
                                             "group_size": (-1, 1 << 20), "q_group_size": (-1, 1 << 20)}
_NESTED = ("text_config", "vision_config", "llm_config", "language_config", "audio_config", "thinker_config")
_IGNORE_KEYS = ("modules_to_not_convert", "ignore", "ignored_layers", "llm_int8_skip_modules")
#: longest ignore list accepted (real ones list at most a few thousand module names)
IGNORE_LIMIT = 50_000


class ConfigLimitError(ValueError):
    """A config.json value outside what any model uses (the message names the field)."""


def _number_ok(value: Any, lo: int, hi: int) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True  # not a number: the projection's own type handling reports it
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return False
    return lo <= value <= hi


def _walk(cfg: Mapping[str, Any], where: str, depth: int) -> None:
    for key, (lo, hi) in SIZE_LIMITS.items():
        if key in cfg and not _number_ok(cfg[key], lo, hi):
            raise ConfigLimitError(f"config.json {where}{key} = {cfg[key]!r} is outside what any model uses "
                                   f"({lo}..{hi}); the file is damaged or not this model's config")
    if depth < 4:
        for key in _NESTED:
            sub = cfg.get(key)
            if isinstance(sub, Mapping):
                _walk(sub, f"{where}{key}.", depth + 1)


def _quant(q: Mapping[str, Any], where: str, depth: int = 0) -> None:
    for key, (lo, hi) in _QUANT_LIMITS.items():
        value = q.get(key)
        bad_group = key.endswith("group_size") and value == 0  # -1 means per-channel; 0 divides by zero
        if value is not None and (not _number_ok(value, lo, hi) or bad_group):
            raise ConfigLimitError(f"config.json {where}{key} = {value!r} is not a usable quantisation "
                                   f"setting ({lo}..{hi}, not 0 for a group size)")
    block = q.get("weight_block_size")
    if isinstance(block, (list, tuple)) and any(not _number_ok(b, 1, 1 << 20) or b == 0 for b in block):
        raise ConfigLimitError(f"config.json {where}weight_block_size = {list(block)!r}: every block size must be "
                               "a positive whole number")
    for key in _IGNORE_KEYS:
        names = q.get(key)
        if isinstance(names, (list, tuple)) and len(names) > IGNORE_LIMIT:
            raise ConfigLimitError(f"config.json {where}{key} lists {len(names):,} modules (more than "
                                   f"{IGNORE_LIMIT:,}); the file is damaged or not a model config")
    if depth < 3:
        for key, sub in q.items():
            if isinstance(sub, Mapping):
                _quant(sub, f"{where}{key}.", depth + 1)


def check_config_limits(config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigLimitError` naming the first field outside the limits."""
    _walk(config, "", 0)
    q = config.get("quantization_config")
    if isinstance(q, Mapping):
        _quant(q, "quantization_config.")
