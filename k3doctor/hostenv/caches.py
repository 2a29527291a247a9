"""Where each JIT / download cache of a launch lives, explicit or default, and the per-rank fix.

Sources (domain notes §E): Triton ``runtime/cache.py``; TorchInductor ``cache_dir_utils.py``;
FlashInfer ``jit/env.py``; DeepGEMM ``csrc/jit/compiler.hpp``; SGLang ``deep_gemm_wrapper``
(force-sets ``DG_JIT_CACHE_DIR`` from ``SGLANG_DG_CACHE_DIR``); vLLM ``envs.py``; CUDA
programming guide (``CUDA_CACHE_PATH``); DeepEP (``EP_JIT_CACHE_DIR``); huggingface_hub
``constants.py``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = [
    "CacheDir",
    "resolve_caches",
    "RANK_VARS",
    "rank_key",
    "local_cache_dir",
    "default_tmpdir",
]

#: Launcher variables that identify a process (or node) — first present, integer-valued one wins.
RANK_VARS = (
    "LOCAL_RANK",  # torchrun, per process on a node
    "RANK",  # torchrun, global
    "SLURM_PROCID",  # srun task
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "LWS_WORKER_INDEX",  # Kubernetes LeaderWorkerSet
    "JOB_COMPLETION_INDEX",  # Kubernetes indexed Job
    "SLURM_NODEID",
)


@dataclass(frozen=True)
class CacheDir:
    """One cache directory a launch will use."""

    key: str  # "triton", "inductor", …
    label: str  # human name
    path: str  # absolute path (may not exist yet)
    variable: str  # the variable that, when set, moves it (the one to export as the fix)
    explicit: bool  # set by the user (vs. the tool's default)
    source: str  # "TRITON_CACHE_DIR", "TRITON_HOME", "default"
    jit: bool  # written by every rank at run time (JIT) vs. download store / $HOME
    subdir: str = ""  # what the tool appends under ``variable``'s value, if anything
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key, "label": self.label, "path": self.path, "variable": self.variable,
            "explicit": self.explicit, "source": self.source, "jit": self.jit, "subdir": self.subdir,
            "note": self.note,
        }


def default_tmpdir(env: Mapping[str, str]) -> str:
    """``tempfile.gettempdir()`` as a child process would compute it (TMPDIR, TEMP, TMP, /tmp)."""
    for var in ("TMPDIR", "TEMP", "TMP"):
        value = env.get(var)
        if value and value.startswith("/"):
            return value
    return "/tmp"


def _abs(path: str, home: str) -> str:
    if path.startswith("~"):
        path = home + path[1:]
    if not path.startswith("/"):
        return ""
    return posixpath.normpath(path)


def resolve_caches(
    env: Mapping[str, str],
    *,
    engine: str | None = None,
    home: str = "",
    user: str = "",
) -> list[CacheDir]:
    """Every cache directory the launch will use, with the variable that set it (or ``default``).

    ``engine`` is ``"sglang"``, ``"vllm"`` or ``None`` (unknown: both engines' caches are listed).
    Relative or garbage values are reported with an empty ``path`` and a note.
    """
    home = env.get("HOME") or home or "/root"
    user = env.get("USER") or env.get("LOGNAME") or user or "unknown"
    xdg = env.get("XDG_CACHE_HOME") or posixpath.join(home, ".cache")
    eng = (engine or "").lower() or None
    out: list[CacheDir] = []

    def add(key: str, label: str, var: str, candidates: list[tuple[str, str]], default: str, *,
            jit: bool = True, subdir: str = "", note: str = "") -> None:
        for name, suffix in candidates:
            value = env.get(name)
            if value is None or value == "":
                continue
            path = _abs(value + suffix, home)
            bad = "" if path else f"{name}={value!r} is not an absolute path; the tool resolves it against its working directory"
            out.append(CacheDir(key, label, path, var, True, name, jit, subdir, "; ".join(x for x in (note, bad) if x)))
            return
        out.append(CacheDir(key, label, _abs(default, home), var, False, "default", jit, subdir, note))

    add("triton", "Triton JIT cache", "TRITON_CACHE_DIR",
        [("TRITON_CACHE_DIR", ""), ("TRITON_HOME", "/.triton/cache")], posixpath.join(home, ".triton/cache"))
    add("inductor", "TorchInductor cache", "TORCHINDUCTOR_CACHE_DIR", [("TORCHINDUCTOR_CACHE_DIR", "")],
        posixpath.join(default_tmpdir(env), f"torchinductor_{user}"))
    add("flashinfer", "FlashInfer JIT workspace", "FLASHINFER_WORKSPACE_BASE",
        [("FLASHINFER_WORKSPACE_BASE", "/.cache/flashinfer")], posixpath.join(home, ".cache/flashinfer"),
        subdir=".cache/flashinfer")
    if eng in (None, "sglang"):
        ignored = env.get("DG_JIT_CACHE_DIR")
        note = (f"DG_JIT_CACHE_DIR={ignored!r} is ignored: SGLang overwrites it with SGLANG_DG_CACHE_DIR"
                if ignored and not (env.get("SGLANG_DG_CACHE_DIR") or env.get("SGL_DG_CACHE_DIR")) else "")
        add("deepgemm_sglang", "DeepGEMM JIT cache (SGLang)", "SGLANG_DG_CACHE_DIR",
            [("SGLANG_DG_CACHE_DIR", ""), ("SGL_DG_CACHE_DIR", "")], posixpath.join(home, ".cache/deep_gemm"),
            note=note)
    if eng in (None, "vllm"):
        add("deepgemm", "DeepGEMM JIT cache", "DG_JIT_CACHE_DIR", [("DG_JIT_CACHE_DIR", "")],
            posixpath.join(home, ".deep_gemm"))
        vllm_default = posixpath.join(env.get("XDG_CACHE_HOME") or posixpath.join(home, ".cache"), "vllm")
        add("vllm", "vLLM cache root (torch.compile cache)", "VLLM_CACHE_ROOT", [("VLLM_CACHE_ROOT", "")],
            vllm_default)
    if env.get("CUDA_CACHE_DISABLE", "").strip() != "1":
        add("cuda", "CUDA driver JIT (compute) cache", "CUDA_CACHE_PATH", [("CUDA_CACHE_PATH", "")],
            posixpath.join(home, ".nv/ComputeCache"))
    add("deepep", "DeepEP JIT cache", "EP_JIT_CACHE_DIR", [("EP_JIT_CACHE_DIR", "")],
        posixpath.join(home, ".deep_ep"))
    hf_home = env.get("HF_HOME") or posixpath.join(xdg, "huggingface")
    add("hf_hub", "Hugging Face hub cache", "HF_HUB_CACHE",
        [("HF_HUB_CACHE", ""), ("HUGGINGFACE_HUB_CACHE", "")], posixpath.join(hf_home, "hub"), jit=False)
    out.append(CacheDir("home", "$HOME", _abs(home, "/"), "HOME", bool(env.get("HOME")),
                        "HOME" if env.get("HOME") else "default", False))
    return out


_INT = re.compile(r"^\s*(\d{1,9})\s*$")


def rank_key(env: Mapping[str, str], node_rank: int | None = None) -> tuple[str, str, list[str]]:
    """``(variable, value, problems)``: the launcher's rank variable and its value.

    Non-integer values (garbage) are skipped and reported in ``problems``. Without any, the
    launch's ``node_rank`` is used (variable ``"node_rank"``), else ``("", "0", …)``.
    """
    problems: list[str] = []
    for var in RANK_VARS:
        value = env.get(var)
        if value is None:
            continue
        m = _INT.match(value)
        if m:
            return var, str(int(m.group(1))), problems
        problems.append(f"{var}={value!r} is not a non-negative integer; ignored")
    if node_rank is not None:
        return "node_rank", str(node_rank), problems
    problems.append(
        "no launcher rank variable (" + ", ".join(RANK_VARS[:4]) + ", …) is set; using rank 0 — "
        "run once per node or pass --rank-var"
    )
    return "", "0", problems


_SAFE_USER = re.compile(r"[^A-Za-z0-9_.-]")


def local_cache_dir(root: str, user: str, rank: str, key: str) -> str:
    """``<root>/k3doctor-<user>/rank<rank>/<key>`` — node-local, one per rank, no shell syntax."""
    safe_user = _SAFE_USER.sub("_", user or "user")
    safe_rank = _SAFE_USER.sub("_", rank or "0")
    return posixpath.join(root, f"k3doctor-{safe_user}", f"rank{safe_rank}", key)
