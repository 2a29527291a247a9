"""Regenerate the generated parts of README.md (the check catalogue).

Run ``python tools/update_readme.py`` after adding or renaming a check; ``tests/test_readme.py``
fails while the README is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"


def catalogue() -> str:
    """The check table, family by family, as Markdown."""
    sys.path.insert(0, str(ROOT))
    from k3doctor.registry import family_docs
    from k3doctor.registry import load_checks

    checks = load_checks()
    lines: list[str] = []
    for fam, desc in family_docs().items():
        codes = [c for c, cls in checks.items() if cls.family() == fam]
        if not codes:
            continue
        lines += [f"**{fam}** — {desc}", "", "| code | severity | title |", "|---|---|---|"]
        lines += [f"| `{c}` | {checks[c].severity.label} | {checks[c].title()} |" for c in codes]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def updated(text: str) -> str:
    block = f"{START}\n{catalogue()}{END}"
    return re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)


def main() -> None:
    path = ROOT / "README.md"
    path.write_text(updated(path.read_text()))
    print(f"updated {path}")


if __name__ == "__main__":
    main()
