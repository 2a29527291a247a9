"""The generic projection: a decoder built from config.json's standard fields, for an architecture
the memory model has no entry for (see :mod:`.spec`'s module doc). Hybrids are read from their layer
lists (Nemotron-H ``mixer.`` blocks and DeciLM/Nemotron-NAS ``block_configs``, Qwen3-Next/3.5 Gated
DeltaNet and ``mtp.`` layers, Gemma-4 global-attention geometry and dense MLP beside the experts)."""

from __future__ import annotations

from typing import Any, Mapping

from .spec import ModelSpec, UnknownArchitecture

__all__ = ["generic_spec", "hybrid_layers"]

_GATED_NO = ("gpt2", "gpt_neox", "falcon", "starcoder2", "phi", "bloom", "opt", "gptj", "mpt",
             "gpt_bigcode", "codegen", "olmo_nonstd")


def _first(cfg: Mapping[str, Any], *keys: str) -> Any:
    for k in keys:
        v = cfg.get(k)
        if v is not None:
            return v
    return None


def _moe_layers(cfg: Mapping[str, Any], L: int) -> tuple[tuple[int, ...], int]:
    """(the MoE layers' indices, the leading dense layers) from the config's layer pattern: per-layer
    0/1 flags, an explicit index list, or a step with leading dense and MLP-only layers."""
    freq = _first(cfg, "interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq")
    step = int(freq) if isinstance(freq, (int, float)) and freq >= 1 else 1
    first_dense = int(_first(cfg, "first_k_dense_replace", "first_k_dense") or 0)
    only = set(cfg.get("mlp_only_layers") or [])
    explicit = cfg.get("moe_layers") or cfg.get("moe_layer_indices")
    if isinstance(freq, list) and len(freq) == L:  # per-layer 0/1 flags (MiniMax-M3, MiMo-V2)
        return tuple(i for i, f in enumerate(freq) if f), first_dense
    if isinstance(explicit, list) and explicit and all(isinstance(i, int) for i in explicit):
        return tuple(i for i in explicit if 0 <= i < L), first_dense
    return tuple(i for i in range(first_dense, L) if i not in only and (i + 1) % step == 0), first_dense


def _mlp_notes(cfg: Mapping[str, Any], mt: str, inter: Any, no_width: bool, notes: list[str]) -> tuple[bool, int]:
    """(gated MLP?, the dense MLP width) as the config's family builds it, with what was assumed."""
    act = str(cfg.get("hidden_act") or cfg.get("activation_function") or "").lower()
    gated = mt not in _GATED_NO and not (act in ("gelu", "gelu_new", "relu") and mt.startswith(("gpt", "falcon", "starcoder")))
    if no_width:
        gated = False
        notes.append(f"MLP width not in config.json: 4 x hidden = {inter} assumed, plain 2-matrix MLP "
                     "(the GPT-2 / BLOOM / Falcon config default)")
    if mt == "qwen":
        # Qwen(1) configs give the sum of w1 and w2: each is intermediate_size / 2 wide
        # (vLLM/SGLang qwen.py build QWenMLP with config.intermediate_size // 2)
        inter = int(inter or 0) // 2
        notes.append(f"Qwen(1): MLP width intermediate_size / 2 = {inter}")
    if not gated:
        notes.append("plain 2-matrix MLP assumed (no gate projection)")
    return gated, int(inter or 0)


