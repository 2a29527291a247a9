"""The tensor inventory a plan is computed from: shard headers when present, else config.json.

Records are aggregated per (layer, name template) at read time, so a 497,220-tensor checkpoint
becomes ~60 groups: a template is the tensor name with the layer and expert indices removed.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .spec import ModelSpec, UnknownArchitecture, load_known_config, spec_from_config
from .synth import DTYPE_BYTES, Tensor, synthesise

__all__ = ["Group", "Inventory", "InventoryError", "load_inventory", "aggregate", "read_config_any"]

_NUM = re.compile(r"\.(\d+)\.")
#: HF's default ``max_shard_size`` ("5GB") — used when shard sizes are unknown (config-only).
DEFAULT_SHARD_BYTES = 5_000_000_000


class InventoryError(ValueError):
    """The model directory / config cannot be read; the message says what to do."""


@dataclass
class Group:
    layer: int  # -1 for model-level tensors
    template: str  # name with layer index -> "{L}" and expert index -> "{E}"
    nbytes: int = 0
    count: int = 0
    dtype: str = ""
    shape: tuple[int, ...] = ()
    experts: int = 0  # distinct expert ids seen (0 = not an expert tensor)
    _eids: set[int] = field(default_factory=set, repr=False)


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
    """
    acc: dict[tuple[int, str], list[Any]] = {}
    heads: dict[str, tuple[int, str]] = {}
    shards: dict[str, int] = {}
    total = n = 0
    split = _NUM.split
    for r in records:
        if isinstance(r, tuple):
            name, dtype, shape, nb, sh = r
        else:
            name, dtype, shape, nb, sh = r.name, r.dtype, r.shape, r.nbytes, getattr(r, "shard", "")
        i = name.find(".experts.")
        eid = -1
        if i > 0 and name[i + 9 : i + 10].isdigit():
            head = name[:i]
            rest = name[i + 9 :]
            e_txt, _, tail = rest.partition(".")
            hk = heads.get(head)
            if hk is None:
                parts = split(head + ".", 1)
                if len(parts) == 3 and parts[0].endswith("layers"):
                    hk = (int(parts[1]), f"{parts[0]}.{{L}}.{parts[2]}")
                else:
                    hk = (-1, head + ".")
                heads[head] = hk
            key = (hk[0], f"{hk[1]}experts.{{E}}.{tail}")
            eid = int(e_txt) if e_txt.isdigit() else -1
            if expert_scale > 1:
                nb = nb * expert_scale
        else:
            parts = split(name, 2)
            if len(parts) == 1:
                key = (-1, name)
            elif parts[0].endswith("layers") and "vision" not in parts[0] and "visual" not in parts[0]:
                if len(parts) > 3:
                    key = (int(parts[1]), f"{parts[0]}.{{L}}.{parts[2]}.{{N}}.{parts[4]}")
                else:
                    key = (int(parts[1]), f"{parts[0]}.{{L}}.{parts[2]}")
            else:
                key = (-1, _NUM.sub(".{N}.", name))
        nb = int(nb)
        mult = expert_scale if (eid >= 0 and expert_scale > 1) else 1
        total += nb
        n += mult
        if sh:
            shards[sh] = shards.get(sh, 0) + nb
        a = acc.get(key)
        if a is None:
            a = acc[key] = [0, 0, str(dtype), tuple(shape), set()]
        a[0] += nb
        a[1] += mult
        if eid >= 0:
            a[4].add(eid)
    out = []
    for (layer, tmpl), (nb, cnt, dt, shp, eids) in acc.items():
        ne = len(eids) * (expert_scale if expert_scale > 1 else 1)
        out.append(Group(layer, tmpl, nb, cnt, dt, shp, ne))
    return out, total, n, shards


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
        if read_config is not None:
            try:
                cfg = read_config(p)
                if cfg is not None:
                    return cfg
            except Exception:  # noqa: BLE001
                pass
        cp = p / "config.json"
        if not cp.is_file():
            return None
        return _json_file(cp)
    if p.is_file():
        return _json_file(p)
    return load_known_config(str(path))


