"""Derived facts: the values several checks need, computed once per run from other facts.

Each function's parameters name the facts it combines (injected as for checks, see
:func:`k3doctor.check.inject`); it returns the value or raises :class:`~k3doctor.model.Skip` with
the reason, which the fact set remembers so every check that needs it skips with the same words.
They are registered in :data:`k3doctor.facts.DERIVED`, available in live, snapshot and target runs,
and never written to snapshots.

- ``gpu_spec``: the GPU the memory plan sizes against (smallest device of this node / target);
- ``inventory``: the checkpoint's tensor inventory (the ``model`` fact's, i.e. the same header pass
  as the CKPT scan, else shard headers or config.json of the model the launch names);
- ``plan``: the per-rank memory plan (:func:`k3doctor.memory.plan.compute_plan`);
- ``driver_cuda``: the CUDA version the NVIDIA driver supports (NVML, e.g. 12040 = 12.4);
- ``measured``: a measured per-rank weight figure (``--measured-gib`` / ``--engine-log``), bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from .facttypes import GpuFact
from .launch import LaunchSpec
from .model import Skip
from .units import GiB

if TYPE_CHECKING:  # pragma: no cover
    from .memory.inventory import Inventory
    from .memory.plan import GpuSpec, Plan

__all__ = ["derive_gpu_spec", "derive_inventory", "derive_plan", "derive_measured", "derive_driver_cuda", "model_ref"]


def _usable(launch: LaunchSpec) -> None:
    bad = list(launch.invalid)
    if bad:
        raise Skip(f"the launch command has invalid values ({', '.join(dict.fromkeys(bad))}; see CMD001): "
                   "fix them first; a projection from defaults would describe a run the engine never starts")


def model_ref(launch: LaunchSpec, options: Mapping[str, Any], model: Mapping[str, Any] | None) -> str | None:
    """The model to plan: ``--model DIR``, else the directory the ``model`` fact scanned, else the
    launch command's model (a local path or a hub id)."""
    m = model or {}
    ref = options.get("model_dir") or m.get("path") or m.get("model_dir") or m.get("dir") or launch.model
    return str(ref) if ref else None


def derive_gpu_spec(launch: LaunchSpec, gpu: GpuFact) -> "GpuSpec":
    """The smallest device of the ``gpu`` fact (total, free, driver-reserved, compute capability)."""
    from .memory.plan import GpuSpec

    _usable(launch)
    devices = GpuFact.of(gpu).devices
    if not devices:
        raise Skip("no GPU devices in the gpu fact (use --target or a snapshot)")
    totals = [d.memory_total for d in devices if d.memory_total]  # unknown (or 0) is not a size to plan for
    if not totals:
        raise Skip("no GPU in the gpu fact reports its total memory")
    frees = [d.memory_free for d in devices if d.memory_free is not None]
    reserved = [d.memory_reserved for d in devices if d.memory_reserved is not None]
    return GpuSpec(devices[0].gpu_name or "gpu", min(totals), min(frees) if frees else None,
                   str(gpu.get("source") or "nvml"), devices[0].cc, max(reserved) if reserved else None)


def derive_inventory(launch: LaunchSpec, options: Mapping[str, Any],
                     model: Mapping[str, Any] | None = None) -> "Inventory":
    """The inventory the plan folds: the ``model`` fact's own (recorded by the checkpoint scan,
    also from a snapshot) when it describes the model to plan, else :func:`load_inventory` of it;
    then as the engine holds it when the launch quantises while loading."""
    from .memory.inventory import (InventoryError, inventory_of_model_fact, load_inventory,
                                   with_launch_quantization_inventory)

    _usable(launch)
    ref = model_ref(launch, options, model)
    if not ref:
        raise Skip("no model directory or model id to plan from")
    try:
        inv = inventory_of_model_fact(model, ref, options.get("model_dir")) or load_inventory(ref)
        return with_launch_quantization_inventory(inv, launch)
    except InventoryError as exc:
        raise Skip(str(exc)) from None


def derive_plan(launch: LaunchSpec, gpu_spec: "GpuSpec", inventory: "Inventory", gpu: Mapping[str, Any],
                options: Mapping[str, Any], packages: Mapping[str, Any] | None = None,
                model: Mapping[str, Any] | None = None) -> "Plan":
    """The per-rank memory plan of this launch on these GPUs (``Skip`` when it cannot be made)."""
    from .memory.plan import PlanError, compute_plan

    vllm_version = (packages or {}).get("vllm") or None if launch.engine == "vllm" else None
    par = launch.placement(concurrency=options.get("concurrency"))
    # GPUs per node: the option, else the devices of this node / target profile (the launch
    # fact's own figure is world/nnodes, which says nothing when --nnodes is absent)
    par.gpus_per_node = int(options.get("gpus_per_node") or len(gpu.get("devices") or ()))
    if "--nnodes" not in launch.flags and par.gpus_per_node:
        par.nnodes = max(par.nnodes, -(-par.world // par.gpus_per_node))  # vLLM/Ray runs carry no --nnodes
    try:
        return compute_plan(inventory, par, gpu_spec, model_name=str(launch.model or model_ref(launch, options, model)),
                            vllm_version=vllm_version)
    except PlanError as exc:
        raise Skip(f"impossible plan: {exc}") from None
    except ValueError as exc:  # e.g. an unknown --kv-cache-dtype
        raise Skip(str(exc)) from None


def derive_measured(options: Mapping[str, Any]) -> float:
    """Measured per-rank weight bytes: ``measured_bytes`` (from ``--engine-log``) or ``measured_gib``."""
    if options.get("measured_bytes") is not None:
        return float(options["measured_bytes"])
    if options.get("measured_gib") is not None:
        return float(options["measured_gib"]) * GiB
    raise Skip("no measured per-rank figure (--measured-gib or --engine-log)")


def derive_driver_cuda(gpu: Mapping[str, Any]) -> int:
    """The driver's CUDA version from the ``gpu`` fact (``Skip`` when NVML did not answer or did not
    report it; a ``--target`` profile has no live driver)."""
    from .checks._gpu_common import _gpu, _unknown

    value = _gpu(gpu).get("cuda_driver")
    if not isinstance(value, int):
        raise _unknown(gpu, "the driver's CUDA version")
    return value
