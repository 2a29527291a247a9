"""`k3doctor plan` through click's CliRunner (no GPU)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from k3doctor.commands.plan import command

SEED_SGLANG = ("-- sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp-size 16 --ep-size 16 "
               "--moe-runner-backend marlin --decode-attention-backend flashmla --enable-symm-mem "
               "--mem-fraction-static 0.85 --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:5000").split()
SEED_VLLM = ("-- vllm serve moonshotai/Kimi-K3 --trust-remote-code --tensor-parallel-size 8 "
             "--pipeline-parallel-size 2 --load-format fastsafetensors --moe-backend marlin "
             "--gpu-memory-utilization 0.97 --max-model-len 65536").split()
GiB = 1 << 30


def run(*args):
    return CliRunner().invoke(command, list(args), catch_exceptions=False)


def test_json_schema_for_the_seed():
    r = run("--gpu", "h200", "--json", *SEED_SGLANG)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["schema_version"] == 1
    for key in ("engine", "parallel", "gpu", "ranks", "max_rank_weights_bytes", "kv_tokens", "max_context", "fits",
                "findings"):
        assert key in doc
    assert len(doc["ranks"]) == 16
    r0 = doc["ranks"][0]
    for key in ("rank", "weights_bytes", "components", "transient_bytes", "kv_bytes", "state_bytes", "reserve_bytes",
                "free_bytes"):
        assert key in r0
    assert isinstance(r0["weights_bytes"], int)
    assert sum(r0["components"].values()) == r0["weights_bytes"]
    assert abs(doc["max_rank_weights_bytes"] / GiB - 102.75) / 102.75 < 0.03
    assert doc["fits"] is True
    assert sum(r0["reserve_components"].values()) == r0["reserve_bytes"]
    for key in ("budget_bytes", "budget_basis", "overhead_bytes", "kv_avail_bytes", "kv_need_bytes"):
        assert key in doc
    assert isinstance(doc["budget_bytes"], int) and doc["budget_bytes"] > doc["max_rank_weights_bytes"]


def test_rich_output_has_table_and_bars():
    r = run("--gpu", "h200", *SEED_SGLANG)
    assert r.exit_code == 0
    assert "experts" in r.output and "latent_proj" in r.output
    assert "ranks 0–15" in r.output and "|E" in r.output


def test_vllm_seed_with_pp_lists_two_rank_shapes():
    r = run("--gpu", "h200", "--json", *SEED_VLLM)
    doc = json.loads(r.output)
    stages = {x["rank"] // 8: x["weights_bytes"] for x in doc["ranks"]}
    assert len(doc["ranks"]) == 16 and stages[0] != stages[1]
    assert doc["ranks"][0]["transient_bytes"] == 2 * 16_990_092_800


def test_vllm_tp16_variant_fails_with_findings():
    r = run("--gpu", "h200", "--tp", "16", "--pp", "1", "--nnodes", "2", "--json", *SEED_VLLM)
    assert r.exit_code == 1
    doc = json.loads(r.output)
    codes = {f["code"] for f in doc["findings"]}
    assert codes & {"MEM001", "MEM002"} and "MEM003" in codes and "MEM004" in codes
    assert doc["kv_avail_bytes"] < 0 < doc["kv_need_bytes"] and doc["overhead_bytes"] > 0


def test_rich_output_breaks_the_reserve_down():
    r = run("--gpu", "h200", "--tp", "16", "--pp", "1", "--nnodes", "2", *SEED_VLLM)
    for label in ("profile-run peak", "non-torch", "CUDA context", "driver-reserved"):
        assert label in r.output, label
    assert "(27,648 B/token)" in r.output


def test_options_without_launch_command():
    r = run("--model", "deepseek-v3", "--engine", "sglang", "--tp", "8", "--gpu", "h200", "--json")
    doc = json.loads(r.output)
    assert doc["engine"] == "sglang" and doc["parallel"]["tp"] == 8
    assert doc["inventory"]["source"] == "config"


def test_search_ranks_fewest_gpus_first():
    r = run("--model", "moonshotai/Kimi-K3", "--engine", "sglang", "--gpu", "h200", "--search", "--json")
    assert r.exit_code == 0
    cands = json.loads(r.output)["candidates"]
    fits = [c for c in cands if c["fits"]]
    assert fits and all(fits[0]["gpus"] <= c["gpus"] for c in fits)
    assert fits[0]["gpus"] == 16
    assert any(not c["fits"] and c["reason"] for c in cands)
    text = run("--model", "moonshotai/Kimi-K3", "--engine", "sglang", "--gpu", "h200", "--search", "--top", "3")
    assert "why the others fail" in text.output


def test_engine_log_measured_above_projection(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("[2026-07-30 10:00:00 TP0] Load weight end. type=KimiK3ForConditionalGeneration, "
                   "dtype=torch.bfloat16, avail mem=8.10 GB, mem usage=130.02 GB.\n")
    r = run("--gpu", "h200", "--engine-log", str(log), "--json", *SEED_SGLANG)
    codes = [f["code"] for f in json.loads(r.output)["findings"]]
    assert "MEM005" in codes


def _one_line_usage_error(r, *needles):
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    for n in needles:
        assert n in r.output


def test_missing_gpu_type():
    _one_line_usage_error(run("--model", "deepseek-v3", "--tp", "8"), "no GPU type", "--gpu")


def test_unknown_gpu_type():
    _one_line_usage_error(run("--model", "deepseek-v3", "--gpu", "h2000"), "h2000")


def test_impossible_plan():
    _one_line_usage_error(run("--model", "deepseek-v3", "--gpu", "h200", "--tp", "24", "--ep", "24",
                              "--nnodes", "3"), "not divisible by EP 24")


def test_unknown_architecture_without_headers(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["MysteryForCausalLM"], "model_type": "x"}))
    _one_line_usage_error(run("--model", str(tmp_path), "--gpu", "h200"), "MysteryForCausalLM")


def test_no_model():
    _one_line_usage_error(run("--gpu", "h200"), "no model")


def test_snapshot_without_gpu(tmp_path):
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps({"kind": "k3doctor.snapshot", "schema_version": 1, "facts": {}}))
    _one_line_usage_error(run("--model", "deepseek-v3", "--snapshot", str(snap)), "no GPU devices")


def test_snapshot_gpu_is_used(tmp_path):
    snap = tmp_path / "s.json"
    dev = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total": 85_520_809_984, "memory_free": 84_000_000_000}
    snap.write_text(json.dumps({"kind": "k3doctor.snapshot", "schema_version": 1,
                                "facts": {"gpu": {"ok": True, "devices": [dev] * 8}}}))
    r = run("--model", "llama-3.1-8b", "--engine", "vllm", "--snapshot", str(snap), "--json")
    doc = json.loads(r.output)
    assert doc["gpu"]["memory_total"] == 85_520_809_984 and doc["gpu"]["memory_free"] == 84_000_000_000


def test_unknown_architecture_with_headers_is_marked_header_only(tmp_path):
    import struct

    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["MysteryForCausalLM"], "model_type": "x"}))
    hdr, off = {}, 0
    for name, nb in [("model.layers.0.mlp.experts.0.w1.weight", 4096), ("model.layers.0.self_attn.q_proj.weight", 2048),
                     ("model.embed_tokens.weight", 6400)]:
        hdr[name] = {"dtype": "BF16", "shape": [nb // 2], "data_offsets": [off, off + nb]}
        off += nb
    raw = json.dumps(hdr).encode()
    raw += b" " * (-len(raw) % 8)
    with open(tmp_path / "model.safetensors", "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + off)
    r = run("--model", str(tmp_path), "--gpu", "h100", "--tp", "2", "--json")
    doc = json.loads(r.output)
    assert doc["inventory"]["header_only"] is True
    assert any("HEADER-ONLY" in n for n in doc["notes"])
    assert any("MysteryForCausalLM" in n and "hidden_size" in n for n in doc["notes"])
    assert doc["ranks"][0]["components"]["experts"] == 4096 / 2
    text = run("--model", str(tmp_path), "--gpu", "h100", "--tp", "2")
    assert "HEADER-ONLY" in text.output and "not projected" in text.output


def test_plan_from_a_snapshot_whose_model_directory_is_gone(tmp_path):
    """`plan --snapshot` uses the snapshot's recorded checkpoint scan: no directory needed."""
    import shutil
    from pathlib import Path

    from fixtures.checkpoints.generate import make_deepseek_v3_fp8
    from k3doctor.probes.checkpoint import model_fact

    model = tmp_path / "DeepSeek-V3"
    make_deepseek_v3_fp8(model)
    root = Path(__file__).resolve().parent.parent
    doc = json.loads((root / "fixtures" / "snapshots" / "h200-live-device.json").read_text())
    doc["facts"]["model"] = model_fact(model)
    launch = ["--", "sglang", "serve", "--model-path", str(model), "--tp-size", "1"]
    snap = tmp_path / "node.json"
    snap.write_text(json.dumps(doc))
    live = CliRunner().invoke(command, ["--snapshot", str(snap), "--json", *launch], catch_exceptions=False)
    shutil.rmtree(model)
    offline = CliRunner().invoke(command, ["--snapshot", str(snap), "--json", *launch], catch_exceptions=False)
    assert offline.exit_code == live.exit_code, offline.output
    a, b = json.loads(live.output), json.loads(offline.output)
    assert a["max_rank_weights_bytes"] == b["max_rank_weights_bytes"] > 0


def test_format_json_is_the_same_as_json():
    a = run("--gpu", "h200", "--format", "json", *SEED_SGLANG)
    b = run("--gpu", "h200", "--json", *SEED_SGLANG)
    assert a.exit_code == b.exit_code == 0 and json.loads(a.output) == json.loads(b.output)
    bad = run("--gpu", "h200", "--format", "yaml", *SEED_SGLANG)
    assert bad.exit_code == 2 and "yaml" in bad.output


def test_one_gpu_snapshot_planning_for_bigger_nodes():
    from pathlib import Path

    snap = str(Path(__file__).resolve().parents[1] / "fixtures" / "snapshots" / "h200-live-device.json")
    tp16 = ("-- vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 16 --enable-expert-parallel --nnodes 2 "
            "--gpu-memory-utilization 0.97 --max-model-len 65536").split()
    r = run("--snapshot", snap, *tp16)
    _one_line_usage_error(r, "impossible plan", "the snapshot's node has 1 GPU(s)", "--gpus-per-node")
    ok = run("--snapshot", snap, "--gpus-per-node", "8", "--format", "json", *tp16)
    doc = json.loads(ok.output)
    assert ok.exit_code == 0 and doc["fits"] and doc["gpu"]["source"] != "target"
