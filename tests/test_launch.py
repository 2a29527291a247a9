"""Launch-command parsing on the seed's commands and the published Kimi-K3 recipes."""

from __future__ import annotations

import pytest

from k3doctor.launch import LaunchError, parse_env_file, parse_launch

SGLANG_H200_BALANCED = """NCCL_MNNVL_ENABLE=1 NCCL_CUMEM_ENABLE=1 SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 \\
sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 \\
  --tp-size 16 --ep-size 16 --moe-runner-backend marlin --decode-attention-backend flashmla \\
  --enable-symm-mem --mem-fraction-static 0.85 \\
  --reasoning-parser kimi_k3 --tool-call-parser kimi_k3 --host 0.0.0.0 --port 30000 \\
  --nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.1:5000"""

SGLANG_H200_HT = (
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True SGLANG_K3_ATTN_RES_MODE=jit SGLANG_MOE_FUSED_GATE_RADIX=1 "
    "sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp-size 32 --ep-size 32 "
    "--moe-runner-backend marlin --decode-attention-backend flashmla --enable-symm-mem "
    "--mem-fraction-static 0.90 --mamba-radix-cache-strategy extra_buffer_lazy --dist-timeout 3600"
)

SGLANG_B300_BALANCED = ("sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp-size 8 "
                        "--mem-fraction-static 0.85 --reasoning-parser kimi_k3 --tool-call-parser kimi_k3 "
                        "--dcp-size 8")

SGLANG_LARGE_SCALE = (
    "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK=20480 python3 -m sglang.launch_server "
    "--model-path moonshotai/Kimi-K3 --tp-size 32 --ep-size 32 --enable-dp-attention --dp-size 4 "
    "--enable-dp-lm-head --moe-a2a-backend megamoe --moe-runner-backend deep_gemm --kv-cache-dtype fp8_e4m3 "
    "--mamba-ssm-dtype bfloat16 --mamba-radix-cache-strategy extra_buffer_lazy --mem-fraction-static 0.92"
)

SGLANG_PD_PREFILL_LONG = ("sglang serve --model-path moonshotai/Kimi-K3 --tp-size 1 --pp-size 8 "
                          "--mem-fraction-static 0.90 --weight-loader-prefetch-checkpoints")

VLLM_SEED = ("VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1 vllm serve moonshotai/Kimi-K3 --trust-remote-code "
             "--tensor-parallel-size 8 --pipeline-parallel-size 2 --load-format fastsafetensors "
             "--moe-backend marlin --gpu-memory-utilization 0.97 --max-model-len 65536")

VLLM_HOPPER = (
    "VLLM_ALLREDUCE_USE_FLASHINFER=1 VLLM_ENGINE_READY_TIMEOUT_S=3600 VLLM_USE_V2_MODEL_RUNNER=1 "
    "VLLM_USE_RUST_FRONTEND=1 vllm serve moonshotai/Kimi-K3 --trust-remote-code --load-format fastsafetensors "
    "--moe-backend auto --gpu-memory-utilization 0.95 --gpu-memory-utilization 0.97 --max-num-seqs 8 "
    "--max-cudagraph-capture-size 8 --max-model-len 32768 --moe-backend marlin --disable-custom-all-reduce"
)

VLLM_BLACKWELL = (
    "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1 python -m vllm.entrypoints.openai.api_server --model "
    "moonshotai/Kimi-K3 --trust-remote-code -tp 8 --no-enable-flashinfer-autotune --max-model-len 1048576 "
    "--kv-cache-dtype fp8 --attention-config '{\"use_prefill_query_quantization\":true}' --enable-prefix-caching "
    "--speculative-config '{\"model\":\"Inferact/Kimi-K3-DSpark\",\"num_speculative_tokens\":7,\"method\":\"dspark\"}'"
)


def test_sglang_h200_balanced_seed() -> None:
    spec = parse_launch(SGLANG_H200_BALANCED)
    assert spec.engine == "sglang" and spec.entry == "sglang serve"
    assert spec.model == "moonshotai/Kimi-K3"
    assert (spec.tp, spec.ep, spec.pp, spec.dp) == (16, 16, 1, 1)
    assert spec.moe_runner_backend == "marlin" and spec.decode_attention_backend == "flashmla"
    assert spec.mem_fraction == pytest.approx(0.85)
    assert spec.enable_symm_mem and spec.trust_remote_code
    assert (spec.nnodes, spec.node_rank) == (2, 1)
    assert (spec.head_host, spec.head_port) == ("10.0.0.1", 5000)
    assert spec.env_assignments == {"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1",
                                    "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0"}
    assert spec.unknown_flags == [] and spec.errors == []
    d = spec.to_dict()
    assert d["world_size"] == 16 and d["gpus_per_node"] == 8 and d["flags"]["--reasoning-parser"] == "kimi_k3"


