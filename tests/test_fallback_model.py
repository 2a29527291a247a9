"""tools/fallback_model.py: the corpus-learned fallback category models and their measurement.

docs/validation.md, "Round 17" and "Learned fallback", say which one ``explain`` ships and why
(tests/test_explain_learned.py checks the shipped file); these tests keep the measurement tool
honest: dev rows only, deterministic output, no traceback on odd input."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3doctor.explain.fallback import load_fallback
from tools import fallback_model as fm

CATS = fm.categories()


def _synthetic() -> list[tuple[str, str, dict[str, int]]]:
    lines = {
        "network": ["NCCL WARN socket connect to peer timed out", "Connection refused by TCPStore",
                    "Gloo connectFullMesh failed: socket timed out"],
        "memory": ["torch.OutOfMemoryError: CUDA out of memory", "RuntimeError: out of memory on device",
                   "Not enough memory for the KV cache"],
        "version": ["ImportError: undefined symbol in flash_attn", "version mismatch between torch and vllm",
                    "undefined symbol: _ZN3c10 version"],
    }
    out = []
    for cat, texts in lines.items():
        for n, text in enumerate(texts):
            out.append((f"o/r#{cat}{n}", cat, fm.features(text, [])))
    return out


def test_tokens_split_identifiers_and_lower_case():
    toks = fm.tokens("torch.distributed.DistBackendError: ncclSystemError CUDA_ERROR_ILLEGAL_ADDRESS")
    for want in ("distbackenderror", "dist", "backend", "error", "ncclsystemerror", "nccl", "system",
                 "cuda_error_illegal_address", "cuda", "illegal", "address", "torch", "distributed"):
        assert want in toks, want
    assert toks == sorted(set(toks))


def test_tokens_drop_numbers_ids_prefixes_and_source_paths():
    line = ("(VllmWorker rank=3 pid=12345) ERROR 03-30 23:51:21 [worker.py:42] deadbeef1234 "
            "failed at /usr/lib/python3/site-packages/vllm/worker/model_runner.py:1234 with 0x7f3a")
    toks = fm.tokens(line)
    assert "failed" in toks
    for gone in ("vllmworker", "rank", "pid", "deadbeef1234", "model_runner", "site", "packages",
                 "the", "with"):
        assert gone not in toks, gone
    assert not any(t[0].isdigit() for t in toks)
    assert fm.tokens("123 456 0x00ff 2026-01-01 12:00:00") == []


@pytest.mark.parametrize("text", ["", " ", "\x00\xff\ufffd", "a" * 100_000, "::::////....", "é中文 ß",
                                  "_" * 500, "A_B_C_D", "\n\n\r\t"])
def test_odd_input_no_traceback(text):
    f = fm.features(text, [text, "", text[:10]])
    assert all(isinstance(v, int) and 1 <= v <= fm.CAP for v in f.values())
    model = fm.train_nb(_synthetic(), CATS)
    post = fm.nb_log_posterior(model, f)
    assert set(post) == set(CATS)
    assert math.isclose(sum(math.exp(v) for v in post.values()), 1.0, rel_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400))
def test_any_text_features_and_posteriors(text):
    model = fm.train_nb(_synthetic(), CATS)
    post = fm.nb_log_posterior(model, fm.features(text, [text]))
    assert max(post.values()) <= 1e-9


def test_naive_bayes_learns_categories():
    # the pruning keeps tokens of 2+ threads: the synthetic lines share their category words
    model = fm.train_nb(_synthetic(), CATS)
    for text, want in [("socket timed out connecting to TCPStore peer", "network"),
                       ("CUDA out of memory while allocating", "memory"),
                       ("undefined symbol after a version upgrade", "version")]:
        post = fm.nb_log_posterior(model, fm.features(text, []))
        assert max(post, key=lambda c: post[c]) == want, (text, post)
    # negative: a line with no known token has a flat (uniform-prior) posterior
    flat = fm.nb_log_posterior(model, fm.features("zzqx wwvy", []))
    assert max(flat.values()) - min(flat.values()) < 1e-9


def test_logistic_regression_learns_categories():
    model = fm.train_lr(_synthetic(), CATS)
    post = fm.lr_log_posterior(model, fm.features("CUDA out of memory", []))
    assert max(post, key=lambda c: post[c]) == "memory"


def test_training_is_deterministic_and_order_free():
    data = _synthetic()
    shuffled = list(data)
    random.Random(7).shuffle(shuffled)
    assert fm.dump(fm.train_nb(data, CATS)) == fm.dump(fm.train_nb(shuffled, CATS))
    a, b = fm.train_lr(data, CATS), fm.train_lr(shuffled, CATS)
    assert a["b"] == b["b"] and {c: dict(w) for c, w in a["w"].items()} == {c: dict(w) for c, w in b["w"].items()}


def test_dev_rows_only(tmp_path):
    rows = [{"id": "a", "split": "dev", "thread": "o/r#1", "expected_category": "memory",
             "excerpt": "torch.OutOfMemoryError: CUDA out of memory"},
            {"id": "b", "split": "heldout", "thread": "o/r#2", "expected_category": "network",
             "excerpt": "RuntimeError: NCCL error: unhandled system error"}]
    path = tmp_path / "errors.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    got = fm.dev_rows(path)
    assert [r["id"] for r in got] == ["a"]
    ex = fm.extract(rows)  # a held-out row handed in by mistake is skipped unread
    assert [e.row_id for e in ex] == ["a"]
    assert ex[0].want == "memory" and "out of memory" in ex[0].salient


def test_extract_matches_the_fallback_verdict():
    """The learned model sees exactly the line the fallback reports (FallbackModel.salient)."""
    from k3doctor.explain.scan import Scanner

    rows = fm.dev_rows()[:60]
    alone = Scanner(signatures=[], fallback=load_fallback())
    by_id = {e.row_id: e for e in fm.extract(rows)}
    for r in rows:
        rep = alone.explain_bytes(r["excerpt"].encode("utf-8", "surrogateescape"))
        fb = [m for m in rep.matches if m.verdict is not None]
        assert bool(fb) == (r["id"] in by_id), r["id"]
        if fb:
            assert fb[0].verdict.line == by_id[r["id"]].salient.strip()[:400]


def test_folds_are_by_thread():
    threads = [f"o/r#{n}" for n in range(200)]
    folds = {t: fm.fold_of(t) for t in threads}
    assert set(folds.values()) == set(range(fm.FOLDS))
    assert all(fm.fold_of(t) == folds[t] for t in threads)


def test_generator_is_deterministic(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert fm.main(["--write", str(a)]) == 0
    assert fm.main(["--write", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    model = json.loads(a.read_text(encoding="utf-8"))
    assert model["categories"] == CATS and len(model["threads"]) == len(CATS)
    assert all(len(v) == len(CATS) and sum(v) >= fm.MIN_THREADS for v in model["tokens"].values())
