"""Public, stable API: the tensors of a safetensors checkpoint, read from shard headers only.

Other k3doctor parts (the memory planner) use::

    from k3doctor.ckpt.inventory import iter_tensors, read_config, TensorRecord
    for t in iter_tensors("/models/Kimi-K3"):
        t.name, t.dtype, t.shape, t.nbytes, t.shard

One read + one ``json.loads`` per shard header; tensor data is never read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, NamedTuple

from ..boundedio import BoundedReadError, read_bytes
from .header import DTYPE_BITS, read_header

__all__ = ["TensorRecord", "CheckpointError", "iter_tensors", "read_config", "list_shards", "INDEX_FILE"]

INDEX_FILE = "model.safetensors.index.json"


class TensorRecord(NamedTuple):
    """One tensor as its shard header describes it (``nbytes`` from ``data_offsets``)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    shard: str


class CheckpointError(Exception):
    """The checkpoint cannot be read; the message names the file and the fix (one line)."""


def list_shards(model_dir: str | Path) -> list[str]:
    """Names of the ``*.safetensors`` entries of ``model_dir`` (sorted).

    Entries named like a shard are listed even when they are not regular files (directories,
    dangling links): callers report those.
    """
    d = Path(model_dir)
    names: set[str] = set()
    try:
        with os.scandir(d) as it:
            for e in it:
                if e.name.endswith(".safetensors"):
                    names.add(e.name)
    except OSError as exc:
        raise CheckpointError(f"{d}: cannot list the directory ({exc.strerror or exc})") from None
    return sorted(names)


def read_config(model_dir: str | Path) -> dict[str, Any] | None:
    """``config.json`` as a dict, or None when absent or not a JSON object (never executes code)."""
    p = Path(model_dir) / "config.json"
    try:
        obj = json.loads(read_bytes(p, kind="config"))
    except (BoundedReadError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def iter_tensors(model_dir: str | Path) -> Iterator[TensorRecord]:
    """Yield every tensor of every shard (shards in name order, tensors in offset order).

    Raises :class:`CheckpointError` (one line naming the shard and the fix) for a shard whose
    header cannot be parsed; run ``k3doctor check --model DIR`` for the full diagnosis.
    """
    from .layout import checkpoint_dir

    d = checkpoint_dir(model_dir, CheckpointError)
    shards = list_shards(d)
    if not shards:
        raise CheckpointError(f"{d}: no *.safetensors files; pass the directory that holds the model shards")
    for shard in shards:
        res = read_header(str(d / shard), shard, validate=False)
        if res.header is None:
            kind = res.problems[0]["kind"] if res.problems else "unreadable"
            raise CheckpointError(f"{d / shard}: unreadable safetensors header ({kind}); "
                                  f"run `k3doctor check --model {d}` for the fix")
        items = []
        for name, info in res.header.items():
            if name == "__metadata__":
                continue
            try:
                dtype = info["dtype"]
                shape = tuple(info["shape"])
                b, e = info["data_offsets"]
            except (TypeError, KeyError, ValueError):
                raise CheckpointError(f"{d / shard}: tensor {name!r} has a malformed header entry; "
                                      f"run `k3doctor check --model {d}`") from None
            if dtype not in DTYPE_BITS:
                raise CheckpointError(f"{d / shard}: tensor {name!r} has unknown dtype {dtype!r}; "
                                      f"run `k3doctor check --model {d}`")
            items.append((b, name, dtype, shape, e - b))
        items.sort()
        for b, name, dtype, shape, nbytes in items:
            yield TensorRecord(name, dtype, shape, nbytes, shard)
