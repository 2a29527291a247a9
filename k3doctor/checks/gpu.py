"""GPU family: GPU health and capacity through NVML (GPU001–GPU012).

Every check reads the ``gpu`` fact (schema in DEVELOPERS.md) and, where it needs them, ``launch``,
``env`` and ``packages``. All of them except GPU001 require GPU001, so a dead driver gives one
error and the rest are skipped with that reason. Checks never touch the machine and never print.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterator, Mapping

from ..check import Check, module_checks
from ..facttypes import GpuFact, PackagesFact
from ..launch import LaunchSpec
from ..model import Finding, Severity
from ._gpu_common import (  # noqa: F401 - the family's shared constants and helpers
    CUDA_CONTEXT_BYTES, FREE_MEMORY_RATIO, GB, HW_THROTTLE_BITS, SGLANG_IMBALANCE_RATIO,
    THROTTLE_BITS, TORCH_CUDA_TAGS, _cuda_version_text, _devices, _env, _falsy, _gb, _gpu,
    _index_list, _parse_cuda_version, _subject, _truthy, _unknown, _with,
    visible_device_indices,
)
from .gpu_health import GPU004, GPU005, GPU006, GPU007, GPU008, GPU009, GPU010, throttle_names  # noqa: F401
from . import gpu_health as _health


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


    def run(self, gpu: GpuFact) -> Iterator[Finding]:
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

    requires = ("GPU001",)

    def run(self, gpu: GpuFact | None = None, launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None,
            options: Mapping[str, Any] | None = None) -> Iterator[Finding]:
        devices = _devices(_gpu(gpu))
        env = _env(env, launch)
        cvd = env.get("CUDA_VISIBLE_DEVICES")
        visible = visible_device_indices(devices, cvd)
        launch = launch if isinstance(launch, Mapping) else None
        option = (options or {}).get("gpus_per_node")
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
            world = LaunchSpec.of(launch).world_size
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

    requires = ("GPU001",)
    severity = Severity.INFO

    def run(self, gpu: GpuFact | None = None) -> Iterator[Finding]:
        devices = _devices(_gpu(gpu))
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

    requires = ("GPU001",)

    def run(self, gpu: GpuFact, driver_cuda: int, packages: PackagesFact) -> Iterator[Finding]:
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

    requires = ("GPU001",)
    severity = Severity.WARNING

    def run(self, gpu: GpuFact | None = None, launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None) -> Iterator[Finding]:
        gpu = _gpu(gpu)
        devices = _with(gpu, _devices(gpu), "memory_total", "memory_free", what="memory usage")
        launch = launch if isinstance(launch, Mapping) else LaunchSpec.from_json({})
        yield from self._processes(devices)
        yield from self._low_free(devices)
        yield from self._imbalance(devices, launch, _env(env, launch))
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
CHECKS = sorted(module_checks(globals()) + _health.CHECKS, key=lambda c: c.code)
