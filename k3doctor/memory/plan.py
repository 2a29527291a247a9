"""Per-rank memory projection: weights by role, load transient, KV/state, reserve, free."""

from __future__ import annotations

import re

from dataclasses import dataclass, field, replace
from math import ceil
from typing import TYPE_CHECKING, Any, Mapping

from . import constants as C
from ..units import gib as _gib
from .inventory import Inventory
from .kv import hybrid_page, kda_state_bytes, kv_bytes_per_token, sliding_bytes_per_request, stage_layer_sets
from .placement import Parallel, PlanError, compact, expert_pad_factor, stage_weights, validate_parallel

if TYPE_CHECKING:  # pragma: no cover
    from ..facts import Facts

__all__ = ["RankMemory", "Plan", "compute_plan", "plan_from_facts", "resolve_gpu",
           "SCHEMA_VERSION", "GpuSpec"]

SCHEMA_VERSION = 1


@dataclass
class GpuSpec:
    name: str
    memory_total: int
    memory_free: int | None = None
    source: str = "target"
    #: compute capability (major, minor) when known: rules out plans an engine crashes on
    cc: tuple[int, int] | None = None
    #: NVML driver-reserved bytes (``memory_reserved`` of the gpu fact) when known
    reserved: int | None = None

    def cuda_total(self) -> int:
        """What ``torch.cuda.mem_get_info()`` calls total: NVML total minus driver-reserved memory
        (vLLM sizes ``--gpu-memory-utilization`` against this; constants.NVML_RESERVED_BYTES)."""
        r = self.reserved if self.reserved is not None else C.NVML_RESERVED_BYTES.get(
            self.name, C.NVML_RESERVED_DEFAULT)
        return int(self.memory_total - r)


@dataclass
class RankMemory:
    rank: int
    stage: int
    weights_bytes: int
    components: dict[str, int]
    transient_bytes: int
    kv_bytes: int
    state_bytes: int
    reserve_bytes: int
    free_bytes: int
    load_peak_bytes: int = 0
    #: what ``reserve_bytes`` is made of: ``cuda_context``, ``nccl`` (SGLang); vLLM: ``activations``
    #: (the profile run's peak), ``cuda_graphs`` (only when estimated), ``non_torch``, ``cuda_context``,
    #: ``driver_reserved`` (NVML total minus what CUDA reports)
    reserve_components: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank, "stage": self.stage, "weights_bytes": self.weights_bytes,
            "components": dict(self.components), "transient_bytes": self.transient_bytes,
            "kv_bytes": self.kv_bytes, "state_bytes": self.state_bytes, "reserve_bytes": self.reserve_bytes,
            "reserve_components": dict(self.reserve_components), "free_bytes": self.free_bytes,
        }


@dataclass
class Plan:
    engine: str
    parallel: Parallel
    gpu: GpuSpec
    ranks: list[RankMemory]
    stages: list[RankMemory]  # one representative rank per distinct shape (per PP stage)
    max_rank_weights_bytes: int
    kv_tokens: int
    kv_bytes_per_token: int
    max_context: int
    max_concurrency: int | None
    requested_context: int | None
    requested_concurrency: int
    fits: bool
    weights_fit: bool
    load_fits: bool
    kv_fits: bool
    budget_bytes: int
    inventory_source: str
    header_only: bool
    model_total_bytes: int
    n_tensors: int
    max_shard_bytes: int
    notes: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    model_name: str = ""
    why: list[str] = field(default_factory=list)
    #: memory the engine has for KV (+ KDA state) per rank after weights and the profiled overhead
    #: (vLLM: may be negative -- "No available memory for the cache blocks"); min over stages
    kv_avail_bytes: int = 0
    #: KV (+ per-request state) the requested context needs at the requested concurrency, per rank,
    #: counted the way the engine checks it (vLLM: check_enough_kv_cache_memory); max over stages
    kv_need_bytes: int | None = None
    #: the context ``kv_need_bytes`` is for: ``--context`` / ``--max-model-len``, else the model's maximum
    kv_need_context: int | None = None
    #: how ``budget_bytes`` is formed, e.g. "0.97 × 139.80 GiB CUDA-visible"
    budget_basis: str = ""
    #: vLLM: the non-KV memory its profile run charges besides weights (activation peak, non-torch,
    #: CUDA-graph estimate when enabled); largest over stages. 0 for SGLang (its headroom is 1 - f)
    overhead_bytes: int = 0
    #: vLLM without --max-model-len: the model's own maximum does not fit (the engine refuses to start)
    context_implicit: bool = False
    #: a quantisation layout the projection does not model: {"reason", "low_bytes", "high_bytes"}
    weights_uncertainty: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "engine": self.engine,
            "model": self.model_name,
            "parallel": self.parallel.to_dict(),
            "gpu": {"name": self.gpu.name, "memory_total": self.gpu.memory_total,
                    "memory_free": self.gpu.memory_free, "source": self.gpu.source},
            "ranks": [r.to_dict() for r in self.ranks],
            "max_rank_weights_bytes": self.max_rank_weights_bytes,
            "kv_tokens": self.kv_tokens,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "max_context": self.max_context,
            "max_concurrency": self.max_concurrency,
            "requested_context": self.requested_context,
            "requested_concurrency": self.requested_concurrency,
            "fits": self.fits,
            "budget_bytes": self.budget_bytes,
            "budget_basis": self.budget_basis,
            "overhead_bytes": self.overhead_bytes,
            "kv_avail_bytes": self.kv_avail_bytes,
            "kv_need_bytes": self.kv_need_bytes,
            "inventory": {"source": self.inventory_source, "header_only": self.header_only,
                          "total_bytes": self.model_total_bytes, "tensors": self.n_tensors,
                          "max_shard_bytes": self.max_shard_bytes},
            "notes": list(self.notes),
            "findings": list(self.findings),
            **({"weights_uncertainty": dict(self.weights_uncertainty)} if self.weights_uncertainty else {}),
        }


