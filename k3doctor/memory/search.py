"""``plan --search``: enumerate parallel plans for a GPU type and rank the ones that fit."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from . import constants as C
from .inventory import Inventory
from .placement import Parallel, PlanError, validate_parallel
from .plan import GpuSpec, Plan, compute_plan, sglang_default_mem_fraction

__all__ = ["Candidate", "search_plans", "candidate_label", "impossible_setting"]

_POW2 = (1, 2, 4, 8, 16, 32, 64, 128)


@dataclass
class Candidate:
    parallel: Parallel
    nodes: int
    plan: Plan | None
    reason: str  # "" when it fits

    @property
    def fits(self) -> bool:
        return self.plan is not None and self.plan.fits and not self.reason

    def to_dict(self) -> dict[str, Any]:
        p = self.parallel
        d: dict[str, Any] = {
            "label": candidate_label(p), "gpus": p.world, "nodes": self.nodes, "tp": p.tp, "ep": p.ep, "pp": p.pp,
            "dp": p.dp, "enable_dp_attention": p.dp_attention, "fits": self.fits, "reason": self.reason,
        }
        if self.plan is not None:
            d.update(max_rank_weights_bytes=self.plan.max_rank_weights_bytes, kv_tokens=self.plan.kv_tokens,
                     max_context=self.plan.max_context, max_concurrency=self.plan.max_concurrency)
        return d


def candidate_label(p: Parallel) -> str:
    parts = [f"TP{p.tp}"]
    if p.engine == "vllm":
        if p.ep > 1:
            parts.append(f"EP{p.tp * p.dp}")
    elif p.ep > 1:
        parts.append(f"EP{p.ep}")
    if p.pp > 1:
        parts.append(f"PP{p.pp}")
    if p.dp > 1:
        parts.append(f"DP{p.dp}" + ("-attn" if p.dp_attention else ""))
    return " ".join(parts)


def _candidates(base: Parallel, gpus_per_node: int, max_nodes: int) -> list[tuple[Parallel, int]]:
    out: list[tuple[Parallel, int]] = []
    seen: set[tuple[Any, ...]] = set()
    sizes = [w for w in _POW2 if w < gpus_per_node] + [gpus_per_node * n for n in range(1, max_nodes + 1)]
    for world in sizes:
        nodes = max(1, -(-world // gpus_per_node))
        for pp in (1, 2, 4):
            if world % pp:
                continue
            tp = world // pp
            eps = (1, tp) if tp > 1 else (1,)
            for ep in eps:
                dps: list[tuple[int, bool]] = [(1, False)]
                if base.engine == "sglang" and tp >= 4 and pp == 1:
                    dps.append((tp, True))  # attention-TP 1 (full DP attention)
                    if tp >= 16:
                        dps.append((tp // 8, True))  # attention-TP 8 per DP group
                for dp, dpa in dps:
                    key = (tp, ep, pp, dp, dpa)
                    if key in seen:
                        continue
                    seen.add(key)
                    par = replace(base, tp=tp, ep=ep, pp=pp, dp=dp, dp_attention=dpa, nnodes=nodes,
                                  gpus_per_node=gpus_per_node, env=dict(base.env))
                    out.append((par, nodes))
    return out


def engine_crash(par: Parallel, inv: Inventory, gpu: GpuSpec) -> list[str]:
    """Plans that fit in memory but that the engine is known to crash on (the ARCH rules).

    vLLM's Kimi-K3 path with pipeline parallel on Hopper aborts in CUDA-graph capture with
    "cp_world_size must be positive" (vllm-project/recipes#698; ARCH003), so no search result may
    propose it there.
    """
    family = getattr(inv.spec, "family", "") if inv.spec is not None else ""
    if par.engine == "vllm" and par.pp > 1 and "kimi-k3" in str(family).lower().replace("_", "-") and (
            gpu.cc is None or gpu.cc[0] == 9):
        return ["vLLM Kimi-K3 with pipeline parallel crashes in CUDA-graph capture on Hopper "
                "(\"cp_world_size must be positive\"; ARCH003)"]
    return []


def impossible_setting(par: Parallel, gpu: GpuSpec) -> list[str]:
    """Plans whose memory setting the engine cannot take: SGLang's default
    ``--mem-fraction-static`` (its reserve for CUDA graphs and, with DP attention, per-DP-rank
    buffers) comes out at or below 0, or at or above 1. Such a plan is dropped from the feasible
    list with this reason; no impossible fraction or budget is ever shown."""
    if par.engine != "sglang" or par.mem_fraction is not None:
        return []  # an explicit fraction was validated to (0, 1] on the command line
    f = sglang_default_mem_fraction(gpu.memory_total, par)
    if 0 < f < 1:
        return []
    bs = par.cuda_graph_max_bs or C.SGLANG_DEFAULT_CUDA_GRAPH_BS
    what = f"CUDA graphs up to batch {bs}" + (f" × DP {par.dp} attention buffers" if par.dp_attention else "")
    return [f"SGLang's default --mem-fraction-static would be {'below 0' if f <= 0 else 'above 1'} on this GPU "
            f"(its reserve for {what} exceeds the memory), which the engine cannot run with: set "
            "--mem-fraction-static and a smaller --cuda-graph-max-bs explicitly"]


def search_plans(inv: Inventory, base: Parallel, gpu: GpuSpec, *, gpus_per_node: int = 8, max_nodes: int = 8) -> list[Candidate]:
    """Every candidate plan, fitting ones first (fewest GPUs, then most KV tokens)."""
    res: list[Candidate] = []
    for par, nodes in _candidates(base, gpus_per_node, max_nodes):
        errs = validate_parallel(par, inv.spec) or engine_crash(par, inv, gpu) or impossible_setting(par, gpu)
        if errs:
            res.append(Candidate(par, nodes, None, errs[0]))
            continue
        try:
            plan = compute_plan(inv, par, gpu, default_context_check=False)
        except PlanError as exc:
            res.append(Candidate(par, nodes, None, str(exc)))
            continue
        except ValueError as exc:
            res.append(Candidate(par, nodes, None, str(exc)))
            continue
        res.append(Candidate(par, nodes, plan, "" if plan.fits else "; ".join(plan.why) or "does not fit"))

    def key(c: Candidate) -> tuple[Any, ...]:
        kv = c.plan.kv_tokens * (c.parallel.dp if c.parallel.dp_attention else 1) if c.plan else 0
        return (0 if c.fits else 1, c.parallel.world, -kv, c.parallel.pp, c.parallel.tp)

    res.sort(key=key)
    return res
