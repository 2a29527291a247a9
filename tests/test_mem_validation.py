"""The public receipts: projected vs measured per-rank weights (docs/validation.md)."""

from __future__ import annotations

from k3doctor.memory.validate import evaluate, load_receipts, summary


def test_receipts_accuracy():
    recs = load_receipts()
    assert len([r for r in recs if not r["id"].startswith("seed-")]) >= 15
    for r in recs:
        assert r["model"] and r["launch"] and r["measured"]["line"] and r["source"]
    rows = [evaluate(r) for r in recs]
    s = summary(rows)
    assert s["median_abs_error_pct"] <= 3.0
    assert s["max_abs_error_pct"] <= 10.0
    seed = next(x for x in rows if x["id"].startswith("seed-k3"))
    assert abs(seed["error_pct"]) <= 3.0
