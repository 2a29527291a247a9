"""MEM001–MEM005 run purely from facts (launch + gpu + model)."""

from __future__ import annotations

import pytest

from k3doctor.check import call_run
from k3doctor.checks.mem import CHECKS, MEM001, MEM002, MEM003, MEM004, MEM005
from k3doctor.facts import Facts
from k3doctor.model import Severity, Skip
from k3doctor.targets import get_target, gpu_fact_for_target

GiB = 1 << 30


def _facts(launch, *, gpu="h200-141g", **options):
    base = {"engine": "sglang", "model": "moonshotai/Kimi-K3", "tp": 16, "ep": 16, "pp": 1, "dp": 1, "nnodes": 2,
            "env": {}, "flags": {}}
    base.update(launch)
    opts = {"model_dir": base["model"]}
    opts.update(options)
    return Facts({"launch": base, "gpu": gpu_fact_for_target(get_target(gpu))}, options=opts)


def _run(cls, facts):
    return list(call_run(cls(), facts))


def test_check_metadata():
    for cls in CHECKS:
        assert cls.family() == "MEM"
        doc = cls.doc()
        for section in ("What it checks", "Why it matters", "How to fix"):
            assert section in doc, (cls.code, section)


def test_seed_sglang_passes_all_errors():
    f = _facts({"mem_fraction": 0.85, "moe_runner_backend": "marlin"})
    for cls in (MEM001, MEM002, MEM003):
        assert _run(cls, f) == []


def test_mem001_weights_do_not_fit_names_a_plan():
    f = _facts({"tp": 8, "ep": 8, "nnodes": 1})
    (fd,) = _run(MEM001, f)
    assert fd.severity == Severity.ERROR
    assert fd.evidence["weights_bytes"] > fd.evidence["budget_bytes"]
    assert "--tp-size" in fd.fix and "GPUs" in fd.fix


def test_mem002_kv_short_says_largest_context():
    f = _facts({"engine": "vllm", "tp": 16, "ep": 1, "mem_fraction": 0.97, "context_length": 65536,
                "moe_runner_backend": "marlin"})
    found = _run(MEM001, f) + _run(MEM002, f)
    assert found, "the seed's vLLM TP16 variant must be flagged (no room / KV short)"
    fd = found[0]
    if fd.code == "MEM002":
        assert fd.evidence["max_context"] < 65536
        assert f"--max-model-len {fd.evidence['max_context']}" in fd.fix


def test_mem002_with_short_context_at_generous_fraction():
    f = _facts({"mem_fraction": 0.85, "context_length": 10_000_000})
    (fd,) = _run(MEM002, f)
    assert fd.evidence["max_context"] <= 1_048_576 and "--context-length" in fd.fix


def test_mem003_fastsafetensors_double_staging():
    f = _facts({"engine": "vllm", "tp": 16, "ep": 1, "load_format": "fastsafetensors", "mem_fraction": 0.97})
    (fd,) = _run(MEM003, f)
    assert fd.evidence["transient_bytes"] == 2 * 16_990_092_800
    assert "--load-format safetensors" in fd.fix
    ok = _facts({"engine": "vllm", "tp": 16, "ep": 1, "load_format": "safetensors", "mem_fraction": 0.97})
    assert _run(MEM003, ok) == []


def test_mem004_replicated_floor_blames_padding():
    f = _facts({"engine": "vllm", "tp": 16, "ep": 1, "nnodes": 2})
    (fd,) = _run(MEM004, f)
    assert fd.severity == Severity.WARNING
    assert "experts" in fd.message and "latent_proj" in fd.message
    assert fd.evidence["saving_pct"] < 25
    assert _run(MEM004, _facts({"tp": 8, "ep": 8, "nnodes": 1, "engine": "sglang"})) == []


def test_mem005_measured_above_projection():
    f = _facts({"mem_fraction": 0.85}, measured_gib=130.0)
    (fd,) = _run(MEM005, f)
    assert "replicates what should be sharded" in fd.message
    assert _run(MEM005, _facts({"mem_fraction": 0.85}, measured_gib=102.75)) == []
    with pytest.raises(Skip):
        _run(MEM005, _facts({"mem_fraction": 0.85}))


def test_missing_launch_skips():
    f = Facts({"gpu": gpu_fact_for_target(get_target("h200"))}, options={"model_dir": "moonshotai/Kimi-K3"})
    with pytest.raises(Skip):
        _run(MEM001, f)


