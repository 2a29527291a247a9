"""``validate_explain.py --sample ... --json``: the first-score record of freshly collected rows is
written by the script (counts only), not assembled by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import validate_explain  # noqa: E402


def _dev_rows(name: str, n: int) -> list[dict]:
    rows = [json.loads(line) for line in (ROOT / "fixtures/errors" / name).read_text().splitlines() if line.strip()]
    keep = ("source", "engine", "version", "expected_category", "cause", "fix", "excerpt")
    return [{k: r[k] for k in keep} for r in rows if r["split"] == "dev"][:n]


def test_sample_json_has_the_first_score_shape(tmp_path, capsys):
    sample = tmp_path / "rXX_errors.jsonl"
    rows = _dev_rows("errors.jsonl", 3) + _dev_rows("benign.jsonl", 2)
    invented = dict(rows[0], source="https://github.com/example/none/issues/1", excerpt="nothing wrong here at all")
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows + [invented]))
    assert validate_explain.main(["--sample", str(sample), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    err, ben = doc["errors"], doc["benign"]
    assert err["rows"] == 4 and ben["rows"] == 2
    assert err["dev"]["rows"] == 3 and err["heldout"]["rows"] == 0
    assert err["dropped_as_duplicate"]["rows"] == 1  # a row the corpus does not hold
    assert err["silent"] >= 1 and err["top1"] <= 3  # the invented line names no error
    assert sum(n for _h, n in err["by_category"].values()) == 4
    assert ben["dev"]["rows"] == 2 and ben["alarms"] == 0
    assert doc["text_equals_log"] is True
    assert "--sample" in doc["command"] and "--json" in doc["command"]
    assert doc["round"] is None  # ("rXX_": no round number in the file name)
    assert len(doc["kb_commit"] or "0" * 40) == 40


def test_sample_json_names_its_round_and_the_flags_given(tmp_path, capsys):
    sample = tmp_path / "r77_errors.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in _dev_rows("errors.jsonl", 2)))
    flags = ["--sample", str(sample), "--by-project", "--by-split", "--json"]
    assert validate_explain.main(flags) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["round"] == 77
    assert doc["command"].endswith(" ".join(flags))


def test_a_bad_sample_file_is_named_without_a_traceback(tmp_path):
    import pytest

    bad = tmp_path / "rXX_errors.jsonl"
    bad.write_text('{"source": "x", "excerpt": "y", "expected_category": "other"}\nnot json\n')
    with pytest.raises(SystemExit) as exc:
        validate_explain.main(["--sample", str(bad), "--json"])
    assert f"{bad}:2" in str(exc.value) and "not a JSON row" in str(exc.value)
    with pytest.raises(SystemExit) as exc:
        validate_explain.main(["--sample", str(tmp_path / "missing.jsonl")])
    assert "cannot read" in str(exc.value) and "missing.jsonl" in str(exc.value)


def test_dev_only_and_misses_never_score_or_print_held_out_rows(capsys, monkeypatch):
    """Working on rules (``--misses``, ``--dev-only``, with ``--ordering`` and ``--framings`` too)
    must not show a held-out count: the held-out rows are not even explained. The corpus is cut to
    a few dev rows, and every held-out row's text replaced by a marker that no explain may see."""
    real_load = validate_explain.load

    def small(name):
        rows = real_load(name)
        dev = [r for r in rows if r["split"] == "dev"][:12]
        held = [dict(r, excerpt=f"RuntimeError: HELDOUT-MARKER {r['id']}") for r in rows if r["split"] == "heldout"][:12]
        return dev + held

    seen: list[bytes] = []
    real_explain = validate_explain.Scanner.explain_bytes

    def spy(self, data, *args, **kwargs):
        seen.append(data)
        return real_explain(self, data, *args, **kwargs)

    monkeypatch.setattr(validate_explain, "load", small)
    monkeypatch.setattr(validate_explain.Scanner, "explain_bytes", spy)
    for flags in (["--dev-only"], ["--misses"], ["--dev-only", "--json"], ["--dev-only", "--ordering"],
                  ["--dev-only", "--framings"]):
        seen.clear()
        assert validate_explain.main(flags) == 0
        out = capsys.readouterr().out
        assert seen and not any(b"heldout-marker" in d.lower() for d in seen), flags
        assert "heldout" not in out.replace("--dev-only", ""), flags
        if "--json" in flags:
            assert all("dev" in entry and "heldout" not in entry for entry in json.loads(out))
        elif flags[-1] in ("--ordering", "--framings"):
            assert "held-out" not in out, flags
        else:
            assert "held-out 0" in out  # (the corpus line counts only the rows it scored)
    # and without --dev-only the same run does explain them (the marker is seen: the spy works)
    assert validate_explain.main(["--ordering"]) == 0
    assert any(b"heldout-marker" in d.lower() for d in seen)


def test_a_sample_rescored_with_dev_only_or_misses_explains_only_its_dev_rows(tmp_path, capsys, monkeypatch):
    """Two rounds re-ran ``--sample FILES --misses`` while working on rules and were shown their
    round's combined count, held-out rows included: with ``--dev-only`` or ``--misses`` a sample's
    rows that fell on the held-out split (or were dropped) are not even explained. The pre-use
    record (``--json``) stays whole."""
    held = [json.loads(line) for line in (ROOT / "fixtures/errors/errors.jsonl").read_text().splitlines()
            if line.strip() and json.loads(line)["split"] == "heldout"][:2]
    keep = ("source", "engine", "version", "expected_category", "cause", "fix", "excerpt")
    rows = _dev_rows("errors.jsonl", 3) + [{k: r[k] for k in keep} for r in held] + _dev_rows("benign.jsonl", 1)
    sample = tmp_path / "rXX_errors.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))
    held_text = {r["excerpt"].encode("utf-8", "surrogateescape") for r in held}
    seen: list[bytes] = []
    real_explain = validate_explain.Scanner.explain_bytes

    def spy(self, data, *args, **kwargs):
        seen.append(data)
        return real_explain(self, data, *args, **kwargs)

    monkeypatch.setattr(validate_explain.Scanner, "explain_bytes", spy)
    for flags in (["--dev-only"], ["--misses"], ["--dev-only", "--by-split"]):
        seen.clear()
        assert validate_explain.main(["--sample", str(sample), *flags]) == 0
        out = capsys.readouterr().out
        assert "sample: 3 error rows, 1 benign rows" in out and "dev split" in out, flags
        leaked = sum(d in held_text for d in seen)  # (a count: a failure must not print the rows)
        assert seen and leaked == 0, flags
        assert "heldout" not in out and "held-out" not in out, flags
    assert validate_explain.main(["--sample", str(sample), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["errors"]["heldout"]["rows"] == 2


def test_sweeps_table_counts_every_sweep_message(capsys):
    """``--sweeps --json``: one entry per sweep file, its rows counted from the file, totals summed."""
    from fixtures.errors.sweep_files import load_sweep, sweep_files

    assert validate_explain.main(["--sweeps", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    files = sweep_files()
    assert [t["sweep"] for t in doc["sweeps"]] == [load_sweep(p)[0]["sweep"] for p in files]
    assert [t["rows"] for t in doc["sweeps"]] == [len(load_sweep(p)[1]) for p in files]
    for key in ("rows", "before", "now"):
        assert doc["total"][key] == sum(t[key] for t in doc["sweeps"])
    assert all(t["now"] >= t["gate"] * t["rows"] for t in doc["sweeps"])
