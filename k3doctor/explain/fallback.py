"""The fallback: when no signature explains a failure, classify its most salient error line.

An operator pastes whatever the engine printed; silence on an error nobody wrote a signature
for is the worst answer. So when no signature matched (or only *symptom* signatures did, while
an unexplained error line sits beside them), :func:`classify` picks the most salient error line
and names a category with ``confidence = "low"``, the line quoted, and the next step.

1. **Error lines.** A line is an error line when it carries an error marker (an exception name
   followed by ``:``, ``error``, ``failed``, ``fatal``, ``NCCL WARN``, ``Assertion``,
   ``Segmentation fault``, ``terminate called`` ...) and is not a log line at INFO/DEBUG/WARNING
   level, not a Python warning, and not a line a benign signature recognised; or when it carries a
   *strong* marker, which counts at any level (``undefined symbol``, ``out of memory``, ``is not
   compatible with the current PyTorch``, ``driver ... too old``: real failures that PyTorch and
   the engines print as warnings). A line that hedges ("This may result in", "This is expected",
   an optional ``lib*.so`` that could not be opened) is not an error line unless it names an
   exception. Text with no error line keeps the answer "nothing recognised". Such lines, lines
   at an informational level, and WARNING lines that name no failure (below) are *soft*
   (:meth:`FallbackModel.is_soft_line`): a signature that matched only soft lines is no answer
   unless the text holds a hard error line (scan.py's report).
2. **Hard lines.** An error line is *hard* when it names its failure (``[markers] hard``: an
   exception or error name, an error level or word, ``FAILED``, an assertion or crash, a failure
   verb such as "Unable to" or "mismatch", a timeout, the C library's errno messages, NCCL's
   WARN); "Failed to", "cannot", "not supported", "not found", "invalid", "expected", "exceeds"
   alone are not, since INFO and WARNING notices pasted without their level (or printed by a
   logger with none, as SGLang's) use them as often. Only a hard line gets a verdict.
3. **The salient line.** The last exception line (Python prints the error last), else the first
   hard error line of the first source that has one.
4. **The category.** Two votes. Weighted literal terms per category (``kb/fallback.toml``, built
   from the development corpus) are summed over the salient line (double weight) and the other
   error lines; and a learned model (:mod:`.learned`, ``kb/fallback-model.json``: a logistic
   regression, a naive Bayes model and a nearest-neighbour vote over the same lines' words, all
   trained on the development rows and the engines' own messages from the source sweeps) gives each
   category a vote, log P of the regression + 0.1 x log P of naive Bayes + 1.0 x log P of the 20
   nearest training examples. The category with the highest ``0.2 x term score + vote`` wins (until
   2026-12-06 the regression alone, with terms x0.3; naive Bayes joined in the seventeenth session,
   the neighbours in the eighteenth, each chosen on rows it had not seen; docs/validation.md). No term at all and no explicit error (an exception, ``ERROR``/``FATAL``, an
   assertion): no verdict, so a line such as "Failed to open libibverbs.so" with no category word
   and no exception stays unclassified. On the development
   rows of later collection rounds, classified by terms and a model that had not seen them, the
   terms alone chose the right category for 321 of 481 verdicts, the two votes for 363
   (``tools/fallback_model.py --rounds --from-round 14 --sweeps``; docs/validation.md, "Learned
   fallback"). Without the sweeps' messages the model did not beat the terms ("Round 17").

Everything here is linear in the text: terms are literals (case-insensitive substring tests)
and the marker regexes have no nested unbounded quantifiers.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from .gated import GatedMarkers
from .kb import CATEGORIES, KBError, Signature, clean_line, tomllib
from .learned import TERM_WEIGHT, LearnedModel, features, load_learned

__all__ = ["FallbackModel", "Verdict", "load_fallback", "fallback_signature", "fallback_signatures",
           "FALLBACK_PREFIX"]

#: Fallback matches carry the id ``fallback-<category>`` (explainable like any signature id).
FALLBACK_PREFIX = "fallback-"

#: the precision gates (all on; :class:`FallbackModel` ``gates`` turns some off to measure them):
#: ``warning``: a WARNING-level line that names no failure is soft, like an INFO line;
#: ``fallback``: a fallback verdict needs a hard error line (``[markers] hard``);
#: ``corroboration``: soft matches stand only beside a hard error line.
GATES = frozenset({"warning", "fallback", "corroboration"})
MAX_LINES = 256          # error lines kept per report (first ones; the last exception separately)
MAX_CLASSIFIED = 64      # of those, how many take part in the classification
#: (``Check failed:`` is a failed CHECK of glog, absl and TVM's ICHECK, which FlashInfer's TVM-FFI
#: kernels print: an assertion that aborts, with or without a category word; the tenth session, from
#: dev row flashinfer#3828, whose bare CHECK line got no verdict beside a dev benign WARNING line)
_EXPLICIT = re.compile(r"\b(?:ERROR|Error|FATAL|Fatal)\b|[Aa]ssertion|terminate called|Segmentation fault"
                       r"|\bCheck failed:")
#: an exception name or a fatal word in any case (a lower-cased paste keeps them); bare "error" is
#: left out so that "Ignore import error when loading ..." stays a notice
_EXPLICIT_ANYCASE = re.compile(r"[a-z](?:error|exception)\b|\b(?:fatal|assertion)\b|terminate called"
                               r"|segmentation fault"
                               # NCCL has two levels: INFO, and WARN for what went wrong
                               r"|NCCL WARN", re.IGNORECASE)
#: a file path with two or more separators (``/a/b/c.py:12``, ``csrc/x/y.hpp``); one-slash tokens
#: such as ``NET/IB`` or ``Driver/library`` stay. A path starts where a run of path characters
#: starts (the look-behind): without it every position inside a long run (a pasted line of 16k
#: digits) retried the 200-character head, 0.13 s per such line instead of 0.2 ms
_PATH = re.compile(r"(?<![\w.~+-])[\w.~+-]{0,200}(?:/[\w.~+-]{1,200}){2,40}(?::\d{1,7})?")
#: a path that says where the error was raised: a source file, or a path with a line number. Other
#: paths are what the error is about (``No such file or directory: '~/.triton/cache/...'``) and keep
#: their words.
_SOURCE_PATH = re.compile(r"(?:\.(?:py|pyx|cu|cuh|cc|cpp|cxx|c|h|hpp|hxx|inl|inc)|:\d{1,7})\Z")


def _drop_source_paths(text: str) -> str:
    return _PATH.sub(lambda m: " " if _SOURCE_PATH.search(m.group()) else m.group(), text)
LINE_CHARS = 2048        # characters of a line that are classified
_NUL_RUNS = re.compile("\x00+")
#: log-line decorations the engines and launchers put in front of a message: process tags
#: ``(VllmWorker rank=0 pid=1)``, ``[rank0]:``, level + timestamp + source location, SGLang's
#: ``[2025-01-01 00:00:00 TP0]``, glog ``[E1130 10:11:12.123 4 file.cc:12]`` (c10 leaves the
#: month unpadded: ``[W506 ...``), NCCL's ``host:pid:tid [gpu]``, docker-compose ``svc  |``. They
#: say which process printed the line, not what went wrong, and their words (``rank``, ``Worker``,
#: ``TP0``) must not vote for a category.
_LOG_PREFIX = re.compile(
    r"\s{0,8}(?:"
    r"\([^()\n]{0,80}?pid=[^()\n]{0,80}\)"
    r"|\[rank\d{1,6}\]:?"
    r"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|TRACE) {1,2}\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?(?: \[[^\]\n]{1,100}\])?"
    r"|\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?: [A-Z_]{2,10}\d{1,5}){0,8}\]"
    r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?Z?"
    r"|\[?[IWEF]\d{3,4} \d\d:\d\d:\d\d(?:\.\d{1,9})?(?: {1,8}\d{1,9})?(?: [\w./-]{1,160}:\d{1,7})?\]"
    r"|[\w.-]{1,80}:\d{1,9}:\d{1,9} \[\d{1,4}\]"
    r"|[\w.-]{1,40} {1,4}\| "
    r"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b:?"
    r")[\s:|-]{0,4}")


#: the process/rank/time tags of :data:`_LOG_PREFIX` without the level words: stripped before
#: the level of a line is read, so ``[rank0]: WARNING ...`` is a warning like ``WARNING ...``.
_TAG_PREFIX = re.compile(
    r"\s{0,8}(?:"
    r"\([^()\n]{0,80}?pid=[^()\n]{0,80}\)"
    r"|\[rank\d{1,6}\]:?"
    r"|\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?: [A-Z_]{2,10}\d{1,5}){0,8}\]"
    r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?Z?"
    r"|[\w.-]{1,80}:\d{1,9}:\d{1,9} \[\d{1,4}\]"
    r"|[\w.-]{1,40} {1,4}\| "
    r")[\s:|-]{0,4}")


def _strip_leading(line: str, rx: re.Pattern[str]) -> str:
    for _ in range(8):
        m = rx.match(line)
        if not m or not m.group(0).strip():
            break
        line = line[m.end():]
    return line


def strip_tags(line: str) -> str:
    """``line`` without leading process, rank and time tags (its level stays)."""
    return _strip_leading(line, _TAG_PREFIX)


def strip_log_prefix(line: str) -> str:
    """The message of a log line: leading decorations (see :data:`_LOG_PREFIX`) removed."""
    return _strip_leading(line, _LOG_PREFIX)


@dataclass(frozen=True)
class Term:
    """A lower-case literal; ``^term`` must start a word, ``term$`` must end one."""

    text: str
    weight: float
    _rx: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, raw: str, weight: float) -> "Term":
        text = raw.lower()
        start, end = text.startswith("^"), text.endswith("$")
        text = text[1 if start else 0: -1 if end else None]
        rx = None
        if start or end:
            rx = re.compile(("(?<![a-z0-9])" if start else "") + re.escape(text)
                            + ("(?![a-z0-9])" if end else ""))
        return cls(text, float(weight), rx)

    def occurs_in(self, lowered: str) -> bool:
        if self.text not in lowered:
            return False
        return self._rx is None or self._rx.search(lowered) is not None


@dataclass(frozen=True)
class CategoryTerms:
    """One category's vocabulary (weighted terms) and what to do next."""

    name: str
    terms: tuple[Term, ...]
    next_step: str
    checks: tuple[str, ...]
    grep: str


