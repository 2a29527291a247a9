"""Append a line to one signature's ``examples`` (or ``near_misses``) list in kb/*.toml, in place.

    python tools/kb_add_example.py SIGNATURE_ID 'the exact line' [--near-miss]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KB = Path(__file__).resolve().parents[1] / "k3doctor" / "explain" / "kb"


def add(sid: str, line: str, key: str = "examples") -> Path:
    for path in sorted(KB.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        start = text.find(f'\nid = "{sid}"\n')
        if start < 0:
            continue
        end = text.find("\n[[signature]]", start + 1)
        end = len(text) if end < 0 else end
        block = text[start:end]
        at = block.find(f"\n{key} = [")
        if at < 0:
            block = block.rstrip("\n") + f"\n{key} = [{json.dumps(line, ensure_ascii=False)}]\n"
        else:
            open_at = at + len(f"\n{key} = [")
            block = block[:open_at] + "\n  " + json.dumps(line, ensure_ascii=False) + "," + block[open_at:]
        path.write_text(text[:start] + block + text[end:], encoding="utf-8")
        return path
    raise SystemExit(f"no signature {sid!r}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--near-miss"]
    print(add(args[0], args[1], "near_misses" if "--near-miss" in sys.argv else "examples"))
