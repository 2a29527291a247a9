"""Load and validate the explain knowledge base (``kb/<category>.toml``).

Each TOML file declares ``category = "<name>"`` and a list of ``[[signature]]`` tables::

    [[signature]]
    id = "nccl-watchdog-timeout"           # unique, kebab-case
    title = "NCCL collective timed out (watchdog)"
    keywords = ["Watchdog caught"]           # literal substrings; one must occur on the line
    patterns = ['Watchdog caught collective operation timeout']   # Python regexes
    tier = "symptom"                         # cause | generic | symptom | benign
    cause = "..."                            # may use {name} placeholders from extractors
    fix = "..."                              # concrete env var / flag / command
    related_checks = ["NET001"]
    references = ["https://..."]
    examples = ["a line this signature must recognise (at least one quoted from the corpus)"]
    near_misses = ["a corpus line that looks alike but is another failure (must NOT match)"]
    # optional
    priority = 50                            # tie-break between signatures on one line
    extract = { timeout_ms = 'Timeout\\(ms\\)=(\\d+)' }   # first group of each regex
    detail = "Timed out after {timeout_ms} ms."          # appended to cause when all keys known;
                                             # a list: the first template whose keys are all known
    context = 'fastsafetensors'              # regex that must occur on the line or just before it
    supersedes = ["torch-oom"]               # ids suppressed when both match one line
    standalone = true                        # the message is a failure although the engine prints
                                             # it at INFO/DEBUG (vLLM's "No platform detected"):
                                             # a match stands without an error line in the text

Patterns are compiled lazily (first use), so loading the KB costs a TOML parse only, and not even
that where the package ships ``kb/kb-parsed.json`` built from exactly these TOML texts (:data:`PARSED_FILE`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["CATEGORIES", "TIERS", "Signature", "load_kb", "KBError", "tomllib", "clean_line", "PARSED_FILE",
           "parsed_mirror", "parsed_tables", "toml_texts"]

#: The categories, one TOML file each, in display order.
CATEGORIES: tuple[str, ...] = (
    "network",
    "jit-cache",
    "arch",
    "memory",
    "checkpoint",
    "parallelism",
    "gpu-health",
    "version",
    "benign",
    "other",
)

#: Ranking tiers: a specific root cause beats a generic wrapper error, which beats a
#: symptom (timeouts, "other ranks ..."), which beats a benign line.
TIERS: dict[str, int] = {"cause": 0, "generic": 1, "symptom": 2, "benign": 3}

_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_CODE_RE = re.compile(r"^[A-Z]{2,4}\d{3}$")
_REQUIRED = ("id", "title", "keywords", "patterns", "cause", "fix")


#: decorations a pasted line picks up around the message: rich/box borders (``│ ... │``),
#: markdown quotes, bullets, emphasis and code ticks. Patterns that end at ``$`` or start at
#: ``^`` must see the message, not the frame (both runs are bounded: linear time).
_DECOR_LEAD = re.compile(r"(?:[\s\u2502\u2503\u2551|>*`\u2022]|-\s){1,16}")
_DECOR_TRAIL = re.compile(r"[\s\u2502\u2503\u2551|*`]{1,16}\Z")


def clean_line(text: str) -> str:
    """``text`` without the frame a paste puts around it (see :data:`_DECOR_LEAD`)."""
    m = _DECOR_LEAD.match(text)
    if m:
        text = text[m.end():]
    tail = text[-16:]
    t = _DECOR_TRAIL.search(tail)
    if t:
        text = text[: len(text) - len(tail) + t.start()]
    return text


class KBError(ValueError):
    """The knowledge base is malformed (raised at load time, with the file and id)."""


@dataclass(eq=False)
class Signature:
    """One recognisable failure (or benign line)."""

    id: str
    category: str
    title: str
    keywords: tuple[str, ...]
    patterns: tuple[str, ...]
    cause: str
    fix: str
    tier: str = "cause"
    related_checks: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    near_misses: tuple[str, ...] = ()
    priority: int = 50
    extract: dict[str, str] = field(default_factory=dict)
    detail: tuple[str, ...] = ()
    context: str = ""
    supersedes: tuple[str, ...] = ()
    standalone: bool = False
    _compiled: tuple[re.Pattern[str], ...] | None = field(default=None, repr=False)
    _extract_compiled: dict[str, re.Pattern[str]] | None = field(default=None, repr=False)
    _context_compiled: re.Pattern[str] | None = field(default=None, repr=False)

    @property
    def benign(self) -> bool:
        return self.category == "benign" or self.tier == "benign"

    @property
    def tier_rank(self) -> int:
        return TIERS[self.tier]

    # -- lazily compiled regexes -----------------------------------------------------------
    def compiled(self) -> tuple[re.Pattern[str], ...]:
        if self._compiled is None:
            self._compiled = tuple(re.compile(p, re.IGNORECASE) for p in self.patterns)
        return self._compiled

    def search(self, line: str) -> re.Match[str] | None:
        for rx in self.compiled():
            m = rx.search(line)
            if m:
                return m
        return None

    def context_regex(self) -> re.Pattern[str] | None:
        if self.context and self._context_compiled is None:
            self._context_compiled = re.compile(self.context, re.IGNORECASE)
        return self._context_compiled

    def extract_values(self, line: str, m: re.Match[str] | None = None) -> dict[str, str]:
        """Named values from the line: named groups of the matching pattern, then ``extract``."""
        out: dict[str, str] = {}
        if m is not None:
            out.update({k: v for k, v in m.groupdict().items() if v})
        if self.extract:
            if self._extract_compiled is None:
                self._extract_compiled = {k: re.compile(v) for k, v in self.extract.items()}
            for key, rx in self._extract_compiled.items():
                if key in out:
                    continue
                em = rx.search(line)
                if em:
                    val = next((g for g in em.groups() if g), None) if em.groups() else em.group(0)
                    if val:
                        out[key] = val.strip()
        return out

    def render_cause(self, values: dict[str, str]) -> str:
        """The cause, plus the first ``detail`` template whose values were all extracted."""
        for template in self.detail:
            try:
                return f"{self.cause} {template.format(**values)}"
            except (KeyError, IndexError, ValueError):
                continue
        return self.cause


def _as_tuple(value: Any, key: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KBError(f"{where}: '{key}' must be a string or a list of strings")
    return tuple(value)


def _build(raw: dict[str, Any], category: str, where: str) -> Signature:
    missing = [k for k in _REQUIRED if not raw.get(k)]
    if missing:
        raise KBError(f"{where}: missing {', '.join(missing)}")
    sid = raw["id"]
    where = f"{where} [{sid}]"
    if not _ID_RE.match(sid):
        raise KBError(f"{where}: id must be kebab-case")
    declared = raw.get("category", category)
    if declared != category:
        raise KBError(f"{where}: category {declared!r} does not match its file ({category!r})")
    tier = raw.get("tier", "benign" if category == "benign" else "cause")
    if tier not in TIERS:
        raise KBError(f"{where}: tier {tier!r} is not one of {', '.join(TIERS)}")
    if category == "benign" and tier != "benign":
        raise KBError(f"{where}: benign signatures must have tier 'benign'")
    codes = _as_tuple(raw.get("related_checks"), "related_checks", where)
    bad = [c for c in codes if not _CODE_RE.match(c)]
    if bad:
        raise KBError(f"{where}: malformed check code(s) {bad}")
    extract = raw.get("extract", {}) or {}
    if not isinstance(extract, dict) or not all(isinstance(v, str) for v in extract.values()):
        raise KBError(f"{where}: 'extract' must map names to regex strings")
    known = set(_REQUIRED) | {
        "category", "tier", "related_checks", "references", "examples", "near_misses", "priority",
        "extract", "detail", "context", "supersedes", "standalone",
    }
    unknown = set(raw) - known
    if unknown:
        raise KBError(f"{where}: unknown key(s) {sorted(unknown)}")
    if not isinstance(raw.get("standalone", False), bool):
        raise KBError(f"{where}: 'standalone' must be true or false")
    sig = Signature(
        id=sid,
        category=category,
        title=raw["title"].strip(),
        keywords=_as_tuple(raw["keywords"], "keywords", where),
        patterns=_as_tuple(raw["patterns"], "patterns", where),
        cause=" ".join(raw["cause"].split()),
        fix=" ".join(raw["fix"].split()),
        tier=tier,
        related_checks=codes,
        references=_as_tuple(raw.get("references"), "references", where),
        examples=_as_tuple(raw.get("examples"), "examples", where),
        near_misses=_as_tuple(raw.get("near_misses"), "near_misses", where),
        priority=int(raw.get("priority", 50)),
        extract=dict(extract),
        detail=tuple(" ".join(t.split()) for t in _as_tuple(raw.get("detail"), "detail", where)),
        context=str(raw.get("context", "")),
        supersedes=_as_tuple(raw.get("supersedes"), "supersedes", where),
        standalone=bool(raw.get("standalone", False)),
    )
    return sig


#: The TOML files parsed ahead of time: ``{"format": 1, "sha256": {category: digest of its TOML
#: text}, "data": {category: what tomllib makes of it}}``, rebuilt by ``python tools/kb_parsed.py``.
#: TOML parsing is pure Python (0.15 s of CPU for the ~1.8 MB KB, most of a pasted error's
#: ``explain``); ``json`` reads the same tables in a few milliseconds. A category whose TOML text
#: no longer has the recorded digest (an edited KB, the file not rebuilt) is parsed from TOML, so
#: the file can make loading slower, never different. ``tests/test_explain_kb.py`` rebuilds it
#: and compares.
PARSED_FILE = "kb-parsed.json"
PARSED_FORMAT = 1


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parsed_mirror(texts: dict[str, str]) -> dict[str, Any]:
    """The content of :data:`PARSED_FILE` for these TOML texts (``{category: text}``)."""
    return {"format": PARSED_FORMAT,
            "sha256": {c: _digest(t) for c, t in texts.items()},
            "data": {c: tomllib.loads(t) for c, t in texts.items()}}


def toml_texts(base: Any = None) -> dict[str, str]:
    """``{category: text}`` of the KB's TOML files, in :data:`CATEGORIES` order (``base``: the
    directory holding them; the package's ``kb`` by default)."""
    base = resources.files("k3doctor.explain") / "kb" if base is None else base
    return {c: (base / f"{c}.toml").read_text(encoding="utf-8") for c in CATEGORIES}


