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
* ``llama4`` – Llama-4 Scout/Maverick (MoE every ``interleave_moe_layer_step`` layers, a shared
  expert, dense layers ``intermediate_size_mlp`` wide, a vision tower).
* ``deepseek_v4`` – DeepSeek-V4 Flash/Pro (grouped low-rank output, per-layer KV compressors, the
  lightning indexer, hyper-connections, hash-routed first layers, FP4 experts for
  ``expert_dtype: fp4``) in the release naming (``layers.N.attn.`` / ``ffn.``, ``mtp.0.``).
* ``generic`` – any other decoder whose config.json has the standard fields (hidden size, layers,
  heads, KV heads, head dim, intermediate sizes, expert counts, vocab): the projection is built
  from them and marked ``approximate`` with what was assumed (``notes``). Hybrids are read from
  their layer lists (Nemotron-H ``mixer.`` blocks, Qwen3-Next/3.5 Gated DeltaNet and ``mtp.``
  layers, Gemma-4 global-attention geometry and dense MLP beside the experts).

A ``vision_config`` adds an estimated vision tower + projector (``vision_params``) unless the
family models its own. Quantisation comes from :mod:`.quantscheme`. Only a config without the
standard fields raises :class:`UnknownArchitecture`, naming them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .quantscheme import QuantScheme, parse_quant

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
    #: where the checkpoint keeps the MTP block: "" (DeepSeek/GLM: ``model.layers.{L+j}`` with
    #: enorm/hnorm/eh_proj) or "mtp" (Qwen3-Next/3.5: ``mtp.layers.{j}`` full-attention layers
    #: joined by ``mtp.fc`` and ``mtp.pre_fc_norm_*``)
    mtp_prefix: str = ""
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
    qscheme: QuantScheme = field(default_factory=QuantScheme)
    attn_bias: bool = False
    # MLP shape: gated (gate/up/down) unless the family uses a plain 2-matrix MLP
    gated_mlp: bool = True
    # estimated vision tower + projector parameters (0: none, or modelled by the family)
    vision_params: int = 0
    vision_replicated: bool = False
    #: hybrid decoders, one entry per layer: token mixer "attn" | "linear" (Gated DeltaNet) |
    #: "mamba" (Mamba-2) | "none", and MLP "dense" | "moe" | "none" (empty: attention + the
    #: family's MLP rule on every layer)
    layer_mixers: tuple[str, ...] = ()
    layer_mlps: tuple[str, ...] = ()
    #: per-layer MLP widths and KV heads of heterogeneous decoders (DeciLM / Nemotron-NAS
    #: ``block_configs``); empty: ``intermediate`` and ``kv_heads`` on every layer
    layer_intermediate: tuple[int, ...] = ()
    layer_kv_heads: tuple[int, ...] = ()
    #: Gated DeltaNet: (key heads, key head dim, value heads, value head dim, conv kernel)
    linear_dims: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    #: Mamba-2: (inner width, groups, state size, heads, conv kernel)
    mamba_dims: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    attn_output_gate: bool = False   # Qwen3-Next/3.5: q_proj also emits the output gate
    gated_experts: bool = True       # routed/shared experts with gate+up+down (False: up+down)
    #: the projection rests on assumptions (generic fallback, estimated vision tower)
    approximate: bool = False
    notes: tuple[str, ...] = ()
    qk_norm: bool = False
    max_position: int = 0
    #: checkpoint naming of the token mixers: "" (``self_attn.`` / ``linear_attn.``) or
    #: "mixer" (Nemotron-H: every block's mixer, attention included, is ``mixer.``)
    mixer_prefix: str = ""
    #: Gated DeltaNet input projections stored split (Qwen3.5: ``in_proj_qkv``, ``in_proj_z``,
    #: ``in_proj_b``, ``in_proj_a``) instead of fused (Qwen3-Next: ``in_proj_qkvz``, ``in_proj_ba``)
    gdn_split: bool = False
    #: Gemma-4 full-attention layers: their own head dim and KV heads; with ``k_eq_v`` they carry
    #: no ``v_proj`` (K is reused as V)
    global_layers: tuple[int, ...] = ()
    global_head_dim: int = 0
    global_kv_heads: int = 0
    k_eq_v: bool = False
    #: layers with both a dense MLP and routed experts (Gemma-4 ``enable_moe_block``)
    moe_plus_dense: bool = False
    #: DeepSeek-V4: grouped low-rank output, per-layer KV compression (0 / 4 / 128), the
    #: lightning indexer, hyper-connections, hash-routed first layers, expert storage
    o_lora_rank: int = 0
    o_groups: int = 0
    compress_ratios: tuple[int, ...] = ()
    index_heads: int = 0
    index_head_dim: int = 0
    hc_mult: int = 0
    hash_layers: int = 0
    #: DeepSeek Sparse Attention (V3.2 / GLM-5): the MLA layers that carry a lightning indexer
    index_layers: tuple[int, ...] = ()
    expert_quant: str = ""   # "mxfp4" (DeepSeek-V4 ``expert_dtype: fp4``) or "" (the config's scheme)
    #: the checkpoint's floating-point storage (config ``torch_dtype`` / ``dtype``): "BF16", "F16" or
    #: "F32"; the engines serve a float32 checkpoint in 16 bits (placement halves its F32 tensors)
    ckpt_dtype: str = "BF16"
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def kv_bytes_per_token_layer(self, dtype_bytes: float) -> float:
        if self.mla:
            return (self.kv_lora_rank + self.qk_rope) * dtype_bytes
        return 2 * self.kv_heads * self.head_dim * dtype_bytes