# -- GPU ---------------------------------------------------------------------------------------
_EXTRA_GPUS: dict[str, tuple[str, int, tuple[int, int] | None]] = {
    # only for validation receipts on GPUs the core targets table does not list (name, NVML total,
    # compute capability: it picks kernels whose weight layout differs)
    "rtx-5090": ("NVIDIA GeForce RTX 5090", 32607 * C.MiB, (12, 0)),
    "rtx-4090": ("NVIDIA GeForce RTX 4090", 24564 * C.MiB, (8, 9)),
    "l40s": ("NVIDIA L40S", 46068 * C.MiB, (8, 9)), "a100-40g": ("NVIDIA A100-SXM4-40GB", 40960 * C.MiB, (8, 0)),
    "h800": ("NVIDIA H800", 81559 * C.MiB, (9, 0)), "h20-141g": ("NVIDIA H20-3e", 143771 * C.MiB, (9, 0)),
    "gb10": ("NVIDIA GB10", 121680 * C.MiB, (12, 1)), "jetson-agx-thor": ("NVIDIA Thor", 125772 * C.MiB, (11, 0)),
    "rtx-pro-6000": ("NVIDIA RTX PRO 6000 Blackwell", 97887 * C.MiB, (12, 0)),
    "rtx-5070ti": ("NVIDIA GeForce RTX 5070 Ti", 16303 * C.MiB, (12, 0)), "t4": ("Tesla T4", 15360 * C.MiB, (7, 5)),
    "l4": ("NVIDIA L4", 23034 * C.MiB, (8, 9)), "l20": ("NVIDIA L20", 46068 * C.MiB, (8, 9)),
}


_ROCM_NAME = re.compile(r"\bamd\b|amd[-_ ]|instinct|radeon|\bmi\d{3}|gfx\d", re.I)


def gpu_platform(name: str | None) -> str:
    """``"rocm"`` for an AMD GPU name (``AMD Instinct MI300X``, ``amd-gfx1201``, ``mi355x``), else
    ``"cuda"``: vLLM's platforms measure the load differently (constants.VLLM_ROCM_LOAD_NONTORCH_BYTES)."""
    return "rocm" if name and _ROCM_NAME.search(str(name)) else "cuda"


def resolve_gpu(name: str) -> GpuSpec:
    """GPU by target name (k3doctor.targets, plus a few extra consumer/other types)."""
    key = name.strip().lower()
    if key in _EXTRA_GPUS:
        prod, total, cc = _EXTRA_GPUS[key]
        return GpuSpec(prod, total, None, "target", cc)
    from k3doctor.targets import get_target

    t = get_target(name)  # raises TargetError (a KeyError) with close matches
    return GpuSpec(t.product, t.memory_total, None, "target", t.cc)


# -- helpers -------------------------------------------------------------------------------


