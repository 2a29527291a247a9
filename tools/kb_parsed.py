"""Write ``k3doctor/explain/kb/kb-parsed.json``: the explain KB's TOML files parsed ahead of time.

    python tools/kb_parsed.py            # rebuild the file from kb/<category>.toml
    python tools/kb_parsed.py --check    # exit 1 (naming the categories) when it is out of date

``load_kb`` reads a category from this file when the digest recorded for it matches the TOML
text, and parses the TOML otherwise (see ``PARSED_FILE`` in ``k3doctor/explain/kb.py``): a stale
file only makes loading slower. Run this after every KB edit, as ``tools/fallback_model.py
--write-model`` after the corpus changes; ``tests/test_explain_kb.py`` fails while it is stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from k3doctor.explain.kb import CATEGORIES, PARSED_FILE, parsed_mirror, toml_texts, tomllib  # noqa: E402

KB = ROOT / "k3doctor" / "explain" / "kb"


def render(mirror: dict | None = None) -> str:
    """The file's text for the TOML files as they are now, or for ``mirror`` (one table item per
    line, so that a KB edit changes few lines of it)."""
    mirror = parsed_mirror(toml_texts(KB)) if mirror is None else mirror
    return json.dumps(mirror, ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only report whether the file is up to date")
    args = ap.parse_args(argv)
    path = KB / PARSED_FILE
    texts = toml_texts(KB)
    try:
        mirror = parsed_mirror(texts)
    except tomllib.TOMLDecodeError:
        for c, t in texts.items():  # (only to name the file)
            try:
                tomllib.loads(t)
            except tomllib.TOMLDecodeError as exc:
                print(f"{KB / f'{c}.toml'}: not valid TOML ({exc}); fix it, then run "
                      "this again", file=sys.stderr)
        return 2
    text = render(mirror)
    if args.check:
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        if old == text:
            print(f"{path.relative_to(ROOT)}: up to date")
            return 0
        try:
            recorded = json.loads(old).get("sha256", {}) if old else {}
        except (ValueError, AttributeError):
            recorded = {}
        fresh = mirror["sha256"]
        stale = [c for c in CATEGORIES if recorded.get(c) != fresh[c]] if isinstance(recorded, dict) else []
        what = f" (stale: {', '.join(stale)})" if stale else ""
        print(f"{path.relative_to(ROOT)}: out of date{what}; run python tools/kb_parsed.py")
        return 1
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)} ({len(text.encode()):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
