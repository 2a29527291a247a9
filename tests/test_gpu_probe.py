"""The live NVML probe against a fake ``pynvml`` module, and the recorded-reading converter.

The fake implements only the calls the probe makes, with the signatures of nvidia-ml-py 13.x
(fabric info through ``nvmlDeviceGetGpuFabricInfoV(handle, byref(struct))``).
"""

from __future__ import annotations

import copy
import ctypes
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from k3doctor.facts import ProbeContext
from k3doctor.probes.gpu import gpu_fact_from_reading, probe_gpu

SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"
READING = json.loads((SNAPSHOTS / "h200-reading.json").read_text(encoding="utf-8"))

#: the device keys DEVELOPERS.md promises (plus the per-device ``errors`` list)
DEVICE_KEYS = {
    "index", "name", "uuid", "cc", "memory_total", "memory_free", "memory_used", "memory_reserved",
    "ecc_current", "ecc_pending", "ecc_volatile_uncorrected", "ecc_aggregate_uncorrected",
    "remapped_rows", "persistence", "mig_current", "mig_pending", "pcie_gen", "pcie_max_gen",
    "pcie_width", "pcie_max_width", "throttle_reasons", "nvlink", "fabric", "processes", "fp8", "fp4",
    "nvlink_domain", "errors",
}
TOP_KEYS = {"ok", "error", "source", "driver", "cuda_driver", "nvml_version", "devices", "errors"}

NOT_SUPPORTED, INVALID_ARGUMENT, FUNCTION_NOT_FOUND, GPU_IS_LOST, UNKNOWN = 3, 2, 13, 15, 999


class FabricV3(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_uint8 * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint32),
        ("state", ctypes.c_uint),
        ("healthMask", ctypes.c_uint32),
        ("healthSummary", ctypes.c_uint8),
    ]


class FakeNVML:
    """Builds a ``pynvml``-like module; ``fail`` maps query name → NVML error code."""

    def __init__(self, gpus: int = 2, fail: dict[str, int] | None = None, init_error: int | None = None) -> None:
        self.gpus = gpus
        self.fail = dict(fail or {})
        self.init_error = init_error
        self.shutdowns = 0
        self.fabric_state = 3
        self.nvlinks = 18
        self.inactive_links: set[int] = set()
        self.link_count: int | None = None
        self.procs: dict[int, list[Any]] = {}

    def module(self) -> types.ModuleType:
        m = types.ModuleType("pynvml")

        class NVMLError(Exception):
            def __init__(self, value: int) -> None:
                super().__init__(value)
                self.value = value

            def __str__(self) -> str:
                return {3: "Not Supported", 9: "Driver Not Loaded", 15: "GPU is lost"}.get(self.value, f"Error {self.value}")

        m.NVMLError = NVMLError
        m.nvmlMemory_v2 = 0x02000028
        m.NVML_NVLINK_MAX_LINKS = 36
        m.NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
        m.NVML_VOLATILE_ECC = 0
        m.NVML_AGGREGATE_ECC = 1
        m.c_nvmlGpuFabricInfo_v3_t = FabricV3
        fake = self

        def q(name: str, value: Any) -> Any:
            def fn(*args: Any) -> Any:
                if name in fake.fail:
                    raise NVMLError(fake.fail[name])
                return value(*args) if callable(value) else value

            return fn

        def init() -> None:
            if fake.init_error is not None:
                raise NVMLError(fake.init_error)

        def shutdown() -> None:
            fake.shutdowns += 1

        m.nvmlInit = init
        m.nvmlShutdown = shutdown
        m.nvmlSystemGetDriverVersion = q("driver", "580.159.04")
        m.nvmlSystemGetCudaDriverVersion_v2 = q("cuda_driver", 13000)
        m.nvmlSystemGetCudaDriverVersion = q("cuda_driver_v1", 13000)
        m.nvmlSystemGetNVMLVersion = q("nvml_version", "13.580.159.04")
        m.nvmlDeviceGetCount = q("count", lambda: fake.gpus)
        m.nvmlDeviceGetHandleByIndex = q("handle", lambda i: ("handle", i))
        m.nvmlDeviceGetName = q("name", b"NVIDIA H200")
        m.nvmlDeviceGetUUID = q("uuid", lambda h: f"GPU-0000000{h[1]}-ba57-584f-ff04-aefd1f03f4f5")
        m.nvmlDeviceGetCudaComputeCapability = q("cc", (9, 0))

        def memory(h: Any, version: Any = None) -> Any:
            if version is not None:
                if "memory_v2" in fake.fail:
                    raise NVMLError(fake.fail["memory_v2"])
                return types.SimpleNamespace(total=150754820096, reserved=644939776, free=150109880320, used=0)
            if "memory" in fake.fail:
                raise NVMLError(fake.fail["memory"])
            return types.SimpleNamespace(total=150754820096, free=150109880320, used=644939776)

        m.nvmlDeviceGetMemoryInfo = memory
        m.nvmlDeviceGetEccMode = q("ecc_mode", [1, 1])
        m.nvmlDeviceGetTotalEccErrors = q("ecc", lambda h, t, c: 0)
        m.nvmlDeviceGetRemappedRows = q("remapped_rows", (0, 0, 0, 0))
        m.nvmlDeviceGetPersistenceMode = q("persistence", 1)
        m.nvmlDeviceGetMigMode = q("mig", [0, 0])
        m.nvmlDeviceGetCurrPcieLinkGeneration = q("pcie_gen", 5)
        m.nvmlDeviceGetMaxPcieLinkGeneration = q("pcie_max_gen", 5)
        m.nvmlDeviceGetCurrPcieLinkWidth = q("pcie_width", 16)
        m.nvmlDeviceGetMaxPcieLinkWidth = q("pcie_max_width", 16)
        m.nvmlDeviceGetCurrentClocksEventReasons = q("throttle", 1)

        def nvlink_state(h: Any, link: int) -> int:
            if "nvlink" in fake.fail:
                raise NVMLError(fake.fail["nvlink"])
            if link >= fake.nvlinks:
                if fake.link_count is not None:
                    return 0  # worst case: the driver answers "inactive" for links the GPU lacks
                raise NVMLError(INVALID_ARGUMENT)
            return 0 if link in fake.inactive_links else 1

        m.nvmlDeviceGetNvLinkState = nvlink_state
        m.NVML_FI_DEV_NVLINK_LINK_COUNT = 91

        def field_values(h: Any, fields: list[int]) -> list[Any]:
            if fake.link_count is None:
                return [types.SimpleNamespace(nvmlReturn=NOT_SUPPORTED, value=types.SimpleNamespace(uiVal=0))]
            return [types.SimpleNamespace(nvmlReturn=0, value=types.SimpleNamespace(uiVal=fake.link_count))]

        m.nvmlDeviceGetFieldValues = field_values

        def fabric_v(h: Any, ref: Any) -> int:
            if "fabric" in fake.fail:
                raise NVMLError(fake.fail["fabric"])
            info = ref._obj  # ctypes.byref(...) keeps the struct here
            info.state = fake.fabric_state
            info.status = 0
            return 0

        m.nvmlDeviceGetGpuFabricInfoV = fabric_v
        m.nvmlDeviceGetComputeRunningProcesses = q("processes", lambda h: fake.procs.get(h[1], []))
        m.nvmlDeviceGetGraphicsRunningProcesses = q("graphics_processes", lambda h: [])
        m.nvmlSystemGetProcessName = q("process_name", lambda pid: b"python3")
        return m


