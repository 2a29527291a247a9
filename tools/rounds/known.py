#!/usr/bin/env python3
"""Is a GitHub thread already in the explain corpus, or claimed by another round?

    python tools/rounds/known.py URL [URL ...]            # known / claimed by rN / new
    python tools/rounds/known.py --claim N URL [URL ...]  # claim new ones for round N

Reads the MAIN checkout's corpus files (errors.jsonl, benign.jsonl, collected/*.jsonl,
kb_sources.jsonl, legacy.jsonl, prior_kb_threads.txt), so a thread another round merged meanwhile is
known, and the claims of every round (``<git common dir>/k3d-claims/r*.txt``: shared by all
worktrees, never committed). Never prints a split.
"""
import json
import re
import subprocess
import sys
from pathlib import Path


def _common_dir() -> Path:
    out = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parent)
    if out.returncode:
        raise SystemExit("known.py: run it inside the k3doctor git checkout or one of its worktrees")
    return Path(out.stdout.strip())


MAIN = _common_dir().parent / "fixtures" / "errors"
CLAIMS = _common_dir() / "k3d-claims"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from fixtures.errors.build_corpus import thread_key  # noqa: E402  (the corpus's own thread key)

_SHORT = re.compile(r"^([\w.\-]+)/([\w.\-]+)#(\d+)$")


def key(url: str) -> str | None:
    """``owner/repo#N`` for a thread URL (as the corpus keys it) or an ``owner/repo#N`` string."""
    url = url.strip().replace("http://", "https://", 1)
    try:
        return thread_key(url)
    except ValueError:
        m = _SHORT.match(url)
        return f"{m.group(1).lower()}/{m.group(2).lower()}#{m.group(3)}" if m else None


def known_threads():
    out = set()
    for p in [MAIN / "errors.jsonl", MAIN / "benign.jsonl", MAIN / "kb_sources.jsonl", MAIN / "legacy.jsonl",
              *sorted((MAIN / "collected").glob("*.jsonl"))]:
        if not p.exists():
            continue
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    k = key(json.loads(line).get("source", ""))
                except Exception:
                    k = None
                if k:
                    out.add(k)
    pk = MAIN / "prior_kb_threads.txt"
    if pk.exists():
        for line in pk.read_text().splitlines():
            k = key(line.strip()) if line.strip() else None
            if k:
                out.add(k)
    return out


def claims():
    out = {}
    for p in sorted(CLAIMS.glob("r*.txt")):
        for line in p.read_text().splitlines():
            k = key(line.strip()) if line.strip() else None
            if k:
                out.setdefault(k, p.stem)
    return out


def main(argv):
    claim = None
    if not argv or (argv[:1] == ["--claim"] and (len(argv) < 3 or not argv[1].isdigit())):
        raise SystemExit("usage: known.py URL [URL ...]  |  known.py --claim N URL [URL ...]")
    if argv[:1] == ["--claim"]:
        claim, argv = f"r{int(argv[1])}", argv[2:]
    CLAIMS.mkdir(exist_ok=True)
    known, claimed = known_threads(), claims()
    rc = 0
    for url in argv:
        k = key(url)
        if k is None:
            print(f"{url}: not a GitHub issue/PR/discussion URL"); rc = 1; continue
        if k in known:
            print(f"{k}: KNOWN (already in the corpus): skip"); rc = 1
        elif k in claimed and claimed[k] != claim:
            print(f"{k}: CLAIMED by {claimed[k]}: skip"); rc = 1
        else:
            if claim:
                if claimed.get(k) != claim:
                    with open(CLAIMS / f"{claim}.txt", "a") as f:
                        f.write(f"https://github.com/{k.replace('#', '/issues/')}\n")
                    claimed[k] = claim
                print(f"{k}: new, claimed for {claim}")
            else:
                print(f"{k}: new")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
