"""Line assembly: rejoin a log line that a paste split over several physical lines.

Real pastes are hard-wrapped: by terminals and ``fold`` (a cut every N columns, mid-word), by mail
and chat clients and ``fmt`` (a word wrap at N columns), by rich panels (a word wrap inside
``│ … │`` borders), by log viewers that indent the continuation, by collectors that split long
lines. A message split over two lines matches neither half, and the half without its level tag
reads as an error line of its own. So before matching, each block is cut into *logical lines*:
line ``i + 1`` continues line ``i`` (a *seam*) when

1. line ``i`` is **full**: the block's wrap width ``W`` is its longest line (a panel's border and
   padding left out; at least :data:`MIN_WIDTH`), line ``i`` reaches within :data:`SLACK` of it,
   or within ``W/4`` when the next line starts with a word longer than SLACK (a long path pushed
   down; searched for when ``W`` <= :data:`LONG_WIDTH`), *and* the first word of line ``i + 1``
   would not have fitted after it (what every greedy wrapper guarantees); and line ``i`` is not a
   whole traceback frame header (``File "x", line 3, in f``: the code line under it is a record);
2. line ``i + 1`` does not **surely start a record**: it is not blank, not the same line again
   (every rank prints it), and (after its frame: blanks, box border, quote marker, code ticks,
   ANSI colour) starts with no timestamp, level word, process/rank tag (``[rank0]:``,
   ``(VllmWorker pid=1)``, NCCL's ``host:pid:tid [gpu]``, glog ``[E1130 …``), traceback header,
   bullet, prompt, caret line or C++ abort line;
3. if line ``i + 1`` *may* start a record (an exception name, ``torch._C.X:``, ``prog-name:``, a
   source location ``/x/y.cu:12``, a ``[tag]``, a capitalised word, a new sentence after ``.``),
   the seam holds only inside a run that is wrapped anyway: line ``i`` stops where no message
   ends (after a function word such as "to"/"of"/"the", a ``:`` or a ``-``), or a neighbouring
   seam is clean (its next line starts like no record at all), or both it and a neighbour are
   cuts at exactly ``W`` (``fold``). The longest line of an unwrapped paste reaches ``W``
   trivially, so a capitalised line after it stays a record of its own.

An ordinary log has few lines near its longest one and is read line by line as before; a wrapped
paste, whose long lines were all cut at one width, is joined. The join drops the frame at each
seam (a box border and padding, a hanging indent, a quote marker) and puts a space between the
pieces. A seam that may be a cut mid-word (line ``i`` reaches exactly ``W`` and line ``i + 1`` has
the same frame and no indent of its own: ``fold``'s cut, or a word wrap that filled the line) is
read both ways: the signatures are tried on the line with those pieces glued too; a benign
reading makes the line benign, and the fallback takes it for an error line only if both readings
are error lines.

Everything is a function of the block's bytes, so text mode and log mode assemble the same
logical lines, and the work is linear: one split and a pass over the line lengths, then regexes
anchored at the start of the lines after the few full ones. A logical line stops growing at
:data:`MAX_JOINED` bytes; a wrap across a block boundary (4 MiB) is not rejoined.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol
from itertools import accumulate, compress, count
from operator import not_

__all__ = ["Lines", "LineTable", "wrapped_groups", "join_pieces", "logical_lines", "MIN_WIDTH", "SLACK", "MAX_JOINED"]

MIN_WIDTH = 40           # a block whose longest line is shorter is not taken for a wrapped one
SLACK = 24               # a full line is at most this much shorter than the width
LONG_WIDTH = 200         # wider blocks are not searched for a long word pushed to the next line
_MANY = 1024             # more full lines than this: lines equal to the next dropped in one pass
MAX_JOINED = 16 << 10    # bytes of one logical line (the scanner hands 16 Ki characters to stage 2)

_BORDER = (b"\xe2\x94\x82", b"\xe2\x94\x83", b"\xe2\x95\x91", b"|")   # │ ┃ ║ |
#: the frame in front of a line's text: blanks, box borders, a markdown quote marker, code ticks
#: and bold markers, ANSI colour
_LEAD_RX = rb"(?:[ \t>|`]|\*\*|\xe2\x94[\x82\x83]|\xe2\x95\x91|\x1b\[[0-9;?]{0,32}[A-Za-z]){0,64}"
_LEAD = re.compile(_LEAD_RX)
_WORD = re.compile(rb"\S{0,4096}")
#: how a record surely starts (after the frame): a line starting so is never a continuation
_RECORD_RX = rb"""
  (?=\r?(?:\n|\Z))                                                # a blank line
