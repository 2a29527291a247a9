#!/usr/bin/env python3
"""DEV rows (errors and benign) whose excerpt matches a regex, with label and source; held-out rows are
counted, never shown.   python tools/rounds/dev_grep.py 'REGEX' [--max 20]"""
import json, re, sys
from pathlib import Path
try:
    rx = re.compile(sys.argv[1], re.I)
    mx = int(sys.argv[sys.argv.index("--max") + 1]) if "--max" in sys.argv else 20
except (IndexError, ValueError, re.error) as exc:
    raise SystemExit(f"usage: python tools/rounds/dev_grep.py 'REGEX' [--max N]   ({exc})")
shown = hidden = 0
for name in ("errors.jsonl", "benign.jsonl"):
    for line in (Path.cwd() / "fixtures/errors" / name).read_text(encoding="utf-8").splitlines():
        if not line.strip(): continue
        r = json.loads(line)
        if not rx.search(r["excerpt"]): continue
        if r.get("split") != "dev": hidden += 1; continue
        shown += 1
        if shown <= mx:
            print(f"[{r['expected_category']}] {r['source']}\n    {r['excerpt'][:400]!r}\n")
print(f"{shown} dev rows matched ({min(shown, mx)} shown); {hidden} non-dev rows matched (not shown)")