def _read_parsed() -> str | None:
    try:
        return (resources.files("k3doctor.explain") / "kb" / PARSED_FILE).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None


def parsed_tables(texts: dict[str, str], mirror: str | None) -> dict[str, dict[str, Any]]:
    """The categories of ``mirror`` (the text of :data:`PARSED_FILE`) whose TOML text in ``texts``
    is the one it was built from, with their tables; none when it is missing, not JSON or not
    this format (then every TOML text is parsed)."""
    try:
        data = json.loads(mirror) if mirror is not None else None
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("format") != PARSED_FORMAT:
        return {}
    digests, tables = data.get("sha256"), data.get("data")
    if not isinstance(digests, dict) or not isinstance(tables, dict):
        return {}
    return {c: tables[c] for c, t in texts.items()
            if digests.get(c) == _digest(t) and isinstance(tables.get(c), dict)}


def parse_kb_text(text: str, category: str, where: str = "<text>",
                  tables: dict[str, Any] | None = None) -> list[Signature]:
    """Parse one category file's TOML text (used by :func:`load_kb` and by tests); ``tables``:
    what ``tomllib`` makes of ``text``, where it is known already (:data:`PARSED_FILE`)."""
    try:
        data = tomllib.loads(text) if tables is None else tables
    except tomllib.TOMLDecodeError as exc:
        raise KBError(f"{where}: {exc}") from None
    declared = data.get("category", category)
    if declared != category:
        raise KBError(f"{where}: declares category {declared!r}, expected {category!r}")
    raws = data.get("signature", [])
    if not isinstance(raws, list):
        raise KBError(f"{where}: [[signature]] must be an array of tables")
    return [_build(r, category, where) for r in raws]


@lru_cache(maxsize=1)
def load_kb() -> tuple[Signature, ...]:
    """All signatures, in category order then file order. Cached per process."""
    sigs: list[Signature] = []
    seen: dict[str, str] = {}
    texts = toml_texts()
    parsed = parsed_tables(texts, _read_parsed())
    for category, text in texts.items():
        for sig in parse_kb_text(text, category, f"kb/{category}.toml", parsed.get(category)):
            if sig.id in seen:
                raise KBError(f"duplicate signature id {sig.id!r} ({seen[sig.id]} and {category})")
            seen[sig.id] = category
            sigs.append(sig)
    ids = set(seen)
    for sig in sigs:
        for other in sig.supersedes:
            if other not in ids:
                raise KBError(f"{sig.id}: supersedes unknown id {other!r}")
    return tuple(sigs)