@pytest.fixture()
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> FakeNVML:
    fake = FakeNVML()

    def install() -> None:
        monkeypatch.setitem(sys.modules, "pynvml", fake.module())

    fake.install = install  # type: ignore[attr-defined]
    install()
    return fake


def probe(fake: FakeNVML) -> dict[str, Any]:
    fake.install()  # type: ignore[attr-defined]
    return probe_gpu(ProbeContext())


def test_probe_healthy_hgx(fake_nvml: FakeNVML) -> None:
    fact = probe(fake_nvml)
    assert set(fact) == TOP_KEYS
    assert fact["ok"] is True and fact["source"] == "nvml"
    assert fact["cuda_driver"] == 13000 and fact["driver"] == "580.159.04"
    assert len(fact["devices"]) == 2
    device = fact["devices"][1]
    assert set(device) == DEVICE_KEYS
    assert device["index"] == 1 and device["name"] == "NVIDIA H200" and device["cc"] == [9, 0]
    assert device["memory_reserved"] == 644939776 and device["memory_used"] == 0
    assert device["nvlink"] == {"supported": True, "active": 18, "total": 18}
    assert device["fabric"] == {"state": "COMPLETED", "status": 0}
    assert device["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert (device["persistence"], device["mig_current"], device["ecc_current"]) == (True, False, True)
    assert (device["fp8"], device["fp4"], device["nvlink_domain"]) == (True, False, "node")
    assert device["errors"] == [] and device["processes"] == []
    assert fake_nvml.shutdowns == 1
    json.dumps(fact)  # JSON-serialisable


def test_probe_not_supported_is_silent_other_errors_recorded(fake_nvml: FakeNVML) -> None:
    fake_nvml.fail = {"nvlink": NOT_SUPPORTED, "fabric": NOT_SUPPORTED, "memory_v2": FUNCTION_NOT_FOUND, "throttle": UNKNOWN}
    fact = probe(fake_nvml)
    device = fact["devices"][0]
    assert device["nvlink"] == {"supported": False, "active": 0, "total": 0}
    assert device["nvlink_domain"] == "none"
    assert device["fabric"] is None
    # memory v1 fallback: used includes the reserved part, reserved unknown
    assert device["memory_used"] == 644939776 and device["memory_reserved"] is None
    assert device["throttle_reasons"] is None
    assert device["errors"] == ["throttle_reasons: NVMLError: Error 999"]
    assert device["name"] == "NVIDIA H200"  # the other queries still answered


def test_probe_inactive_links_fabric_in_progress_and_processes(fake_nvml: FakeNVML) -> None:
    fake_nvml.inactive_links = {3, 7}
    fake_nvml.fabric_state = 2
    fake_nvml.procs = {0: [types.SimpleNamespace(pid=4242, usedGpuMemory=20 * 10**9)]}
    fact = probe(fake_nvml)
    device = fact["devices"][0]
    assert device["nvlink"] == {"supported": True, "active": 16, "total": 18}
    assert device["fabric"] == {"state": "IN_PROGRESS", "status": 0}
    assert device["processes"] == [{"pid": 4242, "used_memory": 20 * 10**9, "name": "python3"}]


def test_probe_nvlink_count_bounds_the_link_loop(fake_nvml: FakeNVML) -> None:
    fake_nvml.link_count = 18
    assert probe(fake_nvml)["devices"][0]["nvlink"] == {"supported": True, "active": 18, "total": 18}
    fake_nvml.link_count = 0
    assert probe(fake_nvml)["devices"][0]["nvlink"] == {"supported": False, "active": 0, "total": 0}


def test_probe_lost_gpu_is_one_device_error(fake_nvml: FakeNVML) -> None:
    fake_nvml.fail = {"cc": GPU_IS_LOST}
    fact = probe(fake_nvml)
    assert fact["ok"] is True
    assert all(d["cc"] is None and d["fp8"] is None for d in fact["devices"])
    assert fact["devices"][0]["errors"] == ["cc: NVMLError: GPU is lost"]


def test_probe_init_failure_is_a_fact_not_an_exception(fake_nvml: FakeNVML) -> None:
    fake_nvml.init_error = 9
    fact = probe(fake_nvml)
    assert fact["ok"] is False
    assert fact["error"] == "nvmlInit failed: Driver Not Loaded"
    assert fact["devices"] == []
    assert fake_nvml.shutdowns == 0


def test_probe_without_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    fact = probe_gpu(ProbeContext())
    assert fact["ok"] is False and "nvidia-ml-py" in fact["error"]


def test_probe_old_fabric_binding(fake_nvml: FakeNVML) -> None:
    module = fake_nvml.module()
    del module.nvmlDeviceGetGpuFabricInfoV
    module.nvmlDeviceGetGpuFabricInfo = lambda h: types.SimpleNamespace(state=1, status=0, clusterUuid=[0] * 16)
    sys.modules["pynvml"] = module
    fact = probe_gpu(ProbeContext())
    assert fact["devices"][0]["fabric"] == {"state": "NOT_STARTED", "status": 0}


def test_probe_does_not_import_pynvml_at_module_import() -> None:
    import importlib

    import k3doctor.probes.gpu as mod

    source = Path(mod.__file__).read_text(encoding="utf-8")
    head = source.split("def probe_gpu", 1)[0]
    assert "import pynvml" not in head
    importlib.reload(mod)


# -- recorded readings -------------------------------------------------------------------------
def test_reading_schema_matches_probe() -> None:
    fact = gpu_fact_from_reading(READING)
    assert set(fact) == TOP_KEYS
    assert fact["source"] == "reading"
    (device,) = fact["devices"]
    assert set(device) == DEVICE_KEYS
    assert device["uuid"] == "GPU-4647951d-ba57-584f-ff04-aefd1f03f4f5"
    assert device["memory_used"] == 0  # v2: used excludes the reserved 616 MiB
    # the reading's fabric query used the old call signature: recorded as a query error
    assert device["errors"] and device["errors"][0].startswith("fabric: TypeError")


def test_reading_mutations_and_bad_input() -> None:
    reading = copy.deepcopy(READING)
    dev = reading["nvml"]["devices"][0]
    dev["nvlink"] = {str(i): (1 if i < 12 else 0) for i in range(18)}
    dev["fabric"] = {"state": 2, "status": 0, "clusterUuid": [0] * 16}
    dev["procs"] = [{"pid": 7, "usedGpuMemory": 5, "name": "x"}]
    dev["ecc_volatile_uncorrected"] = "ERR NVMLError_Unknown: Unknown Error"
    device = gpu_fact_from_reading(reading)["devices"][0]
    assert device["nvlink"] == {"supported": True, "active": 12, "total": 18}
    assert device["fabric"] == {"state": "IN_PROGRESS", "status": 0}
    assert device["processes"] == [{"pid": 7, "used_memory": 5, "name": "x"}]
    assert device["ecc_volatile_uncorrected"] is None
    assert any(e.startswith("ecc_volatile_uncorrected") for e in device["errors"])
    assert gpu_fact_from_reading({})["ok"] is False