def test_mem001_states_the_kv_shortfall_and_largest_context():
    f = _facts({"engine": "vllm", "tp": 16, "ep": 1, "mem_fraction": 0.97, "context_length": 65536,
                "moe_runner_backend": "marlin"})
    (fd,) = _run(MEM001, f)
    ev = fd.evidence
    assert ev["kv_short_bytes"] == ev["kv_need_bytes"] - ev["kv_avail_bytes"] and ev["kv_short_bytes"] > 1 * GiB
    assert "65,536 tokens need 1.72 GiB of KV per rank" in fd.message
    assert f"short by {ev['kv_short_bytes'] / GiB:.2f} GiB" in fd.message
    assert "largest context that fits: 0 tokens" in fd.message
    assert "--enable-expert-parallel" in fd.fix


def test_mem002_states_the_kv_shortfall_and_largest_context():
    f = _facts({"engine": "vllm", "tp": 16, "ep": 1, "mem_fraction": 0.97, "context_length": 65536,
                "moe_runner_backend": "marlin", "max_running_requests": 800})
    assert _run(MEM001, f) == []
    (fd,) = _run(MEM002, f)
    ev = fd.evidence
    assert 0 < ev["max_context"] < 65536 and ev["kv_short_bytes"] > 1 * GiB
    assert f"short by {ev['kv_short_bytes'] / GiB:.2f} GiB" in fd.message
    assert f"largest context that fits: {ev['max_context']:,} tokens" in fd.message
    assert f"--max-model-len {ev['max_context']}" in fd.fix


def test_mem_gpu_fact_reserved_sets_the_vllm_budget():
    f = _facts({"engine": "vllm", "tp": 16, "ep": 16, "mem_fraction": 0.97, "moe_runner_backend": "marlin"})
    from k3doctor.memory.plan import plan_from_facts
    p = plan_from_facts(f)
    dev = f.get("gpu")["devices"][0]
    assert p.budget_bytes == int(0.97 * (dev["memory_total"] - dev["memory_reserved"]))


def test_plan_from_facts_reads_vllm_version_for_the_default_runner():
    from k3doctor.memory.plan import plan_from_facts

    launch = {"engine": "vllm", "tp": 16, "ep": 1, "mem_fraction": 0.97, "context_length": 65536,
              "moe_runner_backend": "marlin"}
    old = _facts(launch)
    f = _facts(launch)
    f2 = Facts({"launch": f.get("launch"), "gpu": f.get("gpu"), "packages": {"vllm": "0.27.1"}},
               options={"model_dir": "moonshotai/Kimi-K3"})
    assert not any("runner V2" in n for n in plan_from_facts(old).notes)
    p2 = plan_from_facts(f2)
    # a vLLM that may default to V2 keeps the V1 projection (the seed's failing run supports it)
    assert not any("runner V2" in n for n in p2.notes)
    assert _run(MEM001, old) and _run(MEM001, f2)
    env_on = _facts({**launch, "env": {"VLLM_USE_V2_MODEL_RUNNER": "1"}})
    assert any("runner V2" in n for n in plan_from_facts(env_on).notes)


def test_reserve_components_add_up_for_both_engines():
    from k3doctor.memory.plan import plan_from_facts

    sg = plan_from_facts(_facts({"mem_fraction": 0.85, "moe_runner_backend": "marlin"}))
    r = sg.stages[0]
    assert sum(r.reserve_components.values()) == r.reserve_bytes
    assert set(r.reserve_components) == {"cuda_context", "nccl"}
    assert sg.budget_basis.startswith("--mem-fraction-static 0.85 × ") and sg.overhead_bytes == 0

    vl = plan_from_facts(_facts({"engine": "vllm", "tp": 16, "ep": 1, "mem_fraction": 0.97,
                                 "context_length": 65536, "moe_runner_backend": "marlin"}))
    r = vl.stages[0]
    assert sum(r.reserve_components.values()) == r.reserve_bytes
    assert {"activations", "non_torch", "cuda_context", "driver_reserved"} <= set(r.reserve_components)
    assert vl.overhead_bytes == r.reserve_components["activations"] + r.reserve_components["non_torch"]
    assert vl.budget_basis == "--gpu-memory-utilization 0.97 × 139.80 GiB CUDA-visible"
    # the seed's TP16 case: no KV room, but the per-token size is still known and shown
    assert vl.kv_tokens == 0 and vl.kv_bytes_per_token == 27_648
    assert any("dummy sampler on 1,024 rows" in n and "163,840 vocab" in n for n in vl.notes)
    assert vl.why and "+ the profiled overhead" in vl.why[0] and "139.80 GiB CUDA-visible" in vl.why[0]