def sglang_default_mem_fraction(gpu_total: int, par: Parallel) -> float:
    """``_handle_gpu_memory_settings`` (domain.md §B.1)."""
    chunked = par.chunked_prefill_size or C.SGLANG_DEFAULT_CHUNKED_PREFILL
    bs = par.cuda_graph_max_bs or C.SGLANG_DEFAULT_CUDA_GRAPH_BS
    reserved = C.SGLANG_RESERVED_BASE_MB + max(chunked, 2048) * 1.5 + bs * 2 + par.tp * par.pp / 8 * 1024
    if par.dp_attention:
        reserved += bs * par.dp * 3 * (1.5 if bs > 300 else 1)
    if gpu_total > 60 * C.GiB:
        reserved = max(reserved, C.SGLANG_RESERVED_MIN_BIG_GPU_MB)
    if par.speculative:
        reserved += 2 * 1024
    mem_mb = gpu_total / C.MiB
    return round((mem_mb - reserved) / mem_mb, 3)


def _process_reserve(par: Parallel) -> dict[str, int]:
    """Per-process memory outside the engine's pools: CUDA context, NCCL communicators."""
    r = {"cuda_context": C.CUDA_CONTEXT_BYTES}
    nccl = (C.NCCL_BYTES if par.world > 1 else 0) + (C.NCCL_MULTINODE_EXTRA if par.nnodes > 1 else 0)
    if nccl:
        r["nccl"] = nccl
    return r


def _largest_layer_expert_bytes(inv: Inventory, par: Parallel) -> float:
    biggest = max((nb for _l, _r, kind, nb, _t in compact(inv) if kind == "expert"), default=0)
    return biggest / par.moe_ep / par.moe_tp * expert_pad_factor(par, inv.spec)


def _largest_tensor(inv: Inventory) -> int:
    v = getattr(inv, "_largest_tensor", None)
    if v is None:
        v = int(max((g.nbytes / max(1, g.count) for g in inv.groups), default=0))
        inv._largest_tensor = v  # type: ignore[attr-defined]
    return v


def _load_transient(inv: Inventory, par: Parallel) -> tuple[int, str]:
    fmt = (par.load_format or "auto").lower()
    if fmt == "fastsafetensors":
        t = C.FASTSAFETENSORS_BUFFERS * inv.max_shard_bytes
        why = f"fastsafetensors stages whole shards on the GPU, double-buffered: 2 × {_gib(inv.max_shard_bytes)}"
    elif fmt == "dummy":
        t, why = 0, "dummy weights"
    else:
        t = _largest_tensor(inv)
        why = "default loader: one tensor at a time"
    spec = inv.spec
    repack = 0.0
    backend = (par.moe_backend or "").lower()
    if spec is not None and spec.quant in ("mxfp4_ct", "mxfp4", "int4_ct", "nvfp4") and (
        backend in ("marlin", "auto", "") and spec.family == "kimi_k3" or backend == "marlin"
    ):
        repack = C.MARLIN_REPACK_FACTOR * _largest_layer_expert_bytes(inv, par)
    if repack > t:
        return int(repack), f"Marlin repack holds ~2× one layer's local experts ({_gib(repack / 2)})"
    return int(t), why


def _version_tuple(v: Any) -> tuple[int, ...] | None:
    """``"0.27.1+cu130"`` -> ``(0, 27, 1)``; None when not a version (``archrules.release_tuple``)."""
    from ..archrules import release_tuple

    rel = release_tuple(str(v)) if v else None
    return rel[:3] if rel else None


def vllm_model_runner(par: Parallel, spec: Any, vllm_version: str | None = None) -> tuple[str, str]:
    """Which vLLM GPU model runner profiles the memory: ``("v1" | "v2", why)``.

    ``VLLM_USE_V2_MODEL_RUNNER`` in the launch env decides when set (vllm/envs.py). Unset, the V1
    rule is used even where newer vLLM may default to V2 (``VLLM_V2_DEFAULT_SINCE``): that default
    is read only from third-party copies of vllm/config/vllm.py, the V2 rule has no measured
    receipt, and it projects the seed's failing TP16 run as fitting — so the projection stays on
    the side that the one real K3 failure supports. The version is kept in the note."""
    raw = (par.env or {}).get(C.VLLM_V2_RUNNER_ENV)
    if raw is not None and str(raw).strip() != "":
        on = str(raw).strip().lower() in ("1", "true", "yes", "on")
        return ("v2" if on else "v1"), f"{C.VLLM_V2_RUNNER_ENV}={raw}"
    ver = _version_tuple(vllm_version)
    if ver is not None and ver >= C.VLLM_V2_DEFAULT_SINCE and spec is not None and (
            spec.family == "kimi_k3" or (not spec.is_moe and not spec.kda_layers and spec.family == "dense")):
        return "v1", (f"V1 rule (vLLM {vllm_version} may default to the V2 runner for this architecture; "
                      f"set {C.VLLM_V2_RUNNER_ENV}=1 to project V2)")
    return "v1", "V1 model runner (vLLM's default unless VLLM_USE_V2_MODEL_RUNNER=1)"


