"""Normalise a Hugging Face ``config.json`` into the few numbers the memory model needs.

Architectures understood (``family``):

* ``kimi_k3``  – Kimi-K3 (KDA + gated MLA + latent MoE, MXFP4 compressed-tensors); fields from
  ``text_config`` (kimi-k3.md §1).
* ``deepseek`` – DeepSeek-V2/V3/R1, Kimi-K2/K2.5 (MLA + MoE; BF16, FP8 block, NVFP4, INT4).
* ``qwen3_moe`` / ``qwen2_moe`` – Qwen MoE (GQA).
* ``mixtral`` – Mixtral (GQA + 8 experts).
* ``gpt_oss`` – gpt-oss (GQA with sinks, MXFP4 experts, alternating sliding window).
* ``glm4_moe`` – GLM-4.5 / 4.5-Air (GQA + MoE with a shared expert and MTP layer).
* ``dense`` – Llama / Qwen2 / Qwen3 / Mistral dense decoders.

Anything else raises :class:`UnknownArchitecture`, naming the fields that are missing so the caller
can fall back to header-only accounting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

__all__ = ["ModelSpec", "UnknownArchitecture", "spec_from_config", "load_known_config", "KNOWN_MODELS"]

CONFIG_DIR = Path(__file__).with_name("configs")

#: Hub ids (lower-case) and short names -> bundled config file (public config.json values).
KNOWN_MODELS: dict[str, str] = {
    "moonshotai/kimi-k3": "kimi-k3",
    "moonshotai/kimi-k2-instruct": "kimi-k2",
    "moonshotai/kimi-k2-instruct-0905": "kimi-k2",
    "moonshotai/kimi-k2-base": "kimi-k2",
    "moonshotai/kimi-k2-thinking": "kimi-k2-thinking",
    "deepseek-ai/deepseek-v2-lite": "deepseek-v2-lite",
    "deepseek-ai/deepseek-v2-lite-chat": "deepseek-v2-lite",
    "deepseek-ai/deepseek-v3": "deepseek-v3",
    "deepseek-ai/deepseek-v3-0324": "deepseek-v3",
    "deepseek-ai/deepseek-v3.1": "deepseek-v3",
    "deepseek-ai/deepseek-r1": "deepseek-v3",
    "deepseek-ai/deepseek-r1-0528": "deepseek-v3",
    "unsloth/deepseek-r1-bf16": "deepseek-v3-bf16",
    "nvidia/deepseek-r1-fp4": "deepseek-r1-fp4",
    "qwen/qwen3-235b-a22b": "qwen3-235b-a22b",
    "qwen/qwen3-235b-a22b-instruct-2507": "qwen3-235b-a22b",
    "qwen/qwen3-235b-a22b-fp8": "qwen3-235b-a22b-fp8",
    "qwen/qwen3-235b-a22b-instruct-2507-fp8": "qwen3-235b-a22b-fp8",
    "qwen/qwen3-30b-a3b": "qwen3-30b-a3b",
    "qwen/qwen3-30b-a3b-instruct-2507": "qwen3-30b-a3b",
    "qwen/qwen3-30b-a3b-fp8": "qwen3-30b-a3b-fp8",
    "qwen/qwen3-0.6b": "qwen3-0.6b",
    "qwen/qwen3-1.7b": "qwen3-1.7b",
    "qwen/qwen3-4b": "qwen3-4b",
    "qwen/qwen3-8b": "qwen3-8b",
    "qwen/qwen3-14b": "qwen3-14b",
    "qwen/qwen3-32b": "qwen3-32b",
    "meta-llama/llama-3.1-8b-instruct": "llama-3.1-8b",
    "meta-llama/meta-llama-3.1-8b-instruct": "llama-3.1-8b",
    "meta-llama/llama-3.1-70b-instruct": "llama-3.1-70b",
    "meta-llama/meta-llama-3.1-70b-instruct": "llama-3.1-70b",
    "meta-llama/llama-3.3-70b-instruct": "llama-3.1-70b",
    "redhatai/llama-3.3-70b-instruct-fp8-dynamic": "llama-3.3-70b-fp8-dynamic",
    "meta-llama/llama-3.1-405b-instruct": "llama-3.1-405b",
    "meta-llama/llama-3.2-1b-instruct": "llama-3.2-1b",
    "meta-llama/llama-3.2-3b-instruct": "llama-3.2-3b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "mistralai/mixtral-8x7b-instruct-v0.1": "mixtral-8x7b",
    "mistralai/mixtral-8x7b-v0.1": "mixtral-8x7b",
    "mistralai/mixtral-8x22b-instruct-v0.1": "mixtral-8x22b",
    "zai-org/glm-4.5": "glm-4.5",
    "zai-org/glm-4.5-fp8": "glm-4.5-fp8",
    "zai-org/glm-4.5-air": "glm-4.5-air",
    "zai-org/glm-4.5-air-fp8": "glm-4.5-air-fp8",
}


class UnknownArchitecture(ValueError):
    """config.json does not describe an architecture the memory model knows."""

    def __init__(self, message: str, missing: list[str] | None = None) -> None:
        super().__init__(message)
        self.missing = list(missing or [])


def load_known_config(name: str) -> dict[str, Any] | None:
    """Bundled config for a Hub id (``moonshotai/Kimi-K3``) or short name (``kimi-k3``)."""
    key = name.strip().rstrip("/").lower()
    stem = KNOWN_MODELS.get(key)
    if stem is None:
        tail = key.rsplit("/", 1)[-1]
        stem = tail if (CONFIG_DIR / f"{tail}.json").is_file() else KNOWN_MODELS.get(tail)
        if stem is None:
            for hub, s in KNOWN_MODELS.items():
                if hub.rsplit("/", 1)[-1] == tail:
                    stem = s
                    break
    if stem is None:
        return None
    return json.loads((CONFIG_DIR / f"{stem}.json").read_text())


@dataclass
class ModelSpec:
    family: str
    arch: str
    hidden: int
    layers: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    tie_embeddings: bool = False
    # MLA
    mla: bool = False
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope: int = 0
    qk_rope: int = 0
    v_head: int = 0
    # MoE
    experts: int = 0
    topk: int = 0
    moe_intermediate: int = 0
    shared_intermediate: int = 0  # total width of the shared-expert MLP (0 = none)
    intermediate: int = 0  # dense MLP width
    first_dense: int = 0  # number of leading dense layers
    moe_layers: tuple[int, ...] = ()
    mtp_layers: int = 0
    # K3 specifics
    latent: int = 0
    kda_layers: tuple[int, ...] = ()  # zero-based
    mla_layers: tuple[int, ...] = ()  # zero-based (MLA / full attention layers)
    kda_heads: int = 0
    kda_head_dim: int = 0
    kda_conv: int = 0
    vision: bool = False
    # sliding window (gpt-oss)
    sliding_layers: tuple[int, ...] = ()
    sliding_window: int = 0
    # quantisation
    quant: str = "bf16"  # bf16 | fp8_block | mxfp4_ct | mxfp4 | nvfp4 | int4_ct
    quant_block: tuple[int, int] = (128, 128)
    attn_bias: bool = False
    qk_norm: bool = False
    max_position: int = 0
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def kv_bytes_per_token_layer(self, dtype_bytes: float) -> float:
        if self.mla:
            return (self.kv_lora_rank + self.qk_rope) * dtype_bytes
        return 2 * self.kv_heads * self.head_dim * dtype_bytes


def _quant(cfg: Mapping[str, Any]) -> tuple[str, tuple[int, int]]:
    q = cfg.get("quantization_config") or {}
    if not q:
        return "bf16", (128, 128)
    method = str(q.get("quant_method", "")).lower()
    fmt = str(q.get("format", "")).lower()
    if method == "compressed-tensors" and "float-quantized" in fmt:
        groups = q.get("config_groups") or {}
        strat = ""
        for g in groups.values():
            strat = str(((g or {}).get("weights") or {}).get("strategy", ""))
        if strat in ("channel", "tensor"):
            return "fp8_channel", (1, 1)
        first: dict[str, Any] = dict(next(iter(groups.values()), None) or {})
        blk = (first.get("weights") or {}).get("block_structure") or [128, 128]
        return "fp8_block", (int(blk[0]), int(blk[1]))
    if method == "fp8":
        blk = q.get("weight_block_size") or [128, 128]
        return "fp8_block", (int(blk[0]), int(blk[1]))
    if method == "mxfp4":
        return "mxfp4", (1, 32)
    if method == "compressed-tensors" and "mxfp4" in fmt:
        return "mxfp4_ct", (1, 32)
    if method == "compressed-tensors" and "pack-quantized" in fmt:
        return "int4_ct", (1, 32)
    if method in ("modelopt", "modelopt_fp4") or "fp4" in str(q.get("quant_algo", "")).lower():
        return "nvfp4", (1, 16)
    return "bf16", (128, 128)


def spec_from_config(config: Mapping[str, Any]) -> ModelSpec:
    """Build a :class:`ModelSpec` or raise :class:`UnknownArchitecture` naming missing fields."""
    if not isinstance(config, Mapping):
        raise UnknownArchitecture("config.json is not a JSON object")
    top = config
    archs = list(top.get("architectures") or [])
    arch = archs[0] if archs else str(top.get("model_type", "?"))
    mt = str(top.get("model_type", "")).lower()
    cfg = top
    if mt == "kimi_k3" or "KimiK3" in arch:
        cfg = dict(top.get("text_config") or {})
        if "quantization_config" not in cfg and top.get("quantization_config"):
            cfg["quantization_config"] = top["quantization_config"]
        return _kimi_k3(cfg, arch, top)
    if "text_config" in top and "hidden_size" not in top:
        cfg = dict(top["text_config"])
        cfg.setdefault("quantization_config", top.get("quantization_config"))
        mt = str(cfg.get("model_type", mt)).lower()
    quant, block = _quant(cfg)

    def need(*keys: str) -> None:
        missing = [k for k in keys if cfg.get(k) is None]
        if missing:
            raise UnknownArchitecture(
                f"config.json ({arch}) lacks {', '.join(missing)}", missing=missing
            )

    base: dict[str, Any] = dict(
        arch=arch,
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        quant=quant,
        quant_block=block,
        max_position=int(cfg.get("max_position_embeddings") or 0),
        raw=top,
    )
    if cfg.get("kv_lora_rank") and ("deepseek" in mt or "kimi" in mt or "Deepseek" in arch):
        need("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "kv_lora_rank",
             "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
        n_exp = int(cfg.get("n_routed_experts") or 0)
        L = int(cfg["num_hidden_layers"])
        fk = int(cfg.get("first_k_dense_replace") or 0) if n_exp else L
        freq = int(cfg.get("moe_layer_freq") or 1)
        moe_layers = tuple(i for i in range(L) if n_exp and i >= fk and i % freq == 0)
        return ModelSpec(
            family="deepseek", hidden=int(cfg["hidden_size"]), layers=L, vocab=int(cfg["vocab_size"]),
            heads=int(cfg["num_attention_heads"]), kv_heads=int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"]),
            head_dim=int(cfg["qk_nope_head_dim"]) + int(cfg["qk_rope_head_dim"]), mla=True,
            q_lora_rank=int(cfg.get("q_lora_rank") or 0), kv_lora_rank=int(cfg["kv_lora_rank"]),
            qk_nope=int(cfg["qk_nope_head_dim"]), qk_rope=int(cfg["qk_rope_head_dim"]), v_head=int(cfg["v_head_dim"]),
            experts=n_exp, topk=int(cfg.get("num_experts_per_tok") or 0),
            moe_intermediate=int(cfg.get("moe_intermediate_size") or 0),
            shared_intermediate=int(cfg.get("n_shared_experts") or 0) * int(cfg.get("moe_intermediate_size") or 0),
            intermediate=int(cfg.get("intermediate_size") or 0), first_dense=fk, moe_layers=moe_layers,
            mtp_layers=int(cfg.get("num_nextn_predict_layers") or 0), mla_layers=tuple(range(L)), **base,
        )
    dense_types = ("llama", "qwen2", "qwen3", "mistral", "gemma", "phi3", "granite")
    known = (mt in ("gpt_oss", "mixtral", "qwen3_moe", "qwen2_moe", "glm4_moe") + dense_types
             or any(a in arch for a in ("GptOss", "Mixtral", "Qwen3Moe", "Qwen2Moe", "Glm4Moe", "Llama", "Qwen2For",
                                        "Qwen3For", "MistralFor")))
    if not known:
        generic = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size",
                   "intermediate_size")
        missing = [k for k in generic if cfg.get(k) is None]
        raise UnknownArchitecture(
            f"architecture {arch!r} (model_type {mt!r}) is not modelled (known: Kimi-K3, DeepSeek-V2/V3/R1, Kimi-K2, "
            "Qwen3/Qwen2(-MoE), Llama, Mistral, Mixtral, gpt-oss, GLM-4.5)"
            + (f"; config.json also lacks {', '.join(missing)}" if missing else ""),
            missing=["architectures (a supported value)"] + missing,
        )
    need("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    H, L, nh = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"])
    kvh = int(cfg.get("num_key_value_heads") or nh)
    hd = int(cfg.get("head_dim") or H // nh)
    common: dict[str, Any] = dict(hidden=H, layers=L, vocab=int(cfg["vocab_size"]), heads=nh, kv_heads=kvh, head_dim=hd,
                  mla_layers=tuple(range(L)), **base)
    if mt == "gpt_oss" or "GptOss" in arch:
        need("num_local_experts", "intermediate_size")
        types = list(cfg.get("layer_types") or [])
        sliding = tuple(i for i, t in enumerate(types) if t == "sliding_attention") if types else tuple(range(0, L, 2))
        return ModelSpec(family="gpt_oss", experts=int(cfg["num_local_experts"]),
                         topk=int(cfg.get("experts_per_token") or cfg.get("num_experts_per_tok") or 4),
                         moe_intermediate=int(cfg["intermediate_size"]), moe_layers=tuple(range(L)),
                         sliding_layers=sliding, sliding_window=int(cfg.get("sliding_window") or 128),
                         attn_bias=True, **common)
    if mt == "mixtral" or "Mixtral" in arch:
        need("num_local_experts", "intermediate_size")
        return ModelSpec(family="mixtral", experts=int(cfg["num_local_experts"]), topk=int(cfg.get("num_experts_per_tok") or 2),
                         moe_intermediate=int(cfg["intermediate_size"]), moe_layers=tuple(range(L)), **common)
    if mt in ("qwen3_moe", "qwen2_moe") or "Qwen3Moe" in arch or "Qwen2Moe" in arch:
        need("num_experts", "moe_intermediate_size")
        step = int(cfg.get("decoder_sparse_step") or 1)
        only = set(cfg.get("mlp_only_layers") or [])
        moe_layers = tuple(i for i in range(L) if i not in only and (i + 1) % step == 0)
        return ModelSpec(family="qwen_moe", experts=int(cfg["num_experts"]), topk=int(cfg.get("num_experts_per_tok") or 8),
                         moe_intermediate=int(cfg["moe_intermediate_size"]),
                         shared_intermediate=int(cfg.get("shared_expert_intermediate_size") or 0),
                         intermediate=int(cfg.get("intermediate_size") or 0), moe_layers=moe_layers,
                         qk_norm=mt == "qwen3_moe", attn_bias=mt == "qwen2_moe", **common)
    if mt in ("glm4_moe",) or "Glm4Moe" in arch:
        need("n_routed_experts", "moe_intermediate_size", "intermediate_size")
        fk = int(cfg.get("first_k_dense_replace") or 0)
        return ModelSpec(family="glm4_moe", experts=int(cfg["n_routed_experts"]), topk=int(cfg.get("num_experts_per_tok") or 8),
                         moe_intermediate=int(cfg["moe_intermediate_size"]),
                         shared_intermediate=int(cfg.get("n_shared_experts") or 0) * int(cfg["moe_intermediate_size"]),
                         intermediate=int(cfg["intermediate_size"]), first_dense=fk, moe_layers=tuple(range(fk, L)),
                         mtp_layers=int(cfg.get("num_nextn_predict_layers") or 0),
                         attn_bias=bool(cfg.get("attention_bias", True)), qk_norm=bool(cfg.get("use_qk_norm", False)), **common)
    if mt in dense_types or any(a in arch for a in ("Llama", "Qwen2For", "Qwen3For", "MistralFor")):
        need("intermediate_size")
        return ModelSpec(family="dense", intermediate=int(cfg["intermediate_size"]),
                         qk_norm=mt == "qwen3", attn_bias=mt == "qwen2", **common)
    raise UnknownArchitecture(
        f"architecture {arch!r} (model_type {mt!r}) is not modelled; known: Kimi-K3, DeepSeek-V2/V3/R1, "
        "Kimi-K2, Qwen3/Qwen2(-MoE), Llama, Mistral, Mixtral, gpt-oss, GLM-4.5",
        missing=["architectures (a supported value)"],
    )


def _kimi_k3(cfg: Mapping[str, Any], arch: str, top: Mapping[str, Any]) -> ModelSpec:
    keys = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "kv_lora_rank",
            "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "num_experts", "moe_intermediate_size",
            "routed_expert_hidden_size", "linear_attn_config")
    missing = [k for k in keys if cfg.get(k) is None]
    if missing:
        raise UnknownArchitecture(f"Kimi-K3 config.json text_config lacks {', '.join(missing)}", missing=missing)
    lac = cfg["linear_attn_config"]
    L = int(cfg["num_hidden_layers"])
    kda = tuple(sorted(int(i) - 1 for i in lac.get("kda_layers") or []))
    full = tuple(sorted(int(i) - 1 for i in lac.get("full_attn_layers") or []))
    if sorted(kda + full) != list(range(L)):
        raise UnknownArchitecture("Kimi-K3 linear_attn_config kda_layers + full_attn_layers do not partition 1..num_hidden_layers",
                                  missing=["linear_attn_config.kda_layers", "linear_attn_config.full_attn_layers"])
    quant, block = _quant(cfg)
    fk = int(cfg.get("first_k_dense_replace") or 0)
    moe_int = int(cfg["moe_intermediate_size"])
    return ModelSpec(
        family="kimi_k3", arch=arch, hidden=int(cfg["hidden_size"]), layers=L, vocab=int(cfg["vocab_size"]),
        heads=int(cfg["num_attention_heads"]), kv_heads=int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"]),
        head_dim=int(cfg["qk_nope_head_dim"]) + int(cfg["qk_rope_head_dim"]), tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        mla=True, q_lora_rank=int(cfg.get("q_lora_rank") or 0), kv_lora_rank=int(cfg["kv_lora_rank"]),
        qk_nope=int(cfg["qk_nope_head_dim"]), qk_rope=int(cfg["qk_rope_head_dim"]), v_head=int(cfg["v_head_dim"]),
        experts=int(cfg["num_experts"]), topk=int(cfg.get("num_experts_per_token") or 0), moe_intermediate=moe_int,
        shared_intermediate=int(cfg.get("num_shared_experts") or 0) * moe_int, intermediate=int(cfg.get("intermediate_size") or 0),
        first_dense=fk, moe_layers=tuple(range(fk, L)), mtp_layers=int(cfg.get("num_nextn_predict_layers") or 0),
        latent=int(cfg["routed_expert_hidden_size"]), kda_layers=kda, mla_layers=full,
        kda_heads=int(lac.get("num_heads") or 0), kda_head_dim=int(lac.get("head_dim") or 0),
        kda_conv=int(lac.get("short_conv_kernel_size") or 4), vision=bool(top.get("vision_config")),
        quant=quant, quant_block=block, max_position=int(cfg.get("max_position_embeddings") or 0), raw=top,
    )
