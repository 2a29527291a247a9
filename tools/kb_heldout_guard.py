"""Remove from the explain KB any example / near miss that quotes a held-out line only, and any
reference to a held-out thread (the held-out split must stay unseen by the KB).

    python tools/kb_heldout_guard.py          # report
    python tools/kb_heldout_guard.py --fix    # edit kb/*.toml in place (list-item lines only)

A held-out line inside a multi-line example (``"...\\n..."``) is reported with its signature's id
and the example's index, to be replaced by hand (``--fix`` does not rewrite part of an item).

``tests/test_explain_kb.py::test_the_kb_is_not_written_from_heldout_threads`` enforces it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.errors.build_corpus import thread_key  # noqa: E402

KB = ROOT / "k3doctor" / "explain" / "kb"
CORPUS = ROOT / "fixtures" / "errors"


def heldout_only() -> tuple[set[str], set[str]]:
    held, dev, threads = set(), set(), set()
    for name in ("errors.jsonl", "benign.jsonl"):
        for raw in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(raw)
            lines = {ln.strip() for ln in row["excerpt"].splitlines() if len(ln.strip()) > 20}
            if row["split"] == "heldout":
                held |= lines
                threads.add(row["thread"])
            else:
                dev |= lines
    return held - dev, threads


def inside_items(lines: set[str]) -> list[str]:
    """``id: field[index]`` of every multi-line example / near miss holding a held-out-only line
    (as ``tests/test_explain_kb.py`` reads them: each line of the parsed string)."""
    from k3doctor.explain.kb import load_kb

    found = []
    for sig in load_kb():
        for field in ("examples", "near_misses"):
            for k, text in enumerate(getattr(sig, field)):
                parts = text.splitlines()
                if len(parts) > 1 and any(part.strip() in lines for part in parts):
                    found.append(f"{sig.id}: {field}[{k}]")
    return found


def main(argv: list[str]) -> int:
    lines, threads = heldout_only()
    changed = 0
    for where in inside_items(lines):
        print(f"{where}: a line of this multi-line item is a held-out line (replace it by hand)")
        changed += 1
    for path in sorted(KB.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        out = []
        for ln in text.splitlines(keepends=True):
            item = re.fullmatch(r'\s*(["\'])(.*)\1,?\s*', ln.rstrip("\n"))
            if item and item.group(2).strip() in lines:
                print(f"{path.name}: quotes a held-out line: {item.group(2)[:80]}")
                changed += 1
                continue
            for url in re.findall(r'"(https://github\.com/[^"]+)"', ln):
                try:
                    if thread_key(url) in threads:
                        print(f"{path.name}: cites held-out thread {url}")
                        ln = re.sub(r'\s*"' + re.escape(url) + r'",?', "", ln)
                        changed += 1
                except ValueError:
                    pass
            out.append(ln)
        if "--fix" in argv:
            path.write_text("".join(out), encoding="utf-8")
    print(f"{changed} item(s) {'removed' if '--fix' in argv else 'found'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