def _json_file(p: Path) -> dict[str, Any]:
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InventoryError(f"{p}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InventoryError(f"{p}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict):
        raise InventoryError(f"{p}: expected a JSON object")
    return doc


_HDR_ENTRY = re.compile(
    rb'"([^"]+)":\{"dtype":"(\w+)","shape":\[[\d, ]*\],"data_offsets":\[(\d+), ?(\d+)\]\}'
)


_EXPERT_ID = re.compile(rb"\.experts\.\d+\.")


def _read_header(f: Path) -> bytes:
    try:
        with open(f, "rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise InventoryError(f"{f}: shorter than a safetensors header; re-download the shard")
            (n,) = struct.unpack("<Q", raw)
            if n > 100_000_000:
                raise InventoryError(f"{f}: header length {n} is implausible (LFS pointer or corrupt file?); "
                                     "re-download the shard")
            return fh.read(n)
    except OSError as exc:
        raise InventoryError(f"{f}: cannot read ({exc.strerror or exc})") from None


def _aggregate_headers(model_dir: Path) -> tuple[list[Group], int, int, dict[str, int]]:
    """Aggregate every ``*.safetensors`` header of ``model_dir`` (see :func:`aggregate`).

    Reads only the 8-byte length and the JSON header of each shard (the bytes ``k3doctor.ckpt``
    validates). Headers in the canonical safetensors serialisation are scanned with one regular
    expression and grouped on bytes (several times faster than ``json.loads`` + per-tensor
    objects for half a million tensors); any other layout falls back to the JSON parser.
    """
    groups_acc: dict[bytes, list[int]] = {}
    shards: dict[str, int] = {}
    slow: list[tuple[str, str, tuple[int, ...], int, str]] = []
    total = n = 0
    for f in sorted(model_dir.glob("*.safetensors")):
        raw = _read_header(f)
        # fold expert ids in C first (one template per layer and expert tensor), then scan once
        folded = _EXPERT_ID.sub(b".experts.{E}.", raw) if b".experts." in raw else raw
        ents = _HDR_ENTRY.findall(folded)
        if len(ents) != raw.count(b'"data_offsets"') or b"\\" in raw:
            try:
                hdr = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise InventoryError(f"{f}: header is not valid JSON; re-download the shard") from None
            for name, meta in hdr.items():
                if name == "__metadata__":
                    continue
                try:
                    b, e = meta["data_offsets"]
                    slow.append((name, meta["dtype"], tuple(meta["shape"]), int(e) - int(b), f.name))
                except (KeyError, TypeError, ValueError):
                    raise InventoryError(f"{f}: tensor {name!r} has a malformed header entry; "
                                         "re-download the shard") from None
            continue
        sbytes = 0
        get = groups_acc.get
        for name, dt, b, e in ents:
            nb = int(e) - int(b)
            sbytes += nb
            key = name + b"|" + dt
            a = get(key)
            if a is None:
                groups_acc[key] = [nb, 1]
            else:
                a[0] += nb
                a[1] += 1
        shards[f.name] = sbytes
        total += sbytes
        n += len(ents)
    recs = []
    for key, (nb, cnt) in groups_acc.items():
        name, _, dt = key.rpartition(b"|")
        recs.append((name.decode(), dt.decode(), (), nb, cnt))
    groups = _group_records(recs)
    if slow:
        g2, t2, n2, s2 = aggregate(slow)
        groups += g2
        total += t2
        n += n2
        shards.update(s2)
    return groups, total, n, shards


def _group_records(recs: list[tuple[str, str, tuple[()], int, int]]) -> list[Group]:
    """Pre-summed (name-with-{E}, dtype, shape, bytes, count) records -> groups."""
    acc: dict[tuple[int, str], Group] = {}
    for name, dt, shape, nb, cnt in recs:
        is_exp = ".experts.{E}" in name
        parts = _NUM.split(name, 1)
        if len(parts) == 3 and parts[0].endswith("layers") and "vision" not in parts[0] and "visual" not in parts[0]:
            layer = int(parts[1])
            rest = _NUM.sub(".{N}.", "." + parts[2])[1:]
            tmpl = f"{parts[0]}.{{L}}.{rest}"
        else:
            layer, tmpl = -1, _NUM.sub(".{N}.", name)
        g = acc.get((layer, tmpl))
        if g is None:
            g = acc[(layer, tmpl)] = Group(layer, tmpl, 0, 0, dt, shape, 0)
        g.nbytes += nb
        g.count += cnt
        if is_exp:
            g.experts = max(g.experts, cnt)
    return list(acc.values())


_CACHE: dict[Any, Inventory] = {}


def _signature(model: str | os.PathLike[str]) -> Any:
    p = Path(model)
    if p.is_dir():
        sig = []
        for f in sorted(p.iterdir()):
            if f.suffix in (".safetensors", ".json"):
                st = f.stat()
                sig.append((f.name, st.st_size, st.st_mtime_ns))
        return (str(p.resolve()), tuple(sig))
    if p.is_file():
        st = p.stat()
        return (str(p.resolve()), st.st_size, st.st_mtime_ns)
    return ("id", str(model).lower())


def load_inventory(model: str | os.PathLike[str] | None = None, *, config: Mapping[str, Any] | None = None) -> Inventory:
    """Cached :func:`read_inventory` (keyed by the files' names, sizes and mtimes)."""
    if config is not None or model is None:
        return read_inventory(model, config=config)
    key = _signature(model)
    inv = _CACHE.get(key)
    if inv is None:
        inv = read_inventory(model)
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[key] = inv
    return inv


def read_inventory(model: str | os.PathLike[str] | None = None, *, config: Mapping[str, Any] | None = None) -> Inventory:
    """Inventory for ``model`` (a directory, a config.json, or a known Hub id) or a config dict.

    Shard headers win when the directory has ``*.safetensors``; otherwise the inventory is
    synthesised from config.json. An unknown architecture with headers falls back to header-only
    accounting (``spec`` None, noted); without headers it raises :class:`InventoryError`.
    """
    notes: list[str] = []
    model_dir = Path(model) if model is not None and Path(model).is_dir() else None
    if config is None and model is not None:
        config = read_config_any(model)
        if config is None and model_dir is None:
            raise InventoryError(
                f"{model}: not a directory, not a config.json and not a known model id; "
                "pass --model DIR (with config.json or *.safetensors) or a config.json path"
            )
    spec: ModelSpec | None = None
    if config is not None:
        try:
            spec = spec_from_config(config)
        except UnknownArchitecture as exc:
            notes.append(f"unknown architecture: {exc}; falling back to header-only accounting")
    elif model_dir is not None:
        notes.append(f"{model_dir}: no config.json; falling back to header-only accounting")
    has_headers = model_dir is not None and any(model_dir.glob("*.safetensors"))
    if has_headers:
        groups, total, n, shards = _aggregate_headers(model_dir)  # type: ignore[arg-type]
        if n == 0:
            raise InventoryError(f"{model_dir}: safetensors files hold no tensors")
        return Inventory("headers", spec, groups, total, n, max(shards.values(), default=0), len(shards), notes, config)
    if spec is None:
        why = notes[-1] if notes else "no config.json"
        raise InventoryError(f"{model}: {why}; and no *.safetensors headers to fall back on")
    scale = spec.experts if spec.is_moe and spec.family not in ("gpt_oss",) else 1
    tensors: list[Tensor] = synthesise(spec, experts_limit=1 if scale > 1 else None)
    groups, total, n, shards = aggregate(tensors, expert_scale=scale)
    if shards:
        mx, ns = max(shards.values()), len(shards)
    else:
        mx, ns = min(total, DEFAULT_SHARD_BYTES), max(1, -(-total // DEFAULT_SHARD_BYTES))
        notes.append("shard sizes unknown (config only): assuming 5 GB shards")
    return Inventory("config", spec, groups, total, n, mx, ns, notes, config)


def dtype_bytes(dtype: str) -> float:
    return DTYPE_BYTES.get(dtype, 2)
