"""ARCH family, plan half: parallel-plan arithmetic (ARCH005), vLLM MegaMoE without expert
parallelism (ARCH006) and the Kimi-K3 KDA fast paths (ARCH007). Flags vs the GPU architecture are
:mod:`.arch`; both register as ARCH."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ..archrules import (
    ModelInfo,
    device_groups,
    format_cc,
)
from ..check import Check, module_checks
from ..facttypes import GpuFact, ModelFact
from ..launch import LaunchSpec
from ..model import Finding, Severity

from ._arch_common import (  # noqa: F401 - the family's shared constants and helpers
    _ENGINE_NAMES, _POW2, _divisors, _gpu_desc, _int, _model, _quote,
    _where,
)


# -- ARCH005 ---------------------------------------------------------------------------------
class ARCH005(Check):
    """Parallel plan does not divide: heads, experts, TP/EP/DP, GPUs per node

    ## What it checks
    The arithmetic the engines assert at start-up:

    - attention heads % attention-TP (vLLM: TP; SGLang dp-attention: TP / DP), with the head
      count from the model's config.json or the built-in table (Kimi-K3 96, DeepSeek-V3 128,
      Kimi-K2 64, gpt-oss-120b 64, Qwen3-235B-A22B 64);
    - routed experts % EP (SGLang `--ep-size`; vLLM MegaMoE, where Kimi-K3's 896 experts must
      divide by TP·DP);
    - SGLang: TP % EP and EP ≤ TP; with `--enable-dp-attention`, TP % DP;
    - TP·PP(·DP) against GPUs per node × `--nnodes` (from the `gpu` fact when known); vLLM
      multi-node without `--nnodes` or Ray.

    ## Why it matters
    Each of these is an assertion or ValueError the engine raises while building the model,
    i.e. after the container is scheduled and, for some, after weights start loading.

    ## How to fix
    Use the sizes the finding lists (they divide the model's heads/experts and the GPUs).
    """

    def run(self, launch: LaunchSpec, gpu: GpuFact | None = None,
            model: ModelFact | None = None) -> Iterator[Finding]:
        engine = launch.engine
        info = _model(launch, model)
        yield from self._heads(launch, engine, info)
        yield from self._experts(launch, engine, info)
        yield from self._tp_ep_dp(launch, engine)
        yield from self._world(launch, engine, gpu)

    def _heads(self, launch: LaunchSpec, engine: str, info: ModelInfo) -> Iterator[Finding]:
        heads = info.heads
        if not heads:
            return
        attn_tp = LaunchSpec.of(launch).attention_tp
        if heads % attn_tp == 0:
            return
        valid = _divisors(heads, max(LaunchSpec.of(launch).world_size, attn_tp))
        said = _engine_says(
            engine,
            vllm=f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({attn_tp}).",
            sglang=f"the {heads} attention heads are split evenly over attention-TP ranks; {heads} % {attn_tp} != 0 "
                   "fails the head-split assertion while the attention layers are built")
        if engine == "vllm":
            fix = f"use --tensor-parallel-size in {valid} ({heads} heads)"
        elif launch.enable_dp_attention:
            fix = f"choose --tp-size / --dp-size so that TP/DP is in {valid}"
        else:
            fix = f"use --tp-size in {valid} ({heads} heads)"
        yield self._indivisible(info, engine, ("heads", heads, "attention heads"),
                                ("attention_tp", attn_tp, "attention-TP"), said, fix)

    def _experts(self, launch: LaunchSpec, engine: str, info: ModelInfo) -> Iterator[Finding]:
        experts = info.experts
        ep = _int(launch, "ep")
        if not experts or ep <= 1 or experts % ep == 0:
            return
        valid = _divisors(experts, max(LaunchSpec.of(launch).world_size, ep))
        mega = (launch.moe_runner_backend or "") == "deep_gemm_mega_moe"
        if engine == "vllm" and not (mega and info.family == "kimi-k3"):
            return  # vLLM's FusedMoE spreads the remainder; only K3 MegaMoE asserts
        said = _engine_says(
            engine,
            vllm=f"Kimi K3 num_experts={experts} must be divisible by EP size {ep}.",
            sglang=f"each EP rank owns num_experts // ep_size experts; {experts} routed experts do not split over "
                   f"{ep} ranks and the MoE layer's expert map assertion fails")
        if engine == "vllm":
            fix = f"choose TP×DP (the EP size with --enable-expert-parallel) in {valid}"
        else:
            fix = f"use --ep-size in {[d for d in valid if _int(launch, 'tp') % d == 0] or valid}"
        yield self._indivisible(info, engine, ("experts", experts, "routed experts"), ("ep", ep, "EP size"), said, fix)

    def _indivisible(self, info: ModelInfo, engine: str, count: tuple[str, int, str], by: tuple[str, int, str],
                     said: str, fix: str) -> Finding:
        """``<model> has N <things>, not divisible by <size> M``: (key, value, words) for each side."""
        (key, n, things), (by_key, m, size) = count, by
        return self.finding(
            f"{info.id or 'the model'} has {n} {things}, not divisible by {size} {m}. {said}",
            subject=f"{key}={n} {by_key}={m}",
            evidence={"engine": engine, "model": info.id, key: n, by_key: m, f"{key}_from": info.source or None},
            fix=fix,
        )

    def _tp_ep_dp(self, launch: LaunchSpec, engine: str) -> Iterator[Finding]:
        if engine != "sglang":
            return
        tp, ep, dp = _int(launch, "tp"), _int(launch, "ep"), _int(launch, "dp")
        if ep > 1 and (ep > tp or tp % ep):
            yield self.finding(
                f"--ep-size {ep} does not divide --tp-size {tp} (SGLang's MoE-TP size is tp_size / ep_size). "
                + _quote("sglang", "tp_size must be divisible by ep_size", True),
                subject=f"tp={tp} ep={ep}",
                evidence={"engine": engine, "tp": tp, "ep": ep},
                fix=f"use --ep-size in {[d for d in _POW2 if d <= tp and tp % d == 0]} (usually --ep-size {tp})",
            )
        if launch.enable_dp_attention and (dp > tp or tp % dp):
            yield self.finding(
                f"--enable-dp-attention with --dp-size {dp} and --tp-size {tp}: the attention-TP size tp_size / "
                f"dp_size is not a whole number. "
                + _quote("sglang", "attention-TP = tp_size // dp_size must divide tp_size exactly; the DP-attention "
                         "group setup asserts tp_size % dp_size == 0", False),
                subject=f"tp={tp} dp={dp} dp_attention",
                evidence={"engine": engine, "tp": tp, "dp": dp, "enable_dp_attention": True},
                fix=f"use --dp-size in {[d for d in _POW2 if d <= tp and tp % d == 0]}",
            )

    def _world(self, launch: LaunchSpec, engine: str, gpu: Mapping[str, Any] | None) -> Iterator[Finding]:
        if not gpu or gpu.get("ok") is False:
            return
        gpus = len([d for d in gpu.get("devices") or [] if isinstance(d, Mapping)])
        if gpus == 0:
            return
        world = LaunchSpec.of(launch).world_size
        nnodes = _int(launch, "nnodes")
        ray = (launch.distributed_executor_backend or "").lower() == "ray"
        tp, pp, dp = _int(launch, "tp"), _int(launch, "pp"), _int(launch, "dp")
        plan = f"TP {tp} × PP {pp}" + (f" × DP {dp}" if world == tp * pp * dp and dp > 1 else "")
        evidence: dict[str, Any] = {"engine": engine, "tp": tp, "pp": pp, "dp": dp, "world_size": world,
                                    "nnodes": nnodes, "gpus_per_node": gpus}
        where = _where(gpu)
        if engine == "vllm" and nnodes == 1 and world > gpus:
            if ray:
                return  # Ray places the workers over the cluster; the cluster size is not known here
            yield self.finding(
                f"{plan} = {world} GPUs but {where} has {gpus} and the launch gives neither --nnodes nor "
                "--distributed-executor-backend ray. "
                + _quote("vllm", f"World size ({world}) is larger than the number of available GPUs ({gpus}) in this "
                         "node. If this is intentional and you are using: - ray, set '--distributed-executor-backend "
                         "ray'. - multiprocessing, set '--nnodes' appropriately.", True),
                subject=f"world_size={world} gpus_per_node={gpus}",
                evidence=evidence,
                fix=f"add --nnodes {-(-world // gpus)} --node-rank N --master-addr HEAD_IP (multiprocessing), or "
                "--distributed-executor-backend ray with a Ray cluster",
            )
            return
        if ray and engine == "vllm":
            return
        if world % nnodes:
            yield self.finding(
                f"{plan} = {world} ranks do not split evenly over --nnodes {nnodes}.",
                subject=f"world_size={world} nnodes={nnodes}",
                evidence=evidence,
                fix=f"make TP×PP a multiple of {nnodes} (e.g. --tp-size {gpus * nnodes // max(pp, 1)})",
            )
            return
        per_node = world // nnodes
        if per_node > gpus:
            said = (
                _quote("vllm", f"World size ({per_node}) is larger than the number of available GPUs ({gpus}) in this "
                       "node.", False)
                if engine == "vllm"
                else _quote("sglang", f"ranks {gpus}..{per_node - 1} on each node get a GPU id ≥ the {gpus} visible "
                            "devices (CUDA error: invalid device ordinal)", False)
            )
            yield self.finding(
                f"{plan} = {world} GPUs over {nnodes} node(s) needs {per_node} GPUs per node; {where} has {gpus}. {said}",
                subject=f"gpus_per_node={per_node} available={gpus}",
                evidence=evidence,
                fix=f"use --nnodes {-(-world // gpus)} (one per {gpus} GPUs) or shrink TP×PP to {gpus * nnodes}",
            )
        elif per_node < gpus:
            yield self.finding(
                f"{plan} = {world} GPUs over {nnodes} node(s) uses {per_node} of the {gpus} GPUs on {where}; "
                f"{gpus - per_node} stay idle.",
                subject=f"gpus_per_node={per_node} available={gpus}",
                evidence=evidence,
                fix=f"raise TP (e.g. --tp-size {tp * gpus // per_node}) to use every GPU, or restrict "
                "CUDA_VISIBLE_DEVICES on purpose",
                severity=Severity.INFO,
            )


# -- ARCH006 ---------------------------------------------------------------------------------
class ARCH006(Check):
    """vLLM MegaMoE without --enable-expert-parallel

    ## What it checks
    A vLLM launch with `--moe-backend deep_gemm_mega_moe` (Kimi-K3 / DeepSeek-V4 MegaMoE)
    that does not pass `--enable-expert-parallel`.

    ## Why it matters
    The model constructor raises at start-up: Kimi-K3 "Kimi K3 MegaMoE requires expert
    parallel. Enable it with --enable-expert-parallel." (DeepSeek-V4: "DeepSeek V4 MegaMoE
    requires expert parallel").

    ## How to fix
    Add `--enable-expert-parallel` (the EP size is then TP×DP; Kimi-K3's 896 experts must
    divide by it — ARCH005), or choose another `--moe-backend`.
    """

    url = "https://github.com/vllm-project/vllm/blob/main/vllm/models/kimi_k3/nvidia/model.py"

    def run(self, launch: LaunchSpec, model: ModelFact | None = None) -> Iterator[Finding]:
        if launch.engine != "vllm" or (launch.moe_runner_backend or "") != "deep_gemm_mega_moe":
            return
        flags = launch.flags
        if launch.enable_expert_parallel or flags.get("--enable-expert-parallel") or flags.get("-ep"):
            return
        info = _model(launch, model)
        if info.family == "deepseek-v4":
            error = "DeepSeek V4 MegaMoE requires expert parallel"
        else:
            error = "Kimi K3 MegaMoE requires expert parallel. Enable it with --enable-expert-parallel."
        yield self.finding(
            f"--moe-backend deep_gemm_mega_moe without --enable-expert-parallel. vLLM raises: “NotImplementedError: "
            f"{error}”",
            subject="--moe-backend=deep_gemm_mega_moe",
            evidence={"engine": "vllm", "model": info.id, "moe_backend": "deep_gemm_mega_moe",
                      "enable_expert_parallel": False},
            fix="add --enable-expert-parallel (EP = TP×DP must divide the routed experts, 896 for Kimi-K3), or use "
            "another --moe-backend",
        )


# -- ARCH007 ---------------------------------------------------------------------------------
_SGLANG_FUSED_KDA_LOCAL_HEADS = (3, 6, 12)
_VLLM_FUSED_KDA_LOCAL_HEADS = (12, 24, 48, 96)
FLASHKDA_ERROR = "FlashKDA requires CUDA SM90/SM10x/SM12x, bfloat16, head_dim=128, and a bounded KDA gate."



def _engine_says(engine: str, *, vllm: str, sglang: str) -> str:
    """What the engine says: vLLM's own message (quoted verbatim), or SGLang's rule in words."""
    return _quote("vllm", vllm, True) if engine == "vllm" else _quote("sglang", sglang, False)

class ARCH007(Check):
    """Kimi-K3 KDA fast paths unavailable at this attention-TP or architecture

    ## What it checks
    For Kimi-K3 (69 KDA linear-attention layers, 96 KDA heads):

    - the fused KDA decode kernel needs a fixed number of local heads per rank — SGLang
      {3, 6, 12} (attention-TP 32/16/8), vLLM {12, 24, 48, 96} (TP 8/4/2/1);
    - FlashKDA prefill needs SM90/SM10x/SM12x.

    ## Why it matters
    Outside these shapes the engine takes the unfused KDA decode path / Triton KDA prefill:
    it runs, but slower (the unfused decode issues dozens of small kernels per KDA layer). Note
    that vLLM TP16 — the usual fix for ARCH003 — gives 6 local heads, outside vLLM's fused set.
    An explicit FlashKDA selection on other GPUs raises "FlashKDA requires CUDA
    SM90/SM10x/SM12x, bfloat16, head_dim=128, and a bounded KDA gate."

    ## How to fix
    Informational. Prefer an attention-TP in the listed set when latency matters.
    """

    severity = Severity.INFO
    url = "https://github.com/vllm-project/vllm/blob/main/vllm/models/kimi_k3/nvidia/kda.py"

    def run(self, launch: LaunchSpec, gpu: GpuFact | None = None,
            model: ModelFact | None = None) -> Iterator[Finding]:
        info = _model(launch, model)
        if info.family != "kimi-k3":
            return
        engine = launch.engine
        kda = info.kda_heads or info.heads or 96
        attn_tp = LaunchSpec.of(launch).attention_tp
        allowed = _SGLANG_FUSED_KDA_LOCAL_HEADS if engine == "sglang" else _VLLM_FUSED_KDA_LOCAL_HEADS
        if engine in ("sglang", "vllm") and kda % attn_tp == 0 and kda // attn_tp not in allowed:
            local = kda // attn_tp
            tps = sorted(kda // h for h in allowed)
            yield self.finding(
                f"Kimi-K3 KDA: {kda} heads over attention-TP {attn_tp} = {local} local heads; "
                f"{_ENGINE_NAMES[engine]}'s fused KDA decode kernel needs local heads in {set(allowed)} "
                f"(attention-TP {tps}), so decode uses the unfused KDA path (slower per token).",
                subject=f"kda_local_heads={local}",
                evidence={"engine": engine, "kda_heads": kda, "attention_tp": attn_tp, "local_heads": local,
                          "fused_local_heads": ",".join(str(h) for h in allowed)},
                fix=f"for the fused KDA decode kernel use attention-TP in {tps}",
            )
        for cc, names, count in device_groups(gpu) if gpu else []:
            if cc[0] in (9, 10, 12):
                continue
            yield self.finding(
                f"Kimi-K3 where {_gpu_desc(gpu, cc, names, count)}: FlashKDA prefill needs SM90/SM10x/SM12x, so KDA "
                f"prefill runs the Triton kernels; forcing FlashKDA raises “{FLASHKDA_ERROR}”",
                subject=f"flashkda cc={format_cc(cc)}",
                evidence={"engine": engine, "cc": format_cc(cc), "gpus": count},
                fix="keep the KDA prefill backend on auto/triton on this GPU; use Hopper or Blackwell for FlashKDA",
            )


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)

FAMILY = ("ARCH", "launch flags, backends and env vars vs the GPU architecture; parallel-plan arithmetic", 30)
CHECKS = module_checks(globals())
