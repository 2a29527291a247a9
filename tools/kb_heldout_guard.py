"""Remove from the explain KB any example / near miss that quotes a held-out line only, and any
reference to a held-out thread (the held-out split must stay unseen by the KB).

    python tools/kb_heldout_guard.py          # report
    python tools/kb_heldout_guard.py --fix    # edit kb/*.toml in place (list-item lines only)

Only the items of ``examples`` and ``near_misses`` lists are read, one item a line or inline
(``examples = ["a", "b"]``); pattern lines are never touched, even when a pattern's text equals a
held-out line. A line that is also a source sweep's message (``fixtures/errors/sweeps/``: public
source text, which a signature may quote whole) is not a held-out-only line. A held-out line inside
a multi-line example (``"...\\n..."``), or the last item of an inline list, is reported with its
signature's id and the example's index, to be replaced by hand (``--fix`` does not rewrite part of
an item or leave a list empty).

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
from fixtures.errors.sweep_files import sweep_messages  # noqa: E402

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
    return held - dev - sweep_messages(), threads


_OPEN = re.compile(r"^(\w+) = \[")
_STRINGS = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'')


def _quoted(text: str, lines: set[str]) -> list[tuple[str, bool]]:
    """(item, held-out-only) for each string of an inline list's text (TOML basic or literal)."""
    out = []
    for m in _STRINGS.finditer(text):
        item = m.group(2)
        if m.group(1) is not None:
            try:
                item = json.loads(f'"{m.group(1)}"')
            except ValueError:  # a TOML escape JSON lacks: compare the raw text
                item = m.group(1)
        out.append((m.group(0), item.strip() in lines))
    return out


def _report(path: Path, items: list[tuple[str, bool]]) -> list[str]:
    """Print each held-out-only item of a list line; return them (as quoted in the file)."""
    bad = [q for q, held in items if held]
    for q in bad:
        print(f"{path.name}: quotes a held-out line: {q[1:81]}")
    return bad


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
    from k3doctor.explain.kb import KBError

    try:
        multi_line = inside_items(lines)
    except KBError as exc:
        print(f"kb_heldout_guard: {exc}; fix that file (python tools/kb_parsed.py --check names it too), "
              "then run this again", file=sys.stderr)
        return 2
    for where in multi_line:
        print(f"{where}: a line of this multi-line item is a held-out line (replace it by hand)")
        changed += 1
    for path in sorted(KB.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        out = []
        key = None  # the list whose items the next lines are ("examples", "patterns", ...)
        for ln in text.splitlines(keepends=True):
            body = ln.rstrip("\n")
            opened = _OPEN.match(body)
            if opened:
                key = opened.group(1)
                rest = body[opened.end():]
                if rest.rstrip().endswith("]"):  # an inline list: key = ["a", "b"]
                    key = None
                    if opened.group(1) in ("examples", "near_misses"):
                        items = _quoted(rest.rstrip()[:-1], lines)
                        bad = _report(path, items)
                        changed += len(bad)
                        if bad and len(bad) < len(items) and "--fix" in argv:
                            keep = ", ".join(q for q, held in items if not held)
                            ln = f"{opened.group(1)} = [{keep}]\n"
                        elif bad:
                            print(f"{path.name}: the inline {opened.group(1)} list above would be empty: replace by hand")
            elif key is not None and body.strip() == "]":
                key = None
            elif key in ("examples", "near_misses"):
                items = _quoted(body if body.lstrip().startswith(("\"", "'")) else "", lines)
                bad = _report(path, items)
                changed += len(bad)
                if bad and len(bad) == len(items):
                    continue  # (with --fix: the line goes)
                if bad:
                    indent = body[: len(body) - len(body.lstrip())]
                    ln = indent + ", ".join(q for q, held in items if not held) + ",\n"
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
