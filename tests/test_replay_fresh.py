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


def _head() -> str:
    """HEAD's commit (skips the test outside a git checkout)."""
    got = replay_fresh.subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                      text=True)
    if got.returncode != 0:
        pytest.skip("not a git checkout")
    return got.stdout.strip()


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
    head = _head()
    got = replay_fresh.explain_at(head, [
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


def test_tiers_count_what_the_fallback_alone_would_have_said(capsys: pytest.CaptureFixture[str]) -> None:
    """--tiers: per tier, right/answered; a wrong signature answer counted where the fallback alone
    agreed with it or was right; a right weak answer counted where the fallback alone was not."""
    c: replay_fresh.collections.Counter[tuple[str, str]] = replay_fresh.collections.Counter()
    replay_fresh.count_tier(c, "memory", "memory", "cause", "memory")
    replay_fresh.count_tier(c, "network", "other", "generic", "other")      # wrong, fallback agreed
    replay_fresh.count_tier(c, "network", "other", "symptom", "network")    # wrong, fallback right
    replay_fresh.count_tier(c, "version", "version", "generic", None)       # right, fallback silent
    replay_fresh.print_tiers(c)
    out = capsys.readouterr().out
    assert "cause 1/1, generic 1/2, symptom 0/1" in out
    assert "where a signature was wrong (2): the fallback alone named the same category on 1, the right one on 1" in out
    assert "generic or symptom signature: 1 rows gained, 1 lost" in out


def test_explain_at_with_tiers_adds_the_tier_and_the_fallback_alone() -> None:
    head = _head()
    got = replay_fresh.explain_at(head, [
        {"excerpt": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
        {"excerpt": "hello world"}], tiers=True)
    assert got[0][0] == "memory" and got[0][4] in ("cause", "generic", "symptom") and got[0][5] is not None
    assert got[1][0] is None and got[1][4] is None and got[1][5] is None
