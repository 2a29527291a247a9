"""Every quantisation method vLLM and SGLang accept has an answer (k3doctor/memory/quantmethods.py):
projected (a layout, tested here on a real config where one is vendored, otherwise on a config in the
keys the engine's parser reads), or reported as uncertain with bounds — never a silent unquantised
projection. Module lists are matched as each engine matches them (quantmatch)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from k3doctor.launch import LaunchSpec
from k3doctor.memory.inventory import load_inventory, read_config_any
from k3doctor.memory.plan import compute_plan, resolve_gpu
from k3doctor.memory.quantmatch import matches
from k3doctor.memory.quantmethods import METHODS, SGLANG_NAMES, VLLM_NAMES
from k3doctor.memory.quantparse import PARSERS, parse_quant
from k3doctor.memory.quantscheme import (ONLINE_QUANTIZATION, linear_tensors, merge_hf_quant_config,
                                         with_launch_quantization)
from k3doctor.memory.spec import load_known_config
from k3doctor.units import GiB

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "shared" / "receipt-configs"
CFG = ROOT / "fixtures" / "receipts" / "configs"

#: quantization_config blocks in the keys each engine's parser reads (vLLM / SGLang
#: ``from_config``), for methods no vendored published config here uses
ENGINE_KEYS: dict[str, dict] = {
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
    "bitblas": {"quant_method": "bitblas", "bits": 4, "group_size": 128},
    "marlin": {"quant_method": "marlin", "bits": 4, "group_size": 128},
    "moe_wna16": {"quant_method": "moe_wna16", "linear_quant_method": "gptq", "bits": 4, "group_size": 128},
    "inc": {"quant_method": "inc", "bits": 4, "group_size": 128, "sym": True, "packing_format": "auto_round:auto_gptq"},
    "auto-round": {"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True,
                   "packing_format": "auto_round:auto_awq"},
    "auto-round-int8": {"quant_method": "auto-round-int8", "bits": 8},
    "aqlm": {"quant_method": "aqlm", "in_group_size": 8, "nbits_per_codebook": 16, "num_codebooks": 1,
             "out_group_size": 1},
    "hqq": {"quant_method": "hqq", "quant_config": {"weight_quant_params": {"nbits": 4, "group_size": 64}}},
    "bitnet": {"quant_method": "bitnet"},
    "qqq": {"quant_method": "qqq", "wbits": 4, "group_size": 128},
    "qoq": {"quant_method": "qoq", "bits": 4, "group_size": 128},
    "gptq_marlin_24": {"quant_method": "gptq", "bits": 4, "group_size": 128, "checkpoint_format": "marlin_24"},
    "fp8": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
    "fbgemm_fp8": {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]},
    "w8a8_fp8": {"quant_method": "w8a8_fp8"},
    "w8a8_int8": {"quant_method": "w8a8_int8"},
    "blockwise_int8": {"quant_method": "blockwise_int8", "weight_block_size": [128, 128]},
    "mxfp8": {"quant_method": "mxfp8"},
    "mxfp_w4a8": {"quant_method": "mxfp_w4a8"},
    "modelopt_fp8": {"quant_method": "modelopt", "quant_algo": "FP8_PER_CHANNEL_PER_TOKEN"},
    "modelopt_mxfp8": {"quant_method": "modelopt", "quant_algo": "MXFP8"},
    "petit_nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
    "quark": {"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp8_e4m3", "qscheme": "per_tensor"},
                                                               "input_tensors": {"dtype": "fp8_e4m3", "is_dynamic": False}},
              "exclude": ["lm_head"]},
    "quark_mxfp4": {"quant_method": "quark", "global_quant_config": {"weight": {"dtype": "fp4", "qscheme": "per_group",
                                                                               "group_size": 32}}},
    "w4afp8": {"quant_method": "w4afp8", "weight_block_size": [128, 128]},
    "fp_quant": {"quant_method": "fp_quant", "forward_dtype": "mxfp4", "hadamard_group_size": 32,
                 "modules_to_not_convert": ["lm_head"]},
    "torchao": {"quant_method": "torchao", "quant_type": {"default": {"_type": "Int4WeightOnlyConfig",
                                                                     "_data": {"group_size": 128}}}},
    "bitsandbytes": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
    "gguf": {"quant_method": "gguf"},
    "humming": {"quant_method": "humming"},
    "modelslim": {"quant_method": "modelslim"},
}
#: methods whose example is a published config vendored here (name -> config path)
REAL = {"compressed-tensors": "shared/receipt-configs/RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8.json",
        "modelopt": "shared/receipt-configs/Qwen--Qwen3-32B-FP8-Static-PerTensor.json",
        "modelopt_fp4": "shared/receipt-configs/nvidia--Qwen3-30B-A3B-NVFP4.json",
        "modelopt_mixed": "shared/receipt-configs/nvidia--Qwen3.6-27B-NVFP4.json",
        "deepseek_v4_fp8": "shared/receipt-configs/nvidia--DeepSeek-V4-Flash-NVFP4.json",
        "mxfp4": "k3doctor/memory/configs/gpt-oss-20b.json"}
#: a kernel or alias name -> the name whose example exercises it
ALIAS = {"awq_marlin": "awq", "auto_awq": "awq", "cpu_awq": "awq", "gptq_marlin": "gptq", "auto_gptq": "gptq",
         "gptq_bitblas": "bitblas", "ipex": "awq", "deepgemm_fp8": "fp8", "gpt_oss_mxfp4": "mxfp4"}


def _plan(cfg: dict, engine: str = "vllm", tp: int = 1):
    inv = load_inventory(None, config=cfg)
    par = LaunchSpec.of({"engine": engine, "tp": tp}).placement()
    return inv, compute_plan(inv, par, resolve_gpu("h200"))


def _config_for(name: str) -> dict:
    moe_only = name in ("experts_int8", "quark_int4fp8_moe")  # online quantisation of the experts only
    base = dict(load_known_config("qwen/qwen3-30b-a3b" if moe_only else "qwen/qwen3-8b") or {})
    m = METHODS[name]
    if m.kind == "online":
        return with_launch_quantization(base, name)
    key = ALIAS.get(name, name)
    if key in REAL:
        return dict(read_config_any(ROOT / REAL[key]) or {})
    base["quantization_config"] = ENGINE_KEYS[key]
    return base


def test_every_engine_method_has_an_answer() -> None:
    missing = (set(VLLM_NAMES) | set(SGLANG_NAMES)) - set(METHODS)
    assert not missing, missing
    for name, m in METHODS.items():
        assert m.kind in ("checkpoint", "online", "kernel") and m.status in ("projected", "approximate", "uncertain"), name
        if m.kind == "online":
            assert name.replace("-", "_") in ONLINE_QUANTIZATION, name
        elif m.status != "uncertain":
            assert m.parser.replace("-", "_") in PARSERS, name


@pytest.mark.parametrize("name", sorted(METHODS))
def test_no_method_is_projected_silently_unquantised(name: str) -> None:
    """A modelled method quantises the Linears; an uncertain one says so, with bounds around the
    figure, in the plan's JSON and notes."""
    cfg = _config_for(name)
    scheme = parse_quant(cfg.get("text_config", cfg) if "quantization_config" not in cfg else cfg)
    inv, plan = _plan(cfg)
    if METHODS[name].status == "uncertain":
        u = plan.to_dict()["weights_uncertainty"]
        assert u["low_bytes"] <= plan.max_rank_weights_bytes <= u["high_bytes"] and u["reason"], name
        assert any(n.startswith("UNCERTAIN weights") for n in plan.notes)
    else:
        assert scheme.quantised and not scheme.uncertain, (name, scheme)
        assert "weights_uncertainty" not in plan.to_dict()
        assert any(g.dtype not in ("BF16", "F16", "F32") for g in inv.groups), name


