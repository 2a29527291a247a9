"""GPU family: GPU health and capacity through NVML (GPU001–GPU012).

Every check reads the ``gpu`` fact (schema in DEVELOPERS.md) and, where it needs them, ``launch``,
``env`` and ``packages``. All of them except GPU001 require GPU001, so a dead driver gives one
error and the rest are skipped with that reason. Checks never touch the machine and never print.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..check import Check, module_checks
from ..model import EvidenceValue, Finding, Severity, Skip

__all__ = [
    "CHECKS",
    "THROTTLE_BITS",
    "HW_THROTTLE_BITS",
    "GPU001",
    "GPU002",
    "GPU003",
    "GPU004",
    "GPU005",
    "GPU006",
    "GPU007",
    "GPU008",
    "GPU009",
    "GPU010",
    "GPU011",
    "GPU012",
]

GB = 10**9

#: NVML clock-event ("throttle") reason bits, as in nvml.h / nvidia-ml-py
#: (``nvmlClocksEventReason*``, older alias ``nvmlClocksThrottleReason*``). A test keeps them in
#: step with the installed pynvml.
THROTTLE_BITS: dict[str, int] = {
    "GpuIdle": 0x1,
    "ApplicationsClocksSetting": 0x2,
    "SwPowerCap": 0x4,
    "HwSlowdown": 0x8,
    "SyncBoost": 0x10,
    "SwThermalSlowdown": 0x20,
    "HwThermalSlowdown": 0x40,
    "HwPowerBrakeSlowdown": 0x80,
    "DisplayClockSetting": 0x100,
}
#: Reasons that mean the hardware itself is holding the clocks down (warning at preflight).
HW_THROTTLE_BITS = ("HwSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown")

#: DCGM ``DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE``: this many uncorrectable remapped rows → warn.
ROW_REMAP_UNCORRECTABLE_LIMIT = 512
#: SGLang raises "memory capacity is unbalanced" when min free < local free × this.
SGLANG_IMBALANCE_RATIO = 0.9
#: Free memory below this share of (total − reserved) at preflight → warning.
FREE_MEMORY_RATIO = 0.9
#: Free memory a fresh CUDA context takes before vLLM measures (H200 reading: NVML free
#: 150,109,880,320 B vs ``torch.cuda.mem_get_info`` free 149,557,477,376 B).
CUDA_CONTEXT_BYTES = 552_402_944
#: PyTorch wheel CUDA tags, newest last (``https://download.pytorch.org/whl/cuXYZ``).
TORCH_CUDA_TAGS = (118, 121, 124, 126, 128, 129, 130)


# -- helpers ---------------------------------------------------------------------------------
def _optional(facts: Any, name: str) -> Any:
    """The fact, or ``None`` when it is unknown or its probe failed."""
    try:
        return facts.get(name)
    except Skip:
        return None
    except Exception:  # noqa: BLE001 - a failed probe is reported by the runner, not here
        return None


def _gpu(facts: Any) -> dict[str, Any]:
    gpu = facts.get("gpu")
    if not isinstance(gpu, Mapping) or not gpu.get("ok"):
        reason = gpu.get("error") if isinstance(gpu, Mapping) else "no gpu fact"
        raise Skip(f"requires GPU001 (NVML not reachable: {reason})")
    return dict(gpu)


def _devices(gpu: Mapping[str, Any]) -> list[dict[str, Any]]:
    devices = [d for d in gpu.get("devices") or [] if isinstance(d, Mapping)]
    if not devices:
        raise Skip("requires GPU001 (no GPUs reported)")
    return [dict(d) for d in devices]


def _unknown(gpu: Mapping[str, Any], what: str) -> Skip:
    """The skip for a value no device reports: a ``--target`` profile never has live state."""
    if gpu.get("source") == "target":
        return Skip("live GPU state is not in a --target profile (use a live run or a snapshot)")
    return Skip(f"NVML did not report {what} for any GPU")


def _with(gpu: Mapping[str, Any], devices: list[dict[str, Any]], *keys: str, what: str) -> list[dict[str, Any]]:
    """Devices that report every key; skip when none does (e.g. a ``--target`` profile)."""
    have = [d for d in devices if all(d.get(k) is not None for k in keys)]
    if not have:
        raise _unknown(gpu, what)
    return have


def _subject(device: Mapping[str, Any]) -> str:
    return f"gpu={device.get('index')}"


def _index_list(devices: Iterable[Mapping[str, Any]]) -> str:
    return ",".join(str(d.get("index")) for d in devices)


def _gb(value: int | float | None) -> str:
    return "?" if value is None else f"{value / GB:.1f} GB"


def _env(facts: Any) -> dict[str, str]:
    """Process env (``env`` fact) overlaid by the launch command's own env (what the engine sees)."""
    merged: dict[str, str] = {}
    env = _optional(facts, "env")
    if isinstance(env, Mapping):
        merged.update({str(k): str(v) for k, v in env.items() if v is not None})
    launch = _optional(facts, "launch")
    if isinstance(launch, Mapping) and isinstance(launch.get("env"), Mapping):
        merged.update({str(k): str(v) for k, v in launch["env"].items() if v is not None})
    return merged


def _falsy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("0", "false", "no", "off")


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def _cuda_version_text(version: int) -> str:
    return f"{version // 1000}.{(version % 1000) // 10}"


def _parse_cuda_version(text: Any) -> int | None:
    """``"13.0"`` / ``"12.8"`` / ``"cu128"`` / ``12080`` → NVML-style integer (13000, 12080)."""
    if isinstance(text, int):
        return text if text >= 1000 else None
    if not isinstance(text, str):
        return None
    match = re.fullmatch(r"\s*(?:cu)?(\d+)\.(\d+)(?:\.\d+)?\s*", text)
    if match:
        return int(match.group(1)) * 1000 + int(match.group(2)) * 10
    match = re.fullmatch(r"\s*cu(\d{2})(\d)\s*", text)
    if match:
        return int(match.group(1)) * 1000 + int(match.group(2)) * 10
    return None


