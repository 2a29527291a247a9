"""Config-only inventory vs real checkpoint totals (fixtures/checkpoint-totals, issue 13's
generalisation check): the split rule, the frozen held-out set, the pre-use score on file, the bars
reached, and the mechanisms added for the dev rows (float32 checkpoints, MLX, quantize_config.json)."""

from __future__ import annotations

import hashlib
import json

import pytest

from k3doctor.memory.inventory import read_config_any, read_inventory
from k3doctor.memory.placement import compact
from k3doctor.memory.quantscheme import parse_quant
from k3doctor.memory.totals import TOTALS, load_records, names_of, score, scored, split_of

#: held-out ids and the digest of (config, side files, total_size, tensor names) at collection; a
#: held-out miss cannot be "fixed" by editing its record
FROZEN_HELDOUT = {
    '1235357/Backup_hf_sakura-14b-qwen2.5-v1.0-q6k': '6bc541b4da8e68d7',
    'Ade7121976/split_models': 'ff75a53d482bcd81',
    'BrianYAU-NTEC/olmOCR': 'c997945dc181395f',
    'Bwin-AI/LiverGPT': 'b90a6488c3fb110d',
    'IDLEOAK/openpangu-lightweight-methods': 'b0c0441fbc486fec',
    'Mayursoni08/GenAi_cricket_commentry': '314057b931094f2c',
    'MiMiGame-1/Reflection-Llama-3.1-70B': 'ef5f90d8559ece55',
    'Radhikabhrara/llama_chatbot': '27f2ba317656c9b9',
    'VineethGithubIBM/graniteModelWithoutGGUF': '30a00be9c88fd93e',
    'YouriLalain/1PARAMMYL-8B-ModelStock': '0a595bfee8f061cf',
    'YouriLalain/3PRYMMAL-PHI3-3B-SLERP': '4fa0cb6919abb7b5',
    'ananddhanabal/gemma': 'b458923503c937b1',
    'bjornerikkorum/RUTERGPT13B': '84ca73bce015d3b3',
    'bryce-hoehn/Qwen3.5-25B-REAP-A3B-Coding': '921930f4580aacc9',
    'colorfulandcjy0806/cjy_chat': 'bda590c5303a1339',
    'fetchwiki/deepcogito-cogito-v1-preview-qwen-14B': '3e82a80abc99154a',
    'fetchwiki/mistralai-Devstral-Small-2507': 'b48e35df100d00e2',
    'gsasouza/dolphin3-mistral': '135ebce946a340fd',
    'hoopstreet/TikTok-Prompt-Generator': 'b62eed48225b16a4',
    'ishaanamahajan/Self-Consistency-SemCoder-COMS6998': '0b1f5975b61b9413',
    'jianzhnie/Kimi2-PCL:models': '381f57126ea7e26a',
    'kurokencom/DeepSeekOcrCPUWin:model': 'd10b8a5a9b61868d',
    'mapengAdam/qianwen-72B': '280fcc12315e19d2',
    'maxma233/timelyMeal:model': '51e7a34481d50073',
    'minhphuc477/NPC-AI:merged_model_extreme': 'd2bfd8fb7f391eda',
    'root-hypercube/qwen3-mlx': '59d45d87a0fc0b98',
    'root-hypercube/qwen3-mlx:Qwen3-14B-MLX-4bit': '455a20c2b0346e00',
    'stvlynn/Qwen-7B-Chat-Cantonese': 'b8eae64c1a6806e2',
    'tbressers/WizardLM-2-8x22B': '8b04668718398aa0',
    'x1ngzai/Qwen-VL-Chat-Int4': '724dd0df60efbea2',
}


@pytest.fixture(scope="module")
def result():
    return score()


def test_split_follows_the_fixed_rule():
    recs = load_records()
    assert len(recs) >= 80
    for r in recs:
        assert r["split"] == split_of(r["id"]), r["id"]
    index = json.loads((TOTALS / "_index.json").read_text())
    assert {e["id"]: e["split"] for e in index} == {r["id"]: r["split"] for r in recs}


def test_heldout_is_frozen():
    recs = {r["id"]: r for r in load_records() if r["split"] == "heldout"}
    assert set(recs) == set(FROZEN_HELDOUT)
    for rid, digest in FROZEN_HELDOUT.items():
        r = recs[rid]
        got = hashlib.sha256(json.dumps([r["config"], r.get("side_files"), r["total_size"], names_of(r)],
                                        sort_keys=True).encode()).hexdigest()[:16]
        assert got == digest, rid


