#!/usr/bin/env python3
"""insert_writeups.py WRITEUPS_DIR "**Round 259:" 267 266 ... : put WRITEUPS_DIR/rN.md (newest first, as given)
before the first line starting with the anchor in docs/validation.md, paragraphs wrapped at 110 columns."""
import sys
import textwrap
from pathlib import Path

USAGE = 'usage: python tools/rounds/insert_writeups.py WRITEUPS_DIR "**Round <newest in the doc>:" N [N ...]'


def main(argv: list[str], doc: Path) -> int:
    if len(argv) < 3 or not all(n.isdigit() for n in argv[2:]):
        print(USAGE, file=sys.stderr)
        return 2
    src, anchor, rounds = Path(argv[0]), argv[1], argv[2:]
    lines = doc.read_text(encoding="utf-8").split("\n")
    at = next((i for i, line in enumerate(lines) if line.startswith(anchor)), None)
    if at is None:
        print(f"insert_writeups.py: no line of {doc} starts with {anchor!r}", file=sys.stderr)
        return 2
    missing = [str(src / f"r{n}.md") for n in rounds if not (src / f"r{n}.md").is_file()]
    if missing:
        print(f"insert_writeups.py: no write-up {', '.join(missing)}", file=sys.stderr)
        return 2
    new: list[str] = []
    for n in rounds:
        text = (src / f"r{n}.md").read_text(encoding="utf-8").strip()
        for para in [p for p in text.split("\n\n") if p.strip()]:
            para = " ".join(para.split())
            new += textwrap.wrap(para, 110, break_long_words=False, break_on_hyphens=False) + [""]
    lines[at:at] = new
    doc.write_text("\n".join(lines), encoding="utf-8")
    print(f"inserted {len(rounds)} write-ups ({len(new)} lines) before line {at + 1}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], Path(__file__).resolve().parents[2] / "docs" / "validation.md"))