def visible_device_indices(devices: Sequence[Mapping[str, Any]], cvd: str | None) -> list[int]:
    """Indices of the GPUs a CUDA process sees under ``CUDA_VISIBLE_DEVICES`` (NVML ignores it).

    CUDA reads the list left to right and stops at the first entry it cannot resolve (an
    out-of-range index, an unknown UUID, ``-1``, a duplicate); an empty value hides every GPU.
    """
    all_indices = [int(d.get("index", i)) for i, d in enumerate(devices)]
    if cvd is None:
        return all_indices
    chosen: list[int] = []
    for token in (t.strip() for t in cvd.split(",")):
        if not token:
            break
        index: int | None = None
        if re.fullmatch(r"\d+", token):
            index = int(token) if int(token) in all_indices else None
        elif token.upper().startswith(("GPU-", "MIG-")) or re.fullmatch(r"[0-9a-fA-F-]{4,}", token):
            want = token if token.upper().startswith(("GPU-", "MIG-")) else f"GPU-{token}"
            want = want.lower()
            hits = [
                int(d.get("index", i))
                for i, d in enumerate(devices)
                if str(d.get("uuid") or "").lower().startswith(want)
            ]
            index = hits[0] if len(hits) == 1 else None
        if index is None or index in chosen:
            break
        chosen.append(index)
    return chosen


# -- GPU001 ----------------------------------------------------------------------------------
class GPU001(Check):
    """NVIDIA driver reachable through NVML

    ## What it checks
    That NVML (`libnvidia-ml.so.1`, through `nvidia-ml-py`) initialises and lists at least one
    GPU. Every other GPU check requires this one: when the driver is unreachable you get this one
    error and the dependent checks are skipped with the reason.

    ## Why it matters
    SGLang and vLLM initialise CUDA in every rank. Without a loaded driver they die at the first
    `torch.cuda` call ("Found no NVIDIA driver on your system", "CUDA driver initialization
    failed"), after the launcher has spent time importing and, on multi-node runs, after the other
    nodes have started waiting at the rendezvous.

    ## How to fix
    - Run `nvidia-smi`. If it fails the same way, the kernel module is not loaded:
      `sudo modprobe nvidia` or install the driver.
    - "Driver/library version mismatch" (`NVML_ERROR_LIB_RM_VERSION_MISMATCH`) after a driver
      upgrade: reboot so the new kernel module is loaded.
    - Inside a container: start it with the GPUs exposed (`docker run --gpus all …`, the NVIDIA
      container toolkit, or the Kubernetes device plugin).
    - `pynvml is not importable`: `pip install nvidia-ml-py`.
    """

    facts = ("gpu",)

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = facts.get("gpu")
        if not isinstance(gpu, Mapping):
            yield self.finding("the gpu fact is malformed (not an object)", fix="re-create the snapshot")
            return
        error = str(gpu.get("error") or "")
        if not gpu.get("ok"):
            yield self.finding(
                f"NVML could not be initialised: {error or 'unknown reason'}",
                evidence={"error": error, "source": gpu.get("source")},
                fix=self._fix_for(error),
            )
            return
        devices = [d for d in gpu.get("devices") or [] if isinstance(d, Mapping)]
        if not devices:
            yield self.finding(
                "NVML is up but reports no GPUs on this node",
                evidence={"driver": gpu.get("driver"), "gpus": 0},
                fix="check `nvidia-smi -L`; in a container expose the GPUs (`docker run --gpus all`)",
            )
            return
        lost = [d for d in devices if any(re.search(r"handle|GPU is lost|GPU requires restart", e) for e in d.get("errors") or [])]
        for device in lost:
            yield self.finding(
                f"GPU does not answer NVML: {'; '.join(device.get('errors') or [])}",
                subject=_subject(device),
                evidence={"index": device.get("index"), "uuid": device.get("uuid")},
                fix=f"check `dmesg | grep -i xid`; reset the GPU (`sudo nvidia-smi -r -i {device.get('index')}`) or reboot",
            )

    @staticmethod
    def _fix_for(error: str) -> str:
        low = error.lower()
        if "pynvml" in low:
            return "pip install nvidia-ml-py"
        if "mismatch" in low:
            return "reboot: the loaded kernel module is older than the user-space driver (driver upgrade without reboot)"
        if "library not found" in low or "libnvidia-ml" in low:
            return "install the NVIDIA driver (or run the container with `--gpus all` / the NVIDIA container toolkit); check with `nvidia-smi`"
        if "driver not loaded" in low:
            return "load the driver: `sudo modprobe nvidia` (check `nvidia-smi` and `dmesg | grep -i nvidia`)"
        if "permission" in low:
            return "give this user access to /dev/nvidia* (e.g. add it to the `video` group) or run in a GPU container"
        return "run `nvidia-smi`; if it fails too, reinstall or reload the NVIDIA driver (`sudo modprobe nvidia`)"