def _quant(q: QuantScheme) -> tuple[str, tuple[int, int]]:
    """(legacy quant name, block) of a parsed scheme (``spec.quant`` / ``spec.quant_block``)."""
    return q.legacy, q.block if q.method == "fp8_block" else ((1, q.group) if q.quantised else (128, 128))


def spec_from_config(config: Mapping[str, Any]) -> ModelSpec:
    """Build a :class:`ModelSpec` or raise :class:`UnknownArchitecture` naming missing fields
    (a field of an unexpected type is reported the same way, never as a traceback)."""
    from .configlimits import ConfigLimitError, check_config_limits

    try:
        if isinstance(config, Mapping):
            check_config_limits(config)
        return _spec_from_config(config)
    except UnknownArchitecture:
        raise
    except ConfigLimitError as exc:
        raise UnknownArchitecture(str(exc), missing=[]) from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ArithmeticError) as exc:
        raise UnknownArchitecture(f"config.json has a field this projection cannot read ({type(exc).__name__}: "
                                  f"{str(exc)[:160]})", missing=[]) from None


def _spec_from_config(config: Mapping[str, Any]) -> ModelSpec:
    from .vision import vision_param_estimate

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
    # the language model's own config: transformers ``text_config`` (InternVL ``llm_config``, DeepSeek-VL2 /
    # OCR ``language_config``), used when the top level lacks the decoder's size (PaliGemma keeps a
    # ``hidden_size`` at the top for the projector but the layer count only in ``text_config``)
    sub = next((k for k in ("text_config", "llm_config", "language_config") if isinstance(top.get(k), Mapping)), None)
    if sub and ("hidden_size" not in top or "num_hidden_layers" not in top):
        cfg = dict(top[sub])
        cfg.setdefault("quantization_config", top.get("quantization_config"))
        for k in ("torch_dtype", "dtype"):
            if k in top and k not in cfg:
                cfg[k] = top[k]
        mt = str(cfg.get("model_type", mt)).lower()
    qscheme = parse_quant(cfg)
    quant, block = _quant(qscheme)

    tie = cfg.get("tie_word_embeddings", top.get("tie_word_embeddings"))
    if tie is None:  # absent: the config class's default (transformers' PretrainedConfig ties)
        tie = mt.startswith(_TIED_BY_DEFAULT)
    base: dict[str, Any] = dict(
        ckpt_dtype=_ckpt_dtype(cfg, top),
        arch=arch,
        tie_embeddings=bool(tie),
        quant=quant,
        quant_block=block,
        qscheme=qscheme,
        max_position=int(cfg.get("max_position_embeddings") or 0),
        raw=top,
    )
    spec = _text_spec(cfg, top, arch, mt, base)
    vis, why = (0, "") if spec.family == "kimi_k3" else vision_param_estimate(top, spec.hidden)
    notes = list(spec.notes) + list(qscheme.notes)
    if qscheme.uncertain:
        notes.append("UNCERTAIN QUANTISATION: " + qscheme.uncertain)
    if vis:
        notes.append(why)
    if vis or notes != list(spec.notes):
        spec.vision_params = vis
        spec.notes = tuple(notes)
        spec.approximate = spec.approximate or bool(vis) or bool(qscheme.uncertain)
    return spec


