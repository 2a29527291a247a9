"""A corpus-learned category model for the explain fallback, measured against the hand terms.

The fallback (``k3doctor/explain/fallback.py``) names the category of an error no signature
explains from hand-weighted literal terms (``kb/fallback.toml``). This tool learns the same
decision from the development corpus and measures, on development rows only, whether the learned
model (alone or combined with the terms) would choose better categories than the terms do:

    python tools/fallback_model.py                  # both validations below (about 1 minute)
    python tools/fallback_model.py --cv             # 5-fold cross-validation by thread only
    python tools/fallback_model.py --rounds         # the by-round validation only (needs git)
    python tools/fallback_model.py --write PATH     # the naive Bayes model of all dev rows, JSON

**Rows.** Only ``split == "dev"`` rows of ``fixtures/errors/errors.jsonl`` are read. Each is run
through the fallback alone (no signature, as ``validate_explain.py --fallback-only``); where the
fallback gives a verdict, the salient error line and the other error lines it classifies are
taken exactly as :meth:`FallbackModel.salient` picks them. The learned model only chooses the
category of such a verdict: which lines are error lines, and whether there is a verdict at all,
stay the fallback's (so benign alarms cannot move).

**Features.** The tokens of those lines after the fallback's own normalisation (log prefixes
stripped, source paths dropped): words starting with a letter, lower-cased, plus the parts of an
identifier (``ncclSystemError`` -> nccl, system, error; ``CUDA_ERROR_ILLEGAL_ADDRESS`` -> cuda,
error, illegal, address); numbers, hex ids, tokens with more than 4 digits, one-letter tokens
and a few function words dropped; plus the adjacent-word pairs of the salient line. Salient-line
tokens weigh 2, the other lines' 1, capped at 3 per token.

**Models.** (1) multinomial naive Bayes: per category, the summed token weights of its threads
(each thread counted once per category: several rows of one thread are one piece of evidence),
Laplace smoothing, uniform prior, tokens held by fewer than 2 threads pruned; (2) multinomial
logistic regression (binary features, L2-normalised, 30 epochs of plain SGD in a fixed order):
pure Python, deterministic. **Combinations** with the terms (fixed before measuring): the model
alone; the model only where no term occurs (the terms' ``other``); the sum ``beta x term score +
log P(category)``; the model choosing among the categories whose term score is within 2 of the
best; the model where its probability exceeds 0.8.

**Validations (dev rows only).**

- ``--cv``: 5 folds by thread (``sha256(thread) mod 5``), the model retrained per fold without
  the fold's threads. The hand terms cannot be retrained, so they are scored leave-thread-out as
  in ``validate_explain.py --fallback-only``: for each row, the terms that occur in no other dev
  thread are removed. This favours the terms (their choice and weights were made reading every
  dev row).
- ``--rounds``: fair to both. For each collection round after the first (the files
  ``fixtures/errors/collected/r*_*.jsonl`` in the order git added them), the dev rows the round
  brought are classified by the terms as committed just before the round was added (``git show
  <commit>^:k3doctor/explain/kb/fallback.toml``) and by a model trained on the dev rows the
  corpus held at that commit (their ids read from ``git show <commit>^:.../errors.jsonl``, dev
  rows only). Neither saw the round.

``--sweeps`` adds the source sweeps' messages (``fixtures/errors/sweeps/``, each labelled with the
category of its cause; benign ones left out) to every model's training data, each message its own
"thread". They are engine source text, not corpus rows, so neither validation's test rows are in
them; the terms are scored as before. This asks whether 1,900 more labelled messages make the
learned model beat the hand terms on rows it has not seen.

``--write-model PATH`` writes the model ``explain`` ships (``k3doctor/explain/kb/fallback-model.json``):
the logistic regression trained on every dev verdict and every sweep verdict, with the naive Bayes
counts (seventeenth session) and the nearest-neighbour examples (eighteenth session) of the same
verdicts. Adopted after the ``--sweeps`` measurements (docs/validation.md, "Learned fallback"); ``tests/test_explain_learned.py``
rebuilds it and compares.

``--write`` writes the naive Bayes model trained on every dev row as sorted, indented JSON (the
same file for the same corpus and fallback markers; ``tests/test_fallback_model.py`` checks it
is deterministic). It is not shipped (``--write-model`` writes what is).

``--final-heldout`` prints held-out AGGREGATES (counts only) of the fallback alone with the terms
and with the learned candidates: for the write-up, once, after the design is frozen; never to
choose between alternatives (see /work/briefs/common.md's held-out discipline).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from k3doctor.explain import learned as _learned  # noqa: E402
from k3doctor.explain.fallback import (  # noqa: E402
    _EXPLICIT, LINE_CHARS, FallbackModel, load_fallback, parse_fallback_text)

ERRORS = ROOT / "fixtures" / "errors" / "errors.jsonl"
FOLDS = 5
MIN_THREADS = 2          # a token held by fewer dev threads is pruned (it cannot generalise)
ALPHA = 1.0              # Laplace smoothing of the naive Bayes counts
SALIENT_WEIGHT = 2
CAP = 3

# the features are the shipped model's own (k3doctor/explain/learned.py): one implementation
tokens, pairs, features, CAP, SALIENT_WEIGHT = (_learned.tokens, _learned.pairs, _learned.features,
                                              _learned.CAP, _learned.SALIENT_WEIGHT)


@dataclasses.dataclass(frozen=True)
class Example:
    """One dev error row (or sweep message) with a fallback verdict: what the fallback classifies."""

    row_id: str
    thread: str
    want: str
    salient: str
    others: tuple[str, ...]


# -- the dev rows --------------------------------------------------------------------------------
def dev_rows(path: Path = ERRORS) -> list[dict[str, Any]]:
    """The ``split == "dev"`` error rows (a held-out row is dropped before anything reads it)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("split") == "dev":
                rows.append(r)
    return rows


