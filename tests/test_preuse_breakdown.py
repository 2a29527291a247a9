"""tools/preuse_breakdown.py: why fresh rows were missed, from the dev rows of each round only."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from k3doctor.explain.scan import Scanner
from tools import preuse_breakdown as pb

ROOT = Path(__file__).resolve().parents[1]


def _held_out_keys() -> set[tuple[str, str]]:
    keys = set()
    for name in ("errors.jsonl", "benign.jsonl"):
        for line in (pb.CORPUS / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["split"] != "dev":
                keys.add((row["source"], row["excerpt"]))
    return keys


def test_only_dev_rows_are_taken_from_the_rounds() -> None:
    got = pb.rounds(14)
    assert got, "the scored rounds 14 and later have dev rows"
    held_out = _held_out_keys()
    for _n, commit, errors, benign in got:
        assert commit
        for row in errors + benign:
            assert row["split"] == "dev"
            assert (row["source"], row["excerpt"]) not in held_out
        assert all("expected_category" in r for r in errors)


def _has_history() -> bool:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "-q", "HEAD^{commit}"],
                          capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(not _has_history(), reason="needs the git history of the checkout")
def test_a_commit_explains_rows_as_the_scanner_of_its_time(tmp_path: Path) -> None:
    rows = [r for _n, _c, errors, _b in pb.rounds(40) for r in errors][:3]
    got = pb.score_at("HEAD", rows, tmp_path)
    assert got is not None and [a["id"] for a in got] == [r["id"] for r in rows]
    # the package as committed at HEAD is the package here when the checkout is clean (CI's clone)
    clean = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--", "k3doctor"]).returncode == 0
    here = Scanner()
    for row, answer in zip(rows, got):
        assert set(answer) == {"id", "category", "sig", "confidence", "alarms"}
        report = here.explain_bytes(row["excerpt"].encode("utf-8", "surrogateescape"), prefilter=True)
        first = report.matches[0] if report.matches else None
        if clean:
            assert answer["sig"] == (first.sig.id if first else None)
            assert answer["category"] == (first.sig.category if first else None)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True)


def test_an_unknown_commit_is_skipped_not_a_traceback(tmp_path: Path) -> None:
    assert pb.score_at("0" * 40, [], tmp_path) is None


def test_a_first_score_record_that_is_not_json_names_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scores").mkdir()
    (tmp_path / "scores" / "r99-first-score.json").write_text("{not json", encoding="utf-8")
    for name in ("errors.jsonl", "benign.jsonl"):
        (tmp_path / name).write_text("", encoding="utf-8")
    monkeypatch.setattr(pb, "CORPUS", tmp_path)
    with pytest.raises(SystemExit, match="r99-first-score.json"):
        pb.rounds(14)


def test_a_commit_whose_explain_fails_is_skipped_with_its_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a row without an excerpt makes the scorer of any commit fail: reported, not a traceback
    assert pb.score_at("HEAD", [{"id": "x"}], tmp_path) is None
    assert "did not run" in capsys.readouterr().err
    subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True)


def test_rounds_past_the_last_one_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert pb.main(["--from", "100000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no dev rows to explain: no round from 100000 on")
