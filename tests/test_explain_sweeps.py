"""Source sweeps (fixtures/errors/sweeps/): each engine or library message swept from its source is
explained with its labelled category at least as often as the sweep's gate."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from k3doctor.explain.kb import CATEGORIES
from k3doctor.explain.scan import Scanner

SWEEPS = Path(__file__).resolve().parents[1] / "fixtures" / "errors" / "sweeps"
FILES = sorted(SWEEPS.glob("*.jsonl"))
SCANNER = Scanner()


def _load(path: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[0], lines[1:]


def _top1(text: str) -> str | None:
    m = SCANNER.explain_bytes(text.encode("utf-8")).matches
    return m[0].sig.category if m else None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_sweep_file_has_its_shape(path: Path) -> None:
    head, rows = _load(path)
    assert head["sweep"] == path.stem
    assert {"project", "commit", "paths", "before", "gate", "note"} <= set(head)
    hits, n = head["before"]
    assert 0 <= hits <= n and 0 < head["gate"] <= 1
    assert len(rows) >= 20, "a sweep covers an area's messages, not a handful"
    seen = set()
    for r in rows:
        assert set(r) == {"message", "where", "category", "why"}, r
        assert r["category"] in CATEGORIES, r
        assert r["message"].strip() and r["why"].strip(), r
        assert not re.search(r"\{[a-z_]*\}", r["message"]), f"placeholder left: {r['message']}"
        assert r["message"] not in seen, f"twice: {r['message']}"
        seen.add(r["message"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_sweep_keeps_its_gate(path: Path) -> None:
    head, rows = _load(path)
    misses = [(r["category"], _top1(r["message"]), r["message"][:120]) for r in rows]
    misses = [m for m in misses if m[0] != m[1]]
    assert (len(rows) - len(misses)) / len(rows) >= head["gate"], misses
