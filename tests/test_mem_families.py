"""Round 8 (issue 13): checkpoint names the quantisation lists refer to, Gemma-4's attention
geometry and dense+MoE layers, the DeepSeek-V4 family, and MTP drafts loaded by vLLM."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from k3doctor.launch import parse_launch
from k3doctor.memory.inventory import load_inventory, read_config_any
from k3doctor.memory.placement import Parallel, classify, stage_weights
from k3doctor.launch import LaunchSpec
from k3doctor.memory.plan import compute_plan, resolve_gpu
from k3doctor.memory.rope import rope_cache_bytes, rope_tables
from k3doctor.memory.spec import spec_from_config
from k3doctor.memory.synth import synthesise

ROOT = Path(__file__).resolve().parents[1]
GiB = 1 << 30


def _names(cfg: dict) -> dict[str, str]:
    return {t.name: t.dtype for t in synthesise(spec_from_config(cfg), experts_limit=1)}


def _rank_gib(cfg: dict, launch: str, gpu: str = "h200") -> dict[str, float]:
    inv = load_inventory(None, config=cfg)
    par = LaunchSpec.of(parse_launch(shlex.split(launch)).to_dict()).placement()
    plan = compute_plan(inv, par, resolve_gpu(gpu), model_name="m")
    return {k: v / GiB for k, v in plan.stages[0].components.items()}


NEMOTRON_H = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 1024,
              "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
              "vocab_size": 32000, "intermediate_size": 4096, "hybrid_override_pattern": "M-M*EM",
              "n_routed_experts": 8, "moe_intermediate_size": 512, "mamba_num_heads": 32, "mamba_head_dim": 64,
              "n_groups": 8, "ssm_state_size": 128, "mlp_hidden_act": "relu2",
              "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                                      "exclude_modules": ["lm_head", "backbone.layers.3.mixer.q_proj",
                                                          "backbone.layers.3.mixer.o_proj",
                                                          "backbone.layers.2.mixer.in_proj"]}}


def test_nemotron_h_blocks_are_named_mixer_so_exclude_lists_reach_attention():
    names = _names(NEMOTRON_H)
    assert names["model.layers.3.mixer.q_proj.weight"] == "BF16"  # excluded by its checkpoint name
    assert names["model.layers.3.mixer.k_proj.weight"] == "U8"    # not excluded: NVFP4
    assert names["model.layers.2.mixer.in_proj.weight"] == "BF16"
    assert names["model.layers.0.mixer.in_proj.weight"] == "U8"
    assert not any(".self_attn." in n for n in names)
    inv = load_inventory(None, config=NEMOTRON_H)
    roles = {g.template: classify(g, inv.spec) for g in inv.groups}
    assert roles["model.layers.{L}.mixer.up_proj.weight"] == ("dense_mlp", "dense")
    assert roles["model.layers.{L}.mixer.q_proj.weight"] == ("attention", "attn")
    assert roles["model.layers.{L}.mixer.experts.{E}.up_proj.weight"][0] == "experts"


def test_qwen35_gated_deltanet_keeps_its_checkpoint_split_qwen3_next_its_fused_names():
    cfg = json.loads((ROOT / "shared/receipt-configs/Qwen--Qwen3.5-27B.json").read_text())
    names = _names(cfg)
    assert {"model.layers.0.linear_attn.in_proj_qkv.weight", "model.layers.0.linear_attn.in_proj_z.weight",
            "model.layers.0.linear_attn.in_proj_b.weight", "model.layers.0.linear_attn.in_proj_a.weight"} <= set(names)
    nxt = dict(cfg["text_config"], model_type="qwen3_next", architectures=["Qwen3NextForCausalLM"])
    assert "model.layers.0.linear_attn.in_proj_qkvz.weight" in _names(nxt)
    # the same weights either way
    split = sum(t.nbytes for t in synthesise(spec_from_config(cfg)) if "linear_attn.in_proj" in t.name)
    fused = sum(t.nbytes for t in synthesise(spec_from_config(nxt)) if "linear_attn.in_proj" in t.name)
    assert split == fused


def test_modelopt_mixed_precision_quantises_the_head_it_lists():
    cfg = read_config_any(ROOT / "shared/receipt-configs/nvidia--Qwen3.6-27B-NVFP4.json")
    names = _names(cfg)
    assert names["lm_head.weight"] == "U8"  # W4A16_NVFP4 in quantized_layers
    assert names["model.layers.0.linear_attn.in_proj_qkv.weight"] == "F8_E4M3"
    assert names["model.layers.0.mlp.gate_proj.weight"] == "U8"


def _gemma4(name: str) -> dict:
    return read_config_any(ROOT / name)


def test_gemma4_full_attention_layers_and_dense_mlp_beside_the_experts():
    cfg = _gemma4("shared/receipt-configs/google--gemma-4-26B-A4B.json")
    spec = spec_from_config(cfg)
    text = cfg["text_config"]
    assert spec.global_layers == tuple(i for i, t in enumerate(text["layer_types"]) if t == "full_attention")
    assert spec.k_eq_v and spec.global_head_dim == 512 and spec.moe_plus_dense
    names = _names(cfg)
    g = spec.global_layers[0]
    assert f"model.layers.{g}.self_attn.v_proj.weight" not in names      # K is V
    assert "model.layers.0.self_attn.v_proj.weight" in names               # sliding layers keep V
    assert {"model.layers.0.mlp.gate_proj.weight", "model.layers.0.experts.0.gate_proj.weight",
            "model.layers.0.router.proj.weight"} <= set(names)
    inv = load_inventory(None, config=cfg)
    dense = sum(g.nbytes for g in inv.groups if ".mlp." in g.template)
    assert dense == 30 * 3 * 2816 * 2112 * 2


def test_gemma4_nvfp4_exclude_list_keeps_mlp_and_attention_bf16_and_quantises_experts():
    cfg = _gemma4("shared/receipt-configs/nvidia--Gemma-4-26B-A4B-NVFP4.json")
    names = _names(cfg)
    assert names["model.layers.0.mlp.gate_proj.weight"] == "BF16"
    assert names["model.layers.0.self_attn.q_proj.weight"] == "BF16"
    assert names["model.layers.0.experts.0.gate_proj.weight"] == "U8"


def test_vllm_keeps_a_v_slot_for_gemma4_k_eq_v_layers():
    cfg = _gemma4("fixtures/receipts/configs/gemma-4-31b-it.json")
    spec = spec_from_config(cfg)
    inv = load_inventory(None, config=cfg)
    vllm = stage_weights(inv, Parallel(engine="vllm"), 0)["attention"]
    sglang = stage_weights(inv, Parallel(engine="sglang"), 0)["attention"]
    slot = len(spec.global_layers) * spec.global_kv_heads * spec.global_head_dim * spec.hidden * 2
    assert vllm - sglang == slot


DSV4 = json.loads((ROOT / "shared/receipt-configs/deepseek-ai--DeepSeek-V4-Flash.json").read_text())


def test_deepseek_v4_tensors_in_the_released_naming():
    spec = spec_from_config(DSV4)
    assert spec.family == "deepseek_v4" and spec.expert_quant == "mxfp4" and spec.hash_layers == 3
    names = _names(DSV4)
    assert names["layers.0.ffn.experts.0.w1.weight"] == "U8"
    assert names["layers.0.ffn.experts.0.w1.scale"] == "F8_E8M0"
    assert names["layers.0.attn.wq_b.weight"] == "F8_E4M3"
    assert "layers.0.ffn.gate.tid2eid" in names and "layers.3.ffn.gate.bias" in names
    assert "layers.2.attn.indexer.wq_b.weight" in names and "layers.3.attn.indexer.wq_b.weight" not in names
    assert "layers.0.attn.compressor.wkv.weight" not in names  # compress ratio 0
    assert names["layers.3.attn.compressor.wkv.weight"] == "BF16"
    assert {"embed.weight", "head.weight", "mtp.0.attn.wq_a.weight", "hc_head_fn"} <= set(names)
    inv = load_inventory(None, config=DSV4)
    experts = sum(g.nbytes for g in inv.groups if ".experts." in g.template and not g.template.startswith("mtp."))
    assert experts == 43 * 256 * 3 * 4096 * 2048 * (1 / 2 + 1 / 32)


def test_deepseek_v4_placement():
    inv = load_inventory(None, config=DSV4)
    roles = {g.template: classify(g, inv.spec) for g in inv.groups}
    assert roles["layers.{L}.attn.wq_a.weight"] == ("mla_q_a_kv_a", "rep")
    assert roles["layers.{L}.attn.compressor.wkv.weight"] == ("attention", "rep")
    assert roles["layers.{L}.attn.wo_a.weight"] == ("attention", "attn")
    assert roles["layers.{L}.hc_attn_fn"] == ("other", "rep")
    assert roles["embed.weight"] == ("embedding", "vocab_embed") and roles["head.weight"] == ("lm_head", "vocab_head")
    assert roles["mtp.{N}.ffn.experts.{E}.w1.weight"] == ("mtp", "expert")
    assert roles["layers.{L}.ffn.gate.tid2eid"][0] == "router"
    tp4 = stage_weights(inv, Parallel(engine="vllm", tp=4), 0)
    tp2 = stage_weights(inv, Parallel(engine="vllm", tp=2), 0)
    assert tp2["experts"] == 2 * tp4["experts"]
    assert tp2["mla_q_a_kv_a"] == tp4["mla_q_a_kv_a"]  # replicated
    # vLLM's indexer top-k buffer and MTP hidden buffer; SGLang's bf16 wo_a
    assert tp4["other"] > 8192 * 512 * 4 + 8192 * 4 * 4096 * 2
    sg = stage_weights(inv, Parallel(engine="sglang", tp=4), 0)
    wo_a = 43 * 4096 * 8192 / 4
    assert abs((sg["attention"] - tp4["attention"]) - wo_a) < 1


def test_deepseek_v4_rope_tables_per_engine():
    assert [n for n, _r, _c in rope_tables(DSV4, "vllm")] == ["window", "compressed"]
    assert rope_cache_bytes(DSV4, "vllm") == 2 * 65536 * 16 * 64 * 2
    assert rope_cache_bytes(DSV4, "sglang") == 4 * 65536 * 16 * 64 * 4


def test_vllm_mtp_draft_is_counted_sglang_draft_is_not():
    base = "vllm serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 4"
    mtp = base + " --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'"
    plain, drafted = _rank_gib(DSV4, base), _rank_gib(DSV4, mtp)
    assert "mtp" not in plain and 0.5 < drafted["mtp"] < 2.0  # one layer (its experts / 4), no embed/head
    assert LaunchSpec.of(parse_launch(shlex.split(mtp)).to_dict()).placement().mtp_draft
    sg = parse_launch(shlex.split("sglang serve --model-path m --tp 4 --speculative-algorithm EAGLE")).to_dict()
    assert not LaunchSpec.of(sg).placement().mtp_draft
    # a DeepSeek-V3-style MTP layer (model.layers.61) drops its embedding / head copies
    v3 = load_inventory("deepseek-ai/DeepSeek-V3")
    mtp_roles = {classify(g, v3.spec) for g in v3.groups if g.layer >= v3.spec.layers}
    assert ("mtp", "skip") in mtp_roles and ("mtp", "expert") in mtp_roles


def test_qwen35_mtp_block_is_named_mtp_excluded_by_mtp_star_and_counted_only_as_vllm_draft():
    """Qwen3.5/3.6 keep ``mtp_num_hidden_layers`` full-attention layers (here with the MoE) under
    ``mtp.layers.N`` joined by ``mtp.fc`` (2H -> H) and three norms (vLLM qwen3_5_mtp.py); the
    ModelOpt exclude list ``mtp*`` leaves them BF16; they count only when vLLM loads the draft."""
    cfg = json.loads((ROOT / "shared/receipt-configs/nvidia--Qwen3.6-35B-A3B-NVFP4.json").read_text())
    names = _names(cfg)
    H = cfg["text_config"]["hidden_size"]
    assert names["mtp.fc.weight"] == "BF16" and names["mtp.pre_fc_norm_embedding.weight"] == "BF16"
    assert names["mtp.layers.0.self_attn.q_proj.weight"] == "BF16"
    assert names["mtp.layers.0.mlp.experts.0.gate_proj.weight"] == "BF16"
    assert names["model.layers.0.mlp.experts.0.gate_proj.weight"] == "U8"  # the decoder's experts: NVFP4
    assert not any(n.startswith("model.layers.40.") for n in names)  # no 41st decoder layer
    base = "vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4 --quantization modelopt"
    plain = _rank_gib(cfg, base)
    drafted = _rank_gib(cfg, base + " --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'")
    # one layer of 256 BF16 experts (3 x H x 512 each) plus attention and the fc join
    experts = 256 * 3 * H * cfg["text_config"]["moe_intermediate_size"] * 2 / GiB
    assert "mtp" not in plain and experts < drafted["mtp"] < experts * 1.1
    assert abs(sum(drafted.values()) - sum(plain.values()) - drafted["mtp"]) < 1e-6


def test_an_ignore_pattern_naming_another_stack_does_not_reach_the_decoder():
    from k3doctor.memory.quantmatch import matches

    def _matches(p: str, m: str) -> bool:
        return matches(p, m, "modelopt")

    assert not _matches("mtp.layers.0*", "model.layers.0.linear_attn.in_proj_qkv")
    assert _matches("mtp.layers.0*", "mtp.layers.0.mlp.gate_proj")
    assert _matches("model.language_model.layers.0.mlp*", "model.layers.0.mlp.gate_proj")
    assert _matches("backbone.layers.4.mixer.in_proj", "model.layers.4.mixer.in_proj")


def test_disable_shared_experts_fusion_reaches_the_plan():
    on = parse_launch(shlex.split("sglang serve --model-path deepseek-ai/DeepSeek-V3 --tp 8")).to_dict()
    off = parse_launch(shlex.split("sglang serve --model-path deepseek-ai/DeepSeek-V3 --tp 8 "
                                   "--disable-shared-experts-fusion")).to_dict()
    assert LaunchSpec.of(on).placement().shared_experts_fusion and not LaunchSpec.of(off).placement().shared_experts_fusion


def test_dsa_lightning_indexer_is_replicated_and_follows_indexer_types():
    """DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5 glm_moe_dsa): a lightning indexer per layer
    (wq_b, wk, k_norm, weights_proj), replicated on every rank (vLLM/SGLang ReplicatedLinear);
    GLM-5.2's ``indexer_types`` leaves the ``shared`` layers without one."""
    import json as _json
    from pathlib import Path as _P

    from k3doctor.memory.inventory import load_inventory

    cfg = _json.loads((_P(__file__).resolve().parents[1] / "shared/receipt-configs/zai-org--GLM-5-FP8.json").read_text())
    inv = load_inventory(None, config=cfg)
    assert len(inv.spec.index_layers) == cfg["num_hidden_layers"]
    tpl = {g.template: g.dtype for g in inv.groups}
    assert tpl["model.layers.{L}.self_attn.indexer.wq_b.weight"] == "F8_E4M3"
    assert tpl["model.layers.{L}.self_attn.indexer.weights_proj.weight"] == "BF16"
    shared = dict(cfg, indexer_types=["full" if i % 4 == 0 else "shared" for i in range(cfg["num_hidden_layers"])])
    assert len(load_inventory(None, config=shared).spec.index_layers) == 20
    from k3doctor.memory.placement import stage_weights

    idx = sum(g.nbytes for g in inv.groups if ".indexer." in g.template)
    w = {tp: stage_weights(inv, LaunchSpec.of(parse_launch(shlex.split(
        f"vllm serve zai-org/GLM-5-FP8 --tensor-parallel-size {tp}")).to_dict()).placement(), 0) for tp in (4, 8)}
    # attention halves from TP4 to TP8 except the replicated indexer (and the replicated q_a/kv_a)
    assert w[4]["attention"] - 2 * w[8]["attention"] == pytest.approx(-idx, rel=1e-3)  # (k_norm counts as a norm)
    assert w[8].get("other", 0) == 8192 * cfg["index_topk"] * 4  # vLLM's topk_indices_buffer
