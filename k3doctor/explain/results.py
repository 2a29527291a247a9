"""What a scan found: the per-signature matches, their aggregation over lines and files, the
order they are reported in (root cause first), and the report (:mod:`.scan` feeds them)."""

from __future__ import annotations

import re
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from .fallback import FallbackModel, MAX_LINES, Verdict, fallback_signature
from .kb import Signature

if TYPE_CHECKING:  # pragma: no cover
    from .split_scan import FileView

__all__ = ["Match", "Report", "order"]

MEMO_LINES = 8192        # distinct line texts whose matches one scan remembers
TAIL_LINES = 2_000       # candidate lines past the examined budget that are still examined (the last)
MAX_LINE = 1 << 20       # bytes of one line scanned; the rest of a longer line is skipped
MAX_LOCATIONS = 5        # first locations kept per match
_Hits = list[tuple[Signature, dict[str, str]]]
_Memo = dict[str, tuple[_Hits, bool]]

_TS = (
    # 2026-11-30 10:11:12(.345) / 2026-11-30T10:11:12
    re.compile(rb"\b\d{4}-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"),
    # vLLM: INFO 11-30 10:11:12
    re.compile(rb"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})"),
    # glog / c10: [E1130 10:11:12.123456
    re.compile(rb"\[[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"),
)


def location(name: str, line: int) -> str:
    """A match's location as reports print it and :class:`Match` keeps it: ``source:line``."""
    return f"{name}:{line}"


def _ts_key(m: re.Match[bytes]) -> float:
    mon, day, hh, mm, ss = (int(x) for x in m.groups()[:5])
    frac = m.groups()[5] if len(m.groups()) > 5 and m.group(6) else b""
    return (((mon * 31 + day) * 24 + hh) * 60 + mm) * 60 + ss + (float(b"0." + frac) if frac else 0.0)


def _find_ts(blob: bytes) -> float | None:
    """The last timestamp in ``blob`` (any supported format), as a sortable number."""
    best: tuple[int, float] | None = None
    for rx in _TS:
        last = None
        for last in rx.finditer(blob):
            pass
        if last is not None and (best is None or last.start() > best[0]):
            best = (last.start(), _ts_key(last))
    return None if best is None else best[1]


@dataclass
class Match:
    """One recognised signature, aggregated over every line (and file) it matched."""

    sig: Signature
    count: int = 0
    first_file: str = ""
    first_line: int = 0
    file_index: int = 0
    excerpt: str = ""
    ts: float | None = None
    values: dict[str, str] = field(default_factory=dict)
    locations: list[str] = field(default_factory=list)
    evidence: list[tuple[str, int, str]] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    verdict: Verdict | None = None   # set on a fallback match (no signature matched)
    hard: bool = False               # matched at least once on a line that is not soft

    @property
    def benign(self) -> bool:
        return self.sig.benign

    @property
    def confidence(self) -> str:
        """``high`` for a signature match, ``low`` for the fallback's classification."""
        return "low" if self.verdict is not None else "high"

    @property
    def cause(self) -> str:
        if self.verdict is not None:
            v = self.verdict
            why = f" Decided by: {', '.join(v.terms)}" if v.terms else " No category term occurred"
            if v.probability is not None:
                words = f", from: {', '.join(v.learned_words)}" if v.learned_words else ""
                why += (f"{'; and' if v.terms else '; decided by'} the learned model "
                        f"(P = {v.probability:.2f}{words})")
            why += "."
            return f"{self.sig.cause} Salient line: {v.line!r}.{why}"
        return self.sig.render_cause(self.values)

    def sort_key(self, ts: float | None = None) -> tuple:
        """Benign last; then the tier (cause, generic, symptom); then the earliest time (``ts``:
        :func:`order`'s effective time, else the match's own), file order and line; then priority."""
        when = self.ts if ts is None else ts
        return (
            self.benign,
            self.sig.tier_rank,
            # among symptoms, one that only says a process ended or waited ("other": an engine
            # wrapper, a rank killed, an actor lost) comes after one that names what failed
            self.sig.tier == "symptom" and self.sig.category == "other",
            when is None,
            when if when is not None else 0.0,
            self.file_index,
            self.first_line,
            -self.sig.priority,
        )

    def to_dict(self) -> dict[str, object]:
        """The JSON shape (schema_version 1): exactly these keys (``confidence`` since 0.5)."""
        return {
            "id": self.sig.id,
            "category": self.sig.category,
            "title": self.sig.title,
            "cause": self.cause,
            "fix": self.sig.fix,
            "related_checks": list(self.sig.related_checks),
            "references": list(self.sig.references),
            "benign": self.benign,
            "confidence": self.confidence,
            "count": self.count,
            "first_line": f"{self.first_file}:{self.first_line}",
            "excerpt": self.excerpt,
        }


