"""``model.safetensors.index.json`` parsed in slices, so its memory is the file plus the result.

The index is one small object (``metadata``) and one large flat map (``weight_map``: tensor name ->
shard file; 497,220 entries and 59.8 MB for Kimi-K3). ``json.loads`` of the whole file holds its
bytes, its decoded text and the growing dict at once (a 74 MB index peaked at 345 MB RSS).
:func:`loads_index` decodes and parses the map a few MB at a time with the C decoder, adding each
slice's entries to one dict in which every shard file name is one shared string, and parses the
rest of the document with the map replaced by ``{}``.

It takes the plain layout only: UTF-8 without a byte-order mark, no backslash in the file, and a
map whose slices parse on their own. For anything else (and for every invalid file) it returns
None and the caller uses :func:`json.loads`, which reports the error; so a document this returns
is the one ``json.loads`` returns.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["loads_index"]

_KEY = re.compile(rb'"weight_map"[ \t\n\r]*:[ \t\n\r]*\{')
#: the end of one entry and the start of the next (a string value, a comma, the next key); with
#: no backslash in the file a quote always opens or closes a string, so this is an entry boundary
_BOUNDARY = re.compile(rb'"[ \t\n\r]*,[ \t\n\r]*"')
#: bytes of the map parsed per slice
_SLICE = 4 << 20


def _map_end(raw: bytes, start: int) -> int:
    """Index of the ``}`` closing the map whose content starts at ``start``: the first ``}`` with
    an even number of quotes between (no string holds an escaped quote here); -1 if none."""
    quotes, at = 0, start
    k = raw.find(b"}", start)
    while k >= 0:
        quotes += raw.count(b'"', at, k)  # counted once per stretch: linear in the file
        if quotes % 2 == 0:
            return k
        at, k = k, raw.find(b"}", k + 1)
    return -1


def loads_index(raw: bytes) -> dict[str, Any] | None:
    """``json.loads(raw)`` for an index in the plain layout, with less memory; None otherwise."""
    if raw.startswith(b"\xef\xbb\xbf") or b"\\" in raw:
        return None
    found = _KEY.search(raw)
    if found is None or _KEY.search(raw, found.end()) is not None:
        return None
    start = found.end()
    end = _map_end(raw, start)
    if end < 0:
        return None
    try:
        doc = json.loads(raw[:start - 1] + b"{}" + raw[end + 1:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("weight_map") != {}:
        return None  # the key found was not the document's own weight_map
    wm: dict[str, Any] = {}
    shared: dict[Any, Any] = {}
    i = start
    while i < end:
        cut = end
        nxt = end
        if i + _SLICE < end:
            m = _BOUNDARY.search(raw, i + _SLICE, end)
            if m is not None:
                cut, nxt = m.start() + 1, m.end() - 1  # after this value's quote / at the next key's
        try:
            part = json.loads(b"{" + raw[i:cut] + b"}")
        except (ValueError, RecursionError):
            return None
        values = list(part.values())
        try:  # one string per shard file, not one per entry (~40 MB for Kimi-K3)
            values = list(map(shared.setdefault, values, values))
        except TypeError:  # an unhashable value: not a weight map, json.loads' result is kept as is
            pass
        wm.update(zip(part, values))
        del part, values
        i = nxt
    doc["weight_map"] = wm
    return doc