#: model types whose transformers config class leaves ``tie_word_embeddings`` at PretrainedConfig's
#: default (True) — when config.json omits it the checkpoint has no separate head; the table's
#: other families (Llama, Qwen, Mistral, Phi-3, GPT-NeoX, ...) override it to False
_TIED_BY_DEFAULT = ("gemma", "paligemma", "smollm3", "bloom", "gpt2", "cohere")

_FLOAT_DTYPES = {"float32": "F32", "float": "F32", "fp32": "F32", "float16": "F16", "half": "F16", "fp16": "F16",
                 "bfloat16": "BF16", "bf16": "BF16"}


def _ckpt_dtype(cfg: Mapping[str, Any], top: Mapping[str, Any]) -> str:
    """The checkpoint's floating-point storage from ``torch_dtype`` (``dtype`` in newer
    transformers), text config first; BF16 when absent."""
    for c in (cfg, top):
        for k in ("torch_dtype", "dtype"):
            v = c.get(k)
            if isinstance(v, str) and v.lower().replace("torch.", "") in _FLOAT_DTYPES:
                return _FLOAT_DTYPES[v.lower().replace("torch.", "")]
    return "BF16"


def _need(cfg: Mapping[str, Any], arch: str, keys: tuple[str, ...]) -> None:
    """Raise :class:`UnknownArchitecture` naming the config keys that are missing."""
    missing = [k for k in keys if cfg.get(k) is None]
    if missing:
        raise UnknownArchitecture(f"config.json ({arch}) lacks {', '.join(missing)}", missing=missing)


