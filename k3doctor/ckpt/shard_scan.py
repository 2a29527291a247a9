"""Header parsing of every shard, in this process, and the raw tensor rows for whoever folds them.

Each shard header is read once (:func:`.header.header_bytes`); it is parsed with the C ``json`` decoder
(:func:`.header.parse_header`), validated and its quantised pairs checked, unless the header memo
(:mod:`.memo`) has verified the same shape with another layer index in this scan. Its tensors leave as raw rows (names, dtypes, byte spans in
header order) through a :class:`TensorRows` sink, if the caller gives one: the memory planner's fold
(:class:`k3doctor.memory.fold.HeaderFold`) is one, so ``ckpt/`` knows nothing about it.

There is no helper process any more: forking one to parse part of the shards was measured at a median
1.00x (0.71-1.17x over 7 interleaved pairs) of the sequential scan on the shared 2-core machine, for the
cost of pickling every tensor name back (docs/benchmarks.md, issue 16).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from .header import LARGE_HEADER, HeaderResult, header_bytes, parse_header
from .index import ShardNames, loads_index, split_index, verify_runs
from .memo import DerivedNames, HeaderMemo, Shape
from .quant import scan_quant

__all__ = ["TensorRows", "scan_shards", "IndexMatcher", "weight_map_of", "QUANT_KINDS"]

QUANT_KINDS = frozenset({"quant_pair_missing", "quant_shape", "quant_dtype"})


class TensorRows(Protocol):
    """Where a scan sends each shard's tensors (raw rows, header order).

    Per shard: :meth:`rows` zero or more times (a large header comes in batches, ``large=True``;
    it answers False when it wants no more rows of that shard), then :meth:`end`; or
    :meth:`unreadable` when the header cannot give rows (the shard then has none, whatever came
    before).

    Optional: ``rows_like(file, like, old, new) -> bool``, called instead of :meth:`rows` and
    :meth:`end` for a shard whose header the memo (:mod:`.memo`) found equal to shard ``like``'s
    but for the name prefix ``old`` -> ``new``; it answers False to get the rows after all."""

    def rows(self, file: str, names: list[str], dtypes: list[str], nbytes: list[int], *,
             large: bool = False) -> bool: ...

    def end(self, file: str) -> None: ...

    def unreadable(self, file: str, kind: str) -> None: ...

    def finish(self, config: Any) -> Any:
        """What the scan records as ``model["inventory"]`` (``config``: config.json or None)."""


# ------------------------------------------------------------------------------------------
# one shard
# ------------------------------------------------------------------------------------------
#: what one shard gives the scan: (summary, problems, quant statistics, tensor names or None)
ShardResult = tuple[dict, list[dict], dict, Sequence[str] | None]


def _scan_one(path: str, file: str, exp: dict[str, Any], sink: TensorRows | None,
              memo: HeaderMemo | None = None) -> ShardResult:
    res = HeaderResult(file)
    raw, prob = header_bytes(path, file, res)
    if raw is None:
        assert prob is not None
        res.problems.append(prob)
        if sink is not None:
            sink.unreadable(file, prob["kind"])
        return _result(res, {}, None)
    buffer_len = (res.size or 0) - 8 - len(raw)
    key = memo.key(raw) if memo is not None and len(raw) <= LARGE_HEADER else None
    if key is not None:
        assert memo is not None
        hit = memo.hit(key, buffer_len)
        if hit is not None:
            return _derived(res, hit[0], hit[1], key[0], sink)
    # what the memo needs of the bytes; then they go (a large header's text is parsed in batches)
    exact = key is not None and b"\\" not in raw and raw.count(key[0])
    parse_header(res, raw)
    del raw
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
        if key is not None:
            assert memo is not None
            memo.register(key, int(exact), file, buffer_len, res, names, qstats, not res.problems)
    elif sink is not None:
        sink.unreadable(file, res.problems[0]["kind"] if res.problems else "unreadable")
    return _result(res, qstats, names)


def _result(res: HeaderResult, qstats: dict[str, Any], names: Sequence[str] | None) -> ShardResult:
    summary = res.summary()
    summary["ok"] = not any(p["kind"] not in QUANT_KINDS for p in res.problems)
    return summary, res.problems, qstats, names


def _derived(res: HeaderResult, shape: Shape, prefix: str, tok: bytes, sink: TensorRows | None) -> ShardResult:
    """A shard whose header is a known shape with another layer index (:mod:`.memo`): the
    template's verdict, totals and statistics, its names with this shard's prefix."""
    res.tensors, res.data_bytes, res.dtype_bytes = shape.tensors, shape.data_bytes, shape.dtype_bytes
    names = DerivedNames(shape, prefix, tok)
    if sink is not None:
        like = getattr(sink, "rows_like", None)
        if like is None or not like(res.file, shape.file, shape.prefix, prefix):
            sink.rows(res.file, names.materialise(), shape.dtypes, shape.spans)
            sink.end(res.file)
    return _result(res, shape.renamed(prefix), names)


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
    """Fast per-shard agreement test against the index (C-level passes); collects disagreeing shards.

    Built from the parsed ``weight_map`` (then :meth:`feed` each shard's names), or, when
    :func:`.index.verify_runs` proved the map equal to the shards' names, from its per-file counts
    alone (``wm`` is then None and nothing disagrees)."""

    def __init__(self, weight_map: dict[str, str] | None, counts: dict[str, int] | None = None) -> None:
        self.wm = weight_map
        self.counts: Counter[str] = Counter(weight_map.values()) if weight_map is not None else Counter(counts or {})
        self.suspect: list[str] = []

    @property
    def tensors(self) -> int:
        """Entries in the index's ``weight_map``."""
        return len(self.wm) if self.wm is not None else sum(self.counts.values())

    def feed(self, file: str, names: Sequence[str] | None) -> None:
        if names is None or self.wm is None:
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


#: reads the index with the parse it is given: ``(present, document | None, size)``
IndexLoader = Callable[[Callable[[bytes], Any]], tuple[bool, Any, Any]]


#: the header memo and the index check against the shards (:mod:`.memo`); False = every header
#: and the index parsed in full (the tests compare both paths)
MEMO = True


def scan_shards(model_dir: Path, files: list[str], exp: dict[str, Any], index_loader: IndexLoader,
                sink: TensorRows | None) -> tuple[list[ShardResult], Any, IndexMatcher | None]:
    """Scan every shard (one real parse per distinct header shape, :mod:`.memo`), then load the
    index and match it against them: ``(per-shard results, the loader's answer, the matcher or
    None)``. The index is first checked against the shards' names without building its map
    (:func:`.index.verify_runs`); anything else parses it (:func:`.index.loads_index`, or the
    loader's ``json.loads``) and feeds the matcher every shard's names."""
    memo = HeaderMemo() if MEMO else None
    results = [_scan_one(str(model_dir / f), f, exp, sink, memo) for f in files]
    known: dict[str, ShardNames] = {}
    if memo is not None:
        templates = memo.templates()
        for f, rec in zip(files, results):
            names = rec[3]
            if isinstance(names, DerivedNames):
                known[f] = ShardNames(names, names.shape, names.tok)
            elif names is not None:
                shape = templates.get(f)
                known[f] = ShardNames(names, shape, shape.tok if shape is not None else None)
    verified: dict[str, dict[str, int]] = {}

    def parse(raw: bytes) -> Any:
        split = split_index(raw)
        got = verify_runs(raw, split, known) if known and split is not None else None
        if got is None:
            return loads_index(raw, split) if split is not None else None
        verified["counts"] = got[1]
        return got[0]

    loaded = index_loader(parse)
    if loaded[1] is not None and "counts" in verified:
        return results, loaded, IndexMatcher(None, verified["counts"])
    wm = weight_map_of(loaded[1]) if loaded[1] is not None else None
    matcher = IndexMatcher(wm) if wm is not None else None
    if matcher is not None:
        for f, rec in zip(files, results):
            matcher.feed(f, rec[3])
    return results, loaded, matcher
