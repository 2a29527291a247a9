"""ARCH001–ARCH007 on launch facts from the lead's parser and gpu facts from targets or by hand.

The launch commands are the seed story's (DEVELOPERS.md) and the Kimi-K3 recipes'
(../shared/reference/kimi-k3.md §5), verbatim.
"""

from __future__ import annotations

import inspect

import pytest

from k3doctor.check import call_run
from k3doctor.check import Check
from k3doctor.checks import arch
from k3doctor.checks.arch import ARCH001, ARCH002, ARCH003, ARCH004, ARCH005, ARCH006, ARCH007, CHECKS
from k3doctor.facts import Facts
from k3doctor.launch import parse_launch
from k3doctor.model import Severity, Skip
from k3doctor.targets import get_target, gpu_fact_for_target

SEED_SGLANG = """NCCL_MNNVL_ENABLE=1 NCCL_CUMEM_ENABLE=1 SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 \\
sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 \\
  --tp-size 16 --ep-size 16 --moe-runner-backend marlin --decode-attention-backend flashmla \\
  --enable-symm-mem --mem-fraction-static 0.85 \\
  --reasoning-parser kimi_k3 --tool-call-parser kimi_k3 --host 0.0.0.0 --port 30000 \\
  --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:5000"""

SEED_VLLM = """VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1 vllm serve moonshotai/Kimi-K3 --trust-remote-code \\
  --tensor-parallel-size 8 --pipeline-parallel-size 2 --load-format fastsafetensors \\
  --moe-backend marlin --gpu-memory-utilization 0.97 --max-model-len 65536"""

# kimi-k3.md §5.1: B300 / Unified / Low-Latency (verified cell) and the large-scale Blackwell preset
B300_LOW_LATENCY = ("sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp-size 8 "
                    "--mem-fraction-static 0.85 --reasoning-parser kimi_k3 --tool-call-parser kimi_k3")
LARGE_SCALE_BLACKWELL = (
    "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK=20480 sglang serve --trust-remote-code "
    "--model-path moonshotai/Kimi-K3 --tp-size 32 --ep-size 32 --enable-dp-attention --dp-size 4 "
    "--enable-dp-lm-head --moe-a2a-backend megamoe --moe-runner-backend deep_gemm --kv-cache-dtype fp8_e4m3 "
    "--mamba-ssm-dtype bfloat16 --mamba-radix-cache-strategy extra_buffer_lazy --mem-fraction-static 0.92 "
    "--nnodes 4 --node-rank 0 --dist-init-addr 10.0.0.1:5000"
)
# kimi-k3.md §5.2: vLLM recipe base args + Hopper override / Blackwell override
VLLM_HOPPER_RECIPE = (
    "VLLM_ALLREDUCE_USE_FLASHINFER=1 VLLM_ENGINE_READY_TIMEOUT_S=3600 VLLM_USE_V2_MODEL_RUNNER=1 "
    "VLLM_USE_RUST_FRONTEND=1 vllm serve moonshotai/Kimi-K3 --trust-remote-code --load-format fastsafetensors "
    "--moe-backend auto --gpu-memory-utilization 0.95 --gpu-memory-utilization 0.97 --max-num-seqs 8 "
    "--max-cudagraph-capture-size 8 --max-model-len 32768 --moe-backend marlin --disable-custom-all-reduce "
    "--tensor-parallel-size 16 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1"
)
VLLM_BLACKWELL_RECIPE = (
    "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1 vllm serve moonshotai/Kimi-K3 --trust-remote-code "
    "--load-format fastsafetensors --moe-backend auto --gpu-memory-utilization 0.95 "
    "--no-enable-flashinfer-autotune --max-model-len 1048576 --kv-cache-dtype fp8 "
    "--attention-config '{\"use_prefill_query_quantization\":true}' --enable-prefix-caching "
    "--tensor-parallel-size 8"
)


def launch(cmd: str) -> dict:
    return parse_launch(cmd).to_dict()


def target(name: str, count: int | None = None) -> dict:
    return gpu_fact_for_target(get_target(name), count)


def nvml_gpu(name: str, cc: list[int], n: int = 8, fabric: dict | None = None, domain: str | None = None) -> dict:
    """A gpu fact shaped like the NVML probe's (DEVELOPERS.md schema)."""
    return {
        "ok": True, "error": None, "source": "nvml",
        "devices": [{"index": i, "name": name, "cc": cc, "fabric": fabric, "nvlink_domain": domain} for i in range(n)],
    }