def generic_spec(cfg: Mapping[str, Any], arch: str, mt: str, base: dict[str, Any]) -> ModelSpec:
    """The generic fallback: a decoder from the config's standard fields (see the module doc)."""
    names = {
        "hidden": ("hidden_size", "d_model", "n_embd", "n_embed", "dim", "model_dim"),
        "layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
        "heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
        "vocab": ("vocab_size", "padded_vocab_size", "n_vocab"),
    }
    got = {k: _first(cfg, *v) for k, v in names.items()}
    blocks = cfg.get("layers_block_type")
    if got["layers"] is None and isinstance(blocks, list) and blocks:
        got["layers"] = len(blocks)
    missing = [v[0] for k, v in names.items() if not isinstance(got[k], (int, float)) or got[k] <= 0]
    inter = _first(cfg, "intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "mlp_dim")
    n_exp = int(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts") or 0)
    moe_inter = int(_first(cfg, "moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size") or 0)
    if n_exp and not moe_inter:
        moe_inter = int(inter or 0)
    nas = cfg.get("block_configs")
    nas_ok = isinstance(nas, list) and isinstance(got["layers"], (int, float)) and len(nas) == got["layers"] \
        and all(isinstance(b, Mapping) for b in nas)
    no_width = inter is None and not n_exp and not nas_ok
    if no_width and isinstance(got["hidden"], (int, float)) and got["hidden"] > 0:
        # GPT-2 / BLOOM / Falcon configs leave the MLP width out: their config classes default it to
        # 4 x hidden (``n_inner`` / ``ffn_hidden_size`` None), a plain 2-matrix MLP
        inter = 4 * int(got["hidden"])
    elif no_width:
        missing.append("intermediate_size")
    if missing:
        raise UnknownArchitecture(
            f"architecture {arch!r} (model_type {mt!r}) is not in the table and config.json lacks "
            f"{', '.join(missing)} (or has them as non-numbers) for the generic projection", missing=missing)
    H, L, nh = int(got["hidden"]), int(got["layers"]), int(got["heads"])
    kvh = _first(cfg, "num_key_value_heads", "num_kv_heads", "multi_query_group_num", "n_head_kv")
    if kvh is None and cfg.get("multi_query"):
        kvh = 1
    kvh = int(kvh or nh)
    hd = int(_first(cfg, "head_dim", "kv_channels", "attention_head_dim") or H // nh)
    notes = [f"generic projection for {arch} (model_type {mt!r}): built from config.json's standard "
             "fields; names and small tensors are assumed (±3% typical)"]
    gated, inter = _mlp_notes(cfg, mt, inter, no_width, notes)
    act = str(cfg.get("hidden_act") or cfg.get("activation_function") or "").lower()
    moe_layers, first_dense = _moe_layers(cfg, L) if n_exp else ((), 0)
    shared = int(cfg.get("shared_expert_intermediate_size") or 0) or (
        int(_first(cfg, "n_shared_experts", "num_shared_experts", "shared_expert_count") or 0) * moe_inter)
    dense_inter = int(_first(cfg, "intermediate_size_mlp", "dense_intermediate_size") or inter or 0)
    hybrid = hybrid_layers(cfg, L, moe_layers, notes)
    if nas_ok:
        hybrid.update(_nas_layers(list(nas or []), H, nh, notes))
        kvs = [k for k in hybrid["layer_kv_heads"] if k > 0]
        kvh = min(kvs) if kvs else kvh
        dense_inter = max(hybrid["layer_intermediate"]) if hybrid["layer_intermediate"] else dense_inter
    if hybrid.get("layer_mlps"):
        moe_layers = tuple(i for i, m in enumerate(hybrid["layer_mlps"]) if m == "moe")
    if "relu2" in str(cfg.get("mlp_hidden_act") or act):
        gated = False
        hybrid["gated_experts"] = False
    if hybrid.get("layer_mixers") and "linear" in hybrid["layer_mixers"] and mt.startswith("qwen3_5"):
        hybrid["gdn_split"] = True  # Qwen3.5 stores in_proj_qkv / in_proj_z / in_proj_b / in_proj_a apart
    hybrid.update(_gemma4_geometry(cfg, L, kvh, notes))
    if n_exp and cfg.get("enable_moe_block"):
        hybrid["moe_plus_dense"] = True
        notes.append("every MoE layer also runs a dense MLP (enable_moe_block: the router/experts block sits beside mlp)")
    latent = int(cfg.get("moe_latent_size") or 0)
    if latent:
        notes.append(f"latent MoE: routed experts work in a {latent}-wide latent (down/up projections per MoE layer)")
    shared = int(cfg.get("moe_shared_expert_intermediate_size") or 0) or shared
    mtp = int(cfg.get("mtp_num_hidden_layers") or 0)
    if mtp:  # Qwen3-Next/3.5: counted only when the engine loads them as the draft (placement)
        hybrid.update(mtp_layers=mtp, mtp_prefix="mtp")
    return ModelSpec(
        family="generic", hidden=H, layers=L, vocab=int(got["vocab"]), heads=nh, kv_heads=kvh, head_dim=hd,
        experts=n_exp, topk=int(_first(cfg, "num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token") or 0),
        moe_intermediate=moe_inter, shared_intermediate=shared, intermediate=dense_inter, first_dense=first_dense,
        moe_layers=moe_layers, mla_layers=tuple(range(L)), latent=latent,
        attn_bias=bool(_first(cfg, "attention_bias", "qkv_bias", "use_bias", "bias") or mt == "qwen" or False),
        qk_norm=bool(cfg.get("use_qk_norm") or cfg.get("qk_layernorm") or mt.startswith("qwen3")),
        gated_mlp=gated, approximate=True, notes=tuple(notes), **hybrid, **base,
    )


def _gemma4_geometry(cfg: Mapping[str, Any], L: int, kvh: int, notes: list[str]) -> dict[str, Any]:
    """Gemma-4's full-attention layers (``layer_types``): ``global_head_dim`` wide heads and, with
    ``attention_k_eq_v``, ``num_global_key_value_heads`` KV heads and no ``v_proj`` (vLLM
    gemma4.py Gemma4DecoderLayer)."""
    types = [str(t).lower() for t in cfg.get("layer_types") or []]
    ghd = cfg.get("global_head_dim")
    if len(types) != L or not isinstance(ghd, int) or ghd <= 0 or "full_attention" not in types:
        return {}
    k_eq_v = bool(cfg.get("attention_k_eq_v"))
    gkv = cfg.get("num_global_key_value_heads") if k_eq_v else None
    glob = tuple(i for i, t in enumerate(types) if t == "full_attention")
    notes.append(f"{len(glob)} full-attention layers with {ghd}-wide heads"
                 + (f", {gkv} KV heads and K reused as V" if k_eq_v else ""))
    return {"global_layers": glob, "global_head_dim": ghd, "k_eq_v": k_eq_v,
            "global_kv_heads": int(gkv) if isinstance(gkv, int) and gkv > 0 else kvh}


def _nas_kind(part: Mapping[str, Any], linear: str, kept: str) -> str:
    """A Nemotron-NAS sub-block: skipped (``no_op``), one linear (``replace_with_linear``) or kept."""
    return "none" if part.get("no_op") else linear if part.get("replace_with_linear") else kept


def _nas_layers(blocks: list[Mapping[str, Any]], H: int, heads: int, notes: list[str]) -> dict[str, Any]:
    """DeciLM / Nemotron-NAS ``block_configs``: per layer, attention with ``heads //
    n_heads_in_group`` KV heads, skipped (``no_op``) or one H x H linear (``replace_with_linear``), and
    an MLP ``ffn_mult`` wide (``2 * ffn_mult * H / 3`` rounded up to 256), skipped or one linear."""
    mixers, mlps, inters, kvs = [], [], [], []
    for b in blocks:
        a_raw, f_raw = b.get("attention"), b.get("ffn")
        att: Mapping[str, Any] = a_raw if isinstance(a_raw, Mapping) else {}
        ffn: Mapping[str, Any] = f_raw if isinstance(f_raw, Mapping) else {}
        group, mult = att.get("n_heads_in_group"), ffn.get("ffn_mult")
        mixers.append(_nas_kind(att, "attn_linear", "attn"))
        mlps.append(_nas_kind(ffn, "linear", "dense"))
        kvs.append(0 if mixers[-1] != "attn" else
                   max(1, heads // int(group)) if isinstance(group, (int, float)) and group >= 1 else heads)
        width = int(2 * float(mult) * H / 3) if isinstance(mult, (int, float)) and mult > 0 else 4 * H
        inters.append(-(-width // 256) * 256 if mlps[-1] == "dense" else 0)
    notes.append(f"per-layer blocks from block_configs: {mixers.count('attn')} attention, {mixers.count('none')} "
                 f"without attention, {mlps.count('dense')} MLPs ({min(i for i in inters if i) if any(inters) else 0}"
                 f"-{max(inters) if inters else 0} wide)")
    return {"layer_mixers": tuple(mixers), "layer_mlps": tuple(mlps), "layer_intermediate": tuple(inters),
            "layer_kv_heads": tuple(kvs)}


def hybrid_layers(cfg: Mapping[str, Any], L: int, moe_layers: tuple[int, ...], notes: list[str]) -> dict[str, Any]:
    """Per-layer mixers and MLPs of hybrid decoders: ``layer_types`` with ``linear_attention``
    (Qwen3-Next / Qwen3.5 Gated DeltaNet; every layer keeps its MLP) and Nemotron-H's
    ``hybrid_override_pattern`` (``M`` Mamba-2, ``*`` attention, ``-`` MLP, ``E`` MoE: one block
    per character)."""
    out: dict[str, Any] = {}
    pattern = cfg.get("hybrid_override_pattern")
    types = [str(t).lower() for t in cfg.get("layer_types") or []]
    blocks = cfg.get("layers_block_type")
    if not pattern and isinstance(blocks, list) and len(blocks) == L:  # Nemotron-H v3 spelling
        code = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
        if all(str(b).lower() in code for b in blocks):
            pattern = "".join(code[str(b).lower()] for b in blocks)
    if isinstance(pattern, str) and len(pattern) == L and set(pattern) <= set("M*-E"):
        out["mixer_prefix"] = "mixer"  # Nemotron-H: each block's one module is ``mixer`` (attention too)
        out["layer_mixers"] = tuple({"M": "mamba", "*": "attn"}.get(c, "none") for c in pattern)
        out["layer_mlps"] = tuple({"-": "dense", "E": "moe"}.get(c, "none") for c in pattern)
        notes.append(f"hybrid layers from hybrid_override_pattern: {pattern.count('M')} Mamba-2, "
                     f"{pattern.count('*')} attention, {pattern.count('-')} MLP, {pattern.count('E')} MoE")
    elif len(types) == L and any("linear" in t for t in types):
        out["layer_mixers"] = tuple("linear" if "linear" in t else "attn" for t in types)
        moe = set(moe_layers)
        out["layer_mlps"] = tuple("moe" if i in moe else "dense" for i in range(L))
        notes.append(f"hybrid layers from layer_types: {sum('linear' in t for t in types)} Gated DeltaNet, "
                     f"{sum('linear' not in t for t in types)} full attention")
    if out.get("layer_mixers") and "mamba" in out["layer_mixers"]:
        heads = int(_first(cfg, "mamba_num_heads", "ssm_num_heads") or 0)
        hdim = int(_first(cfg, "mamba_head_dim", "ssm_head_dim") or 0)
        inner = heads * hdim or int(cfg.get("expand") or 2) * int(_first(cfg, "hidden_size") or 0)
        out["mamba_dims"] = (inner, int(_first(cfg, "n_groups", "mamba_n_groups") or 1),
                             int(_first(cfg, "ssm_state_size", "state_size", "mamba_d_state") or 128),
                             heads or inner // 64, int(_first(cfg, "conv_kernel", "mamba_d_conv") or 4))
    if out.get("layer_mixers") and "linear" in out["layer_mixers"]:
        out["linear_dims"] = (int(cfg.get("linear_num_key_heads") or 16), int(cfg.get("linear_key_head_dim") or 128),
                              int(cfg.get("linear_num_value_heads") or 32), int(cfg.get("linear_value_head_dim") or 128),
                              int(cfg.get("linear_conv_kernel_dim") or 4))
    if cfg.get("attn_output_gate") or (types and any("linear" in t for t in types) and cfg.get("attn_output_gate") is None):
        out["attn_output_gate"] = True
    return out
