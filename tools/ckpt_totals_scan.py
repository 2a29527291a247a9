#!/usr/bin/env python3
"""List (repo, commit, dir) triples in fetched mirrors that hold both config.json and
model.safetensors.index.json in the same directory of the same commit (any commit of the
mirror's history). Output: JSON lines on stdout. Used to build fixtures/checkpoint-totals/."""

import json
import subprocess
import sys
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False).stdout


def scan(mirror: Path):
    repo = mirror / "repo"
    name = mirror.name.replace("+", "/", 1)
    out = git(repo, "log", "--all", "--format=C %H %cI", "--name-only", "--", "*model.safetensors.index.json",
              "model.safetensors.index.json")
    seen = set()
    commit = date = ""
    for line in out.splitlines():
        if line.startswith("C "):
            _c, commit, date = line.split(" ", 2)
            continue
        if not line.strip() or not line.endswith("model.safetensors.index.json"):
            continue
        d = line[: -len("model.safetensors.index.json")].rstrip("/")
        if d in seen:
            continue  # newest version only
        cfgpath = (d + "/" if d else "") + "config.json"
        if not git(repo, "cat-file", "-t", f"{commit}:{line}").strip() or \
                not git(repo, "cat-file", "-t", f"{commit}:{cfgpath}").strip():
            # the config may have been committed separately: newest commit that has both
            continue
        seen.add(d)
        yield {"repo": name, "commit": commit, "date": date, "dir": d}


if __name__ == "__main__":
    for m in sys.argv[1:]:
        for row in scan(Path(m)):
            print(json.dumps(row))