def run(check: type[Check], **facts) -> list:
    return list(call_run(check(), Facts(facts)))


def codes(findings) -> list[tuple[str, str]]:
    return [(f.code, f.severity.label) for f in findings]


# -- meta ------------------------------------------------------------------------------------
def test_every_check_has_title_and_the_three_doc_sections():
    assert [c.code for c in CHECKS] == [f"ARCH00{i}" for i in range(1, 8)]
    for check in CHECKS:
        assert check.title() and not check.title().endswith(".")
        for heading in ("## What it checks", "## Why it matters", "## How to fix"):
            assert heading in check.doc(), (check.code, heading)
        assert "print(" not in inspect.getsource(check)


# -- ARCH001 ---------------------------------------------------------------------------------
def test_seed_vllm_tail_fusion_on_h200_quotes_vllm_and_says_unset():
    findings = run(ARCH001, launch=launch(SEED_VLLM), gpu=target("h200"))
    assert codes(findings) == [("ARCH001", "error")]
    f = findings[0]
    assert "“K3 latent-MoE tail fusion requires SM100.”" in f.message
    assert "unset VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION (or set it to 0) on Hopper" in f.fix
    assert f.evidence["cc"] == "9.0"
    assert f.evidence["rule"] == "vllm.env.k3_latent_moe_tail_fusion"
    assert f.evidence["gpus"] == 8 and f.subject == "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1"


def test_tail_fusion_fine_on_blackwell_tp8_but_not_tp4():
    assert run(ARCH001, launch=launch(SEED_VLLM), gpu=target("b200")) == []
    assert run(ARCH001, launch=launch(VLLM_BLACKWELL_RECIPE), gpu=target("b300")) == []
    tp4 = launch(SEED_VLLM.replace("--tensor-parallel-size 8", "--tensor-parallel-size 4"))
    findings = run(ARCH001, launch=tp4, gpu=target("b200"))
    assert codes(findings) == [("ARCH001", "error")]
    assert "“K3 latent-MoE tail fusion requires TP in (8, 16), got 4.”" in findings[0].message
    assert findings[0].evidence["tp"] == 4
    assert "use --tensor-parallel-size 8 or 16, or unset VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION" in findings[0].fix
    # on Hopper with TP 4 both conditions fail: two findings
    assert len(run(ARCH001, launch=tp4, gpu=target("h100"))) == 2


def test_tail_fusion_ignored_for_another_model_family():
    other = launch(SEED_VLLM.replace("moonshotai/Kimi-K3", "deepseek-ai/DeepSeek-V3"))
    assert run(ARCH001, launch=other, gpu=target("h200")) == []


def test_vllm_blackwell_recipe_on_hopper_is_flagged_and_hopper_recipe_is_clean():
    assert [f.evidence["item"] for f in run(ARCH001, launch=launch(VLLM_BLACKWELL_RECIPE), gpu=target("h200"))] == [
        "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"]
    assert run(ARCH001, launch=launch(VLLM_HOPPER_RECIPE), gpu=target("h200")) == []


def test_seed_sglang_is_clean_on_h200_and_flashmla_is_flagged_on_b200():
    assert run(ARCH001, launch=launch(SEED_SGLANG), gpu=target("h200")) == []
    findings = run(ARCH001, launch=launch(SEED_SGLANG), gpu=target("b200"))
    assert codes(findings) == [("ARCH001", "error")]
    assert findings[0].subject == "--decode-attention-backend=flashmla"
    assert findings[0].evidence["cc"] == "10.0"
    assert "trtllm_mla" in findings[0].fix