def extract(rows: list[dict[str, Any]], model: FallbackModel | None = None,
            split: str = "dev") -> list[Example]:
    """The rows of ``split`` the fallback alone gives a verdict on, with the lines it classifies
    (a row of another split is skipped unread)."""
    from k3doctor.explain.scan import Scanner

    base = model or load_fallback()
    rec = base.without_learned()  # (which lines give a verdict: the model has no say)
    seen: list[tuple[tuple[str, int, str], list[str]]] = []
    plain = rec.classify

    def classify(lines: list[tuple[str, int, str]], last: tuple[str, int, str] | None) -> Any:
        verdict = plain(lines, last)
        if verdict is not None:
            picked = rec.salient(lines, last)
            assert picked is not None
            seen.append(picked)
        return verdict

    rec.classify = classify  # type: ignore[method-assign]
    scanner = Scanner(signatures=[], fallback=rec)
    out = []
    for r in rows:
        if r.get("split") != split:
            continue
        seen.clear()
        scanner.explain_bytes(r["excerpt"].encode("utf-8", "surrogateescape"))
        if seen:
            (_, _, sal), texts = seen[-1]
            out.append(Example(r["id"], r["thread"], r["expected_category"], sal, tuple(texts)))
    return out


def sweep_examples(model: FallbackModel | None = None) -> list[Example]:
    """The source sweeps' error messages the fallback alone gives a verdict on, each its own thread."""
    from fixtures.errors.sweep_files import load_sweep, sweep_files

    rows = []
    for path in sweep_files():
        for n, r in enumerate(load_sweep(path)[1], 1):
            if r.get("category") and r["category"] != "benign" and r.get("message"):
                rows.append({"id": f"{path.stem}:{n}", "thread": f"sweep:{path.stem}:{n}",
                             "expected_category": r["category"], "excerpt": r["message"],
                             "split": "sweep"})
    return extract(rows, model, split="sweep")


