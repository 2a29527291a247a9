"""The memory planner's fold of raw tensor rows: per shard, (name with the expert index folded,
dtype) -> [bytes, tensors]; then one :class:`Group` per (layer, name template).

The checkpoint scan (:mod:`k3doctor.ckpt`) emits each shard's raw rows (names, dtypes, byte spans)
to a :class:`HeaderFold`, which folds them as they come (~40 rows per Kimi-K3 shard) and gives the
compact ``inventory`` document of the ``model`` fact (:func:`inventory_fact`). The header reader of
:mod:`.inventory` and :func:`.inventory.aggregate` end in the same :func:`groups_from_folded`.
This module imports nothing heavier than ``re`` and ``json``, so the CKPT path stays light.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

__all__ = ["Group", "Folded", "fold_tensors", "merge_folded", "groups_from_folded", "inventory_fact", "HeaderFold",
           "INVENTORY_FACT_SCHEMA", "CONFIG_FACT_LIMIT", "MAX_FOLDED"]

_NUM = re.compile(r"\.(\d+)\.")


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


# -- the one grouping implementation -------------------------------------------------------
#: a tensor name with its expert index folded: ``model.layers.3.mlp.experts.{E}.w1.weight``
_EXPERT_MARK = ".experts.{E}."
_EXPERT_ID_STR = re.compile(r"\.experts\.\d+\.")
#: per checkpoint (or per shard): (name with the expert index folded, dtype) -> [bytes, tensors]
Folded = dict[tuple[str, str], list[int]]


def fold_tensors(names: list[str], dtypes: list[str], nbytes: list[int], acc: Folded | None = None) -> Folded:
    """Sum one shard's tensors (three parallel lists) per (name with ``.experts.<i>.`` folded to
    ``.experts.{E}.``, dtype) into ``acc``. A K3 shard of ~5,200 tensors becomes ~40 keys;
    :class:`HeaderFold` calls this on each shard the checkpoint scan sends, and
    :func:`~.inventory.aggregate` on synthesised tensors; both feed :func:`groups_from_folded`."""
    if acc is None:
        acc = {}
    joined = "\n".join(names)
    if ".experts." in joined:  # fold in C over the whole shard, not per name
        folded = _EXPERT_ID_STR.sub(_EXPERT_MARK, joined).split("\n")
        if len(folded) != len(names):  # a name holding a newline: fold one by one
            folded = [_EXPERT_ID_STR.sub(_EXPERT_MARK, nm) for nm in names]
    else:
        folded = names
    # the common case in C-level passes: every tensor of a folded name has one dtype and size
    # (the experts of a layer), so bytes = tensors x the size of any one of them
    counts = Counter(folded)
    size_of, dtype_of = dict(zip(folded, nbytes)), dict(zip(folded, dtypes))
    if list(map(size_of.__getitem__, folded)) == nbytes and list(map(dtype_of.__getitem__, folded)) == dtypes:
        return merge_folded(acc, ((nm, dtype_of[nm], size_of[nm] * c, c) for nm, c in counts.items()))
    get = acc.get
    for key, nb in zip(zip(folded, dtypes), nbytes):
        a = get(key)
        if a is None:
            acc[key] = [nb, 1]
        else:
            a[0] += nb
            a[1] += 1
    return acc


def _add_row(acc: dict[Any, list[int]], key: Any, nb: int, cnt: int) -> None:
    """``acc[key] += [bytes, tensors]``."""
    a = acc.get(key)
    if a is None:
        acc[key] = [nb, cnt]
    else:
        a[0] += nb
        a[1] += cnt


def merge_folded(acc: Folded, part: Iterable[tuple[str, str, int, int]]) -> Folded:
    """Add ``(folded name, dtype, bytes, tensors)`` rows (one shard's :func:`fold_tensors`,
    e.g. sent back by the scan's helper process) into ``acc``."""
    for name, dt, nb, cnt in part:
        _add_row(acc, (name, dt), nb, cnt)
    return acc


def groups_from_folded(acc: Folded) -> list[Group]:
    """Folded (name, dtype) sums -> one :class:`Group` per (layer, template): the layer index
    becomes ``{L}``, other indices ``{N}``; ``experts`` = tensors per folded expert name."""
    out: dict[tuple[int, str], Group] = {}
    split, sub = _NUM.split, _NUM.sub
    for (name, dt), (nb, cnt) in acc.items():
        parts = split(name, 1)
        if len(parts) == 3 and parts[0].endswith("layers") and "vision" not in parts[0] and "visual" not in parts[0]:
            layer = int(parts[1])
            rest = sub(".{N}.", "." + parts[2])[1:]
            tmpl = f"{parts[0]}.{{L}}.{rest}"
        else:
            layer, tmpl = -1, sub(".{N}.", name)
        g = out.get((layer, tmpl))
        if g is None:
            g = out[(layer, tmpl)] = Group(layer, tmpl, 0, 0, dt, (), 0)
        g.nbytes += nb
        g.count += cnt
        if _EXPERT_MARK in name:
            g.experts = max(g.experts, cnt)
    # one order whatever the reader (headers in shard order, the scan's helper, synthesis, a fact)
    return sorted(out.values(), key=_ORDER)


def _order(g: Group) -> tuple[int, str, str]:
    return g.layer, g.template, g.dtype


_ORDER = _order


# -- the inventory inside the ``model`` fact ------------------------------------------------
INVENTORY_FACT_SCHEMA = 1
#: config.json is copied into the fact (so a snapshot can be planned offline) up to this size
CONFIG_FACT_LIMIT = 256 << 10
_COLUMNS = ["template", "dtype", "bytes", "tensors", "experts", "layers"]
_LAYER_RANGE = re.compile(r"(-?\d+)(?:-(\d+))?")


def _ranges(layers: list[int]) -> str:
    """``[-1]`` -> "-1"; ``[0, 1, 2, 5, 7, 8]`` -> "0-2,5,7-8"."""
    out: list[str] = []
    layers = sorted(layers)
    i = 0
    while i < len(layers):
        j = i
        while j + 1 < len(layers) and layers[j + 1] == layers[j] + 1:
            j += 1
        out.append(str(layers[i]) if i == j else f"{layers[i]}-{layers[j]}")
        i = j + 1
    return ",".join(out)


def _unranges(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        m = _LAYER_RANGE.fullmatch(part.strip())
        if m is None:
            raise ValueError(f"bad layer list {text!r}")
        a = int(m.group(1))
        out.extend(range(a, int(m.group(2)) + 1) if m.group(2) is not None else (a,))
    return out


def inventory_fact(acc: Folded, shard_bytes: Mapping[str, int], config: Mapping[str, Any] | None,
                   errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The compact JSON form of a header inventory, for ``model["inventory"]``::

        {"schema": 1, "source": "headers"|"config", "tensors", "bytes", "shards", "max_shard_bytes",
         "columns": ["template", "dtype", "bytes", "tensors", "experts", "layers"],
         "groups": [[template, dtype, bytes, tensors, experts, "0-2,5,7-60"]],
         "config": {config.json} | null, "errors": [{"file", "kind"}]}

    Each row stands for the :class:`Group` of every listed layer (-1: model-level tensors) —
    the ~3,000 (layer, template) groups of Kimi-K3 are ~100 rows (~15 KB). ``acc`` is the
    checkpoint's :func:`fold_tensors` sums; ``shard_bytes`` the tensor bytes of every shard whose
    header parsed; ``errors`` the shards whose header did not (or holds a malformed entry):
    :func:`inventory_from_fact` then refuses, like the header reader.
    """
    if config is not None:
        try:
            if len(json.dumps(config)) > CONFIG_FACT_LIMIT:
                config = None
        except (TypeError, ValueError):
            config = None
    groups = groups_from_folded(acc)
    rows: dict[tuple[str, str, int, int, int], list[int]] = {}
    for g in groups:
        rows.setdefault((g.template, g.dtype, g.nbytes, g.count, g.experts), []).append(g.layer)
    n = sum(g.count for g in groups)
    return {"schema": INVENTORY_FACT_SCHEMA, "source": "headers" if n or not config else "config",
            "tensors": n, "bytes": sum(g.nbytes for g in groups), "shards": len(shard_bytes),
            "max_shard_bytes": max(shard_bytes.values(), default=0), "columns": _COLUMNS,
            "groups": [[*key, _ranges(layers)] for key, layers in rows.items()],
            "config": config, "errors": list(errors or [])[:20]}




#: a shard whose tensors fold to more (name, dtype) rows than this has no memory inventory (a
#: large header of a million distinct tiny tensors is not a model to plan)
MAX_FOLDED = 50_000


#: a shard's folded rows are kept for :meth:`HeaderFold.rows_like` up to this many
_KEEP_PARTS = 4096


class HeaderFold:
    """The checkpoint scan's tensor sink (:class:`k3doctor.ckpt.shard_scan.TensorRows`): folds each
    shard's raw rows as they come, keeps the tensor bytes of each shard that gave rows and the
    shards that could not, and makes the ``inventory`` document (:meth:`finish`)."""

    def __init__(self, model_dir: str | os.PathLike[str] | None = None) -> None:
        #: the checkpoint directory: its quantisation side files (``hf_quant_config.json``,
        #: ``quantize_config.json``) complete config.json in the inventory, as the engines read them
        self.model_dir = model_dir
        self.acc: Folded = {}
        self.shard_bytes: dict[str, int] = {}
        self.errors: list[dict[str, Any]] = []
        self._part: Folded = {}
        self._bytes = 0
        self._bad: dict[str, str] = {}
        #: each shard's folded rows and bytes, for :meth:`rows_like`
        self._parts: dict[str, tuple[Folded, int]] = {}

    def rows(self, file: str, names: list[str], dtypes: list[str], nbytes: list[int], *, large: bool = False) -> bool:
        if file in self._bad:
            return False
        fold_tensors(names, dtypes, nbytes, self._part)
        self._bytes += sum(nbytes)
        if large and len(self._part) > MAX_FOLDED:
            self._bad[file] = "too_many_tensor_names"
            return False
        return True

    def end(self, file: str) -> None:
        if file in self._bad:
            self.unreadable(file, self._bad[file])
            return
        merge_folded(self.acc, ((k[0], k[1], a[0], a[1]) for k, a in self._part.items()))
        self.shard_bytes[file] = self._bytes
        if len(self._part) <= _KEEP_PARTS:
            self._parts[file] = (self._part, self._bytes)
        self._part, self._bytes = {}, 0

    def rows_like(self, file: str, like: str, old: str, new: str) -> bool:
        """``file``'s rows are ``like``'s with the name prefix ``old`` (which every name of
        ``like`` starts with) replaced by ``new``: the scan's header memo found the two headers
        equal but for the layer index (:mod:`k3doctor.ckpt.memo`). Folding cannot reach into that
        index (``.experts.<i>.`` is not ``.layers.<i>.``), so ``file``'s folded rows are ``like``'s
        renamed, when each starts with ``old``; False (send the rows) otherwise."""
        kept = self._parts.get(like)
        if kept is None or file in self._bad or not all(k[0].startswith(old) for k in kept[0]):
            return False
        cut = len(old)
        self._part = {(new + k[0][cut:], k[1]): [a[0], a[1]] for k, a in kept[0].items()}
        self._bytes = kept[1]
        self.end(file)
        return True

    def unreadable(self, file: str, kind: str) -> None:
        self.errors.append({"file": file, "kind": self._bad.pop(file, kind)})
        self._part, self._bytes = {}, 0

    def finish(self, config: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The ``inventory`` document (:func:`inventory_fact`), or None when there is nothing to
        plan from (no shard and no config.json)."""
        if not (self.shard_bytes or self.errors or config is not None):
            return None
        if self.model_dir is not None and isinstance(config, dict):
            from .inventory import with_side_files

            config = with_side_files(config, self.model_dir)
        return inventory_fact(self.acc, self.shard_bytes, config, self.errors)