def test_dense_bf16_baseline_is_bigger_than_every_quantised_layout() -> None:
    _inv, bf = _plan(dict(load_known_config("qwen/qwen3-8b") or {}))
    for name in ("awq", "gptq", "fp8", "fbgemm_fp8", "mxfp8", "quark", "inc", "fp_quant", "aqlm"):
        _i, p = _plan(_config_for(name))
        assert p.max_rank_weights_bytes < 0.75 * bf.max_rank_weights_bytes, name


def test_modelopt_globs_cross_dots_and_name_the_router_only() -> None:
    # vLLM modelopt.py is_layer_excluded: exact, substring, fnmatch ('*' crosses dots)
    assert matches("*mlp.gate", "model.layers.3.mlp.gate", "modelopt")
    assert not matches("*mlp.gate", "model.layers.3.mlp.gate_proj", "modelopt")
    assert matches("model.layers.1*", "model.layers.17.self_attn.q_proj", "modelopt")
    assert matches("*.attn.*", "layers.4.attn.wq_a", "modelopt")
    assert not matches("mtp.*", "model.layers.0.mlp.gate_proj", "modelopt")
    assert matches("lm_head", "lm_head", "modelopt")
    # the MoE container in other checkpoints' naming (Mixtral / MiniMax block_sparse_moe, w1/w3/w2)
    assert matches("language_model.model.layers.5.block_sparse_moe.experts.3.w1",
                   "model.layers.5.mlp.experts.3.gate_proj", "exact")