| \d{4}-\d\d-\d\d | \d\d?:\d\d:\d\d | \d\d?[-/]\d\d[ T]\d\d?:      # timestamps
| \[(?i:rank|worker|node|gpu|tp|dp|pp|ep)[\s_-]?\d                # [rank0]: [rank 7] [TP3]
| \[[IWEF]\ [\w./-]{1,80}:\d                                      # c10d's [W socket.cpp:558]
| \[(?:[IWEF]\d{3,4}\ |\d{4}-\d\d-\d\d|\d\d?:\d\d|default\d|\d{1,5},\d{1,5}\])  # [E1130 [2025-.. [1,0]
| \{"                                                              # {"json": ...
| \((?:[\w.-]{1,40},?\ ){0,4}(?:pid|ip|rank|tid)=                  # (VllmWorker rank=0 pid=1)
| (?:INFO|WARN(?:ING)?|ERROR|DEBUG|CRITICAL|FATAL|TRACE|NOTICE|SEVERE|PANIC)\b
| (?i:info|warn(?:ing)?|error|debug|critical|fatal|trace|notice)[:\]]   # warn: / info] in any case
| (?:error|warning|fatal\ error|note|fatal):\                       # compiler diagnostics
| [\w.-]{1,40}:\ (?:INFO|WARN(?:ING)?|ERROR|DEBUG|CRITICAL|FATAL)\b  # a library's logger: "wandb: WARNING"
| (?:[A-Za-z]:)?[^\s:]{1,300}:\d{1,7}:\ \w{0,60}Warning\b        # Python's warnings: "/x/y.py:21: UserWarning"
| (?:[A-Za-z]:)?[^\s:]{1,300}:\d{1,7}:(?:\d{1,7}:)?\ (?:fatal\ )?(?:error|warning|note):  # "x.py:17:26: error: ..."
| [\w.-]{1,40}:\ (?i:info|warn(?:ing)?|error|debug|fatal):        # "libibverbs: Warning: ..."
| [IWEF]\d{4}\ \d                                                  # glog without brackets
| (?i:Traceback\b|File\ "|During\ handling|The\ above\ exception|Caused\ by)
| [\w.-]{1,80}:\d{1,9}:\d{1,9}\ \[\d                               # NCCL host:pid:tid [gpu]
| NCCL\ (?:INFO|WARN)\b | [\w./-]{1,200}\.(?:cc|cu|cpp|c|h|hpp):\d{1,6}\ (?:NCCL\ )?WARN\b  # NCCL's level, host prefix cut
| (?:size\ mismatch\ for|Missing\ key\(s\)\ in|Unexpected\ key\(s\)\ in)\                  # load_state_dict's items
| [*+\#$]\  | \xe2\x80\xa2 | >>> | \^ | ~~ | \#\d                   # bullets, prompts, carets
| what\(\): | terminate\ called | Aborted | Segmentation\ fault | Fatal\ Python | Killed\b
| at\ [\w.$<>]{1,200}\(                                            # a stack frame "at x.y("
"""
#: how a record may start: a message's own first word, which a wrap can also put first on a line
#: (``... agent status:`` / ``RpcError: ...``); such a line continues the one before only where the
#: block shows a wrap elsewhere (a seam whose next line starts like no record at all)
_MAYBE_RX = rb"""
  (?:[A-Za-z_][\w.]{0,200})?(?i:Error|Exception|Warning|Exit|Interrupt|Failure|Fault)\b
| [A-Za-z_]\w{0,80}(?:\.\w{1,80}){1,12}:\                          # torch._inductor.exc.X:
| [A-Za-z_][\w/]{0,80}[\d_./-][\w./-]{0,80}:\ | [A-Z]{2,}\w{0,40}:\  # prog-name: NVRM:
| /[\w.~+-]{1,200}(?:/[\w.~+-]{1,200}){0,40}\.\w{1,5}[:(]\d        # /src/file.cu:12: ...
| <\w                                                             # <stderr>, <object at 0x...>
| \[                                                              # [tag], [v1/core.py:12]
| -\                                                              # a "- " bullet (or "97 - Address")
"""
_RECORD = re.compile(_RECORD_RX, re.VERBOSE)
_MAYBE = re.compile(_MAYBE_RX, re.VERBOSE)
#: a newline whose next line starts (after its frame) with a word longer than SLACK
_LONG_NEXT = re.compile(rb"\n" + _LEAD_RX + rb"\S{%d}" % (SLACK + 1))
_SENTENCE_END = (b".", b"!", b"?", b")", b"]", b"'", b'"', b"`")
_FULL_STOP = (b".", b"!", b"?")
#: the rest of a file name cut after its dot: a short extension and the punctuation after it
_EXTENSION = re.compile(rb"[a-z0-9]{1,5}(?:[:)/,;'\"\]]|\r?\Z)")
_HEADER = re.compile(rb"(?:File \"|Traceback \()", re.IGNORECASE)
#: a line that stops where no message ends: after a function word, a colon or dash, or a log
#: level with no message after it (a wrap cut it there; a code line ending in "(" or "," is a
#: traceback's, not a cut)
_DANGLING = re.compile(rb"(?:[:-]|\b(?:WARN(?:ING)?|ERROR|INFO|DEBUG|FATAL|CRITICAL|TRACE)|(?<![\w-])(?:a|an|the|of|to|for|with|and|or|in|on|at|from|by|as|is|are|"
                       rb"was|were|be|not|no|than|that|which|when|while|into|via|per))\Z")
_FRAME_DONE = re.compile(rb"\", line \d|\(most recent call")
#: a record at an informational level (its prefix and level word within its first 120 bytes)
_SOFT_RECORD = re.compile(rb"[^\n]{0,120}?\b(?:INFO|WARN(?:ING)?|DEBUG|NOTICE)\b")
#: an exception raised in a line: ``RuntimeError:``, ``torch.OutOfMemoryError:``; or a failed
#: equality check, which prints both sides (``x.size(1) == top_k (1 vs. 6)``: TORCH_CHECK_EQ)
_RAISED = re.compile(rb"\b[A-Za-z_][\w.]{0,120}(?:Error|Exception):|==[^\n]{1,120}?\(-?\w{1,40} vs\. -?\w{1,40}\)")
#: a line that starts with a raised exception: ``ConnectionError: ...``, ``torch.OutOfMemoryError: ...``
_RAISED_START = re.compile(rb"(?:[A-Za-z_]\w{0,40}\.){0,8}[A-Z]\w{0,60}(?:Error|Exception): \S")


def _trim(line: bytes) -> bytes:
    """``line`` without trailing blanks and box borders (a panel pads its lines to its width)."""
    for _ in range(4):
        line = line.rstrip(b" \t\r")
        for b in _BORDER:
            if line.endswith(b):
                line = line[: -len(b)]
                break
        else:
            return line
    return line.rstrip(b" \t\r")


def _framed(line: bytes) -> bool:
    """A line with a border on both sides (``│ … │``, ``| … |``): a panel or a table row."""
    head = line.lstrip(b" \t")
    tail = line.rstrip(b" \t\r")
    return any(head.startswith(b) for b in _BORDER) and any(tail.endswith(b) for b in _BORDER)


def _extent(line: bytes) -> int:
    """How far ``line`` reaches: its length, a panel's border and padding left out. Trailing blanks
    count (``fold`` keeps them; a terminal that pads lines pads them all)."""
    return len(_trim(line)) if _framed(line) else len(line.rstrip(b"\r"))


def _lead(line: bytes) -> int:
    m = _LEAD.match(line)
    return m.end() if m else 0


def _width(line: LineTable, near: list[int], top: int) -> int:
    """The wrap width of the block: how far its lines reach (:func:`_extent`). Only the lines whose
    length can reach the answer are looked at (``near``: the indices of the lines within SLACK of
    the longest, first; ``top``: the longest length), each distinct text once (a log repeats its
    lines); none but the first when it reaches its full length (no line can reach further)."""
    floor = top
    longest = [i for i, n in zip(near, line.lengths(near)) if n == floor]
    width = _extent(line(longest[0]))
    if width < floor:  # (an unframed longest line reaches its length, and no line further)
        width = max(map(_extent, set(line.many(longest))))
    while width < floor and floor > MIN_WIDTH:
        floor = max(width, MIN_WIDTH)
        width = max(width, max(map(_extent, set(line.many(line.at_least(floor))))))
    return width


class LineTable(Protocol):
    """What line assembly reads of a block's physical lines (:class:`Lines`, or the C stage 1's
    :class:`~.literal_scan.EndsLines`)."""

    @property
    def top(self) -> int: ...
    def __len__(self) -> int: ...
    def length(self, i: int) -> int: ...
    def lengths(self, idx: Sequence[int]) -> list[int]: ...
    def at_least(self, n: int) -> list[int]: ...
    def start(self, i: int) -> int: ...
    def end(self, i: int) -> int: ...
    def __call__(self, i: int) -> bytes: ...
    def many(self, idx: list[int]) -> list[bytes]: ...


class Lines:
    """The physical lines of a block, by index (as ``buf.split(b"\\n")``), sliced out when asked
    for: the lengths are known (the scanner has split the block already, or its C pass
    (:mod:`.literal_scan`) recorded where each line ends), so a block with few full lines is not
    split a second time."""

    def __init__(self, buf: bytes, lens: list[int] | None = None, ends: list[int] | None = None) -> None:
        self.buf = buf
        self.lens = list(map(len, buf.split(b"\n"))) if lens is None else lens
        #: the running sum of ``lens`` (line i starts at ends[i] - lens[i] + i)
        self.ends = list(accumulate(self.lens)) if ends is None else ends

    def __len__(self) -> int:
        return len(self.lens)

    @property
    def top(self) -> int:
        """The longest line's length."""
        return max(self.lens)

    def length(self, i: int) -> int:
        return self.lens[i]

    def lengths(self, idx: Sequence[int]) -> list[int]:
        lens = self.lens
        return [lens[i] for i in idx]

    def at_least(self, n: int) -> list[int]:
        """The indices of the lines at least ``n`` bytes long, in order."""
        return list(compress(count(), map(n.__le__, self.lens)))

    def start(self, i: int) -> int:
        """The offset of line ``i``'s first byte."""
        return self.ends[i] + i - self.lens[i]

    def end(self, i: int) -> int:
        """The offset just after line ``i`` (its newline)."""
        return self.ends[i] + i

    def __call__(self, i: int) -> bytes:
        end = self.ends[i] + i
        return self.buf[end - self.lens[i]: end]

    def many(self, idx: list[int]) -> list[bytes]:
        """Lines ``idx``, in that order."""
        buf, lens, ends = self.buf, self.lens, self.ends
        return [buf[ends[i] + i - lens[i]: ends[i] + i] for i in idx]


def _line_of(buf: bytes, offsets: list[int]) -> list[int]:
    """The 0-based line index of each byte offset (ascending) in ``buf``."""
    out, at, line = [], 0, 0
    for off in offsets:
        line += buf.count(b"\n", at, off)
        at = off
        out.append(line)
    return out


def wrapped_groups(buf: bytes, lens: list[int] | None = None, ends: list[int] | None = None,
                   lines: LineTable | None = None) -> tuple[dict[int, int], int]:
    """``({first: last}, width)``: the line indices (0-based, as ``buf.split(b"\\n")``) of every run
    of physical lines of ``buf`` that form one logical line (lines in no run stand alone), and the
    block's wrap width (``lens``, ``ends``: the lengths of those lines and their running sum, or
    ``lines``: a :class:`Lines` of the block, where the caller has them)."""
    line: LineTable = lines if lines is not None else Lines(buf, lens, ends)
    if len(line) < 2:
        return {}, 0
    top = line.top
    if top < MIN_WIDTH:
        return {}, 0
    near = line.at_least(top - SLACK)
    width = _width(line, near, top)
    if width < MIN_WIDTH:
        return {}, width
    low = width // 4
    high = max(low, width - SLACK)
    last = len(line) - 1
    # (the lines near the longest are the full ones, unless a border or padding shortened it)
    full = set(near) if high == top - SLACK else set(line.at_least(high))
    if low < high and width <= LONG_WIDTH:
        # a shorter line, where the next line starts with a word longer than SLACK
        starts = [m.start() + 1 for m in _LONG_NEXT.finditer(buf)]
        full.update(i - 1 for i in _line_of(buf, starts) if line.length(i - 1) >= low)
    full.discard(last)
    order = sorted(full)
    curs, nxts = line.many(order), line.many([i + 1 for i in order])
    # a line printed again (every rank, every retry) is a record of its own: with many full lines,
    # those equal to the next one do not count towards a wrap width either
    counted = [k for k in range(len(order)) if curs[k] != nxts[k]] if len(full) > _MANY else range(len(order))
    # each seam: line i continues into line i + 1; (clean: the next line starts like no record,
    # cut: line i is exactly the width, fold's cut)
    seams: dict[int, tuple[int, bool, bool]] = {}
    soft_raised: set[int] = set()
    record = _RECORD.match
    # one line alone reaching near the width shows no wrap width (an unwrapped paste's longest line
    # reaches its own length): after it, only a line starting in lower case continues it outright
    alone = len(counted) < 2 or sum(map((width - SLACK).__le__, line.lengths([order[k] for k in counted]))) < 2
    # a wrapped line goes on the same way wherever it is printed again, so a full line printed
    # again as the block's last line ends where it ends; and the block's first line starts a
    # record, so a line printed again as the first line is no continuation
    final, opening = line(last), line(0)
    for k in compress(range(len(order)), map(not_, map(record, nxts))):
        i, cur, nxt = order[k], curs[k], nxts[k]
        if nxt == cur or cur == final or nxt == opening:
            continue  # (a line printed again, on every rank or retry, is a record of its own)
        body = nxt[_lead(nxt):]
        if record(body) or (body[:2] == b"- " and cur[_lead(cur):][:2] == b"- "):
            continue  # (a "- " line after another one: a list)
        reach = _extent(cur)
        if reach < low:
            continue
        prev = _trim(cur)
        word = _WORD.match(body)
        fw = word.end() if word else 0
        if reach + 1 + fw <= width:
            continue  # the next word would have fitted: a line break, not a wrap
        if reach < width - SLACK and fw <= SLACK:
            continue  # a short line, and the next word a short one: the line ended there
        if _HEADER.match(cur, _lead(cur)) and _FRAME_DONE.search(prev):
            continue  # a whole traceback frame header: the code line under it is a record
        maybe = bool(_MAYBE.match(body)) or body[:1].isupper() or (
            prev.endswith(_SENTENCE_END) and body[:1].isalpha() and prev.islower())  # a new sentence
        if alone and not maybe and (not body[:1].islower() or (
                prev.rstrip(b"`'\")]").endswith(_FULL_STOP) and not _EXTENSION.match(body))):
            # the only full line: a quote, bracket or digit may start the next record; and where it
            # ends a sentence it is an unwrapped paste's longest line, so a line after it in lower
            # case (``torch.compile failed``, a quoted ``use_fast``) starts a record of its own (a
            # full stop inside closing code ticks or quotes too, as in "... may help.`"),
            # unless it goes on with a file name's extension (``libnccl-net.`` / ``so: cannot``)
            maybe = True
        raised = bool(_SOFT_RECORD.match(cur, _lead(cur)) and _RAISED.search(body))
        if raised:
            maybe = True  # a notice's record is not continued by a raised error without a wrap shown
        if maybe and _DANGLING.search(prev[-24:]) and not (alone and _RAISED_START.match(body)):
            maybe = raised = False  # the line stops where no message ends ("... to", "... pattern 4:")
            # (round 34: unless no wrap width shows and the next line starts with a raised exception,
            # "ConnectionError: ..." under "UserWarning: Failed to load image Python extension: ",
            # dev benign row pytorch/vision#8192: Python prints the exception as a record of its own)
        if raised and (reach != width or prev.endswith(_SENTENCE_END)):
            # ... shown in the notice itself (a seam before it, or a cut at the width mid-sentence):
            # the raised error's own continuation ("NCCL error in: " and a path line) is no sign
            # that a notice ending in a full stop before it was wrapped
            soft_raised.add(i)
        seams[i] = (len(body) + 1, not maybe, reach == width)

    def supports(j: int, cut: bool) -> bool:
        """Seam ``j`` shows that the lines around it were wrapped: it is clean, or both it and
        the seam asking are cuts at exactly the width."""
        got = seams.get(j)
        return got is not None and (got[1] or (cut and got[2]))

    groups: dict[int, int] = {}
    first, end, size = -1, -1, 0
    for i in sorted(seams):
        grow, clean, cut = seams[i]
        # a line that may start a record continues one only inside a run wrapped anyway
        if not clean and not (supports(i - 1, cut) or (i not in soft_raised and supports(i + 1, cut))):
            continue
        if end != i:
            first, size = i, len(_trim(line(i)))
        if size + grow > MAX_JOINED:
            first, end = -1, -1
            continue
        size += grow
        end = i + 1
        groups[first] = end
    return groups, width


def join_pieces(pieces: list[bytes], width: int) -> tuple[bytes, bytes | None]:
    """The logical line of ``pieces`` (physical lines, in order): the frame at each seam dropped
    (trailing blanks/border of the piece before, leading frame of the piece after) and a space put
    between them; and, when a seam may be a cut mid-word (the piece before reaches exactly
    ``width`` and the piece after has the same frame and no indent of its own: ``fold``'s cut, or
    a word wrap that filled the line), the same line with those seams glued (blanks before the cut
    kept), else None."""
    first = pieces[0]
    spaced = [_trim(first)]
    glued = [first.rstrip(b"\r") if not _framed(first) else _trim(first)]
    frame = first[: _lead(first)]
    cuts = 0
    for k in range(1, len(pieces)):
        before, p = pieces[k - 1], pieces[k]
        n = _lead(p)
        last = k == len(pieces) - 1
        body = _trim(p[n:])
        if _extent(before) == width and p[:n] == frame:
            cuts += 1
        else:
            glued[-1] = glued[-1].rstrip(b" \t")
            glued.append(b" ")
        spaced += (b" ", body)
        glued.append(body if last or _framed(p) else p[n:].rstrip(b"\r"))  # (a cut keeps its blanks)
    return b"".join(spaced), (b"".join(glued) if cuts else None)


def logical_lines(buf: bytes, lens: list[int] | None = None, ends: list[int] | None = None,
                  lines: LineTable | None = None) -> list[tuple[int, int, int, bytes, bytes | None]]:
    """The logical lines of ``buf`` that join several physical ones, in order, as ``(start byte,
    end byte of the last piece, first line index, line, glued reading or None)``
    (:func:`wrapped_groups`, :func:`join_pieces`); ``[]`` for a block with no wrapped line
    (``lens``, ``ends``: the lengths of the block's lines and their running sum, or ``lines``: a
    :class:`Lines` of the block, where the caller has split it already)."""
    line: LineTable = lines if lines is not None else Lines(buf, lens, ends)
    groups, width = wrapped_groups(buf, lines=line)
    if not groups:
        return []
    out = []
    for first in sorted(groups):
        pos, end = line.start(first), line.end(groups[first])
        pieces = buf[pos:end].split(b"\n")
        spaced, glued = join_pieces(pieces, width)
        out.append((pos, end, first, spaced, glued))
    return out
