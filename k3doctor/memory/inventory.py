"""The tensor inventory a plan is computed from: the ``model`` fact's inventory (computed by the
checkpoint scan), else shard headers when present (read through that same scan, the one header
reader), else config.json.

Records are aggregated per (layer, name template) at read time, so a 497,220-tensor checkpoint
becomes ~3,000 groups (~60 templates over the layers): a template is the tensor name with the layer
and expert indices removed. One grouping implementation: :func:`fold_tensors` (per shard, on the
checkpoint scan's rows, or on synthesised tensors in :func:`aggregate`), then
:func:`groups_from_folded`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .fold import (_COLUMNS, _EXPERT_ID_STR, _EXPERT_MARK, _ORDER, INVENTORY_FACT_SCHEMA, Group, HeaderFold,
                   _unranges, fold_tensors, groups_from_folded, inventory_fact, merge_folded)
from .spec import ModelSpec, UnknownArchitecture, load_known_config, spec_from_config
from .synth import DTYPE_BYTES, Tensor, synthesise

__all__ = ["Group", "Inventory", "InventoryError", "load_inventory", "aggregate", "read_config_any", "inventory_from_spec",
           "fold_tensors", "merge_folded", "groups_from_folded", "inventory_fact", "inventory_from_fact",
           "inventory_of_model_fact", "with_launch_quantization_inventory"]

#: HF's default ``max_shard_size`` ("5GB") — used when shard sizes are unknown (config-only).
DEFAULT_SHARD_BYTES = 5_000_000_000


class InventoryError(ValueError):
    """The model directory / config cannot be read; the message says what to do."""


@dataclass
class Inventory:
    source: str  # "headers" | "config"
    spec: ModelSpec | None
    groups: list[Group]
    total_bytes: int
    n_tensors: int
    max_shard_bytes: int
    n_shards: int
    notes: list[str] = field(default_factory=list)
    config: Mapping[str, Any] | None = None

    @property
    def header_only(self) -> bool:
        return self.spec is None


def aggregate(records: Iterable[Any], *, expert_scale: int = 1) -> tuple[list[Group], int, int, dict[str, int]]:
    """Group tensor records (``.name``, ``.dtype``, ``.shape``, ``.nbytes``, optional ``.shard``),
    or plain ``(name, dtype, shape, nbytes, shard)`` tuples.

    ``expert_scale`` > 1 means the records carry one expert per layer standing for that many
    (compact synthesis); bytes and counts of expert tensors are multiplied accordingly.
    Same grouping as the header readers (:func:`fold_tensors` + :func:`groups_from_folded`).
    """
    names: list[str] = []
    dtypes: list[str] = []
    sizes: list[int] = []
    shards: dict[str, int] = {}
    for r in records:
        if isinstance(r, tuple):
            name, dtype, _shape, nb, sh = r
        else:
            name, dtype, nb, sh = r.name, r.dtype, r.nbytes, getattr(r, "shard", "")
        nb = int(nb)
        if expert_scale > 1 and ".experts." in name and _EXPERT_ID_STR.search(name):
            nb *= expert_scale  # one synthesised expert stands for ``expert_scale``
        names.append(name)
        dtypes.append(str(dtype))
        sizes.append(nb)
        if sh:
            shards[sh] = shards.get(sh, 0) + nb
    acc = fold_tensors(names, dtypes, sizes)
    if expert_scale > 1:
        for key, a in acc.items():
            if _EXPERT_MARK in key[0]:
                a[1] *= expert_scale
    groups = groups_from_folded(acc)
    total = sum(g.nbytes for g in groups)
    n = sum(g.count for g in groups)
    return groups, total, n, shards


# -- reading ---------------------------------------------------------------------------------
def read_config_any(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """config.json from a directory, a config.json path, or a known Hub id; None if absent."""
    p = Path(path)
    read_config: Any = None
    try:
        from k3doctor.ckpt.inventory import read_config
    except Exception:  # noqa: BLE001 - the checkpoint reader may not be installed yet
        pass
    if p.is_dir():
        cfg = None
        if read_config is not None:
            try:
                cfg = read_config(p)
            except Exception:  # noqa: BLE001
                cfg = None
        if cfg is None:
            cp = p / "config.json"
            if not os.path.lexists(cp):
                return None
            cfg = _json_file(cp)
        return with_side_files(cfg, p)
    if p.is_file():
        # ModelOpt's side file: hf_quant_config.json beside config.json, or <name>.hf_quant_config.json;
        # AutoGPTQ/AutoAWQ's quantize_config.json
        return _with_hf_quant(_json_file(p), [p.with_name(p.stem + ".hf_quant_config.json"),
                                              p.with_name("hf_quant_config.json"), p.with_name("quantize_config.json")])
    return load_known_config(str(path))


def with_side_files(cfg: Any, model_dir: str | os.PathLike[str]) -> Any:
    """``cfg`` (a checkpoint directory's config.json) completed by the quantisation side file beside
    it (see :func:`_with_hf_quant`)."""
    d = Path(model_dir)
    return _with_hf_quant(cfg, [d / "hf_quant_config.json", d / "quantize_config.json"])


def _with_hf_quant(cfg: Any, candidates: list[Path]) -> Any:
    """``cfg`` with the quantisation merged from the first side file that exists (engines read
    ModelOpt's ``hf_quant_config.json`` and AutoGPTQ/AutoAWQ's ``quantize_config.json`` when
    config.json has no ``quantization_config``); a broken side file leaves config.json as it is."""
    if not isinstance(cfg, dict) or cfg.get("quantization_config"):
        return cfg
    for hq in candidates:
        if hq.is_file():
            from .quantscheme import merge_hf_quant_config, merge_quantize_config

            try:
                if hq.name == "quantize_config.json":
                    return merge_quantize_config(cfg, _json_file(hq))
                return merge_hf_quant_config(cfg, _json_file(hq))
            except Exception:  # noqa: BLE001
                return cfg
    return cfg


def _json_file(p: Path) -> dict[str, Any]:
    from ..boundedio import BoundedReadError, read_text

    from ..jsondoc import loads_or_reason

    try:
        text = read_text(p, kind="config")
    except BoundedReadError as exc:
        raise InventoryError(f"{exc.path}: cannot read ({exc.reason})") from None
    doc, why = loads_or_reason(text)
    if why:
        raise InventoryError(f"{p}: {why}")
    if not isinstance(doc, dict):
        raise InventoryError(f"{p}: expected a JSON object")
    return doc


def _scan_inventory(model_dir: Path) -> Inventory:
    """The inventory of ``model_dir``'s shard headers through the checkpoint scan, the one header
    reader (:func:`k3doctor.ckpt.scan.scan_checkpoint` with a :class:`~.fold.HeaderFold` sink, as
    ``check --model`` runs it): the same bounds (a 99 MB header of a million tensors is refused
    within the memory budget, not folded), the same memo of repeated per-layer headers, the same
    groups."""
    from ..ckpt.scan import scan_checkpoint

    fact = scan_checkpoint(model_dir, rows=HeaderFold(model_dir))
    for p in fact.get("problems") or ():
        if p.get("file") == "config.json" and p.get("kind") in ("config_unreadable", "config_invalid",
                                                                  "dangling_symlink"):
            # a config.json that exists but cannot be used: say so, never plan header-only behind it
            what = {"config_invalid": "is not a usable JSON object", "config_unreadable": "cannot be read",
                    "dangling_symlink": "is a link to a file that does not exist"}[str(p["kind"])]
            detail = p.get("error") or p.get("target")
            raise InventoryError(f"{model_dir / 'config.json'} {what}{f' ({detail})' if detail else ''}; "
                                 "re-download it (or fix it) before planning")
    doc = fact.get("inventory")
    if not isinstance(doc, Mapping):
        raise InventoryError(f"{model_dir}: no *.safetensors headers and no config.json to plan from")
    return inventory_from_fact(doc, str(model_dir))


def load_inventory(model: str | os.PathLike[str] | None = None, *, config: Mapping[str, Any] | None = None) -> Inventory:
    """:func:`read_inventory` (the name the planner's callers use). Nothing is cached across calls:
    within a run the ``inventory`` derived fact is computed once (:mod:`k3doctor.derived`)."""
    return read_inventory(model, config=config)


def read_inventory(model: str | os.PathLike[str] | None = None, *, config: Mapping[str, Any] | None = None) -> Inventory:
    """Inventory for ``model`` (a directory, a config.json, or a known Hub id) or a config dict.

    Shard headers win when the directory has ``*.safetensors``; otherwise the inventory is
    synthesised from config.json. An unknown architecture with headers falls back to header-only
    accounting (``spec`` None, noted); without headers it raises :class:`InventoryError`.
    """
    notes: list[str] = []
    model_dir = Path(model) if model is not None and Path(model).is_dir() else None
    if config is None and model_dir is not None and any(model_dir.glob("*.safetensors")):
        return _scan_inventory(model_dir)
    if config is None and model is not None:
        config = read_config_any(model)
        if config is None and model_dir is None:
            raise InventoryError(
                f"{model}: not a directory, not a config.json and not a known model id; "
                "pass --model DIR (with config.json or *.safetensors) or a config.json path"
            )
    spec = _spec(config, model_dir, notes)
    if spec is None:
        if config is None:
            raise InventoryError(f"{model}: no config.json and no *.safetensors shards, nothing to plan from; "
                                 "pass --model a checkpoint directory (or its config.json, or a known model id)")
        why = notes[-1] if notes else "the config cannot be projected"
        raise InventoryError(f"{model}: {why}; and no *.safetensors headers to fall back on")
    return inventory_from_spec(spec, config, notes)


def inventory_from_spec(spec: ModelSpec, config: Mapping[str, Any] | None = None,
                        notes: list[str] | None = None) -> Inventory:
    """The config-synthesised :class:`Inventory` of ``spec`` (experts synthesised once per layer and
    scaled back up)."""
    notes = list(notes or [])
    scale = spec.experts if spec.is_moe and spec.family not in ("gpt_oss",) else 1
    tensors: list[Tensor] = synthesise(spec, experts_limit=1 if scale > 1 else None)
    groups, total, n, shards = aggregate(tensors, expert_scale=scale)
    if shards:
        mx, ns = max(shards.values()), len(shards)
    else:
        mx, ns = min(total, DEFAULT_SHARD_BYTES), max(1, -(-total // DEFAULT_SHARD_BYTES))
        notes.append("shard sizes unknown (config only): assuming 5 GB shards")
    return Inventory("config", spec, groups, total, n, mx, ns, notes, config)


def _spec(config: Mapping[str, Any] | None, model_dir: Any, notes: list[str]) -> ModelSpec | None:
    if config is not None:
        try:
            return spec_from_config(config)
        except UnknownArchitecture as exc:
            notes.append(f"unknown architecture: {exc}; falling back to header-only accounting")
    elif model_dir is not None:
        notes.append(f"{model_dir}: no config.json; falling back to header-only accounting")
    return None


def inventory_from_fact(doc: Mapping[str, Any], where: str = "the checkpoint") -> Inventory:
    """:class:`Inventory` from ``model["inventory"]`` (see :func:`inventory_fact`): the same
    groups, totals and notes :func:`read_inventory` gives for that directory, without its files."""
    if doc.get("schema") != INVENTORY_FACT_SCHEMA or doc.get("columns") != _COLUMNS:
        raise InventoryError(f"{where}: the model fact's inventory has an unknown schema; "
                             "run the check again with --model DIR")
    errors = doc.get("errors") or []
    if errors:
        e = errors[0]
        path = os.path.join(where, str(e.get("file")))
        if e.get("kind") == "too_many_tensor_names":
            raise InventoryError(f"{path}: more distinct tensor names than any model has (the planner folds "
                                 "per-layer names; this header's do not fold): not a checkpoint to plan from")
        raise InventoryError(f"{path}: unreadable safetensors header ({e.get('kind')}); re-download the shard "
                             f"(`k3doctor check --model {where}` says what is wrong and prints the command)")
    config = doc.get("config")
    if doc.get("source") == "config":
        if not isinstance(config, Mapping):
            raise InventoryError(f"{where}: no *.safetensors headers and no config.json in the model fact")
        return read_inventory(config=config)
    notes: list[str] = []
    spec = _spec(config if isinstance(config, Mapping) else None, where, notes)
    try:
        groups = sorted((Group(layer, str(t), int(nb), int(cnt), str(dt), (), int(ne))
                         for t, dt, nb, cnt, ne, layers in doc["groups"] for layer in _unranges(str(layers))),
                        key=_ORDER)
        total, n = int(doc["bytes"]), int(doc["tensors"])
        mx, ns = int(doc["max_shard_bytes"]), int(doc["shards"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InventoryError(f"{where}: the model fact's inventory is malformed ({exc}); "
                             "run the check again with --model DIR") from None
    if n == 0:
        raise InventoryError(f"{where}: safetensors files hold no tensors")
    return Inventory("headers", spec, groups, total, n, mx, ns, notes, config if isinstance(config, Mapping) else None)


def _same_dir(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    a, b = os.path.normpath(os.path.abspath(str(a))), os.path.normpath(os.path.abspath(str(b)))
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def inventory_of_model_fact(model: Mapping[str, Any] | None, ref: str, option_dir: Any = None) -> Inventory | None:
    """The inventory the ``model`` fact carries (the checkpoint scan's own fold of the headers, also
    from a snapshot of another machine) when that fact describes ``ref`` (the same directory, or the
    one ``--model`` named); None otherwise."""
    doc = (model or {}).get("inventory")
    if not isinstance(model, Mapping) or not isinstance(doc, Mapping):
        return None
    if _same_dir(ref, model.get("dir")) or (str(model.get("found_via") or "").startswith("option")
                                             and option_dir is not None and ref == option_dir):
        return inventory_from_fact(doc, str(model.get("dir") or ref))
    return None


def with_launch_quantization_inventory(inv: Inventory, launch: Mapping[str, Any]) -> Inventory:
    """``inv`` as the engine holds it when the launch quantises while loading
    (``--quantization fp8`` / ``bitsandbytes`` on an unquantised checkpoint): a config-built
    inventory is rebuilt with that scheme; a header inventory is kept, with a note (its bytes
    are the checkpoint's, larger than what the engine keeps)."""
    from .quantscheme import ONLINE_QUANTIZATION, with_launch_quantization

    flag = str(launch.get("quantization") or "").lower()
    if flag not in ONLINE_QUANTIZATION or inv.config is None:
        return inv
    cfg = with_launch_quantization(inv.config, flag)
    if cfg.get("quantization_config") == inv.config.get("quantization_config"):
        return inv
    if inv.source != "config":
        inv.notes.append(f"--quantization {flag} quantises while loading; the shard headers' sizes are the "
                         "unquantised checkpoint's, so this projection is high")
        return inv
    out = load_inventory(None, config=cfg)
    out.notes.append(f"--quantization {flag}: projected as the engine quantises it while loading")
    return out


def dtype_bytes(dtype: str) -> float:
    return DTYPE_BYTES.get(dtype, 2)