@pytest.mark.parametrize(
    "flags, rule_id, quoted",
    [
        ("--decode-attention-backend cutlass_mla", "sglang.attention.cutlass_mla", None),
        ("--attention-backend trtllm_mla", "sglang.attention.trtllm_mla",
         "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a different backend."),
        ("--prefill-attention-backend fa4", "sglang.attention.fa4", None),
        ("--moe-runner-backend flashinfer_trtllm", "sglang.moe.flashinfer_trtllm", None),
        ("--moe-runner-backend flashinfer_trtllm_routed", "sglang.moe.flashinfer_trtllm_routed", None),
        ("--moe-a2a-backend megamoe", "sglang.a2a.megamoe", None),
        ("--quantization modelopt_fp4", "sglang.quantization.modelopt_fp4", None),
    ],
)
def test_sglang_blackwell_only_backends_on_h200(flags, rule_id, quoted):
    cmd = f"sglang serve --model-path moonshotai/Kimi-K3 --tp-size 8 {flags}"
    findings = run(ARCH001, launch=launch(cmd), gpu=target("h200"))
    assert [f.evidence["rule"] for f in findings] == [rule_id]
    assert findings[0].severity is Severity.ERROR and findings[0].fix
    if quoted:
        assert f"SGLang raises: “{quoted}”" in findings[0].message
    else:
        assert "SGLang fails:" in findings[0].message
    assert run(ARCH001, launch=launch(cmd), gpu=target("b200")) == []


@pytest.mark.parametrize(
    "cmd_env, cmd_flags",
    [("", "--attention-backend CUTLASS_MLA"), ("VLLM_ATTENTION_BACKEND=CUTLASS_MLA ", "")],
)
def test_vllm_cutlass_mla_by_flag_or_env(cmd_env, cmd_flags):
    cmd = f"{cmd_env}vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 {cmd_flags}"
    findings = run(ARCH001, launch=launch(cmd), gpu=target("h100"))
    assert [f.evidence["rule"] for f in findings] == ["vllm.attention.cutlass_mla"]
    assert ("Reason: ['compute capability not supported']") in findings[0].message


def test_vllm_mxfp8_switches_only_when_on():
    on = launch("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 vllm serve openai/gpt-oss-120b")
    off = launch("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=0 vllm serve openai/gpt-oss-120b")
    findings = run(ARCH001, launch=on, gpu=target("h200"))
    assert [f.evidence["rule"] for f in findings] == ["vllm.env.flashinfer_moe_mxfp4_mxfp8"]
    assert "unset VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8" in findings[0].fix
    assert run(ARCH001, launch=off, gpu=target("h200")) == []
    cutlass = launch("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8_CUTLASS=1 vllm serve openai/gpt-oss-120b")
    assert codes(run(ARCH001, launch=cutlass, gpu=target("h200"))) == [("ARCH001", "error")]


FI_MXFP4 = "sglang serve --model-path openai/gpt-oss-120b --tp-size 8 --moe-runner-backend flashinfer_mxfp4"


def test_flashinfer_mxfp4_on_hopper_reads_the_flashinfer_version():
    old = run(ARCH001, launch=launch(FI_MXFP4), gpu=target("h200"), packages={"flashinfer-python": "0.6.10"})
    assert codes(old) == [("ARCH001", "error")]
    assert "installed 0.6.10" in old[0].message and old[0].evidence["package_version"] == "0.6.10"
    assert "FlashInfer PR #3084 (>= 0.6.11)" in old[0].message
    assert run(ARCH001, launch=launch(FI_MXFP4), gpu=target("h200"), packages={"flashinfer-python": "0.6.11"}) == []
    unknown = run(ARCH001, launch=launch(FI_MXFP4), gpu=target("h200"))
    assert codes(unknown) == [("ARCH001", "warning")]
    assert "version is unknown" in unknown[0].message and unknown[0].evidence["package_version"] is None
    assert run(ARCH001, launch=launch(FI_MXFP4), gpu=target("b200")) == []
    a100 = run(ARCH001, launch=launch(FI_MXFP4), gpu=target("a100"), packages={"flashinfer-python": "0.7.0"})
    assert codes(a100) == [("ARCH001", "error")] and a100[0].evidence["cc"] == "8.0"


def test_soft_major_gives_a_warning():
    cmd = "sglang serve --model-path Qwen/Qwen3-235B-A22B --tp-size 8 --attention-backend trtllm_mha"
    assert codes(run(ARCH001, launch=launch(cmd), gpu=target("h200"))) == [("ARCH001", "warning")]
    assert codes(run(ARCH001, launch=launch(cmd), gpu=target("a100"))) == [("ARCH001", "error")]


def test_mixed_gpus_report_only_the_failing_group():
    gpu = {"ok": True, "source": "nvml", "devices": [
        {"name": "NVIDIA H200", "cc": [9, 0]}, {"name": "NVIDIA B200", "cc": [10, 0]}, {"name": "NVIDIA B200", "cc": [10, 0]}]}
    cmd = "sglang serve --model-path moonshotai/Kimi-K3 --decode-attention-backend cutlass_mla"
    findings = run(ARCH001, launch=launch(cmd), gpu=gpu)
    assert [(f.evidence["cc"], f.evidence["gpus"]) for f in findings] == [("9.0", 1)]
    assert "this node has 1× NVIDIA H200 (SM 9.0)" in findings[0].message