def categories(model: FallbackModel | None = None) -> list[str]:
    return [c.name for c in (model or load_fallback()).categories]


# -- naive Bayes ---------------------------------------------------------------------------------
def _per_thread(data: list[tuple[str, str, dict[str, int]]]) -> dict[tuple[str, str], dict[str, int]]:
    per: dict[tuple[str, str], dict[str, int]] = {}
    for thread, cat, f in data:
        d = per.setdefault((thread, cat), {})
        for k, v in f.items():
            d[k] = max(d.get(k, 0), v)
    return per


def train_nb(data: list[tuple[str, str, dict[str, int]]], cats: list[str]) -> dict[str, Any]:
    """The naive Bayes model of ``(thread, category, features)`` as plain, sorted JSON data."""
    per = _per_thread(data)
    df = collections.Counter(k for d in per.values() for k in d)
    vocab = sorted(k for k, n in df.items() if n >= MIN_THREADS)
    index = {c: i for i, c in enumerate(cats)}
    counts = {k: [0] * len(cats) for k in vocab}
    threads = [0] * len(cats)
    for (_, cat), d in sorted(per.items()):
        threads[index[cat]] += 1
        for k, v in d.items():
            if k in counts:
                counts[k][index[cat]] += v
    totals = [sum(c[i] for c in counts.values()) for i in range(len(cats))]
    return {"format": 1, "categories": cats, "alpha": ALPHA, "min_threads": MIN_THREADS,
            "threads": threads, "totals": totals, "tokens": counts}


def nb_log_posterior(model: dict[str, Any], feats: dict[str, int]) -> dict[str, float]:
    """log P(category | features) under a :func:`train_nb` model (uniform prior)."""
    cats, alpha, counts = model["categories"], model["alpha"], model["tokens"]
    v = len(counts)
    scores = []
    for i, _ in enumerate(cats):
        denom = math.log(model["totals"][i] + alpha * v)
        scores.append(sum(w * (math.log(counts[k][i] + alpha) - denom)
                          for k, w in feats.items() if k in counts))
    return _normalise(cats, scores)


def _normalise(cats: list[str], scores: list[float]) -> dict[str, float]:
    top = max(scores)
    z = top + math.log(sum(math.exp(s - top) for s in scores))
    return {c: s - z for c, s in zip(cats, scores)}


# -- logistic regression -------------------------------------------------------------------------
def train_lr(data: list[tuple[str, str, dict[str, int]]], cats: list[str], epochs: int = 30,
             rate: float = 0.5, l2: float = 1e-4) -> dict[str, Any]:
    """Multinomial logistic regression on binary, L2-normalised features (plain SGD, fixed order)."""
    per = _per_thread(data)
    df = collections.Counter(k for d in per.values() for k in d)
    vocab = {k for k, n in df.items() if n >= MIN_THREADS}
    w: dict[str, dict[str, float]] = {c: collections.defaultdict(float) for c in cats}
    b = {c: 0.0 for c in cats}
    xs = []
    for (_, cat), d in sorted(per.items()):
        keys = sorted(k for k in d if k in vocab)
        xs.append((keys, 1 / math.sqrt(len(keys)) if keys else 0.0, cat))
    for epoch in range(epochs):
        eta = rate / (1 + 0.1 * epoch)
        for keys, x, want in xs:
            s = [b[c] + sum(w[c][k] for k in keys) * x for c in cats]
            p = _normalise(cats, s)
            for c in cats:
                g = math.exp(p[c]) - (c == want)
                b[c] -= eta * g
                wc = w[c]
                for k in keys:
                    wc[k] -= eta * (g * x + l2 * wc[k])
    return {"lr": True, "categories": cats, "vocab": vocab, "w": w, "b": b}