# -- GPU002 ----------------------------------------------------------------------------------
class GPU002(Check):
    """Enough GPUs on this node for the parallel plan

    ## What it checks
    The GPUs a CUDA process on this node will see (the NVML count, narrowed by
    `CUDA_VISIBLE_DEVICES` from the launch command or the environment) against what the plan
    needs per node: `tp × pp × dp / nnodes` (dp is not multiplied in with SGLang
    `--enable-dp-attention`, where the DP ranks live inside the TP group); without a launch
    command, the `--gpus` count given on the command line.

    ## Why it matters
    With too few GPUs SGLang fails while creating the process group ("invalid device ordinal"
    in a rank whose `gpu_id` does not exist) and vLLM's Ray backend waits for resources that
    never appear; vLLM without Ray stops with "World size (16) is larger than the number of
    available GPUs (8) in this node". All of it happens after
    minutes of imports and, on multi-node, after every other node has joined the rendezvous.

    ## How to fix
    - Give the multi-node flags so the plan is spread over nodes: SGLang `--nnodes N --node-rank R
      --dist-init-addr HEAD:PORT`; vLLM `--nnodes N --node-rank R --master-addr HEAD` or a Ray
      cluster spanning the nodes.
    - Lower `--tp-size`/`--pp-size`/`--dp-size` to what the node has.
    - Fix `CUDA_VISIBLE_DEVICES` (it stops at the first index or UUID that does not exist).
    """

    facts = ("gpu",)
    requires = ("GPU001",)

    def run(self, facts: Any) -> Iterator[Finding]:
        devices = _devices(_gpu(facts))
        env = _env(facts)
        cvd = env.get("CUDA_VISIBLE_DEVICES")
        visible = visible_device_indices(devices, cvd)
        launch = _optional(facts, "launch")
        launch = launch if isinstance(launch, Mapping) else None
        option = facts.option("gpus_per_node") if hasattr(facts, "option") else None
        evidence: dict[str, Any] = {
            "gpus_on_node": len(devices),
            "gpus_visible": len(visible),
            "CUDA_VISIBLE_DEVICES": cvd,
        }
        engine = str(launch.get("engine") or "") if launch else ""
        ray = launch is not None and str(launch.get("distributed_executor_backend") or "").lower() == "ray"
        nnodes_given = True
        rejected = launch is not None and bool(
            {str(x) for x in launch.get("invalid") or []} & {"tp", "pp", "dp", "nnodes"})
        if rejected:
            launch = None  # a rejected parallel size (CMD001) says nothing about the GPUs needed
        if launch is not None:
            tp = int(launch.get("tp") or 1)
            pp = int(launch.get("pp") or 1)
            dp = int(launch.get("dp") or 1)
            dp_attention = bool(launch.get("enable_dp_attention")) and engine != "vllm"
            flags = launch.get("flags")
            nnodes = max(int(launch.get("nnodes") or 1), 1)
            nnodes_given = nnodes > 1 or (isinstance(flags, Mapping) and "--nnodes" in flags)
            world = tp * pp * (1 if dp_attention else dp)
            needed = math.ceil(world / nnodes)
            dp_part = "" if dp == 1 or dp_attention else f" × dp {dp}"
            basis = f"tp {tp} × pp {pp}{dp_part} = {world} ranks over {nnodes} node(s)"
            evidence.update({"engine": engine or None, "tp": tp, "pp": pp, "dp": dp, "nnodes": nnodes, "world_size": world})
        elif option:
            needed = int(option)
            basis = f"--gpus {needed}"
        else:
            raise self.skip("the launch command's parallel sizes are invalid (see CMD001): nothing to compare "
                            "the GPU count with" if rejected else
                            "no launch command and no --gpus: nothing to compare the GPU count with")
        evidence["gpus_needed"] = needed
        if len(visible) >= needed:
            return
        if engine == "vllm" and ray:
            return  # Ray places the workers over its cluster; the cluster size is not known here
        hidden = f" ({len(devices)} on the node, CUDA_VISIBLE_DEVICES={cvd!r})" if cvd is not None else ""
        nodes = math.ceil(needed / max(len(visible), 1))
        message = f"the plan needs {needed} GPUs on this node ({basis}) but only {len(visible)} are visible{hidden}"
        if cvd is not None and len(devices) >= needed:
            fix = f"export CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(needed))} (or unset it)"
        elif engine == "vllm" and not nnodes_given:
            message += (
                f"; vLLM: \"World size ({needed}) is larger than the number of available GPUs ({len(visible)}) in this node.\""
            )
            fix = (
                f"add --nnodes {nodes} --node-rank R --master-addr HEAD (multiprocessing), "
                "or --distributed-executor-backend ray with a Ray cluster spanning the nodes"
            )
        elif launch is not None and not nnodes_given:
            message += "; the ranks past the last GPU fail with \"CUDA error: invalid device ordinal\""
            fix = (
                f"spread the plan over {nodes} nodes: `--nnodes {nodes} --node-rank R --dist-init-addr HEAD:PORT`, "
                f"or lower --tp-size/--pp-size to {len(visible)} GPUs"
            )
        else:
            fix = f"lower the plan to {len(visible)} GPUs per node (tp·pp·dp / nnodes) or add nodes (--nnodes)"
        yield self.finding(message, evidence=evidence, fix=fix)


# -- GPU003 ----------------------------------------------------------------------------------
class GPU003(Check):
    """GPU model and compute capability (one model per node)

    ## What it checks
    Reports each distinct GPU model with its compute capability (`sm_XY`) and native FP8/FP4
    support (info). Different models or compute capabilities on one node are an error.

    ## Why it matters
    Flags, kernels and quantization backends are chosen for one architecture (see the ARCH
    family): an SM100-only backend on Hopper fails, MXFP4 on Hopper runs as W4A16 through Marlin.
    Tensor parallelism over mixed GPUs runs at the speed and memory of the smallest, and SGLang's
    memory-balance check or kernel selection can fail on the odd ones.

    ## How to fix
    Run the engine on identical GPUs only: restrict it with `CUDA_VISIBLE_DEVICES` (list the
    indices of one model), or move the odd card to another node.
    """

    facts = ("gpu",)
    requires = ("GPU001",)
    severity = Severity.INFO

    def run(self, facts: Any) -> Iterator[Finding]:
        devices = _devices(_gpu(facts))
        missing = [d for d in devices if not isinstance(d.get("cc"), (list, tuple))]
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for device in devices:
            if device in missing:
                continue
            cc = f"{device['cc'][0]}.{device['cc'][1]}"
            groups.setdefault((str(device.get("name") or "?"), cc), []).append(device)
        if missing:
            yield self.finding(
                f"NVML did not report the compute capability of GPU(s) {_index_list(missing)}",
                evidence={"gpus": _index_list(missing)},
                severity=Severity.WARNING,
                fix="update the driver / nvidia-ml-py; check `nvidia-smi --query-gpu=compute_cap --format=csv`",
            )
        if len(groups) > 1:
            summary = ", ".join(f"{len(devs)} × {name} (cc {cc}: GPUs {_index_list(devs)})" for (name, cc), devs in groups.items())
            biggest = max(groups.values(), key=len)
            yield self.finding(
                f"mixed GPU models on one node: {summary}",
                evidence={"models": len(groups), "ccs": ",".join(sorted({cc for _, cc in groups}))},
                severity=Severity.ERROR,
                fix=f"run the engine on one model only, e.g. CUDA_VISIBLE_DEVICES={_index_list(biggest)}",
            )
        for (name, cc), devs in groups.items():
            major, minor = devs[0]["cc"]
            fp8, fp4 = devs[0].get("fp8"), devs[0].get("fp4")
            notes = []
            if fp8 is not None:
                notes.append(f"FP8 {'native' if fp8 else 'not native'}")
            if fp4 is not None:
                notes.append("FP4 native" if fp4 else "FP4 not native (MXFP4 runs as W4A16 through Marlin)")
            yield self.finding(
                f"{len(devs)} × {name}: compute capability {cc} (sm_{major}{minor})" + (f"; {', '.join(notes)}" if notes else ""),
                evidence={
                    "name": name,
                    "cc": cc,
                    "count": len(devs),
                    "gpus": _index_list(devs),
                    "fp8": fp8,
                    "fp4": fp4,
                    "nvlink_domain": devs[0].get("nvlink_domain"),
                    "memory_total": devs[0].get("memory_total"),
                },
            )


