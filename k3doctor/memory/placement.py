"""Per-rank weight placement by engine rules (domain.md §A, kimi-k3.md §4).

Every inventory group gets a *role* (what it is, shown to the user) and a *kind* (how the engine
places it). :func:`stage_weights` turns the groups into bytes per rank of one pipeline stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..parallelism import world_size
from . import constants as C
from .inventory import Group, Inventory
from .rope import rope_cache_bytes
from .spec import ModelSpec

__all__ = ["Parallel", "PlanError", "classify", "classified", "stage_layers", "stage_weights", "validate_parallel"]


class PlanError(ValueError):
    """An impossible parallel plan; the message names the constraint and a way out."""


@dataclass
class Parallel:
    """The layout the planner places weights for: a launch's parallel sizes and the flags that change
    what a rank holds, already interpreted. A launch command becomes one only through
    :meth:`k3doctor.launch.LaunchSpec.placement` (every flag is read there, once); it stays a
    separate, mutable record because ``plan --search`` varies the layout of one launch (tp, ep, dp,
    nodes) without a launch command for each candidate."""

    engine: str = "sglang"
    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1
    dp_attention: bool = False
    dcp: int = 1
    nnodes: int = 1
    gpus_per_node: int | None = None
    moe_backend: str | None = None
    a2a_backend: str | None = None
    dp_lm_head: bool = False
    moe_dense_tp_size: int | None = None
    load_format: str | None = None
    kv_cache_dtype: str | None = None
    mem_fraction: float | None = None
    context: int | None = None
    concurrency: int | None = None
    mamba_ssm_dtype: str | None = None
    cuda_graph_max_bs: int | None = None
    chunked_prefill_size: int | None = None
    max_num_batched_tokens: int | None = None
    max_running: int | None = None
    speculative: bool = False
    language_only: bool = False
    mamba_ratio: float | None = None
    #: redundant physical experts (SGLang --ep-num-redundant-experts; vLLM EPLB
    #: --num-redundant-experts / --eplb-config '{"num_redundant_experts": N}')
    redundant_experts: int = 0
    #: vision encoder data-parallel (vLLM --mm-encoder-tp-mode data): the tower on every rank
    mm_encoder_dp: bool = False
    #: the checkpoint's MTP layers are loaded as the draft model inside the target's load
    #: (vLLM ``--speculative-config '{"method": "mtp", ...}'``; SGLang loads its draft in a separate
    #: model runner with its own load line)
    mtp_draft: bool = False
    #: SGLang folds a DeepSeek-V3/R1 shared expert into the routed MoE as one more expert
    #: unless ``--disable-shared-experts-fusion`` (srt/models/deepseek_v2.py
    #: determine_num_fused_shared_experts: 256 routed + 1 shared, no expert parallelism)
    shared_experts_fusion: bool = True
    env: Mapping[str, str] = field(default_factory=dict)
    #: the GPU's compute capability when known (set by compute_plan): picks kernels whose weight
    #: layout differs (vLLM's MXFP4 MoE backend)
    gpu_cc: tuple[int, int] | None = None

    # -- derived groups -----------------------------------------------------------------
    @property
    def world(self) -> int:
        return world_size(self.engine, self.tp, self.pp, self.dp, self.dp_attention)

    @property
    def attn_tp(self) -> int:
        if self.engine == "sglang" and self.dp_attention and self.dp > 1:
            return max(1, self.tp // self.dp)
        return self.tp

    @property
    def moe_ep(self) -> int:
        if self.engine == "vllm":
            return self.tp * self.dp if self.ep > 1 else 1
        return self.ep

    @property
    def moe_tp(self) -> int:
        if self.engine == "vllm":
            return 1 if self.ep > 1 else self.tp * self.dp
        return max(1, self.tp // max(1, self.ep))

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine, "tp": self.tp, "ep": self.ep, "pp": self.pp, "dp": self.dp,
            "enable_dp_attention": self.dp_attention, "dcp": self.dcp, "nnodes": self.nnodes,
            "gpus_per_node": self.gpus_per_node, "world_size": self.world, "attention_tp": self.attn_tp,
            "moe_ep": self.moe_ep, "moe_tp": self.moe_tp, "moe_backend": self.moe_backend,
            "load_format": self.load_format or "auto", "kv_cache_dtype": self.kv_cache_dtype or "auto",
            "mem_fraction": self.mem_fraction,
        }


# -- classification ----------------------------------------------------------------------------
def classify(g: Group, spec: ModelSpec | None) -> tuple[str, str]:
    """(role, kind) of one inventory group."""
    t = g.template
    low = t.lower()
    if (spec is not None and g.layer >= spec.layers) or low.startswith(("mtp.", "model.mtp.", "mtp_")):
        # a multi-token-prediction block: placed like the layer it is, only when the engine loads
        # it as the draft (stage_weights); the embedding / head copies are shared with the target
        _role, kind = _classify(g, low, spec)
        return "mtp", "skip" if kind in ("vocab_embed", "vocab_head") else kind
    return _classify(g, low, spec)


def _classify(g: Group, low: str, spec: ModelSpec | None) -> tuple[str, str]:
    if low.rsplit(".", 1)[-1].startswith("hc_"):  # DeepSeek-V4 hyper-connection mixers: small fp32, on every rank
        return "other", "rep"
    if "vision" in low or "visual" in low or "mm_projector" in low or "multi_modal_projector" in low:
        return "vision", "vision"
    if "shared_expert_gate" in low:
        return "router", "rep"
    if "shared_expert" in low:
        return "shared_experts", "shared"
    if ".experts." in low or ".experts{" in low or "experts.{e}" in low.replace("{E}", "{e}"):
        return "experts", "expert"
    if "routed_expert_" in low or "_latent_proj" in low:
        return "latent_proj", "rep"
    if (".gate.weight" in low or ".gate.e_score" in low or "e_score_correction" in low or ".router." in low
            or ".gate.tid2eid" in low or ".gate.bias" in low):
        return "router", "rep"
    if "embed_tokens" in low or low.endswith("wte.weight") or "embedding" in low or low == "embed.weight":
        return "embedding", "vocab_embed"
    if "lm_head" in low or "unembed" in low or low.startswith("head."):
        return "lm_head", "vocab_head"
    last = low.rsplit(".", 2)
    leaf = ".".join(last[-2:])
    if "norm" in leaf or "_res_proj" in low or "attn_res" in low:
        return "norms", "rep"
    mlp_proj = any(k in low for k in ("gate_proj", "up_proj", "down_proj", "gate_up_proj", ".w1", ".w2", ".w3"))
    if ("mlp." in low or "feed_forward" in low or ".mixer." in low) and mlp_proj:
        return "dense_mlp", "dense"  # Nemotron-H MLP blocks are ``mixer.up_proj`` / ``mixer.down_proj``
    if "attn" in low or "attention" in low or ".mixer." in low:
        if ".compressor." in low or ".indexer." in low:  # DeepSeek-V4: replicated on every rank
            return "attention", "rep"
        if "q_a_proj" in low or "kv_a_proj" in low or ".wq_a." in low or ".wkv." in low:
            return "mla_q_a_kv_a", "rep"
        if "f_a_proj" in low:
            return "kda_f_a", "rep"
        if ("k_proj" in low or "v_proj" in low) and spec is not None and not spec.mla and not spec.kda_layers:
            return "attention", "kvhead"
        if ("k_proj" in low or "v_proj" in low) and spec is not None and spec.kda_layers and g.layer not in spec.kda_layers:
            return "attention", "kvhead"
        return "attention", "attn"
    return "other", "rep"


def classified(inv: Inventory) -> list[tuple[str, str]]:
    """(role, kind) for every group of ``inv``, computed once and kept on the inventory."""
    cached = getattr(inv, "_classified", None)
    if cached is None or len(cached) != len(inv.groups):
        cached = [classify(g, inv.spec) for g in inv.groups]
        inv._classified = cached  # type: ignore[attr-defined]
    return cached


def compact(inv: Inventory) -> list[tuple[int, str, str, int, str]]:
    """Groups summed per (layer, role, kind): ~10× fewer rows than templates; cached."""
    cached = getattr(inv, "_compact", None)
    if cached is None:
        acc: dict[tuple[int, str, str, str], int] = {}
        # a float32 checkpoint (config ``torch_dtype``/``dtype``) is loaded in 16 bits: the engines'
        # ``--dtype auto`` serves float32 configs in bfloat16/float16 (vLLM/SGLang
        # ``_get_and_verify_dtype``), so its F32 tensors take half their checkpoint bytes
        f32_half = inv.spec is not None and inv.spec.ckpt_dtype == "F32"
        for g, (role, kind) in zip(inv.groups, classified(inv)):
            tmpl = g.template if g.layer < 0 else ""
            key = (g.layer, role, kind, tmpl)
            nb = g.nbytes // 2 if f32_half and g.dtype == "F32" else g.nbytes
            acc[key] = acc.get(key, 0) + nb
        cached = [(layer, role, kind, nb, tmpl) for (layer, role, kind, tmpl), nb in acc.items()]
        inv._compact = cached  # type: ignore[attr-defined]
    return cached


#: the env var each engine reads for an explicit pipeline partition (comma-separated layer counts)
PP_PARTITION_ENV = {"vllm": "VLLM_PP_LAYER_PARTITION", "sglang": "SGLANG_PP_LAYER_PARTITION"}


def pp_partition(par: Parallel, num_layers: int) -> list[range]:
    """The engine's layer ranges per stage: ``VLLM_PP_LAYER_PARTITION`` / ``SGLANG_PP_LAYER_PARTITION``
    when set (vllm/distributed/utils.py and sglang/srt/distributed/utils.py ``get_pp_indices``:
    one count per stage, summing to the layer count), else :func:`stage_layers`."""
    raw = (par.env or {}).get(PP_PARTITION_ENV.get(par.engine, ""), "")
    if raw and par.pp > 1:
        try:
            counts = [int(x) for x in str(raw).split(",")]
        except ValueError:
            raise PlanError(f"{PP_PARTITION_ENV[par.engine]}={raw!r} is not a comma-separated list of layer counts") from None
        if len(counts) != par.pp or sum(counts) != num_layers or min(counts) < 0:
            raise PlanError(f"{PP_PARTITION_ENV[par.engine]}={raw} must list {par.pp} layer counts summing to "
                            f"{num_layers} (the engine refuses it otherwise)")
        out, start = [], 0
        for n in counts:
            out.append(range(start, start + n))
            start += n
        return out
    return stage_layers(num_layers, par.pp)


def stage_layers(num_layers: int, pp: int) -> list[range]:
    """Layer ranges per pipeline stage (vLLM/SGLang ``get_pp_indices``: the remainder goes to
    the stages before the last)."""
    base = num_layers // pp
    parts = [base] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    out, start = [], 0
    for n in parts:
        out.append(range(start, start + n))
        start += n
    return out


def _sp_moe(par: Parallel, spec: ModelSpec | None) -> bool:
    """vLLM sequence-parallel MoE: shared experts and dense MLPs replicated (vllm#50656)."""
    if par.engine != "vllm" or par.pp != 1 or par.ep <= 1 or par.tp <= 1:
        return False
    if par.env.get("VLLM_KIMI_K3_SHARD_SP_SHARED_EXPERT") == "1":
        return False
    return par.dp > 1 or (par.moe_backend or "").startswith("deep_gemm_mega")


def _a2a(par: Parallel) -> bool:
    return (par.a2a_backend or "") in C.SGLANG_A2A_REPLICATE_SHARED or (par.moe_backend or "") in C.SGLANG_A2A_REPLICATE_SHARED


def mxfp4_marlin(par: Parallel) -> bool:
    """vLLM's MXFP4 MoE runs on Marlin: asked for (``--moe-backend marlin``,
    ``VLLM_MXFP4_USE_MARLIN=1``), or the GPU has neither the Hopper Triton kernels nor the SM100
    FlashInfer ones (compute capability other than 9.x / 10.x: Ampere, Ada, SM12x consumer Blackwell,
    GB10; vLLM ``mxfp4.py`` get_mxfp4_backend). An unknown GPU keeps the Hopper rule."""
    backend = (par.moe_backend or "").lower()
    if backend == "marlin" or str((par.env or {}).get("VLLM_MXFP4_USE_MARLIN", "")).lower() in ("1", "true"):
        return True
    if backend not in ("", "auto"):
        return False
    return par.gpu_cc is not None and par.gpu_cc[0] not in (9, 10)


def expert_pad_factor(par: Parallel, spec: ModelSpec | None) -> float:
    """Per-rank MoE intermediate padding applied by the engine.

    * vLLM Kimi-K3 pads the per-rank intermediate to 256 when ``I // tp < 256`` (kimi-k3.md §4.2;
      removed by local-inference-lab/vllm#385).
    * vLLM MXFP4 MoE (gpt-oss) rounds the per-rank intermediate up to a multiple of 256
      (vllm/model_executor/layers/quantization/mxfp4.py create_weights; gpt-oss 2880 -> 3072,
      confirmed by the gpt-oss-20b/120b receipts in docs/validation.md). On its Marlin backend
      (``mxfp4_marlin``) the Marlin MoE kernel's shape rule instead rounds the intermediate to 128
      and the hidden size to 256 (2880 -> 2944 and 3072).
    """
    if spec is None or par.engine != "vllm":
        return 1.0
    if spec.family == "gpt_oss" and spec.quant == "mxfp4":
        local = spec.moe_intermediate / par.moe_tp
        if mxfp4_marlin(par):
            n, k = C.VLLM_MXFP4_MARLIN_N_MULTIPLE, C.VLLM_MXFP4_MARLIN_K_MULTIPLE
            return (-(-local // n) * n) / local * (-(-spec.hidden // k) * k) / spec.hidden
        m = C.VLLM_MXFP4_PAD_MULTIPLE
        return (-(-local // m) * m) / local
    if spec.family != "kimi_k3" or par.moe_tp <= 1:
        return 1.0
    local = spec.moe_intermediate // par.moe_tp
    if local < C.VLLM_K3_MOE_PAD_MULTIPLE:
        return C.VLLM_K3_MOE_PAD_MULTIPLE / local
    return 1.0


def per_rank_bytes(n: int, role: str, kind: str, par: Parallel, spec: ModelSpec | None) -> float:
    if kind == "skip":
        return 0.0
    if kind == "vision":
        # K3 SGLang "shards complete images across TP ranks" -> weights on every rank (kimi-k3.md
        # §4.1); other towers are tensor-parallel like the language model (vLLM's default
        # --mm-encoder-tp-mode weights; "data" replicates them); --language-model-only skips it.
        if par.language_only:
            return 0.0
        if (spec is not None and (spec.family == "kimi_k3" or spec.vision_replicated)) or par.mm_encoder_dp:
            return n
        return n / par.attn_tp
    if kind == "rep":
        return n
    if kind == "attn":
        return n / par.attn_tp
    if kind == "kvhead":
        kvh = spec.kv_heads if spec is not None else par.attn_tp
        return n / par.attn_tp if kvh >= par.attn_tp else n / kvh
    if kind == "dense":
        if par.engine == "sglang" and par.moe_dense_tp_size == 1:
            return n
        if _sp_moe(par, spec):
            return n
        return n / par.tp
    if kind == "shared":
        if (par.engine == "sglang" and _a2a(par)) or _sp_moe(par, spec):
            return n
        return n / par.tp
    if kind == "vocab_embed":
        if par.engine == "sglang" and par.dp_attention and par.dp > 1:
            return n
        return n / par.tp
    if kind == "vocab_head":
        if par.engine == "sglang" and par.dp_attention and par.dp_lm_head:
            return n / par.attn_tp
        return n / par.tp
    if kind == "expert":
        # redundant experts: each EP rank holds (E + R) / ep physical experts
        extra = (spec.experts + par.redundant_experts) / spec.experts if spec is not None and spec.experts and par.moe_ep > 1 else 1.0
        return n / par.moe_ep / par.moe_tp * expert_pad_factor(par, spec) * extra
    return n


def vocab_on_every_stage(par: Parallel, spec: ModelSpec | None) -> bool:
    """vLLM model classes whose ``embed_tokens`` / ``lm_head`` / final norm exist on every pipeline
    stage (no ``PPMissingLayer``): each stage holds and loads its vocab shards (Qwen3-MoE)."""
    return (par.engine == "vllm" and par.pp > 1 and spec is not None
            and str(spec.raw.get("model_type") or "") in C.VLLM_PP_VOCAB_ON_EVERY_STAGE)


def stage_weights(inv: Inventory, par: Parallel, stage: int) -> dict[str, float]:
    """Bytes per rank of pipeline stage ``stage``, by role (before engine post-processing)."""
    spec = inv.spec
    n_layers = spec.layers if spec is not None else 1 + max((g.layer for g in inv.groups), default=0)
    ranges = pp_partition(par, n_layers)
    mine = ranges[stage]
    first, last = stage == 0, stage == par.pp - 1
    out: dict[str, float] = {}
    lo, hi = mine.start, mine.stop
    vocab_everywhere = vocab_on_every_stage(par, spec)
    for layer, role, kind, nb, _t in compact(inv):
        if role == "mtp":
            if not (par.mtp_draft and last):
                continue
        elif layer >= 0:
            if not (lo <= layer < hi):
                continue
        elif vocab_everywhere and (kind in ("vocab_embed", "vocab_head") or role == "norms"):
            pass  # built on every pipeline stage by this model class (constants.VLLM_PP_VOCAB_ON_EVERY_STAGE)
        else:
            if kind == "vocab_embed" or role == "vision":
                if not first:
                    continue
            elif kind == "vocab_head" or role in ("norms", "other"):
                if not last:
                    continue
        b = per_rank_bytes(nb, role, kind, par, spec)
        if b:
            out[role] = out.get(role, 0.0) + b
    if spec is not None and spec.tie_embeddings and par.pp > 1 and last and "lm_head" not in out and not vocab_everywhere:
        emb = sum(nb for layer, _r, kind, nb, _t in compact(inv) if kind == "vocab_embed" and layer < 0)
        out["lm_head"] = emb / par.tp
    if par.engine == "sglang":
        out["load_nontorch"] = C.SGLANG_LOAD_NONTORCH_BYTES
    if spec is not None:
        rope = rope_cache_bytes(spec.raw, par.engine)  # RoPE cos/sin tables, on every rank (rope.py)
        if rope:
            out["rope_cache"] = rope
    if spec is not None and _fused_shared(par, spec) and "shared_experts" in out:
        # the same bytes, TP-sharded alike; the engine holds them as expert E (one more expert)
        out["experts"] = out.get("experts", 0.0) + out.pop("shared_experts")
    if spec is not None:
        for role, b in _engine_extras(spec, par, mine, last).items():
            out[role] = out.get(role, 0.0) + b
    # engine post-processing that stays resident
    if spec is not None and spec.mla:
        mla_here = [i for i in mine if i in set(spec.mla_layers)]
        heads_local = spec.heads / par.attn_tp
        copy = heads_local * (spec.qk_nope + spec.v_head) * spec.kv_lora_rank * 2 * len(mla_here)
        if par.engine == "sglang":
            out["mla_absorbed"] = copy  # w_kc / w_vc bf16 copies (deepseek_v2.py post_load_weights)
        elif spec.quant == "fp8_block":
            out["mla_absorbed"] = copy  # W_UK_T / W_UV dequantised (vLLM MLA process_weights_after_loading)
    return out


def _fused_shared(par: Parallel, spec: ModelSpec) -> bool:
    """SGLang's shared-experts fusion applies (DeepSeek-V3/R1 shape, no EP, no all-to-all
    backend, not disabled)."""
    return (par.engine == "sglang" and par.shared_experts_fusion and spec.family == "deepseek"
            and spec.experts == 256 and spec.shared_intermediate == spec.moe_intermediate
            and par.moe_ep == 1 and not _a2a(par))


def _linear_bytes(spec: ModelSpec, prefix: str, out: int, inp: int, kind: str = "attn") -> int:
    """Bytes of one Linear as the config's quantisation stores it (for tensors an engine
    allocates that the checkpoint does not carry)."""
    from .quantscheme import linear_tensors
    from .synth import tensor_nbytes

    return sum(tensor_nbytes(d, shape) for _n, d, shape in linear_tensors(prefix, out, inp, spec.qscheme, kind))


def _engine_extras(spec: ModelSpec, par: Parallel, mine: range, last: bool) -> dict[str, float]:
    """Device memory an engine allocates while building the model beyond the checkpoint's tensors.

    * Gemma-4 ``attention_k_eq_v`` layers: vLLM's ``QKVParallelLinear`` keeps a V slot and loads K
      into it (vllm/model_executor/models/gemma4.py Gemma4Attention).
    * DeepSeek-V4 on vLLM: the indexers' shared ``topk_indices_buffer``
      (max_num_batched_tokens x index_topk int32) and, on the last stage, ``_mtp_hidden_buffer``
      (max_num_batched_tokens x hc_mult x hidden in the model dtype), both made in
      ``DeepseekV4Model.__init__``.
    * DeepSeek-V4 on SGLang: ``wo_a`` is built in bf16 unless SGLANG_OPT_FP8_WO_A_GEMM is set
      (srt/models/deepseek_v4.py MQALayer), twice the FP8 checkpoint's bytes."""
    out: dict[str, float] = {}
    if spec.k_eq_v and par.engine == "vllm":
        glob = [i for i in mine if i in set(spec.global_layers)]
        slot = _linear_bytes(spec, f"model.layers.{glob[0]}.self_attn.v_proj", spec.global_kv_heads * spec.global_head_dim,
                             spec.hidden) if glob else 0
        per_rank = slot / par.attn_tp if spec.global_kv_heads >= par.attn_tp else slot / max(1, spec.global_kv_heads)
        out["attention"] = per_rank * len(glob)
    if spec.family == "deepseek" and spec.index_layers and par.engine == "vllm":
        # DeepSeek-V3.2 / GLM-5 on vLLM: the indexers' shared topk_indices_buffer (deepseek_v2.py)
        tokens = par.max_num_batched_tokens or C.VLLM_MAX_BATCHED_TOKENS[0]
        topk = int(spec.raw.get("index_topk") or 0) if isinstance(spec.raw, Mapping) else 0
        out["other"] = float(tokens * topk * 4)
    if spec.family == "deepseek_v4":
        if par.engine == "vllm":
            tokens = par.max_num_batched_tokens or C.VLLM_MAX_BATCHED_TOKENS[0]
            topk = int(spec.raw.get("index_topk") or 0) if isinstance(spec.raw, Mapping) else 0
            out["other"] = float(tokens * topk * 4 + (tokens * spec.hc_mult * spec.hidden * 2 if last else 0))
        elif par.engine == "sglang" and (par.env or {}).get("SGLANG_OPT_FP8_WO_A_GEMM", "").lower() not in ("1", "true"):
            n = spec.heads * spec.head_dim // max(1, spec.o_groups) * spec.o_groups * spec.o_lora_rank
            out["attention"] = float(n * len(mine) / par.attn_tp)  # bf16 (2 B) where FP8 (1 B) was counted
    return out


def _tp_fix(par: Parallel, heads: int) -> str:
    """Which attention-TP sizes divide ``heads``, in ``par.engine``'s flags (pipeline parallelism
    splits layers instead)."""
    ok = ", ".join(str(t) for t in range(1, min(heads, 64) + 1) if heads % t == 0)
    tp = "--tensor-parallel-size" if par.engine == "vllm" else "--tp-size"
    pp = "--pipeline-parallel-size" if par.engine == "vllm" else "--pp-size"
    dp = " (with DP attention, tp / dp)" if par.dp_attention else ""
    return f"use a {tp}{dp} that divides {heads} ({ok}) and {pp} for more GPUs"


def _ep_flag(par: Parallel) -> str:
    """How to split the routed experts whole instead of slicing them by TP, in ``par.engine``'s flags."""
    if par.engine == "vllm":
        return "split the experts whole with --enable-expert-parallel (EP = TP x DP)"
    return f"raise the expert-parallel size (--ep-size {par.tp} splits the experts whole)"


def validate_parallel(par: Parallel, spec: ModelSpec | None) -> list[str]:
    """Reasons the plan is impossible (empty = fine)."""
    errs: list[str] = []
    for name in ("tp", "ep", "pp", "dp", "dcp", "nnodes"):
        v = getattr(par, name)
        if not isinstance(v, int) or v < 1:
            errs.append(f"--{name} must be a positive integer (got {v!r})")
    if errs:
        return errs
    if par.engine == "sglang" and par.tp % par.ep:
        errs.append(f"tp {par.tp} is not a multiple of ep {par.ep} (SGLang requires tp % ep == 0)")
    if par.dp_attention and par.tp % par.dp:
        errs.append(f"tp {par.tp} is not a multiple of dp {par.dp} (dp-attention requires tp % dp == 0)")
    if par.dcp > 1 and par.attn_tp % par.dcp:
        errs.append(f"attention-TP {par.attn_tp} is not a multiple of dcp {par.dcp}")
    if par.gpus_per_node and par.world > par.nnodes * par.gpus_per_node:
        errs.append(f"the plan needs {par.world} GPUs but {par.nnodes} node(s) × {par.gpus_per_node} GPUs = "
                    f"{par.nnodes * par.gpus_per_node}; add --nnodes or lower tp/pp/dp")
    if par.gpus_per_node and par.world % par.gpus_per_node and par.world > par.gpus_per_node:
        errs.append(f"world size {par.world} does not fill whole {par.gpus_per_node}-GPU nodes")
    if spec is None:
        return errs
    if spec.heads % par.attn_tp:
        errs.append(f"{spec.heads} attention heads are not divisible by attention-TP {par.attn_tp}; "
                    f"{_tp_fix(par, spec.heads)}")
    if spec.kda_heads and spec.kda_heads % par.attn_tp:
        errs.append(f"{spec.kda_heads} KDA heads are not divisible by attention-TP {par.attn_tp}; "
                    f"{_tp_fix(par, spec.kda_heads)}")
    if spec.is_moe:
        physical = spec.experts + (par.redundant_experts if par.moe_ep > 1 else 0)
        if physical % par.moe_ep:
            need = -physical % par.moe_ep + par.redundant_experts
            flag = (f"--ep-num-redundant-experts {need}" if par.engine == "sglang" else
                    f"--enable-eplb --eplb-config '{{\"num_redundant_experts\": {need}}}'")
            errs.append(f"{spec.experts} experts" + (f" + {par.redundant_experts} redundant" if par.redundant_experts else "")
                        + f" are not divisible by EP {par.moe_ep}; pick an ep that divides {physical}, or add "
                        f"redundant experts to make it divisible ({flag})")
        if spec.moe_intermediate % par.moe_tp:
            errs.append(f"moe_intermediate_size {spec.moe_intermediate} is not divisible by MoE-TP {par.moe_tp} "
                        f"(tp/ep); {_ep_flag(par)}")
        elif spec.quant == "fp8_block" and (spec.moe_intermediate // par.moe_tp) % spec.quant_block[0]:
            errs.append(f"per-rank MoE intermediate {spec.moe_intermediate // par.moe_tp} is not a multiple of the "
                        f"FP8 block {spec.quant_block[0]}; {_ep_flag(par)}")
    if par.pp > spec.layers:
        errs.append(f"pp {par.pp} exceeds the {spec.layers} layers")
    return errs