def _vllm_overhead(inv: Inventory, par: Parallel, stage: int, gpu_total: int,
                   runner: str = "v1") -> tuple[int, dict[str, int], str]:
    """Non-KV memory vLLM's profile run charges besides weights (activation peak, non-torch, and the
    CUDA-graph estimate only when ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1``); estimates from the
    model code's tensor lifetimes, constants in :mod:`constants`. ``gpu_total`` is the CUDA-visible
    total (get_batch_defaults compares it with 70 GiB). ``runner`` "v2": the V2 model runner's dummy
    sampler (no top-k/top-p sort, ``VLLM_V2_SAMPLER_BYTES_PER_LOGIT``). The CUDA-graph estimate is
    charged for both runners when asked for (the first V2 runners returned 0 from
    ``profile_cudagraph_memory``; current ones measure it like V1). Returns (total, parts, what sets
    the peak)."""
    spec = inv.spec
    big = gpu_total >= C.VLLM_BIG_GPU_BYTES
    T = par.max_num_batched_tokens or C.VLLM_MAX_BATCHED_TOKENS[0 if big else 1]
    seqs = par.max_running or C.VLLM_MAX_NUM_SEQS[0 if big else 1]
    parts: dict[str, int] = {}
    why = ""
    if spec is None:
        parts["activations"] = int(2 * C.GiB)
        why = "profile-run peak: 2 GiB assumed (unknown architecture)"
    else:
        H = spec.hidden
        fwd: float = T * H * 2 * C.VLLM_RESIDUAL_BUFFERS
        if spec.family == "kimi_k3":
            fwd += T * H * 2 * (spec.layers / 12 + 2)  # AttnRes block bank (kimi-k3.md §3.4)
        layer = 0.0
        if spec.is_moe:
            i_local = spec.moe_intermediate / par.moe_tp * expert_pad_factor(par, spec)
            h_moe = spec.latent or H
            layer = T * spec.topk * (2 * i_local * 2 + h_moe * 2)
        if spec.intermediate and (not spec.is_moe or spec.first_dense):
            layer = max(layer, T * spec.intermediate / par.tp * 2 * 3)
        fwd += layer
        # the sampler runs on min(T, max_num_seqs) rows while the forward's hidden states are alive
        per_logit = C.VLLM_V2_SAMPLER_BYTES_PER_LOGIT if runner == "v2" else C.VLLM_SAMPLER_BYTES_PER_LOGIT
        rows = min(T, seqs)
        sampler = rows * spec.vocab * per_logit + T * H * 2
        parts["activations"] = int(max(fwd, sampler))
        sampler_txt = (f"the dummy sampler on {rows:,} rows (min(max_num_batched_tokens {T:,}, max_num_seqs "
                       f"{seqs:,})) × {spec.vocab:,} vocab × {per_logit:g} B"
                       + (" (V2 runner, no top-k/top-p sort)" if runner == "v2" else " (V1 top-k/top-p sampler)")
                       + " + hidden states")
        if sampler >= fwd:
            why = (f"vLLM profile-run peak {_gib(sampler)}: {sampler_txt}; the forward over {T:,} tokens "
                   f"needs {_gib(fwd)}")
        else:
            why = (f"vLLM profile-run peak {_gib(fwd)}: the forward over {T:,} tokens; {sampler_txt} "
                   f"needs {_gib(sampler)}")
        if str((par.env or {}).get(C.VLLM_CUDAGRAPH_ENV, "0")).strip().lower() in ("1", "true"):
            parts["cuda_graphs"] = C.VLLM_CUDAGRAPH_BYTES
    parts["non_torch"] = (C.NCCL_BYTES if par.world > 1 else C.VLLM_NONTORCH_TP1) + (
        C.NCCL_MULTINODE_EXTRA if par.nnodes > 1 else 0)
    return sum(parts.values()), parts, why


# -- the projection ------------------------------------------------------------------------
@dataclass
class _StageKv:
    """What one pipeline stage has for KV (+ recurrent state) under the engine's budget rule."""

    budget: int
    budget_basis: str
    kv: float = 0
    state: int = 0
    reserve: int = 0
    reserve_parts: dict[str, int] = field(default_factory=dict)
    per_tok: float = 0.0
    kv_tokens: int = 0
    max_ctx: int = 0
    conc: int | None = None
    avail: int = 0  # what the engine has for KV (+ state) on this stage; may be negative (vLLM)
    need: float | None = None  # what the requested context at the concurrency needs of it, as the engine counts it
    overhead: int = 0  # vLLM: the non-KV overhead the profile run charges
    note: str = ""


