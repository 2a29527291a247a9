"""Header parsing of every shard, in this process, and the raw tensor rows for whoever folds them.

Each shard header is read once and parsed once with the C ``json`` decoder (:func:`.header.read_header`),
validated, and its quantised pairs checked. Its tensors leave as raw rows (names, dtypes, byte spans in
header order) through a :class:`TensorRows` sink, if the caller gives one: the memory planner's fold
(:class:`k3doctor.memory.fold.HeaderFold`) is one, so ``ckpt/`` knows nothing about it.

There is no helper process any more: forking one to parse part of the shards was measured at a median
1.00x (0.71-1.17x over 7 interleaved pairs) of the sequential scan on the shared 2-core machine, for the
cost of pickling every tensor name back (docs/benchmarks.md, issue 16).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable, Protocol

from .header import HeaderResult, read_header
from .quant import scan_quant

__all__ = ["TensorRows", "scan_shards", "IndexMatcher", "weight_map_of", "QUANT_KINDS"]

QUANT_KINDS = frozenset({"quant_pair_missing", "quant_shape", "quant_dtype"})


class TensorRows(Protocol):
    """Where a scan sends each shard's tensors (raw rows, header order).

    Per shard: :meth:`rows` zero or more times (a large header comes in batches, ``large=True``;
    it answers False when it wants no more rows of that shard), then :meth:`end`; or
    :meth:`unreadable` when the header cannot give rows (the shard then has none, whatever came
    before)."""

    def rows(self, file: str, names: list[str], dtypes: list[str], nbytes: list[int], *,
             large: bool = False) -> bool: ...

    def end(self, file: str) -> None: ...

    def unreadable(self, file: str, kind: str) -> None: ...

    def finish(self, config: Any) -> Any:
        """What the scan records as ``model["inventory"]`` (``config``: config.json or None)."""


# ------------------------------------------------------------------------------------------
# one shard
# ------------------------------------------------------------------------------------------
def _scan_one(path: str, file: str, exp: dict[str, Any],
              sink: TensorRows | None) -> tuple[dict, list[dict], dict, list[str] | None]:
    res: HeaderResult = read_header(path, file)
    qstats: dict[str, Any] = {}
    names: list[str] | None = None
    if res.text is not None:
        names, qstats = _scan_large(res, exp, sink)
    elif res.header is not None:
        header = res.header
        header.pop("__metadata__", None)
        if not res.problems:  # a structurally broken header is reported as such, not as quant noise
            qprobs, qstats = scan_quant(header, file, exp)
            res.problems.extend(qprobs)
        names = list(header)
        if sink is not None:
            _send_rows(res, header, names, sink)
    elif sink is not None:
        sink.unreadable(file, res.problems[0]["kind"] if res.problems else "unreadable")
    summary = res.summary()
    summary["ok"] = not any(p["kind"] not in QUANT_KINDS for p in res.problems)
    return summary, res.problems, qstats, names


def _send_rows(res: HeaderResult, header: dict[str, Any], names: list[str], sink: TensorRows) -> None:
    """This shard's raw rows from the header already parsed: the columns the fast validation built,
    else one pass over the entries (a malformed one makes the shard unreadable for the sink, as it
    does for the header reader)."""
    dtypes, spans = res.dtypes, res.spans
    if dtypes is None or spans is None or len(spans) != len(names):  # the per-tensor path
        dtypes, spans = [], []
        for name in names:
            info = header[name]
            try:
                b, e = info["data_offsets"]
                dt = info["dtype"]
                nb = int(e) - int(b)
            except (KeyError, TypeError, ValueError):
                sink.unreadable(res.file, "bad_entry")
                return
            dtypes.append(str(dt))
            spans.append(nb)
    sink.rows(res.file, names, dtypes, spans)
    sink.end(res.file)


def _scan_large(res: HeaderResult, exp: dict[str, Any], sink: TensorRows | None) -> tuple[list[str], dict[str, Any]]:
    """A header above :data:`~.header.LARGE_HEADER`: validated, quant-checked and sent to ``sink``
    one batch of entries at a time (:meth:`HeaderResult.batches`), so memory stays near the
    header's own size. A quantised pair split across two batches is reported missing here and
    dropped by the scan, which checks partners against every name."""
    names: list[str] = []
    qstats: dict[str, Any] = {"packed": 0, "fp8": 0, "blocks": 0, "expert_layers": {}}
    layers: Counter[str] = Counter()
    bad = sink is None
    qprobs: list[dict] = []
    text = res.text or ""
    # names that scan_quant looks at all contain one of these; without them it has nothing to say
    quant_names = any(m in text for m in (".experts.", "_packed", "_blocks", "_scale_inv"))
    del text
    for batch in res.batches():
        batch.pop("__metadata__", None)
        start = len(res.problems)
        names.extend(batch)
        if start == 0 and quant_names:
            probs, st = scan_quant(batch, res.file, exp)
            qprobs.extend(probs)
            for k in ("packed", "fp8", "blocks"):
                qstats[k] += st.get(k, 0)
            layers.update(st.get("expert_layers") or {})
            qstats["num_experts_expected"] = st.get("num_experts_expected")
        if not bad:
            assert sink is not None
            try:
                dts = [str(i["dtype"]) for i in batch.values()]
                nbs = [int(i["data_offsets"][1]) - int(i["data_offsets"][0]) for i in batch.values()]
            except (KeyError, TypeError, ValueError, IndexError):
                bad = True
                sink.unreadable(res.file, "bad_entry")
                continue
            if not sink.rows(res.file, list(batch), dts, nbs, large=True):
                bad = True  # the sink refused this shard (too many rows): no more extraction
                sink.end(res.file)
    if not bad:
        assert sink is not None
        sink.end(res.file)
    qstats["expert_layers"] = dict(layers)
    if not any(p["kind"] not in QUANT_KINDS for p in res.problems):
        res.problems.extend(qprobs)  # a structurally broken header is reported as such, not as quant noise
    return names, qstats


# ------------------------------------------------------------------------------------------
# the index and the shards
# ------------------------------------------------------------------------------------------
class IndexMatcher:
    """Fast per-shard agreement test against the index (C-level passes); collects disagreeing shards."""

    def __init__(self, weight_map: dict[str, str]) -> None:
        self.wm = weight_map
        self.counts = Counter(weight_map.values())
        self.suspect: list[str] = []

    def feed(self, file: str, names: list[str] | None) -> None:
        if names is None:
            return
        # every name maps to file, and file owns exactly these names
        if self.counts.get(file, 0) != len(names) or list(map(self.wm.get, names)).count(file) != len(names):
            self.suspect.append(file)


def weight_map_of(index: Any) -> dict[str, str] | None:
    """The index's ``weight_map`` when it is an object of tensor -> file name strings."""
    wm = index.get("weight_map") if isinstance(index, dict) else None
    if isinstance(wm, dict) and set(map(type, wm.values())).issubset({str}):
        return wm
    return None


def scan_shards(model_dir: Path, files: list[str], exp: dict[str, Any], index_loader: Callable[[], Any],
                sink: TensorRows | None) -> tuple[list[tuple], Any, IndexMatcher | None]:
    """Load the index, then scan every shard and match it against the index as it is parsed:
    ``(per-shard results, the loader's answer, the matcher or None)``."""
    loaded = index_loader()
    wm = weight_map_of(loaded[1]) if loaded[1] is not None else None
    matcher = IndexMatcher(wm) if wm is not None else None
    results = []
    for f in files:
        rec = _scan_one(str(model_dir / f), f, exp, sink)
        if matcher is not None:
            matcher.feed(f, rec[3])
        results.append(rec)
    return results, loaded, matcher