@dataclass(frozen=True)
class Verdict:
    """What the fallback concluded about one report."""

    category: str
    line: str                       # the salient error line, as printed (stripped)
    where: tuple[str, int]          # (source name, line number)
    score: float                    # summed term weight of the best category by terms (0: no term)
    terms: tuple[str, ...]          # the chosen category's terms on the lines, best first
    #: the learned regression's probability of the chosen category (None: terms alone decided;
    #: the naive Bayes and nearest-neighbour parts vote too, but this is the figure shown)
    probability: float | None = None
    #: the words that pushed the learned model hardest towards the chosen category
    learned_words: tuple[str, ...] = ()


#: the marker regexes of :class:`FallbackModel` searched through :class:`GatedMarkers`
_MARKER_FIELDS = ("strong_markers", "error_markers", "not_error", "hedge", "exception_line", "info_level",
                  "consequence", "hard_markers", "hard_anycase")


@dataclass
class FallbackModel:
    """Error markers, exclusions and per-category terms loaded from ``kb/fallback.toml``."""

    error_markers: re.Pattern[str]
    strong_markers: re.Pattern[str]
    exception_line: re.Pattern[str]
    not_error: re.Pattern[str]
    hedge: re.Pattern[str]
    categories: tuple[CategoryTerms, ...]
    #: lines at an informational level (INFO/DEBUG/TRACE/NOTICE, ``NCCL INFO``, glog ``I``)
    info_level: re.Pattern[str] | None = None
    #: lines that report a consequence: a peer failed, a process ended, an error printed elsewhere
    consequence: re.Pattern[str] | None = None
    #: failure tokens that make an error line *hard* (an exception name, an error level or word,
    #: ``FAILED``, an errno message ...): what a fallback verdict and a corroboration need
    hard_markers: re.Pattern[str] | None = None
    #: the same in any case, for a line with no capital letter (a lower-cased paste cannot tell
    #: "FAILED" from "failed")
    hard_anycase: re.Pattern[str] | None = None
    #: which precision gates are on (all of :data:`GATES` in use; fewer only to measure them)
    gates: frozenset[str] = GATES
    #: the learned category model (``kb/fallback-model.json``; None: the terms alone decide,
    #: unless ``learned_from_package``)
    learned: LearnedModel | None = None
    #: read the packaged model on the first verdict that needs it (:func:`load_fallback`): an
    #: ``explain`` that no fallback verdict reaches never parses its ~0.9 MB of JSON
    learned_from_package: bool = False
    _by_name: dict[str, CategoryTerms] = field(default_factory=dict)
    #: the marker regexes' searches, run only where their alternatives can match (:mod:`.gated`)
    _gated: GatedMarkers | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name = {c.name: c for c in self.categories}

    def _has(self, name: str, text: str) -> bool:
        """Whether the marker regex ``name`` (a field: ``hedge``, ``strong_markers`` ...) matches
        somewhere in ``text``: ``bool(self.<name>.search(text))``, searched by :class:`GatedMarkers`."""
        markers = self._gated
        rx = getattr(self, name)
        if markers is None or markers.regexes.get(name) is not rx:
            markers = self._gated = GatedMarkers({n: r for n in _MARKER_FIELDS if (r := getattr(self, n)) is not None})
        return markers.search(name, text)

    def category(self, name: str) -> CategoryTerms:
        return self._by_name[name]

    def learned_model(self) -> LearnedModel | None:
        """The learned model, the packaged one read now if it is due; a packaged model whose
        categories are not these raises KBError naming the file and the fix."""
        if self.learned is None and self.learned_from_package:
            self.learned_from_package = False
            self.learned = load_learned(tuple(sorted(c.name for c in self.categories)))
        return self.learned

    def without_learned(self) -> "FallbackModel":
        """A copy whose terms alone decide (to measure them, or to train the model)."""
        return dataclasses.replace(self, learned=None, learned_from_package=False)

    # -- line tests ------------------------------------------------------------------------------
    def is_error_line(self, text: str) -> bool:
        """A strong marker, or an error marker on a line that is not at a non-error log level.
        A "line" of a binary file (strings between runs of NUL bytes: an executable, a core dump)
        is no error line; a log line after the NUL padding a crash can leave stays one."""
        if "\x00" in text and len(_NUL_RUNS.findall(text.strip("\x00"))) > 0:
            return False
        head = clean_line(text[:LINE_CHARS])
        if self._has("strong_markers", head):
            return True
        if not self._has("error_markers", head):
            return False
        if self._has("not_error", head) or self._has("not_error", strip_tags(head)):
            return False
        return not (self._has("hedge", head) and not self._has("exception_line", head))

    def is_hard_error_line(self, text: str) -> bool:
        """An error line that names its failure (``hard`` or ``strong`` markers), not one that only
        uses a word such as "not found", "cannot", "invalid" or "Failed to" that INFO and WARNING
        messages use as often, pasted without their level."""
        if not self.is_error_line(text):
            return False
        if self.hard_markers is None:
            return True
        head = clean_line(text[:LINE_CHARS])
        return bool(self._has("strong_markers", head) or self._hard(head))

    def _hard(self, head: str) -> bool:
        if self.hard_markers is None:
            return False
        if self.hard_anycase is not None and head == head.lower():
            return self._has("hard_anycase", head)
        return self._has("hard_markers", head)

    def is_soft_line(self, text: str) -> bool:
        """A line that reports rather than fails: printed at an informational level, one that
        says what it does about a problem (falls back, retries, ignores, is deprecated, "this is
        expected") without naming an exception, or a WARNING line that names no failure (no
        ``[markers] hard`` token: "Possibly too large swap space", "Cannot use FA version 3").
        A strong marker, an exception or an inner ERROR is never soft; NCCL's WARN is its error
        level, not a warning.

        A signature that matches only soft lines is not an answer unless some line of the text
        is an error line (see :meth:`Scanner <k3doctor.explain.scan.Scanner>`'s report)."""
        head = clean_line(text[:LINE_CHARS])
        if (self._has("strong_markers", head) or self._has("exception_line", head)
                or _EXPLICIT.search(head) or _EXPLICIT_ANYCASE.search(head)):
            return False  # an inner ERROR, an exception or an assertion under an outer INFO tag
        if self.info_level is not None and (self._has("info_level", head)
                                            or self._has("info_level", strip_tags(head))):
            return True
        if self._has("hedge", head):
            return True
        # a WARNING line that names no failure (``[markers] hard``): the engine went on
        return "warning" in self.gates and bool(
            (self._has("not_error", head) or self._has("not_error", strip_tags(head)))
            and not self._hard(head))

    def is_consequence(self, text: str) -> bool:
        """A line that reports a consequence (a peer reset the connection, a watchdog or heartbeat
        timed out, a process exited or was killed, "see root cause above"), not what went wrong."""
        if self.consequence is None:
            return False
        head = clean_line(text[:LINE_CHARS])
        return bool(self._has("consequence", head) or self._has("consequence", strip_log_prefix(head)))

    def is_exception_line(self, text: str) -> bool:
        return bool(self._has("exception_line", clean_line(text[:LINE_CHARS])))

    # -- classification --------------------------------------------------------------------------
    def score(self, salient: str, others: list[str]) -> list[tuple[float, str, list[str]]]:
        """(score, category, terms) for every category with a term, best first.

        Source paths are dropped first: ``csrc/jit_kernels/...`` or ``kernels/internode.cu:483``
        say where the error was raised, not what it is about; a path the error is about (``No
        such file or directory: '~/.triton/cache/...'``) keeps its words."""
        main = _drop_source_paths(strip_log_prefix(salient[:LINE_CHARS])).lower()
        rest = [_drop_source_paths(strip_log_prefix(o[:LINE_CHARS])).lower()
                for o in others[:MAX_CLASSIFIED] if o != salient]
        order = {c.name: i for i, c in enumerate(self.categories)}
        out: list[tuple[float, str, list[str]]] = []
        for cat in self.categories:
            total = 0.0
            hit: list[tuple[float, str]] = []
            for term in cat.terms:
                w = 2 * term.weight if term.occurs_in(main) else 0.0
                w += sum(term.weight for o in rest if term.occurs_in(o))
                if w:
                    total += w
                    hit.append((w, term.text))
            if total > 0:
                hit.sort(key=lambda t: -t[0])
                out.append((total, cat.name, [t for _, t in hit]))
        out.sort(key=lambda t: (-t[0], order[t[1]]))
        return out

    def salient(self, lines: list[tuple[str, int, str]], last_exception: tuple[str, int, str] | None
                ) -> tuple[tuple[str, int, str], list[str]] | None:
        """The salient line and the error line texts that are classified with it (steps 2 and 3
        of the module docstring), or None when the fallback gives no verdict on these lines."""
        if not lines and last_exception is None:
            return None
        if last_exception is None and self.hard_markers is not None and "fallback" in self.gates:
            # the chosen line must name its failure: "Parameter x not found in params_dict" or
            # "Cannot use FlashAttention-2 backend" pasted without their INFO/WARNING level are
            # notices as often as errors
            hard = [ln for ln in lines if self.is_hard_error_line(ln[2])]
            if not hard:
                return None
            lines = hard + [ln for ln in lines if ln not in hard]
        salient = last_exception if last_exception is not None else lines[0]
        texts = [t for _, _, t in lines]
        if last_exception is not None and last_exception[2] not in texts:
            texts.append(last_exception[2])
        return salient, texts

    def classify(self, lines: list[tuple[str, int, str]],
                 last_exception: tuple[str, int, str] | None) -> Verdict | None:
        """The verdict for these error lines ``(source, line_no, text)``, or None without any."""
        picked = self.salient(lines, last_exception)
        if picked is None:
            return None
        salient, texts = picked
        ranked = self.score(salient[2], texts)
        # No category word at all: only an explicit error (an exception, ERROR/FATAL, an
        # assertion) is worth a verdict; a bare "Failed to open libfoo.so" is not.
        if not ranked and not (self.is_exception_line(salient[2])
                               or _EXPLICIT.search(salient[2][:LINE_CHARS])):
            return None
        line, where = salient[2].strip()[:400], (salient[0], salient[1])
        best = ranked[0][0] if ranked else 0.0
        learned = self.learned_model()
        if learned is None:
            if ranked:
                return Verdict(ranked[0][1], line, where, best, tuple(ranked[0][2][:6]))
            return Verdict("other", line, where, 0.0, ())
        # step 4 with the learned model: TERM_WEIGHT x term score + its vote (log P of the
        # regression + NB_WEIGHT x naive Bayes + KNN_WEIGHT x nearest neighbours: LearnedModel.vote)
        feats = features(salient[2], texts)
        logp = learned.log_posterior(feats)
        vote = learned.vote(feats, logp)
        terms = {c: (s, t) for s, c, t in ranked}
        category = max(sorted(vote), key=lambda c: TERM_WEIGHT * terms.get(c, (0.0, []))[0] + vote[c])
        return Verdict(category, line, where, best, tuple(terms.get(category, (0.0, []))[1][:6]),
                       math.exp(logp[category]), tuple(learned.top_tokens(feats, category)))


