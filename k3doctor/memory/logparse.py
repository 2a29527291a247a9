"""Measured per-rank memory figures from engine logs: weights and (vLLM) the KV-cache sizing.

* SGLang ``model_runner.load_model``: "Load weight end. ... avail mem=A GB, mem usage=W GB." —
  ``get_available_gpu_memory`` divides bytes by ``1 << 30``, so SGLang's "GB" is GiB. Older
  releases print only ``avail mem``; then W = (avail at "Load weight begin") − (avail at end).
* vLLM ``gpu_model_runner.load_model``: "Model loading took W GiB" (``m.consumed_memory /
  GiB_bytes``; older releases "Loading model weights took W GB", also computed with ``2**30``).
* vLLM ``gpu_worker.determine_available_memory``: "Available KV cache memory: Y GiB";
  ``kv_cache_utils.check_enough_kv_cache_memory``: "To serve at least one request with the model's max
  seq len (L), (X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB).
  … the estimated maximum model length is N", or "No available memory for the cache blocks" (Y ≤ 0);
  "GPU KV cache size: N tokens" once the cache is allocated.

:func:`read_engine_log` streams a log of any size line by line and keeps only these figures.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["measured_weight_gib", "read_engine_log", "read_engine_log_file", "EngineLogError",
           "EngineLogFigures", "LOG_PATTERNS"]

_SG_END = re.compile(r"Load weight end\..*?avail mem=([\d.]+) ?GB(?:, mem usage=([\d.]+) ?GB)?")
_SG_BEGIN = re.compile(r"Load weight begin\. avail mem=([\d.]+) ?GB")
_VLLM = re.compile(r"(?:Model loading took|Loading model weights took) ([\d.]+) ?Gi?B")
LOG_PATTERNS = {"sglang": _SG_END.pattern, "vllm": _VLLM.pattern}


def measured_weight_gib(text: str) -> tuple[float, str] | None:
    """(largest per-rank weight GiB found, engine) or None."""
    fig = read_engine_log(text.splitlines())
    if fig.weights_gib is None or fig.engine is None:
        return None
    return fig.weights_gib, fig.engine


_KV_AVAIL = re.compile(r"Available KV cache memory: (-?[\d.]+) ?GiB")
_KV_NEEDED = re.compile(r"max seq len \((\d+)\)[,.]? \((-?[\d.]+) GiB KV cache is needed, which is larger than the "
                        r"available KV cache memory \((-?[\d.]+) GiB\)")
_KV_EST = re.compile(r"estimated maximum model length is (\d+)")
_KV_NONE = re.compile(r"No available memory for the cache blocks")
_KV_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_SCAN_LIMIT = 64 << 20  # characters of one line kept for matching; longer lines are cut
_HEAD_TAIL = 256 << 20  # bytes read from each end of a larger --engine-log file
_READ_TIMEOUT_S = 10.0  # for those reads (a hung mount ends with an error)
_LINE_CAP = 64 << 10    # bytes of one file line decoded (the engines' lines are < 1 KB)
#: a line that holds none of these cannot change :func:`read_engine_log`'s figures
_KEYWORDS = (b"Load weight", b"took", b"KV cache", b"model length", b"cache blocks")


def _keyword_lines(chunks: Iterable[bytes | None]) -> Iterator[str]:
    """The lines of ``chunks`` (byte blocks; ``None`` where bytes were skipped) that hold one of
    :data:`_KEYWORDS`, in order, decoded, each cut to :data:`_LINE_CAP` bytes. A block without a
    keyword is passed over with a few ``bytes.find`` calls."""
    carry = b""
    for block in chunks:
        if block is None:
            carry = b""
            continue
        buf = carry + block if carry else block
        cut = buf.rfind(b"\n") + 1
        carry = buf[cut:][-_LINE_CAP:]
        if cut:
            yield from _hits(buf[:cut])
    if carry:
        yield from _hits(carry)


def _hits(data: bytes) -> Iterator[str]:
    if not any(k in data for k in _KEYWORDS):
        return
    for line in data.split(b"\n"):
        if any(k in line for k in _KEYWORDS):
            yield line[:_LINE_CAP].decode("utf-8", "replace")


@dataclass
class EngineLogFigures:
    """What one engine log says about per-rank memory (GiB as the engines print them)."""

    weights_gib: float | None = None
    engine: str | None = None
    available_kv_gib: float | None = None  #: smallest over ranks; ≤ 0 when the engine found none
    needed_kv_gib: float | None = None
    max_model_len: int | None = None
    estimated_max_model_len: int | None = None
    kv_cache_tokens: int | None = None  #: smallest over ranks
    lines: list[str] = field(default_factory=list)  #: the matching lines (first few), for the report

    @property
    def empty(self) -> bool:
        return self.weights_gib is None and self.available_kv_gib is None and self.kv_cache_tokens is None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "lines" and v is not None}


def _keep(fig: EngineLogFigures, line: str) -> None:
    if len(fig.lines) < 8:
        fig.lines.append(line.strip()[:300])


def read_engine_log(lines: Iterable[str]) -> EngineLogFigures:
    """Stream ``lines`` (an open file is fine) and collect the weight and KV figures; memory stays
    bounded by the number of matching lines, not the log size."""
    fig = EngineLogFigures()
    sg_usage: list[float] = []
    sg_begin: float | None = None
    sg_end: float | None = None
    vllm_w: list[float] = []
    for raw in lines:
        line = raw[:_SCAN_LIMIT]
        if "Load weight" in line:
            m = _SG_END.search(line)
            if m:
                _keep(fig, line)
                if m.group(2):
                    sg_usage.append(float(m.group(2)))
                elif sg_end is None:
                    sg_end = float(m.group(1))
                continue
            m = _SG_BEGIN.search(line)
            if m and sg_begin is None:
                sg_begin = float(m.group(1))
            continue
        if "took" in line:
            m = _VLLM.search(line)
            if m:
                _keep(fig, line)
                vllm_w.append(float(m.group(1)))
            continue
        if "KV cache" in line or "model length" in line or "cache blocks" in line:
            hit = False
            m = _KV_AVAIL.search(line)
            if m:
                v = float(m.group(1))
                fig.available_kv_gib = v if fig.available_kv_gib is None else min(fig.available_kv_gib, v)
                hit = True
            m = _KV_NEEDED.search(line)
            if m:
                fig.max_model_len = int(m.group(1))
                fig.needed_kv_gib = float(m.group(2))
                v = float(m.group(3))
                fig.available_kv_gib = v if fig.available_kv_gib is None else min(fig.available_kv_gib, v)
                hit = True
            m = _KV_EST.search(line)
            if m:
                v2 = int(m.group(1))
                fig.estimated_max_model_len = (v2 if fig.estimated_max_model_len is None
                                               else min(fig.estimated_max_model_len, v2))
                hit = True
            if _KV_NONE.search(line):
                fig.available_kv_gib = min(0.0, fig.available_kv_gib if fig.available_kv_gib is not None else 0.0)
                hit = True
            m = _KV_TOKENS.search(line)
            if m:
                n = int(m.group(1).replace(",", ""))
                fig.kv_cache_tokens = n if fig.kv_cache_tokens is None else min(fig.kv_cache_tokens, n)
                hit = True
            if hit:
                _keep(fig, line)
    if sg_usage:
        fig.weights_gib, fig.engine = max(sg_usage), "sglang"
    elif sg_begin is not None and sg_end is not None:
        fig.weights_gib, fig.engine = round(sg_begin - sg_end, 4), "sglang"
    elif vllm_w:
        fig.weights_gib, fig.engine = max(vllm_w), "vllm"
    if fig.engine is None and (fig.available_kv_gib is not None or fig.kv_cache_tokens is not None):
        fig.engine = "vllm"
    return fig


class EngineLogError(ValueError):
    """An ``--engine-log`` file that cannot be read or holds none of the wanted lines (one line,
    naming the file)."""


def read_engine_log_file(path: str, *, need_weights: bool = False) -> EngineLogFigures:
    """:func:`read_engine_log` on ``path``, streamed. Raises :class:`EngineLogError` when the file
    cannot be read, or holds no figure (no weight figure, with ``need_weights``).

    Only a regular file is read (kernel interface files and streams are refused before reading),
    its first and last :data:`_HEAD_TAIL` bytes when it is larger than twice that (the load and
    KV lines are printed at start-up, and a relaunch appends its own at the end), and only the
    lines that hold one of the wanted words are decoded, each cut to :data:`_LINE_CAP` bytes: a
    multi-GB log, one endless line or a sparse file costs a bounded read, not memory."""
    import stat

    from ..boundedio import iter_chunks
    from ..explain.source import BoundedReadError, open_log

    try:
        fd = open_log(path)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise EngineLogError(f"--engine-log {path}: not a regular file; save the log to a file first")
            os.set_blocking(fd, True)
            size = st.st_size
            head = size if size <= 2 * _HEAD_TAIL else _HEAD_TAIL

            def blocks() -> Iterator[bytes | None]:
                yield from iter_chunks(fd, path=path, kind="log", cap=head, timeout=_READ_TIMEOUT_S)
                if head < size:
                    os.lseek(fd, size - _HEAD_TAIL, os.SEEK_SET)
                    yield None
                    yield from iter_chunks(fd, path=path, kind="log", cap=_HEAD_TAIL, timeout=_READ_TIMEOUT_S)

            fig = read_engine_log(_keyword_lines(blocks()))
        finally:
            os.close(fd)
    except BoundedReadError as exc:
        raise EngineLogError(f"--engine-log {path}: cannot read ({exc.reason})") from None
    except OSError as exc:
        raise EngineLogError(f"--engine-log {path}: cannot read ({exc.strerror or exc})") from None
    if need_weights and fig.weights_gib is None:
        raise EngineLogError(f"--engine-log {path}: no 'Load weight end … mem usage=' or 'Model loading took … "
                             "GiB' line (or pass --measured-gib)")
    if fig.empty:
        raise EngineLogError(f"--engine-log {path}: no 'Load weight end … mem usage=', 'Model loading took … "
                             "GiB', 'Available KV cache memory' or KV-cache size line")
    return fig