def _mla_spec(cfg: Mapping[str, Any], arch: str, base: dict[str, Any]) -> ModelSpec:
    """DeepSeek-style MLA models (DeepSeek-V2/V3/R1, Kimi-K2 and their kin)."""
    _need(cfg, arch, ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "kv_lora_rank",
                      "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    n_exp = int(cfg.get("n_routed_experts") or 0)
    L = int(cfg["num_hidden_layers"])
    fk = int(cfg.get("first_k_dense_replace") or 0) if n_exp else L
    freq = int(cfg.get("moe_layer_freq") or 1)
    moe_layers = tuple(i for i in range(L) if n_exp and i >= fk and i % freq == 0)
    return ModelSpec(**_dsa_indexer(cfg, L), **_mla_fields(cfg, arch, L, n_exp, fk, moe_layers), **base)


def _dsa_indexer(cfg: Mapping[str, Any], L: int) -> dict[str, Any]:
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5 ``glm_moe_dsa``):
    ``index_n_heads`` x ``index_head_dim`` on every layer, or on the ``full`` ones of ``indexer_types``
    (GLM-5.2 IndexShare: a ``shared`` layer reuses another's indexer and has no weights)."""
    heads, dim = int(cfg.get("index_n_heads") or 0), int(cfg.get("index_head_dim") or 0)
    if not heads or not dim:
        return {}
    types = [str(t).lower() for t in cfg.get("indexer_types") or []]
    layers = tuple(i for i, t in enumerate(types) if t != "shared") if len(types) == L else tuple(range(L))
    return {"index_heads": heads, "index_head_dim": dim, "index_layers": layers}


def _mla_fields(cfg: Mapping[str, Any], arch: str, L: int, n_exp: int, fk: int, moe_layers: tuple[int, ...]) -> dict[str, Any]:
    return dict(
        family="deepseek", hidden=int(cfg["hidden_size"]), layers=L, vocab=int(cfg["vocab_size"]),
        heads=int(cfg["num_attention_heads"]), kv_heads=int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"]),
        head_dim=int(cfg["qk_nope_head_dim"]) + int(cfg["qk_rope_head_dim"]), mla=True,
        q_lora_rank=int(cfg.get("q_lora_rank") or 0), kv_lora_rank=int(cfg["kv_lora_rank"]),
        qk_nope=int(cfg["qk_nope_head_dim"]), qk_rope=int(cfg["qk_rope_head_dim"]), v_head=int(cfg["v_head_dim"]),
        experts=n_exp, topk=int(cfg.get("num_experts_per_tok") or 0),
        moe_intermediate=int(cfg.get("moe_intermediate_size") or 0),
        shared_intermediate=int(cfg.get("n_shared_experts") or 0) * int(cfg.get("moe_intermediate_size") or 0),
        intermediate=int(cfg.get("intermediate_size") or 0), first_dense=fk, moe_layers=moe_layers,
        mtp_layers=int(cfg.get("num_nextn_predict_layers") or 0), mla_layers=tuple(range(L)),
    )


def _deepseek_v4_spec(cfg: Mapping[str, Any], arch: str, base: dict[str, Any]) -> ModelSpec:
    """DeepSeek-V4 (Flash/Pro): single-KV-head attention with a low-rank query (``wq_a`` ->
    ``wq_b``) and a grouped low-rank output (``wo_a`` -> ``wo_b``), a KV compressor on layers with
    ``compress_ratios`` 4 or 128 and a lightning indexer on the ratio-4 ones, hyper-connections
    (``hc_mult`` residual streams mixed by fp32 ``hc_*`` parameters), hash-routed first
    ``num_hash_layers`` MoE layers, MoE on every layer and one MTP block (vLLM
    model_executor/models/deepseek_v4.py, layers/deepseek_v4_attention.py; SGLang
    srt/models/deepseek_v4.py, layers/attention/dsv4/compressor.py). ``expert_dtype: fp4`` stores
    the routed experts as MXFP4 (e2m1 + one e8m0 scale per 32) while the rest stays FP8 block."""
    _need(cfg, arch, ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "head_dim",
                      "q_lora_rank", "o_lora_rank", "o_groups", "n_routed_experts", "moe_intermediate_size"))
    L, H = int(cfg["num_hidden_layers"]), int(cfg["hidden_size"])
    ratios = [int(r) for r in (cfg.get("compress_ratios") or [])][:L]
    ratios += [0] * (L - len(ratios))
    E, I = int(cfg["n_routed_experts"]), int(cfg["moe_intermediate_size"])
    expert = str(cfg.get("expert_dtype") or "").lower()
    notes = ["DeepSeek-V4: compressor/indexer and hyper-connection tensors sized from config.json "
             "(vLLM/SGLang deepseek_v4 model code); names follow the released checkpoint"]
    return ModelSpec(
        family="deepseek_v4", hidden=H, layers=L, vocab=int(cfg["vocab_size"]),
        heads=int(cfg["num_attention_heads"]), kv_heads=1, head_dim=int(cfg["head_dim"]),
        q_lora_rank=int(cfg["q_lora_rank"]), qk_rope=int(cfg.get("qk_rope_head_dim") or 64),
        experts=E, topk=int(cfg.get("num_experts_per_tok") or 0), moe_intermediate=I,
        shared_intermediate=int(cfg.get("n_shared_experts") or 0) * I, moe_layers=tuple(range(L)),
        mtp_layers=int(cfg.get("num_nextn_predict_layers") or 0), mla_layers=tuple(range(L)),
        o_lora_rank=int(cfg["o_lora_rank"]), o_groups=int(cfg["o_groups"]), compress_ratios=tuple(ratios),
        index_heads=int(cfg.get("index_n_heads") or 0), index_head_dim=int(cfg.get("index_head_dim") or 0),
        hc_mult=int(cfg.get("hc_mult") or 1), hash_layers=int(cfg.get("num_hash_layers") or 0),
        expert_quant="mxfp4" if expert == "fp4" else "", sliding_window=int(cfg.get("sliding_window") or 0),
        notes=tuple(notes), **base,
    )