# -- GPU004 ----------------------------------------------------------------------------------
class GPU004(Check):
    """ECC enabled, no uncorrectable errors, no pending or failed row remapping

    ## What it checks
    Per GPU, with DCGM's thresholds (`DcgmHealthWatch.cpp`, `DcgmGPUHardwareLimits.h`):
    - ECC mode current = enabled (warning when off; info when a change is pending a reset);
    - volatile (since the last reset) uncorrectable ECC errors > 0 → error;
    - remapped rows: a remapping *failure* → error (RMA); a remapping *pending* → error (needs a GPU
      reset); ≥ 512 uncorrectable remapped rows → warning.

    ## Why it matters
    An uncorrectable ECC error or a pending row remap makes CUDA kill contexts on that GPU
    (Xid 48/63/64/94/95): one rank dies mid-load or mid-serve ("CUDA error: uncorrectable ECC
    error encountered") and the whole TP/EP group of a 16-GPU deployment goes down with it, often
    after the 10+ minutes of weight loading.

    ## How to fix
    - Pending remap or volatile uncorrectable errors: drain the GPU and reset it,
      `sudo nvidia-smi -r -i N` (no process may use it), or reboot the node.
    - Remapping failure, or errors that come back after a reset: the GPU needs replacement (RMA);
      until then keep it out with `CUDA_VISIBLE_DEVICES`.
    - ECC off: `sudo nvidia-smi -i N -e 1`, then reset or reboot.
    """

    facts = ("gpu",)
    requires = ("GPU001",)

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        devices = _devices(gpu)
        keys = ("ecc_current", "ecc_volatile_uncorrected", "remapped_rows")
        if not any(d.get(k) is not None for d in devices for k in keys):
            raise _unknown(gpu, "ECC or row-remapping state")
        for device in devices:
            yield from self._device(device)

    def _device(self, device: dict[str, Any]) -> Iterator[Finding]:
        idx = device.get("index")
        subject = _subject(device)
        reset = f"sudo nvidia-smi -r -i {idx}"
        if device.get("ecc_current") is False:
            yield self.finding(
                "ECC is disabled",
                subject=subject,
                evidence={"ecc_current": False, "ecc_pending": device.get("ecc_pending")},
                severity=Severity.WARNING,
                fix=f"sudo nvidia-smi -i {idx} -e 1 && {reset}  (or reboot)",
            )
        if device.get("ecc_pending") is not None and device.get("ecc_current") is not None and bool(device["ecc_pending"]) != bool(device["ecc_current"]):
            yield self.finding(
                "an ECC mode change is pending (takes effect after a reset)",
                subject=subject,
                evidence={"ecc_current": device.get("ecc_current"), "ecc_pending": device.get("ecc_pending")},
                severity=Severity.INFO,
                fix=f"{reset}  (or reboot)",
            )
        volatile = device.get("ecc_volatile_uncorrected")
        if isinstance(volatile, int) and volatile > 0:
            yield self.finding(
                f"{volatile} uncorrectable ECC error(s) since the last reset",
                subject=subject,
                evidence={
                    "ecc_volatile_uncorrected": volatile,
                    "ecc_aggregate_uncorrected": device.get("ecc_aggregate_uncorrected"),
                    "uuid": device.get("uuid"),
                },
                fix=f"drain and reset the GPU: `{reset}`; if errors return, exclude it (CUDA_VISIBLE_DEVICES) and RMA",
            )
        rows = device.get("remapped_rows")
        if not isinstance(rows, Mapping):
            return
        evidence = {
            "remapped_correctable": rows.get("correctable"),
            "remapped_uncorrectable": rows.get("uncorrectable"),
            "remap_pending": rows.get("pending"),
            "remap_failure": rows.get("failure"),
            "uuid": device.get("uuid"),
        }
        if rows.get("failure"):
            yield self.finding(
                "row remapping FAILED: this GPU's memory cannot be repaired any more",
                subject=subject,
                evidence=evidence,
                fix=f"take GPU {idx} out of service (exclude it with CUDA_VISIBLE_DEVICES) and RMA it",
            )
        elif rows.get("pending"):
            yield self.finding(
                "a row remapping is pending: the GPU needs a reset before it is safe to use",
                subject=subject,
                evidence=evidence,
                fix=f"stop all processes on it, then `{reset}` (or reboot the node)",
            )
        unc = rows.get("uncorrectable")
        if isinstance(unc, int) and unc >= ROW_REMAP_UNCORRECTABLE_LIMIT:
            yield self.finding(
                f"{unc} rows remapped for uncorrectable errors (DCGM limit {ROW_REMAP_UNCORRECTABLE_LIMIT})",
                subject=subject,
                evidence=evidence,
                severity=Severity.WARNING,
                fix=f"plan an RMA for GPU {idx}; `nvidia-smi -q -d ROW_REMAPPER -i {idx}` shows the remaining spare rows",
            )


