"""Checks over the snapshot captured live on the real H200 device (fixtures/snapshots/h200-live-device.json)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from k3doctor.cli import main

SNAP = str(Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / "h200-live-device.json")
CLEAN = ["sglang", "serve", "--model-path", "Qwen/Qwen3-8B", "--tp-size", "1", "--mem-fraction-static", "0.85",
         "--context-length", "32768"]
SM100 = ["VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1", "vllm", "serve", "moonshotai/Kimi-K3", "--trust-remote-code",
         "--tensor-parallel-size", "8", "--moe-backend", "marlin"]


def run(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    res = CliRunner().invoke(main, ["check", "--snapshot", SNAP, "--format", "json", *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def test_real_h200_snapshot_is_healthy_for_a_clean_launch() -> None:
    code, doc = run("--", *CLEAN)
    assert code == 0, [f for f in doc["findings"] if f["severity"] == "error"]
    status = {r["code"]: r["status"] for r in doc["results"]}
    for c in ("GPU001", "GPU004", "GPU005", "GPU006", "GPU007", "GPU011", "GPU012", "MEM001", "FS001"):
        assert status[c] == "pass", c
    assert status["GPU008"] == "skip"  # single-GPU VM: NVML reports NVLink not supported


def test_real_h200_snapshot_rejects_the_sm100_flag() -> None:
    code, doc = run("--select", "ARCH001", "--", *SM100)
    assert code == 1
    (finding,) = doc["findings"]
    assert finding["evidence"]["cc"] == "9.0" and finding["evidence"]["gpu"] == "NVIDIA H200"


def test_live_multinode_launch_without_address_checks_this_node_only() -> None:
    res = CliRunner().invoke(main, ["check", "--format", "json", "--select", "CLU001", "--", "vllm", "serve", "m",
                                    "-tp", "8", "-pp", "2", "--nnodes", "2"], catch_exceptions=False)
    assert res.exit_code != 2, res.output
    (result,) = json.loads(res.output)["results"]
    assert result["status"] == "skip" and "names no rendezvous address" in result["reason"]


def test_explicit_nnodes_without_address_is_a_usage_error() -> None:
    res = CliRunner().invoke(main, ["check", "--nnodes", "2", "--select", "CLU001"])
    assert res.exit_code == 2 and "--dist-init-addr" in res.output
