"""The bundled demo: current data, the seed's failures found, fast, and the multi-snapshot merge."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from fixtures.demo.make_demo import OUT, render
from k3doctor.cli import main
from k3doctor.commands.demo import SCENARIOS

ROOT = Path(__file__).resolve().parent.parent
NODES = [str(OUT / "node0.json"), str(OUT / "node1.json")]


def test_bundled_demo_data_is_current() -> None:
    for name, text in render().items():
        assert (OUT / name).read_text() == text, f"re-run `python -m fixtures.demo.make_demo` ({name} is stale)"


def _codes(doc: dict) -> set[str]:  # type: ignore[type-arg]
    return {f["code"] for f in doc["findings"]}


def test_demo_json_finds_every_seed_failure() -> None:
    res = CliRunner().invoke(main, ["demo", "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0
    docs = {d["meta"]["scenario"]: d for d in json.loads(res.output)["demo"]}
    assert set(docs) == set(SCENARIOS)
    sglang = docs["sglang"]
    # different NIC names with a pinned name; Triton cache on the shared $HOME; MNNVL on HGX
    assert {"NET001", "CLU002", "FS001", "ARCH004"} <= _codes(sglang)
    net = [f for f in sglang["findings"] if f["code"] == "NET001"]
    assert all("h200-node1" in f["subject"] for f in net) and any("ens5f0np0" in f["fix"] for f in net)
    triton = [f for f in sglang["findings"] if f["code"] == "FS001" and "triton" in f["subject"]]
    assert triton and "TRITON_CACHE_DIR=" in triton[0]["fix"]
    # SM100-only flag and the PP crash
    assert {"ARCH001", "ARCH003"} <= _codes(docs["vllm-pp"])
    tail = [f for f in docs["vllm-pp"]["findings"] if f["code"] == "ARCH001"][0]
    assert "requires SM100" in tail["message"] and "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION" in tail["fix"]
    # TP16 work-around: the 130 GB replicated/padded loader leaves no KV room; fastsafetensors staging
    assert {"MEM001", "MEM003", "MEM004"} <= _codes(docs["vllm-tp16"])
    mem = [f for f in docs["vllm-tp16"]["findings"] if f["code"] == "MEM001"][0]
    assert "--enable-expert-parallel" in mem["fix"] and "pipeline" not in mem["fix"]
    for doc in docs.values():
        assert doc["exit_code"] == 1


def test_demo_rich_runs_under_two_seconds() -> None:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "k3doctor", "demo"], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "120"})
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    assert wall < 2.0, f"demo took {wall:.2f} s"
    out = " ".join(proc.stdout.split())
    assert "requires SM100" in out and "cp_world_size must be positive" in out
    assert "per-rank memory" in out and "Traceback" not in out + proc.stderr


def test_identical_node_findings_are_merged_and_ranks_assigned() -> None:
    launch = SCENARIOS["sglang"][1]
    res = CliRunner().invoke(main, ["check", "--snapshot", NODES[0], "--snapshot", NODES[1], "--format", "json",
                                    "--", *launch], catch_exceptions=False)
    doc = json.loads(res.output)
    fs = [f for f in doc["findings"] if f["code"] == "FS001"]
    assert fs and all(f["subject"].startswith("nodes=h200-node0,h200-node1") for f in fs)
    # one launch for two snapshots: node ranks come from the snapshot order, so no rank clash
    assert "CLU001" not in _codes(doc)
    skipped = {r["code"]: r["reason"] for r in doc["results"] if r["status"] == "skip"}
    assert skipped["NET002"].startswith("all nodes:")


def test_launch_env_overrides_recorded_cache_paths() -> None:
    launch = ["TRITON_CACHE_DIR=/tmp/triton-rank0", *SCENARIOS["sglang"][1]]
    res = CliRunner().invoke(main, ["check", "--snapshot", NODES[0], "--select", "FS001", "--format", "json",
                                    "--", *launch], catch_exceptions=False)
    subjects = [f["subject"] for f in json.loads(res.output)["findings"]]
    assert subjects and not any("triton" in s for s in subjects)
    assert any("flashinfer" in s for s in subjects)


def test_launch_reresolution_keeps_the_model_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / "Kimi-K3"
    model.mkdir()
    res = CliRunner().invoke(main, ["check", "--format", "json", "--select", "FS003", "--", "sglang", "serve",
                                    "--model-path", str(model), "--tp", "2"], catch_exceptions=False)
    (result,) = json.loads(res.output)["results"]
    assert "no model directory" not in result["reason"]
