"""The fallback's learned category model: a logistic regression, a naive Bayes model and a
nearest-neighbour vote over the words of error lines.

When no signature explains an error, the fallback (:mod:`.fallback`) picks the most salient error
line and names a category. The hand-weighted terms of ``kb/fallback.toml`` give each category a
score; this model gives each category a vote learned from labelled error messages
(:meth:`LearnedModel.vote`: log P of the regression + ``NB_WEIGHT`` x log P of naive Bayes +
``KNN_WEIGHT`` x log P of the nearest neighbours), and the fallback picks the category with the
highest ``TERM_WEIGHT x term score + vote``.

**Data.** ``kb/fallback-model.json`` is data, rebuilt by ``python tools/fallback_model.py
--write-model k3doctor/explain/kb/fallback-model.json`` from

* the development rows of the corpus (``fixtures/errors/errors.jsonl``, ``split == "dev"``;
  held-out rows are never read), each thread one example, and
* the source sweeps (``fixtures/errors/sweeps/``): messages the engines and libraries print,
  read from their source and labelled with the category of their cause, each its own example.

Each example is what the fallback itself classifies: the salient line and the other error lines
of the text, as :meth:`FallbackModel.salient <k3doctor.explain.fallback.FallbackModel.salient>`
picks them. ``tests/test_explain_learned.py`` rebuilds the model and compares it with the file.

**Features** (:func:`features`): the words of those lines after the fallback's own normalisation
(log prefixes stripped, source paths dropped), lower-cased, with the parts of identifiers
(``ncclSystemError`` gives nccl, system, error) and the salient line's adjacent-word pairs;
numbers, hex ids and one-letter tokens dropped. A token must occur in at least two examples to
be kept. **Model**: multinomial logistic regression on binary, L2-normalised features, trained by
plain SGD in a fixed order (deterministic, no dependency); and, in the same file
(``nb_counts``, ``nb_totals``, ``nb_alpha``), naive Bayes counts of the same tokens (add-one
smoothing, uniform prior). ``TERM_WEIGHT`` 0.2 and ``NB_WEIGHT`` 0.1 were chosen by nested 5-fold
cross-validation by thread on the development rows' fallback verdicts (docs/validation.md,
seventeenth session); a file without the naive Bayes part votes with the regression alone.
**Nearest neighbours** (``knn_*`` in the file; eighteenth session): every training example's
tokens (indices into ``knn_vocab``, which carries each token's inverse document frequency); a
verdict's tokens are compared with each example's by cosine similarity of idf-weighted binary
vectors, the ``knn_k`` most similar examples add their similarity to their category, and
:meth:`LearnedModel.knn_log_posterior` is log((sum + ``KNN_SMOOTH``) / (total + ``KNN_SMOOTH`` x
categories)). It answers what the other two average away: a message worded like a few known ones
of one category. ``KNN_WEIGHT`` 1.0 and k = 20 were chosen on the development rows' 5-fold
cross-validation (2702 -> 2722 of 3400 verdicts) and checked on rounds 200-324 by round (555 ->
562 of 777); docs/validation.md, eighteenth session.

Why it is there, measured on rows neither had seen (docs/validation.md, "Learned fallback"): on
the development rows of collection rounds 14-64, each classified by the terms as committed before
the round and by a model trained only on what the corpus held before it (plus the sweeps), the
terms alone chose the right category for 321 of 481 fallback verdicts, this combination for 363.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources

from .kb import KBError

__all__ = ["LearnedModel", "features", "tokens", "pairs", "load_learned", "parse_learned",
           "knn_index", "knn_log_posterior", "TERM_WEIGHT", "NB_WEIGHT", "KNN_WEIGHT", "MODEL_FILE"]

MODEL_FILE = "fallback-model.json"
FORMAT = 1
#: how much one unit of hand-term score counts against one nat of the model's log-probability
TERM_WEIGHT = 0.2
#: how much one nat of the naive Bayes log-probability counts against one of the regression's
NB_WEIGHT = 0.1
#: how much one nat of the nearest-neighbour log-probability counts against one of the regression's
KNN_WEIGHT = 1.0
#: the nearest-neighbour vote's smoothing: what a category no neighbour belongs to still gets
KNN_SMOOTH = 0.05
SALIENT_WEIGHT = 2
CAP = 3

_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9_]{0,200}")
_PART = re.compile(r"[A-Z]+(?![a-z])[0-9]*|[A-Z]?[a-z]+[0-9]*")
_HEX = re.compile(r"[0-9a-f]{6,}")
_STOP = frozenset("the an of to in on for is are was be by at as it this that with from or and not no".split())


def _keep(tok: str) -> bool:
    if not 2 <= len(tok) <= 40 or tok in _STOP:
        return False
    if sum(ch.isdigit() for ch in tok) > 4:
        return False
    return not (_HEX.fullmatch(tok) and any(ch.isdigit() for ch in tok))


def _normalised(line: str) -> str:
    # the fallback's own normalisation (imported here: fallback.py imports this module)
    from .fallback import LINE_CHARS, _drop_source_paths, strip_log_prefix

    return _drop_source_paths(strip_log_prefix(line[:LINE_CHARS]))


def tokens(line: str) -> list[str]:
    """The tokens of one error line (sorted, unique): lower-cased words and identifier parts."""
    out: set[str] = set()
    for m in _WORD.finditer(_normalised(line)):
        word = m.group()
        low = word.lower()
        if not _keep(low):
            continue  # a hex id or a number-like word: its parts are no evidence either
        out.add(low)
        for piece in word.split("_"):
            for part in _PART.findall(piece):
                part = part.lower()
                if part != low and _keep(part):
                    out.add(part)
    return sorted(out)


def pairs(line: str) -> list[str]:
    """Adjacent-word pairs of a line (lower-cased whole words that pass the token filter)."""
    words = [w for w in (m.group().lower() for m in _WORD.finditer(_normalised(line))) if _keep(w)]
    return sorted({f"{a} {b}" for a, b in zip(words, words[1:])})


def features(salient: str, others: Iterable[str]) -> dict[str, int]:
    """Token -> weight for one verdict: the salient line's tokens and pairs weigh
    ``SALIENT_WEIGHT``, each other error line adds 1, capped at ``CAP`` (the logistic regression
    reads only which tokens occur). Of the other lines, the first ones the fallback classifies."""
    from .fallback import MAX_CLASSIFIED

    f: Counter[str] = Counter()
    for t in tokens(salient) + pairs(salient):
        f[t] += SALIENT_WEIGHT
    for n, line in enumerate(others):
        if n >= MAX_CLASSIFIED:
            break
        if line != salient:
            for t in tokens(line):
                f[t] += 1
    return {k: min(v, CAP) for k, v in sorted(f.items())}


#: token -> (example numbers, the token's weight in each of those examples' unit vectors), as
#: compact arrays (a few MB for the shipped model, where lists of tuples took about 16)
KnnIndex = dict[str, tuple["array[int]", "array[float]"]]


def knn_index(idf: Mapping[str, float], examples: Iterable[Iterable[str]]) -> KnnIndex:
    """token -> (example numbers, weights): each example an idf-weighted binary vector of its
    tokens, unit length (tokens without an idf are left out)."""
    index: KnnIndex = {}
    for i, toks in enumerate(examples):
        ws = {t: idf[t] for t in toks if t in idf}
        norm = math.sqrt(sum(w * w for w in ws.values()))
        if not norm:
            continue
        for t, w in ws.items():
            ids, weights = index.get(t) or index.setdefault(t, (array("i"), array("d")))
            ids.append(i)
            weights.append(w / norm)
    return index


def knn_log_posterior(categories: tuple[str, ...] | list[str], labels: list[int] | tuple[int, ...],
                      idf: Mapping[str, float], index: KnnIndex, k: int,
                      feats: Mapping[str, int]) -> dict[str, float]:
    """log P(category | features) by the ``k`` examples most similar to ``feats`` (cosine of
    idf-weighted binary vectors; ties by example order): each adds its similarity to its category
    (``labels[i]``, an index into ``categories``), smoothed by ``KNN_SMOOTH``."""
    q = {t: idf[t] for t in feats if t in idf}
    norm = math.sqrt(sum(w * w for w in q.values()))
    sims: dict[int, float] = {}
    if norm:
        for t, w in q.items():
            ids, weights = index.get(t) or ((), ())
            for i, x in zip(ids, weights):
                sims[i] = sims.get(i, 0.0) + w / norm * x
    mass = [0.0] * len(categories)
    for i, sim in sorted(sims.items(), key=lambda t: (-t[1], t[0]))[:k]:
        mass[labels[i]] += sim
    total = sum(mass) + KNN_SMOOTH * len(categories)
    return {c: math.log((m + KNN_SMOOTH) / total) for c, m in zip(categories, mass)}


@dataclass(frozen=True)
class LearnedModel:
    """A trained logistic regression: per category a bias, per token one weight per category."""

    categories: tuple[str, ...]
    bias: tuple[float, ...]
    weights: Mapping[str, tuple[float, ...]]
    examples: int = 0
    #: the naive Bayes part, trained on the same examples: per token its (capped) counts per
    #: category, the counts' totals per category and the add-alpha smoothing (empty: none)
    nb_counts: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    nb_totals: tuple[float, ...] = ()
    nb_alpha: float = 1.0
    #: the nearest-neighbour part: how many neighbours vote, token -> idf, and per training
    #: example its category's index and its tokens (k 0: none)
    knn_k: int = 0
    knn_idf: Mapping[str, float] = field(default_factory=dict)
    knn_examples: tuple[tuple[int, tuple[str, ...]], ...] = ()

    @cached_property
    def _knn(self) -> tuple[list[int], KnnIndex]:
        return ([c for c, _ in self.knn_examples],
                knn_index(self.knn_idf, (toks for _, toks in self.knn_examples)))

    def knn_log_posterior(self, feats: Mapping[str, int]) -> dict[str, float] | None:
        """log P(category | features) by the nearest training examples; None without that part.
        (The index is built the first time a verdict needs it.)"""
        if not self.knn_k or not self.knn_examples:
            return None
        labels, index = self._knn
        return knn_log_posterior(self.categories, labels, self.knn_idf, index, self.knn_k, feats)

    def nb_log_posterior(self, feats: Mapping[str, int]) -> dict[str, float] | None:
        """log P(category | features) under the naive Bayes part (uniform prior); None without one."""
        if not self.nb_totals:
            return None
        v = len(self.nb_counts)
        scores = []
        for i, total in enumerate(self.nb_totals):
            denom = math.log(total + self.nb_alpha * v)
            scores.append(sum(w * (math.log(self.nb_counts[k][i] + self.nb_alpha) - denom)
                              for k, w in feats.items() if k in self.nb_counts))
        top = max(scores)
        z = top + math.log(sum(math.exp(s - top) for s in scores))
        return {c: s - z for c, s in zip(self.categories, scores)}

    def vote(self, feats: Mapping[str, int],
             logp: Mapping[str, float] | None = None) -> dict[str, float]:
        """The model's vote per category: log P of the regression, plus ``NB_WEIGHT`` x log P of
        the naive Bayes part and ``KNN_WEIGHT`` x log P of the nearest neighbours where the file
        has them (the fallback adds ``TERM_WEIGHT`` x the term score to it and takes the highest).
        ``logp``: the regression's :meth:`log_posterior` of ``feats`` where the caller has it
        already."""
        vote = dict(logp) if logp is not None else self.log_posterior(feats)
        for weight, part in ((NB_WEIGHT, self.nb_log_posterior(feats)),
                             (KNN_WEIGHT, self.knn_log_posterior(feats))):
            if part is not None:
                vote = {c: vote[c] + weight * part[c] for c in vote}
        return vote

    def log_posterior(self, feats: Mapping[str, int]) -> dict[str, float]:
        """log P(category | features) for every category."""
        keys = [k for k in feats if k in self.weights]
        x = 1 / math.sqrt(len(keys)) if keys else 0.0
        scores = list(self.bias)
        for k in keys:
            for i, w in enumerate(self.weights[k]):
                scores[i] += w * x
        top = max(scores)
        z = top + math.log(sum(math.exp(s - top) for s in scores))
        return {c: s - z for c, s in zip(self.categories, scores)}

    def top_tokens(self, feats: Mapping[str, int], category: str, n: int = 4) -> list[str]:
        """The tokens that pushed hardest towards ``category`` (for the verdict's explanation)."""
        i = self.categories.index(category)
        scored = sorted(((self.weights[k][i], k) for k in feats if k in self.weights), reverse=True)
        return [k for w, k in scored[:n] if w > 0]


def parse_learned(text: str, where: str = f"kb/{MODEL_FILE}",
                  categories: Iterable[str] | None = None) -> LearnedModel:
    """Parse the model's JSON; anything malformed raises KBError naming the file."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise KBError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise KBError(f"{where}: not a format-{FORMAT} fallback model; rebuild it with "
                      "tools/fallback_model.py --write-model")
    cats = data.get("categories")
    bias = data.get("bias")
    weights = data.get("weights")
    if (not isinstance(cats, list) or not cats or not all(isinstance(c, str) for c in cats)
            or not isinstance(bias, list) or len(bias) != len(cats)
            or not all(isinstance(b, (int, float)) for b in bias) or not isinstance(weights, dict)):
        raise KBError(f"{where}: needs 'categories', 'bias' (one per category) and 'weights'")
    if categories is not None and set(cats) != set(categories):
        raise KBError(f"{where}: its categories {sorted(cats)} are not kb/fallback.toml's "
                      f"{sorted(categories)}; rebuild it with tools/fallback_model.py --write-model")
    out: dict[str, tuple[float, ...]] = {}
    for tok, ws in weights.items():
        if (not isinstance(ws, list) or len(ws) != len(cats)
                or not all(isinstance(w, (int, float)) for w in ws)):
            raise KBError(f"{where}: token {tok!r} needs one weight per category")
        out[tok] = tuple(float(w) for w in ws)
    counts, totals, alpha = data.get("nb_counts"), data.get("nb_totals"), data.get("nb_alpha", 1.0)
    nb: dict[str, tuple[float, ...]] = {}
    nb_totals: tuple[float, ...] = ()
    if counts is not None or totals is not None:
        if (not isinstance(counts, dict) or not isinstance(totals, list) or len(totals) != len(cats)
                or not all(isinstance(t, (int, float)) and t >= 0 for t in totals)
                or not isinstance(alpha, (int, float)) or alpha <= 0):
            raise KBError(f"{where}: its naive Bayes part needs 'nb_counts', 'nb_totals' (one per "
                          "category) and a positive 'nb_alpha'")
        for tok, cs in counts.items():
            if (not isinstance(cs, list) or len(cs) != len(cats)
                    or not all(isinstance(c, (int, float)) and c >= 0 for c in cs)):
                raise KBError(f"{where}: naive Bayes token {tok!r} needs one count per category")
            nb[tok] = tuple(float(c) for c in cs)
        nb_totals = tuple(float(t) for t in totals)
    knn_k, knn_idf, knn_examples = _parse_knn(data, len(cats), where)
    return LearnedModel(tuple(cats), tuple(float(b) for b in bias), out,
                        int(data.get("examples", 0)), nb, nb_totals, float(alpha),
                        knn_k, knn_idf, knn_examples)


def _parse_knn(data: dict, ncats: int, where: str
               ) -> tuple[int, dict[str, float], tuple[tuple[int, tuple[str, ...]], ...]]:
    """The nearest-neighbour part of the file (``knn_k``, ``knn_vocab`` ``[[token, idf], ...]``,
    ``knn_examples`` ``[[category index, token index, ...], ...]``), or none."""
    k, vocab, examples = data.get("knn_k"), data.get("knn_vocab"), data.get("knn_examples")
    if k is None and vocab is None and examples is None:
        return 0, {}, ()
    if (not isinstance(k, int) or isinstance(k, bool) or k < 1 or not isinstance(vocab, list)
            or not isinstance(examples, list)):
        raise KBError(f"{where}: its nearest-neighbour part needs a positive 'knn_k', 'knn_vocab' "
                      "and 'knn_examples'")
    toks: list[str] = []
    idf: dict[str, float] = {}
    for entry in vocab:
        if (not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str)
                or not isinstance(entry[1], (int, float)) or isinstance(entry[1], bool)
                or not math.isfinite(entry[1]) or entry[1] < 0):
            raise KBError(f"{where}: knn_vocab entry {entry!r} is not [token, idf >= 0]")
        toks.append(entry[0])
        idf[entry[0]] = float(entry[1])
    out = []
    for n, ex in enumerate(examples):
        if (not isinstance(ex, list) or not ex
                or not all(isinstance(i, int) and not isinstance(i, bool) for i in ex)
                or not 0 <= ex[0] < ncats or not all(0 <= i < len(toks) for i in ex[1:])):
            raise KBError(f"{where}: knn_examples[{n}] is not [category index, token index, ...] "
                          "within the file's categories and knn_vocab")
        out.append((ex[0], tuple(toks[i] for i in ex[1:])))
    return k, idf, tuple(out)


@lru_cache(maxsize=1)
def load_learned(categories: tuple[str, ...] | None = None) -> LearnedModel | None:
    """The packaged model (cached per process); None when the package ships none. With
    ``categories`` (the fallback's), a model trained for others raises KBError naming the fix."""
    path = resources.files("k3doctor.explain") / "kb" / MODEL_FILE
    if not path.is_file():
        return None
    return parse_learned(path.read_text(encoding="utf-8"), categories=categories)