# -- GPU005 ----------------------------------------------------------------------------------
class GPU005(Check):
    """MIG mode disabled

    ## What it checks
    MIG (Multi-Instance GPU) mode, current and pending, on every GPU.

    ## Why it matters
    With MIG on, a process sees GPU instances, not the whole GPU: the engine gets a fraction of
    the memory and SMs, NCCL peer-to-peer and NVLink between instances are unavailable, and
    `CUDA_VISIBLE_DEVICES` must name `MIG-…` UUIDs. Trillion-parameter TP/EP deployments need the
    whole GPU; a pending MIG enable turns on at the next reset.

    ## How to fix
    `sudo nvidia-smi -i N -mig 0`, then `sudo nvidia-smi -r -i N` (or reboot).
    """

    facts = ("gpu",)
    requires = ("GPU001",)

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        devices = _with(gpu, _devices(gpu), "mig_current", what="MIG mode")
        on = [d for d in devices if d.get("mig_current")]
        pending = [d for d in devices if not d.get("mig_current") and d.get("mig_pending")]
        if on:
            gpus = _index_list(on)
            yield self.finding(
                f"MIG mode is enabled on GPU(s) {gpus}: the engine would get GPU instances, not whole GPUs",
                evidence={"gpus": gpus, "count": len(on)},
                fix=f"sudo nvidia-smi -i {gpus} -mig 0 && sudo nvidia-smi -r -i {gpus}",
            )
        if pending:
            gpus = _index_list(pending)
            yield self.finding(
                f"MIG mode will be enabled on GPU(s) {gpus} at the next reset",
                evidence={"gpus": gpus, "count": len(pending)},
                severity=Severity.WARNING,
                fix=f"sudo nvidia-smi -i {gpus} -mig 0",
            )


# -- GPU006 ----------------------------------------------------------------------------------
class GPU006(Check):
    """Persistence mode on

    ## What it checks
    NVML persistence mode on every GPU (warning when off).

    ## Why it matters
    Without persistence the driver tears the GPU state down whenever no process holds it and
    re-initialises it at the next CUDA call: every launch, every `nvidia-smi` pays seconds per GPU,
    and clock/ECC/fabric state is re-established each time. On NVSwitch systems Fabric Manager and
    the GPUs' NVLink state are more reliable with the driver kept loaded.

    ## How to fix
    `sudo systemctl enable --now nvidia-persistenced` (preferred) or `sudo nvidia-smi -pm 1`.
    """

    facts = ("gpu",)
    requires = ("GPU001",)
    severity = Severity.WARNING

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        devices = _with(gpu, _devices(gpu), "persistence", what="persistence mode")
        off = [d for d in devices if d.get("persistence") is False]
        if off:
            yield self.finding(
                f"persistence mode is off on {len(off)} of {len(devices)} GPU(s) ({_index_list(off)})",
                evidence={"gpus": _index_list(off), "count": len(off)},
                fix="sudo systemctl enable --now nvidia-persistenced  (or: sudo nvidia-smi -pm 1)",
            )


# -- GPU007 ----------------------------------------------------------------------------------
class GPU007(Check):
    """PCIe link at full width

    ## What it checks
    The current PCIe link width of every GPU against its maximum (warning when narrower). The
    link *generation* is only reported (info): GPUs drop to a lower PCIe gen at idle to save
    power, so gen is meaningful only under load.

    ## Why it matters
    A GPU that trained at x8 instead of x16 halves host↔device bandwidth: weight loading (the
    669 s of a 1.56 TB checkpoint), KV offload and, on nodes whose NICs sit behind the same
    switch, GPUDirect RDMA all slow down. It usually means a badly seated card, riser or cable.

    ## How to fix
    Check `nvidia-smi -q -d PCIE -i N` (and `sudo lspci -vv` "LnkSta" vs "LnkCap"); reseat the
    GPU/riser, check the BIOS PCIe settings; report it to the hardware owner.
    """

    facts = ("gpu",)
    requires = ("GPU001",)
    severity = Severity.WARNING

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        devices = _with(gpu, _devices(gpu), "pcie_width", "pcie_max_width", what="the PCIe link width")
        for device in devices:
            width, max_width = int(device["pcie_width"]), int(device["pcie_max_width"])
            if 0 < width < max_width:
                idx = device.get("index")
                yield self.finding(
                    f"PCIe link runs at x{width} of x{max_width}",
                    subject=_subject(device),
                    evidence={
                        "pcie_width": width,
                        "pcie_max_width": max_width,
                        "pcie_gen": device.get("pcie_gen"),
                        "pcie_max_gen": device.get("pcie_max_gen"),
                    },
                    fix=f"nvidia-smi -q -d PCIE -i {idx}; reseat the card/riser or check the slot's BIOS settings",
                )
        low_gen = [
            d for d in devices
            if isinstance(d.get("pcie_gen"), int) and isinstance(d.get("pcie_max_gen"), int) and d["pcie_gen"] < d["pcie_max_gen"]
        ]
        if low_gen:
            yield self.finding(
                f"PCIe generation below its maximum on GPU(s) {_index_list(low_gen)} "
                f"(gen {low_gen[0]['pcie_gen']} of {low_gen[0]['pcie_max_gen']}); normal at idle, re-check under load",
                evidence={"gpus": _index_list(low_gen), "pcie_gen": low_gen[0]["pcie_gen"], "pcie_max_gen": low_gen[0]["pcie_max_gen"]},
                severity=Severity.INFO,
                fix="re-run `nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.gen.max --format=csv` while the GPU is busy",
            )


