"""Source sweeps (fixtures/errors/sweeps/): each engine or library message swept from its source is
explained with its labelled category at least as often as the sweep's gate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fixtures.errors.sweep_files import load_sweep as _load
from fixtures.errors.sweep_files import sweep_files, sweep_hit
from k3doctor.explain.kb import CATEGORIES
from k3doctor.explain.scan import Scanner

FILES = sweep_files()
SCANNER = Scanner()


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
    misses = [(r["category"], _top1(r["message"]), r["message"][:120]) for r in rows
              if not sweep_hit(SCANNER, r["message"], r["category"])]
    assert (len(rows) - len(misses)) / len(rows) >= head["gate"], misses


def test_a_benign_sweep_message_is_right_when_nothing_alarms() -> None:
    notice = "WARNING 06-01 12:00:00 [custom_all_reduce.py:137] Custom allreduce is disabled because this process group spans across nodes."
    assert sweep_hit(SCANNER, notice, "benign")
    assert not sweep_hit(SCANNER, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "benign")
    assert sweep_hit(SCANNER, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "memory")


def test_a_broken_sweep_file_is_named_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "sw-x.jsonl"
    bad.write_text('{"sweep": "sw-x"}\n{not json\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"sw-x.jsonl:2: not JSON"):
        _load(bad)
    bad.write_text('{"message": "x"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="no header line"):
        _load(bad)


def test_there_are_sweeps() -> None:
    assert len(FILES) >= 10, "the sweeps are fixtures of this repository"
