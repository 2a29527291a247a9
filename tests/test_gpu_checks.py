"""GPU001–GPU012 on facts built from the real H200 reading, and on mutated copies of it.

No GPU needed: the base fact is ``gpu_fact_from_reading(fixtures/snapshots/h200-reading.json)``;
each test changes one thing the way a broken node would report it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from k3doctor.check import Check, call_run
from k3doctor.checks import gpu as gpu_checks
from k3doctor.checks.gpu import (
    CHECKS,
    GPU001,
    GPU002,
    GPU003,
    GPU004,
    GPU005,
    GPU006,
    GPU007,
    GPU008,
    GPU009,
    GPU010,
    GPU011,
    GPU012,
    visible_device_indices,
)
from k3doctor.facts import Facts
from k3doctor.model import Finding, Severity, Skip, Status
from k3doctor.probes.gpu import derive_capabilities, gpu_fact_from_reading
from k3doctor.runner import run_checks

SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"
READING = json.loads((SNAPSHOTS / "h200-reading.json").read_text(encoding="utf-8"))
GB = 10**9

SGLANG_LAUNCH = {
    "engine": "sglang",
    "tp": 16,
    "ep": 16,
    "pp": 1,
    "dp": 1,
    "enable_dp_attention": False,
    "nnodes": 2,
    "node_rank": 0,
    "flags": {"--nnodes": "2"},
    "mem_fraction": 0.85,
    "env": {"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0", "NCCL_MNNVL_ENABLE": "1"},
}
VLLM_LAUNCH = {
    "engine": "vllm",
    "tp": 8,
    "ep": 1,
    "pp": 2,
    "dp": 1,
    "enable_dp_attention": False,
    "nnodes": 1,
    "flags": {},
    "mem_fraction": 0.97,
    "env": {},
}


def reading_fact(gpus: int = 1) -> dict[str, Any]:
    """The real reading's gpu fact, its device replicated ``gpus`` times."""
    fact = gpu_fact_from_reading(READING)
    template = fact["devices"][0]
    fact["devices"] = []
    for i in range(gpus):
        device = copy.deepcopy(template)
        device["index"] = i
        device["uuid"] = template["uuid"][:-2] + f"{i:02x}" if i else template["uuid"]
        fact["devices"].append(device)
    return fact


def hgx_fact(gpus: int = 8) -> dict[str, Any]:
    fact = reading_fact(gpus)
    for device in fact["devices"]:
        device["nvlink"] = {"supported": True, "active": 18, "total": 18}
        device["fabric"] = {"state": "COMPLETED", "status": 0}
    return fact


def run(check: type[Check], gpu: dict[str, Any] | None = None, options: dict[str, Any] | None = None, **facts: Any) -> list[Finding]:
    values = {"gpu": reading_fact() if gpu is None else gpu, **facts}
    return list(call_run(check(), Facts(values, options=options or {})))


def skipped(check: type[Check], gpu: dict[str, Any] | None = None, **facts: Any) -> str:
    with pytest.raises(Skip) as info:
        run(check, gpu, **facts)
    return info.value.reason


def severities(findings: list[Finding]) -> list[str]:
    return [f.severity.label for f in findings]


# -- registry shape ------------------------------------------------------------------------
def test_checks_registered_in_order_with_docs() -> None:
    assert [c.code for c in CHECKS] == [f"GPU{i:03d}" for i in range(1, 13)]
    for cls in CHECKS:
        doc = cls.doc()
        assert cls.title() and not cls.title().endswith(".")
        for heading in ("## What it checks", "## Why it matters", "## How to fix"):
            assert heading in doc, (cls.code, heading)
        assert cls.requires == (() if cls is GPU001 else ("GPU001",))
        assert "gpu" in cls.needs()


def test_throttle_bits_match_pynvml() -> None:
    pynvml = pytest.importorskip("pynvml")
    for name, bit in gpu_checks.THROTTLE_BITS.items():
        value = getattr(pynvml, f"nvmlClocksEventReason{name}", None)
        if value is None:
            value = getattr(pynvml, f"nvmlClocksThrottleReason{name}")
        assert value == bit, name


