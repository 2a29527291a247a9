"""Round-11 rules (docs/validation.md): vLLM's Qwen3-MoE keeps its vocab shards on every pipeline
stage, and vLLM on ROCm measures the load as device used memory (total - free)."""

from __future__ import annotations

import dataclasses

from k3doctor.launch import LaunchSpec, parse_launch
from k3doctor.memory import constants as C
from k3doctor.memory.inventory import load_inventory
from k3doctor.memory.placement import stage_weights, vocab_on_every_stage
from k3doctor.memory.plan import compute_plan, gpu_platform, resolve_gpu


def _par(cmd: str, engine: str = "vllm"):
    d = parse_launch(cmd.split()).to_dict()
    d["engine"] = engine
    par = LaunchSpec.of(d).placement()
    par.gpus_per_node = None
    return par


def test_qwen3_moe_vocab_on_every_pp_stage_in_vllm():
    inv = load_inventory("Qwen/Qwen3-30B-A3B")
    par = _par("vllm serve Qwen/Qwen3-30B-A3B --tensor-parallel-size 4 --pipeline-parallel-size 2")
    assert vocab_on_every_stage(par, inv.spec)
    s0, s1 = stage_weights(inv, par, 0), stage_weights(inv, par, 1)
    for st in (s0, s1):  # Qwen3MoeModel.embed_tokens and Qwen3MoeForCausalLM.lm_head are unconditional
        assert st["embedding"] > 0 and st["lm_head"] > 0
    assert abs(s0["embedding"] - s1["lm_head"]) < 1  # same vocab x hidden shard (untied)
    # SGLang and a dense Qwen keep the usual first-stage embedding / last-stage head
    sg = _par("python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 4 --pp-size 2", "sglang")
    assert not vocab_on_every_stage(sg, inv.spec)
    dense = load_inventory("Qwen/Qwen3-32B")
    par_d = _par("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 1 --pipeline-parallel-size 2")
    assert not vocab_on_every_stage(par_d, dense.spec)
    assert "lm_head" not in stage_weights(dense, par_d, 0) and "embedding" not in stage_weights(dense, par_d, 1)


def test_vllm_rocm_load_counts_device_used_memory():
    assert gpu_platform("AMD Instinct MI300X") == "rocm" and gpu_platform("amd-gfx1201") == "rocm"
    assert gpu_platform("mi355x") == "rocm" and gpu_platform("NVIDIA H100 80GB HBM3") == "cuda"
    assert gpu_platform(None) == "cuda"
    inv = load_inventory("Qwen/Qwen3-8B")
    h100 = resolve_gpu("h100")
    amd = dataclasses.replace(h100, name="AMD Instinct MI300X")
    par = _par("vllm serve Qwen/Qwen3-8B")
    cuda_w = compute_plan(inv, par, h100).max_rank_weights_bytes
    rocm = compute_plan(inv, par, amd)
    assert rocm.max_rank_weights_bytes - cuda_w == C.VLLM_ROCM_LOAD_NONTORCH_BYTES
    assert rocm.stages[0].components["load_nontorch"] == C.VLLM_ROCM_LOAD_NONTORCH_BYTES
    # SGLang's free-memory delta already carries its own load-time term; ROCm adds nothing there
    sg = _par("python -m sglang.launch_server --model-path Qwen/Qwen3-8B", "sglang")
    assert compute_plan(inv, sg, amd).max_rank_weights_bytes == compute_plan(inv, sg, h100).max_rank_weights_bytes
