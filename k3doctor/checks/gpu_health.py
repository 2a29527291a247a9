"""GPU family, health half: ECC, row remapping, Xid history, NVLink, clock throttling and fabric
state (GPU004-GPU010). The inventory and software half is :mod:`.gpu`; both register as GPU."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ..check import Check, module_checks
from ..facttypes import GpuFact
from ..model import EvidenceValue, Finding, Severity
from ._gpu_common import (  # noqa: F401 - the family's shared constants and helpers
    HW_THROTTLE_BITS, ROW_REMAP_UNCORRECTABLE_LIMIT, THROTTLE_BITS, _devices, _gpu, _index_list, _subject, _unknown, _with,
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

    requires = ("GPU001",)

    def run(self, gpu: GpuFact | None = None) -> Iterator[Finding]:
        gpu = _gpu(gpu)
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
        state = None
        if rows.get("failure"):
            state = ("row remapping FAILED: this GPU's memory cannot be repaired any more",
                     f"take GPU {idx} out of service (exclude it with CUDA_VISIBLE_DEVICES) and RMA it")
        elif rows.get("pending"):
            state = ("a row remapping is pending: the GPU needs a reset before it is safe to use",
                     f"stop all processes on it, then `{reset}` (or reboot the node)")
        if state:
            yield self.finding(state[0], subject=subject, evidence=evidence, fix=state[1])
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

    requires = ("GPU001",)

    def run(self, gpu: GpuFact | None = None) -> Iterator[Finding]:
        gpu = _gpu(gpu)
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

    requires = ("GPU001",)
    severity = Severity.WARNING

    def run(self, gpu: GpuFact | None = None) -> Iterator[Finding]:
        gpu = _gpu(gpu)
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

    requires = ("GPU001",)
    severity = Severity.WARNING

    def run(self, gpu: GpuFact | None = None) -> Iterator[Finding]:
        gpu = _gpu(gpu)
        devices = _with(gpu, _devices(gpu), "pcie_width", "pcie_max_width", what="the PCIe link width")
        for device in devices:
            width, max_width = int(device["pcie_width"]), int(device["pcie_max_width"])
            if not 0 < width < max_width:
                continue
            gens = {k: device.get(k) for k in ("pcie_gen", "pcie_max_gen")}
            yield self.finding(
                f"PCIe link runs at x{width} of x{max_width}", subject=_subject(device),
                evidence={"pcie_width": width, "pcie_max_width": max_width, **gens},
                fix=f"nvidia-smi -q -d PCIE -i {device.get('index')}; reseat the card/riser or check the slot's BIOS settings",
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

    requires = ("GPU001",)

    def run(self, gpu: GpuFact | None = None) -> Iterator[Finding]:
        gpu = _gpu(gpu)
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

    requires = ("GPU001",)
    severity = Severity.WARNING

    def run(self, gpu: GpuFact | None = None) -> Iterator[Finding]:
        gpu = _gpu(gpu)
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

    requires = ("GPU001",)

    def run(self, gpu: GpuFact | None = None) -> Iterator[Finding]:
        gpu = _gpu(gpu)
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



FAMILY = ("GPU", "GPU health and capacity through NVML", 20)
CHECKS = module_checks(globals())
