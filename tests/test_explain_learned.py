"""The fallback's learned category model (k3doctor/explain/learned.py, kb/fallback-model.json).

The shipped file must be what ``tools/fallback_model.py --write-model`` builds from the corpus's
dev rows and the sweeps (data, not hand-edited numbers); a broken file names itself; the fallback
combines the model's vote with the terms' as documented."""

from __future__ import annotations

import dataclasses
import json
import math
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3doctor.explain.fallback import load_fallback
from k3doctor.explain.kb import KBError
from k3doctor.explain.learned import (KNN_WEIGHT, NB_WEIGHT, TERM_WEIGHT, LearnedModel, features,
                                      load_learned, parse_learned)
from k3doctor.explain.scan import Scanner

SHIPPED = resources.files("k3doctor.explain") / "kb" / "fallback-model.json"


def test_the_shipped_model_is_rebuilt_from_the_dev_rows_and_the_sweeps():
    """Rebuild it and compare: same tokens, weights within rounding, naive Bayes counts exact. A
    collection round that adds dev rows (or a sweep) must rebuild it: ``python
    tools/fallback_model.py --write-model k3doctor/explain/kb/fallback-model.json``."""
    from tools import fallback_model as fm

    base = load_fallback().without_learned()
    examples = fm.extract(fm.dev_rows(), base)
    rebuilt = json.loads(fm.model_json(examples, tuple(fm.sweep_examples(base)), fm.categories(base)))
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    hint = "stale: rebuild with python tools/fallback_model.py --write-model k3doctor/explain/kb/fallback-model.json"
    assert shipped["categories"] == rebuilt["categories"], hint
    assert shipped["examples"] == rebuilt["examples"], hint
    assert set(shipped["weights"]) == set(rebuilt["weights"]), hint
    for tok, ws in rebuilt["weights"].items():
        assert all(abs(a - b) <= 0.002 for a, b in zip(ws, shipped["weights"][tok])), (tok, hint)
    assert all(abs(a - b) <= 0.002 for a, b in zip(rebuilt["bias"], shipped["bias"])), hint
    assert shipped["nb_counts"] == rebuilt["nb_counts"], hint  # counts: exact
    assert shipped["nb_totals"] == rebuilt["nb_totals"] and shipped["nb_alpha"] == rebuilt["nb_alpha"], hint
    assert shipped["knn_k"] == rebuilt["knn_k"] and shipped["knn_vocab"] == rebuilt["knn_vocab"], hint
    assert shipped["knn_examples"] == rebuilt["knn_examples"], hint


def test_the_model_never_reads_a_heldout_row():
    from tools import fallback_model as fm

    assert all(r["split"] == "dev" for r in fm.dev_rows())
    rows = [{"id": "h", "split": "heldout", "thread": "o/r#1", "expected_category": "memory",
             "excerpt": "torch.OutOfMemoryError: CUDA out of memory"}]
    assert fm.extract(rows) == []


def test_the_packaged_fallback_carries_the_model():
    model = load_fallback()
    learned = model.learned_model()
    assert learned is not None and learned is load_learned(tuple(sorted(c.name for c in model.categories)))
    assert set(learned.categories) == {c.name for c in model.categories}
    assert len(learned.weights) > 1000