def lr_log_posterior(model: dict[str, Any], feats: dict[str, int]) -> dict[str, float]:
    keys = [k for k in feats if k in model["vocab"]]
    x = 1 / math.sqrt(len(keys)) if keys else 0.0
    cats = model["categories"]
    return _normalise(cats, [model["b"][c] + sum(model["w"][c].get(k, 0.0) for k in keys) * x
                             for c in cats])


def train_both(data: list[tuple[str, str, dict[str, int]]], cats: list[str]) -> dict[str, Any]:
    """The logistic regression and the naive Bayes model of the same data (the seventeenth
    session's shipped learner)."""
    return {"lr": train_lr(data, cats), "nb": train_nb(data, cats)}


def both_log_posterior(model: dict[str, Any], feats: dict[str, int]) -> dict[str, float]:
    """log P of the regression + ``NB_WEIGHT`` x log P of naive Bayes, renormalised (the
    seventeenth session's vote; :func:`all_log_posterior` adds the nearest neighbours)."""
    lr, nb = lr_log_posterior(model["lr"], feats), nb_log_posterior(model["nb"], feats)
    cats = model["lr"]["categories"]
    return _normalise(cats, [lr[c] + _learned.NB_WEIGHT * nb[c] for c in cats])


# -- nearest neighbours ---------------------------------------------------------------------------
KNN_K = 20               # how many nearest examples vote (the file's knn_k)


def train_knn(data: list[tuple[str, str, dict[str, int]]], cats: list[str]) -> dict[str, Any]:
    """The nearest-neighbour part: per (thread, category) example its tokens that at least
    ``MIN_THREADS`` examples hold, and their idf (log of examples / examples holding it, rounded to
    4 decimals as the file keeps it)."""
    per = _per_thread(data)
    df = collections.Counter(k for d in per.values() for k in d)
    n = len(per)
    idf = {k: round(math.log(n / c), 4) for k, c in sorted(df.items()) if c >= MIN_THREADS}
    index = {c: i for i, c in enumerate(cats)}
    examples = [(index[cat], tuple(sorted(k for k in d if k in idf))) for (_, cat), d in sorted(per.items())]
    labels = [c for c, _ in examples]
    return {"categories": cats, "k": KNN_K, "idf": idf, "examples": examples, "labels": labels,
            "index": _learned.knn_index(idf, (t for _, t in examples))}


def knn_log_posterior(model: dict[str, Any], feats: dict[str, int]) -> dict[str, float]:
    return _learned.knn_log_posterior(model["categories"], model["labels"], model["idf"],
                                      model["index"], model["k"], feats)


def train_all(data: list[tuple[str, str, dict[str, int]]], cats: list[str]) -> dict[str, Any]:
    """The shipped learner: the regression, naive Bayes and the nearest neighbours of the same data."""
    return {**train_both(data, cats), "knn": train_knn(data, cats)}


def all_log_posterior(model: dict[str, Any], feats: dict[str, int]) -> dict[str, float]:
    """The shipped vote, renormalised: log P of the regression + ``NB_WEIGHT`` x naive Bayes +
    ``KNN_WEIGHT`` x nearest neighbours (:meth:`LearnedModel.vote
    <k3doctor.explain.learned.LearnedModel.vote>`, up to a constant)."""
    both, knn = both_log_posterior(model, feats), knn_log_posterior(model["knn"], feats)
    cats = model["lr"]["categories"]
    return _normalise(cats, [both[c] + _learned.KNN_WEIGHT * knn[c] for c in cats])


LEARNERS: dict[str, tuple[Callable[..., dict[str, Any]], Callable[..., dict[str, float]]]] = {
    "naive Bayes": (train_nb, nb_log_posterior),
    "logistic regression": (train_lr, lr_log_posterior),
    "LR + 0.1 x NB": (train_both, both_log_posterior),
    "LR + 0.1 x NB + kNN (shipped)": (train_all, all_log_posterior),
}