def test_compressed_tensors_names_regexes_and_classes() -> None:
    # vLLM compressed_tensors/utils.py: exact names, re: (re.match), class names for targets
    assert matches("re:.*mlp.gate$", "model.layers.2.mlp.gate", "ct")
    assert not matches("re:.*mlp.gate$", "model.layers.2.mlp.gate_proj", "ct")
    assert matches("re:.*attn.*(fused_wqa_wkv|wq_b|wo_a|wo_b)$", "layers.7.attn.wq_a", "ct")  # fused in vLLM
    assert matches("re:.*ffn.*(gate|up|down)_proj$", "layers.7.ffn.experts.0.w3", "ct")
    assert matches("Linear", "model.layers.0.self_attn.q_proj", "ct", kind="attn")
    assert not matches("Linear", "lm_head", "ct", kind="lm_head")
    assert matches("model.language_model.layers.0.mlp.gate_proj", "model.layers.0.mlp.gate_proj", "ct")
    assert not matches("model.layers.1.mlp.gate_proj", "model.layers.11.mlp.gate_proj", "ct")


def test_awq_lists_are_substrings_and_bnb_lists_components() -> None:
    # vLLM/SGLang is_layer_skipped_awq: substring; is_layer_skipped_bnb: components / prefixes
    assert matches("visual", "model.visual.blocks.0.attn.qkv", "substring")
    assert matches("gate", "model.layers.0.mlp.gate_proj", "substring")
    assert not matches("gate", "model.layers.0.mlp.gate_proj", "component")
    assert matches("model.vision_backbone", "model.vision_backbone.blocks.0", "component")


def test_gptq_odd_bit_widths_pack_into_words() -> None:
    s = parse_quant({"quantization_config": {"quant_method": "gptq", "bits": 3, "group_size": 128}})
    q = {n.rsplit(".", 1)[-1]: shape for n, _d, shape in linear_tensors("x", 4096, 4096, s, "dense")}
    assert q["qweight"] == (4096 * 3 // 32, 4096) and q["qzeros"] == (32, 4096 * 3 // 32)


def test_gptqmodel_dynamic_rules_give_modules_their_own_bits() -> None:
    s = parse_quant({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                             "dynamic": {r"+:.*down_proj": {"bits": 8}, r"-:.*lm_head": {}}}})
    down = dict((n.rsplit(".", 1)[-1], sh) for n, _d, sh in linear_tensors("model.layers.0.mlp.down_proj", 4096, 12288, s, "dense"))
    up = dict((n.rsplit(".", 1)[-1], sh) for n, _d, sh in linear_tensors("model.layers.0.mlp.up_proj", 12288, 4096, s, "dense"))
    assert down["qweight"][0] == 12288 * 8 // 32 and up["qweight"][0] == 4096 * 4 // 32


def test_online_experts_int8_leaves_attention_bf16() -> None:
    cfg = with_launch_quantization(dict(load_known_config("qwen/qwen3-30b-a3b") or {}), "experts_int8")
    inv = load_inventory(None, config=cfg)
    dt = {g.template: g.dtype for g in inv.groups}
    assert any("experts" in t and d == "I8" for t, d in dt.items())
    assert all(d != "I8" for t, d in dt.items() if "self_attn" in t)


# -- real published configs (vendored) -------------------------------------------------------
def _dtypes(cfg: dict) -> dict[str, int]:
    inv = load_inventory(None, config=cfg)
    by: dict[str, int] = {}
    for g in inv.groups:
        by[g.dtype] = by.get(g.dtype, 0) + g.nbytes
    return by


def test_deepseek_v4_nvfp4_experts_follow_quantized_layers() -> None:
    """nvidia/DeepSeek-V4-Flash-NVFP4: ``quant_method: fp8`` (attention FP8 block) with a ModelOpt
    MIXED_PRECISION block naming every layer's experts NVFP4 (weight_scale F8 per 16), where the
    original release stores them MXFP4 (E8M0 per 32)."""
    nv = read_config_any(SHARED / "nvidia--DeepSeek-V4-Flash-NVFP4.json") or {}
    orig = read_config_any(SHARED / "deepseek-ai--DeepSeek-V4-Flash.json") or {}
    a, b = load_inventory(None, config=nv), load_inventory(None, config=orig)
    ratio = a.total_bytes / b.total_bytes
    assert 1.03 < ratio < 1.08, ratio  # per routed weight 0.5625 B (NVFP4) vs 0.53125 B (MXFP4)
    tpl = {g.template: g.dtype for g in a.groups}
    assert tpl["layers.{L}.ffn.experts.{E}.w1.weight_scale"] == "F8_E4M3"
    assert "layers.{L}.attn.wq_a.weight_scale_inv" in tpl


