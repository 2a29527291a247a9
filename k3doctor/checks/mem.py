"""MEM family: per-rank memory projection (weights, load transient, KV/state, replicated floor)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from ..check import Check, module_checks
from ..facttypes import GpuFact
from ..launch import LaunchSpec
from ..model import Finding, Severity
from ..units import gib as _gib

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.inventory import Inventory
    from ..memory.plan import Plan

_OVERHEAD_LABEL = {"activations": "profile-run peak", "cuda_graphs": "CUDA graphs", "non_torch": "non-torch"}


def _flag(plan: Any, sglang: str, vllm: str) -> str:
    return sglang if plan.engine == "sglang" else vllm


def _shortfall(plan: Any) -> tuple[str, dict[str, Any]]:
    """How far the KV memory is from the requested context: text and evidence (empty when unknown).

    ``kv_need_bytes`` is counted the way the engine checks it (vLLM ``check_enough_kv_cache_memory``:
    one request of ``--max-model-len``, attention pages + one KDA state page per layer; SGLang: the
    token pool), ``kv_avail_bytes`` is what is left after weights and the profiled overhead
    (negative when even the weights do not fit)."""
    need = getattr(plan, "kv_need_bytes", None)
    want = getattr(plan, "kv_need_context", None) or plan.requested_context
    if need is None or not want:
        return "", {}
    avail = int(plan.kv_avail_bytes)
    short = max(0, int(need) - avail)
    conc = plan.requested_concurrency
    text = (f"{want:,} tokens" + (f" × {conc} requests" if conc > 1 else "") + f" need {_gib(need)} of KV per rank, "
            f"{_gib(avail)} is left " + ("after weights and the profiled peak" if plan.engine == "vllm"
                                          else "of the static pool after weights")
            + f": short by {_gib(short)}; "
            f"largest context that fits: {plan.max_context:,} tokens")
    ev = {"kv_need_bytes": int(need), "kv_avail_bytes": avail, "kv_short_bytes": short,
          "requested_context": want, "max_context": plan.max_context}
    return text, ev


def _smallest_fitting(plan: "Plan", inv: "Inventory") -> str:
    """Concrete launch flags of the smallest plan that fits (for the fix text)."""
    try:
        from ..memory.search import candidate_label, search_plans

        gpn = plan.parallel.gpus_per_node or 8
        for c in search_plans(inv, plan.parallel, plan.gpu, gpus_per_node=gpn):
            if c.fits:
                p = c.parallel
                if plan.engine == "sglang":
                    flags = f"--tp-size {p.tp}" + (f" --ep-size {p.ep}" if p.ep > 1 else "") + (
                        f" --pp-size {p.pp}" if p.pp > 1 else "")
                else:
                    flags = f"--tensor-parallel-size {p.tp}" + (" --enable-expert-parallel" if p.ep > 1 else "") + (
                        f" --pipeline-parallel-size {p.pp}" if p.pp > 1 else "")
                return f"{flags} --nnodes {c.nodes} ({candidate_label(p)}, {p.world} GPUs; `k3doctor plan --search`)"
    except Exception:  # noqa: BLE001 - the suggestion is best effort; the finding stands without it
        pass
    return "more GPUs (see `k3doctor plan --search`)"


class MEM001(Check):
    """Model weights do not fit the per-rank memory budget

    ## What it checks
    Projects every rank's weight bytes under the engine's placement rules (TP/EP/PP sharding,
    replicated routers, MLA LoRA fronts, Kimi-K3 latent projections, vocab-parallel embeddings,
    vLLM's MoE intermediate padding) and compares them with the static budget: SGLang
    `--mem-fraction-static` × free memory at start, vLLM `--gpu-memory-utilization` × total minus
    the profile run's activations. The finding says how much KV the requested context needs, how
    far short the budget is (GiB) and the largest context that fits.

    ## Why it matters
    The engine finds out only after reading the checkpoint — for a 1.56 TB model that is
    10+ minutes — and then dies with "Not enough memory" / CUDA OOM or "No available memory for
    the cache blocks".

    ## How to fix
    Use more GPUs (the finding names the smallest plan that fits), expert parallelism, a
    lower-precision checkpoint, or a higher memory fraction when the shortfall is small.
    """

    severity = Severity.ERROR

    def run(self, launch: LaunchSpec, gpu: GpuFact, plan: "Plan",
            inventory: "Inventory") -> Iterator[Finding]:
        if plan.weights_fit:
            return
        worst = max(plan.stages, key=lambda s: s.weights_bytes)
        short, short_ev = _shortfall(plan)
        basis = f" ({plan.budget_basis})" if getattr(plan, "budget_basis", "") else ""
        overhead = int(getattr(plan, "overhead_bytes", 0) or 0)
        if plan.engine == "vllm" and overhead and worst.weights_bytes < plan.budget_bytes:
            parts = ", ".join(f"{_OVERHEAD_LABEL[k]} {_gib(v)}" for k, v in worst.reserve_components.items()
                              if k in _OVERHEAD_LABEL and v)
            head = (f"weights need {_gib(worst.weights_bytes)} per rank and vLLM's profile run charges "
                    f"{_gib(overhead)} more ({parts}): {_gib(worst.weights_bytes + overhead)} against the "
                    f"{_gib(plan.budget_bytes)} budget{basis} on {plan.gpu.name}: no room for the KV cache")
        else:
            head = (f"weights need {_gib(worst.weights_bytes)} per rank but the {plan.engine} budget is "
                    f"{_gib(plan.budget_bytes)}{basis} on {plan.gpu.name} ({_gib(plan.gpu.memory_total)}): "
                    "no room for the KV cache")
        yield self.finding(
            head + (f"; {short}" if short else "")
            + ("; vLLM stops with “No available memory for the cache blocks”" if plan.engine == "vllm" else ""),
            subject=f"rank={worst.rank}",
            evidence={"weights_bytes": worst.weights_bytes, "budget_bytes": plan.budget_bytes,
                      "overhead_bytes": overhead,
                      "memory_total": plan.gpu.memory_total, "world_size": plan.parallel.world,
                      "mem_fraction": plan.parallel.mem_fraction, "header_only": plan.header_only, **short_ev},
            fix=_smallest_fitting(plan, inventory),
        )


class MEM002(Check):
    """KV cache / KDA state too small for the requested context or concurrency

    ## What it checks
    What is left of the budget after weights becomes KV cache (MLA latent: held in full on every
    attention-TP rank unless `--dcp-size`; GQA: split by KV heads) and, for Kimi-K3, the KDA
    recurrent-state pool (per request slot, sharded by attention-TP only). The projection gives the
    largest context at the requested concurrency and the largest concurrency at the requested
    context; the finding says how many GiB of KV the requested context needs and how short it is,
    counted as the engine checks it (vLLM: attention pages per layer plus one KDA state page per
    layer for one request of `--max-model-len`).

    For vLLM without `--max-model-len` the requested context is the model's own maximum
    (`max_position_embeddings`, 1,048,576 for Kimi-K3), because that is what vLLM checks at start.

    ## Why it matters
    vLLM refuses to start ("… the estimated maximum model length is N"); SGLang starts but caps
    `max_total_num_tokens` and queues requests.

    ## How to fix
    Lower `--max-model-len` / `--context-length` to the largest value that fits (named in the
    finding), use an FP8 KV cache, raise the memory fraction, or add GPUs.
    """

    severity = Severity.ERROR

    def run(self, launch: LaunchSpec, gpu: GpuFact, plan: "Plan") -> Iterator[Finding]:
        if not plan.weights_fit or plan.kv_fits or plan.header_only:
            return
        implicit = bool(getattr(plan, "context_implicit", False))
        want = plan.requested_context or (plan.kv_need_context if implicit else 0) or 0
        flag = _flag(plan, "--context-length", "--max-model-len")
        short, short_ev = _shortfall(plan)
        asked = (f"{want:,} requested" if not implicit else
                 f"no --max-model-len, so vLLM uses the model's {want:,} and refuses to start")
        yield self.finding(
            f"KV cache holds {plan.max_context:,} tokens per request at concurrency {plan.requested_concurrency} "
            f"({plan.kv_tokens:,} tokens, {plan.kv_bytes_per_token:,} B/token per rank); {asked}"
            + (f"; {short}" if short and short_ev.get("kv_short_bytes") else "")
            + (f"; at {want:,} tokens at most {plan.max_concurrency} requests fit" if plan.max_concurrency else "")
            + (f"; vLLM stops with “To serve at least one request with the model's max seq len ({want}) … the "
               f"estimated maximum model length is {plan.max_context}”"
               if plan.engine == "vllm" and plan.requested_concurrency == 1 and plan.max_context > 0 else ""),
            subject=f"context={want}",
            evidence={"max_context": plan.max_context, "requested_context": want, "context_implicit": implicit,
                      "kv_tokens": plan.kv_tokens,
                      "kv_bytes_per_token": plan.kv_bytes_per_token, "kv_bytes": min(s.kv_bytes for s in plan.stages),
                      "max_concurrency": plan.max_concurrency, "requested_concurrency": plan.requested_concurrency,
                      **{k: v for k, v in short_ev.items() if k not in ("requested_context", "max_context")}},
            fix=f"{flag} {plan.max_context} (largest that fits), or --kv-cache-dtype fp8_e4m3, a higher "
                + _flag(plan, "--mem-fraction-static", "--gpu-memory-utilization") + ", or more GPUs",
        )


class MEM003(Check):
    """Weight loading transient runs out of memory

    ## What it checks
    The peak during loading: weights already placed + CUDA context/NCCL + the loader's transient.
    `fastsafetensors` copies whole shard files to every reading rank's GPU and keeps two batches
    in flight (2 × the largest shard); Marlin MXFP4 repacking holds ~2× one layer's local experts.

    ## Why it matters
    A load that fits at steady state can still OOM at minute 10 of the weight load.

    ## How to fix
    Use the default loader (`--load-format safetensors`), or serial fastsafetensors
    (`VLLM_FASTSAFETENSORS_QUEUE_SIZE=-1`), or more GPUs.
    """

    severity = Severity.ERROR

    def run(self, launch: LaunchSpec, gpu: GpuFact, plan: "Plan") -> Iterator[Finding]:
        if plan.load_fits:
            return
        worst = max(plan.stages, key=lambda s: s.load_peak_bytes)
        fmt = (plan.parallel.load_format or "auto").lower()
        fix = ("--load-format safetensors (or VLLM_FASTSAFETENSORS_QUEUE_SIZE=-1 to stage one shard at a time)"
               if fmt == "fastsafetensors" else "more GPUs (smaller per-rank weights) or a non-repacking MoE backend")
        yield self.finding(
            f"load peak {_gib(worst.load_peak_bytes)} per rank exceeds free memory {_gib(plan.gpu.memory_free or 0)} "
            f"(weights {_gib(worst.weights_bytes)} + transient {_gib(worst.transient_bytes)})",
            subject=f"rank={worst.rank}",
            evidence={"load_peak_bytes": worst.load_peak_bytes, "transient_bytes": worst.transient_bytes,
                      "weights_bytes": worst.weights_bytes, "memory_free": plan.gpu.memory_free,
                      "max_shard_bytes": plan.max_shard_bytes, "load_format": fmt},
            fix=fix,
        )


class MEM004(Check):
    """Replicated floor dominates: doubling GPUs barely shrinks per-rank weights

    ## What it checks
    Re-projects the plan with twice the GPUs (TP × 2, EP × 2 where EP is on) and compares the
    per-rank weights. Below a 25% saving the replicated part dominates; the finding names the
    components that do not shrink (replicated routers, MLA q_a/kv_a, Kimi-K3 latent projections,
    shared experts under all-to-all backends, vLLM's 256-padded MoE intermediate).

    ## Why it matters
    Scaling out to fit the model does not work; the fix is a different placement (expert
    parallelism, a backend that shards what is replicated), not more nodes.

    ## How to fix
    Turn on expert parallelism (`--ep-size` / `--enable-expert-parallel`), shard the components
    named, or use a build without the padding.
    """

    severity = Severity.WARNING

    def run(self, launch: LaunchSpec, gpu: GpuFact, plan: "Plan",
            inventory: "Inventory") -> Iterator[Finding]:
        from dataclasses import replace

        from ..memory.plan import compute_plan

        if plan.header_only:
            return
        p = plan.parallel
        bigger = replace(p, tp=p.tp * 2, ep=(p.ep * 2 if p.ep > 1 else 1), nnodes=p.nnodes * 2, env=dict(p.env))
        try:
            p2 = compute_plan(inventory, bigger, plan.gpu)
        except Exception as exc:  # noqa: BLE001 - an impossible doubled plan means nothing to compare
            raise self.skip(f"no doubled plan to compare with ({exc})") from None
        w1, w2 = plan.max_rank_weights_bytes, p2.max_rank_weights_bytes
        saving = 1 - w2 / w1 if w1 else 0
        if saving >= 0.25:
            return
        c1 = max(plan.stages, key=lambda s: s.weights_bytes).components
        c2 = max(p2.stages, key=lambda s: s.weights_bytes).components
        stuck = sorted(((k, v, c2.get(k, 0)) for k, v in c1.items() if c2.get(k, 0) > 0.75 * v),
                       key=lambda t: -t[1])[:4]
        names = ", ".join(f"{k} {_gib(v)}→{_gib(v2)}" for k, v, v2 in stuck)
        yield self.finding(
            f"doubling to {bigger.world} GPUs cuts per-rank weights only {saving * 100:.0f}% "
            f"({_gib(w1)} → {_gib(w2)}); not shrinking: {names}",
            subject=f"world={p.world}",
            evidence={"weights_bytes": w1, "weights_bytes_doubled": w2, "world_size": p.world,
                      "world_size_doubled": bigger.world, "saving_pct": round(saving * 100, 1),
                      **{f"stuck_{k}_bytes": int(v) for k, v, _ in stuck}},
            fix=("enable expert parallelism (--enable-expert-parallel) so routed experts are split whole, not padded"
                 if plan.engine == "vllm" and p.ep <= 1 else
                 "shard the components named (expert parallelism, a backend that does not replicate shared experts)"),
        )


class MEM005(Check):
    """Measured per-rank weights exceed the projection by more than 10%

    ## What it checks
    Compares a measured per-rank weight figure — `--measured-gib`, or the engine log line
    ("Load weight end … mem usage=" for SGLang, "Model loading took … GiB" for vLLM, passed with
    `--engine-log`) — with the projection.

    ## Why it matters
    More than 10% above the projection means the loader replicates what should be sharded (or
    keeps a dequantised/repacked copy), which also caps the KV cache.

    ## How to fix
    Compare the per-component table of `k3doctor plan` with the engine's module placement; check
    the MoE backend / loader version named in the finding.
    """

    severity = Severity.WARNING

    def run(self, measured: float, plan: "Plan") -> Iterator[Finding]:
        # the measured figure comes first: its absence is the usual reason to skip
        proj = plan.max_rank_weights_bytes
        ratio = measured / proj if proj else 0
        if ratio <= 1.10:
            return
        yield self.finding(
            f"measured {_gib(measured)} per rank is {(ratio - 1) * 100:.0f}% above the projected {_gib(proj)}: "
            "the loader replicates what should be sharded",
            subject="weights",
            evidence={"measured_bytes": int(measured), "projected_bytes": proj, "ratio": round(ratio, 4),
                      "engine": plan.engine, "moe_backend": plan.parallel.moe_backend},
            fix="compare `k3doctor plan` components with the engine's placement; try another MoE backend / loader "
                "version, or enable expert parallelism",
        )


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('MEM', 'per-rank memory projection', 80)
CHECKS = module_checks(globals())
