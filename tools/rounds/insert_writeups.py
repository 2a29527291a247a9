#!/usr/bin/env python3
"""insert_writeups.py WRITEUPS_DIR "**Round 259:" 267 266 ... : put WRITEUPS_DIR/rN.md (newest first, as given)
before the first line starting with the anchor in docs/validation.md, paragraphs wrapped at 110 columns."""
import sys
import textwrap
from pathlib import Path

doc = Path(__file__).resolve().parents[2] / "docs" / "validation.md"
src, anchor, rounds = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
lines = doc.read_text(encoding="utf-8").split("\n")
at = next(i for i, l in enumerate(lines) if l.startswith(anchor))
new = []
for n in rounds:
    text = src / f"r{n}.md".read_text(encoding="utf-8").strip()
    for para in [p for p in text.split("\n\n") if p.strip()]:
        para = " ".join(para.split())
        new += textwrap.wrap(para, 110, break_long_words=False, break_on_hyphens=False) + [""]
lines[at:at] = new
doc.write_text("\n".join(lines), encoding="utf-8")
print(f"inserted {len(rounds)} write-ups ({len(new)} lines) before line {at + 1}")
