"""Header parsing of many shards: this process and one forked helper share the work.

The helper (``_Helper``) is forked before the index is read, parses its share of the shards and
streams pickled results back through a pipe; this process parses ``_PARENT_SHARE`` of them itself
and the index meanwhile. A helper that dies is noticed (EOF / exit status) and its unfinished
shards are parsed here, so a crash costs time, never a result. Used by :mod:`.scan`.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from ..memory.inventory import fold_tensors
from .header import HeaderResult, read_header
from .quant import scan_quant

# ------------------------------------------------------------------------------------------
# per-shard work (runs in this process or in the forked helper)
# ------------------------------------------------------------------------------------------
def _scan_one(path: str, file: str, exp: dict[str, Any]) -> tuple[dict, list[dict], dict, list[str] | None, tuple]:
    res: HeaderResult = read_header(path, file)
    qstats: dict[str, Any] = {}
    names: list[str] | None = None
    part: tuple
    if res.text is not None:
        names, qstats, part = _scan_large(res, exp)
    elif res.header is not None:
        header = res.header
        header.pop("__metadata__", None)
        if not res.problems:  # a structurally broken header is reported as such, not as quant noise
            qprobs, qstats = scan_quant(header, file, exp)
            res.problems.extend(qprobs)
        names = list(header)
        part = _inventory_part(res, header, names)
    else:
        part = (None, 0, res.problems[0]["kind"] if res.problems else "unreadable")
    summary = res.summary()
    summary["ok"] = not any(p["kind"] not in _QUANT_KINDS for p in res.problems)
    return summary, res.problems, qstats, names, part


def _inventory_part(res: HeaderResult, header: dict[str, Any], names: list[str]) -> tuple:
    """This shard's share of the memory planner's inventory, from the header already parsed:
    ``(rows, tensor bytes, None)`` with rows ``(name with {E}, dtype, bytes, tensors)`` (~40 for a
    K3 shard; :func:`k3doctor.memory.inventory.fold_tensors`), or ``(None, 0, kind)`` when an
    entry is malformed (the planner then refuses this checkpoint, as the header reader does)."""
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
                return None, 0, "bad_entry"
            dtypes.append(str(dt))
            spans.append(nb)
    acc = fold_tensors(names, dtypes, spans)
    return [(k[0], k[1], a[0], a[1]) for k, a in acc.items()], sum(spans), None


#: a shard whose tensors fold to more (name, dtype) rows than this has no memory inventory
#: (a header of a million distinct tiny tensors is not a model to plan)
_MAX_FOLDED = 50_000


def _scan_large(res: HeaderResult, exp: dict[str, Any]) -> tuple[list[str], dict[str, Any], tuple]:
    """A header above :data:`~.header.LARGE_HEADER`: validated, quant-checked and folded one
    batch of entries at a time (:meth:`HeaderResult.batches`), so memory stays near the header's
    own size. A quantised pair split across two batches is reported missing here and dropped by
    the scan, which checks partners against every name."""
    names: list[str] = []
    qstats: dict[str, Any] = {"packed": 0, "fp8": 0, "blocks": 0, "expert_layers": {}}
    layers: Counter[str] = Counter()
    acc: dict[tuple[str, str], list[int]] | None = {}
    total = 0
    bad: str | None = None
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
        if acc is not None and bad is None:
            try:
                dts = [str(i["dtype"]) for i in batch.values()]
                nbs = [int(i["data_offsets"][1]) - int(i["data_offsets"][0]) for i in batch.values()]
            except (KeyError, TypeError, ValueError, IndexError):
                bad = "bad_entry"
                continue
            fold_tensors(list(batch), dts, nbs, acc)
            total += sum(nbs)
            if len(acc) > _MAX_FOLDED:
                acc, bad = None, "too_many_tensor_names"
    qstats["expert_layers"] = dict(layers)
    if not any(p["kind"] not in _QUANT_KINDS for p in res.problems):
        res.problems.extend(qprobs)  # a structurally broken header is reported as such, not as quant noise
    if acc is None or bad is not None:
        return names, qstats, (None, 0, bad)
    return names, qstats, ([(k[0], k[1], a[0], a[1]) for k, a in acc.items()], total, None)


#: share of the shards this process parses itself while the helper does the rest (it also
#: parses the index and cross-checks); measured on 2 cores with the Kimi-K3 layout
_PARENT_SHARE = 0.25

_QUANT_KINDS = frozenset({"quant_pair_missing", "quant_shape", "quant_dtype"})


def _scan_many(items: list[tuple[str, str]], exp: dict[str, Any]) -> list[tuple]:
    return [_scan_one(path, file, exp) for path, file in items]


_LEN = struct.Struct("<Q")
#: bytes of records the helper groups into one pipe hand-over
_BATCH = 4 << 20


def _child_scan(items: list[tuple[str, str]], exp: dict[str, Any], w: int) -> None:
    """In the helper: scan, and hand each record to a writer thread, so parsing never waits for
    the parent to drain the pipe (it is busy with the index at first)."""
    import queue
    import threading

    q: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    def writer() -> None:
        while True:
            data = q.get()
            if data is None:
                return
            view = memoryview(data)
            while view:
                n = os.write(w, view)
                view = view[n:]

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    batch: list[bytes] = []
    size = 0
    try:
        for path, file in items:
            s, p, qs, names, part = _scan_one(path, file, exp)
            data = pickle.dumps((s, p, qs, None if names is None else "\0".join(names), part),
                                protocol=pickle.HIGHEST_PROTOCOL)
            batch += (_LEN.pack(len(data)), data)
            size += len(data)
            if size >= _BATCH:
                q.put(b"".join(batch))
                batch, size = [], 0
    finally:
        if batch:
            q.put(b"".join(batch))
        q.put(None)
        t.join()


class _Helper:
    """A forked child scanning some shards; each shard's result comes back as soon as it is ready
    (length-prefixed pickle records through a pipe), so the parent matches them against the index
    while the child is still parsing."""

    def __init__(self, items: list[tuple[str, str]], exp: dict[str, Any]) -> None:
        self.pid = 0
        self.fd = -1
        r, w = os.pipe()
        try:  # fewer wake-ups for ~40 MB of names (Linux F_SETPIPE_SZ; capped by fs.pipe-max-size)
            import fcntl
            fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except (ImportError, OSError):
            pass
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
            pid = os.fork()
        if pid == 0:  # child: no imports, no printing, no cleanup handlers
            code = 0
            try:
                os.close(r)
                _child_scan(items, exp, w)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        self.pid, self.fd = pid, r

    def results(self, timeout: float, on_record: Callable[[tuple], None]) -> list[tuple]:
        """Records received before EOF or ``timeout`` (possibly fewer than asked for: the caller
        scans the missing shards itself). ``on_record`` sees each record as it arrives."""
        out: list[tuple] = []
        buf = bytearray()
        end = time.monotonic() + timeout
        try:
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    break
                ready, _, _ = select.select([self.fd], [], [], left)
                if not ready:
                    break
                chunk = os.read(self.fd, 8 << 20)
                if not chunk:
                    break
                buf += chunk
                pos = 0
                while len(buf) - pos >= 8:
                    (n,) = _LEN.unpack_from(buf, pos)
                    if len(buf) - pos - 8 < n:
                        break
                    s, p, q, joined, part = pickle.loads(buf[pos + 8:pos + 8 + n])
                    rec = (s, p, q, None if joined is None else (joined.split("\0") if joined else []), part)
                    on_record(rec)
                    out.append(rec)
                    pos += 8 + n
                del buf[:pos]
        except (OSError, pickle.UnpicklingError, EOFError, ValueError):
            pass
        finally:
            os.close(self.fd)
            try:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
                if not done:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0
        return out


class _IndexMatcher:
    """Fast per-shard agreement test against the index (C-level passes); collects disagreeing shards."""

    def __init__(self, weight_map: dict[str, str]) -> None:
        self.wm = weight_map
        self.counts = Counter(weight_map.values())
        self.suspect: list[str] = []

    def feed(self, results: list[tuple]) -> None:
        get, counts = self.wm.get, self.counts
        for summary, _, _, names, _ in results:
            if names is None:
                continue
            f = summary["file"]
            # every name maps to f, and f owns exactly these names
            if counts.get(f, 0) != len(names) or list(map(get, names)).count(f) != len(names):
                self.suspect.append(f)


def _weight_map(index: Any) -> dict[str, str] | None:
    wm = index.get("weight_map") if isinstance(index, dict) else None
    if isinstance(wm, dict) and set(map(type, wm.values())).issubset({str}):
        return wm
    return None


def _scan_shards(model_dir: Path, files: list[str], exp: dict[str, Any], index_loader: Callable[[], Any],
                 parallel: bool, timeout: float) -> tuple[list[tuple], Any, _IndexMatcher | None]:
    """Scan every shard (most of them in a forked helper) while this process loads the index and
    matches its own shards against it; the helper's shards are matched when they arrive."""
    items = [(str(model_dir / f), f) for f in files]
    helper = None
    split = len(items)
    if parallel and len(items) >= 8 and (os.cpu_count() or 1) >= 2 and hasattr(os, "fork") \
            and sys.platform.startswith("linux"):
        split = max(1, int(len(items) * _PARENT_SHARE))
        try:
            helper = _Helper(items[split:], exp)
        except OSError:
            helper, split = None, len(items)
    loaded = index_loader()
    wm = _weight_map(loaded[1]) if loaded[1] is not None else None
    matcher = _IndexMatcher(wm) if wm is not None else None
    mine = _scan_many(items[:split], exp)
    if matcher:
        matcher.feed(mine)
    if helper is None:
        return mine, loaded, matcher
    theirs = helper.results(timeout, (lambda rec: matcher.feed([rec])) if matcher else (lambda rec: None))
    got = {rec[0]["file"] for rec in theirs}
    missing = [it for it in items[split:] if it[1] not in got]
    if missing:  # the helper died or timed out: do its remaining part here
        rest = _scan_many(missing, exp)
        if matcher:
            matcher.feed(rest)
        theirs += rest
    order = {f: i for i, (_, f) in enumerate(items)}
    theirs.sort(key=lambda rec: order[rec[0]["file"]])
    return mine + theirs, loaded, matcher