# -- GPU008 ----------------------------------------------------------------------------------
class GPU008(Check):
    """All NVLinks active on NVLink systems

    ## What it checks
    Per GPU, the NVLinks NVML reports and how many are active (state enabled). On a node where
    GPUs have NVLink (H100/H200 SXM: 18 links each), every link must be up; a GPU with some or all
    links down is an error. Nodes without NVLink (PCIe cards, single-GPU VMs: NVML answers
    NotSupported) are skipped.

    ## Why it matters
    TP all-reduce and EP all-to-all inside a node run over NVLink/NVSwitch. A GPU with missing
    links drags every collective down to its bandwidth (or to PCIe), and NCCL may hang or
    fail in `ncclCommInitRank` when the NVSwitch fabric is only partly up.

    ## How to fix
    `nvidia-smi nvlink --status -i N` and `nvidia-smi topo -m`; restart Fabric Manager on NVSwitch
    systems (`sudo systemctl restart nvidia-fabricmanager`), reset the GPU (`sudo nvidia-smi -r
    -i N`) or reboot; persistent link errors need hardware service.
    """

    facts = ("gpu",)
    requires = ("GPU001",)

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        devices = _devices(gpu)
        if all(d.get("nvlink") is None for d in devices):
            raise _unknown(gpu, "NVLink state")
        nvlinked = [
            d for d in devices
            if isinstance(d.get("nvlink"), Mapping) and d["nvlink"].get("supported") and (d["nvlink"].get("total") or 0) > 0
        ]
        if not nvlinked:
            raise self.skip("no NVLink on this node (NVML reports NVLink not supported)")
        for device in nvlinked:
            link = device["nvlink"]
            active, total = int(link.get("active") or 0), int(link["total"])
            if active >= total:
                continue
            idx = device.get("index")
            what = "no NVLink is active" if active == 0 else f"only {active} of {total} NVLinks are active"
            yield self.finding(
                what,
                subject=_subject(device),
                evidence={"nvlink_active": active, "nvlink_total": total, "uuid": device.get("uuid")},
                fix=(
                    f"nvidia-smi nvlink --status -i {idx}; sudo systemctl restart nvidia-fabricmanager "
                    f"(NVSwitch systems), then `sudo nvidia-smi -r -i {idx}` or reboot"
                ),
            )


# -- GPU009 ----------------------------------------------------------------------------------
def throttle_names(mask: int) -> list[str]:
    """Names of the set bits of an NVML clocks-event-reasons mask."""
    return [name for name, bit in THROTTLE_BITS.items() if mask & bit]


class GPU009(Check):
    """No hardware clock slowdown (HW slowdown, thermal, power brake)

    ## What it checks
    The NVML clocks-event ("throttle") reasons of every GPU. HW slowdown (0x8), HW thermal
    slowdown (0x40) and HW power-brake slowdown (0x80) are warnings; SW thermal slowdown (0x20)
    is info; idle (0x1), application-clock setting (0x2), SW power cap and sync boost are normal
    and ignored.

    ## Why it matters
    A GPU held down by the hardware at preflight (overheating, a power-supply brake signal) runs
    the whole TP group at its clocks: one slow rank makes every collective wait.

    ## How to fix
    `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i N`; check cooling (fans, airflow, inlet
    temperature) and the PSUs / power-brake cabling; report to the hardware owner.
    """

    facts = ("gpu",)
    requires = ("GPU001",)
    severity = Severity.WARNING

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        devices = _with(gpu, _devices(gpu), "throttle_reasons", what="clock throttle reasons")
        for device in devices:
            mask = int(device["throttle_reasons"])
            idx = device.get("index")
            hw = [name for name in HW_THROTTLE_BITS if mask & THROTTLE_BITS[name]]
            evidence: dict[str, EvidenceValue] = {"throttle_reasons": mask, "reasons": ",".join(throttle_names(mask))}
            if hw:
                yield self.finding(
                    f"clocks are held down by the hardware: {', '.join(hw)}",
                    subject=_subject(device),
                    evidence=evidence,
                    fix=f"nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {idx}; check cooling and power (PSU / power brake)",
                )
            elif mask & THROTTLE_BITS["SwThermalSlowdown"]:
                yield self.finding(
                    "SW thermal slowdown is active",
                    subject=_subject(device),
                    evidence=evidence,
                    severity=Severity.INFO,
                    fix=f"nvidia-smi -q -d TEMPERATURE -i {idx}; check cooling",
                )


# -- GPU010 ----------------------------------------------------------------------------------
def _fabric_ok(fabric: Mapping[str, Any]) -> bool:
    state = fabric.get("state")
    status = fabric.get("status")
    completed = state == 3 or (isinstance(state, str) and state.upper() == "COMPLETED")
    success = status in (0, None) or (isinstance(status, str) and status.upper() in ("SUCCESS", "NVML_SUCCESS", "0"))
    return completed and success


class GPU010(Check):
    """Fabric Manager finished NVSwitch fabric set-up

    ## What it checks
    Where NVML reports a GPU fabric state (NVSwitch systems: HGX H100/H200/B200, GB200/GB300
    NVL), that every GPU's state is COMPLETED with status success. Nodes where NVML reports no
    fabric (PCIe, single GPU) are skipped.

    ## Why it matters
    Until Fabric Manager has programmed the NVSwitches, CUDA refuses to create contexts on those
    GPUs: every rank fails at its first CUDA call with CUDA error 802 "system not yet
    initialized" (PyTorch: "CUDA error: system not yet initialized"). NCCL reads the same state
    per rank for multi-node NVLink.

    ## How to fix
    `sudo systemctl start nvidia-fabricmanager` (and `enable` it); `systemctl status
    nvidia-fabricmanager` / `journalctl -u nvidia-fabricmanager`. The Fabric Manager package
    version must equal the driver version exactly (`nvidia-fabricmanager-<branch>`). On
    GB200/GB300 also check the IMEX service (`nvidia-imex`).
    """

    facts = ("gpu",)
    requires = ("GPU001",)

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        devices = _devices(gpu)
        reported = [d for d in devices if isinstance(d.get("fabric"), Mapping)]
        if not reported and gpu.get("source") == "target":
            raise _unknown(gpu, "the fabric-manager state")
        if not reported:
            raise self.skip("NVML reports no GPU fabric state on this node (no NVSwitch fabric)")
        bad: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for device in reported:
            if not _fabric_ok(device["fabric"]):
                key = (str(device["fabric"].get("state")), str(device["fabric"].get("status")))
                bad.setdefault(key, []).append(device)
        for (state, status), devs in bad.items():
            gpus = _index_list(devs)
            if state.upper() in ("COMPLETED", "3"):
                what = f"fabric set-up COMPLETED with error status {status}"
            else:
                what = f"fabric state is {state}, not COMPLETED"
            yield self.finding(
                f"GPU(s) {gpus}: {what}; CUDA will fail with error 802 \"system not yet initialized\"",
                evidence={"gpus": gpus, "fabric_state": state, "fabric_status": status, "driver": gpu.get("driver")},
                fix=(
                    "sudo systemctl enable --now nvidia-fabricmanager; check `journalctl -u nvidia-fabricmanager` "
                    f"(its version must equal the driver's, {gpu.get('driver') or 'see nvidia-smi'})"
                ),
            )