def test_nccl_rows_apply_to_either_engine():
    cmd = "NCCL_NVLS_ENABLE=1 sglang serve --model-path Qwen/Qwen3-235B-A22B --tp-size 8"
    findings = run(ARCH001, launch=launch(cmd), gpu=target("a100"))
    assert codes(findings) == [("ARCH001", "warning")]
    assert "NCCL fails:" in findings[0].message and findings[0].evidence["rule"] == "nccl.env.nvls_enable"
    assert run(ARCH001, launch=launch(cmd), gpu=target("h200")) == []


def test_unknown_names_say_nothing_and_no_gpu_means_skip():
    cmd = "sglang serve --model-path moonshotai/Kimi-K3 --attention-backend warp_drive --moe-runner-backend nope"
    assert run(ARCH001, launch=launch(cmd), gpu=target("h200")) == []
    with pytest.raises(Skip, match="NVML"):
        run(ARCH001, launch=launch(cmd), gpu={"ok": False, "error": "NVML: driver not loaded", "devices": []})
    with pytest.raises(Skip):
        run(ARCH001, launch=launch(cmd))


# -- ARCH002 ---------------------------------------------------------------------------------
def test_k3_on_hopper_is_marlin_w4a16_info_with_speed_numbers():
    findings = run(ARCH002, launch=launch(SEED_SGLANG), gpu=target("h200"))
    assert codes(findings) == [("ARCH002", "info")]
    f = findings[0]
    assert "W4A16" in f.message and "Marlin" in f.message
    assert f.evidence["bf16_dense_tflops"] == 989 and f.evidence["b200_fp4_dense_tflops"] == 9000
    assert f.evidence["cc"] == "9.0" and f.evidence["moe_backend"] == "marlin"
    assert "(`--moe-runner-backend marlin`, as launched)" in f.message
    assert run(ARCH002, launch=launch(SEED_SGLANG), gpu=target("b200")) == []


@pytest.mark.parametrize(
    "cmd, model_fact, expect",
    [
        ("vllm serve openai/gpt-oss-120b", None, True),
        ("vllm serve openai/gpt-oss-20b --quantization mxfp4", None, True),
        ("vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8", None, False),
        ("vllm serve /ckpt/private", {"config": {"quantization_config": {"quant_method": "mxfp4"}}}, True),
        ("vllm serve /ckpt/private", {"config": {"quantization_config": {"quant_method": "fp8"}}}, False),
        ("sglang serve --model-path moonshotai/Kimi-K3 --quantization fp8", None, False),
    ],
)
def test_mxfp4_detection(cmd, model_fact, expect):
    facts = {"launch": launch(cmd), "gpu": target("h100")}
    if model_fact is not None:
        facts["model"] = model_fact
    assert bool(run(ARCH002, **facts)) is expect


def test_arch002_works_from_a_model_fact_alone_and_skips_without_either():
    k3 = {"config": {"model_type": "kimi_k3", "text_config": {"quantization_config": {
        "quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized"}}}}
    findings = run(ARCH002, model=k3, gpu=target("a100"))
    assert codes(findings) == [("ARCH002", "info")] and findings[0].evidence["bf16_dense_tflops"] == 312
    assert "mxfp4-pack-quantized" in findings[0].evidence["mxfp4_from"]
    with pytest.raises(Skip):
        run(ARCH002, gpu=target("h200"))


# -- ARCH003 ---------------------------------------------------------------------------------
def test_seed_vllm_pp_on_hopper_quotes_cp_world_size_crash():
    findings = run(ARCH003, launch=launch(SEED_VLLM), gpu=target("h200"))
    assert codes(findings) == [("ARCH003", "error")]
    f = findings[0]
    assert ("cp_world_size must be positive, required by downstream unified code path. "
            "Use 1 if CP is not enabled.") in f.message
    assert "vllm-project/recipes#698" in f.message
    assert "--tensor-parallel-size 16" in f.fix and "--enforce-eager" in f.fix and "#50625" in f.fix
    assert (f.evidence["pp"], f.evidence["tp"], f.evidence["cc"]) == (2, 8, "9.0")


