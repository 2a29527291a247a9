"""Per-rank memory projection (``k3doctor plan``, MEM checks).

Pipeline: inventory (shard headers, or synthesised from config.json) → placement by engine rules
→ engine effects (constants with sources) → KV/state under the engine's memory-budget semantics.
"""

from __future__ import annotations

from .inventory import Inventory, InventoryError, load_inventory
from .placement import Parallel, PlanError
from .plan import SCHEMA_VERSION, GpuSpec, Plan, RankMemory, compute_plan, parallel_from_launch, plan_from_facts, resolve_gpu
from .spec import ModelSpec, UnknownArchitecture, spec_from_config

__all__ = [
    "Inventory", "InventoryError", "load_inventory", "Parallel", "PlanError", "SCHEMA_VERSION", "GpuSpec", "Plan",
    "RankMemory", "compute_plan", "parallel_from_launch", "plan_from_facts", "resolve_gpu", "ModelSpec",
    "UnknownArchitecture", "spec_from_config",
]
