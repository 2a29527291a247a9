"""benchmarks/replay_fresh.py replays fresh rounds' rows against old KBs: held-out rows must never
reach the explainer, and a round's rows are found by their excerpts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import replay_fresh  # noqa: E402


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "collected").mkdir()
    _write(tmp_path / "collected" / "r7_errors.jsonl", [{"excerpt": "dev error"}, {"excerpt": "held error"},
                                                        {"excerpt": "not in corpus"}])
    _write(tmp_path / "collected" / "r7_benign.jsonl", [{"excerpt": "dev notice"}, {"excerpt": "held notice"}])
    _write(tmp_path / "collected" / "r8_errors.jsonl", [{"excerpt": "other round"}])
    _write(tmp_path / "collected" / "r7b_errors.jsonl", [{"excerpt": "second batch"}])
    monkeypatch.setattr(replay_fresh, "CORPUS", tmp_path)
    return tmp_path


def test_round_rows_keep_dev_rows_only(corpus: Path) -> None:
    errors = {"dev error": {"id": "a", "split": "dev", "excerpt": "dev error"},
              "held error": {"id": "b", "split": "heldout", "excerpt": "held error"},
              "other round": {"id": "c", "split": "dev", "excerpt": "other round"},
              "second batch": {"id": "f", "split": "dev", "excerpt": "second batch"}}
    benign = {"dev notice": {"id": "d", "split": "dev", "excerpt": "dev notice"},
              "held notice": {"id": "e", "split": "heldout", "excerpt": "held notice"}}
    assert [r["id"] for r in replay_fresh.round_rows(7, errors, benign=False)] == ["a"]
    assert [r["id"] for r in replay_fresh.round_rows(7, benign, benign=True)] == ["d"]
    assert [r["id"] for r in replay_fresh.round_rows(8, errors, benign=False)] == ["c"]
    assert [r["id"] for r in replay_fresh.round_rows("7b", errors, benign=False)] == ["f"]


def test_records_read_the_kb_commit_in_range(corpus: Path) -> None:
    (corpus / "scores").mkdir()
    for n, commit in (("5", "aaa"), ("7", "bbb"), ("7b", "ccc"), ("9", None)):
        (corpus / "scores" / f"r{n}-first-score.json").write_text(json.dumps({"kb_commit": commit}))
    assert replay_fresh.records(6, 100) == {"7": "bbb", "7b": "ccc"}
    assert replay_fresh.records(0, 6) == {"5": "aaa"}


def test_explain_at_runs_the_committed_package() -> None:
    head = replay_fresh.subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                       text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    got = replay_fresh.explain_at(head.stdout.strip(), [
        {"excerpt": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
        {"excerpt": "hello world"}])
    assert got[0][0] == "memory" and got[1][0] is None


def test_a_commit_without_the_package_is_a_clear_error(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kb_commit git cannot archive (unknown here) is named with the failing command, exit 3."""
    (corpus / "scores").mkdir()
    (corpus / "scores" / "r7-first-score.json").write_text(json.dumps({"kb_commit": "0" * 40}))
    _write(corpus / "errors.jsonl", [{"id": "a", "split": "dev", "excerpt": "dev error"}])
    _write(corpus / "benign.jsonl", [])
    assert replay_fresh.main(["--from-round", "7", "--to-round", "7"]) == 3
    err = capsys.readouterr().err
    assert "0000000000" in err and "git" in err