def test_sglang_recipes() -> None:
    ht = parse_launch(SGLANG_H200_HT)
    assert (ht.tp, ht.ep, ht.mem_fraction, ht.dist_timeout) == (32, 32, 0.90, 3600)
    assert ht.env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    b300 = parse_launch(SGLANG_B300_BALANCED)
    assert (b300.tp, b300.dcp) == (8, 8) and b300.unknown_flags == []
    big = parse_launch(SGLANG_LARGE_SCALE)
    assert big.entry == "python -m sglang.launch_server"
    assert big.enable_dp_attention and big.dp == 4 and big.attention_tp == 8 and big.world_size == 32
    assert big.moe_a2a_backend == "megamoe" and big.moe_runner_backend == "deep_gemm"
    assert big.kv_cache_dtype == "fp8_e4m3" and big.mamba_ssm_dtype == "bfloat16"
    pd = parse_launch(SGLANG_PD_PREFILL_LONG)
    assert (pd.tp, pd.pp, pd.world_size) == (1, 8, 8)
    assert pd.flags["--weight-loader-prefetch-checkpoints"] is True


def test_vllm_seed_and_recipes() -> None:
    seed = parse_launch(VLLM_SEED)
    assert seed.engine == "vllm" and seed.model == "moonshotai/Kimi-K3"
    assert (seed.tp, seed.pp, seed.world_size) == (8, 2, 16)
    assert seed.load_format == "fastsafetensors" and seed.moe_runner_backend == "marlin"
    assert seed.mem_fraction == pytest.approx(0.97) and seed.context_length == 65536
    assert seed.env["VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"] == "1"
    hopper = parse_launch(VLLM_HOPPER)
    # the later of two identical flags wins, like argparse
    assert hopper.mem_fraction == pytest.approx(0.97) and hopper.moe_runner_backend == "marlin"
    assert hopper.cuda_graph_max_bs == 8 and hopper.max_running_requests == 8 and hopper.context_length == 32768
    assert hopper.unknown_flags == []
    bw = parse_launch(VLLM_BLACKWELL)
    assert bw.entry == "python -m vllm.entrypoints.openai.api_server" and bw.tp == 8
    assert bw.kv_cache_dtype == "fp8" and bw.context_length == 1048576
    assert "dspark" in (bw.speculative_config or "")
    assert bw.flags["--attention-config"] == '{"use_prefill_query_quantization":true}'


def test_aliases_short_and_long() -> None:
    for flag in ("--tp", "--tp-size", "--tensor-parallel-size"):
        assert parse_launch(f"sglang serve --model-path m {flag} 4").tp == 4
    for flag in ("-tp", "--tensor-parallel-size"):
        assert parse_launch(f"vllm serve m {flag} 4").tp == 4
    assert parse_launch("vllm serve m --tensor-parallel-size=2").tp == 2
    spec = parse_launch("vllm serve m -tp 4 -dp 2 --enable-expert-parallel")
    assert spec.to_dict()["ep"] == 8


def test_unknown_and_malformed_are_kept_not_fatal() -> None:
    spec = parse_launch("sglang serve --model-path m --tp sixteen --frobnicate 3 --new-bool --mem-fraction-static 1.5")
    assert spec.tp == 1
    assert any("--tp 'sixteen'" in e for e in spec.errors)
    assert any("--mem-fraction-static" in e for e in spec.errors)
    assert spec.unknown_flags == ["--frobnicate", "--new-bool"]
    assert spec.flags["--frobnicate"] == "3" and spec.flags["--new-bool"] is True


def test_conflicting_aliases_reported() -> None:
    spec = parse_launch("sglang serve --model-path m --tp 8 --tensor-parallel-size 16")
    assert any("both set tp" in e for e in spec.errors)


def test_env_file_and_process_env_precedence(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env_file = tmp_path / "env.sh"
    env_file.write_text("# comment\nexport NCCL_SOCKET_IFNAME=eth0\nGLOO_SOCKET_IFNAME='eth 0'\nexport A=file\n")
    spec = parse_launch(["A=line", "sglang", "serve", "--model-path", "m"], env_file=str(env_file),
                        process_env={"A": "process", "HOME": "/home/u", "NCCL_SOCKET_IFNAME": "ib0"})
    assert spec.env["A"] == "line"
    assert spec.env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert spec.env["GLOO_SOCKET_IFNAME"] == "eth 0"
    assert spec.env["HOME"] == "/home/u"
    assert "HOME" not in spec.env_assignments
    assert parse_env_file(env_file)["A"] == "file"


@pytest.mark.parametrize(
    "cmd, fragment",
    [
        ("", "empty"),
        ("A=1 B=2", "empty"),
        ("foo serve --x", "not an engine launch"),
        ("python -m mypkg.server", "not an engine"),
        ("sglang launch --x", "understands `sglang serve"),
        ("vllm serve 'unterminated", "quoting"),
    ],
)
def test_launch_errors(cmd: str, fragment: str) -> None:
    with pytest.raises(LaunchError, match=fragment):
        parse_launch(cmd)


def test_env_file_unreadable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LaunchError, match="cannot read"):
        parse_launch("sglang serve --model-path m", env_file=str(tmp_path / "missing.sh"))


def test_ipv6_and_portless_addresses() -> None:
    assert parse_launch("sglang serve --model-path m --dist-init-addr [fe80::1]:5000").head_port == 5000
    v6 = parse_launch("sglang serve --model-path m --dist-init-addr [fe80::1]:5000")
    assert v6.head_host == "fe80::1"
    bare = parse_launch("sglang serve --model-path m --dist-init-addr head-node")
    assert (bare.head_host, bare.head_port) == ("head-node", None)
    assert parse_launch("vllm serve m --master-addr 10.1.1.1 --master-port 29500").head_port == 29500