@pytest.mark.parametrize("text, message", [
    ("", "not JSON"),
    ("[]", "format-1"),
    ('{"format": 2}', "format-1"),
    ('{"format": 1, "categories": ["a", "b"], "bias": [0], "weights": {}}', "one per category"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {"x": [1, 2]}}', "'x'"),
    ('{"format": 1, "categories": ["a"], "bias": ["z"], "weights": {}}', "one per category"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "nb_totals": [1]}', "naive Bayes"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "nb_counts": {}, "nb_totals": [1],'
     ' "nb_alpha": 0}', "positive 'nb_alpha'"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "nb_counts": {"y": [-1]},'
     ' "nb_totals": [1]}', "'y'"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "knn_k": 0, "knn_vocab": [],'
     ' "knn_examples": []}', "positive 'knn_k'"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "knn_k": 3}', "nearest-neighbour"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "knn_k": 3, "knn_vocab": [["t", -1]],'
     ' "knn_examples": []}', "knn_vocab entry"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "knn_k": 3, "knn_vocab": [["t", NaN]],'
     ' "knn_examples": []}', "knn_vocab entry"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "knn_k": 3, "knn_vocab": [["t", 1]],'
     ' "knn_examples": [[0, 1]]}', "knn_examples[0]"),
    ('{"format": 1, "categories": ["a"], "bias": [0], "weights": {}, "knn_k": 3, "knn_vocab": [["t", 1]],'
     ' "knn_examples": [[1, 0]]}', "knn_examples[0]"),
])
def test_a_broken_model_file_names_itself(text, message):
    with pytest.raises(KBError, match="fallback-model.json") as err:
        parse_learned(text)
    assert message in str(err.value)


def test_a_model_for_other_categories_is_refused():
    text = '{"format": 1, "categories": ["network", "memory"], "bias": [0, 0], "weights": {}}'
    with pytest.raises(KBError, match="rebuild"):
        parse_learned(text, categories=["network", "memory", "arch"])


def _toy(category: str, token: str) -> LearnedModel:
    cats = tuple(c.name for c in load_fallback().categories)
    ws = tuple(4.0 if c == category else 0.0 for c in cats)
    return LearnedModel(cats, tuple(0.0 for _ in cats), {token: ws})


def test_the_two_votes_combine_as_documented():
    """0.2 x term score + log P (a model with no naive Bayes part votes with log P alone): a
    confident model outvotes one weak term; strong terms outvote a model that barely leans."""
    base = load_fallback()
    line = "RuntimeError: frobnicate failed while the qqzz socket was busy"
    lines = [("<text>", 1, line)]
    terms = {c: s for s, c, _ in base.score(line, [line])}
    assert max(terms, key=lambda c: terms[c]) == "network"  # "socket" is a network term
    strong = dataclasses.replace(base, learned=_toy("memory", "frobnicate"))
    v = strong.classify(lines, None)
    logp = _toy("memory", "frobnicate").log_posterior(features(line, [line]))
    want = max(sorted(logp), key=lambda c: TERM_WEIGHT * terms.get(c, 0.0) + logp[c])
    assert v is not None and v.category == want == "memory"
    assert v.probability == pytest.approx(math.exp(logp["memory"]))
    assert v.learned_words == ("frobnicate",) and v.terms == ()
    # the model leaning nowhere: the terms decide, and they are quoted
    flat = dataclasses.replace(base, learned=_toy("memory", "zzzunseen"))
    v = flat.classify(lines, None)
    assert v is not None and v.category == "network" and "socket" in v.terms


def test_no_term_and_no_explicit_error_stays_unclassified():
    base = load_fallback()
    assert base.learned_model() is not None
    assert base.classify([("<text>", 1, "Failed to open libqqzz.so")], None) is None


def test_the_cause_names_the_learned_model():
    rep = Scanner(signatures=[], fallback=load_fallback()).explain_bytes(
        b"RuntimeError: something odd happened in ibv_create_qp on mlx5_0")
    m = rep.matches[0]
    assert m.verdict is not None and m.verdict.probability is not None
    assert "the learned model (P = " in m.cause and m.confidence == "low"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gets_a_distribution(text):
    post = load_learned().log_posterior(features(text, [text]))
    assert math.isclose(sum(math.exp(v) for v in post.values()), 1.0, rel_tol=1e-9)