@pytest.mark.parametrize(
    "cmd, gpu",
    [
        (SEED_VLLM + " --enforce-eager", "h200"),
        (SEED_VLLM, "b200"),
        (SEED_VLLM.replace("--pipeline-parallel-size 2", "--pipeline-parallel-size 1"), "h200"),
        (SEED_VLLM.replace("moonshotai/Kimi-K3", "deepseek-ai/DeepSeek-V3"), "h200"),
        ("sglang serve --model-path moonshotai/Kimi-K3 --tp-size 8 --pp-size 2", "h200"),
    ],
)
def test_arch003_quiet_cases(cmd, gpu):
    assert run(ARCH003, launch=launch(cmd), gpu=target(gpu)) == []


def test_arch003_without_gpu_facts_warns():
    assert codes(run(ARCH003, launch=launch(SEED_VLLM))) == [("ARCH003", "warning")]


# -- ARCH004 ---------------------------------------------------------------------------------
def test_seed_sglang_mnnvl_on_hgx_h200_warns_with_fix():
    findings = run(ARCH004, launch=launch(SEED_SGLANG), gpu=target("h200"))
    assert codes(findings) == [("ARCH004", "warning")]
    assert "unset NCCL_MNNVL_ENABLE" in findings[0].fix
    assert findings[0].evidence["multi_node"] is True


def test_mnnvl_fatal_on_nccl_2_21_to_2_24():
    findings = run(ARCH004, launch=launch(SEED_SGLANG), gpu=target("h200"), packages={"nvidia-nccl-cu12": "2.21.5"})
    assert codes(findings) == [("ARCH004", "error")]
    assert "NCCL 2.21.5 fails with “MNNVL is not supported on this system”" in findings[0].message
    newer = run(ARCH004, launch=launch(SEED_SGLANG), gpu=target("h200"), packages={"nvidia-nccl-cu12": "2.27.3"})
    assert codes(newer) == [("ARCH004", "warning")]


def test_mnnvl_fine_on_gb200_and_in_a_multi_node_domain():
    assert run(ARCH004, launch=launch(SEED_SGLANG), gpu=target("gb200")) == []
    done = nvml_gpu("NVIDIA Blackwell", [10, 0], fabric={"state": "COMPLETED", "status": 0}, domain="multi-node")
    assert run(ARCH004, launch=launch(SEED_SGLANG), gpu=done) == []


def test_hgx_h200_fabric_completed_is_not_multi_node_nvlink():
    # what the NVML probe reads on an 8× H200 HGX node: in-node NVSwitch fabric, domain "node"
    hgx = nvml_gpu("NVIDIA H200", [9, 0], fabric={"state": "COMPLETED", "status": 0}, domain="node")
    findings = run(ARCH004, launch=launch(SEED_SGLANG), gpu=hgx)
    assert codes(findings) == [("ARCH004", "warning")]
    assert findings[0].evidence["fabric_state"] == "completed" and findings[0].evidence["nvlink_domain"] == "node"


def test_mnnvl_gb200_fabric_not_ready_is_an_error():
    gpu = nvml_gpu("NVIDIA GB200", [10, 0], n=4, fabric={"state": "IN_PROGRESS", "status": 0}, domain="multi-node")
    findings = run(ARCH004, launch=launch(SEED_SGLANG), gpu=gpu)
    assert codes(findings) == [("ARCH004", "error")]
    assert findings[0].evidence["fabric_state"] == "in_progress"
    assert "nvidia-imex" in findings[0].fix


def test_mnnvl_off_or_absent_is_quiet_and_env_fact_is_used_without_launch():
    off = SEED_SGLANG.replace("NCCL_MNNVL_ENABLE=1", "NCCL_MNNVL_ENABLE=0")
    assert run(ARCH004, launch=launch(off), gpu=target("h200")) == []
    assert run(ARCH004, launch=launch(SEED_VLLM), gpu=target("h200")) == []
    assert codes(run(ARCH004, env={"NCCL_MNNVL_ENABLE": "1"}, gpu=nvml_gpu("NVIDIA H200", [9, 0]))) == [
        ("ARCH004", "warning")]
    with pytest.raises(Skip):
        run(ARCH004, gpu=target("h200"))


# -- ARCH005 ---------------------------------------------------------------------------------
def test_seed_sglang_plan_divides_on_two_8_gpu_nodes():
    assert run(ARCH005, launch=launch(SEED_SGLANG), gpu=target("h200")) == []