def test_pre_use_score_is_on_file():
    pre = json.loads((TOTALS / "scores" / "pre-use.json").read_text())
    ids = {r["id"] for r in pre["rows"]}
    assert {r["id"] for r in scored(load_records())} <= ids
    # the honest estimate for unseen checkpoints, as scored before any rule change
    assert pre["splits"]["heldout"]["max_abs_pct"] == pytest.approx(255.53)
    assert pre["splits"]["dev"]["max_abs_pct"] == pytest.approx(357.05)


def test_coverage(result):
    tags = [t for r in load_records() if not r.get("duplicate_of") and not r.get("excluded") for t in r["tags"]]
    for t in ("dense", "moe", "multimodal", "hybrid", "mtp", "quant:bitsandbytes", "quant:gptq",
              "quant:compressed-tensors"):
        assert t in tags, t
    assert len(result["rows"]) >= 70


def test_bars_reached(result):
    dev, held = result["splits"]["dev"], result["splits"]["heldout"]
    # dev: the rules were written against these
    assert dev["median_abs_pct"] <= 0.5 and dev["unanswered"] <= 1
    assert dev["within_15pct"] >= dev["n"] - dev["unanswered"] - 2
    # held out (never tuned on): the hidden-set bar, median <= 2 %, max <= 15 %; one remote-code
    # config without the decoder's dimensions (Moondream) stays unanswered
    assert held["median_abs_pct"] <= 2.0 and held["max_abs_pct"] <= 15.0 and held["unanswered"] <= 1


def _inv(tmp_path, cfg, side=None):
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    for name, doc in (side or {}).items():
        (tmp_path / name).write_text(json.dumps(doc))
    return read_inventory(tmp_path)


LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
         "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 32000,
         "tie_word_embeddings": False}


def test_float32_checkpoint_is_stored_f32_and_served_in_16_bits(tmp_path):
    bf = read_inventory(config=LLAMA)
    f32 = _inv(tmp_path, {**LLAMA, "torch_dtype": "float32"})
    assert f32.total_bytes == 2 * bf.total_bytes
    assert sum(nb for *_x, nb, _t in compact(f32)) == sum(nb for *_x, nb, _t in compact(bf))


def test_mlx_quantisation(tmp_path):
    q = {"group_size": 64, "bits": 4, "lm_head": {"group_size": 64, "bits": 8}}
    s = parse_quant({"quantization_config": q})
    assert s.method == "mlx" and s.embeddings and s.lm_head
    inv = _inv(tmp_path, {**LLAMA, "quantization": q, "quantization_config": q})
    emb = next(g for g in inv.groups if g.template.startswith("model.embed_tokens.weight"))
    assert emb.dtype == "U32" and emb.nbytes == 32000 * (1024 * 4 // 32) * 4  # 4-bit, packed in uint32
    head = sum(g.nbytes for g in inv.groups if g.template.startswith("lm_head.weight"))
    assert head == 32000 * 1024 * 8 // 8  # the 8-bit override


def test_quantize_config_side_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    (tmp_path / "quantize_config.json").write_text(json.dumps({"bits": 4, "group_size": 128, "desc_act": False, "sym": True}))
    cfg = read_config_any(tmp_path)
    assert cfg["quantization_config"]["quant_method"] == "gptq"
    assert read_inventory(tmp_path).spec.qscheme.method == "gptq"


def test_text_config_when_top_level_lacks_the_decoder(tmp_path):
    cfg = {"architectures": ["PaliGemmaForConditionalGeneration"], "model_type": "paligemma", "hidden_size": 2048,
           "text_config": {"hidden_size": 2048, "intermediate_size": 16384, "model_type": "gemma",
                           "num_attention_heads": 8, "num_hidden_layers": 18, "num_key_value_heads": 1,
                           "vocab_size": 257216}}
    inv = _inv(tmp_path, cfg)
    assert inv.spec.layers == 18 and inv.spec.tie_embeddings


def test_missing_mlp_width_is_assumed_not_refused(tmp_path):
    cfg = {"architectures": ["BloomForCausalLM"], "model_type": "bloom", "n_embed": 1024, "n_layer": 2,
           "num_attention_heads": 16, "vocab_size": 1000}
    inv = _inv(tmp_path, cfg)
    assert inv.spec.intermediate == 4096 and not inv.spec.gated_mlp
    assert any("4 x hidden" in n for n in inv.spec.notes)

