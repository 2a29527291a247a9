"""The fallback's learned category model: a logistic regression and a naive Bayes model over the
words of error lines.

When no signature explains an error, the fallback (:mod:`.fallback`) picks the most salient error
line and names a category. The hand-weighted terms of ``kb/fallback.toml`` give each category a
score; this model gives each category a vote learned from labelled error messages
(:meth:`LearnedModel.vote`: log P of the regression + ``NB_WEIGHT`` x log P of naive Bayes), and
the fallback picks the category with the highest ``TERM_WEIGHT x term score + vote``.

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

Why it is there, measured on rows neither had seen (docs/validation.md, "Learned fallback"): on
the development rows of collection rounds 14-64, each classified by the terms as committed before
the round and by a model trained only on what the corpus held before it (plus the sweeps), the
terms alone chose the right category for 321 of 481 fallback verdicts, this combination for 363.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from .kb import KBError

__all__ = ["LearnedModel", "features", "tokens", "pairs", "load_learned", "parse_learned",
           "TERM_WEIGHT", "NB_WEIGHT", "MODEL_FILE"]

MODEL_FILE = "fallback-model.json"
FORMAT = 1
#: how much one unit of hand-term score counts against one nat of the model's log-probability
TERM_WEIGHT = 0.2
#: how much one nat of the naive Bayes log-probability counts against one of the regression's
NB_WEIGHT = 0.1
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
        the naive Bayes part where the file has one (the fallback adds ``TERM_WEIGHT`` x the term
        score to it and takes the highest). ``logp``: the regression's :meth:`log_posterior` of
        ``feats`` where the caller has it already."""
        logp = dict(logp) if logp is not None else self.log_posterior(feats)
        nb = self.nb_log_posterior(feats)
        return logp if nb is None else {c: logp[c] + NB_WEIGHT * nb[c] for c in logp}

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
    return LearnedModel(tuple(cats), tuple(float(b) for b in bias), out,
                        int(data.get("examples", 0)), nb, nb_totals, float(alpha))


@lru_cache(maxsize=1)
def load_learned(categories: tuple[str, ...] | None = None) -> LearnedModel | None:
    """The packaged model (cached per process); None when the package ships none. With
    ``categories`` (the fallback's), a model trained for others raises KBError naming the fix."""
    path = resources.files("k3doctor.explain") / "kb" / MODEL_FILE
    if not path.is_file():
        return None
    return parse_learned(path.read_text(encoding="utf-8"), categories=categories)