def test_mem001_vllm_names_the_profile_run_overhead():
    f = _facts({"engine": "vllm", "tp": 16, "ep": 1, "mem_fraction": 0.97, "context_length": 65536,
                "moe_runner_backend": "marlin"})
    (fd,) = _run(MEM001, f)
    ev = fd.evidence
    assert ev["weights_bytes"] < ev["budget_bytes"] < ev["weights_bytes"] + ev["overhead_bytes"]
    assert "vLLM's profile run charges" in fd.message and "profile-run peak 6.12 GiB" in fd.message
    assert f"{(ev['weights_bytes'] + ev['overhead_bytes']) / GiB:.2f} GiB against the 135.61 GiB budget" in fd.message


def test_mem001_plain_form_when_weights_alone_exceed_the_budget():
    (fd,) = _run(MEM001, _facts({"tp": 8, "ep": 8, "nnodes": 1}))
    assert "but the sglang budget is" in fd.message and "--mem-fraction-static" in fd.message
    assert "profile run" not in fd.message


def test_invalid_launch_values_skip_the_projection():
    from k3doctor.launch import parse_launch

    spec = parse_launch("vllm serve moonshotai/Kimi-K3 --tensor-parallel-size sixteen "
                        "--gpu-memory-utilization 1.5".split())
    d = spec.to_dict()
    assert set(d["invalid"]) == {"tp", "mem_fraction"} and d["mem_fraction"] is None
    f = Facts({"launch": d, "gpu": gpu_fact_for_target(get_target("h200-141g"))},
              options={"model_dir": "moonshotai/Kimi-K3"})
    for cls in (MEM001, MEM002, MEM003, MEM004):
        with pytest.raises(Skip, match="invalid values"):
            _run(cls, f)
    ok = parse_launch("vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 16".split()).to_dict()
    assert ok["invalid"] == []


def test_vllm_without_max_model_len_is_held_to_the_model_maximum():
    """vLLM's max_model_len defaults to the model's own (1,048,576 for K3) and it refuses to start
    when one such request does not fit; SGLang just caps the pool."""
    f = _facts({"engine": "vllm", "tp": 16, "ep": 16, "enable_expert_parallel": True, "mem_fraction": None,
                "moe_runner_backend": "marlin"})
    assert _run(MEM001, f) == []
    (fd,) = _run(MEM002, f)
    assert fd.evidence["context_implicit"] is True and fd.evidence["requested_context"] == 1_048_576
    assert "no --max-model-len" in fd.message and "refuses to start" in fd.message
    assert f"--max-model-len {fd.evidence['max_context']}" in fd.fix and 0 < fd.evidence["max_context"] < 1_048_576
    given = _facts({"engine": "vllm", "tp": 16, "ep": 16, "enable_expert_parallel": True, "context_length": 65536,
                    "moe_runner_backend": "marlin"})
    assert _run(MEM002, given) == []
    sglang = _facts({"tp": 16, "ep": 16, "mem_fraction": 0.85, "moe_runner_backend": "marlin"})
    assert _run(MEM002, sglang) == []


def test_search_reports_the_largest_context_instead():
    from k3doctor.memory.inventory import load_inventory
    from k3doctor.memory.plan import Parallel, resolve_gpu
    from k3doctor.memory.search import search_plans

    cands = search_plans(load_inventory("moonshotai/Kimi-K3"), Parallel("vllm", moe_backend="marlin"),
                         resolve_gpu("h200"), gpus_per_node=8, max_nodes=4)
    best = next(c for c in cands if c.fits)
    assert best.parallel.world == 16 and best.plan.max_context < 1_048_576


def test_vllm_findings_quote_the_error_vllm_will_print():
    f = _facts({"engine": "vllm", "tp": 16, "ep": 1, "mem_fraction": 0.97, "context_length": 65536,
                "moe_runner_backend": "marlin"})
    (m1,) = _run(MEM001, f)
    assert "No available memory for the cache blocks" in m1.message
    f2 = _facts({"engine": "vllm", "tp": 16, "ep": 1, "mem_fraction": 0.97, "context_length": 65536,
                 "moe_runner_backend": "marlin", "max_running_requests": 800})
    (m2,) = _run(MEM002, f2)
    assert (f"max seq len (65536) … the estimated maximum model length is {m2.evidence['max_context']}"
            in m2.message)
    sg = _facts({"mem_fraction": 0.85, "moe_runner_backend": "marlin", "tp": 8, "ep": 8, "nnodes": 1})
    assert all("vLLM stops" not in x.message for x in _run(MEM001, sg))