# -- the terms, and the combinations -------------------------------------------------------------
def term_scores(model: FallbackModel, ex: Example) -> dict[str, float]:
    return {c: s for s, c, _ in model.score(ex.salient, list(ex.others))}


def term_pick(model: FallbackModel, scores: dict[str, float], salient: str) -> str | None:
    """The terms' category, as :meth:`FallbackModel.classify` picks it (None: no verdict)."""
    if scores:
        order = {c.name: i for i, c in enumerate(model.categories)}
        return min(scores, key=lambda c: (-scores[c], order[c]))
    if model.is_exception_line(salient) or _EXPLICIT.search(salient[:LINE_CHARS]):
        return "other"
    return None


Combo = Callable[[str | None, dict[str, float], dict[str, float]], str | None]


def _sum(beta: float) -> Combo:
    def pick(t: str | None, ts: dict[str, float], p: dict[str, float]) -> str | None:
        return None if t is None else max(sorted(p), key=lambda c: beta * ts.get(c, 0.0) + p[c])
    return pick


def _margin(m: float) -> Combo:
    def pick(t: str | None, ts: dict[str, float], p: dict[str, float]) -> str | None:
        if t is None or not ts:
            return t
        best = max(ts.values())
        near = sorted(c for c, v in ts.items() if v >= best - m)
        return t if len(near) == 1 else max(near, key=lambda c: p[c])
    return pick


def _confident(th: float) -> Combo:
    def pick(t: str | None, ts: dict[str, float], p: dict[str, float]) -> str | None:
        if t is None:
            return None
        top = max(sorted(p), key=lambda c: p[c])
        return top if math.exp(p[top]) > th else t
    return pick


COMBOS: dict[str, Combo] = {
    "terms alone": lambda t, ts, p: t,
    "model alone": lambda t, ts, p: None if t is None else max(sorted(p), key=lambda c: p[c]),
    "model where no term": lambda t, ts, p: (max(sorted(p), key=lambda c: p[c])
                                             if t is not None and not ts else t),
    "terms x0.2 + log P (shipped)": _sum(0.2),
    "terms x0.3 + log P": _sum(0.3),
    "terms x1 + log P": _sum(1.0),
    "terms x3 + log P": _sum(3.0),
    "model among terms within 2": _margin(2.0),
    "model where P > 0.8": _confident(0.8),
}


# -- validation ----------------------------------------------------------------------------------
def fold_of(thread: str, k: int = FOLDS) -> int:
    return int(hashlib.sha256(thread.encode()).hexdigest(), 16) % k


def loo_models(base: FallbackModel, rows: list[dict[str, Any]]) -> dict[str, FallbackModel]:
    """thread -> the fallback model without the terms that occur in no other dev thread (as
    ``validate_explain.py --fallback-only``'s leave-thread-out figure); only threads that own one."""
    from benchmarks.validate_explain import term_support

    support = term_support(base, rows)
    own: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
    for key, threads in support.items():
        if len(threads) == 1:
            own[next(iter(threads))].add(key)
    out = {}
    for thread, keys in own.items():
        cats = tuple(dataclasses.replace(c, terms=tuple(t for t in c.terms if (c.name, t.text) not in keys))
                     for c in base.categories)
        out[thread] = dataclasses.replace(base, categories=cats)
    return out


def cross_validate(examples: list[Example], base: FallbackModel, rows: list[dict[str, Any]],
                   learner: str, k: int = FOLDS, extra: tuple[Example, ...] = ()) -> collections.Counter[str]:
    """Hits per combination, k folds by thread, terms leave-thread-out."""
    train, posterior = LEARNERS[learner]
    cats = categories(base)
    feats = [features(e.salient, e.others) for e in examples]
    loo = loo_models(base, rows)
    hits: collections.Counter[str] = collections.Counter()
    for fold in range(k):
        model = train([(e.thread, e.want, f) for e, f in zip(examples, feats)
                       if fold_of(e.thread, k) != fold] + _data(extra), cats)
        for e, f in zip(examples, feats):
            if fold_of(e.thread, k) != fold:
                continue
            terms = loo.get(e.thread, base)
            ts = term_scores(terms, e)
            t = term_pick(terms, ts, e.salient)
            p = posterior(model, f)
            _count(hits, t, ts, p, e.want)
    return hits