def test_seed_vllm_without_nnodes_or_ray_quotes_world_size_error():
    findings = run(ARCH005, launch=launch(SEED_VLLM), gpu=target("h200"))
    assert codes(findings) == [("ARCH005", "error")]
    assert "World size (16) is larger than the number of available GPUs (8) in this node." in findings[0].message
    assert "--nnodes 2" in findings[0].fix
    assert run(ARCH005, launch=launch(SEED_VLLM + " --nnodes 2 --node-rank 0 --master-addr 10.0.0.1"),
               gpu=target("h200")) == []
    assert run(ARCH005, launch=launch(SEED_VLLM + " --distributed-executor-backend ray"), gpu=target("h200")) == []


def test_heads_not_divisible_by_attention_tp():
    vllm = run(ARCH005, launch=launch("vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 64 --nnodes 8"),
               gpu=target("h200"))
    assert [f.subject for f in vllm] == ["heads=96 attention_tp=64"]
    assert "“Total number of attention heads (96) must be divisible by tensor parallel size (64).”" in vllm[0].message
    assert "[1, 2, 4, 8, 16, 32]" in vllm[0].fix
    sgl = run(ARCH005, launch=launch("sglang serve --model-path deepseek-ai/DeepSeek-V3 --tp-size 24 --nnodes 3"),
              gpu=target("h200"))
    assert "heads=128 attention_tp=24" in [f.subject for f in sgl]


def test_heads_from_config_json_beat_the_table():
    cfg = {"config": {"num_attention_heads": 40, "num_experts": 64}}
    findings = run(ARCH005, launch=launch("vllm serve /ckpt/odd --tensor-parallel-size 16 --nnodes 2"),
                   gpu=target("h200"), model=cfg)
    assert [f.evidence["heads"] for f in findings] == [40]
    assert findings[0].evidence["heads_from"] == "config"


def test_experts_not_divisible_by_ep_and_tp_ep_relation():
    sgl = run(ARCH005, launch=launch("sglang serve --model-path moonshotai/Kimi-K3 --tp-size 16 --ep-size 32 "
                                     "--nnodes 2"), gpu=target("h200"))
    assert [f.subject for f in sgl] == ["tp=16 ep=32"]
    assert "“tp_size must be divisible by ep_size”" in sgl[0].message
    ds = run(ARCH005, launch=launch("sglang serve --model-path deepseek-ai/DeepSeek-V3 --tp-size 24 --ep-size 24 "
                                    "--nnodes 3"), gpu=target("h200"))
    assert "experts=256 ep=24" in [f.subject for f in ds]


def test_vllm_k3_megamoe_expert_divisibility_is_verbatim_and_plain_ep_is_not_flagged():
    mega = ("vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --data-parallel-size 3 "
            "--enable-expert-parallel --moe-backend deep_gemm_mega_moe --nnodes 3")
    findings = run(ARCH005, launch=launch(mega), gpu=target("b200"))
    assert [f.subject for f in findings] == ["experts=896 ep=24"]
    assert "“Kimi K3 num_experts=896 must be divisible by EP size 24.”" in findings[0].message
    plain = mega.replace(" --moe-backend deep_gemm_mega_moe", "")
    assert run(ARCH005, launch=launch(plain), gpu=target("b200")) == []


def test_dp_attention_tp_not_divisible_by_dp():
    cmd = "sglang serve --model-path moonshotai/Kimi-K3 --tp-size 16 --dp-size 3 --enable-dp-attention --nnodes 2"
    findings = run(ARCH005, launch=launch(cmd), gpu=target("h200"))
    assert "tp=16 dp=3 dp_attention" in [f.subject for f in findings]


def test_gpus_per_node_short_uneven_and_idle():
    short = run(ARCH005, launch=launch(SEED_SGLANG), gpu=target("h200", 4))
    assert [f.subject for f in short] == ["gpus_per_node=8 available=4"]
    assert "--nnodes 4" in short[0].fix
    uneven = run(ARCH005, launch=launch("sglang serve --model-path moonshotai/Kimi-K3 --tp-size 8 --nnodes 3"),
                 gpu=target("h200"))
    assert [f.subject for f in uneven] == ["world_size=8 nnodes=3"]
    idle = run(ARCH005, launch=launch(B300_LOW_LATENCY.replace("--tp-size 8", "--tp-size 4")), gpu=target("b300"))
    assert codes(idle) == [("ARCH005", "info")]