@dataclass
class Report:
    matches: list[Match]
    sources: list[str]
    bytes_scanned: int = 0
    lines_scanned: int = 0
    candidate_lines: int = 0
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)   # what the caps skipped, one line each

    @property
    def recognised(self) -> bool:
        return bool(self.matches)

    @property
    def errors(self) -> list[Match]:
        return [m for m in self.matches if not m.benign]

    def related_checks(self) -> list[str]:
        seen: dict[str, None] = {}
        for m in self.errors:
            for c in m.sig.related_checks:
                seen.setdefault(c, None)
        return list(seen)


class _Aggregator:
    def __init__(self) -> None:
        self.progress: Callable[[int], None] | None = None
        self.by_id: dict[str, Match] = {}
        self.ts_seen: set[tuple[str, str]] = set()
        self.bytes = 0
        self.lines = 0
        self.candidates = 0
        # error lines no signature matched, for the fallback: (source, line, text)
        self.unexplained: list[tuple[str, int, str]] = []
        self.last_exception: tuple[str, int, str] | None = None
        #: the last exception line that reports a consequence (a peer reset, a process exited)
        self.last_consequence: tuple[str, int, str] | None = None
        self.notes: list[str] = []   # what was skipped, one line each (source caps)
        self.cut_lines = 0           # lines longer than MAX_LINE (their rest not scanned)
        self.cut_bytes = 0           # bytes of those lines, and of partial lines after a skip
        #: line text -> its signature matches and hardness, for lines seen again (MEMO_LINES)
        self.memo: _Memo = {}
        self.error_lines: dict[str, bool] = {}  # line text -> the fallback's is_error_line
        self.examined = 0            # distinct candidate lines examined in full (MAX_EXAMINED)
        self.skipped_lines = 0       # candidate lines past that budget
        #: the last TAIL_LINES of them: (text, source, file index, line, raw line, glued reading)
        self.deferred: "deque[tuple[str, str, int, int, bytes, str | None]]" = deque(maxlen=TAIL_LINES)

    def defer(self, item: tuple[str, str, int, int, bytes, str | None]) -> None:
        self.skipped_lines += 1
        self.deferred.append(item)

    def observe(self, model: FallbackModel, text: str, name: str, line: int) -> None:
        """Remember an unmatched line when it is an error line (bounded); the test is remembered
        per line text, like the signature matches (:data:`MEMO_LINES`)."""
        err = self.error_lines.get(text)
        if err is None:
            if len(self.error_lines) >= MEMO_LINES:
                self.error_lines.clear()
            err = self.error_lines[text] = model.is_error_line(text)
        if not err:
            return
        item = (name, line, text.strip())
        if model.is_exception_line(text):
            if model.is_consequence(text):
                self.last_consequence = item
            else:
                self.last_exception = item
        if len(self.unexplained) < MAX_LINES:
            self.unexplained.append(item)

    def add(self, sig: Signature, values: dict[str, str], name: str, file_index: int,
            line: int, text: str, buf: "bytes | FileView", st: int, tail: bytes = b"", hard: bool = True) -> None:
        m = self.by_id.get(sig.id)
        if m is not None and len(m.locations) >= MAX_LOCATIONS and (sig.id, name) in self.ts_seen \
                and (len(m.evidence) >= 3 or name in m.files) and all(k in m.values for k in values):
            m.count += 1  # nothing else of this match can change: only count the line
            m.hard = m.hard or hard or sig.standalone
            return
        if m is None:
            m = Match(sig=sig, first_file=name, first_line=line, file_index=file_index,
                      excerpt=text.strip()[:400])
            self.by_id[sig.id] = m
        m.count += 1
        m.hard = m.hard or hard or sig.standalone
        for k, v in values.items():
            m.values.setdefault(k, v)
        if len(m.locations) < MAX_LOCATIONS:
            m.locations.append(location(name, line))
        if len(m.evidence) < 3 and name not in {e[0] for e in m.evidence}:
            m.evidence.append((name, line, text.strip()[:300]))
        m.files.add(name)
        if (sig.id, name) not in self.ts_seen:
            # the earliest timestamp of this signature over all files: the line's own
            # timestamp, else the last one printed before it in this block
            self.ts_seen.add((sig.id, name))
            eol = buf.find(b"\n", st)
            ts = _find_ts(buf[st: eol if eol >= 0 else len(buf)])
            if ts is None:
                ts = _find_ts(buf[max(0, st - 65536): st])
            if ts is None and st < 65536 and tail:
                ts = _find_ts(tail)
            if ts is not None and m.ts is None:
                m.ts = ts
            elif ts is not None and m.ts is not None and ts < m.ts:
                m.ts = ts
                m.first_file, m.first_line, m.file_index = name, line, file_index
                m.excerpt = text.strip()[:400]

    def _fallback_match(self, model: FallbackModel) -> Match | None:
        """The fallback's match: when no signature explained an error, or only symptoms did."""
        errors = [m for m in self.by_id.values() if not m.benign]
        if errors and any(m.sig.tier != "symptom" for m in errors):
            return None
        # the root cause first: when some error line is not a consequence (a peer reset the
        # connection, a watchdog timed out, a process exited, "see root cause above"), the
        # consequences neither give the salient line nor vote
        causes = [item for item in self.unexplained if not model.is_consequence(item[2])]
        verdict = model.classify(causes, self.last_exception) if causes else None
        # an explicit error no signature explains, beside symptoms only, is their cause: it comes
        # first even without a category word
        cause_first = verdict is not None
        if verdict is None:  # only consequences, or the other lines are no explicit error
            lines, last = self.unexplained, self.last_exception or self.last_consequence
            if not causes:
                # a consequence printed right above a line a benign signature explained reports
                # that harmless line: C++ prints the thrown error on the line after "terminate
                # called after throwing", Python prints an exception raised in __del__ under
                # "Exception ignored in:" (round 92, dev benign rows pytorch#2530 and #9127); a
                # harmless line right above a consequence is no part of it (it reports what follows)
                benign_at = {loc for m in self.by_id.values() if m.benign for loc in m.locations}
                lines = [it for it in lines if location(it[0], it[1] + 1) not in benign_at]
                if not lines:
                    return None
                last = last if last in lines else None
            verdict = model.classify(lines, last)
        if verdict is None or (errors and verdict.score <= 0 and not cause_first):
            return None
        sig = fallback_signature(verdict.category, model)
        name, line = verdict.where
        m = Match(sig=sig, count=1, first_file=name, first_line=line, excerpt=verdict.line,
                  verdict=verdict)
        m.locations.append(location(name, line))
        m.evidence.append((name, line, verdict.line[:300]))
        m.files.add(name)
        return m

    def report(self, sources: list[str], elapsed: float,
               fallback: FallbackModel | None = None) -> Report:
        found = list(self.by_id.values())
        strict = fallback is not None and "corroboration" in fallback.gates
        if fallback is not None and not (
                self.last_exception or self.last_consequence or any(m.hard for m in found if not m.benign)
                or any(not strict or fallback.is_hard_error_line(t) for _, _, t in self.unexplained)):
            # only soft lines (INFO, a WARNING that names no failure, "falling back",
            # "deprecated" ...) and no hard error line: a signature that matched them is not an
            # answer by itself
            found = [m for m in found if m.benign]
        fb = self._fallback_match(fallback) if fallback is not None else None
        matches = order(found)
        if fb is not None:  # ahead of symptoms and benign lines, behind nothing else
            matches.insert(0, fb)
        notes = list(self.notes)
        if self.cut_lines:
            notes.append(f"{self.cut_lines:,} line(s) longer than {MAX_LINE >> 20} MiB: only their first "
                         f"{MAX_LINE >> 20} MiB was scanned ({self.cut_bytes:,} bytes skipped)")
        return Report(matches=matches, sources=sources, bytes_scanned=self.bytes,
                      lines_scanned=self.lines, candidate_lines=self.candidates,
                      elapsed_s=elapsed, notes=notes)


def order(found: list[Match]) -> list[Match]:
    """The matches best first (:meth:`Match.sort_key`), the root cause ahead of its consequences.

    Time: a match whose line carries no timestamp and follows none in its file (a traceback pasted
    above a timestamped log, a wrapper's lines before the engine's) happened before the first
    timestamped match after it in the same file, since a file is written in order; it takes that
    time, so it is not ranked behind every timestamped match of another file or line."""
    stamped: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for m in found:
        if m.ts is not None:
            stamped[m.first_file].append((m.first_line, m.ts))
    when: dict[int, float | None] = {}
    for m in found:
        if m.ts is None:
            later = [ts for line, ts in stamped.get(m.first_file, ()) if line > m.first_line]
            when[id(m)] = min(later) if later else None
    return sorted(found, key=lambda m: m.sort_key(when.get(id(m), m.ts)))
