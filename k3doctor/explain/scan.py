"""Streaming, two-stage matcher for pasted error text and multi-GB rank logs.

Stage 1 (log mode, :mod:`.prefilter`): the lines of each 4 MiB block that carry an *anchor*, a
literal derived from the knowledge base itself (every signature keyword, and the literals the
fallback's error markers require), so stage 1 never drops a line that could change the result.
Where the optional C extension is built, the same lines come from one C pass (:mod:`.literal_scan`).
Stage 2 (per candidate line; every line for pasted text): decode (bad UTF-8 replaced), strip ANSI
colour, test the signatures whose literal ``keywords`` occur on the line, then their regexes.

Memory is bounded: one block plus one carried partial line (capped), plus per-signature
aggregates (count, first few locations, one excerpt). Repeats collapse into one match.
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from itertools import accumulate
from typing import BinaryIO, Callable, Iterable, Sequence

from .assemble import Lines, LineTable, logical_lines
from .fallback import FallbackModel, load_fallback
from .kb import Signature, clean_line, load_kb
from .literal_scan import KeywordFinder, LiteralScan, keyword_finder
from .literal_scan import build as build_literal_scan
from .prefilter import Prefilter, derive_anchors, fold, required_literals
from .split_scan import MAX_PROCS, RANGE_MIN, SPLIT_MIN, FileView, Helper, start_helpers, usable_cpus
from .results import MAX_LINE, MEMO_LINES, Match, Report, _Aggregator, _Hits, _Memo

__all__ = ["Match", "Report", "Scanner", "explain_text", "explain_paths"]

BLOCK = 4 << 20          # bytes read per block
#: candidate lines one scan examines in full (a log of nothing but distinct error lines must not
#: take minutes); past it lines are counted, and the last TAIL_LINES of them examined at the end
MAX_EXAMINED = 20_000
LINE_CAP = 16 << 10      # characters of one line handed to stage 2
CONTEXT_BYTES = 16 << 10  # how far back a signature's ``context`` regex may look
MAX_SEAMS = 32           # seams of one rejoined line tried for two records (:meth:`Scanner._two_records`)
FINDER_AFTER = 256       # lines looked up in Python before the C keyword finder is built

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def _decode(raw: bytes) -> str:
    """A line as stage 2 reads it: decoded (bad UTF-8 replaced), ANSI colour gone, capped."""
    text = strip_ansi(raw[: LINE_CAP * 4].decode("utf-8", "replace")).rstrip("\r")
    return text[:LINE_CAP] if len(text) > LINE_CAP else text


class Scanner:
    """Matches lines against the knowledge base; reusable across inputs."""

    def __init__(self, signatures: Sequence[Signature] | None = None,
                 anchors: Sequence[str] | None = None, fallback: FallbackModel | None | bool = True) -> None:
        self.signatures = tuple(load_kb() if signatures is None else signatures)
        #: the classifier for error lines no signature explains (``fallback=False``: none)
        self.fallback: FallbackModel | None = (
            load_fallback() if fallback is True else (fallback or None))
        self._by_id = {s.id: s for s in self.signatures}
        kw: dict[str, list[Signature]] = defaultdict(list)
        for s in self.signatures:
            for k in s.keywords:
                kw[k.lower()].append(s)
        # longest first so the common short keywords do not shadow anything (order only)
        self._keywords = sorted(kw.items(), key=lambda kv: -len(kv[0]))
        #: keyword ranks by their first three characters (shorter keywords: tested on every line)
        self._by_gram: dict[str, list[int]] = defaultdict(list)
        self._short: list[int] = []
        for rank, (k, _sigs) in enumerate(self._keywords):
            (self._by_gram[k[:3]] if len(k) >= 3 else self._short).append(rank)
        self._anchors = anchors
        self._prefilter: Prefilter | None = None
        self._error_gate: tuple[str, ...] | None | bool = False  # False: not built yet
        self._literal: LiteralScan | None | bool = False  # False: not built yet
        self._finder: KeywordFinder | None | bool = False  # False: not built yet
        self._looked = 0  # lines whose keywords were looked up before the finder was built

    @property
    def prefilter(self) -> Prefilter:
        """Stage 1 of log mode: anchors derived from the signatures and the fallback's markers
        (built on first use: pasted text never pays for it)."""
        if self._prefilter is None:
            if self._anchors is not None:
                self._prefilter = Prefilter(self._anchors)
            else:
                markers = [] if self.fallback is None else [self.fallback.error_markers,
                                                             self.fallback.strong_markers]
                derived = derive_anchors([k for k, _ in self._keywords], markers)
                self._prefilter = Prefilter(None) if derived is None else Prefilter(*derived)
        return self._prefilter

    def literal_scan(self, sample: bytes) -> LiteralScan | None:
        """Stage 1 in C (:mod:`.literal_scan`), built on first use from the prefilter and the
        first block (``sample``); None where the extension is not built or cannot run this KB's
        prefilter (then the Python prefilter is used: the same lines)."""
        if self._literal is False:
            self._literal = build_literal_scan(self.prefilter, sample)
        return self._literal  # type: ignore[return-value]

    @property
    def error_gate(self) -> tuple[str, ...] | None:
        """Literals one of which every error line holds (the fallback's ``error`` and ``strong``
        markers require them: :func:`~.prefilter.required_literals`), none contained in another;
        None when they cannot be derived (then every unmatched line is tested)."""
        if self._error_gate is False:
            fb = self.fallback
            lits = None if fb is None else _union(required_literals(fb.error_markers),
                                                  required_literals(fb.strong_markers))
            self._error_gate = None if lits is None else \
                tuple(sorted(x for x in lits if not any(y != x and y in x for y in lits)))
        return self._error_gate  # type: ignore[return-value]

    # -- stage 2 ------------------------------------------------------------------------------
    @property
    def keyword_finder(self) -> KeywordFinder | None:
        """Stage 2's keyword look-up in C (:class:`~.literal_scan.KeywordFinder`), built on first
        use; None where the extension is not built (then :meth:`candidates` tests trigrams)."""
        if self._finder is False:
            self._finder = keyword_finder([k for k, _ in self._keywords])
        return self._finder  # type: ignore[return-value]

    def _finder_due(self) -> KeywordFinder | None:
        """:attr:`keyword_finder` once :data:`FINDER_AFTER` lines have been looked up in Python
        (building it costs what ~500 lines do: a pasted excerpt never pays for it)."""
        if self._finder is False:
            self._looked += 1
            if self._looked <= FINDER_AFTER:
                return None
        return self.keyword_finder

    def candidates(self, text: str) -> list[Signature]:
        """The signatures one of whose keywords occurs in ``text``, in keyword order.

        Where the C extension is built and the lower-cased line is ASCII, one C pass finds the
        keywords (:attr:`keyword_finder`); otherwise only the keywords whose first three
        characters occur in the line are tested (a set of the line's trigrams). Either way a line
        costs its length, not the size of the KB."""
        text = text.lower()  # keywords match case-insensitively (they are indexed lowercased)
        finder = self._finder_due()
        if finder is not None and text.isascii():
            ranks = finder.ranks(text.encode("ascii"))
            extra = [r for r in finder.rest if self._keywords[r][0] in text]
            if extra:
                ranks = sorted(ranks + extra)
            seen: dict[str, Signature] = {}
            for r in ranks:
                for s in self._keywords[r][1]:
                    seen.setdefault(s.id, s)
            return list(seen.values())
        by_gram = self._by_gram
        if len(by_gram) < len(text):
            ranks = [r for g, rs in by_gram.items() if g in text for r in rs]
        else:
            grams = {text[i:i + 3] for i in range(len(text) - 2)}
            ranks = [r for g in grams.intersection(by_gram) for r in by_gram[g]]
        ranks += self._short
        seen = {}
        for r in sorted(ranks):
            k, sigs = self._keywords[r]
            if k in text:
                for s in sigs:
                    seen.setdefault(s.id, s)
        return list(seen.values())

    def match_line(self, text: str, context: Callable[[], str] | None = None
                   ) -> list[tuple[Signature, dict[str, str]]]:
        """Signatures matching one (decoded, ANSI-stripped) line; benign lines only benign."""
        text = clean_line(text)
        cands = self.candidates(text)
        if not cands:
            return []
        for s in cands:
            if s.benign:
                m = s.search(text)
                if m:
                    return [(s, s.extract_values(text, m))]
        hits: list[tuple[Signature, dict[str, str]]] = []
        for s in cands:
            if s.benign:
                continue
            m = s.search(text)
            if not m:
                continue
            crx = s.context_regex()
            if crx is not None and not crx.search(text):
                before = context() if context is not None else ""
                if not crx.search(before):
                    continue
            hits.append((s, s.extract_values(text, m)))
        if len(hits) > 1:
            dropped = {o for s, _ in hits for o in s.supersedes}
            hits = [h for h in hits if h[0].id not in dropped]
        return hits

    # -- stage 1 + streaming ------------------------------------------------------------------
    @staticmethod
    def _all_spans(buf: bytes) -> tuple[list[tuple[int, int, int]], int]:
        """Every line of ``buf`` as ``(start, end, index)``, and the number of newlines."""
        spans = []
        st, i, n = 0, 0, len(buf)
        while st < n:
            en = buf.find(b"\n", st)
            if en < 0:
                en = n
            spans.append((st, en, i))
            st, i = en + 1, i + 1
        return spans, buf.count(b"\n")

    def scan_stream(self, stream: BinaryIO, name: str, agg: "_Aggregator",
                    file_index: int = 0, prefilter: bool = True) -> None:
        """Scan a binary stream (``.read(n)``), block by block."""
        self.scan_chunks(iter(lambda: stream.read(BLOCK), b""), name, agg, file_index, prefilter)

    def scan_chunks(self, chunks: Iterable[bytes | None], name: str, agg: "_Aggregator",
                    file_index: int = 0, prefilter: bool = True, *, line_base: int = 1,
                    tail: bytes = b"", final_carry: bool = True) -> tuple[int, bytes]:
        """Scan byte blocks; ``None`` marks skipped bytes (a fresh line starts after it). Returns
        the next line number and the end of the last block (``line_base`` and ``tail`` continue a
        scan; ``final_carry=False`` leaves a final partial line unscanned, for the helper of
        :mod:`.split_scan` that starts with it).

        A line longer than :data:`MAX_LINE` is scanned for its first :data:`MAX_LINE` bytes and the
        rest of it is skipped, so memory stays at one block plus one capped line."""
        carry = b""
        # tail: the end of the previous block, context for the next block's first lines
        skipping = False  # inside the rest of a cut line, or the partial line after a skip
        # the last whole-line block is scanned when the next one comes, so that a last line with
        # no newline (pasted text) is assembled with the lines before it (a wrapped last line)
        pending = b""

        def flush(extra: bytes = b"") -> None:
            nonlocal pending, line_base, tail
            block = pending + extra if extra else pending
            pending = b""
            if block:
                line_base = self._scan_block(block, name, file_index, line_base, agg, prefilter, tail)
                tail = block[-CONTEXT_BYTES:]

        for chunk in chunks:
            if chunk is None:
                flush(carry)
                carry, tail, skipping = b"", b"", True
                continue
            agg.bytes += len(chunk)
            if agg.progress is not None:
                agg.progress(agg.bytes)
            if skipping:
                nl = chunk.find(b"\n")
                if nl < 0:
                    agg.cut_bytes += len(chunk)
                    continue
                agg.cut_bytes += nl + 1
                chunk, skipping = chunk[nl + 1:], False
                if not chunk:
                    continue
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n")
            if cut < 0:
                if len(buf) <= MAX_LINE:
                    carry = buf
                    continue
                # an over-long line: its head is scanned, the rest skipped up to the next newline
                agg.cut_lines += 1
                agg.cut_bytes += len(buf) - MAX_LINE
                flush()
                line_base = self._scan_block(buf[:MAX_LINE], name, file_index, line_base, agg, prefilter, tail)
                carry, tail, skipping = b"", b"", True
                continue
            flush()
            pending, carry = buf[: cut + 1], buf[cut + 1:]
        flush(carry if final_carry else b"")
        return line_base, tail

    def _matches(self, text: str, ctx: Callable[[], str], memo: "_Memo",
                 alt: str | None = None) -> tuple[_Hits, bool]:
        """:meth:`match_line` and whether the line is *hard* (not a soft INFO / "falling back" /
        "deprecated" line, whose matches count only beside an error line), remembered per line
        text within one scan (an engine log repeats the same error line on every rank and every
        retry); a result that read the lines before (a signature's ``context``) is not
        remembered, since it depends on where the line is."""
        key = text if alt is None else f"{text}\0{alt}"
        got = memo.get(key)
        if got is not None:
            return got
        looked: list[bool] = []

        def context() -> str:
            looked.append(True)
            return ctx()

        hits = self.match_line(text, context)
        if alt is not None:  # a wrapped line that may have been cut mid-word: both readings count,
            other = self.match_line(alt, context)  # and a benign reading makes it a benign line
            if any(s.benign for s, _ in hits) or any(s.benign for s, _ in other):
                hits = [h for h in hits + other if h[0].benign][:1]
            else:
                have = {s.id for s, _ in hits}
                hits += [h for h in other if h[0].id not in have]
        # a benign match's hardness is never read (only errors need a hard line)
        hard = not hits or self.fallback is None or all(s.benign for s, _ in hits) or not (
            self.fallback.is_soft_line(text) or (alt is not None and self.fallback.is_soft_line(alt)))
        if not looked:
            if len(memo) >= MEMO_LINES:
                memo.clear()
            memo[key] = (hits, hard)
        return hits, hard

    def _assembled(self, buf: bytes, spans: list[tuple[int, int, int]], prefilter: bool,
                   lines: LineTable | None = None
                   ) -> tuple[list[tuple[int, int, int]], dict[int, tuple[bytes, bytes | None]]]:
        """``spans`` with the physical lines of each wrapped line replaced by the logical line
        (:mod:`.assemble`), and the logical lines by their first line index: ``(line, glued
        reading or None)``. In log mode a logical line is examined when one of its pieces is a
        candidate or the joined text carries an anchor (one cut in two by the wrap), so both modes
        examine every logical line that can matter and give the same answer."""
        joined = logical_lines(buf, lines=lines)
        if not joined:
            return spans, {}
        # pieces of a logical line: the index range first..last (a piece holds no newline)
        inside = {i: k for k, (st, en, first, _l, _g) in enumerate(joined)
                  for i in range(first, first + buf.count(b"\n", st, en) + 1)}
        keep: Iterable[int] = range(len(joined))
        if prefilter and not self.prefilter.every_line:
            texts = [line if glued is None else line + b"\n" + glued for _s, _e, _f, line, glued in joined]
            owner = [k for k, t in enumerate(texts) for _ in range(t.count(b"\n") + 1)]
            fast = self._literal if isinstance(self._literal, LiteralScan) else None
            text = b"\n".join(texts)
            hit = fast.hit_lines(text) if fast is not None else [i for _s, _e, i in self.prefilter.candidates(text)[0]]
            keep = {owner[i] for i in hit} | {inside[i] for _s, _e, i in spans if i in inside}
        out = [span for span in spans if span[2] not in inside]
        out += [(joined[k][0], joined[k][1], joined[k][2]) for k in keep]
        out.sort(key=lambda span: span[2])
        return out, {first: (line, glued) for _s, _e, first, line, glued in joined}

    def _scan_block(self, buf: bytes, name: str, file_index: int, line_base: int,
                    agg: "_Aggregator", prefilter: bool, tail: bytes = b"") -> int:
        spans, joined, newlines = self._stage1(buf, prefilter)
        return self._stage2(buf, tail, spans, joined, newlines, buf.endswith(b"\n"),
                            (name, file_index, line_base), agg)

    def _stage1(self, buf: bytes, prefilter: bool) -> tuple[
            list[tuple[int, int, int]], dict[int, tuple[bytes, bytes | None]], int]:
        """The candidate spans of a block (wrapped lines rejoined), the rejoined lines by their
        first line index, and the block's newline count (:mod:`.split_scan` runs this in a child)."""
        if not prefilter:
            physical, newlines = self._all_spans(buf)
            spans, joined = self._assembled(buf, physical, prefilter)
            return spans, joined, newlines
        fast = self.literal_scan(buf)
        if fast is not None:
            hits, table, newlines = fast.scan(buf)
            spans, joined = self._assembled(buf, [(table.start(i), table.end(i), i) for i in hits], prefilter, table)
            return spans, joined, newlines
        folded = fold(buf)
        lines = folded.split(b"\n")  # (one split: its lengths serve line assembly as well)
        lens = list(map(len, lines))
        ends = list(accumulate(lens))
        physical, newlines = self.prefilter.candidates(buf, folded, lines, ends)
        del folded, lines  # (bounded memory: only the lengths are needed from here)
        spans, joined = self._assembled(buf, physical, prefilter, Lines(buf, lens, ends))
        return spans, joined, newlines

    def _stage2(self, buf: "bytes | FileView", tail: bytes, spans: list[tuple[int, int, int]],
                joined: dict[int, tuple[bytes, bytes | None]], newlines: int, ends_nl: bool,
                where: tuple[str, int, int], agg: "_Aggregator") -> int:
        """Examine a block's candidate spans (``buf``: the block, or a :class:`FileView` of it);
        returns the line number after the block."""
        name, file_index, line_base = where
        memo = agg.memo
        last_raw, text = b"", ""
        alt: str | None = None
        for st, en, idx in spans:
            line = line_base + idx
            agg.candidates += 1
            got = joined.get(idx) if joined else None
            if got is None:
                raw, alt = buf[st:en], None
            else:  # a wrapped line, rejoined
                raw, alt = got[0], (None if got[1] is None else _decode(got[1]))
            if raw != last_raw:  # the same line again (a repeated error) is decoded once
                last_raw = raw
                text = strip_ansi(raw[: LINE_CAP * 4].decode("utf-8", "replace")).rstrip("\r")
                if len(text) > LINE_CAP:
                    text = text[:LINE_CAP]

            def ctx(st: int = st) -> str:
                return _context(buf, tail, st)

            sides = self._two_records(buf[st:en], text, ctx, memo, alt) if got is not None else None
            if sides is not None:
                self._examine_apart(sides, (buf, st, tail), (name, file_index, line), agg)
                continue
            if (text if alt is None else f"{text}\0{alt}") not in memo:
                if agg.examined >= MAX_EXAMINED:
                    agg.defer((text, name, file_index, line, buf[st:en], alt))
                    continue
                agg.examined += 1
            self._examine(text, ctx, memo, agg, (name, file_index, line), (buf, st, tail), alt)
        total = line_base + newlines + (0 if ends_nl else 1)
        agg.lines += total - line_base
        return total

    def _two_records(self, raw: bytes, text: str, ctx: Callable[[], str], memo: "_Memo",
                     alt: str | None) -> list[tuple[int, int, str]] | None:
        """A rejoined line that reads benign but is two records: at some seam, one side read alone
        is an error a signature names and the other a benign line a signature names (a benign line
        at the wrap width with an error line under it, or the reverse). A benign reading must not
        hide the error, so the two sides are examined apart: ``[(piece index, byte offset, text)]``.
        A wrapped notice whose pieces say nothing alone stays one line."""
        hits, _hard = self._matches(text, ctx, memo, alt)
        if not hits or not all(s.benign for s, _ in hits):
            return None
        pieces = raw.split(b"\n")
        if len(pieces) > MAX_SEAMS + 1:
            return None
        texts = [_decode(p).strip() for p in pieces]
        best: tuple[int, int] | None = None  # (seam, how little of the error side is kept)
        for j in range(1, len(pieces)):
            got = (self._reads(" ".join(texts[:j])), self._reads(" ".join(texts[j:])))
            if set(got) == {"error", "benign"}:  # the tightest error side: its own record only
                size = j if got[0] == "error" else len(pieces) - j
                if best is None or size < best[1]:
                    best = (j, size)
        if best is None:
            return None
        j = best[0]
        return [(0, 0, " ".join(texts[:j])), (j, sum(map(len, pieces[:j])) + j, " ".join(texts[j:]))]

    def _reads(self, text: str) -> str | None:
        hits = self.match_line(text)
        return None if not hits else "benign" if all(s.benign for s, _ in hits) else "error"

    def _examine_apart(self, sides: list[tuple[int, int, str]], at: "tuple[bytes | FileView, int, bytes]",
                       where: tuple[str, int, int], agg: "_Aggregator") -> None:
        """Examine the sides of a line :meth:`_two_records` took apart, each as a line of its own."""
        buf, st, tail = at
        name, file_index, line = where
        for k, off, text in sides:
            def ctx(pos: int = st + off) -> str:
                return _context(buf, tail, pos)

            agg.examined += 1
            self._examine(text, ctx, agg.memo, agg, (name, file_index, line + k), (buf, st + off, tail))

    def _examine(self, text: str, ctx: Callable[[], str], memo: "_Memo", agg: "_Aggregator",
                 where: tuple[str, int, int], at: "tuple[bytes | FileView, int, bytes]", alt: str | None = None) -> None:
        name, file_index, line = where
        hits, hard = self._matches(text, ctx, memo, alt)
        for sig, values in hits:
            agg.add(sig, values, name, file_index, line, text, *at, hard=hard)
        if self.fallback is not None and not hits:
            gate = self.error_gate  # an error line holds one of these: the others are not tested
            if (gate is None or any(map(text.__contains__, gate))) and (
                    alt is None or self.fallback.is_error_line(alt)):  # a cut mid-word: either way
                agg.observe(self.fallback, text, name, line)

    def _examine_deferred(self, agg: "_Aggregator") -> None:
        """The last lines past the :data:`MAX_EXAMINED` budget (the end of a log says most)."""
        def no_context() -> str:  # the lines before a deferred line are gone (bounded memory)
            return ""

        for text, name, file_index, line, raw, alt in agg.deferred:
            self._examine(text, no_context, agg.memo, agg, (name, file_index, line), (raw, 0, b""), alt)
        if agg.skipped_lines:
            agg.notes.append(f"{MAX_EXAMINED:,} distinct candidate lines examined, then only the last "
                             f"{len(agg.deferred):,} of the {agg.skipped_lines:,} after them "
                             f"({agg.skipped_lines - len(agg.deferred):,} counted, not examined)")
        agg.deferred.clear()

    # -- entry points -------------------------------------------------------------------------
    def explain_bytes(self, data: bytes, name: str = "<text>", prefilter: bool = False) -> Report:
        import io

        t0 = time.perf_counter()
        agg = _Aggregator()
        self.scan_stream(io.BytesIO(data), name, agg, 0, prefilter)
        self._examine_deferred(agg)
        return agg.report([name], time.perf_counter() - t0, self.fallback)

    def _helpers(self, fd: int, span: tuple[int, int] | None, jobs: int | None) -> list[Helper]:
        """Forked stage-1 helpers for the later ranges of a large whole file (:mod:`.split_scan`),
        one per CPU there is to use (``jobs``: None decides; 1 never; N, N processes in all
        whenever the file has N blocks)."""
        if span is None or self.prefilter.every_line or not hasattr(os, "fork"):
            return []
        if jobs is None:
            size = span[1] - span[0]
            if size < SPLIT_MIN:
                return []
            jobs = min(usable_cpus(), MAX_PROCS, size // RANGE_MIN)
        if jobs < 2:
            return []
        return start_helpers(self, fd, span[0], span[1], jobs)

    def _scan_split(self, fd: int, where: tuple[str, int], agg: "_Aggregator", helpers: list[Helper]) -> None:
        """The first range here, the later ranges' candidates from ``helpers`` (stage 2 here, in
        file order); where a helper stopped early, the rest of its range here as well."""
        from . import source

        name, file_index = where
        head = source.range_chunks(fd, name, os.lseek(fd, 0, os.SEEK_CUR), helpers[0].split_at)
        try:
            line_base, tail = self.scan_chunks(_draining(head, helpers), name, agg, file_index,
                                               final_carry=False)
            counted = helpers[0].split_at  # bytes up to here are in agg.bytes
            for n, helper in enumerate(helpers):
                done = -1
                for blk in helper.blocks(helpers[n + 1:]):
                    agg.bytes += blk.end - max(counted, blk.offset)
                    counted, done = max(counted, blk.end), blk.end
                    if agg.progress is not None:
                        agg.progress(agg.bytes)
                    view = FileView(fd, blk.offset, blk.length)
                    line_base = self._stage2(view, tail, blk.spans, blk.joined, blk.newlines,
                                             view[-1:] == b"\n", (name, file_index, line_base), agg)
                    tail = view[-CONTEXT_BYTES:]
                if helper.stopped is not None:  # the rest here, from the end of the last block it sent
                    resume = done if done >= 0 else helper.carry_from
                    agg.bytes -= counted - resume
                    line_base, tail = self.scan_chunks(
                        _draining(source.range_chunks(fd, name, resume, helper.stop), helpers[n + 1:]),
                        name, agg, file_index, line_base=line_base, tail=tail, final_carry=helper.final)
                    counted = helper.stop
                helper.close()
        finally:
            for helper in helpers:
                helper.close()

    def explain_files(self, paths: Iterable[str], prefilter: bool = True,
                      progress: Callable[[int], None] | None = None, jobs: int | None = None) -> Report:
        """Scan log files (``-``: stdin) under the caps of :mod:`.source`;
        ``progress(bytes_read_so_far)`` is called after every block. ``jobs``: 1 scans each file in
        this process; N (2 or more) lets forked helpers run stage 1 on the later ranges of a file
        cut for N processes (:mod:`.split_scan`; the report is the same); None does that for a file
        of at least :data:`~.split_scan.SPLIT_MIN` bytes with one process per usable CPU (at most
        :data:`~.split_scan.MAX_PROCS`, each with at least :data:`~.split_scan.RANGE_MIN` bytes). A
        file that cannot be read
        raises :class:`~k3doctor.boundedio.BoundedReadError` (one line, names the file)."""
        from . import source

        t0 = time.perf_counter()
        agg = _Aggregator()
        agg.progress = progress
        names = []
        for i, p in enumerate(paths):
            if p == "-":
                names.append(p)
                self.scan_chunks(source.stdin_chunks(agg.notes),
                                 "<stdin>", agg, i, prefilter)
                continue
            fd = source.open_log(p)
            names.append(p)
            try:
                span = source.whole_range(fd) if prefilter and jobs != 1 else None
                helpers = self._helpers(fd, span, jobs)
                if helpers:
                    self._scan_split(fd, (p, i), agg, helpers)
                else:
                    self.scan_chunks(source.log_chunks(fd, p, agg.notes), p, agg, i, prefilter)
            finally:
                os.close(fd)
        self._examine_deferred(agg)
        return agg.report(names, time.perf_counter() - t0, self.fallback)


def _draining(chunks: Iterable[bytes | None], helpers: Sequence[Helper]) -> Iterable[bytes | None]:
    """``chunks``, taking what the helpers wrote between them (none waits on a full pipe)."""
    for chunk in chunks:
        for helper in helpers:
            helper.drain()
        yield chunk


def _context(buf: "bytes | FileView", tail: bytes, pos: int) -> str:
    """The text before byte ``pos`` of a block, up to :data:`CONTEXT_BYTES` (the end of the block
    before, ``tail``, where the block starts too close), as a signature's ``context`` reads it."""
    lo = max(0, pos - CONTEXT_BYTES)
    before = buf[lo:pos] if lo > 0 or not tail else tail[-(CONTEXT_BYTES - pos):] + buf[:pos]
    return strip_ansi(before.decode("utf-8", "replace"))


def _union(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    return None if a is None or b is None else a | b


_DEFAULT: Scanner | None = None


def _scanner() -> Scanner:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Scanner()
    return _DEFAULT


def explain_text(text: str, name: str = "<text>") -> Report:
    """Recognise failures in pasted text (every line is examined; no stage-1 prefilter)."""
    return _scanner().explain_bytes(text.encode("utf-8", "surrogateescape"), name, prefilter=False)


def explain_paths(paths: Iterable[str], progress: Callable[[int], None] | None = None,
                  jobs: int | None = None) -> Report:
    """Recognise failures in log files (streamed, prefiltered; ``jobs``: see
    :meth:`Scanner.explain_files`)."""
    return _scanner().explain_files(paths, prefilter=True, progress=progress, jobs=jobs)