def _plan_notes(inv: Inventory, par: Parallel, vllm_version: str | None) -> tuple[list[str], str]:
    """The plan's notes on how it was made (approximate spec, header-only, vLLM runner and CUDA-graph
    accounting) and the vLLM model runner it assumes."""
    spec = inv.spec
    notes = list(inv.notes)
    if spec is not None and spec.approximate:
        notes.append("APPROXIMATE: " + "; ".join(spec.notes)
                     + ("" if inv.source == "headers" else
                        " (config only: point --model at the downloaded shards and their headers make the sizes exact)"))
        if any(m in ("mamba", "linear") for m in spec.layer_mixers):
            notes.append("the recurrent state of the Mamba/linear-attention layers is not counted in the KV "
                         "projection (only the full-attention layers' KV cache is)")
    elif spec is not None and spec.notes:
        notes.extend(spec.notes)
    if inv.header_only:
        notes.append("HEADER-ONLY accounting: unknown architecture, placement by tensor names only "
                     "(no KV/state projection)")
    runner = "v1"
    if par.engine == "vllm":
        runner, runner_why = vllm_model_runner(par, spec, vllm_version)
        if runner == "v2":
            notes.append(f"vLLM model runner V2 ({runner_why}): profile-run sampler without top-k/top-p sort")
    ver = _version_tuple(vllm_version)
    if par.engine == "vllm" and str((par.env or {}).get(C.VLLM_CUDAGRAPH_ENV, "")).strip() == "" and (
            ver is None or ver >= C.VLLM_CUDAGRAPH_DEFAULT_SINCE):
        notes.append("vLLM ≥ 0.21 also subtracts its CUDA-graph estimate by default "
                     f"({C.VLLM_CUDAGRAPH_ENV}=1; 0.4–4 GiB seen, growing with --max-num-batched-tokens on "
                     "hybrid linear-attention models); not counted here, so on those releases the KV shown is "
                     f"an upper bound (set {C.VLLM_CUDAGRAPH_ENV}=0 to match it, or =1 to count a flat "
                     f"{C.VLLM_CUDAGRAPH_BYTES >> 20} MiB)")
    return notes, runner


def _kv_need(inv: Inventory, par: Parallel, s: int, req_ctx: int, conc: int) -> float:
    """KV bytes ``conc`` requests of ``req_ctx`` tokens need on stage ``s`` (full + sliding layers)."""
    spec = inv.spec
    assert spec is not None
    return conc * (req_ctx * kv_bytes_per_token(spec, par, s, par.kv_cache_dtype)
                   + sliding_bytes_per_request(spec, par, s, par.kv_cache_dtype))