def _count(hits: collections.Counter[str], t: str | None, ts: dict[str, float], p: dict[str, float],
           want: str) -> None:
    """Hits per combination, and per combination the rows it gains (``+name``: right where the
    terms alone are wrong) and loses (``-name``) against the terms alone."""
    base_ok = t == want
    for name, combo in COMBOS.items():
        ok = combo(t, ts, p) == want
        hits[name] += ok
        hits["+" + name] += ok and not base_ok
        hits["-" + name] += base_ok and not ok


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=True).stdout


def rounds(rows: list[dict[str, Any]]) -> list[tuple[str, list[str], set[str], set[str]]]:
    """(commit, files, dev ids the corpus held before it, dev ids the round brought) per round
    that added ``collected/r*_*.jsonl`` error files, oldest first. Ids only; dev rows only."""
    from fixtures.errors.build_corpus import row_id

    dev = {r["id"] for r in rows}
    added: dict[str, list[str]] = collections.defaultdict(list)
    for path in sorted((ROOT / "fixtures" / "errors" / "collected").glob("r*_*.jsonl")):
        if "benign" in path.name:
            continue
        log = _git("log", "--diff-filter=A", "--format=%H", "--", str(path.relative_to(ROOT))).split()
        if log:
            added[log[-1]].append(path.name)
    out = []
    for commit in sorted(added, key=lambda c: int(_git("log", "-1", "--format=%ct", c))):
        try:
            before_text = _git("show", f"{commit}^:fixtures/errors/errors.jsonl")
        except subprocess.CalledProcessError:
            continue  # the corpus did not exist before this round
        before = set()
        for line in before_text.splitlines():
            if line.strip():
                r = json.loads(line)
                if r.get("split") == "dev":
                    before.add(r["id"])
        new = set()
        for name in added[commit]:
            for line in (ROOT / "fixtures" / "errors" / "collected" / name).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    rid = row_id(r["source"], r["excerpt"])
                    if rid in dev and rid not in before:
                        new.add(rid)
        out.append((commit, added[commit], before & dev, new))
    return out


def _data(extra: tuple[Example, ...]) -> list[tuple[str, str, dict[str, int]]]:
    return [(e.thread, e.want, features(e.salient, e.others)) for e in extra]


def by_round(examples: list[Example], base: FallbackModel, rows: list[dict[str, Any]],
             learner: str, extra: tuple[Example, ...] = (),
             first: int = 0) -> tuple[int, collections.Counter[str], list[str]]:
    """Hits per combination over the dev rows of each round, terms and model as of before it."""
    train, posterior = LEARNERS[learner]
    cats = categories(base)
    feats = {e.row_id: features(e.salient, e.others) for e in examples}
    hits: collections.Counter[str] = collections.Counter()
    n = 0
    lines = []
    extra_data = _data(extra)
    trained: dict[frozenset[str], dict[str, Any]] = {}  # rounds of one batch share their "before"
    for commit, files, before, new in rounds(rows):
        if first and not any(_round_number(f) >= first for f in files):
            continue
        old = parse_fallback_text(_git("show", f"{commit}^:k3doctor/explain/kb/fallback.toml"),
                                  sum_duplicates=True)
        terms = dataclasses.replace(base, categories=old.categories)
        key = frozenset(before)
        if key not in trained:
            trained[key] = train([(e.thread, e.want, feats[e.row_id]) for e in examples
                                  if e.row_id in before] + extra_data, cats)
        model = trained[key]
        test = [e for e in examples if e.row_id in new]
        got: collections.Counter[str] = collections.Counter()
        for e in test:
            ts = term_scores(terms, e)
            t = term_pick(terms, ts, e.salient)
            p = posterior(model, feats[e.row_id])
            _count(got, t, ts, p, e.want)
        n += len(test)
        hits.update(got)
        lines.append(f"  {commit[:8]} {','.join(f.removesuffix('.jsonl') for f in files)}: train "
                     f"{sum(e.row_id in before for e in examples)}, test {len(test)}, terms "
                     f"{got['terms alone']}, model alone {got['model alone']}")
    return n, hits, lines