# -- GPU011 ----------------------------------------------------------------------------------
class GPU011(Check):
    """Driver CUDA version new enough for the installed torch

    ## What it checks
    The CUDA version the driver supports (NVML `cuda_driver`, e.g. 12040 = 12.4) against the CUDA
    version PyTorch was built for (`torch/version.py`, read without importing torch). An older
    driver major version is an error; an older minor version within the same major is a warning
    (CUDA minor-version compatibility runs most code, but PTX built for the newer toolkit, as
    JIT-compiled kernels may be, cannot be loaded).

    ## Why it matters
    The first CUDA call in every rank fails with "CUDA driver version is insufficient for CUDA
    runtime version" (or `torch.cuda.is_available()` is False with "The NVIDIA driver on your
    system is too old"), after the engine has imported.

    ## How to fix
    Install a torch wheel built for the driver's CUDA (`pip install torch --index-url
    https://download.pytorch.org/whl/cuXYZ`, together with the matching sglang/vllm build), or
    upgrade the NVIDIA driver to a branch that supports the wheel's CUDA.
    """

    facts = ("gpu", "packages")
    requires = ("GPU001",)

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        driver_cuda = gpu.get("cuda_driver")
        if not isinstance(driver_cuda, int):
            raise _unknown(gpu, "the driver's CUDA version")
        packages = facts.get("packages")
        if not isinstance(packages, Mapping) or not packages.get("torch"):
            raise self.skip("torch is not installed")
        torch_cuda_text = packages.get("torch_cuda")
        if not torch_cuda_text:
            raise self.skip(f"torch {packages.get('torch')} is a CPU-only build (no CUDA version)")
        torch_cuda = _parse_cuda_version(torch_cuda_text)
        if torch_cuda is None:
            raise self.skip(f"cannot parse torch's CUDA version {torch_cuda_text!r}")
        if driver_cuda >= torch_cuda:
            return
        evidence = {
            "cuda_driver": driver_cuda,
            "driver": gpu.get("driver"),
            "torch": packages.get("torch"),
            "torch_cuda": str(torch_cuda_text),
        }
        tags = [t for t in TORCH_CUDA_TAGS if (t // 10) * 1000 + (t % 10) * 10 <= driver_cuda]
        wheel = f"cu{tags[-1]}" if tags else f"cu{driver_cuda // 1000}{(driver_cuda % 1000) // 10}"
        fix = (
            f"pip install torch --index-url https://download.pytorch.org/whl/{wheel} "
            f"(with the matching sglang/vllm build), or upgrade the NVIDIA driver to one supporting CUDA {_cuda_version_text(torch_cuda)}"
        )
        d_txt, t_txt = _cuda_version_text(driver_cuda), _cuda_version_text(torch_cuda)
        if driver_cuda // 1000 < torch_cuda // 1000:
            yield self.finding(
                f"the driver supports CUDA {d_txt} but torch {packages.get('torch')} is built for CUDA {t_txt}: "
                "\"CUDA driver version is insufficient for CUDA runtime version\"",
                evidence=evidence,
                fix=fix,
            )
        else:
            yield self.finding(
                f"the driver supports CUDA {d_txt}, older than torch's CUDA {t_txt}: runs only through minor-version "
                "compatibility; kernels shipped or JIT-compiled as newer PTX fail (\"the provided PTX was compiled with an "
                "unsupported toolchain\")",
                evidence=evidence,
                severity=Severity.WARNING,
                fix=fix,
            )


# -- GPU012 ----------------------------------------------------------------------------------
class GPU012(Check):
    """GPU memory free, balanced and not held by other processes

    ## What it checks
    - processes already holding GPU memory (anything running before the launch is foreign to it)
      → warning;
    - free memory below 90 % of (total − driver-reserved) on a GPU → warning;
    - free memory unbalanced by more than 10 % between this node's GPUs: with SGLang (TP > 1)
      an error — SGLang raises "The memory capacity is unbalanced. Some GPUs may be occupied by
      other processes." — unless `SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0` (older:
      `SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK=1`), then a warning; otherwise a warning;
    - vLLM: free memory below `--gpu-memory-utilization` × total → error (vLLM refuses to start:
      "Free memory on device … is less than desired GPU memory utilization").

    ## Why it matters
    SGLang sizes the KV cache from the *minimum* free memory across the TP group, so 20 GB taken
    by a stale process on one GPU shrinks the KV cache on all 16 (the seed deployment came up 1–2
    GB short: max context 22016 instead of 65536). vLLM reserves `utilization × total` and fails
    if it is not free.

    ## How to fix
    Find the holders with `nvidia-smi --query-compute-apps=pid,process_name,used_memory
    --format=csv` and stop them (`kill PID`); in containers the PIDs may belong to another
    namespace — check on the host. Only if the imbalance is intended, set
    `SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0`; for vLLM lower `--gpu-memory-utilization`.
    """

    facts = ("gpu",)
    requires = ("GPU001",)
    severity = Severity.WARNING

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = _gpu(facts)
        devices = _with(gpu, _devices(gpu), "memory_total", "memory_free", what="memory usage")
        launch = _optional(facts, "launch")
        launch = launch if isinstance(launch, Mapping) else {}
        yield from self._processes(devices)
        yield from self._low_free(devices)
        yield from self._imbalance(devices, launch, _env(facts))
        yield from self._vllm_budget(devices, launch)

    def _processes(self, devices: list[dict[str, Any]]) -> Iterator[Finding]:
        by_pid: dict[int, dict[str, Any]] = {}
        for device in devices:
            for proc in device.get("processes") or []:
                if not isinstance(proc, Mapping) or proc.get("pid") is None:
                    continue
                entry = by_pid.setdefault(int(proc["pid"]), {"name": proc.get("name"), "used": 0, "gpus": []})
                entry["gpus"].append(device.get("index"))
                if isinstance(proc.get("used_memory"), int):
                    entry["used"] += proc["used_memory"]
                entry["name"] = entry["name"] or proc.get("name")
        for pid, entry in sorted(by_pid.items()):
            gpus = ",".join(str(g) for g in entry["gpus"])
            name = entry["name"] or "?"
            yield self.finding(
                f"process {pid} ({name}) already holds {_gb(entry['used'])} of GPU memory",
                subject=f"gpu={gpus}",
                evidence={"pid": pid, "name": entry["name"], "used_memory": entry["used"], "gpus": gpus},
                fix=(
                    f"stop it if it is not yours to keep: `kill {pid}` "
                    "(list holders: nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv)"
                ),
            )

    def _low_free(self, devices: list[dict[str, Any]]) -> Iterator[Finding]:
        for device in devices:
            total, free = int(device["memory_total"]), int(device["memory_free"])
            usable = total - int(device.get("memory_reserved") or 0)
            if usable > 0 and free < FREE_MEMORY_RATIO * usable:
                idx = device.get("index")
                yield self.finding(
                    f"only {_gb(free)} free of {_gb(usable)} usable ({free / usable:.0%})",
                    subject=_subject(device),
                    evidence={
                        "memory_total": total,
                        "memory_reserved": device.get("memory_reserved"),
                        "memory_free": free,
                        "memory_used": device.get("memory_used"),
                        "processes": len(device.get("processes") or []),
                    },
                    fix=f"nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv -i {idx}; stop the holders",
                )

    def _imbalance(self, devices: list[dict[str, Any]], launch: Mapping[str, Any], env: Mapping[str, str]) -> Iterator[Finding]:
        if len(devices) < 2:
            return
        low = min(devices, key=lambda d: int(d["memory_free"]))
        high = max(devices, key=lambda d: int(d["memory_free"]))
        min_free, max_free = int(low["memory_free"]), int(high["memory_free"])
        if max_free <= 0 or min_free >= SGLANG_IMBALANCE_RATIO * max_free:
            return
        engine = str(launch.get("engine") or "")
        tp = int(launch.get("tp") or 1)
        enabled_var = env.get("SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK")
        disabled = _falsy(enabled_var) or _truthy(env.get("SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK"))
        evidence = {
            "min_free": min_free,
            "min_free_gpu": low.get("index"),
            "max_free": max_free,
            "max_free_gpu": high.get("index"),
            "ratio": round(min_free / max_free, 4),
            "engine": engine or None,
            "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": enabled_var,
        }
        base = (
            f"free memory is unbalanced: GPU {low.get('index')} has {_gb(min_free)} free, "
            f"GPU {high.get('index')} {_gb(max_free)} ({min_free / max_free:.0%}, limit {SGLANG_IMBALANCE_RATIO:.0%})"
        )
        if engine == "sglang" and tp > 1 and not disabled:
            yield self.finding(
                f"{base}; SGLang will stop with \"The memory capacity is unbalanced. Some GPUs may be occupied by other processes.\"",
                evidence=evidence,
                severity=Severity.ERROR,
                fix=(
                    f"free GPU {low.get('index')} (stop the processes on it); only if intended, "
                    "set SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 (older SGLang: SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK=1)"
                ),
            )
        else:
            suffix = (
                "; the SGLang imbalance check is disabled, so every rank's KV cache is sized from the smallest"
                if disabled
                else "; the engine sizes every rank from the smallest"
            )
            yield self.finding(
                base + suffix,
                evidence=evidence,
                fix=f"free GPU {low.get('index')} (stop the processes on it) before launching",
            )

    def _vllm_budget(self, devices: list[dict[str, Any]], launch: Mapping[str, Any]) -> Iterator[Finding]:
        if launch.get("engine") != "vllm" or not isinstance(launch.get("mem_fraction"), (int, float)):
            return
        util = float(launch["mem_fraction"])
        short = []
        for device in devices:
            usable = int(device["memory_total"]) - int(device.get("memory_reserved") or 0)
            if int(device["memory_free"]) - CUDA_CONTEXT_BYTES < util * usable:
                short.append((device, usable))
        if not short:
            return
        device, usable = min(short, key=lambda pair: int(pair[0]["memory_free"]))
        free = int(device["memory_free"])
        # vLLM measures after creating its CUDA context, and needs free ≥ utilization × total
        suggestion = math.floor(max(free - CUDA_CONTEXT_BYTES, 0) / usable * 100) / 100
        yield self.finding(
            f"vLLM will refuse to start: {_gb(free)} free, less than "
            f"--gpu-memory-utilization {util} × {_gb(usable)} (\"Free memory on device ... is less than desired GPU memory utilization\")",
            subject=_subject(device),
            evidence={
                "gpu_memory_utilization": util,
                "memory_free": free,
                "memory_usable": usable,
                "requested": int(util * usable),
                "gpus_short": _index_list(d for d, _ in short),
            },
            severity=Severity.ERROR,
            fix=f"free the GPU memory (stop the other processes) or lower --gpu-memory-utilization to {suggestion}",
        )


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('GPU', 'GPU health and capacity through NVML', 20)
CHECKS = module_checks(globals())
