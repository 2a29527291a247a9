"""What the memory planner reads from a launch command's flags beyond the canonical fields: each
rule in one place, in every spelling the engines have used (used by
:meth:`k3doctor.launch.LaunchSpec.placement`)."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

__all__ = ["redundant_experts", "vllm_mtp_draft", "flag_number"]


def flag_number(flags: Mapping[str, Any], name: str, kind: type[int] | type[float]) -> int | float | None:
    """``--name N`` written as plain digits (with one ``.`` for a float); None when absent or
    anything else (a sign, an exponent, ``inf``)."""
    text = str(flags.get(name) or "")
    digits = text.replace(".", "", 1) if kind is float else text
    return kind(text) if digits.isdigit() else None


def vllm_mtp_draft(engine: str, spec_config: Any) -> bool:
    """vLLM ``--speculative-config`` naming an MTP method (``mtp``, ``deepseek_mtp``,
    ``qwen3_next_mtp`` ...): the drafter is the checkpoint's own MTP layers, loaded inside the
    target's ``load_model`` and counted in its "Model loading took" (gpu_model_runner.load_model
    loads the drafter under the same memory profiler; the embedding and lm_head are shared)."""
    if engine != "vllm" or not spec_config:
        return False
    cfg = spec_config
    if isinstance(cfg, str):
        try:
            cfg = json.loads(cfg)
        except ValueError:
            return "mtp" in cfg.lower()
    method = str(cfg.get("method") or "") if isinstance(cfg, Mapping) else ""
    return "mtp" in method.lower()


def redundant_experts(engine: str, flags: Mapping[str, Any]) -> int:
    """Redundant physical experts from the launch flags, in each spelling the engines have used:
    SGLang ``--ep-num-redundant-experts N``; vLLM ``--num-redundant-experts N`` (0.9-0.10),
    ``--eplb-config '{"num_redundant_experts": N}'`` and ``--eplb-config.num_redundant_experts N``
    (0.11+). vLLM counts them only with ``--enable-eplb``."""
    def num(v: Any) -> int:
        try:
            return max(0, int(str(v).strip()))
        except (TypeError, ValueError):
            return 0

    if engine == "sglang":
        return num(flags.get("--ep-num-redundant-experts"))
    if engine != "vllm":
        return 0
    if "--enable-eplb" not in flags and not flags.get("--eplb-config"):
        return 0
    for key in ("--num-redundant-experts", "--eplb-config.num_redundant_experts"):
        if key in flags:
            return num(flags[key])
    raw = flags.get("--eplb-config")
    if isinstance(raw, str):
        # JSON as written, or with its quotes eaten by a shell wrapper ({num_redundant_experts:32})
        m = re.search(r"num_redundant_experts\W{0,4}(\d{1,6})", raw)
        if m:
            return num(m.group(1))
    return 0
