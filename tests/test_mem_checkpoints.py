"""Weight projection for the checkpoints users bring (issue 13): quantisation from
``quantization_config``, engine pipeline partitions, redundant experts, hybrid / multimodal /
unknown architectures through the generic fallback."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from k3doctor.launch import parse_launch
from k3doctor.memory.inventory import load_inventory, read_config_any, with_launch_quantization_inventory
from k3doctor.memory.placement import Parallel, PlanError, pp_partition, stage_weights, validate_parallel
from k3doctor.launch import LaunchSpec
from k3doctor.launchflags import redundant_experts
from k3doctor.memory.plan import compute_plan, resolve_gpu
from k3doctor.memory.quantscheme import linear_tensors, merge_hf_quant_config, parse_quant
from k3doctor.memory.spec import UnknownArchitecture, spec_from_config
from k3doctor.memory.synth import tensor_nbytes

GiB = 1 << 30

LLAMA_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
            "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False}


def _bytes(prefix: str, out: int, inp: int, q: dict, kind: str = "dense") -> int:
    scheme = parse_quant({"quantization_config": q})
    return sum(tensor_nbytes(d, s) for _, d, s in linear_tensors(prefix, out, inp, scheme, kind))


def _weights(cfg: dict, launch: str = "vllm serve m", gpu: str = "h100") -> float:
    inv = load_inventory(None, config=cfg)
    spec = parse_launch(shlex.split(launch)).to_dict()
    inv = with_launch_quantization_inventory(inv, spec)
    par = LaunchSpec.of(spec).placement()
    return compute_plan(inv, par, resolve_gpu(gpu), model_name="m").max_rank_weights_bytes / GiB


# -- quantisation formats ----------------------------------------------------------------------
@pytest.mark.parametrize("q, per_param", [
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, 0.5 + 2 / 128 + 0.5 / 128),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}, 0.5 + 2 / 128 + 0.5 / 128),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128}, 1 + 2 / 128 + 1 / 128),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                               "group_size": 128, "symmetric": True}}}}, 0.5 + 2 / 128),
    ({"quant_method": "compressed-tensors", "format": "int-quantized",
      "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}}}, 1),
    ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
      "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                                               "group_size": 16}}}}, 0.5 + 1 / 16),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}, 0.5 + 1 / 16),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, 1),
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, 1 + 4 / 128 / 128),
    ({"quant_method": "fbgemm_fp8"}, 1),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, 0.5 + 4 / 64),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True}, 0.5 + 1 / 64),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, 1),
])
def test_each_format_is_counted_at_its_real_size(q, per_param):
    out, inp = 4096, 4096
    got = _bytes("model.layers.0.mlp.up_proj", out, inp, q)
    assert got == pytest.approx(per_param * out * inp, rel=0.01), (q, got / (out * inp))


def test_ignore_lists_in_each_spelling_leave_modules_unquantised():
    bf16 = 2 * 4096 * 4096
    name = "model.layers.3.self_attn.q_proj"
    for q in ({"quant_method": "awq", "bits": 4, "modules_to_not_convert": ["self_attn"]},
              {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["re:.*self_attn.*"],
               "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}}}},
              {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["model.layers.*.self_attn*"]},
              {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["backbone.layers.3.self_attn.q_proj"]},
              {"quant_method": "fp8", "weight_block_size": [128, 128], "ignored_layers": ["model.layers.3.self_attn.q_proj"]},
              {"quant_method": "bitsandbytes", "load_in_4bit": True, "llm_int8_skip_modules": ["q_proj"]},
              {"quant_method": "fbgemm_fp8"}):  # fbgemm FP8 is MLP-only
        assert _bytes(name, 4096, 4096, q, kind="attn") == bf16, q
    # the router, embeddings and lm_head stay unquantised whatever the format
    q = {"quant_method": "awq", "bits": 4}
    assert _bytes("model.layers.0.mlp.gate", 128, 4096, q, kind="router") == 2 * 128 * 4096
    assert _bytes("lm_head", 4096, 4096, q, kind="lm_head") == bf16
    # an ignore entry for another layer does not leak
    assert _bytes("model.layers.13.self_attn.q_proj", 4096, 4096,
                  {"quant_method": "modelopt", "quant_algo": "NVFP4",
                   "exclude_modules": ["backbone.layers.3.self_attn.q_proj"]}, kind="attn") < bf16


def test_quantised_checkpoints_are_not_projected_as_bf16():
    bf16 = _weights(LLAMA_8B)
    awq = _weights({**LLAMA_8B, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}})
    gptq = _weights({**LLAMA_8B, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}})
    assert 14.5 < bf16 < 15.5
    # 4-bit Linear layers, BF16 embeddings + head (2 × 1.96 GB)
    assert 5.0 < awq < 5.8 and abs(gptq - awq) < 0.1


def test_online_quantisation_flags_quantise_an_unquantised_checkpoint():
    bf16 = _weights(LLAMA_8B, "vllm serve m")
    fp8 = _weights(LLAMA_8B, "vllm serve m --quantization fp8")
    bnb = _weights(LLAMA_8B, "vllm serve m --quantization bitsandbytes --load-format bitsandbytes")
    assert fp8 == pytest.approx(bf16 - 6.98e9 / GiB, rel=0.02)  # Linear bytes halve
    assert bnb < fp8 < bf16
    # a checkpoint that carries its own quantization_config keeps it (the flag names a kernel)
    awq_cfg = {**LLAMA_8B, "quantization_config": {"quant_method": "awq", "bits": 4}}
    assert _weights(awq_cfg, "vllm serve m --quantization awq_marlin") == pytest.approx(_weights(awq_cfg))


def test_modelopt_hf_quant_config_beside_config_json(tmp_path: Path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                             "exclude_modules": ["lm_head"]}}))
    cfg = read_config_any(tmp_path)
    assert cfg is not None and cfg["quantization_config"]["quant_algo"] == "NVFP4"
    assert parse_quant(cfg).method == "nvfp4"
    assert merge_hf_quant_config(LLAMA_8B, None) == LLAMA_8B


def test_unknown_quant_method_is_counted_unquantised_with_a_note():
    spec = spec_from_config({**LLAMA_8B, "quantization_config": {"quant_method": "hqq_future"}})
    assert spec.qscheme.method == "bf16" and any("hqq_future" in n for n in spec.notes)


# -- pipeline partitions -----------------------------------------------------------------------
def test_engine_pipeline_partitions_and_their_env_overrides():
    par = Parallel(engine="vllm", pp=3)
    assert [len(r) for r in pp_partition(par, 61)] == [20, 21, 20]  # remainder before the last
    par = Parallel(engine="vllm", pp=2, env={"VLLM_PP_LAYER_PARTITION": "13,51"})
    assert [len(r) for r in pp_partition(par, 64)] == [13, 51]
    par = Parallel(engine="sglang", pp=4, env={"SGLANG_PP_LAYER_PARTITION": "23,23,23,24"})
    assert [len(r) for r in pp_partition(par, 93)] == [23, 23, 23, 24]
    # the other engine's variable is not read
    par = Parallel(engine="sglang", pp=2, env={"VLLM_PP_LAYER_PARTITION": "13,51"})
    assert [len(r) for r in pp_partition(par, 64)] == [32, 32]
    with pytest.raises(PlanError, match="VLLM_PP_LAYER_PARTITION=10,10 must list 2 layer counts summing to 64"):
        pp_partition(Parallel(engine="vllm", pp=2, env={"VLLM_PP_LAYER_PARTITION": "10,10"}), 64)


def test_pp_places_embedding_first_head_last_and_reports_the_largest_stage():
    inv = load_inventory(None, config=LLAMA_8B)
    par = Parallel(engine="vllm", pp=2, env={"VLLM_PP_LAYER_PARTITION": "8,24"})
    first, last = stage_weights(inv, par, 0), stage_weights(inv, par, 1)
    assert "embedding" in first and "lm_head" not in first
    assert "lm_head" in last and "embedding" not in last and "norms" in last
    plan = compute_plan(inv, par, resolve_gpu("h100"), model_name="m")
    assert plan.max_rank_weights_bytes == max(s.weights_bytes for s in plan.stages) == plan.stages[1].weights_bytes


# -- redundant experts -------------------------------------------------------------------------
@pytest.mark.parametrize("engine, flags, n", [
    ("sglang", {"--ep-num-redundant-experts": "32"}, 32),
    ("vllm", {"--enable-eplb": True, "--num-redundant-experts": "16"}, 16),
    ("vllm", {"--enable-eplb": True, "--eplb-config": '{"num_redundant_experts": 32}'}, 32),
    ("vllm", {"--enable-eplb": True, "--eplb-config": "{num_redundant_experts:32}"}, 32),
    ("vllm", {"--enable-eplb": True, "--eplb-config.num_redundant_experts": "8"}, 8),
    ("vllm", {"--num-redundant-experts": "16"}, 0),  # without --enable-eplb vLLM ignores it
])
def test_redundant_expert_spellings(engine, flags, n):
    assert redundant_experts(engine, flags) == n


def test_redundant_experts_make_an_ep_size_possible_and_cost_memory():
    inv = load_inventory("deepseek-ai/DeepSeek-V3")
    par = Parallel(engine="sglang", tp=48, ep=48, dp=48, dp_attention=True)
    errs = validate_parallel(par, inv.spec)
    assert any("--ep-num-redundant-experts 32" in e for e in errs), errs  # 256 + 32 = 288 = 6 × 48
    par.redundant_experts = 32
    assert not [e for e in validate_parallel(par, inv.spec) if "experts" in e]
    base = Parallel(engine="sglang", tp=16, ep=16)
    red = Parallel(engine="sglang", tp=16, ep=16, redundant_experts=32)
    e0, e1 = stage_weights(inv, base, 0)["experts"], stage_weights(inv, red, 0)["experts"]
    assert e1 / e0 == pytest.approx((256 + 32) / 256)
    vllm = Parallel(engine="vllm", tp=8, ep=2, dp=6)
    assert any("--enable-eplb --eplb-config" in e for e in validate_parallel(vllm, inv.spec))


# -- architectures -----------------------------------------------------------------------------
def test_an_architecture_not_in_the_table_gets_a_generic_projection():
    cfg = {"architectures": ["FalconMambaFutureForCausalLM"], "model_type": "future_lm", "hidden_size": 4096,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 128256, "tie_word_embeddings": False}
    spec = spec_from_config(cfg)
    assert spec.family == "generic" and spec.approximate and "generic projection" in spec.notes[0]
    assert _weights(cfg) == pytest.approx(_weights(LLAMA_8B), rel=0.01)
    inv = load_inventory(None, config=cfg)
    plan = compute_plan(inv, LaunchSpec.of({"engine": "vllm"}).placement(), resolve_gpu("h100"), model_name="m")
    assert any(n.startswith("APPROXIMATE") for n in plan.notes)
    with pytest.raises(UnknownArchitecture, match="lacks num_hidden_layers"):
        spec_from_config({k: v for k, v in cfg.items() if k != "num_hidden_layers"})


def test_generic_moe_fields_and_interleaving():
    cfg = {"architectures": ["SomeMoeForCausalLM"], "model_type": "some_moe", "hidden_size": 2048,
           "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 100000,
           "intermediate_size": 8192, "moe_intermediate_size": 1024, "num_experts": 64, "num_experts_per_tok": 8,
           "first_k_dense_replace": 2, "n_shared_experts": 2}
    spec = spec_from_config(cfg)
    assert spec.experts == 64 and spec.moe_layers == tuple(range(2, 24)) and spec.shared_intermediate == 2048


def test_llama4_interleaved_moe_and_dense_widths():
    text = {"model_type": "llama4_text", "hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40,
            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048, "num_local_experts": 128,
            "num_experts_per_tok": 1, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
            "interleave_moe_layer_step": 2}
    spec = spec_from_config({"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
                             "text_config": text})
    assert spec.family == "llama4" and spec.moe_layers == tuple(range(1, 48, 2))
    assert spec.intermediate == 16384 and spec.moe_intermediate == 8192 and spec.shared_intermediate == 8192


def test_hybrid_layers_from_layer_types_and_nemotron_pattern():
    qwen_next = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
                 "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
                 "vocab_size": 151936, "intermediate_size": 5120, "moe_intermediate_size": 512, "num_experts": 64,
                 "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"],
                 "linear_num_key_heads": 16, "linear_key_head_dim": 128, "linear_num_value_heads": 32,
                 "linear_value_head_dim": 128}
    spec = spec_from_config(qwen_next)
    assert spec.layer_mixers.count("linear") == 6 and spec.attn_output_gate
    nemo = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 1024,
            "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
            "vocab_size": 32000, "intermediate_size": 4096, "hybrid_override_pattern": "M-M*EM",
            "n_routed_experts": 8, "moe_intermediate_size": 512, "mamba_num_heads": 32, "mamba_head_dim": 64,
            "n_groups": 8, "ssm_state_size": 128, "mlp_hidden_act": "relu2"}
    spec = spec_from_config(nemo)
    assert spec.layer_mixers == ("mamba", "none", "mamba", "attn", "none", "mamba")
    assert spec.layer_mlps == ("none", "dense", "none", "none", "moe", "none") and spec.moe_layers == (4,)
    assert not spec.gated_mlp and not spec.gated_experts
    inv = load_inventory(None, config=nemo)
    names = {g.template for g in inv.groups}
    assert any("mixer.in_proj" in n for n in names) and not any("gate_proj" in n for n in names)


def test_vision_tower_is_estimated_and_tensor_parallel_except_k3():
    text = {k: v for k, v in LLAMA_8B.items() if k not in ("architectures", "model_type")}
    cfg = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl", **text,
           "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3456, "hidden_act": "silu",
                             "out_hidden_size": 4096, "patch_size": 14, "spatial_merge_size": 2,
                             "temporal_patch_size": 2}}
    spec = spec_from_config(cfg)
    assert 0.6e9 < spec.vision_params < 0.72e9  # Qwen2.5-VL's ViT is ~0.67 B parameters
    inv = load_inventory(None, config=cfg)
    tp1 = stage_weights(inv, Parallel(engine="vllm", tp=1), 0)["vision"]
    tp4 = stage_weights(inv, Parallel(engine="vllm", tp=4), 0)["vision"]
    data = stage_weights(inv, Parallel(engine="vllm", tp=4, mm_encoder_dp=True), 0)["vision"]
    assert tp4 == pytest.approx(tp1 / 4) and data == tp1
    assert "vision" not in stage_weights(inv, Parallel(engine="vllm", language_only=True), 0)


def test_vllm_accepts_underscore_flags():
    spec = parse_launch(shlex.split("python -m vllm.entrypoints.openai.api_server --model m "
                                    "--pipeline_parallel_size=2 --tensor_parallel_size 4")).to_dict()
    assert spec["tp"] == 4 and spec["pp"] == 2


def test_per_layer_flags_and_odd_field_types_never_traceback():
    cfg = {"architectures": ["MiniMaxM3ForCausalLM"], "model_type": "minimax_m3", "hidden_size": 1024,
           "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32000,
           "intermediate_size": 512, "num_local_experts": 8, "moe_layer_freq": [0, 1, 1, 1]}
    assert spec_from_config(cfg).moe_layers == (1, 2, 3)
    with pytest.raises(UnknownArchitecture, match="cannot read"):
        spec_from_config({**cfg, "num_key_value_heads": {"odd": 1}})


def test_mixed_precision_modelopt_and_component_aware_ignore_names():
    scheme = parse_quant({"quantization_config": {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                                                  "quantized_layers": {
                                                      "model.language_model.layers.0.mlp.up_proj": {"quant_algo": "W4A16_NVFP4", "group_size": 16},
                                                      "model.language_model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}}}})
    sizes = {n: sum(tensor_nbytes(d, s) for _, d, s in linear_tensors(n, 1024, 1024, scheme, k)) for n, k in (
        ("model.layers.0.mlp.up_proj", "dense"), ("model.layers.0.self_attn.q_proj", "attn"),
        ("model.layers.0.mlp.down_proj", "dense"))}
    assert sizes["model.layers.0.mlp.up_proj"] < sizes["model.layers.0.self_attn.q_proj"] < sizes["model.layers.0.mlp.down_proj"]
    # "gate" in an ignore list is the router module, not every gate_proj
    q = {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["gate"]}
    assert _bytes("model.layers.0.mlp.experts.0.gate_proj", 1024, 1024, q, "expert") < 2 * 1024 * 1024
    assert _bytes("model.layers.0.mlp.gate", 1024, 1024, q, "dense") == 2 * 1024 * 1024


@pytest.mark.parametrize("path", sorted(str(p) for p in (Path(__file__).resolve().parents[1] / "fixtures" / "receipts"
                                                          / "configs").glob("*.json") if p.name != "SOURCES.json")
                         + sorted(str(p) for p in (Path(__file__).resolve().parents[1] / "shared" / "receipt-configs"
                                                   ).glob("*.json") if "hf_quant" not in p.name))
def test_every_receipt_config_projects(path):
    cfg = json.loads(Path(path).read_text())
    inv = load_inventory(None, config=cfg)
    assert inv.total_bytes > 0 and inv.spec is not None


@pytest.mark.parametrize("cmd, engine, tp, pp, model", [
    ("docker run -d --gpus all --ipc=host -p 8000:8000 -e VLLM_PP_LAYER_PARTITION=10,22 vllm/vllm-openai:latest "
     "--model Qwen/Qwen3-32B --tensor-parallel-size 2", "vllm", 2, 1, "Qwen/Qwen3-32B"),
    ("docker run --gpus all lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m --tp 2", "sglang", 2, 1, "m"),
    ("docker run --name x --gpus '\"device=1,4\"' vllm/vllm-openai:v0.9.0 Qwen/Qwen3-32B --pipeline-parallel-size 2",
     "vllm", 1, 2, "Qwen/Qwen3-32B"),
    ("python -c \"from vllm import LLM; LLM(model='m', tensor_parallel_size=2, trust_remote_code=True)\"", "vllm", 2, 1, "m"),
])
def test_launches_as_users_paste_them(cmd, engine, tp, pp, model):
    d = parse_launch(shlex.split(cmd)).to_dict()
    assert (d["engine"], d["tp"], d["pp"], d["model"]) == (engine, tp, pp, model)


def test_docker_env_reaches_the_launch_env():
    d = parse_launch(shlex.split("docker run -e VLLM_PP_LAYER_PARTITION=10,22 --gpus all vllm/vllm-openai "
                                 "m -pp 2")).to_dict()
    assert d["env"]["VLLM_PP_LAYER_PARTITION"] == "10,22"


def test_docker_without_an_engine_command_says_what_to_write():
    from k3doctor.launch import LaunchError

    with pytest.raises(LaunchError, match="put the engine command after the image"):
        parse_launch(shlex.split("docker run --gpus all ubuntu bash"))


def test_modelopt_side_file_beside_a_config_file(tmp_path: Path):
    cfg = tmp_path / "m.json"
    cfg.write_text(json.dumps(LLAMA_8B))
    (tmp_path / "m.hf_quant_config.json").write_text(json.dumps({"quantization": {"quant_algo": "FP8"}}))
    assert parse_quant(read_config_any(cfg)).method == "fp8_tensor"
    (tmp_path / "m.hf_quant_config.json").write_text("{broken")
    assert read_config_any(cfg).get("quantization_config") is None  # a broken side file is ignored


def test_nemotron_nas_block_configs_project_per_layer():
    """DeciLM / Nemotron-NAS (Llama-3.3-Nemotron-Super): no global intermediate_size or KV heads;
    each layer's attention (KV heads = heads // n_heads_in_group, or none) and MLP width
    (2 * ffn_mult * H / 3 rounded up to 256) come from block_configs."""
    H, nh, V = 1024, 16, 1000
    blocks = [
        {"attention": {"n_heads_in_group": 4, "no_op": False}, "ffn": {"ffn_mult": 2.625, "no_op": False}},
        {"attention": {"n_heads_in_group": None, "no_op": True}, "ffn": {"ffn_mult": 1.0, "no_op": False}},
        {"attention": {"no_op": False, "replace_with_linear": True}, "ffn": {"no_op": True}},
    ]
    cfg = {"architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas", "hidden_size": H,
           "num_attention_heads": nh, "num_hidden_layers": 3, "vocab_size": V, "intermediate_size": None,
           "num_key_value_heads": None, "tie_word_embeddings": False, "block_configs": blocks}
    spec = spec_from_config(cfg)
    assert spec.family == "generic" and spec.kv_heads == 4
    assert spec.layer_intermediate == (1792, 768, 0) and spec.layer_mixers == ("attn", "none", "attn_linear")
    hd = H // nh
    attn0 = H * nh * hd + 2 * H * 4 * hd + nh * hd * H
    mlp = lambda i: 3 * H * i  # noqa: E731 - gated MLP
    norms = 3 * 2 * H + H
    want = 2 * (attn0 + mlp(1792) + mlp(768) + H * H + norms + 2 * V * H)
    assert load_inventory(None, config=cfg).total_bytes == want


@pytest.mark.parametrize("engine, flag", [("vllm", "--enable-expert-parallel"), ("sglang", "--ep-size 8")])
def test_fp8_block_experts_sliced_below_a_block_name_the_engines_flag(engine, flag):
    """Qwen3-30B-A3B-FP8 at TP8 without EP: 768 / 8 = 96 is not a multiple of the 128 block (both
    engines refuse at load); the refusal names the flag that splits the experts whole instead."""
    spec = load_inventory("Qwen/Qwen3-30B-A3B-FP8").spec
    errs = validate_parallel(Parallel(engine=engine, tp=8), spec)
    assert any("FP8 block 128" in e and flag in e for e in errs), errs
    assert not validate_parallel(Parallel(engine=engine, tp=8, ep=8), spec)


@pytest.mark.parametrize("engine, tp_flag, pp_flag", [("vllm", "--tensor-parallel-size", "--pipeline-parallel-size"),
                                                       ("sglang", "--tp-size", "--pp-size")])
def test_heads_not_divisible_by_tp_names_the_sizes_and_flags(engine, tp_flag, pp_flag):
    spec = spec_from_config({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
                             "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
                             "num_key_value_heads": 4, "vocab_size": 152064})
    (err,) = validate_parallel(Parallel(engine=engine, tp=8), spec)
    assert "28 attention heads" in err and f"{tp_flag} that divides 28 (1, 2, 4, 7, 14, 28)" in err and pp_flag in err