def test_recipes_from_kimi_k3_md_divide():
    assert run(ARCH005, launch=launch(B300_LOW_LATENCY), gpu=target("b300")) == []
    assert run(ARCH005, launch=launch(LARGE_SCALE_BLACKWELL), gpu=target("b200")) == []
    assert run(ARCH005, launch=launch(VLLM_HOPPER_RECIPE), gpu=target("h200")) == []


# -- ARCH006 ---------------------------------------------------------------------------------
def test_megamoe_needs_expert_parallel():
    cmd = "vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --moe-backend deep_gemm_mega_moe"
    findings = run(ARCH006, launch=launch(cmd))
    assert codes(findings) == [("ARCH006", "error")]
    assert "Kimi K3 MegaMoE requires expert parallel. Enable it with --enable-expert-parallel." in findings[0].message
    assert run(ARCH006, launch=launch(cmd + " --enable-expert-parallel")) == []
    assert run(ARCH006, launch=launch(SEED_VLLM)) == []


# -- ARCH007 ---------------------------------------------------------------------------------
def test_k3_fused_kda_decode_local_heads():
    tp16 = run(ARCH007, launch=launch(VLLM_HOPPER_RECIPE), gpu=target("h200"))
    assert codes(tp16) == [("ARCH007", "info")]
    assert tp16[0].evidence["local_heads"] == 6 and "[1, 2, 4, 8]" in tp16[0].fix
    assert run(ARCH007, launch=launch(SEED_VLLM), gpu=target("h200")) == []  # TP8 → 12 local heads
    assert run(ARCH007, launch=launch(SEED_SGLANG), gpu=target("h200")) == []  # TP16 → 6 on SGLang: fused
    assert run(ARCH007, launch=launch(LARGE_SCALE_BLACKWELL), gpu=target("b200")) == []  # attn-TP 8
    sgl_tp4 = run(ARCH007, launch=launch("sglang serve --model-path moonshotai/Kimi-K3 --tp-size 4"),
                  gpu=target("h200"))
    assert [f.evidence["local_heads"] for f in sgl_tp4] == [24]


def test_flashkda_needs_hopper_or_newer_and_other_models_are_ignored():
    findings = run(ARCH007, launch=launch(SEED_VLLM), gpu=target("a100"))
    assert [f.subject for f in findings] == ["flashkda cc=8.0"]
    assert arch.FLASHKDA_ERROR in findings[0].message
    assert run(ARCH007, launch=launch("vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 16"),
               gpu=target("a100")) == []


# -- the seed deployment end to end ----------------------------------------------------------
def test_seed_story_on_h200_finds_what_the_story_says():
    """vLLM variant: tail fusion (ARCH001), PP crash (ARCH003); SGLang: MNNVL (ARCH004); both MXFP4 info."""
    def all_codes(cmd: str) -> set[tuple[str, str]]:
        facts = Facts({"launch": launch(cmd), "gpu": target("h200"), "packages": {"flashinfer-python": "0.6.8"}})
        out = set()
        for check in CHECKS:
            try:
                out.update(codes(call_run(check(), facts)))
            except Skip:
                pass
        return out

    assert all_codes(SEED_VLLM) == {("ARCH001", "error"), ("ARCH002", "info"), ("ARCH003", "error"),
                                    ("ARCH005", "error")}
    assert all_codes(SEED_SGLANG) == {("ARCH002", "info"), ("ARCH004", "warning")}


def test_recorded_hgx_h200_snapshot_gpu_fact():
    """The 8× H200 HGX node snapshot in fixtures/ (NVML shape: fabric COMPLETED, domain "node")."""
    from pathlib import Path

    from k3doctor.facts import load_snapshot

    path = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots" / "h200x8-hgx-node0.json"
    if not path.exists():
        pytest.skip("fixtures/snapshots/h200x8-hgx-node0.json not in this tree")
    gpu = load_snapshot(path)["facts"]["gpu"]
    assert [f.evidence["cc"] for f in run(ARCH001, launch=launch(SEED_VLLM), gpu=gpu)] == ["9.0"]
    assert codes(run(ARCH004, launch=launch(SEED_SGLANG), gpu=gpu)) == [("ARCH004", "warning")]
    assert run(ARCH005, launch=launch(SEED_SGLANG), gpu=gpu) == []
