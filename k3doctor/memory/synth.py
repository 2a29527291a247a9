"""Synthesise a checkpoint's tensor inventory from ``config.json`` alone (planning before download).

Names, dtypes and shapes follow the released checkpoints (Kimi-K3: kimi-k3.md §2.3, byte-exact;
DeepSeek/Kimi-K2 FP8-block with ``weight_scale_inv``; compressed-tensors INT4 ``weight_packed`` /
``weight_scale`` / ``weight_shape``; NVFP4 ``weight`` / ``weight_scale`` / ``weight_scale_2`` /
``input_scale``; gpt-oss ``*_blocks`` / ``*_scales`` / ``*_bias``; Mixtral ``w1/w2/w3``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from ..dtypes import DTYPE_BYTES
from .quantscheme import QuantScheme, linear_tensors, resolve
from .spec import ModelSpec

__all__ = ["Tensor", "DTYPE_BYTES", "synthesise", "tensor_nbytes"]

@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    shard: str = ""


def tensor_nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return int(n * DTYPE_BYTES.get(dtype, 2))


def _t(name: str, dtype: str, shape: tuple[int, ...], shard: str = "") -> Tensor:
    return Tensor(name, dtype, tuple(shape), tensor_nbytes(dtype, tuple(shape)), shard)


def _qlin(prefix: str, out: int, inp: int, scheme: QuantScheme, kind: str, bias: bool = False) -> list[Tensor]:
    """One Linear under the config's quantisation scheme (ignore lists applied; see quantscheme)."""
    return [_t(n, d, shape) for n, d, shape in linear_tensors(prefix, out, inp, scheme, kind, bias)]


def synthesise(spec: ModelSpec, *, experts_limit: int | None = None) -> list[Tensor]:
    """The full tensor list the checkpoint described by ``spec`` carries.

    ``experts_limit`` keeps only the first N routed experts per layer (compact planning: the
    aggregator scales them back up)."""
    ne = spec.experts if experts_limit is None else min(spec.experts, experts_limit)
    if spec.family == "kimi_k3":
        return list(_kimi_k3(spec, ne))
    if spec.family == "deepseek_v4":
        out = list(_deepseek_v4(spec, ne))
    else:
        out = list(_generic(spec, ne))
    if spec.ckpt_dtype != "BF16":  # the checkpoint's 16-bit tensors are stored in its torch_dtype
        scale = DTYPE_BYTES[spec.ckpt_dtype] / 2
        out = [Tensor(t.name, spec.ckpt_dtype, t.shape, int(t.nbytes * scale), t.shard) if t.dtype == "BF16" else t
               for t in out]
    return out


