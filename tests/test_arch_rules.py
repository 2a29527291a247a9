"""The ARCH rule table (k3doctor/data/arch_rules.toml) and its loader/matcher (k3doctor.archrules)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from k3doctor import archrules
from k3doctor.archrules import (
    CCRequirement,
    RuleError,
    device_groups,
    env_truthy,
    load_rules,
    mxfp4_reason,
    parse_cc,
    parse_rules,
    release_tuple,
    render_markdown,
    resolve_model,
)

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]


def raw_doc() -> dict:
    with archrules.RULES_PATH.open("rb") as fh:
        return tomllib.load(fh)


# -- the shipped table -----------------------------------------------------------------------
def test_table_has_at_least_30_rules_with_unique_ids_and_urls():
    table = load_rules()
    assert len(table.rules) >= 30
    ids = [r.id for r in table.rules]
    assert len(ids) == len(set(ids))
    for rule in table.rules:
        assert rule.source.startswith("https://"), rule.id
        assert rule.error and rule.fix and rule.requires, rule.id


@pytest.mark.parametrize(
    "rule_id",
    [
        "vllm.env.k3_latent_moe_tail_fusion",
        "sglang.attention.cutlass_mla",
        "vllm.attention.cutlass_mla",
        "sglang.attention.trtllm_mla",
        "sglang.attention.trtllm_mha",
        "sglang.attention.fa4",
        "sglang.moe.flashinfer_trtllm",
        "sglang.moe.flashinfer_trtllm_routed",
        "sglang.moe.flashinfer_mxfp4",
        "vllm.env.flashinfer_moe_mxfp4_mxfp8",
        "vllm.env.flashinfer_moe_mxfp4_mxfp8_cutlass",
        "nccl.env.mnnvl_enable",
    ],
)
def test_brief_items_are_in_the_table(rule_id):
    load_rules().by_id(rule_id)


def test_blackwell_only_items_reject_hopper_and_accept_b200():
    table = load_rules()
    for rule_id in ("vllm.env.k3_latent_moe_tail_fusion", "sglang.attention.cutlass_mla", "sglang.attention.fa4",
                    "sglang.moe.flashinfer_trtllm", "vllm.env.flashinfer_moe_mxfp4_mxfp8",
                    "vllm.attention.flashinfer_mla"):
        cc = table.by_id(rule_id).cc
        assert cc.verdict((9, 0)) == "fail", rule_id
        assert cc.verdict((10, 0)) == "ok", rule_id
        assert cc.verdict((10, 3)) == "ok", rule_id  # B300 is SM103


def test_tail_fusion_row_carries_the_exact_vllm_messages():
    rule = load_rules().by_id("vllm.env.k3_latent_moe_tail_fusion")
    assert rule.error == "K3 latent-MoE tail fusion requires SM100."
    assert rule.verbatim is True
    assert rule.tp_in == (8, 16)
    assert rule.tp_error.format(tp=4) == "K3 latent-MoE tail fusion requires TP in (8, 16), got 4."
    assert rule.model == "kimi-k3"


def test_flashinfer_mxfp4_needs_newer_flashinfer_only_on_hopper():
    rule = load_rules().by_id("sglang.moe.flashinfer_mxfp4")
    assert rule.package is not None and rule.package.dist == "flashinfer-python"
    hopper = [((9, 0), ("NVIDIA H200",), 8)]
    blackwell = [((10, 0), ("NVIDIA B200",), 8)]
    kinds = lambda groups, pkgs: [v.kind for v in rule.evaluate(groups, packages=pkgs, tp=8)]  # noqa: E731
    assert kinds(hopper, {"flashinfer-python": "0.6.10"}) == ["package"]
    assert kinds(hopper, {"flashinfer-python": "0.6.10.post1"}) == ["package"]  # same release, helpers absent
    assert kinds(hopper, {"flashinfer-python": "0.6.11"}) == []
    assert kinds(hopper, {"flashinfer-python": "0.7.0rc2"}) == []
    assert kinds(hopper, {}) == ["package_unknown"]
    assert kinds(hopper, {"flashinfer-python": None}) == ["package_unknown"]
    assert kinds(blackwell, {}) == []
    assert kinds([((8, 0), ("NVIDIA A100",), 8)], {"flashinfer-python": "0.6.11"}) == ["arch"]


def test_docs_table_is_generated_from_the_toml():
    doc = ROOT / "docs" / "arch-rules.md"
    assert doc.read_text(encoding="utf-8") == render_markdown(), (
        "docs/arch-rules.md is stale: run `python -m k3doctor.archrules markdown > docs/arch-rules.md`"
    )


def test_markdown_lists_every_rule_and_model():
    text = render_markdown()
    table = load_rules()
    for rule in table.rules:
        assert f"`{rule.option.replace('|', chr(92) + '|')}`" in text, rule.id
    for model_id in table.models:
        assert f"`{model_id}`" in text


def test_main_usage_error_and_markdown(capsys):
    assert archrules.main(["bogus"]) == 2
    assert archrules.main(["markdown"]) == 0
    assert capsys.readouterr().out == render_markdown()


# -- validation of malformed tables ----------------------------------------------------------
def _with_first_rule(**changes):
    doc = copy.deepcopy(raw_doc())
    doc["rule"][0].update(changes)
    for key, value in changes.items():
        if value is None:
            del doc["rule"][0][key]
    return doc


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"colour": "red"}, "unknown key"),
        ({"engine": "tgi"}, "engine"),
        ({"kind": "widget"}, "kind"),
        ({"severity": "fatal"}, "severity"),
        ({"sm_major": None}, "compute-capability requirement"),
        ({"sm_min": "nine"}, "major.minor"),
        ({"source": "server_args.py"}, "URL"),
        ({"values": None}, "need values"),
        ({"fields": ["tensor_parallel"]}, "not launch fields"),
        ({"tp_in": [8]}, "tp_error"),
        ({"error": None}, "missing"),
    ],
)
def test_parse_rules_rejects_malformed_rows(changes, message):
    with pytest.raises(RuleError, match=message):
        parse_rules(_with_first_rule(**changes))


def test_parse_rules_rejects_duplicate_ids_and_bad_schema():
    doc = copy.deepcopy(raw_doc())
    doc["rule"].append(copy.deepcopy(doc["rule"][0]))
    with pytest.raises(RuleError, match="duplicate rule id"):
        parse_rules(doc)
    doc = copy.deepcopy(raw_doc())
    doc["schema_version"] = 2
    with pytest.raises(RuleError, match="schema_version"):
        parse_rules(doc)
    doc = copy.deepcopy(raw_doc())
    doc["models"]["moonshotai/Kimi-K3"]["heads"] = 0
    with pytest.raises(RuleError, match="positive integer"):
        parse_rules(doc)


def test_load_rules_from_another_path(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text(
        "schema_version = 1\n"
        "[[rule]]\n"
        'id = "sglang.attention.cutlass_mla"\nengine = "sglang"\nkind = "backend"\n'
        'option = "--attention-backend cutlass_mla"\nfields = ["attention_backend"]\nvalues = ["cutlass_mla"]\n'
        'requires = "SM100"\nsm_major = [10]\nerror = "x"\nfix = "y"\nsource = "https://example.org/"\n',
        encoding="utf-8",
    )
    table = load_rules(str(path))
    assert [r.id for r in table.rules] == ["sglang.attention.cutlass_mla"]
    assert table.models == {}


# -- small helpers ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, expected",
    [([9, 0], (9, 0)), ((10, 3), (10, 3)), ("9.0", (9, 0)), ("sm_100", (10, 0)), ("sm90", (9, 0)), (120, (12, 0)),
     (None, None), (True, None), ("hopper", None), ([9], None)],
)
def test_parse_cc(value, expected):
    assert parse_cc(value) == expected


@pytest.mark.parametrize(
    "version, expected",
    [("0.6.10", (0, 6, 10)), ("0.6.11rc1", (0, 6, 11)), ("v2.21.5", (2, 21, 5)), ("2.8.0+cu128", (2, 8, 0)),
     ("dev", None)],
)
def test_release_tuple(version, expected):
    assert release_tuple(version) == expected


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("ON", True), ("2", True), ("0", False),
                                             ("false", False), ("", False), (None, False), ("no", False)])
def test_env_truthy(value, expected):
    assert env_truthy(value) is expected


def test_cc_requirement_bounds_and_soft_majors():
    req = CCRequirement(sm_min=(8, 0), sm_max=(9, 0))
    assert [req.verdict(cc) for cc in [(7, 5), (8, 0), (8, 9), (9, 0), (10, 0)]] == ["fail", "ok", "ok", "ok", "fail"]
    soft = CCRequirement(majors=(10,), soft_majors=(9, 12))
    assert [soft.verdict(cc) for cc in [(8, 0), (9, 0), (10, 0), (12, 0)]] == ["fail", "soft", "ok", "soft"]
    assert CCRequirement(majors=()).verdict((10, 0)) == "fail"
    assert CCRequirement(majors=()).describe() == "no NVIDIA GPU"


def test_device_groups_by_compute_capability():
    gpu = {"devices": [
        {"name": "NVIDIA H200", "cc": [9, 0]}, {"name": "NVIDIA H200", "cc": [9, 0]},
        {"name": "NVIDIA B200", "cc": [10, 0]}, {"name": "odd", "cc": None},
    ]}
    assert device_groups(gpu) == [((9, 0), ("NVIDIA H200",), 2), ((10, 0), ("NVIDIA B200",), 1)]
    assert device_groups(None) == []


# -- matching launch facts -------------------------------------------------------------------
def test_vllm_backend_matches_flag_and_env_case_insensitively():
    table = load_rules()
    launch = {"engine": "vllm", "attention_backend": "cutlass_mla", "flags": {"--attention-backend": "cutlass_mla"},
              "env": {}}
    hits = [(r.id, m.where) for r, m in table.matches(launch)]
    assert hits == [("vllm.attention.cutlass_mla", "--attention-backend")]
    launch = {"engine": "vllm", "flags": {}, "env": {"VLLM_ATTENTION_BACKEND": "FLASHINFER_MLA"}}
    assert [(r.id, m.via) for r, m in table.matches(launch)] == [("vllm.attention.flashinfer_mla", "env")]


def test_engine_scoping_and_unknown_names():
    table = load_rules()
    # an SGLang backend name on a vLLM launch, and a name no table row knows: no match
    assert table.matches({"engine": "vllm", "moe_runner_backend": "flashinfer_mxfp4", "flags": {}, "env": {}}) == []
    assert table.matches({"engine": "sglang", "attention_backend": "warp_speed", "flags": {}, "env": {}}) == []
    # nccl rows apply to either engine
    hits = table.matches({"engine": "sglang", "flags": {}, "env": {"NCCL_NVLS_ENABLE": "1"}})
    assert [r.id for r, _ in hits] == ["nccl.env.nvls_enable"]


def test_env_switch_zero_does_not_match_and_handled_rows_are_hidden():
    table = load_rules()
    off = {"engine": "vllm", "flags": {}, "env": {"VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION": "0"}}
    assert table.matches(off) == []
    mnnvl = {"engine": "sglang", "flags": {}, "env": {"NCCL_MNNVL_ENABLE": "1"}}
    assert table.matches(mnnvl) == []
    assert [r.id for r, _ in table.matches(mnnvl, include_handled=True)] == ["nccl.env.mnnvl_enable"]


def test_mxfp4_backend_flag_without_a_parser_field_matches_raw_flags():
    table = load_rules()
    launch = {"engine": "vllm", "flags": {"--mxfp4-backend": "trtllm-mxfp8"}, "env": {}}
    assert [r.id for r, _ in table.matches(launch)] == ["vllm.mxfp4_backend.trtllm"]


# -- model resolution ------------------------------------------------------------------------
K3_CONFIG = {
    "architectures": ["KimiK3ForConditionalGeneration"],
    "model_type": "kimi_k3",
    "text_config": {
        "architectures": ["KimiLinearForCausalLM"],
        "model_type": "kimi_linear",
        "num_attention_heads": 96,
        "num_experts": 896,
        "linear_attn_config": {"head_dim": 128, "num_heads": 96},
        "quantization_config": {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized"},
    },
}


@pytest.mark.parametrize(
    "model",
    ["moonshotai/Kimi-K3", "moonshotai/kimi-k3", "/nfs/models/moonshotai/Kimi-K3/", "/data/Kimi-K3",
     "/root/.cache/huggingface/hub/models--moonshotai--Kimi-K3/snapshots/9f62e4e9"],
)
def test_known_model_ids_and_local_paths_resolve(model):
    info = resolve_model({"model": model}, None)
    assert (info.family, info.heads, info.experts, info.quant, info.source) == ("kimi-k3", 96, 896, "mxfp4", "table")


def test_config_json_wins_and_detects_compressed_tensors_mxfp4():
    info = resolve_model({"model": "/ckpt/k3-private"}, {"config": K3_CONFIG})
    assert (info.family, info.heads, info.experts, info.kda_heads) == ("kimi-k3", 96, 896, 96)
    assert info.quant == "mxfp4" and "mxfp4-pack-quantized" in (info.quant_detail or "")
    assert info.source == "config"
    gpt = {"model_type": "gpt_oss", "num_attention_heads": 64, "num_local_experts": 128,
           "quantization_config": {"quant_method": "mxfp4"}}
    info = resolve_model({"model": "/x/y"}, {"config": gpt})
    assert (info.family, info.experts, info.quant) == ("gpt-oss", 128, "mxfp4")


def test_unknown_model_resolves_to_nothing_and_mxfp4_reason():
    info = resolve_model({"model": "someone/some-dense-model"}, None)
    assert (info.family, info.heads, info.experts, info.source) == (None, None, None, "")
    assert mxfp4_reason({"model": "someone/x", "quantization": "mxfp4"}, info) == "--quantization mxfp4"
    assert mxfp4_reason({"model": "someone/x"}, info) is None
    k3 = resolve_model({"model": "moonshotai/Kimi-K3"}, None)
    assert mxfp4_reason({"quantization": "fp8"}, k3) is None
    assert "Kimi-K3" in (mxfp4_reason({}, k3) or "")


def test_checkpoint_scanner_summary_is_understood():
    """k3doctor.ckpt's ``model`` fact summarises config.json (no heads); its ``repo`` names the model."""
    summary = {"present": True, "error": None, "architecture": "KimiK3ForConditionalGeneration",
               "family": "kimi_k3", "model_type": "kimi_k3", "text_model_type": "kimi_linear",
               "quant_method": "compressed-tensors", "quant_format": "mxfp4-pack-quantized", "fp4": "mxfp4",
               "group_size": 32, "num_experts": 896}
    info = resolve_model({"model": "/models/private-copy"}, {"config": summary})
    assert (info.family, info.experts, info.heads, info.quant) == ("kimi-k3", 896, None, "mxfp4")
    info = resolve_model(None, {"repo": "moonshotai/Kimi-K3", "config": summary})
    assert (info.id, info.heads, info.source) == ("moonshotai/Kimi-K3", 96, "config+table")
    gpt = {"present": True, "family": "gpt_oss", "quant_method": "mxfp4", "quant_format": None, "fp4": "mxfp4",
           "num_experts": 128}
    assert resolve_model(None, {"config": gpt}).quant == "mxfp4"
    fp8 = {"present": True, "family": "deepseek_v3", "quant_method": "fp8", "fp4": None, "num_experts": 256}
    info = resolve_model(None, {"config": fp8})
    assert (info.family, info.quant) == ("deepseek-v3", "fp8")


def test_real_kimi_k3_config_json():
    """The released config.json (fixtures copy of ../shared/reference/kimi-k3-config.json)."""
    import json

    path = ROOT / "fixtures" / "checkpoints" / "kimi-k3-config.json"
    if not path.exists():
        pytest.skip("fixtures/checkpoints/kimi-k3-config.json not in this tree")
    config = json.loads(path.read_text(encoding="utf-8"))
    info = resolve_model({"model": "/nfs/ofs/model/some-name"}, {"config": config})
    assert (info.family, info.heads, info.experts, info.kda_heads, info.quant) == ("kimi-k3", 96, 896, 96, "mxfp4")
    assert "mxfp4-pack-quantized" in (info.quant_detail or "")