def test_redhat_deepseek_v4_mixed_compressed_tensors_groups() -> None:
    """RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8: two config_groups, FP8 block on the attention
    projections (targets name vLLM's fused ``fused_wqa_wkv``) and NVFP4 on the experts (targets
    ``(gate|up|down)_proj``, the release's w1/w3/w2); everything else unquantised."""
    cfg = read_config_any(SHARED / "RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8.json") or {}
    inv = load_inventory(None, config=cfg)
    tpl = {g.template: g.dtype for g in inv.groups}
    assert tpl["layers.{L}.attn.wq_a.weight"] == "F8_E4M3" and "layers.{L}.attn.wq_a.weight_scale_inv" in tpl
    assert "layers.{L}.ffn.experts.{E}.w1.weight_packed" in tpl
    assert tpl["layers.{L}.ffn.gate.weight"] == "BF16" and tpl["layers.{L}.attn.compressor.wkv.weight"] == "BF16"
    nv = load_inventory(None, config=read_config_any(SHARED / "nvidia--DeepSeek-V4-Flash-NVFP4.json") or {})
    assert abs(inv.total_bytes / nv.total_bytes - 1) < 0.02


def test_minimax_m3_mixed_precision_reaches_block_sparse_moe_experts() -> None:
    """nvidia/MiniMax-M3-NVFP4 names its 21,888 NVFP4 experts ``block_sparse_moe.experts.N.w1``
    and its attention MXFP8: almost nothing may stay BF16 (before the container alias, 97% did)."""
    cfg = json.loads(gzip.decompress((SHARED / "nvidia--MiniMax-M3-NVFP4.json.gz").read_bytes()))
    by = _dtypes(cfg)
    assert by.get("BF16", 0) / sum(by.values()) < 0.05, {k: v / GiB for k, v in by.items()}


def test_modelopt_fp8_static_per_tensor_side_file() -> None:
    cfg = read_config_any(SHARED / "Qwen--Qwen3-32B-FP8-Static-PerTensor.json") or {}
    s = parse_quant(cfg)
    assert s.method == "fp8_tensor" and s.static_input and s.match == "modelopt"
    names = [n for n, _d, _s in linear_tensors("model.layers.0.self_attn.q_proj", 8192, 5120, s, "attn")]
    assert names[-1].endswith("input_scale")
    llama = merge_hf_quant_config(read_config_any(SHARED / "nvidia--Llama-3.1-70B-Instruct-FP8.json") or {},
                                  json.loads((SHARED / "nvidia--Llama-3.1-70B-Instruct-FP8.hf_quant_config.json").read_text()))
    assert parse_quant(llama).method == "fp8_tensor"


def test_vllm_mxfp4_marlin_pads_hidden_and_intermediate() -> None:
    """vLLM's MXFP4 MoE on Marlin (GPUs without the Hopper Triton / SM100 FlashInfer kernels, or
    --moe-backend marlin) rounds gpt-oss's intermediate to 128 and hidden to 256 (2880 -> 2944 x
    3072); the Hopper path rounds the intermediate to 256 only. The GB10 receipt logs 'Using Marlin
    backend'."""
    from k3doctor.memory.placement import expert_pad_factor, mxfp4_marlin

    inv = load_inventory("openai/gpt-oss-20b")
    hopper = LaunchSpec.of({"engine": "vllm", "tp": 1}).placement()
    marlin = LaunchSpec.of({"engine": "vllm", "tp": 1, "moe_runner_backend": "marlin"}).placement()
    assert not mxfp4_marlin(hopper) and mxfp4_marlin(marlin)
    assert expert_pad_factor(hopper, inv.spec) == pytest.approx(3072 / 2880)
    assert expert_pad_factor(marlin, inv.spec) == pytest.approx(2944 / 2880 * 3072 / 2880)
    gb10 = compute_plan(inv, hopper, resolve_gpu("gb10")).max_rank_weights_bytes
    h100 = compute_plan(inv, hopper, resolve_gpu("h100")).max_rank_weights_bytes
    assert gb10 > h100