def _round_number(name: str) -> int:
    m = re.match(r"r(\d+)", name)
    return int(m.group(1)) if m else 0


def _table(title: str, n: int, results: dict[str, collections.Counter[str]]) -> None:
    print(title)
    print((f"  {'combination':<28}" + "".join(f"{lr:<30}" for lr in results)).rstrip())
    for name in COMBOS:
        cells = [f"{h[name]}/{n} ({100 * h[name] / n:.1f}%) +{h['+' + name]} -{h['-' + name]}"
                 for h in results.values()]
        print((f"  {name:<28}" + "".join(f"{c:<30}" for c in cells)).rstrip())
    print("  (+gained -lost: rows right where the terms alone are wrong, and the reverse)")


def final_heldout() -> int:
    """Held-out AGGREGATES, once, after the design is frozen: the fallback alone on held-out
    rows with the shipped terms and with each learned candidate trained on every dev row. Counts
    only; no row, id or per-row result is printed."""
    base = load_fallback()
    rows = dev_rows()
    examples = extract(rows)
    cats = categories(base)
    held = []
    for line in ERRORS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("split") == "heldout":
                held.append(r)
    ex = extract(held, split="heldout")
    n_rows = len(held)
    results = {}
    for learner, (train, posterior) in LEARNERS.items():
        model = train([(e.thread, e.want, features(e.salient, e.others)) for e in examples], cats)
        hits: collections.Counter[str] = collections.Counter()
        for e in ex:
            ts = term_scores(base, e)
            t = term_pick(base, ts, e.salient)
            p = posterior(model, features(e.salient, e.others))
            _count(hits, t, ts, p, e.want)
        results[learner] = hits
    _table(f"HELD-OUT (aggregate, once): fallback alone, {len(ex)} of {n_rows} held-out rows get a "
           "verdict; right category of those:", len(ex), results)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cv", action="store_true", help="5-fold cross-validation by thread only")
    ap.add_argument("--rounds", action="store_true", help="the by-round validation only (git)")
    ap.add_argument("--sweeps", action="store_true",
                    help="also train on the source sweeps' messages (fixtures/errors/sweeps/)")
    ap.add_argument("--from-round", type=int, default=0, metavar="N",
                    help="--rounds: only the rounds numbered N or later")
    ap.add_argument("--write-model", metavar="PATH",
                    help="write the shipped model (regression, naive Bayes, nearest neighbours; dev rows + sweeps), JSON")
    ap.add_argument("--write", metavar="PATH", help="write the naive Bayes model of all dev rows (JSON)")
    ap.add_argument("--final-heldout", action="store_true",
                    help="held-out aggregates, once, after the design is frozen (counts only)")
    args = ap.parse_args(argv)
    if args.final_heldout:
        return final_heldout()
    base = load_fallback()
    rows = dev_rows()
    examples = extract(rows)
    if args.write_model:
        text = model_json(examples, tuple(sweep_examples(base)), categories(base))
        try:
            Path(args.write_model).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"fallback_model: cannot write {args.write_model}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"wrote {args.write_model}: {len(json.loads(text)['weights'])} tokens")
        return 0
    if args.write:
        model = train_nb([(e.thread, e.want, features(e.salient, e.others)) for e in examples],
                         categories(base))
        Path(args.write).write_text(dump(model), encoding="utf-8")
        print(f"wrote {args.write}: {len(model['tokens'])} tokens from {len(examples)} dev verdicts")
        return 0
    both = not (args.cv or args.rounds)
    extra = tuple(sweep_examples(base)) if args.sweeps else ()
    print(f"dev errors: {len(rows)} rows; the fallback alone gives a verdict on {len(examples)}"
          + (f"; training adds {len(extra)} sweep verdicts" if args.sweeps else ""))
    if args.cv or both:
        res = {lr: cross_validate(examples, base, rows, lr, extra=extra) for lr in LEARNERS}
        _table(f"\n{FOLDS}-fold cross-validation by thread (model retrained per fold; terms "
               "leave-thread-out), right category of the verdicts:", len(examples), res)
    if args.rounds or both:
        res = {}
        n = 0
        detail: list[str] = []
        for lr in LEARNERS:
            n, res[lr], lines = by_round(examples, base, rows, lr, extra, args.from_round)
            if not detail:
                detail = lines
        _table("\nby round (terms as committed before the round, model trained on the dev rows "
               "before it), right category of the round's dev verdicts:", n, res)
        print("  per round (naive Bayes):")
        print("\n".join(detail))
    return 0


