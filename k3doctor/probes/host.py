"""Host identity and the engine-relevant environment."""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
import time
from typing import Any, Mapping

from ..facts import ProbeContext

__all__ = ["probe_host", "probe_env", "engine_env", "ENV_PREFIXES", "ENV_NAMES"]

#: Prefixes of variables the engines, NCCL/Gloo, Triton and HF read.
ENV_PREFIXES = (
    "NCCL_", "GLOO_", "TP_SOCKET", "TRITON_", "TORCHINDUCTOR_", "TORCH_", "SGLANG_", "SGL_", "VLLM_",
    "CUDA_", "PYTORCH_", "FLASHINFER_", "DG_", "HF_", "HUGGINGFACE_", "NVSHMEM_", "UCX_", "DEEPEP_",
    "SLURM_", "OMPI_", "PMI_", "MASTER_", "XDG_",
)
#: Single variables that matter.
ENV_NAMES = ("HOME", "USER", "LOCAL_RANK", "RANK", "WORLD_SIZE", "NODE_RANK", "HOST_IP", "TMPDIR",
             "LD_LIBRARY_PATH", "OMP_NUM_THREADS")
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|CREDENTIAL|PRIVATE", re.I)


def engine_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The engine-relevant subset of an environment, with secrets redacted."""
    out: dict[str, str] = {}
    for key in sorted(environ):
        if key.startswith(ENV_PREFIXES) or key in ENV_NAMES:
            out[key] = "<redacted>" if _SECRET.search(key) else environ[key]
    return out


def probe_env(ctx: ProbeContext) -> dict[str, Any]:
    """Engine-relevant environment variables of this process (NCCL_*, GLOO_*, TRITON_*, …)."""
    return engine_env(os.environ)


def _meminfo() -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    except OSError:
        pass
    return out


def _os_release() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def probe_host(ctx: ProbeContext) -> dict[str, Any]:
    """Hostname, kernel, OS, Python, CPU count, RAM and the clock of this node."""
    mem = _meminfo()
    hostname = socket.gethostname()
    return {
        "hostname": hostname,
        "kernel": platform.release(),
        "machine": platform.machine(),
        "os": _os_release(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "mem_total": mem.get("MemTotal"),
        "mem_available": mem.get("MemAvailable"),
        "time_unix": time.time(),
    }
