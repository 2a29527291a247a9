"""Engine-log figures (weights, vLLM KV sizing) and `plan --engine-log` (synthetic log lines in the
engines' own formats; no real K3 engine log is public)."""

from __future__ import annotations

import io
import json

from click.testing import CliRunner

from k3doctor.commands.plan import command
from k3doctor.memory.logparse import measured_weight_gib, read_engine_log

GiB = 1 << 30
TP16 = ("-- vllm serve moonshotai/Kimi-K3 --trust-remote-code --tensor-parallel-size 16 --nnodes 2 "
        "--moe-backend marlin --gpu-memory-utilization 0.97 --max-model-len 65536").split()
VLLM_FAIL = (
    "(EngineCore_DP0 pid=411) INFO [gpu_model_runner.py:2653] Model loading took 129.10 GiB memory and 669.2 seconds\n"
    "(EngineCore_DP0 pid=411) INFO [gpu_worker.py:298] Available KV cache memory: 0.61 GiB\n"
    "(EngineCore_DP0 pid=412) INFO [gpu_worker.py:298] Available KV cache memory: 0.64 GiB\n"
    "(EngineCore_DP0 pid=411) ValueError: To serve at least one request with the model's max seq len (65536), "
    "(1.72 GiB KV cache is needed, which is larger than the available KV cache memory (0.61 GiB). Based on the "
    "available memory, the estimated maximum model length is 21888. Try increasing `gpu_memory_utilization`\n"
)


def test_vllm_failure_figures():
    fig = read_engine_log(io.StringIO(VLLM_FAIL))
    assert fig.engine == "vllm" and fig.weights_gib == 129.10
    assert fig.available_kv_gib == 0.61  # the smallest rank
    assert fig.needed_kv_gib == 1.72 and fig.max_model_len == 65536 and fig.estimated_max_model_len == 21888
    assert len(fig.lines) == 4 and not fig.empty


def test_vllm_success_and_no_memory_lines():
    ok = read_engine_log(["INFO GPU KV cache size: 2,401,536 tokens\n", "INFO GPU KV cache size: 2,400,768 tokens\n",
                          "INFO Available KV cache memory: 61.83 GiB\n"])
    assert ok.kv_cache_tokens == 2_400_768 and ok.available_kv_gib == 61.83 and ok.weights_gib is None
    assert ok.engine == "vllm"
    none = read_engine_log(["ValueError: No available memory for the cache blocks. Try increasing "
                            "`gpu_memory_utilization` when initializing the engine.\n"])
    assert none.available_kv_gib == 0.0


def test_sglang_lines_and_the_old_helper_agree():
    text = ("[TP0] Load weight begin. avail mem=139.30 GB\n"
            "[TP0] Load weight end. type=KimiK3ForConditionalGeneration, dtype=torch.bfloat16, "
            "avail mem=36.55 GB, mem usage=102.75 GB.\n"
            "[TP1] Load weight end. type=KimiK3ForConditionalGeneration, dtype=torch.bfloat16, "
            "avail mem=36.50 GB, mem usage=102.80 GB.\n")
    fig = read_engine_log(text.splitlines())
    assert (fig.weights_gib, fig.engine) == (102.80, "sglang")
    assert measured_weight_gib(text) == (102.80, "sglang")
    old = "[TP0] Load weight begin. avail mem=139.30 GB\n[TP0] Load weight end. type=X, avail mem=36.55 GB\n"
    assert measured_weight_gib(old) == (102.75, "sglang")


def test_garbage_and_huge_lines_are_harmless():
    fig = read_engine_log(["\x00\xff garbage\n", "x" * (1 << 20) + " Available KV cache memory: 1.00 GiB\n", ""])
    assert fig.available_kv_gib == 1.0
    assert read_engine_log(["nothing here\n"]).empty
    assert measured_weight_gib("nothing here") is None


def run(*args):
    return CliRunner().invoke(command, list(args), catch_exceptions=False)


def test_plan_engine_log_puts_the_gap_on_the_overhead(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(VLLM_FAIL)
    r = run("--gpu", "h200", "--engine-log", str(log), "--json", *TP16)
    assert r.exit_code == 1
    doc = json.loads(r.output)
    el = doc["engine_log"]
    assert el["measured_weights_bytes"] == round(129.10 * GiB)
    assert el["implied_overhead_bytes"] == doc["budget_bytes"] - el["measured_weights_bytes"] - round(0.61 * GiB)
    assert el["projected_overhead_bytes"] == doc["overhead_bytes"] > el["implied_overhead_bytes"]
    assert el["projected_available_kv_bytes"] == doc["kv_avail_bytes"] < 0 < el["measured_available_kv_bytes"]
    assert el["estimated_max_model_len"] == 21888 and el["max_model_len"] == 65536
    text = run("--gpu", "h200", "--engine-log", str(log), *TP16).output
    assert "engine log" in text and "vLLM charged 5.90 GiB besides weights" in text
    assert "the larger gap is in the profile-run overhead" in text


def test_plan_engine_log_with_only_kv_lines_uses_the_projected_weights(tmp_path):
    log = tmp_path / "kv.log"
    log.write_text("INFO Available KV cache memory: 2.00 GiB\n")
    doc = json.loads(run("--gpu", "h200", "--engine-log", str(log), "--json", *TP16).output)
    el = doc["engine_log"]
    assert "measured_weights_bytes" not in el
    assert el["implied_overhead_bytes"] == doc["budget_bytes"] - doc["max_rank_weights_bytes"] - 2 * GiB


def test_plan_engine_log_without_figures_is_a_usage_error(tmp_path):
    log = tmp_path / "empty.log"
    log.write_text("INFO starting\n")
    r = run("--gpu", "h200", "--engine-log", str(log), *TP16)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "empty.log" in r.output and "Available KV cache memory" in r.output
    r = run("--gpu", "h200", "--engine-log", str(tmp_path / "missing.log"), *TP16)
    assert r.exit_code == 2 and "cannot read" in r.output


def test_check_engine_log_feeds_mem005(tmp_path):
    from k3doctor.commands.check import command as check

    log = tmp_path / "sglang.log"
    log.write_text("[TP0] Load weight end. type=KimiK3ForConditionalGeneration, dtype=torch.bfloat16, "
                   "avail mem=8.10 GB, mem usage=130.02 GB.\n")
    launch = ("-- sglang serve --model-path moonshotai/Kimi-K3 --tp-size 16 --ep-size 16 --nnodes 2 "
              "--mem-fraction-static 0.85 --moe-runner-backend marlin").split()
    r = CliRunner().invoke(check, ["--target", "h200-141g", "--select", "MEM005", "--format", "json",
                                   "--engine-log", str(log), *launch], catch_exceptions=False)
    doc = json.loads(r.output)
    (f,) = [x for x in doc["findings"] if x["code"] == "MEM005"]
    assert "130.02 GiB" in f["message"] and r.exit_code == 0  # a warning, below the default --fail-on
    bad = tmp_path / "nothing.log"
    bad.write_text("INFO nothing\n")
    r = CliRunner().invoke(check, ["--target", "h200-141g", "--engine-log", str(bad), *launch])
    assert r.exit_code == 2 and "nothing.log" in r.output and "Traceback" not in r.output