def _compile(patterns: Any, key: str, flags: int = 0) -> re.Pattern[str]:
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns) or not patterns:
        raise KBError(f"kb/fallback.toml: '{key}' must be a non-empty list of regex strings")
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)


def parse_fallback_text(text: str, where: str = "kb/fallback.toml",
                        sum_duplicates: bool = False) -> FallbackModel:
    """Parse the fallback model's TOML (used by :func:`load_fallback` and by tests).

    A term listed twice in one category is an error, unless ``sum_duplicates`` (for reading an
    old committed file, written before that was refused): then its weights are summed into one
    entry, which is how each occurrence counted when that file was in use."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KBError(f"{where}: {exc}") from None
    markers = data.get("markers", {})
    cats: list[CategoryTerms] = []
    for raw in data.get("category", []):
        name = raw.get("name")
        if name not in CATEGORIES or name == "benign":
            raise KBError(f"{where}: unknown or benign category {name!r}")
        weights: dict[str, float] = {}
        for item in raw.get("terms", []):
            if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                    or not isinstance(item[1], (int, float))):
                raise KBError(f"{where} [{name}]: a term is [\"literal\", weight], got {item!r}")
            if item[0] in weights and not sum_duplicates:
                # (each occurrence would add its weight: one entry, its whole weight)
                raise KBError(f"{where} [{name}]: term {item[0]!r} is listed twice; keep one entry with "
                              "the summed weight")
            weights[item[0]] = weights.get(item[0], 0) + item[1]
        terms = [Term.parse(text_, w) for text_, w in weights.items()]
        for key in ("next_step", "grep"):
            if not isinstance(raw.get(key), str) or not raw.get(key):
                raise KBError(f"{where} [{name}]: missing '{key}'")
        checks = raw.get("checks", [])
        if not isinstance(checks, list) or not all(isinstance(c, str) and re.fullmatch(r"[A-Z]{2,4}", c)
                                                      for c in checks):
            raise KBError(f"{where} [{name}]: 'checks' must list check families (e.g. NET)")
        cats.append(CategoryTerms(name, tuple(terms), " ".join(raw["next_step"].split()),
                                  tuple(checks), raw["grep"].strip()))
    if {c.name for c in cats} != set(CATEGORIES) - {"benign"}:
        raise KBError(f"{where}: every category but benign needs a [[category]] table")
    return FallbackModel(
        error_markers=_compile(markers.get("error"), "markers.error"),
        strong_markers=_compile(markers.get("strong"), "markers.strong"),
        exception_line=_compile(markers.get("exception"), "markers.exception"),
        # a level or a hedge in any case ("warning:", "This is expected") is still one
        not_error=_compile(markers.get("not_error"), "markers.not_error", re.IGNORECASE),
        hedge=_compile(markers.get("hedge"), "markers.hedge", re.IGNORECASE),
        categories=tuple(cats),
        info_level=(_compile(markers["info_level"], "markers.info_level") if "info_level" in markers
                    else None),
        consequence=(_compile(markers["consequence"], "markers.consequence", re.IGNORECASE)
                     if "consequence" in markers else None),
        hard_markers=(_compile(markers["hard"], "markers.hard") if "hard" in markers else None),
        hard_anycase=(_compile(markers["hard"], "markers.hard", re.IGNORECASE) if "hard" in markers
                      else None),
    )


@lru_cache(maxsize=1)
def load_fallback() -> FallbackModel:
    """The packaged fallback model (its learned model read on first use). Cached per process."""
    text = (resources.files("k3doctor.explain") / "kb" / "fallback.toml").read_text(encoding="utf-8")
    return dataclasses.replace(parse_fallback_text(text), learned_from_package=True)


_TITLES = {
    "network": "network / collective communication",
    "jit-cache": "JIT compilation or cache",
    "arch": "GPU architecture / capability",
    "memory": "memory",
    "checkpoint": "checkpoint / weights",
    "parallelism": "parallel layout",
    "gpu-health": "GPU / driver health",
    "version": "software version",
    "other": "general",
}


def fallback_signature(category: str, model: FallbackModel | None = None) -> Signature:
    """The pseudo-signature a fallback verdict is reported under (``fallback-<category>``)."""
    model = model or load_fallback()
    cat = model.category(category)
    label = _TITLES.get(category, category)
    title = ("Unrecognised error, no specific category (low confidence)" if category == "other"
             else f"Unrecognised error, classified as {label} (low confidence)")
    return Signature(
        id=FALLBACK_PREFIX + category,
        category=category,
        title=title,
        keywords=(),
        patterns=(),
        cause=("No known signature matched this error and the words of its most salient line point to "
               "no specific category (network, memory, version ...); "
               "the next steps below narrow it down." if category == "other" else
               "No known signature matched this error. Its most salient line was classified by "
               f"the words it uses as a {label} problem; treat this as a lead, not a diagnosis."),
        fix=f"{cat.next_step} Narrow it down: {cat.grep}",
        tier="generic",
        related_checks=cat.checks,
        examples=(),
        priority=0,
    )


def fallback_signatures() -> dict[str, Signature]:
    """``fallback-<category>`` -> its pseudo-signature, for every category (explainable ids)."""
    model = load_fallback()
    return {FALLBACK_PREFIX + c.name: fallback_signature(c.name, model) for c in model.categories}
