"""KV cache / KDA state arithmetic and memory-budget semantics."""

from __future__ import annotations

import pytest

from k3doctor.memory import Parallel, compute_plan, load_inventory, resolve_gpu
from k3doctor.memory.kv import hybrid_page, kda_state_bytes, kv_bytes_per_token
from k3doctor.memory.plan import sglang_default_mem_fraction

GiB = 1 << 30


@pytest.fixture(scope="module")
def k3():
    return load_inventory("moonshotai/Kimi-K3")


def test_mla_latent_bytes_per_token(k3):
    s = k3.spec
    assert kv_bytes_per_token(s, Parallel("sglang", tp=16), 0, "auto") == 27_648  # kimi-k3.md §7.1
    assert kv_bytes_per_token(s, Parallel("sglang", tp=16), 0, "fp8_e4m3") == 13_824
    assert kv_bytes_per_token(s, Parallel("sglang", tp=8, dcp=8), 0, "auto") == 27_648 / 8


@pytest.mark.parametrize("tp,dtype,expected", [(1, None, 449_372_160), (8, None, 56_171_520), (16, None, 28_085_760),
                                               (32, None, 14_042_880), (16, "bfloat16", 14_519_808)])
def test_kda_state_per_slot(k3, tp, dtype, expected):
    assert kda_state_bytes(k3.spec, tp, dtype) * 69 == expected  # kimi-k3.md §7.2 table


def test_vllm_hybrid_block_is_768_tokens_at_tp8(k3):
    assert hybrid_page(k3.spec, Parallel("vllm", tp=8), "auto")[0] == 768  # LMCache recipe, kimi-k3.md §5.3


def test_gqa_kv_split_by_heads():
    inv = load_inventory("llama-3.1-8b")
    assert kv_bytes_per_token(inv.spec, Parallel("vllm", tp=1), 0, "auto") == 32 * 2 * 8 * 128 * 2
    assert kv_bytes_per_token(inv.spec, Parallel("vllm", tp=8), 0, "auto") == 32 * 2 * 1 * 128 * 2
    assert kv_bytes_per_token(inv.spec, Parallel("vllm", tp=16), 0, "auto") == 32 * 2 * 1 * 128 * 2  # replicated head


def test_sglang_pool_is_fraction_of_free_minus_weights(k3):
    gpu = resolve_gpu("h200")
    p = compute_plan(k3, Parallel("sglang", tp=16, ep=16, mem_fraction=0.85, nnodes=2), gpu)
    st = p.stages[0]
    free_init = gpu.memory_total - 616 * (1 << 20) - st.reserve_bytes
    assert st.kv_bytes + st.state_bytes == pytest.approx(0.85 * free_init - st.weights_bytes, abs=2)
    assert p.max_concurrency == int(st.state_bytes // (5 * 28_085_760))


def test_sglang_default_fraction_h200():
    f = sglang_default_mem_fraction(resolve_gpu("h200").memory_total, Parallel("sglang", tp=16))
    assert 0.85 < f < 0.95


def test_vllm_kv_matches_public_h100_logs():
    gpu = resolve_gpu("h100")
    for model, tp, measured in [("llama-3.1-8b", 1, 51.38), ("qwen3-32b", 2, 34.49), ("gpt-oss-20b", 1, 50.28)]:
        p = compute_plan(load_inventory(model), Parallel("vllm", tp=tp, mem_fraction=0.9, context=16000), gpu)
        assert abs(p.stages[0].kv_bytes / GiB - measured) < 0.5


def test_seed_vllm_kv_short_for_65536(k3):
    gpu = resolve_gpu("h200")
    p = compute_plan(k3, Parallel("vllm", tp=16, mem_fraction=0.97, context=65536, nnodes=2, moe_backend="marlin"), gpu)
    assert not p.fits
    assert p.max_context < 65536
    need = 65536 * 27_648
    assert need - p.stages[0].kv_bytes > 1e9  # KV comes up more than 1 GB short