def test_a_damaged_packaged_file_is_named_without_a_traceback(monkeypatch):
    """A KB or model file that does not parse (a damaged install, an edited checkout): exit 3, the
    file and the fix named, no traceback."""
    from click.testing import CliRunner

    from k3doctor.cli import main
    from k3doctor.explain import scan

    def broken() -> None:
        parse_learned("{broken")

    monkeypatch.setattr(scan, "_scanner", broken)
    res = CliRunner().invoke(main, ["explain", "RuntimeError: frob failed"])
    assert res.exit_code == 3, res.output
    assert "fallback-model.json" in res.output and "Reinstall k3doctor" in res.output
    assert "Traceback" not in res.output


def test_write_model_to_an_unwritable_path_names_it(tmp_path, capsys):
    from tools import fallback_model as fm

    target = tmp_path / "no" / "such" / "dir" / "model.json"
    assert fm.main(["--write-model", str(target)]) == 2
    assert str(target) in capsys.readouterr().err


def test_the_packaged_model_is_read_only_when_a_verdict_needs_it(monkeypatch):
    """A text a signature explains never parses the model's JSON (start-up cost); the first
    fallback verdict does, once."""
    from k3doctor.explain import fallback as fb

    calls = []
    monkeypatch.setattr(fb, "load_learned", lambda cats=None: calls.append(1) or load_learned(cats))
    model = fb.load_fallback.__wrapped__()
    assert model.learned is None and model.learned_from_package
    scanner = Scanner(fallback=model)
    scanner.explain_bytes(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert calls == []
    rep = scanner.explain_bytes(b"RuntimeError: frobnicator rejected the widget")
    assert rep.matches and rep.matches[0].verdict is not None
    assert rep.matches[0].verdict.probability is not None and calls == [1]
    scanner.explain_bytes(b"RuntimeError: another frobnicator failure")
    assert calls == [1]


def test_a_packaged_model_for_other_categories_names_the_fix(monkeypatch):
    from k3doctor.explain import fallback as fb

    other = '{"format": 1, "categories": ["network", "memory"], "bias": [0, 0], "weights": {}}'
    monkeypatch.setattr(fb, "load_learned", lambda cats=None: parse_learned(
        other, "kb/fallback-model.json", categories=cats))
    model = fb.load_fallback.__wrapped__()
    with pytest.raises(KBError, match="rebuild it"):
        model.classify([("<text>", 1, "RuntimeError: frob failed")], None)


def test_the_naive_bayes_part_joins_the_vote():
    """vote = log P of the regression + NB_WEIGHT x log P of naive Bayes; a naive Bayes part that
    leans hard towards a category tips a regression that does not lean; the shipped file has one."""
    cats = tuple(c.name for c in load_fallback().categories)
    lr = LearnedModel(cats, tuple(0.0 for _ in cats), {"frobnicate": tuple(0.0 for _ in cats)})
    counts = {"frobnicate": tuple(400.0 if c == "memory" else 0.0 for c in cats)}
    both = dataclasses.replace(lr, nb_counts=counts, nb_totals=tuple(400.0 for _ in cats))
    line = "RuntimeError: frobnicate failed"
    feats = features(line, [line])
    assert lr.vote(feats) == lr.log_posterior(feats)  # no naive Bayes part: the regression alone
    nb = both.nb_log_posterior(feats)
    assert nb is not None and max(nb, key=lambda c: nb[c]) == "memory"
    vote = both.vote(feats)
    assert all(vote[c] == pytest.approx(both.log_posterior(feats)[c] + NB_WEIGHT * nb[c]) for c in cats)
    assert both.vote(feats, both.log_posterior(feats)) == vote  # the caller's log P, not a second one
    v = dataclasses.replace(load_fallback(), learned=both).classify([("<text>", 1, line)], None)
    assert v is not None and v.category == "memory"
    shipped = load_learned()
    assert shipped is not None and shipped.nb_totals and set(shipped.nb_counts) == set(shipped.weights)



def test_the_nearest_neighbours_join_the_vote():
    """vote = regression + NB_WEIGHT x naive Bayes + KNN_WEIGHT x nearest neighbours; examples
    worded like the verdict's line tip a regression that does not lean; an unrelated line gets the
    smoothed, even vote; the shipped file has the part."""
    cats = tuple(c.name for c in load_fallback().categories)
    lr = LearnedModel(cats, tuple(0.0 for _ in cats), {"frobnicate": tuple(0.0 for _ in cats)})
    mem, net = cats.index("memory"), cats.index("network")
    idf = {"frobnicate": 1.0, "widget": 2.0, "socket": 2.0}
    examples = ((mem, ("frobnicate", "widget")), (mem, ("frobnicate", "widget")), (net, ("socket",)))
    knn = dataclasses.replace(lr, knn_k=2, knn_idf=idf, knn_examples=examples)
    line = "RuntimeError: frobnicate widget failed"
    feats = features(line, [line])
    part = knn.knn_log_posterior(feats)
    assert lr.knn_log_posterior(feats) is None and part is not None
    assert max(part, key=lambda c: part[c]) == "memory"
    assert sum(math.exp(v) for v in part.values()) == pytest.approx(1.0)
    vote = knn.vote(feats)
    assert all(vote[c] == pytest.approx(knn.log_posterior(feats)[c] + KNN_WEIGHT * part[c]) for c in cats)
    v = dataclasses.replace(load_fallback(), learned=knn).classify([("<text>", 1, line)], None)
    assert v is not None and v.category == "memory"
    other = knn.knn_log_posterior(features("RuntimeError: gizmo failed", []))
    assert other is not None and len({round(x, 9) for x in other.values()}) == 1  # no neighbour: even
    shipped = load_learned()
    assert shipped is not None and shipped.knn_k > 0 and len(shipped.knn_examples) > 1000


def test_the_tool_and_the_packaged_model_compute_the_same_posteriors():
    """tools/fallback_model.py measures with its own training-time dicts; the package reads the
    file model_json writes. Both must give the same log P (regression: within the file's rounding of
    the weights; naive Bayes: exactly), or the measurements describe another model than the shipped
    one."""
    from tools import fallback_model as fm

    cats = fm.categories()
    lines = [("t1", "memory", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"),
             ("t2", "memory", "RuntimeError: CUDA out of memory while allocating the KV cache"),
             ("t3", "network", "RuntimeError: NCCL error: unhandled system error, socket closed"),
             ("t4", "network", "torch.distributed.DistBackendError: NCCL socket timeout on rank 3"),
             ("t5", "version", "ImportError: undefined symbol in flash_attn_2_cuda, torch mismatch"),
             ("t6", "version", "ImportError: undefined symbol _ZN3c10 in vllm._C, rebuild for torch")]
    examples = [fm.Example(t, t, want, text, (text,)) for t, want, text in lines]
    data = [(e.thread, e.want, features(e.salient, e.others)) for e in examples]
    lr, nb = fm.train_lr(data, cats), fm.train_nb(data, cats)
    shipped = parse_learned(fm.model_json(examples, (), cats))
    for _, _, text in lines + [("x", "", "RuntimeError: CUDA out of memory on the NCCL socket")]:
        f = features(text, [text])
        want_lr, want_nb = fm.lr_log_posterior(lr, f), fm.nb_log_posterior(nb, f)
        got_nb = shipped.nb_log_posterior(f)
        assert got_nb is not None
        assert all(shipped.log_posterior(f)[c] == pytest.approx(want_lr[c], abs=0.05) for c in cats)
        assert all(got_nb[c] == pytest.approx(want_nb[c], abs=1e-9) for c in cats)
        knn = fm.train_knn(data, cats)
        got_knn = shipped.knn_log_posterior(f)
        want_knn = fm.knn_log_posterior(knn, f)
        assert got_knn is not None and all(got_knn[c] == pytest.approx(want_knn[c], abs=1e-9) for c in cats)
        every = fm.all_log_posterior({"lr": lr, "nb": nb, "knn": knn}, f)
        assert max(cats, key=lambda c: every[c]) == max(cats, key=lambda c: shipped.vote(f)[c])