def _text_spec(cfg: Mapping[str, Any], top: Mapping[str, Any], arch: str, mt: str,
               base: dict[str, Any]) -> ModelSpec:
    """The language model's spec (family table, else the generic fallback)."""
    from .spec_generic import generic_spec

    def need(*keys: str) -> None:
        _need(cfg, arch, keys)

    if mt in ("deepseek_v4", "deepseek_ref") or "DeepseekV4" in arch:
        return _deepseek_v4_spec(cfg, arch, base)
    if cfg.get("kv_lora_rank") and cfg.get("qk_nope_head_dim") is not None:
        return _mla_spec(cfg, arch, base)
    dense_types = ("llama", "qwen2", "qwen3", "mistral", "gemma", "phi3", "granite")
    known = (mt in ("gpt_oss", "mixtral", "qwen3_moe", "qwen2_moe", "glm4_moe") + dense_types
             or any(a in arch for a in ("GptOss", "Mixtral", "Qwen3Moe", "Qwen2Moe", "Glm4Moe", "Llama", "Qwen2For",
                                        "Qwen3For", "MistralFor")))
    if mt == "llama4_text" or mt == "llama4" or "Llama4" in arch:
        return _llama4(cfg, base)
    if not known:
        return generic_spec(cfg, arch, mt, base)
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
    return generic_spec(cfg, arch, mt, base)


def _llama4(cfg: Mapping[str, Any], base: dict[str, Any]) -> ModelSpec:
    """Llama-4: MoE every ``interleave_moe_layer_step`` layers (one routed expert + a shared
    expert, both ``intermediate_size`` wide), dense layers ``intermediate_size_mlp`` wide
    (transformers/models/llama4, vLLM model_executor/models/llama4.py)."""
    for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "num_local_experts",
              "intermediate_size"):
        if cfg.get(k) is None:
            raise UnknownArchitecture(f"Llama-4 config.json text_config lacks {k}", missing=[k])
    H, L, nh = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"])
    step = int(cfg.get("interleave_moe_layer_step") or 1)
    explicit = cfg.get("moe_layers")
    moe_layers = (tuple(int(i) for i in explicit) if isinstance(explicit, list) and explicit
                  else tuple(range(step - 1, L, step)))
    I = int(cfg["intermediate_size"])
    return ModelSpec(
        family="llama4", hidden=H, layers=L, vocab=int(cfg["vocab_size"]), heads=nh,
        kv_heads=int(cfg.get("num_key_value_heads") or nh), head_dim=int(cfg.get("head_dim") or H // nh),
        experts=int(cfg["num_local_experts"]), topk=int(cfg.get("num_experts_per_tok") or 1),
        moe_intermediate=I, shared_intermediate=I, intermediate=int(cfg.get("intermediate_size_mlp") or I),
        moe_layers=moe_layers, mla_layers=tuple(range(L)), **base,
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
    qscheme = parse_quant(cfg)
    quant, block = _quant(qscheme)
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
        quant=quant, quant_block=block, qscheme=qscheme, max_position=int(cfg.get("max_position_embeddings") or 0),
        raw=top,
    )