# ---------------------------------------------------------------------------------------------
def _kimi_k3(s: ModelSpec, n_exp: int) -> Iterator[Tensor]:
    H, E, I, lat = s.hidden, s.experts, s.moe_intermediate, s.latent
    nshards = s.layers + 3
    sh = lambda n: f"model-{n:05d}-of-{nshards:06d}.safetensors"  # noqa: E731 - K3's 5/6-digit naming
    kda_set = set(s.kda_layers)
    P = s.kda_heads * s.kda_head_dim
    nq = s.heads * (s.qk_nope + s.qk_rope)
    for i in range(s.layers):
        f = sh(i + 1)
        p = f"language_model.model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm", "self_attention_res_norm", "mlp_res_norm"):
            yield _t(p + n + ".weight", "BF16", (H,), f)
        yield _t(p + "self_attention_res_proj.weight", "BF16", (1, H), f)
        yield _t(p + "mlp_res_proj.weight", "BF16", (1, H), f)
        a = p + "self_attn."
        yield _t(a + "g_proj.weight", "BF16", (s.heads * s.v_head, H), f)
        yield _t(a + "o_proj.weight", "BF16", (H, s.heads * s.v_head), f)
        if i in kda_set:
            for n in ("q_proj", "k_proj", "v_proj"):
                yield _t(a + n + ".weight", "BF16", (P, H), f)
            for n in ("q_conv1d", "k_conv1d", "v_conv1d"):
                yield _t(a + n + ".weight", "F32", (P, 1, s.kda_conv), f)
            yield _t(a + "f_a_proj.weight", "BF16", (s.kda_head_dim, H), f)
            yield _t(a + "f_b_proj.weight", "BF16", (P, s.kda_head_dim), f)
            yield _t(a + "b_proj.weight", "BF16", (s.kda_heads, H), f)
            yield _t(a + "dt_bias", "F32", (P,), f)
            yield _t(a + "A_log", "F32", (s.kda_head_dim,), f)  # [128]: 96 real values + zero padding (S2/S3)
            yield _t(a + "o_norm.weight", "F32", (s.kda_head_dim,), f)
        else:
            yield _t(a + "q_a_proj.weight", "BF16", (s.q_lora_rank, H), f)
            yield _t(a + "q_a_layernorm.weight", "BF16", (s.q_lora_rank,), f)
            yield _t(a + "q_b_proj.weight", "BF16", (nq, s.q_lora_rank), f)
            yield _t(a + "kv_a_proj_with_mqa.weight", "BF16", (s.kv_lora_rank + s.qk_rope, H), f)
            yield _t(a + "kv_a_layernorm.weight", "BF16", (s.kv_lora_rank,), f)
            yield _t(a + "kv_b_proj.weight", "BF16", (s.heads * (s.qk_nope + s.v_head), s.kv_lora_rank), f)
        if i < s.first_dense:
            yield _t(p + "mlp.gate_proj.weight", "BF16", (s.intermediate, H), f)
            yield _t(p + "mlp.up_proj.weight", "BF16", (s.intermediate, H), f)
            yield _t(p + "mlp.down_proj.weight", "BF16", (H, s.intermediate), f)
            continue
        m = p + "block_sparse_moe."
        yield _t(m + "gate.weight", "BF16", (E, H), f)
        yield _t(m + "gate.e_score_correction_bias", "F32", (E,), f)
        yield _t(m + "routed_expert_down_proj.weight", "BF16", (lat, H), f)
        yield _t(m + "routed_expert_norm.weight", "BF16", (lat,), f)
        yield _t(m + "routed_expert_up_proj.weight", "BF16", (H, lat), f)
        S = s.shared_intermediate
        if S:
            yield _t(m + "shared_experts.gate_proj.weight", "BF16", (S, H), f)
            yield _t(m + "shared_experts.up_proj.weight", "BF16", (S, H), f)
            yield _t(m + "shared_experts.down_proj.weight", "BF16", (H, S), f)
        for e in range(n_exp):
            x = f"{m}experts.{e}."
            yield _t(x + "w1.weight_packed", "U8", (I, lat // 2), f)
            yield _t(x + "w1.weight_scale", "U8", (I, lat // 32), f)
            yield _t(x + "w3.weight_packed", "U8", (I, lat // 2), f)
            yield _t(x + "w3.weight_scale", "U8", (I, lat // 32), f)
            yield _t(x + "w2.weight_packed", "U8", (lat, I // 2), f)
            yield _t(x + "w2.weight_scale", "U8", (lat, I // 32), f)
    f = sh(s.layers + 1)
    yield _t("language_model.lm_head.weight", "BF16", (s.vocab, H), f)
    yield _t("language_model.model.embed_tokens.weight", "BF16", (s.vocab, H), f)
    yield _t("language_model.model.norm.weight", "BF16", (H,), f)
    yield _t("language_model.model.output_attn_res_norm.weight", "BF16", (H,), f)
    yield _t("language_model.model.output_attn_res_proj.weight", "BF16", (1, H), f)
    if s.vision:
        yield from _k3_vision(s, sh(s.layers + 2), sh(s.layers + 3))


def _k3_vision(s: ModelSpec, projector_shard: str, tower_shard: str) -> Iterator[Tensor]:
    """K3's MoonViT tower and its projector, in the two shards after the language model."""
    H = s.hidden
    v = (s.raw.get("vision_config") or {}) if isinstance(s.raw, dict) else {}
    vh = int(v.get("vt_hidden_size", 1024))
    vi = int(v.get("vt_intermediate_size", 4096))
    qkv = int(v.get("qkv_hidden_size", 1536))
    nblk = int(v.get("vt_num_hidden_layers", v.get("num_hidden_layers", 27)))
    patch = int(v.get("patch_size", 14))
    mk = v.get("merge_kernel_size", [2, 2])
    mmh = int(v.get("mm_hidden_size", vh)) * int(mk[0]) * int(mk[1])
    f = projector_shard
    yield _t("mm_projector.post_norm.weight", "BF16", (H,), f)
    yield _t("mm_projector.proj.0.weight", "BF16", (mmh, mmh), f)
    yield _t("mm_projector.proj.2.weight", "BF16", (H, mmh), f)
    f = tower_shard
    for b in range(nblk):
        x = f"vision_tower.encoder.blocks.{b}."
        yield _t(x + "wqkv.weight", "BF16", (3 * qkv, vh), f)
        yield _t(x + "wo.weight", "BF16", (vh, qkv), f)
        yield _t(x + "mlp.fc0.weight", "BF16", (vi, vh), f)
        yield _t(x + "mlp.fc1.weight", "BF16", (vh, vi), f)
        yield _t(x + "norm0.weight", "BF16", (vh,), f)
        yield _t(x + "norm1.weight", "BF16", (vh,), f)
    yield _t("vision_tower.encoder.final_layernorm.weight", "BF16", (vh,), f)
    yield _t("vision_tower.patch_embed.pos_emb.weight", "BF16", (64, 64, vh), f)
    yield _t("vision_tower.patch_embed.proj.weight", "BF16", (vh, 3, patch, patch), f)


# ---------------------------------------------------------------------------------------------
def _deepseek_v4(s: ModelSpec, n_exp: int) -> Iterator[Tensor]:
    """DeepSeek-V4 in its released checkpoint's naming (``layers.N.attn.*``, ``layers.N.ffn.*``,
    ``mtp.0.*``, ``embed``/``head``; the names its quantisation ignore lists use)."""
    H, qs = s.hidden, s.qscheme
    mix = (2 + s.hc_mult) * s.hc_mult  # hyper-connection mixing rows (vLLM/SGLang ``mix_hc``)
    for i in range(s.layers):
        yield from _dsv4_block(s, f"layers.{i}.", s.compress_ratios[i], i < s.hash_layers, n_exp, mix)
    for j in range(s.mtp_layers):  # the MTP block: one more layer (uncompressed) and its joins
        p = f"mtp.{j}."
        yield from _dsv4_block(s, p, 0, False, n_exp, mix)
        for n in ("enorm", "hnorm", "norm"):
            yield _t(p + n + ".weight", "BF16", (H,))
        yield from _qlin(p + "e_proj", H, H, qs, "attn")
        yield from _qlin(p + "h_proj", H, H, qs, "attn")
        yield from _dsv4_hc_head(p, s)
    yield _t("embed.weight", "BF16", (s.vocab, H))
    yield _t("norm.weight", "BF16", (H,))
    yield from _qlin("head", s.vocab, H, qs, "lm_head")
    yield from _dsv4_hc_head("", s)


def _dsv4_hc_head(p: str, s: ModelSpec) -> Iterator[Tensor]:
    yield _t(p + "hc_head_fn", "F32", (s.hc_mult, s.hc_mult * s.hidden))
    yield _t(p + "hc_head_base", "F32", (s.hc_mult,))
    yield _t(p + "hc_head_scale", "F32", (1,))


def _dsv4_block(s: ModelSpec, p: str, ratio: int, hashed: bool, n_exp: int, mix: int) -> Iterator[Tensor]:
    """One DeepSeek-V4 layer: hyper-connection mixers, attention (+ compressor / indexer), MoE."""
    H, qs, hd, E, I = s.hidden, s.qscheme, s.head_dim, s.experts, s.moe_intermediate
    for site in ("attn", "ffn"):
        yield _t(f"{p}hc_{site}_fn", "F32", (mix, s.hc_mult * H))
        yield _t(f"{p}hc_{site}_base", "F32", (mix,))
        yield _t(f"{p}hc_{site}_scale", "F32", (3,))
        yield _t(f"{p}{site}_norm.weight", "BF16", (H,))
    a = p + "attn."
    yield from _qlin(a + "wq_a", s.q_lora_rank, H, qs, "attn")
    yield _t(a + "q_norm.weight", "BF16", (s.q_lora_rank,))
    yield from _qlin(a + "wkv", hd, H, qs, "attn")
    yield _t(a + "kv_norm.weight", "BF16", (hd,))
    yield from _qlin(a + "wq_b", s.heads * hd, s.q_lora_rank, qs, "attn")
    yield from _qlin(a + "wo_a", s.o_groups * s.o_lora_rank, s.heads * hd // max(1, s.o_groups), qs, "attn")
    yield from _qlin(a + "wo_b", H, s.o_groups * s.o_lora_rank, qs, "attn")
    yield _t(a + "attn_sink", "F32", (s.heads,))
    if ratio:
        yield from _dsv4_compressor(a + "compressor.", H, hd, ratio)
    if ratio == 4 and s.index_heads:
        x = a + "indexer."
        yield from _qlin(x + "wq_b", s.index_heads * s.index_head_dim, s.q_lora_rank, qs, "attn")
        yield _t(x + "weights_proj.weight", "BF16", (s.index_heads, H))
        yield from _dsv4_compressor(x + "compressor.", H, s.index_head_dim, ratio)
    f = p + "ffn."
    yield _t(f + "gate.weight", "BF16", (E, H))
    if hashed:  # hash routing: a token -> experts table instead of a score bias
        yield _t(f + "gate.tid2eid", "I32", (s.vocab, s.topk))
    else:
        yield _t(f + "gate.bias", "F32", (E,))
    S = s.shared_intermediate
    if S:
        yield from _qlin(f + "shared_experts.w1", S, H, qs, "shared")
        yield from _qlin(f + "shared_experts.w3", S, H, qs, "shared")
        yield from _qlin(f + "shared_experts.w2", H, S, qs, "shared")
    for e in range(n_exp):
        x = f"{f}experts.{e}."
        for w, out, inp in (("w1", I, H), ("w3", I, H), ("w2", H, I)):
            if s.expert_quant == "mxfp4" and resolve(qs, x + w, "expert") in (None, qs):
                # e2m1 pairs + one e8m0 scale per 32 (unless a quantized_layers entry re-quantised them)
                yield _t(x + w + ".weight", "U8", (out, inp // 2))
                yield _t(x + w + ".scale", "F8_E8M0", (out, inp // 32))
            else:
                yield from _qlin(x + w, out, inp, qs, "expert")


def _dsv4_compressor(p: str, H: int, hd: int, ratio: int) -> Iterator[Tensor]:
    """A KV compressor (ratio 4 overlaps two windows): kv and gate projections, an absolute
    position bias and a norm. The engines keep the projections unquantised (SGLang builds them
    with ``quant_config=None`` in bf16; vLLM multiplies them with a plain ``torch.mm``)."""
    coff = 2 if ratio == 4 else 1
    yield _t(p + "wkv.weight", "BF16", (coff * hd, H))
    yield _t(p + "wgate.weight", "BF16", (coff * hd, H))
    yield _t(p + "ape", "F32", (ratio, coff * hd))
    yield _t(p + "norm.weight", "F32", (hd,))


def _generic(s: ModelSpec, n_exp: int) -> Iterator[Tensor]:
    H = s.hidden
    total_layers = s.layers + s.mtp_layers
    moe_set = set(s.moe_layers) | set(range(s.layers, total_layers)) if s.is_moe else set()
    block = s.mixer_prefix + "." if s.mixer_prefix else "mlp."  # Nemotron-H: the block's one module
    for i in range(total_layers):
        p = f"{s.mtp_prefix}.layers.{i - s.layers}." if s.mtp_prefix and i >= s.layers else f"model.layers.{i}."
        if s.mixer_prefix:
            yield _t(p + "norm.weight", "BF16", (H,))
        else:
            yield _t(p + "input_layernorm.weight", "BF16", (H,))
            yield _t(p + "post_attention_layernorm.weight", "BF16", (H,))
        yield from _generic_mixer(s, i, p)
        if i >= s.layers and s.family in ("deepseek", "glm4_moe"):  # MTP block extras
            yield from _mtp_extras(s, p)
        mlp = s.layer_mlps[i] if i < len(s.layer_mlps) else ""
        if mlp == "none":
            continue
        if mlp == "linear":  # Nemotron-NAS replace_with_linear: one H x H matrix
            yield from _qlin(p + "mlp.down_proj", H, H, s.qscheme, "dense")
        elif i not in moe_set or s.moe_plus_dense:
            m, inter = p + block, s.layer_intermediate[i] if i < len(s.layer_intermediate) else s.intermediate
            if s.gated_mlp:
                yield from _qlin(m + "gate_proj", inter, H, s.qscheme, "dense")
            yield from _qlin(m + "up_proj", inter, H, s.qscheme, "dense")
            yield from _qlin(m + "down_proj", H, inter, s.qscheme, "dense")
        if i in moe_set and mlp != "linear":
            yield from _generic_moe(s, p, n_exp)
    if s.mtp_prefix and s.mtp_layers:  # Qwen3-Next/3.5 MTP joins (vLLM qwen3_5_mtp.py, qwen3_next_mtp.py)
        yield from _qlin(s.mtp_prefix + ".fc", H, 2 * H, s.qscheme, "dense")
        for n in ("pre_fc_norm_hidden", "pre_fc_norm_embedding", "norm"):
            yield _t(f"{s.mtp_prefix}.{n}.weight", "BF16", (H,))
    if s.vision_params:
        # estimated from vision_config (spec.vision_param_estimate): one group, placed as vision
        yield _t("vision_tower.estimated.weight", "BF16", (s.vision_params,))
    yield from _qlin("model.embed_tokens", s.vocab, H, s.qscheme, "embedding")  # BF16 unless MLX quantises it
    yield _t("model.norm.weight", "BF16", (H,))
    if not s.tie_embeddings:
        yield from _qlin("lm_head", s.vocab, H, s.qscheme, "lm_head")


def _generic_mixer(s: ModelSpec, i: int, p: str) -> Iterator[Tensor]:
    """Layer ``i``'s token mixer: Mamba-2, gated DeltaNet, MLA or (grouped-query) attention."""
    H, qs, a = s.hidden, s.qscheme, p + ("mixer." if s.mixer_prefix else "self_attn.")
    mixer = s.layer_mixers[i] if i < len(s.layer_mixers) else "attn"
    if mixer == "mamba":
        yield from _mamba2(p + "mixer.", s, qs)
    elif mixer == "linear":
        yield from _gated_deltanet(p + "linear_attn.", s, qs)
    elif mixer == "none":
        return
    elif mixer == "attn_linear":  # Nemotron-NAS replace_with_linear: one H x H matrix
        yield from _qlin(a + "o_proj", H, H, qs, "attn")
    elif s.mla:
        nq = s.heads * (s.qk_nope + s.qk_rope)
        if s.q_lora_rank:
            yield from _qlin(a + "q_a_proj", s.q_lora_rank, H, qs, "attn")
            yield _t(a + "q_a_layernorm.weight", "BF16", (s.q_lora_rank,))
            yield from _qlin(a + "q_b_proj", nq, s.q_lora_rank, qs, "attn")
        else:
            yield from _qlin(a + "q_proj", nq, H, qs, "attn")
        yield from _qlin(a + "kv_a_proj_with_mqa", s.kv_lora_rank + s.qk_rope, H, qs, "attn")
        yield _t(a + "kv_a_layernorm.weight", "BF16", (s.kv_lora_rank,))
        yield from _qlin(a + "kv_b_proj", s.heads * (s.qk_nope + s.v_head), s.kv_lora_rank, qs, "attn")
        yield from _qlin(a + "o_proj", H, s.heads * s.v_head, qs, "attn")
        if i in s.index_layers:  # DSA lightning indexer (DeepSeek-V3.2 Indexer: wq_b, wk, k_norm, weights_proj)
            x = a + "indexer."
            yield from _qlin(x + "wq_b", s.index_heads * s.index_head_dim, s.q_lora_rank or H, qs, "attn")
            yield from _qlin(x + "wk", s.index_head_dim, H, qs, "attn")
            yield _t(x + "k_norm.weight", "BF16", (s.index_head_dim,))
            yield _t(x + "k_norm.bias", "BF16", (s.index_head_dim,))
            yield _t(x + "weights_proj.weight", "BF16", (s.index_heads, H))
    else:
        hd = s.head_dim
        kvh = s.layer_kv_heads[i] if i < len(s.layer_kv_heads) and s.layer_kv_heads[i] > 0 else s.kv_heads
        glob = i in s.global_layers
        if glob:  # Gemma-4 full-attention layer
            hd, kvh = s.global_head_dim, s.global_kv_heads
        yield from _qlin(a + "q_proj", s.heads * hd * (2 if s.attn_output_gate else 1), H, qs, "attn", bias=s.attn_bias)
        yield from _qlin(a + "k_proj", kvh * hd, H, qs, "attn", bias=s.attn_bias)
        if not (glob and s.k_eq_v):
            yield from _qlin(a + "v_proj", kvh * hd, H, qs, "attn", bias=s.attn_bias)
        yield from _qlin(a + "o_proj", H, s.heads * hd, qs, "attn", bias=s.family == "gpt_oss")
        if s.qk_norm:
            yield _t(a + "q_norm.weight", "BF16", (hd,))
            yield _t(a + "k_norm.weight", "BF16", (hd,))
        if s.family == "gpt_oss":
            yield _t(a + "sinks", "BF16", (s.heads,))


def _mtp_extras(s: ModelSpec, p: str) -> Iterator[Tensor]:
    """The extra tensors of a DeepSeek/GLM multi-token-prediction block."""
    H = s.hidden
    yield _t(p + "enorm.weight", "BF16", (H,))
    yield _t(p + "hnorm.weight", "BF16", (H,))
    yield _t(p + "eh_proj.weight", "BF16", (H, 2 * H))
    yield _t(p + "shared_head.norm.weight", "BF16", (H,))
    yield _t(p + "shared_head.head.weight", "BF16", (s.vocab, H))
    yield _t(p + "embed_tokens.weight", "BF16", (s.vocab, H))


def _generic_moe(s: ModelSpec, p: str, n_exp: int) -> Iterator[Tensor]:
    """One MoE block in its family's naming: router, shared experts, ``n_exp`` routed experts."""
    H, qs, I, E = s.hidden, s.qscheme, s.moe_intermediate, s.experts
    if s.family == "gpt_oss":
        m = p + "mlp."
        yield _t(m + "router.weight", "BF16", (E, H))
        yield _t(m + "router.bias", "BF16", (E,))
        yield _t(m + "experts.gate_up_proj_blocks", "U8", (E, 2 * I, H // 32, 16))
        yield _t(m + "experts.gate_up_proj_scales", "U8", (E, 2 * I, H // 32))
        yield _t(m + "experts.gate_up_proj_bias", "BF16", (E, 2 * I))
        yield _t(m + "experts.down_proj_blocks", "U8", (E, H, I // 32, 16))
        yield _t(m + "experts.down_proj_scales", "U8", (E, H, I // 32))
        yield _t(m + "experts.down_proj_bias", "BF16", (E, H))
        return
    if s.family == "mixtral":
        m = p + "block_sparse_moe."
        yield _t(m + "gate.weight", "BF16", (E, H))
        for e in range(n_exp):
            yield from _expert(f"{m}experts.{e}.", ("w1", "w3", "w2"), I, H, qs)
        return
    if s.moe_plus_dense:  # Gemma-4: router and experts beside the dense mlp, not under it
        yield _t(p + "router.proj.weight", "BF16", (E, H))
        yield _t(p + "router.scale", "BF16", (H,))
        yield _t(p + "router.per_expert_scale", "BF16", (E,))
        for e in range(n_exp):
            yield from _expert(f"{p}experts.{e}.", ("gate_proj", "up_proj", "down_proj"), I, H, qs)
        return
    m = p + (s.mixer_prefix + "." if s.mixer_prefix else "mlp.")
    yield _t(m + "gate.weight", "BF16", (E, H))
    if s.family in ("deepseek", "glm4_moe"):
        yield _t(m + "gate.e_score_correction_bias", "F32", (E,))
    if s.shared_intermediate:
        sname = "shared_expert" if s.family == "qwen_moe" else "shared_experts"
        S = s.shared_intermediate
        if s.gated_experts:
            yield from _qlin(f"{m}{sname}.gate_proj", S, H, qs, "shared")
        yield from _qlin(f"{m}{sname}.up_proj", S, H, qs, "shared")
        yield from _qlin(f"{m}{sname}.down_proj", H, S, qs, "shared")
        if s.family in ("qwen_moe", "generic") and s.raw.get("shared_expert_intermediate_size"):
            yield _t(m + "shared_expert_gate.weight", "BF16", (1, H))
    Hx = H
    if s.latent and s.family == "generic":  # latent MoE (Nemotron-3 Super/Ultra)
        Hx = s.latent
        yield from _qlin(m + "fc1_latent_proj", s.latent, H, qs, "router")
        yield from _qlin(m + "fc2_latent_proj", H, s.latent, qs, "router")
    for e in range(n_exp):
        yield from _expert(f"{m}experts.{e}.", ("gate_proj" if s.gated_experts else "", "up_proj", "down_proj"), I, Hx, qs)


def _expert(x: str, names: tuple[str, str, str], I: int, H: int, qs: QuantScheme) -> Iterator[Tensor]:
    """One routed expert ``x``: gate (absent when its name is empty), up, down."""
    gate, up, down = names
    if gate:
        yield from _qlin(x + gate, I, H, qs, "expert")
    yield from _qlin(x + up, I, H, qs, "expert")
    yield from _qlin(x + down, H, I, qs, "expert")


def _mamba2(p: str, s: ModelSpec, qs: QuantScheme) -> Iterator[Tensor]:
    """A Mamba-2 mixer (Nemotron-H, Jamba-style hybrids): in_proj to z, x, B, C and dt; the
    depthwise conv over x, B, C; per-head A, D, dt bias; a gated norm; out_proj."""
    H = s.hidden
    inner, groups, state, heads, kernel = s.mamba_dims
    conv = inner + 2 * groups * state
    yield from _qlin(p + "in_proj", 2 * inner + 2 * groups * state + heads, H, qs, "attn")
    yield _t(p + "conv1d.weight", "BF16", (conv, 1, kernel))
    yield _t(p + "conv1d.bias", "BF16", (conv,))
    for n in ("A_log", "D", "dt_bias"):
        yield _t(p + n, "F32", (heads,))
    yield _t(p + "norm.weight", "BF16", (inner,))
    yield from _qlin(p + "out_proj", H, inner, qs, "attn")


def _gated_deltanet(p: str, s: ModelSpec, qs: QuantScheme) -> Iterator[Tensor]:
    """A Gated DeltaNet linear-attention mixer (Qwen3-Next, Qwen3.5): q/k/v/z and b/a
    projections, the short conv over q, k, v, per-head decay parameters, a gated norm, out_proj."""
    H = s.hidden
    nk, dk, nv, dv, kernel = s.linear_dims
    if s.gdn_split:  # Qwen3.5 checkpoints
        yield from _qlin(p + "in_proj_qkv", 2 * nk * dk + nv * dv, H, qs, "attn")
        yield from _qlin(p + "in_proj_z", nv * dv, H, qs, "attn")
        yield from _qlin(p + "in_proj_b", nv, H, qs, "attn")
        yield from _qlin(p + "in_proj_a", nv, H, qs, "attn")
    else:  # Qwen3-Next checkpoints
        yield from _qlin(p + "in_proj_qkvz", 2 * nk * dk + 2 * nv * dv, H, qs, "attn")
        yield from _qlin(p + "in_proj_ba", 2 * nv, H, qs, "attn")
    yield _t(p + "conv1d.weight", "BF16", (2 * nk * dk + nv * dv, 1, kernel))
    yield _t(p + "A_log", "F32", (nv,))
    yield _t(p + "dt_bias", "BF16", (nv,))
    yield _t(p + "norm.weight", "BF16", (dv,))
    yield from _qlin(p + "out_proj", H, nv * dv, qs, "attn")
