"""Per-rank memory projection (``k3doctor plan``, MEM checks).

Pipeline: inventory (shard headers, or synthesised from config.json) → placement by engine rules
→ engine effects (constants with sources) → KV/state under the engine's memory-budget semantics.

The names below are imported on first use (PEP 562), so importing a light submodule such as
:mod:`.fold` (the checkpoint scan's tensor sink) does not import the whole planner.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the submodule that defines it
_EXPORTS = {
    "Inventory": ".inventory", "InventoryError": ".inventory", "load_inventory": ".inventory",
    "Parallel": ".placement", "PlanError": ".placement",
    "SCHEMA_VERSION": ".plan", "GpuSpec": ".plan", "Plan": ".plan", "RankMemory": ".plan", "compute_plan": ".plan",
    "plan_from_facts": ".plan", "resolve_gpu": ".plan",
    "ModelSpec": ".spec", "UnknownArchitecture": ".spec", "spec_from_config": ".spec",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