# -- the real reading passes -----------------------------------------------------------------
def test_real_reading_is_healthy() -> None:
    facts = Facts(
        {
            "gpu": reading_fact(),
            "packages": {"torch": "2.11.0+cu130", "torch_cuda": "13.0"},
            "launch": {**SGLANG_LAUNCH, "tp": 1, "ep": 1, "nnodes": 1, "flags": {}},
        }
    )
    checks = {c.code: c for c in CHECKS}
    report = run_checks(checks, list(checks), facts)
    status = {r.code: r.status for r in report.results}
    assert status["GPU001"] is Status.PASS
    for code in ("GPU002", "GPU004", "GPU005", "GPU006", "GPU007", "GPU009", "GPU011", "GPU012"):
        assert status[code] is Status.PASS, (code, report.results)
    # NVLink NotSupported on the single-GPU VM, no fabric state: not applicable
    assert status["GPU008"] is Status.SKIP
    assert status["GPU010"] is Status.SKIP
    gpu003 = next(r for r in report.results if r.code == "GPU003")
    assert gpu003.status is Status.PASS
    (info,) = gpu003.findings
    assert info.severity is Severity.INFO
    assert info.evidence["cc"] == "9.0" and info.evidence["fp8"] is True and info.evidence["fp4"] is False
    assert "sm_90" in info.message


def test_reading_fact_values() -> None:
    device = reading_fact()["devices"][0]
    assert device["memory_total"] == 150754820096
    assert device["memory_reserved"] == 644939776
    assert device["memory_free"] == device["memory_total"] - device["memory_reserved"]
    assert device["throttle_reasons"] == 1
    assert device["pcie_max_width"] == 16  # from the recorded nvidia-smi -q
    assert device["nvlink"] == {"supported": False, "active": 0, "total": 0}
    assert device["fabric"] is None
    assert device["nvlink_domain"] == "none"


# -- GPU001 --------------------------------------------------------------------------------------
def test_gpu001_dead_driver_one_error_dependents_skip() -> None:
    dead = {"ok": False, "error": "nvmlInit failed: Driver Not Loaded", "source": "nvml", "devices": []}
    checks = {c.code: c for c in CHECKS}
    report = run_checks(checks, list(checks), Facts({"gpu": dead}))
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    assert [f.code for f in errors] == ["GPU001"]
    assert "modprobe nvidia" in errors[0].fix
    for result in report.results:
        if result.code != "GPU001":
            assert result.status is Status.SKIP
            assert "GPU001" in result.reason


@pytest.mark.parametrize(
    ("error", "fix_part"),
    [
        ("nvmlInit failed: NVML Shared Library Not Found", "install the NVIDIA driver"),
        ("nvmlInit failed: RM has detected an NVML/RM version mismatch.", "reboot"),
        ("pynvml is not importable (No module named 'pynvml')", "pip install nvidia-ml-py"),
    ],
)
def test_gpu001_fix_matches_error(error: str, fix_part: str) -> None:
    (finding,) = run(GPU001, {"ok": False, "error": error, "devices": []})
    assert fix_part in finding.fix
    assert finding.evidence["error"] == error


def test_gpu001_no_devices() -> None:
    (finding,) = run(GPU001, {"ok": True, "devices": [], "driver": "580.159.04"})
    assert "no GPUs" in finding.message


# -- GPU002 --------------------------------------------------------------------------------------
def test_gpu002_fewer_gpus_than_plan() -> None:
    launch = {**SGLANG_LAUNCH, "nnodes": 1, "flags": {}}
    (finding,) = run(GPU002, reading_fact(8), launch=launch)
    assert finding.severity is Severity.ERROR
    assert finding.evidence["gpus_needed"] == 16 and finding.evidence["gpus_visible"] == 8
    assert "--nnodes 2" in finding.fix


