"""The ``gpu`` fact: NVIDIA GPUs on this node, read through NVML (``nvidia-ml-py``/``pynvml``).

Three producers give the same shape (the ``gpu`` schema in DEVELOPERS.md):

* :func:`probe_gpu` reads the live driver through NVML (``source: "nvml"``);
* :func:`gpu_fact_from_reading` converts a recorded reading (the format of
  ``shared/reference/h200-reading.json``) into the fact (``source: "reading"``), which is how test
  and demo snapshots are built without a GPU;
* the CLI's ``--target`` profiles (``source: "target"``, not built here).

Rules the probe follows: ``pynvml`` is imported inside the function (``k3doctor --help`` never loads
it); every NVML query is guarded on its own, so one unsupported or failing query never loses the
rest (``NotSupported``/``FunctionNotFound`` → ``None``, any other error → a line in that device's
``errors`` list); a missing library or driver gives ``{"ok": False, "error": ...}`` instead of an
exception; ``nvmlShutdown`` always runs. Nothing here initialises CUDA.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

__all__ = [
    "probe_gpu",
    "gpu_fact_from_reading",
    "derive_capabilities",
    "FABRIC_STATES",
]

#: NVML ``nvmlGpuFabricState_t`` values → names stored in the fact.
FABRIC_STATES: dict[int, str] = {0: "NOT_SUPPORTED", 1: "NOT_STARTED", 2: "IN_PROGRESS", 3: "COMPLETED"}

#: Product-name markers of systems whose NVLink domain spans several nodes (NVL72-class racks).
_MNNVL_NAMES = ("GB200", "GB300")

#: NVML return codes that mean "this device/driver cannot answer this query" → value ``None``.
_NOT_SUPPORTED_CODES = (3, 13)  # NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND


class _Unsupported(Exception):
    """Internal: the query is not supported here; the field stays ``None`` without an error line."""


# -- capabilities derived from compute capability (shared by every producer) ------------------
def derive_capabilities(device: Mapping[str, Any], cluster_uuid_nonzero: bool | None = None) -> dict[str, Any]:
    """``fp8``, ``fp4`` and ``nvlink_domain`` for one device dict.

    * ``fp8``: native FP8 tensor cores from compute capability 8.9 (Ada, Hopper, Blackwell);
    * ``fp4``: native FP4 (NVFP4/MXFP4) tensor cores from compute-capability major 10 (Blackwell);
    * ``nvlink_domain``: ``"multi-node"`` (the NVLink domain spans nodes: GB200/GB300 NVL-class, or an
      NVML fabric with a non-zero cluster UUID), ``"node"`` (NVLink inside this node), ``"none"``
      (NVML reports NVLink unsupported: PCIe only) or ``None`` (unknown).
    """
    cc = device.get("cc")
    fp8: bool | None = None
    fp4: bool | None = None
    if isinstance(cc, (list, tuple)) and len(cc) == 2 and all(isinstance(x, int) for x in cc):
        fp8 = (cc[0], cc[1]) >= (8, 9)
        fp4 = cc[0] >= 10
    name = str(device.get("name") or "")
    nvlink = device.get("nvlink") or {}
    fabric = device.get("fabric") or {}
    domain: str | None = None
    if any(marker in name.upper() for marker in _MNNVL_NAMES) or (
        cluster_uuid_nonzero and fabric.get("state") == "COMPLETED"
    ):
        domain = "multi-node"
    elif nvlink.get("supported") and (nvlink.get("total") or 0) > 0:
        domain = "node"
    elif nvlink.get("supported") is False:
        domain = "none"
    return {"fp8": fp8, "fp4": fp4, "nvlink_domain": domain}


def _empty_device(index: int) -> dict[str, Any]:
    keys = (
        "name uuid cc memory_total memory_free memory_used memory_reserved ecc_current ecc_pending "
        "ecc_volatile_uncorrected ecc_aggregate_uncorrected remapped_rows persistence mig_current "
        "mig_pending pcie_gen pcie_max_gen pcie_width pcie_max_width throttle_reasons nvlink fabric "
        "processes fp8 fp4 nvlink_domain"
    ).split()
    device: dict[str, Any] = {"index": index}
    device.update({key: None for key in keys})
    device["errors"] = []
    return device


def _failed(error: str, source: str = "nvml") -> dict[str, Any]:
    return {
        "ok": False,
        "error": error,
        "source": source,
        "driver": None,
        "cuda_driver": None,
        "nvml_version": None,
        "devices": [],
        "errors": [],
    }


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# -- live probe --------------------------------------------------------------------------------
def probe_gpu(ctx: Any = None) -> dict[str, Any]:
    """Read every GPU on this node through NVML (bounded by the runner's probe timeout).

    Returns the ``gpu`` fact. Never raises for a missing driver or one failing query.
    """
    try:
        import pynvml  # noqa: PLC0415 - lazy on purpose: only when the gpu fact is needed
    except ImportError as exc:
        return _failed(f"pynvml is not importable ({exc}); install it with `pip install nvidia-ml-py`")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return _failed(f"nvmlInit failed: {exc}")
    except OSError as exc:  # pragma: no cover - ctypes load problems not mapped by pynvml
        return _failed(f"cannot load libnvidia-ml.so.1: {exc}")
    except Exception as exc:  # noqa: BLE001 - e.g. a foreign module shadowing ``pynvml``
        return _failed(f"nvmlInit failed: {type(exc).__name__}: {exc}")
    try:
        return _read_all(pynvml)
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutdown problems must not hide the reading
            pass


def _guard(pynvml: Any, errors: list[str], what: str) -> Callable[..., Any]:
    """Return ``call(fn, *args)`` that yields ``fn(*args)``, or ``None`` on an NVML error."""

    def call(fn: Callable[..., Any] | None, *args: Any) -> Any:
        if fn is None:
            return None
        try:
            return fn(*args)
        except _Unsupported:
            return None
        except pynvml.NVMLError as exc:
            if getattr(exc, "value", None) in _NOT_SUPPORTED_CODES:
                return None
            errors.append(f"{what}: {type(exc).__name__}: {exc}")
            return None
        except Exception as exc:  # noqa: BLE001 - a binding bug (TypeError …) is one bad query
            errors.append(f"{what}: {type(exc).__name__}: {exc}")
            return None

    return call


def _read_all(pynvml: Any) -> dict[str, Any]:
    fact: dict[str, Any] = {
        "ok": True,
        "error": None,
        "source": "nvml",
        "driver": None,
        "cuda_driver": None,
        "nvml_version": None,
        "devices": [],
        "errors": [],
    }
    sys_errors: list[str] = fact["errors"]
    fact["driver"] = _guard(pynvml, sys_errors, "driver")(pynvml.nvmlSystemGetDriverVersion)
    if fact["driver"] is not None:
        fact["driver"] = _text(fact["driver"])
    cuda_v2 = getattr(pynvml, "nvmlSystemGetCudaDriverVersion_v2", None)
    cuda = _guard(pynvml, [], "cuda_driver")(cuda_v2) if cuda_v2 else None
    if cuda is None:
        cuda = _guard(pynvml, sys_errors, "cuda_driver")(pynvml.nvmlSystemGetCudaDriverVersion)
    fact["cuda_driver"] = int(cuda) if cuda is not None else None
    version = _guard(pynvml, sys_errors, "nvml_version")(pynvml.nvmlSystemGetNVMLVersion)
    fact["nvml_version"] = _text(version) if version is not None else None

    try:
        count = int(pynvml.nvmlDeviceGetCount())
    except pynvml.NVMLError as exc:
        fact["ok"] = False
        fact["error"] = f"nvmlDeviceGetCount failed: {exc}"
        return fact
    for index in range(count):
        fact["devices"].append(_read_device(pynvml, index))
    return fact


def _read_device(pynvml: Any, index: int) -> dict[str, Any]:
    device = _empty_device(index)
    errors: list[str] = device["errors"]

    def q(what: str) -> Callable[..., Any]:
        return _guard(pynvml, errors, what)

    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except pynvml.NVMLError as exc:
        errors.append(f"handle: {type(exc).__name__}: {exc}")
        return device

    name = q("name")(pynvml.nvmlDeviceGetName, handle)
    device["name"] = _text(name) if name is not None else None
    uuid = q("uuid")(pynvml.nvmlDeviceGetUUID, handle)
    device["uuid"] = _text(uuid) if uuid is not None else None
    cc = q("cc")(pynvml.nvmlDeviceGetCudaComputeCapability, handle)
    device["cc"] = [int(cc[0]), int(cc[1])] if cc is not None else None

    _read_memory(pynvml, handle, device, q)

    ecc = q("ecc_mode")(pynvml.nvmlDeviceGetEccMode, handle)
    if ecc is not None:
        device["ecc_current"], device["ecc_pending"] = bool(ecc[0]), bool(ecc[1])
    if device["ecc_current"] is not False:
        unc = getattr(pynvml, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        device["ecc_volatile_uncorrected"] = q("ecc_volatile_uncorrected")(
            pynvml.nvmlDeviceGetTotalEccErrors, handle, unc, getattr(pynvml, "NVML_VOLATILE_ECC", 0)
        )
        device["ecc_aggregate_uncorrected"] = q("ecc_aggregate_uncorrected")(
            pynvml.nvmlDeviceGetTotalEccErrors, handle, unc, getattr(pynvml, "NVML_AGGREGATE_ECC", 1)
        )
    rows = q("remapped_rows")(getattr(pynvml, "nvmlDeviceGetRemappedRows", None), handle)
    if rows is not None:
        device["remapped_rows"] = {
            "correctable": int(rows[0]),
            "uncorrectable": int(rows[1]),
            "pending": bool(rows[2]),
            "failure": bool(rows[3]),
        }

    persistence = q("persistence")(pynvml.nvmlDeviceGetPersistenceMode, handle)
    device["persistence"] = bool(persistence) if persistence is not None else None
    mig = q("mig")(getattr(pynvml, "nvmlDeviceGetMigMode", None), handle)
    if mig is not None:
        device["mig_current"], device["mig_pending"] = bool(mig[0]), bool(mig[1])

    device["pcie_gen"] = q("pcie_gen")(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle)
    device["pcie_max_gen"] = q("pcie_max_gen")(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle)
    device["pcie_width"] = q("pcie_width")(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle)
    device["pcie_max_width"] = q("pcie_max_width")(pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle)

    reasons_fn = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )
    reasons = q("throttle_reasons")(reasons_fn, handle)
    device["throttle_reasons"] = int(reasons) if reasons is not None else None

    device["nvlink"] = _read_nvlink(pynvml, handle, errors)
    cluster_uuid_nonzero = _read_fabric(pynvml, handle, device, q)
    device["processes"] = _read_processes(pynvml, handle, q)
    device.update(derive_capabilities(device, cluster_uuid_nonzero))
    return device


def _read_memory(pynvml: Any, handle: Any, device: dict[str, Any], q: Callable[[str], Callable[..., Any]]) -> None:
    v2 = getattr(pynvml, "nvmlMemory_v2", None)
    mem = None
    if v2 is not None:
        mem = _guard(pynvml, [], "memory_v2")(pynvml.nvmlDeviceGetMemoryInfo, handle, v2)
    if mem is not None:
        device["memory_total"] = int(mem.total)
        device["memory_free"] = int(mem.free)
        device["memory_used"] = int(mem.used)
        device["memory_reserved"] = int(mem.reserved)
        return
    # v1: ``used`` includes the driver-reserved memory; ``reserved`` stays unknown.
    mem = q("memory")(pynvml.nvmlDeviceGetMemoryInfo, handle)
    if mem is not None:
        device["memory_total"] = int(mem.total)
        device["memory_free"] = int(mem.free)
        device["memory_used"] = int(mem.used)


def _read_nvlink(pynvml: Any, handle: Any, errors: list[str]) -> dict[str, Any]:
    """Count NVLinks: ``total`` links NVML answers for, ``active`` those in state enabled.

    The device's link count (field ``NVML_FI_DEV_NVLINK_LINK_COUNT``; 18 on Hopper SXM) bounds the
    loop when NVML gives it, so a binding whose ``NVML_NVLINK_MAX_LINKS`` is larger (36) never
    counts links the GPU does not have.
    """
    max_links = _nvlink_link_count(pynvml, handle)
    if max_links == 0:
        return {"supported": False, "active": 0, "total": 0}
    if max_links is None:
        max_links = int(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18))
    total = active = 0
    failures: set[str] = set()
    for link in range(max_links):
        try:
            state = pynvml.nvmlDeviceGetNvLinkState(handle, link)
        except pynvml.NVMLError as exc:
            # NotSupported / InvalidArgument (past the last link) / FunctionNotFound: no such link.
            if getattr(exc, "value", None) not in (*_NOT_SUPPORTED_CODES, 2):
                failures.add(f"nvlink: {type(exc).__name__}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001
            failures.add(f"nvlink: {type(exc).__name__}: {exc}")
            continue
        total += 1
        if state:
            active += 1
    errors.extend(sorted(failures))
    if total == 0 and failures:
        return {"supported": None, "active": None, "total": None}
    return {"supported": total > 0, "active": active, "total": total}


def _nvlink_link_count(pynvml: Any, handle: Any) -> int | None:
    field = getattr(pynvml, "NVML_FI_DEV_NVLINK_LINK_COUNT", None)
    get_fields = getattr(pynvml, "nvmlDeviceGetFieldValues", None)
    if field is None or get_fields is None:
        return None
    try:
        value = get_fields(handle, [field])[0]
        if int(value.nvmlReturn) != 0:
            return None
        return int(value.value.uiVal)
    except Exception:  # noqa: BLE001 - optional refinement; the loop below still works
        return None


def _read_fabric(
    pynvml: Any, handle: Any, device: dict[str, Any], q: Callable[[str], Callable[..., Any]]
) -> bool | None:
    """Fill ``device["fabric"]``; return whether the fabric cluster UUID is non-zero.

    nvidia-ml-py ≥ 12.560 takes a caller-allocated struct (``nvmlDeviceGetGpuFabricInfoV(h,
    byref(info))``); older bindings took only the handle and returned the struct.
    """
    import ctypes  # noqa: PLC0415

    def query() -> Any:
        fn_v = getattr(pynvml, "nvmlDeviceGetGpuFabricInfoV", None)
        for struct_name in ("c_nvmlGpuFabricInfo_v3_t", "c_nvmlGpuFabricInfo_v2_t"):
            struct = getattr(pynvml, struct_name, None)
            if fn_v is None or struct is None:
                continue
            info = struct()  # the constructor sets the matching ``version``
            try:
                fn_v(handle, ctypes.byref(info))
                return info
            except pynvml.NVMLError as exc:
                # an older driver may reject the newer struct version: try the next one
                if getattr(exc, "value", None) in (*_NOT_SUPPORTED_CODES,):
                    raise
                if struct_name == "c_nvmlGpuFabricInfo_v2_t":
                    raise
        fn = getattr(pynvml, "nvmlDeviceGetGpuFabricInfo", None)
        legacy = getattr(pynvml, "c_nvmlGpuFabricInfo_t", None)
        if fn is None:
            raise _Unsupported()
        if legacy is not None:
            info = legacy()
            try:
                fn(handle, ctypes.byref(info))
                return info
            except TypeError:
                pass
        return fn(handle)  # very old binding: returns the struct

    info = q("fabric")(query)
    if info is None:
        return None
    raw_state = int(info.state) & 0xFF  # C type is unsigned char; some bindings declare c_uint
    state = FABRIC_STATES.get(raw_state, str(raw_state))
    if state == "NOT_SUPPORTED":
        return None
    device["fabric"] = {"state": state, "status": int(info.status)}
    try:
        return any(int(b) for b in info.clusterUuid)
    except Exception:  # noqa: BLE001
        return None


def _read_processes(pynvml: Any, handle: Any, q: Callable[[str], Callable[..., Any]]) -> list[dict[str, Any]] | None:
    found: dict[int, dict[str, Any]] = {}
    answered = False
    for what, fn_name in (
        ("processes", "nvmlDeviceGetComputeRunningProcesses"),
        ("graphics_processes", "nvmlDeviceGetGraphicsRunningProcesses"),
    ):
        procs = q(what)(getattr(pynvml, fn_name, None), handle)
        if procs is None:
            continue
        answered = True
        for proc in procs:
            pid = int(proc.pid)
            used = getattr(proc, "usedGpuMemory", None)
            entry = found.setdefault(pid, {"pid": pid, "used_memory": None, "name": None})
            if used is not None:
                entry["used_memory"] = max(int(used), entry["used_memory"] or 0)
    if not answered:
        return None
    for entry in found.values():
        name = _guard(pynvml, [], "process_name")(getattr(pynvml, "nvmlSystemGetProcessName", None), entry["pid"])
        entry["name"] = _text(name) if name is not None else None
    return sorted(found.values(), key=lambda p: p["pid"])


# -- recorded readings -------------------------------------------------------------------------
_ERR_RE = re.compile(r"^ERR\s+(?P<what>.*)$", re.S)


def _reading_value(value: Any, what: str, errors: list[str]) -> Any:
    """A recorded value, or ``None`` for an ``"ERR …"`` string (NotSupported is silent)."""
    if isinstance(value, str):
        match = _ERR_RE.match(value)
        if match:
            text = match.group("what").strip()
            if "NotSupported" not in text and "Not Supported" not in text:
                errors.append(f"{what}: {text}")
            return None
    return value


def _smi_blocks(smi_q: str) -> dict[str, str]:
    """Split ``nvidia-smi -q`` text into per-GPU blocks keyed by upper-case PCI bus id."""
    blocks: dict[str, str] = {}
    parts = re.split(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$", smi_q or "", flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        blocks[parts[i].upper()] = parts[i + 1]
    return blocks


def _smi_max_width(block: str) -> int | None:
    match = re.search(r"Link Width\s*\n\s*Max\s*:\s*(\d+)x", block)
    return int(match.group(1)) if match else None


def gpu_fact_from_reading(reading: Mapping[str, Any]) -> dict[str, Any]:
    """Convert a recorded node reading (``h200-reading.json`` format) into the ``gpu`` fact.

    Pure: no NVML, no files. ``"ERR …"`` strings become ``None`` (NotSupported silently, other
    errors into the device's ``errors``). ``pcie_max_width``, absent from the NVML part of the
    reading, is taken from the recorded ``nvidia-smi -q`` text when present.
    """
    nvml = reading.get("nvml")
    if not isinstance(nvml, Mapping):
        return _failed("the reading has no \"nvml\" section", source="reading")
    if nvml.get("error"):
        return _failed(str(nvml["error"]), source="reading")
    cuda = nvml.get("cuda_driver")
    fact: dict[str, Any] = {
        "ok": True,
        "error": None,
        "source": "reading",
        "driver": nvml.get("driver"),
        "cuda_driver": int(cuda) if isinstance(cuda, (int, float)) else None,
        "nvml_version": nvml.get("nvml_version"),
        "devices": [],
        "errors": [],
    }
    smi_blocks = _smi_blocks(str(reading.get("nvidia_smi_q") or ""))
    for index, raw in enumerate(nvml.get("devices") or []):
        fact["devices"].append(_device_from_reading(raw, raw.get("index", index), smi_blocks))
    return fact


def _pair(value: Any) -> tuple[Any, Any]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return value[0], value[1]
    return None, None


def _opt_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _fabric_from_reading(fabric: Any) -> tuple[dict[str, Any] | None, bool | None]:
    """NVML's GPU fabric info: (``{"state", "status"}`` unless NOT_SUPPORTED, whether the NVLink
    cluster UUID is set)."""
    if not isinstance(fabric, Mapping):
        return None, None
    state = fabric.get("state")
    state_name = FABRIC_STATES.get(state, str(state)) if isinstance(state, int) else str(state).upper()
    out = {"state": state_name, "status": fabric.get("status")} if state_name != "NOT_SUPPORTED" else None
    uuid = fabric.get("clusterUuid") or fabric.get("cluster_uuid")
    if isinstance(uuid, (list, tuple)):
        return out, any(int(b) for b in uuid)
    if isinstance(uuid, str):
        return out, bool(uuid.strip("0-"))
    return out, None


def _device_from_reading(raw: Mapping[str, Any], index: int, smi_blocks: Mapping[str, str]) -> dict[str, Any]:
    device = _empty_device(int(index))
    errors: list[str] = device["errors"]

    def get(key: str) -> Any:
        return _reading_value(raw.get(key), key, errors)

    device["name"] = get("name")
    device["uuid"] = get("uuid")
    cc = get("cc")
    device["cc"] = [int(cc[0]), int(cc[1])] if isinstance(cc, (list, tuple)) and len(cc) == 2 else None

    mem_v2 = get("mem_v2")
    mem = get("mem")
    if isinstance(mem_v2, Mapping):
        for key in ("total", "free", "used", "reserved"):
            if mem_v2.get(key) is not None:
                device[f"memory_{key}"] = int(mem_v2[key])
    elif isinstance(mem, Mapping):
        for key in ("total", "free", "used"):
            if mem.get(key) is not None:
                device[f"memory_{key}"] = int(mem[key])

    current, pending = _pair(get("ecc_mode"))
    device["ecc_current"], device["ecc_pending"] = _opt_bool(current), _opt_bool(pending)
    device["ecc_volatile_uncorrected"] = get("ecc_volatile_uncorrected")
    device["ecc_aggregate_uncorrected"] = get("ecc_aggregate_uncorrected")
    rows = get("remapped_rows")
    if isinstance(rows, (list, tuple)) and len(rows) == 4:
        device["remapped_rows"] = {
            "correctable": int(rows[0]),
            "uncorrectable": int(rows[1]),
            "pending": bool(rows[2]),
            "failure": bool(rows[3]),
        }
    elif isinstance(rows, Mapping):
        device["remapped_rows"] = dict(rows)
    device["persistence"] = _opt_bool(get("persistence"))
    current, pending = _pair(get("mig"))
    device["mig_current"], device["mig_pending"] = _opt_bool(current), _opt_bool(pending)

    for key in ("pcie_gen", "pcie_max_gen", "pcie_width", "pcie_max_width"):
        device[key] = get(key)
    if device["pcie_max_width"] is None:
        pci = raw.get("pci")
        bus = str(pci.get("busId") or "").upper() if isinstance(pci, Mapping) else ""
        block = smi_blocks.get(bus)
        if block is None and len(smi_blocks) == 1 and int(index) == 0:
            block = next(iter(smi_blocks.values()))
        device["pcie_max_width"] = _smi_max_width(block) if block else None

    throttle = get("throttle")
    device["throttle_reasons"] = int(throttle) if isinstance(throttle, int) else None

    device["nvlink"] = _nvlink_from_reading(raw.get("nvlink"), errors)
    device["fabric"], cluster_nonzero = _fabric_from_reading(get("fabric"))

    procs = get("procs")
    if isinstance(procs, list):
        device["processes"] = [
            {
                "pid": int(p.get("pid", 0)),
                "used_memory": p.get("used_memory", p.get("usedGpuMemory")),
                "name": p.get("name"),
            }
            for p in procs
            if isinstance(p, Mapping)
        ]
    device.update(derive_capabilities(device, cluster_nonzero))
    return device


def _nvlink_from_reading(raw: Any, errors: list[str]) -> dict[str, Any] | None:
    if isinstance(raw, Mapping) and {"supported", "active", "total"} <= set(raw):
        return dict(raw)
    if not isinstance(raw, Mapping):
        return None
    total = active = 0
    unsupported = failed = False
    for link, value in raw.items():
        if isinstance(value, str) and value.startswith("ERR"):
            if "NotSupported" in value or "InvalidArgument" in value:
                unsupported = True
            else:
                failed = True
                errors.append(f"nvlink[{link}]: {value[3:].strip()}")
            continue
        total += 1
        active += 1 if value else 0
    if total == 0:
        if failed:
            return {"supported": None, "active": None, "total": None}
        return {"supported": False, "active": 0, "total": 0} if unsupported else None
    return {"supported": True, "active": active, "total": total}
