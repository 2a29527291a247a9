"""The ARCH rule table: which flag, backend or env var needs which GPU architecture.

The table lives in ``k3doctor/data/arch_rules.toml`` (one ``[[rule]]`` per flag value, backend
or env var, plus a small ``[models]`` table of known checkpoints). This module loads and
validates it, matches rules against a ``launch`` fact, evaluates a rule against the compute
capabilities of the GPUs in the ``gpu`` fact, and resolves the launched model (heads, experts,
MXFP4 or not) from the ``model`` fact's ``config`` or the built-in model table.

It is pure: no probing, no printing. ``python -m k3doctor.archrules markdown`` renders the
table as Markdown (``docs/arch-rules.md``).
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

try:  # Python >= 3.11
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as _toml  # type: ignore[no-redef]

__all__ = [
    "RULES_PATH",
    "RuleError",
    "CCRequirement",
    "PackageRequirement",
    "Rule",
    "Match",
    "Violation",
    "ModelInfo",
    "RuleTable",
    "load_rules",
    "parse_cc",
    "format_cc",
    "release_tuple",
    "device_groups",
    "env_truthy",
    "resolve_model",
    "mxfp4_reason",
    "render_markdown",
    "FIELD_FLAGS",
]

RULES_PATH = Path(__file__).resolve().parent / "data" / "arch_rules.toml"

ENGINES = ("sglang", "vllm", "nccl", "any")
KINDS = ("backend", "flag", "env", "quantization")
SEVERITIES = ("error", "warning", "info")

#: launch-fact field -> the flags that set it, per engine (first = canonical spelling).
FIELD_FLAGS: dict[str, dict[str, tuple[str, ...]]] = {
    "attention_backend": {"sglang": ("--attention-backend",), "vllm": ("--attention-backend",)},
    "decode_attention_backend": {"sglang": ("--decode-attention-backend",), "vllm": ()},
    "prefill_attention_backend": {"sglang": ("--prefill-attention-backend",), "vllm": ()},
    "moe_runner_backend": {"sglang": ("--moe-runner-backend",), "vllm": ("--moe-backend", "--moe-runner-backend")},
    "moe_a2a_backend": {"sglang": ("--moe-a2a-backend",), "vllm": ("--all2all-backend",)},
    "quantization": {"sglang": ("--quantization",), "vllm": ("--quantization", "-q")},
}

_RULE_KEYS = frozenset({
    "id", "engine", "kind", "option", "fields", "flags", "env", "values", "requires", "sm_major",
    "sm_min", "sm_max", "soft_major", "package", "tp_in", "tp_error", "model", "severity", "error",
    "verbatim", "fix", "source", "note", "handled_by",
})
_REQUIRED_RULE_KEYS = ("id", "engine", "kind", "option", "requires", "error", "fix", "source")
_MODEL_KEYS = frozenset({"family", "heads", "kda_heads", "experts", "quant", "source"})
_TRUE_WORDS = frozenset({"1", "true", "yes", "on", "y", "t"})


class RuleError(ValueError):
    """The rule table is malformed (a programming error in arch_rules.toml)."""


# -- small value helpers ---------------------------------------------------------------------
def parse_cc(value: Any) -> tuple[int, int] | None:
    """``[9, 0]``, ``(9, 0)``, ``"9.0"``, ``"sm_90"``, ``90`` → ``(9, 0)``; anything else → None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (list, tuple)) and len(value) >= 2:
        try:
            return int(value[0]), int(value[1])
        except (TypeError, ValueError):
            return None
    if isinstance(value, int):
        return (value // 10, value % 10) if value >= 10 else None
    if isinstance(value, str):
        text = value.strip().lower().removeprefix("sm_").removeprefix("sm")
        m = re.fullmatch(r"(\d+)\.(\d+)", text)
        if m:
            return int(m.group(1)), int(m.group(2))
        if text.isdigit() and len(text) >= 2:
            return int(text[:-1]), int(text[-1])
    return None


def format_cc(cc: tuple[int, int]) -> str:
    """``(9, 0)`` → ``"9.0"`` (the evidence format)."""
    return f"{cc[0]}.{cc[1]}"


def release_tuple(version: str) -> tuple[int, ...] | None:
    """The numeric release part of a version: ``"0.6.11rc1"`` → ``(0, 6, 11)``; None if none.

    PEP 440 versions (``2.4.0+cu124``, ``0.27.1rc1``) are read by ``packaging.version``; a build
    string outside PEP 440 (``v0.6.3-dirty``, NCCL's ``2.21.5-1``) falls back to its leading
    dotted numbers, since engines and drivers report such strings."""
    from packaging.version import InvalidVersion, Version

    text = str(version).strip()
    try:
        return Version(text).release
    except InvalidVersion:
        m = re.match(r"v?(\d+(?:\.\d+)*)", text)
        return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _cmp_release(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """Compare two release tuples as versions (``(2, 21)`` == ``(2, 21, 0)``)."""
    from packaging.version import Version

    va, vb = Version(".".join(map(str, a))), Version(".".join(map(str, b)))
    return (va > vb) - (va < vb)


def env_truthy(value: Any) -> bool:
    """How the engines read boolean env switches: ``1``/``true``/``yes``/``on`` or a non-zero int."""
    if value is None:
        return False
    text = str(value).strip().lower()
    if text in _TRUE_WORDS:
        return True
    try:
        return int(text) != 0
    except ValueError:
        return False


# -- the table -------------------------------------------------------------------------------
@dataclass(frozen=True)
class CCRequirement:
    """Allowed compute capabilities: a set of majors and/or inclusive min/max bounds."""

    majors: tuple[int, ...] | None = None
    sm_min: tuple[int, int] | None = None
    sm_max: tuple[int, int] | None = None
    soft_majors: tuple[int, ...] = ()

    def verdict(self, cc: tuple[int, int]) -> str:
        """``"ok"``, ``"soft"`` (only some engine versions accept it) or ``"fail"``."""
        ok = True
        if self.majors is not None and cc[0] not in self.majors:
            ok = False
        if self.sm_min is not None and cc < self.sm_min:
            ok = False
        if self.sm_max is not None and cc > self.sm_max:
            ok = False
        if ok:
            return "ok"
        return "soft" if cc[0] in self.soft_majors else "fail"

    def describe(self) -> str:
        parts = []
        if self.majors is not None:
            parts.append("no NVIDIA GPU" if not self.majors else "major " + "/".join(str(m) for m in self.majors))
        if self.sm_min is not None:
            parts.append(f">= {format_cc(self.sm_min)}")
        if self.sm_max is not None:
            parts.append(f"<= {format_cc(self.sm_max)}")
        return ", ".join(parts) or "any"


@dataclass(frozen=True)
class PackageRequirement:
    """On ``on_major`` GPUs the installed ``dist`` must be newer than ``above``."""

    dist: str
    above: str
    on_major: tuple[int, ...]


@dataclass(frozen=True)
class Match:
    """Where a rule matched the launch: ``where`` is the flag or env var, ``value`` as given."""

    where: str
    value: str
    via: str  # "flag" | "env"


@dataclass(frozen=True)
class Violation:
    """One reason a matched rule fails on this node.

    ``kind``: ``arch`` (compute capability outside the requirement), ``soft`` (only some engine
    versions accept it), ``package`` (package too old), ``package_unknown`` (version unknown),
    ``tp`` (tensor-parallel size outside ``tp_in``).
    """

    kind: str
    cc: tuple[int, int] | None = None
    names: tuple[str, ...] = ()
    count: int = 0
    version: str | None = None


@dataclass(frozen=True)
class Rule:
    """One row of the table (see the header of arch_rules.toml for the meaning of each key)."""

    id: str
    engine: str
    kind: str
    option: str
    requires: str
    cc: CCRequirement
    error: str
    verbatim: bool
    fix: str
    source: str
    fields: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    env: str = ""
    values: tuple[str, ...] = ()
    package: PackageRequirement | None = None
    tp_in: tuple[int, ...] = ()
    tp_error: str = ""
    model: str = ""
    severity: str = "error"
    note: str = ""
    handled_by: str = ""

    def applies_to(self, engine: str | None) -> bool:
        return self.engine in ("any", "nccl") or self.engine == engine

    def _value_matches(self, value: Any) -> bool:
        if value is None or value is False:
            return False
        if not self.values:
            return env_truthy(value)
        text = str(value).strip().casefold()
        return any(text == v.casefold() for v in self.values)

    def match(self, launch: Mapping[str, Any]) -> Match | None:
        """The first place in the launch that selects this rule's value, or None."""
        engine = str(launch.get("engine") or "")
        flags: Mapping[str, Any] = launch.get("flags") or {}
        for name in self.fields:
            value = launch.get(name)
            if value is not None and self._value_matches(value):
                spelled = FIELD_FLAGS.get(name, {}).get(engine, ())
                where = next((f for f in spelled if f in flags), spelled[0] if spelled else "--" + name.replace("_", "-"))
                return Match(where=where, value=str(value), via="flag")
        for flag in self.flags:
            value = flags.get(flag)
            if value is not None and value is not True and self._value_matches(value):
                return Match(where=flag, value=str(value), via="flag")
        if self.env:
            env: Mapping[str, Any] = launch.get("env") or {}
            value = env.get(self.env)
            if value is not None and self._value_matches(value):
                return Match(where=self.env, value=str(value), via="env")
        return None

    def evaluate(
        self,
        groups: Sequence[tuple[tuple[int, int], tuple[str, ...], int]],
        *,
        packages: Mapping[str, Any] | None,
        tp: int | None,
    ) -> list[Violation]:
        """Violations of this (matched) rule on GPUs ``groups`` = [(cc, names, count)]."""
        out: list[Violation] = []
        if self.tp_in and tp is not None and tp not in self.tp_in:
            out.append(Violation(kind="tp"))
        for cc, names, count in groups:
            verdict = self.cc.verdict(cc)
            if verdict != "ok":
                out.append(Violation(kind="arch" if verdict == "fail" else "soft", cc=cc, names=names, count=count))
                continue
            pkg = self.package
            if pkg is not None and cc[0] in pkg.on_major:
                raw = (packages or {}).get(pkg.dist)
                version = None if raw is None else str(raw)
                have = release_tuple(version) if version else None
                need = release_tuple(pkg.above)
                if have is None:
                    out.append(Violation(kind="package_unknown", cc=cc, names=names, count=count, version=version))
                elif need is not None and _cmp_release(have, need) <= 0:
                    out.append(Violation(kind="package", cc=cc, names=names, count=count, version=version))
        return out


@dataclass(frozen=True)
class ModelEntry:
    """A known checkpoint in the built-in model table."""

    id: str
    family: str
    heads: int | None
    experts: int | None
    kda_heads: int | None
    quant: str
    source: str


@dataclass(frozen=True)
class RuleTable:
    """The loaded table: rules in file order and known models by id."""

    rules: tuple[Rule, ...]
    models: Mapping[str, ModelEntry] = field(default_factory=dict)
    path: str = ""

    def by_id(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def matches(self, launch: Mapping[str, Any], *, include_handled: bool = False) -> list[tuple[Rule, Match]]:
        """Every rule for this launch's engine that the launch selects (in table order)."""
        engine = launch.get("engine")
        out = []
        for rule in self.rules:
            if rule.handled_by and not include_handled:
                continue
            if not rule.applies_to(engine):
                continue
            m = rule.match(launch)
            if m is not None:
                out.append((rule, m))
        return out


def _tuple_of(value: Any, kind: type, where: str) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, kind):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
        raise RuleError(f"{where}: expected a list of {kind.__name__}")
    return tuple(value)


def _cc_of(value: Any, where: str) -> tuple[int, int] | None:
    if value is None:
        return None
    cc = parse_cc(value) if isinstance(value, str) else None
    if cc is None:
        raise RuleError(f"{where}: expected \"major.minor\", got {value!r}")
    return cc


def _rule_from(raw: Mapping[str, Any], index: int) -> Rule:
    rid = raw.get("id", f"#{index}")
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        raise RuleError(f"rule {rid}: unknown key(s) {', '.join(sorted(unknown))}")
    missing = [k for k in _REQUIRED_RULE_KEYS if not raw.get(k)]
    if missing:
        raise RuleError(f"rule {rid}: missing {', '.join(missing)}")
    if raw["engine"] not in ENGINES:
        raise RuleError(f"rule {rid}: engine {raw['engine']!r} not in {ENGINES}")
    if raw["kind"] not in KINDS:
        raise RuleError(f"rule {rid}: kind {raw['kind']!r} not in {KINDS}")
    severity = raw.get("severity", "error")
    if severity not in SEVERITIES:
        raise RuleError(f"rule {rid}: severity {severity!r} not in {SEVERITIES}")
    fields = _tuple_of(raw.get("fields"), str, f"rule {rid}.fields")
    bad_fields = [f for f in fields if f not in FIELD_FLAGS]
    if bad_fields:
        raise RuleError(f"rule {rid}: fields {bad_fields} are not launch fields k3doctor maps to flags")
    flags = _tuple_of(raw.get("flags"), str, f"rule {rid}.flags")
    env = raw.get("env", "")
    if not isinstance(env, str):
        raise RuleError(f"rule {rid}: env must be a string")
    if not (fields or flags or env):
        raise RuleError(f"rule {rid}: needs at least one of fields, flags, env")
    values = _tuple_of(raw.get("values"), str, f"rule {rid}.values")
    if (fields or flags) and not values:
        raise RuleError(f"rule {rid}: flag/backend rules need values")
    majors = raw.get("sm_major")
    cc = CCRequirement(
        majors=None if majors is None else _tuple_of(majors, int, f"rule {rid}.sm_major"),
        sm_min=_cc_of(raw.get("sm_min"), f"rule {rid}.sm_min"),
        sm_max=_cc_of(raw.get("sm_max"), f"rule {rid}.sm_max"),
        soft_majors=_tuple_of(raw.get("soft_major"), int, f"rule {rid}.soft_major"),
    )
    if cc.majors is None and cc.sm_min is None and cc.sm_max is None:
        raise RuleError(f"rule {rid}: needs a compute-capability requirement (sm_major, sm_min or sm_max)")
    package = None
    if raw.get("package") is not None:
        p = raw["package"]
        if not isinstance(p, Mapping) or set(p) != {"dist", "above", "on_major"}:
            raise RuleError(f"rule {rid}: package needs exactly dist, above, on_major")
        if release_tuple(p["above"]) is None:
            raise RuleError(f"rule {rid}: package.above {p['above']!r} is not a version")
        package = PackageRequirement(str(p["dist"]), str(p["above"]), _tuple_of(p["on_major"], int, f"rule {rid}.package.on_major"))
    tp_in = _tuple_of(raw.get("tp_in"), int, f"rule {rid}.tp_in")
    if tp_in and not raw.get("tp_error"):
        raise RuleError(f"rule {rid}: tp_in needs tp_error (the engine's message)")
    verbatim = raw.get("verbatim", False)
    if not isinstance(verbatim, bool):
        raise RuleError(f"rule {rid}: verbatim must be true or false")
    source = str(raw["source"])
    if not source.startswith(("https://", "http://")):
        raise RuleError(f"rule {rid}: source must be a URL")
    return Rule(
        id=str(rid), engine=raw["engine"], kind=raw["kind"], option=str(raw["option"]),
        requires=str(raw["requires"]), cc=cc, error=str(raw["error"]), verbatim=verbatim,
        fix=str(raw["fix"]), source=source, fields=fields, flags=flags, env=env, values=values,
        package=package, tp_in=tp_in, tp_error=str(raw.get("tp_error", "")), model=str(raw.get("model", "")),
        severity=severity, note=str(raw.get("note", "")), handled_by=str(raw.get("handled_by", "")),
    )


def _model_from(model_id: str, raw: Mapping[str, Any]) -> ModelEntry:
    unknown = set(raw) - _MODEL_KEYS
    if unknown:
        raise RuleError(f"model {model_id}: unknown key(s) {', '.join(sorted(unknown))}")
    if "/" not in model_id or not raw.get("family"):
        raise RuleError(f"model {model_id}: needs an org/name id and a family")
    for key in ("heads", "experts", "kda_heads"):
        if key in raw and (not isinstance(raw[key], int) or raw[key] <= 0):
            raise RuleError(f"model {model_id}: {key} must be a positive integer")
    return ModelEntry(
        id=model_id, family=str(raw["family"]), heads=raw.get("heads"), experts=raw.get("experts"),
        kda_heads=raw.get("kda_heads"), quant=str(raw.get("quant", "")), source=str(raw.get("source", "")),
    )


def parse_rules(doc: Mapping[str, Any], path: str = "") -> RuleTable:
    """Validate a parsed TOML document and build the table; raise :class:`RuleError`."""
    if doc.get("schema_version") != 1:
        raise RuleError(f"{path}: schema_version must be 1")
    raw_rules = doc.get("rule")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise RuleError(f"{path}: no [[rule]] entries")
    rules = tuple(_rule_from(r, i) for i, r in enumerate(raw_rules))
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise RuleError(f"{path}: duplicate rule id {rule.id}")
        seen.add(rule.id)
    models = {mid: _model_from(mid, raw) for mid, raw in (doc.get("models") or {}).items()}
    return RuleTable(rules=rules, models=models, path=path)


@functools.lru_cache(maxsize=4)
def load_rules(path: str | None = None) -> RuleTable:
    """Load (and cache) the rule table shipped in the package, or the one at ``path``."""
    from .boundedio import BoundedReadError, read_text

    p = Path(path) if path else RULES_PATH
    try:
        doc = _toml.loads(read_text(p, kind="config"))
    except BoundedReadError as exc:
        raise RuleError(f"{exc.path}: {exc.reason}") from None
    return parse_rules(doc, str(p))


# -- facts helpers ---------------------------------------------------------------------------
def device_groups(gpu: Mapping[str, Any] | None) -> list[tuple[tuple[int, int], tuple[str, ...], int]]:
    """The GPUs of a ``gpu`` fact grouped by compute capability: [(cc, names, count)]."""
    groups: dict[tuple[int, int], tuple[list[str], list[int]]] = {}
    for dev in (gpu or {}).get("devices") or []:
        cc = parse_cc(dev.get("cc"))
        if cc is None:
            continue
        names, count = groups.setdefault(cc, ([], [0]))
        name = str(dev.get("name") or "GPU")
        if name not in names:
            names.append(name)
        count[0] += 1
    return [(cc, tuple(names), count[0]) for cc, (names, count) in sorted(groups.items())]


@dataclass(frozen=True)
class ModelInfo:
    """What the ARCH checks know about the launched model, and where it came from."""

    id: str | None
    family: str | None
    heads: int | None
    experts: int | None
    kda_heads: int | None
    quant: str | None
    quant_detail: str | None
    source: str  # "config", "table", "config+table" or ""


#: the checkpoint scanner's ``config.family`` (k3doctor.ckpt.quant.ARCHITECTURES) -> ARCH family
_SCAN_FAMILIES = {"kimi_k3": "kimi-k3", "deepseek_v3": "deepseek-v3", "gpt_oss": "gpt-oss", "qwen3_moe": "qwen3-moe"}


def _family_from_config(config: Mapping[str, Any], text: Mapping[str, Any]) -> str | None:
    scanned = _SCAN_FAMILIES.get(str(config.get("family") or ""))
    if scanned:
        return scanned
    archs = [str(a) for a in (config.get("architectures") or []) + (text.get("architectures") or [])]
    if config.get("architecture"):
        archs.append(str(config["architecture"]))
    types = {str(config.get("model_type") or ""), str(text.get("model_type") or "")}
    if "kimi_k3" in types or any(a.startswith("KimiK3") for a in archs):
        return "kimi-k3"
    if "gpt_oss" in types or any(a.startswith("GptOss") for a in archs):
        return "gpt-oss"
    if {"deepseek_v3", "deepseek_v32"} & types:
        return "deepseek-v3"
    if "kimi_k2" in types:
        return "kimi-k2"
    if "qwen3_moe" in types:
        return "qwen3-moe"
    return None


def _quant_from_config(config: Mapping[str, Any], text: Mapping[str, Any]) -> tuple[str | None, str | None]:
    qc = text.get("quantization_config") or config.get("quantization_config")
    if not isinstance(qc, Mapping):
        if "quant_method" in config or "fp4" in config:  # the checkpoint scanner's summary
            qc = {"quant_method": config.get("quant_method"), "format": config.get("quant_format")}
            if config.get("fp4") == "mxfp4" and "mxfp4" not in str(qc["format"] or "").lower():
                return "mxfp4", "config.json: MXFP4 weights"
        else:
            return None, None
    method = str(qc.get("quant_method") or "").lower()
    fmt = str(qc.get("format") or "").lower()
    if method == "mxfp4":
        return "mxfp4", "quantization_config.quant_method = mxfp4"
    if "mxfp4" in fmt:
        return "mxfp4", f"quantization_config: {method or 'compressed-tensors'} format {fmt}"
    return (method or None), (f"quantization_config.quant_method = {method}" if method else None)


def _id_candidates(model: str) -> list[str]:
    text = model.strip().rstrip("/")
    out = [text]
    m = re.search(r"models--([^/]+?)--([^/]+)", text)
    if m:
        out.append(f"{m.group(1)}/{m.group(2)}")
    parts = [p for p in re.split(r"[\\/]", text) if p]
    if len(parts) >= 2:
        out.append("/".join(parts[-2:]))
    if parts:
        out.append(parts[-1])
    return out


def _table_entry(model: str | None, table: RuleTable) -> ModelEntry | None:
    if not model:
        return None
    by_full = {mid.casefold(): e for mid, e in table.models.items()}
    by_name = {mid.split("/", 1)[1].casefold(): e for mid, e in table.models.items()}
    for cand in _id_candidates(model):
        key = cand.casefold()
        if key in by_full:
            return by_full[key]
        if "/" not in key and key in by_name:
            return by_name[key]
    return None


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def resolve_model(
    launch: Mapping[str, Any] | None, model_fact: Mapping[str, Any] | None, table: RuleTable | None = None
) -> ModelInfo:
    """Combine the ``model`` fact's config (preferred) with the built-in model table.

    ``model_fact["config"]`` may be the parsed config.json or the checkpoint scanner's summary of
    it (``family``, ``quant_method``, ``quant_format``, ``fp4``, ``num_experts``, …); the model id
    is the launch's model, else the scanner's ``repo``.
    """
    table = table or load_rules()
    model_id = (launch or {}).get("model") or (model_fact or {}).get("repo")
    model_id = str(model_id) if model_id else None
    entry = _table_entry(model_id, table)
    config = (model_fact or {}).get("config")
    config = config if isinstance(config, Mapping) else None
    heads = experts = kda = None
    family = quant = quant_detail = None
    source = ""
    if config is not None:
        text = config.get("text_config")
        text = text if isinstance(text, Mapping) else config
        heads = _positive_int(text.get("num_attention_heads")) or _positive_int(config.get("num_attention_heads"))
        for key in ("num_experts", "n_routed_experts", "num_local_experts"):
            experts = experts or _positive_int(text.get(key)) or _positive_int(config.get(key))
        linear = text.get("linear_attn_config")
        if isinstance(linear, Mapping):
            kda = _positive_int(linear.get("num_heads"))
        family = _family_from_config(config, text)
        quant, quant_detail = _quant_from_config(config, text)
        source = "config"
    if entry is not None:
        heads = heads or entry.heads
        experts = experts or entry.experts
        kda = kda or entry.kda_heads
        family = family or entry.family
        if quant is None and entry.quant:
            quant, quant_detail = entry.quant, f"known checkpoint {entry.id} ({entry.quant})"
        source = "config+table" if source else "table"
    return ModelInfo(
        id=model_id, family=family, heads=heads, experts=experts, kda_heads=kda,
        quant=quant, quant_detail=quant_detail, source=source,
    )


def mxfp4_reason(launch: Mapping[str, Any] | None, info: ModelInfo) -> str | None:
    """Why the launched model is MXFP4 (the launch's --quantization, config, or a known id)."""
    q = str((launch or {}).get("quantization") or "").lower()
    if q == "mxfp4":
        return "--quantization mxfp4"
    if q and q not in ("auto", "none", "compressed-tensors"):
        return None  # the user forced another quantization method
    if info.quant == "mxfp4":
        return info.quant_detail or "MXFP4 checkpoint"
    return None


# -- rendering -------------------------------------------------------------------------------
def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(table: RuleTable | None = None) -> str:
    """The rule table as Markdown (docs/arch-rules.md)."""
    table = table or load_rules()
    lines = [
        "# ARCH rules: flags, backends and env vars vs GPU architecture",
        "",
        "<!-- generated by `python -m k3doctor.archrules markdown > docs/arch-rules.md`;"
        " edit k3doctor/data/arch_rules.toml instead -->",
        "",
        f"{len(table.rules)} rules from `k3doctor/data/arch_rules.toml`, checked by ARCH001 "
        "(rows marked *handled by* are checked by that code instead). "
        "*Allowed CC* is the compute capability the item needs; *soft* majors give a warning "
        "because only some engine versions accept them. An error marked *(described)* is not a "
        "single engine message but what fails.",
        "",
        "| Engine | Item | Requires | Allowed CC | Extra conditions | Engine error | Fix | Source |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table.rules:
        cond = []
        if r.cc.soft_majors:
            cond.append("soft on major " + "/".join(str(m) for m in r.cc.soft_majors))
        if r.package:
            cond.append(f"{r.package.dist} > {r.package.above} on major " + "/".join(str(m) for m in r.package.on_major))
        if r.tp_in:
            cond.append("TP in {" + ", ".join(str(t) for t in r.tp_in) + "}: “" + r.tp_error + "”")
        if r.model:
            cond.append(f"model {r.model} only")
        if r.handled_by:
            cond.append(f"handled by {r.handled_by}")
        if r.severity != "error":
            cond.append(f"severity {r.severity}")
        if r.note:
            cond.append(r.note)
        error = f"“{r.error}”" if r.verbatim else f"{r.error} *(described)*"
        lines.append(
            f"| {r.engine} | `{_md(r.option)}` | {_md(r.requires)} | {_md(r.cc.describe())} | "
            f"{_md('; '.join(cond)) or '—'} | {_md(error)} | {_md(r.fix)} | [link]({r.source}) |"
        )
    lines += [
        "",
        "## Known models (used when no config.json is available)",
        "",
        "| Model | Family | Attention heads | Routed experts | KDA heads | Weights | Source |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in table.models.values():
        lines.append(
            f"| `{m.id}` | {m.family} | {m.heads or '—'} | {m.experts or '—'} | {m.kda_heads or '—'} | "
            f"{m.quant or '—'} | {_md(m.source)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m k3doctor.archrules markdown`` prints the rendered table."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["markdown"]:
        print("usage: python -m k3doctor.archrules markdown > docs/arch-rules.md", file=sys.stderr)
        return 2
    sys.stdout.write(render_markdown())
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