def _sglang_stage(inv: Inventory, par: Parallel, s: int, weights: int, free0: int, total: int,
                  proc: dict[str, int], req_ctx: int | None, conc: int) -> _StageKv:
    """SGLang: a static pool of ``--mem-fraction-static`` × free memory after the CUDA context
    (and NCCL); weights first, the rest split between the token pool and the KDA state pool."""
    spec = inv.spec
    proc_bytes = sum(proc.values())
    f = par.mem_fraction if par.mem_fraction is not None else sglang_default_mem_fraction(total, par)
    free_init = free0 - proc_bytes
    out = _StageKv(budget=int(f * free_init),
                   budget_basis=(f"--mem-fraction-static {f:g} × {_gib(free_init)} free after the CUDA context"
                                 + (" and NCCL" if "nccl" in proc else "")),
                   reserve=proc_bytes,  # context + NCCL; the (1 - f) headroom for activations/graphs shows as free
                   reserve_parts=dict(proc))
    pool = out.budget - weights
    if spec is not None:  # shown even when nothing is left for KV
        out.per_tok = kv_bytes_per_token(spec, par, s, par.kv_cache_dtype)
    if spec is not None and pool > 0:
        per_tok = out.per_tok
        if spec.kda_layers:
            _, kda, _ = stage_layer_sets(spec, par, s)
            slot = kda_state_bytes(spec, par.attn_tp, par.mamba_ssm_dtype) * len(kda)
            ratio = par.mamba_ratio or (
                C.SGLANG_K3_STATE_SLOTS * slot / (C.SGLANG_K3_RATIO_REQUEST_LEN * per_tok) if per_tok else 0)
            out.state = int(pool * ratio / (1 + ratio))
            out.kv = pool - out.state
            out.conc = int(out.state // (C.SGLANG_K3_STATE_SLOTS * slot)) if slot else None
        else:
            out.kv = pool
        out.kv_tokens = int(out.kv // per_tok) if per_tok else 0
        per_req_fixed = sliding_bytes_per_request(spec, par, s, par.kv_cache_dtype)
        out.max_ctx = int((out.kv - conc * per_req_fixed) // (per_tok * conc)) if per_tok else 0
        out.avail = int(out.kv)  # the token pool (the KDA state pool is sized separately)
        if req_ctx and per_tok:
            out.need = conc * (req_ctx * per_tok + per_req_fixed)
    elif pool > 0:
        out.kv = pool
    if pool <= 0:
        out.avail = int(pool)
        if spec is not None and req_ctx and not inv.header_only:
            out.need = _kv_need(inv, par, s, req_ctx, conc)
    return out


def _vllm_stage(inv: Inventory, par: Parallel, s: int, weights: int, gpu: GpuSpec, runner: str,
                req_ctx: int | None, conc: int) -> _StageKv:
    """vLLM: ``--gpu-memory-utilization`` × CUDA-visible memory, minus weights and the profile run's
    peak; KV pages (hybrid models: attention pages plus one KDA state page per layer) from the rest."""
    spec = inv.spec
    util = par.mem_fraction if par.mem_fraction is not None else C.VLLM_DEFAULT_UTIL
    cuda_total = gpu.cuda_total()
    over, parts, peak_why = _vllm_overhead(inv, par, s, cuda_total, runner)
    # profiled activations, graphs, NCCL + context, and the driver-reserved memory
    reserve_parts = {**parts, "cuda_context": C.CUDA_CONTEXT_BYTES, "driver_reserved": gpu.memory_total - cuda_total}
    out = _StageKv(budget=int(util * cuda_total),  # requested_memory = util x torch's total (NVML - reserved)
                   budget_basis=f"--gpu-memory-utilization {util:g} × {_gib(cuda_total)} CUDA-visible",
                   reserve=sum(reserve_parts.values()), reserve_parts=reserve_parts, overhead=over, note=peak_why or "")
    avail = out.budget - weights - over
    out.avail = int(avail)
    if spec is not None and req_ctx and not inv.header_only:
        # check_enough_kv_cache_memory: one request at max_model_len; sum over layers of
        # max_memory_usage_bytes (attention: cdiv(len, block) pages; KDA/mamba: one page)
        if spec.kda_layers:
            attn_l, kda_l, _ = stage_layer_sets(spec, par, s)
            bs_, page_ = hybrid_page(spec, par, par.kv_cache_dtype)
            out.need = conc * (len(attn_l) * ceil(req_ctx / bs_) + len(kda_l)) * page_
        else:
            out.need = _kv_need(inv, par, s, req_ctx, conc)
    if spec is not None:  # shown even when nothing is left for KV
        out.per_tok = kv_bytes_per_token(spec, par, s, par.kv_cache_dtype)
    if spec is not None and avail > 0:
        if spec.kda_layers:
            attn, kda, _ = stage_layer_sets(spec, par, s)
            bs, page = hybrid_page(spec, par, par.kv_cache_dtype)
            pages = avail // page
            per_req_state = len(kda)
            # one request at context c needs len(attn)*ceil(c/bs) + len(kda) pages
            usable = pages // conc - per_req_state
            out.max_ctx = int(max(0, usable // max(1, len(attn))) * bs)
            out.state = int(conc * per_req_state * page)
            out.kv = int(avail - out.state)
            # (no attention pages left once the requests' KDA state is placed: 0 tokens, not fewer)
            out.kv_tokens = int(max(0, pages - conc * per_req_state) // max(1, len(attn)) * bs)
            if req_ctx:
                out.conc = int(pages // (len(attn) * ceil(req_ctx / bs) + per_req_state))
        else:
            out.kv = avail
            out.kv_tokens = int(out.kv // out.per_tok) if out.per_tok else 0
            per_req_fixed = sliding_bytes_per_request(spec, par, s, par.kv_cache_dtype)
            out.max_ctx = int((out.kv - conc * per_req_fixed) // (out.per_tok * conc)) if out.per_tok else 0
    elif avail > 0:
        out.kv = avail
    return out


def _min_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def compute_plan(inv: Inventory, par: Parallel, gpu: GpuSpec, *, model_name: str = "",
                 vllm_version: str | None = None, default_context_check: bool = True) -> Plan:
    """Project every rank's memory for ``par`` on ``gpu``. Raises :class:`PlanError` for
    impossible plans. ``vllm_version`` (the ``packages`` fact) picks vLLM's default model runner.
    ``default_context_check``: for vLLM without ``--max-model-len``, hold the plan to the model's own
    maximum length, as vLLM does at start (``--search`` turns it off and reports each plan's largest
    context instead)."""
    spec = inv.spec
    if gpu.cc is not None and par.gpu_cc != gpu.cc:
        par = replace(par, gpu_cc=gpu.cc)
    errs = validate_parallel(par, spec)
    if errs:
        raise PlanError("; ".join(errs))
    if par.engine not in ("sglang", "vllm"):
        raise PlanError(f"unknown engine {par.engine!r} (use sglang or vllm)")
    total = gpu.memory_total
    free0 = gpu.memory_free if gpu.memory_free is not None else total - C.NVML_IDLE_RESERVE
    proc = _process_reserve(par)
    transient, transient_why = _load_transient(inv, par)
    notes, runner = _plan_notes(inv, par, vllm_version)
    req_ctx = par.context or (spec.max_position if spec is not None else None)
    conc = max(1, par.concurrency or 1)
    stages: list[RankMemory] = []
    kvs: list[_StageKv] = []
    for s in range(par.pp):
        comps = stage_weights(inv, par, s)
        if par.engine == "vllm" and gpu_platform(gpu.name) == "rocm":
            comps["load_nontorch"] = C.VLLM_ROCM_LOAD_NONTORCH_BYTES  # total - free on ROCm (rocm.py)
        weights = int(sum(comps.values()))
        if par.engine == "sglang":
            st = _sglang_stage(inv, par, s, weights, free0, total, proc, req_ctx, conc)
        else:
            st = _vllm_stage(inv, par, s, weights, gpu, runner, req_ctx, conc)
            if st.note and st.note not in notes:
                notes.append(st.note)
        kvs.append(st)
        used = weights + max(0, st.kv) + st.state + st.reserve
        stages.append(RankMemory(rank=s, stage=s, weights_bytes=weights, components={k: int(v) for k, v in comps.items()},
                                 transient_bytes=transient, kv_bytes=int(max(0, st.kv)), state_bytes=int(st.state),
                                 reserve_bytes=int(st.reserve), free_bytes=int(total - used),
                                 load_peak_bytes=int(sum(proc.values()) + weights + transient),
                                 reserve_components={k: int(v) for k, v in st.reserve_parts.items()}))
    budget, budget_basis = kvs[-1].budget, kvs[-1].budget_basis
    overhead_max = max([0] + [st.overhead for st in kvs])
    kv_tokens_min = min(st.kv_tokens for st in kvs)
    per_tok_max = max(int(st.per_tok) for st in kvs)
    max_ctx_min: int | None = min(st.max_ctx for st in kvs)
    max_conc: int | None = None
    for st in kvs:
        max_conc = _min_opt(max_conc, st.conc)
    avail_min = min(st.avail for st in kvs)
    needs = [int(st.need) for st in kvs if st.need is not None]
    need_max = max(needs) if needs else None
    if spec is not None and spec.max_position:
        max_ctx_min = min(max_ctx_min or 0, spec.max_position)
    if spec is not None and max_conc is None and req_ctx and per_tok_max:
        max_conc = min(int((kv_tokens_min or 0) // req_ctx), 10**9)
    per_stage = par.world // par.pp
    ranks = [RankMemory(**{**st.__dict__, "rank": s * per_stage + j}) for s, st in enumerate(stages) for j in range(per_stage)]
    maxw = max(st.weights_bytes for st in stages)
    weights_fit = all(st.kv_bytes > 0 for st in stages) if spec is not None else all(st.weights_bytes < budget for st in stages)
    load_fits = all(st.load_peak_bytes <= free0 for st in stages)
    kv_fits, context_implicit, why = _verdict(inv, par, stages, weights_fit=weights_fit, load_fits=load_fits,
                                              maxw=maxw, budget=budget, budget_basis=budget_basis,
                                              overhead_max=overhead_max, free0=free0, transient_why=transient_why,
                                              max_ctx_min=max_ctx_min, max_conc=max_conc, conc=conc,
                                              default_context_check=default_context_check)
    notes.append(f"load transient: {transient_why}")
    return _with_uncertainty(Plan(
        engine=par.engine, parallel=par, gpu=GpuSpec(gpu.name, total, free0, gpu.source, gpu.cc, gpu.reserved),
        ranks=ranks, stages=stages,
        max_rank_weights_bytes=maxw, kv_tokens=int(kv_tokens_min or 0), kv_bytes_per_token=per_tok_max,
        max_context=int(max(0, max_ctx_min or 0)), max_concurrency=max_conc, requested_context=par.context,
        requested_concurrency=conc, fits=weights_fit and load_fits and kv_fits, weights_fit=weights_fit,
        load_fits=load_fits, kv_fits=kv_fits, budget_bytes=budget, inventory_source=inv.source,
        header_only=inv.header_only, model_total_bytes=inv.total_bytes, n_tensors=inv.n_tensors,
        max_shard_bytes=inv.max_shard_bytes, notes=notes, model_name=model_name, why=why,
        kv_avail_bytes=int(avail_min or 0), kv_need_bytes=need_max,
        kv_need_context=int(req_ctx) if need_max is not None and req_ctx else None,
        budget_basis=budget_basis, overhead_bytes=int(overhead_max), context_implicit=context_implicit,
    ), inv, par)


def _with_uncertainty(plan: Plan, inv: Inventory, par: Parallel) -> Plan:
    """``plan`` with, for an unmodelled quantisation layout, the bounds on the largest rank's weights
    in the JSON and as a note (quantbounds)."""
    from .quantbounds import weights_uncertainty

    u = weights_uncertainty(inv, par)
    if u is None:
        return plan
    plan.weights_uncertainty = u
    plan.notes.insert(0, f"UNCERTAIN weights: {u['reason']}; the largest rank's weights could be "
                         f"{_gib(u['low_bytes'])}–{_gib(u['high_bytes'])} (projected {_gib(plan.max_rank_weights_bytes)})")
    return plan


def _verdict(inv: Inventory, par: Parallel, stages: list[RankMemory], *, weights_fit: bool, load_fits: bool, maxw: int,
             budget: int, budget_basis: str, overhead_max: int, free0: int, transient_why: str,
             max_ctx_min: int | None, max_conc: int | None, conc: int,
             default_context_check: bool) -> tuple[bool, bool, list[str]]:
    """(KV fits, the context was implied by vLLM's default, the reasons a plan does not fit)."""
    spec = inv.spec
    kv_fits = True
    why: list[str] = []
    if not weights_fit:
        if par.engine == "vllm" and maxw < budget:
            why.append(f"weights {_gib(maxw)} + the profiled overhead {_gib(overhead_max)} per rank exceed the "
                       f"{_gib(budget)} budget ({budget_basis}): no KV room")
        else:
            why.append(f"weights {_gib(maxw)} per rank exceed the {_gib(budget)} budget ({budget_basis}): no KV room")
    if not load_fits:
        why.append(f"load peak {_gib(max(st.load_peak_bytes for st in stages))} > free {_gib(free0)} ({transient_why})")
    context_implicit = False
    if spec is not None and weights_fit and par.context:
        kv_fits = (max_ctx_min or 0) >= par.context
        if not kv_fits:
            why.append(f"KV holds {max_ctx_min} tokens per request at concurrency {conc}, {par.context} requested")
    elif (spec is not None and weights_fit and par.engine == "vllm" and default_context_check
          and spec.max_position and not inv.header_only and (max_ctx_min or 0) < spec.max_position):
        # vLLM's max_model_len defaults to the model's own maximum, and check_enough_kv_cache_memory
        # refuses to start when one request of that length does not fit
        kv_fits = False
        context_implicit = True
        why.append(f"without --max-model-len vLLM uses the model's {spec.max_position:,} tokens and refuses to "
                   f"start: KV holds {max_ctx_min:,} tokens per request")
    if spec is not None and weights_fit and par.concurrency and max_conc is not None and max_conc < par.concurrency:
        kv_fits = False
        why.append(f"at most {max_conc} concurrent requests fit, {par.concurrency} requested")
    return kv_fits, context_implicit, why


# -- from facts -------------------------------------------------------------------------------
def device_cc(device: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(major, minor)`` of a ``gpu`` fact device, when recorded."""
    cc = device.get("cc")
    if isinstance(cc, (list, tuple)) and len(cc) == 2 and all(isinstance(x, int) for x in cc):
        return (int(cc[0]), int(cc[1]))
    return None


def plan_from_facts(facts: "Facts") -> Plan:
    """The plan MEM checks read: the ``plan`` derived fact (:func:`k3doctor.derived.derive_plan`,
    computed once per fact set from ``launch``, ``gpu``, ``model``/``--model`` and ``packages``).
    Raises ``Skip`` with the reason when it cannot be made."""
    return facts.get("plan")  # type: ignore[no-any-return]
