"""Live GPU tests: the real NVML probe on this machine (skipped without a GPU).

Run on a GPU node with ``python -m pytest -m gpu tests/test_gpu_live.py``. The conftest skips
``gpu``-marked tests where NVML sees no GPU; each test also skips itself if ``nvmlInit`` fails.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from k3doctor.checks.gpu import CHECKS
from k3doctor.facts import Facts, ProbeContext, call_with_timeout
from k3doctor.model import Severity, Status
from k3doctor.runner import run_checks

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def live_fact() -> dict[str, Any]:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"NVML unavailable: {exc}")
    from k3doctor.probes.gpu import probe_gpu

    fact = call_with_timeout(lambda: probe_gpu(ProbeContext()), 20.0, "gpu")
    if not fact.get("ok"):
        pytest.skip(f"NVML probe not ok: {fact.get('error')}")
    return fact


def test_live_schema_and_sane_values(live_fact: dict[str, Any]) -> None:
    json.dumps(live_fact)
    assert live_fact["source"] == "nvml"
    assert isinstance(live_fact["driver"], str) and live_fact["driver"]
    assert isinstance(live_fact["cuda_driver"], int) and live_fact["cuda_driver"] >= 11000
    assert live_fact["devices"], "NVML is up but reported no device"
    for i, device in enumerate(live_fact["devices"]):
        assert device["index"] == i
        assert device["name"] and device["uuid"].startswith(("GPU-", "MIG-"))
        major, minor = device["cc"]
        assert 7 <= major <= 12 and 0 <= minor <= 9
        assert device["fp8"] is ((major, minor) >= (8, 9))
        assert device["fp4"] is (major >= 10)
        total, free = device["memory_total"], device["memory_free"]
        assert 8 * 2**30 < total < 2**40
        assert 0 <= free <= total
        if device["memory_reserved"] is not None:
            assert 0 <= device["memory_reserved"] < total // 10
            assert device["memory_used"] + device["memory_reserved"] + free <= total + 2**20
        for key in ("ecc_current", "persistence", "mig_current"):
            assert device[key] in (True, False, None), key
        if device["pcie_width"] is not None and device["pcie_max_width"] is not None:
            assert 1 <= device["pcie_width"] <= device["pcie_max_width"] <= 32
        assert isinstance(device["throttle_reasons"], int)
        nvlink = device["nvlink"]
        assert nvlink is None or nvlink["supported"] in (True, False, None)
        if nvlink and nvlink["supported"]:
            assert 0 <= nvlink["active"] <= nvlink["total"] <= 36
        assert device["fabric"] is None or device["fabric"]["state"] in ("NOT_STARTED", "IN_PROGRESS", "COMPLETED")
        assert isinstance(device["processes"], list)
        assert isinstance(device["errors"], list)


def test_live_checks_run_without_crash(live_fact: dict[str, Any]) -> None:
    checks = {c.code: c for c in CHECKS}
    report = run_checks(checks, list(checks), Facts({"gpu": live_fact}))
    statuses = {r.code: r.status for r in report.results}
    assert statuses["GPU001"] is Status.PASS
    assert Status.CRASH not in statuses.values()
    gpu003 = [f for f in report.findings if f.code == "GPU003" and f.severity is Severity.INFO]
    assert gpu003, "GPU003 reports the model and compute capability"


def test_live_h200_matches_the_reading(live_fact: dict[str, Any]) -> None:
    """On the H200 the reading came from, the probe reproduces its stable values."""
    device = live_fact["devices"][0]
    if "H200" not in (device["name"] or ""):
        pytest.skip("not an H200")
    assert device["cc"] == [9, 0]
    assert device["memory_total"] == 150754820096
    assert device["pcie_max_width"] == 16
    # the newer fabric call signature must not produce a TypeError
    assert not [e for e in device["errors"] if "TypeError" in e]