def test_gpu002_ignores_a_rejected_parallel_size() -> None:
    launch = {**SGLANG_LAUNCH, "tp": 1, "nnodes": 1, "flags": {}, "invalid": ["tp"]}
    assert "invalid (see CMD001)" in skipped(GPU002, reading_fact(8), launch=launch)
    # --gpus still gives the check something to compare with
    (finding,) = run(GPU002, reading_fact(8), options={"gpus_per_node": 16}, launch=launch)
    assert finding.evidence["gpus_visible"] == 8 and "tp" not in finding.evidence


def test_gpu002_two_nodes_of_eight_is_enough() -> None:
    assert run(GPU002, reading_fact(8), launch=SGLANG_LAUNCH) == []


def test_gpu002_dp_attention_not_multiplied() -> None:
    launch = {**SGLANG_LAUNCH, "dp": 16, "enable_dp_attention": True}
    assert run(GPU002, reading_fact(8), launch=launch) == []
    (finding,) = run(GPU002, reading_fact(8), launch={**launch, "enable_dp_attention": False})
    assert finding.evidence["gpus_needed"] == 128


def test_gpu002_cuda_visible_devices_narrows() -> None:
    launch = {**SGLANG_LAUNCH, "env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}}
    (finding,) = run(GPU002, reading_fact(8), launch=launch)
    assert finding.evidence["gpus_visible"] == 4
    assert finding.evidence["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in finding.fix


def test_gpu002_env_fact_and_option() -> None:
    findings = run(GPU002, reading_fact(8), options={"gpus_per_node": 8}, env={"CUDA_VISIBLE_DEVICES": "0,1,9,2"})
    (finding,) = findings
    assert finding.evidence["gpus_visible"] == 2  # CUDA stops at the first invalid entry
    assert run(GPU002, reading_fact(8), options={"gpus_per_node": 8}) == []
    # a launch command wins over the --gpus count
    (finding,) = run(GPU002, reading_fact(8), options={"gpus_per_node": 8}, launch={**SGLANG_LAUNCH, "nnodes": 1, "flags": {}})
    assert finding.evidence["gpus_needed"] == 16


def test_gpu002_vllm_without_nnodes_or_ray() -> None:
    (finding,) = run(GPU002, reading_fact(8), launch=VLLM_LAUNCH)
    assert finding.severity is Severity.ERROR
    assert finding.evidence["gpus_needed"] == 16
    assert "World size (16) is larger than the number of available GPUs (8)" in finding.message
    assert "--nnodes 2" in finding.fix and "ray" in finding.fix
    assert run(GPU002, reading_fact(8), launch={**VLLM_LAUNCH, "distributed_executor_backend": "ray"}) == []
    assert run(GPU002, reading_fact(8), launch={**VLLM_LAUNCH, "nnodes": 2, "flags": {"--nnodes": "2"}}) == []


def test_gpu002_skips_without_plan() -> None:
    assert "no launch command" in skipped(GPU002)


def test_visible_device_indices() -> None:
    devices = reading_fact(4)["devices"]
    assert visible_device_indices(devices, None) == [0, 1, 2, 3]
    assert visible_device_indices(devices, "") == []
    assert visible_device_indices(devices, "3,1") == [3, 1]
    assert visible_device_indices(devices, "1,1,2") == [1]
    assert visible_device_indices(devices, "-1") == []
    assert visible_device_indices(devices, devices[2]["uuid"][:16]) == []  # ambiguous prefix
    assert visible_device_indices(devices, devices[2]["uuid"]) == [2]


# -- GPU003 --------------------------------------------------------------------------------------
def test_gpu003_mixed_models_error() -> None:
    fact = reading_fact(2)
    fact["devices"][1].update({"name": "NVIDIA A100-SXM4-80GB", "cc": [8, 0]})
    findings = run(GPU003, fact)
    assert severities(findings).count("error") == 1
    error = next(f for f in findings if f.severity is Severity.ERROR)
    assert "mixed GPU models" in error.message and "CUDA_VISIBLE_DEVICES" in error.fix
    assert severities(findings).count("info") == 2


def test_derive_capabilities() -> None:
    assert derive_capabilities({"cc": [9, 0]})["fp8"] is True
    assert derive_capabilities({"cc": [8, 0]})["fp8"] is False
    assert derive_capabilities({"cc": [8, 9]})["fp8"] is True
    assert derive_capabilities({"cc": [10, 0]})["fp4"] is True
    assert derive_capabilities({"cc": [9, 0]})["fp4"] is False
    assert derive_capabilities({"cc": [10, 0], "name": "NVIDIA GB200"})["nvlink_domain"] == "multi-node"
    assert derive_capabilities({"cc": [9, 0], "nvlink": {"supported": True, "active": 18, "total": 18}})["nvlink_domain"] == "node"
    assert derive_capabilities({"cc": None})["fp8"] is None


# -- GPU004 --------------------------------------------------------------------------------------
def test_gpu004_volatile_ecc_error() -> None:
    fact = reading_fact(2)
    fact["devices"][1]["ecc_volatile_uncorrected"] = 3
    (finding,) = run(GPU004, fact)
    assert finding.severity is Severity.ERROR
    assert finding.subject == "gpu=1"
    assert finding.evidence["ecc_volatile_uncorrected"] == 3
    assert "nvidia-smi -r -i 1" in finding.fix


def test_gpu004_pending_and_failed_remap() -> None:
    fact = reading_fact(2)
    fact["devices"][0]["remapped_rows"]["pending"] = True
    fact["devices"][1]["remapped_rows"].update({"failure": True, "uncorrectable": 600})
    findings = run(GPU004, fact)
    by_gpu = {(f.subject, f.severity.label): f for f in findings}
    assert "reset" in by_gpu[("gpu=0", "error")].message
    assert by_gpu[("gpu=0", "error")].evidence["remap_pending"] is True
    assert "RMA" in by_gpu[("gpu=1", "error")].fix
    assert ("gpu=1", "warning") in by_gpu  # ≥ 512 uncorrectable remapped rows


def test_gpu004_ecc_off() -> None:
    fact = reading_fact()
    fact["devices"][0].update({"ecc_current": False, "ecc_pending": False, "ecc_volatile_uncorrected": None})
    (finding,) = run(GPU004, fact)
    assert finding.severity is Severity.WARNING
    assert "-e 1" in finding.fix


def test_gpu004_skips_on_target_profile() -> None:
    fact = {"ok": True, "source": "target", "devices": [{"index": 0, "name": "NVIDIA H200", "cc": [9, 0]}]}
    assert "--target profile" in skipped(GPU004, fact)


# -- GPU005 / GPU006 -------------------------------------------------------------------------------
def test_gpu005_mig_on() -> None:
    fact = reading_fact(2)
    fact["devices"][1]["mig_current"] = True
    (finding,) = run(GPU005, fact)
    assert finding.severity is Severity.ERROR
    assert finding.evidence["gpus"] == "1"
    assert "-mig 0" in finding.fix


def test_gpu006_persistence_off() -> None:
    fact = reading_fact(8)
    for device in fact["devices"]:
        device["persistence"] = False
    (finding,) = run(GPU006, fact)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["count"] == 8
    assert "nvidia-smi -pm 1" in finding.fix


# -- GPU007 --------------------------------------------------------------------------------------
def test_gpu007_x8_of_x16() -> None:
    fact = reading_fact(2)
    fact["devices"][1]["pcie_width"] = 8
    (finding,) = run(GPU007, fact)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["pcie_width"] == 8 and finding.evidence["pcie_max_width"] == 16


def test_gpu007_gen_downtrain_is_info_only() -> None:
    fact = reading_fact(2)
    for device in fact["devices"]:
        device["pcie_gen"] = 1
    (finding,) = run(GPU007, fact)
    assert finding.severity is Severity.INFO
    assert "idle" in finding.message


# -- GPU008 --------------------------------------------------------------------------------------
def test_gpu008_inactive_links() -> None:
    fact = hgx_fact()
    fact["devices"][3]["nvlink"]["active"] = 12
    fact["devices"][5]["nvlink"]["active"] = 0
    findings = run(GPU008, fact)
    assert [f.subject for f in findings] == ["gpu=3", "gpu=5"]
    assert all(f.severity is Severity.ERROR for f in findings)
    assert findings[0].evidence == {"nvlink_active": 12, "nvlink_total": 18, "uuid": fact["devices"][3]["uuid"]}
    assert "no NVLink is active" in findings[1].message


def test_gpu008_all_up_passes_and_no_nvlink_skips() -> None:
    assert run(GPU008, hgx_fact()) == []
    assert "NVLink" in skipped(GPU008)


# -- GPU009 --------------------------------------------------------------------------------------
def test_gpu009_hw_slowdown() -> None:
    fact = reading_fact(2)
    fact["devices"][0]["throttle_reasons"] = 0x1 | 0x8 | 0x40
    (finding,) = run(GPU009, fact)
    assert finding.severity is Severity.WARNING
    assert "HwSlowdown" in finding.message and "HwThermalSlowdown" in finding.message
    assert finding.evidence["throttle_reasons"] == 0x49


def test_gpu009_idle_and_app_clocks_ignored() -> None:
    fact = reading_fact()
    fact["devices"][0]["throttle_reasons"] = 0x1 | 0x2 | 0x4
    assert run(GPU009, fact) == []


# -- GPU010 --------------------------------------------------------------------------------------
def test_gpu010_fabric_not_completed() -> None:
    fact = hgx_fact()
    for device in fact["devices"]:
        device["fabric"] = {"state": "IN_PROGRESS", "status": 0}
    (finding,) = run(GPU010, fact)
    assert finding.severity is Severity.ERROR
    assert "802" in finding.message and "system not yet initialized" in finding.message
    assert "nvidia-fabricmanager" in finding.fix
    assert finding.evidence["gpus"] == "0,1,2,3,4,5,6,7"


def test_gpu010_completed_with_error_status() -> None:
    fact = hgx_fact(2)
    fact["devices"][1]["fabric"] = {"state": "COMPLETED", "status": 999}
    (finding,) = run(GPU010, fact)
    assert "error status 999" in finding.message


def test_gpu010_ok_and_skip() -> None:
    assert run(GPU010, hgx_fact()) == []
    assert "fabric" in skipped(GPU010)


# -- GPU011 --------------------------------------------------------------------------------------
def test_gpu011_driver_124_vs_torch_cu130() -> None:
    fact = reading_fact()
    fact["cuda_driver"] = 12040
    (finding,) = run(GPU011, fact, packages={"torch": "2.11.0+cu130", "torch_cuda": "13.0"})
    assert finding.severity is Severity.ERROR
    assert "CUDA driver version is insufficient for CUDA runtime version" in finding.message
    assert "whl/cu124" in finding.fix
    assert finding.evidence["cuda_driver"] == 12040 and finding.evidence["torch_cuda"] == "13.0"


def test_gpu011_minor_behind_is_warning() -> None:
    fact = reading_fact()
    fact["cuda_driver"] = 12040
    (finding,) = run(GPU011, fact, packages={"torch": "2.8.0+cu128", "torch_cuda": "12.8"})
    assert finding.severity is Severity.WARNING


def test_gpu011_ok_cpu_torch_and_no_torch() -> None:
    assert run(GPU011, packages={"torch": "2.11.0+cu130", "torch_cuda": "13.0"}) == []
    assert "CPU-only" in skipped(GPU011, packages={"torch": "2.13.0+cpu", "torch_cuda": None})
    assert "not installed" in skipped(GPU011, packages={"torch": None, "torch_cuda": None})


# -- GPU012 --------------------------------------------------------------------------------------
def _hog(fact: dict[str, Any], index: int, used: int = 20 * GB, pid: int = 4242) -> None:
    device = fact["devices"][index]
    device["memory_free"] -= used
    device["memory_used"] += used
    device["processes"] = [{"pid": pid, "used_memory": used, "name": "python3"}]


def test_gpu012_foreign_process_20gb() -> None:
    fact = reading_fact(8)
    _hog(fact, 3)
    findings = run(GPU012, fact, launch={**SGLANG_LAUNCH, "env": {}})
    messages = " | ".join(f.message for f in findings)
    proc = next(f for f in findings if "process 4242" in f.message)
    assert proc.severity is Severity.WARNING and proc.evidence["used_memory"] == 20 * GB
    assert "kill 4242" in proc.fix
    low = next(f for f in findings if f.subject == "gpu=3" and "free of" in f.message)
    assert low.severity is Severity.WARNING
    imbalance = next(f for f in findings if "unbalanced" in f.message)
    assert imbalance.severity is Severity.ERROR, messages
    assert "The memory capacity is unbalanced" in imbalance.message
    assert "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0" in imbalance.fix


def test_gpu012_imbalance_check_disabled_is_warning() -> None:
    fact = reading_fact(8)
    _hog(fact, 3)
    findings = run(GPU012, fact, launch=SGLANG_LAUNCH)  # the seed sets ..._INBALANCE_CHECK=0
    imbalance = next(f for f in findings if "unbalanced" in f.message)
    assert imbalance.severity is Severity.WARNING
    findings = run(GPU012, fact, launch={**SGLANG_LAUNCH, "env": {}}, env={"SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK": "1"})
    assert next(f for f in findings if "unbalanced" in f.message).severity is Severity.WARNING


def test_gpu012_vllm_utilization_too_high() -> None:
    fact = reading_fact(8)
    _hog(fact, 0, used=10 * GB)
    findings = run(GPU012, fact, launch=VLLM_LAUNCH)
    vllm = next(f for f in findings if "vLLM will refuse" in f.message)
    assert vllm.severity is Severity.ERROR
    assert vllm.evidence["gpu_memory_utilization"] == 0.97
    assert vllm.fix.endswith("--gpu-memory-utilization to 0.92")


def test_gpu012_clean_node_passes() -> None:
    assert run(GPU012, reading_fact(8), launch=VLLM_LAUNCH) == []
    assert run(GPU012, reading_fact(8), launch=SGLANG_LAUNCH) == []


# -- snapshots built from the reading ---------------------------------------------------------
@pytest.mark.parametrize("name", ["h200-1gpu.json", "h200x8-hgx-node0.json", "h200x8-hgx-node1.json"])
def test_fixture_snapshots_load_and_pass(name: str) -> None:
    from k3doctor.facts import load_snapshot

    doc = load_snapshot(SNAPSHOTS / name)
    gpu = doc["facts"]["gpu"]
    assert gpu["source"] == "reading" and gpu["ok"] is True
    checks = {c.code: c for c in CHECKS}
    report = run_checks(checks, list(checks), Facts(doc["facts"]))
    assert not [f for f in report.findings if f.severity >= Severity.WARNING]
    assert not [r for r in report.results if r.status is Status.CRASH]


def test_fixture_snapshots_are_current() -> None:
    """The committed snapshots equal what make_from_reading.py builds now."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_from_reading", SNAPSHOTS / "make_from_reading.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build_gpu_fact(READING, 8, hgx=True)
    stored = json.loads((SNAPSHOTS / "h200x8-hgx-node0.json").read_text(encoding="utf-8"))["facts"]["gpu"]
    assert built == stored


def test_gpu012_vllm_borderline_counts_cuda_context() -> None:
    # 0.999 × usable leaves less than the ~0.55 GB a CUDA context takes before vLLM measures
    findings = run(GPU012, reading_fact(1), launch={**VLLM_LAUNCH, "mem_fraction": 0.999})
    assert [f.severity for f in findings] == [Severity.ERROR]


def test_target_profile_runs_without_live_state() -> None:
    from k3doctor.targets import get_target, gpu_fact_for_target

    fact = gpu_fact_for_target(get_target("gb200"))
    checks = {c.code: c for c in CHECKS}
    report = run_checks(checks, list(checks), Facts({"gpu": fact}))
    status = {r.code: r.status for r in report.results}
    assert status["GPU001"] is Status.PASS and status["GPU012"] is Status.PASS
    assert status["GPU004"] is Status.SKIP and "--target" in next(r.reason for r in report.results if r.code == "GPU004")
    assert not [r for r in report.results if r.status is Status.CRASH]
