"""RoPE cos/sin tables in the per-rank weight projection (k3doctor/memory/rope.py)."""

from __future__ import annotations

import json
from pathlib import Path

from k3doctor.memory.inventory import load_inventory
from k3doctor.memory.placement import Parallel, stage_weights
from k3doctor.memory.rope import rope_cache_bytes, rope_tables

ROOT = Path(__file__).resolve().parents[1]
MiB = 1 << 20


def _cfg(rel: str) -> dict:
    return json.loads((ROOT / rel).read_text())


def test_gemma3_has_a_scaled_global_table_and_an_unscaled_local_one():
    """Gemma-3's global layers use linear scaling x8 (rows = positions x 8); the sliding layers get
    their own table at rope_local_base_freq: two tables, bf16 in vLLM, float32 in SGLang."""
    top = _cfg("fixtures/receipts/configs/gemma-3-27b-it.json")
    assert sorted(rope_tables(top, "vllm")) == [("global", 131072 * 8, 128), ("local", 131072, 128)]
    assert rope_cache_bytes(top, "vllm") == 288 * MiB
    assert rope_cache_bytes(top, "sglang") == 2 * 288 * MiB


def test_vllm_mrope_table_is_four_times_the_positions_and_sglang_is_not():
    """vLLM's MRotaryEmbedding caches 4 x max_position_embeddings rows; SGLang's does not. The
    multimodal-RoPE families are recognised by model_type when a trimmed config drops mrope_section."""
    top = _cfg("shared/receipt-configs/Qwen--Qwen3-VL-30B-A3B-Instruct.json")
    assert rope_tables(top, "vllm") == [("global", 4 * 262144, 128)]
    assert rope_tables(top, "sglang") == [("global", 262144, 128)]
    q35 = _cfg("shared/receipt-configs/Qwen--Qwen3.5-27B.json")  # partial_rotary_factor 0.25 of 256
    assert rope_tables(q35, "vllm") == [("global", 4 * 262144, 64)]


def test_yarn_rows_are_the_original_length_times_the_factor():
    cfg = {"model_type": "deepseek_v3", "max_position_embeddings": 163840, "kv_lora_rank": 512,
           "qk_rope_head_dim": 64, "num_attention_heads": 128, "hidden_size": 7168,
           "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}}
    assert rope_tables(cfg, "vllm") == [("mla", 4096 * 40, 64)]
    assert rope_cache_bytes(cfg, "vllm") == 4096 * 40 * 64 * 2


def test_gemma4_tables_per_attention_kind_span_the_whole_head():
    top = _cfg("shared/receipt-configs/google--gemma-4-26B-A4B.json")
    assert sorted(rope_tables(top, "vllm")) == [("full_attention", 262144, 512), ("sliding_attention", 262144, 256)]


def test_attention_without_rotary_embeddings_has_no_table():
    assert rope_tables(_cfg("shared/receipt-configs/nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4.json"), "vllm") == []
    nope = {"model_type": "kimi_linear", "max_position_embeddings": 1 << 20, "kv_lora_rank": 512,
            "qk_rope_head_dim": 64, "mla_use_nope": True}
    assert rope_tables(nope, "vllm") == []
    assert rope_tables({"model_type": "glm_moe_dsa", "max_position_embeddings": 202752, "kv_lora_rank": 512,
                        "qk_rope_head_dim": 0}, "sglang") == []


def test_odd_field_types_give_no_table_rather_than_a_traceback():
    for bad in ({"max_position_embeddings": "long"}, {"max_position_embeddings": 4096, "head_dim": "x"},
                {"max_position_embeddings": 4096, "num_attention_heads": 0, "hidden_size": 4096},
                {"max_position_embeddings": 4096, "head_dim": 128, "rope_scaling": "yarn"}, [], None):
        assert rope_cache_bytes(bad, "vllm") >= 0  # type: ignore[arg-type]


def test_every_pipeline_stage_holds_the_table():
    """Each stage builds its own attention layers and with them the (one, shared) RoPE table."""
    inv = load_inventory(None, config=_cfg("fixtures/receipts/configs/mistral-nemo-instruct-2407.json"))
    par = Parallel(engine="vllm", tp=1, pp=2)
    for stage in (0, 1):
        assert stage_weights(inv, par, stage)["rope_cache"] == 1024000 * 128 * 2