def _num(w: float) -> float | int:
    """A weight rounded to 3 decimals, written short (``0`` rather than ``-0.0``)."""
    r = round(w, 3) + 0.0
    return int(r) if r == int(r) else r


def model_json(examples: list[Example], extra: tuple[Example, ...], cats: list[str]) -> str:
    """The shipped model (``k3doctor/explain/kb/fallback-model.json``): the logistic regression
    trained on ``examples`` (dev rows) and ``extra`` (sweep messages), weights rounded to 3
    decimals, one token a line, sorted; the naive Bayes counts; the nearest-neighbour vocabulary
    (token, idf) and examples (category index, token indices), one a line (the same text for the
    same corpus)."""
    data = [(e.thread, e.want, features(e.salient, e.others)) for e in examples] + _data(extra)
    model = train_lr(data, cats)
    nb = train_nb(data, cats)
    knn = train_knn(data, cats)
    head = {"format": _learned.FORMAT, "categories": cats,
            "bias": [_num(model["b"][c]) for c in cats], "examples": len(_per_thread(data)),
            "nb_alpha": nb["alpha"], "nb_totals": nb["totals"], "knn_k": knn["k"],
            "built_by": "python tools/fallback_model.py --write-model k3doctor/explain/kb/fallback-model.json"}
    body = ",\n".join(f"{json.dumps(k)}:{json.dumps([_num(model['w'][c].get(k, 0.0)) for c in cats], separators=(',', ':'))}"
                      for k in sorted(model["vocab"]))
    nb_body = ",\n".join(f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}"
                         for k, v in sorted(nb["tokens"].items()))
    vocab = list(knn["idf"])
    at = {t: i for i, t in enumerate(vocab)}
    vocab_body = ",\n".join(json.dumps([t, knn["idf"][t]], separators=(",", ":")) for t in vocab)
    ex_body = ",\n".join(json.dumps([c, *(at[t] for t in toks)], separators=(",", ":"))
                          for c, toks in knn["examples"])
    return (json.dumps(head, sort_keys=True)[:-1] + ', "weights": {\n' + body
            + '\n}, "nb_counts": {\n' + nb_body + '\n}, "knn_vocab": [\n' + vocab_body
            + '\n], "knn_examples": [\n' + ex_body + "\n]}\n")


def dump(model: dict[str, Any]) -> str:
    """The JSON text of a :func:`train_nb` model: sorted keys, one token a line (deterministic)."""
    head = {k: v for k, v in model.items() if k != "tokens"}
    body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(model["tokens"].items()))
    return (json.dumps(head, sort_keys=True)[:-1] + ', "tokens": {\n' + body + "\n}}\n")


if __name__ == "__main__":
    raise SystemExit(main())
