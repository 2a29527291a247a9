"""Understand an SGLang or vLLM launch command without running it.

``parse_launch(argv)`` accepts the words after ``k3doctor check --`` (or one shell string) and
returns a :class:`LaunchSpec`: the engine, the model, the parallel plan and the settings that
checks care about. Leading ``VAR=value`` words, an ``--env-file`` of shell ``export`` lines and
(live) the process environment are merged into ``env`` (launch line > env file > process).

Unknown flags are kept (``unknown_flags``) and never fatal; a value that does not parse (``--tp
sixteen``) is recorded in ``errors`` and becomes a finding. Only an empty command or an engine
k3doctor does not know raises :class:`LaunchError` (a usage error).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence, TypeVar

from .factbase import Fact, _int, _str
from .parallelism import world_size

if TYPE_CHECKING:  # pragma: no cover
    from .memory.placement import Parallel

__all__ = ["LaunchSpec", "LaunchError", "parse_launch", "parse_env_file", "ENGINES"]

ENGINES = ("sglang", "vllm")

_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


class LaunchError(ValueError):
    """The launch command cannot be understood at all (empty, or not an SGLang/vLLM launch)."""


_T = TypeVar("_T")
#: (kind, flag spellings per engine) of a field read from a flag. kind: int | float | str | bool
_Field = tuple[str, dict[str, tuple[str, ...]]]


def _flag(default: _T, *, sglang: tuple[str, ...] = (), vllm: tuple[str, ...] = ()) -> _T:
    """A :class:`LaunchSpec` field set by a launch flag: its default and the flag's spellings per
    engine (none: the engine has no such flag). Its kind is the field's annotation, so the field
    list, the types and the flag table are one declaration (``_FIELDS`` is derived from it)."""
    return field(default=default, metadata={"flags": {"sglang": sglang, "vllm": vllm}})


# Flags known to each engine that k3doctor does not interpret: value-taking vs boolean. Knowing
# them keeps `unknown_flags` meaningful (a typo shows up there) and parsing exact.
_KNOWN_VALUE_FLAGS: dict[str, frozenset[str]] = {
    "sglang": frozenset({
        "--reasoning-parser", "--tool-call-parser", "--mamba-full-memory-ratio", "--mamba-radix-cache-strategy",
        "--speculative-draft-model-path", "--speculative-dspark-block-size", "--speculative-num-steps",
        "--speculative-eagle-topk", "--speculative-num-draft-tokens", "--max-prefill-tokens",
        "--disaggregation-mode", "--disaggregation-transfer-backend", "--disaggregation-bootstrap-port",
        "--disaggregation-decode-extra-slots", "--hicache-write-policy", "--mm-feature-transport",
        "--page-size", "--schedule-policy", "--log-level", "--api-key", "--chat-template", "--dtype",
        "--ep-num-redundant-experts", "--moe-dense-tp-size", "--cuda-graph-bs", "--stream-interval",
        "--watchdog-timeout", "--grammar-backend", "--sampling-backend", "--json-model-override-args",
        "--max-total-tokens", "--random-seed", "--nsa-prefill-backend", "--nsa-decode-backend",
        "--deepep-mode", "--init-expert-location", "--eplb-algorithm",
        "--file-storage-path", "--base-gpu-id", "--gpu-id-step", "--tokenizer-mode",
    }),
    "vllm": frozenset({
        "--reasoning-parser", "--tool-call-parser", "--max-num-batched-tokens", "--block-size",
        "--swap-space", "--dtype", "--seed", "--api-key", "--chat-template", "--tokenizer-mode",
        "--data-parallel-size-local", "--data-parallel-start-rank", "--data-parallel-rpc-port",
        "--data-parallel-backend", "--compilation-config", "-O", "--attention-config", "--mamba-cache-mode",
        "--kv-transfer-config", "--cuda-graph-sizes", "--limit-mm-per-prompt", "--hf-overrides",
        "--override-generation-config", "--generation-config", "--uvicorn-log-level", "--kv-cache-memory",
        "--cpu-offload-gb", "--max-logprobs", "--eplb-config", "--num-redundant-experts", "--mm-encoder-tp-mode",
        "--async-scheduling", "--worker-extension-cls", "--ray-workers-use-nsight", "--model-impl",
        "--mxfp4-backend", "--code-revision", "--tokenizer-revision", "--config-format",
    }),
}
_KNOWN_BOOL_FLAGS: dict[str, frozenset[str]] = {
    "sglang": frozenset({
        "--enable-hierarchical-cache", "--disable-custom-all-reduce", "--enable-torch-compile",
        "--disable-radix-cache", "--enable-mixed-chunk", "--enable-metrics", "--enable-cache-report",
        "--enable-nccl-nvls", "--enable-two-batch-overlap", "--enable-eplb", "--skip-server-warmup",
        "--enable-linear-replayssm-spec", "--disable-overlap-schedule", "--enable-deepep-moe",
        "--enable-ep-moe", "--enable-flashinfer-allreduce-fusion", "--enable-expert-distribution-metrics",
        "--log-requests", "--show-time-cost", "--enable-piecewise-cuda-graph", "--disable-shared-experts-fusion",
        "--enable-multimodal", "--skip-tokenizer-init", "--allow-auto-truncate", "--weight-loader-prefetch-checkpoints",
    }),
    "vllm": frozenset({
        "--enable-auto-tool-choice", "--disable-custom-all-reduce", "--enable-prefix-caching",
        "--no-enable-prefix-caching", "--enable-chunked-prefill", "--no-enable-chunked-prefill",
        "--disable-log-requests", "--disable-log-stats", "--enable-eplb", "--language-model-only",
        "--no-enable-flashinfer-autotune", "--enable-dbo", "--no-disable-hybrid-kv-cache-manager",
        "--disable-hybrid-kv-cache-manager", "--enable-lora", "--data-parallel-hybrid-lb",
        "--data-parallel-external-lb", "--enable-sleep-mode", "--safetensors-load-strategy",
        "--no-async-scheduling", "--enable-log-requests", "--use-v2-block-manager",
    }),
}


@dataclass(frozen=True, eq=False)
class LaunchSpec(Fact):
    """The ``launch`` fact: a parsed launch command. ``None`` means the flag was not given (the
    engine's default applies).

    Besides the flags, the parallel plan is derived once, when the fact is built: ``world_size``,
    ``attention_tp`` (SGLang dp-attention divides tp by dp), ``ep`` as the engine applies it (vLLM
    ``--enable-expert-parallel``: tp·dp), ``gpus_per_node`` and the rendezvous ``head_host`` /
    ``head_port``. As a :class:`~collections.abc.Mapping` over its JSON document (what ``k3doctor
    snapshot`` writes under ``launch``) a field reads as its typed value: ``launch["engine"]`` and
    ``launch.get("errors")`` are what the attributes hold (the default when the document lacks the
    key or has a value of the wrong type), ``"tp" in launch`` says whether the document has the key,
    and other keys read the document.
    """

    def __getitem__(self, key: str) -> Any:
        if key in _ATTRS:
            return getattr(self, key)
        return self.doc[key]

    def __contains__(self, key: object) -> bool:
        return key in self.doc

    name: ClassVar[str] = "launch"
    engine: str = ""
    entry: str = ""
    argv: list[str] = field(default_factory=list)
    model: str | None = _flag(None, sglang=("--model-path", "--model"), vllm=("--model",))
    tp: int = _flag(1, sglang=("--tp-size", "--tp", "--tensor-parallel-size"),
                    vllm=("--tensor-parallel-size", "-tp", "--tp", "--tp-size"))
    ep: int = _flag(1, sglang=("--ep-size", "--ep", "--expert-parallel-size"))
    pp: int = _flag(1, sglang=("--pp-size", "--pp", "--pipeline-parallel-size"),
                    vllm=("--pipeline-parallel-size", "-pp", "--pp"))
    dp: int = _flag(1, sglang=("--dp-size", "--dp", "--data-parallel-size"),
                    vllm=("--data-parallel-size", "-dp", "--dp"))
    dcp: int = _flag(1, sglang=("--dcp-size", "--dcp", "--decode-context-parallel-size"),
                     vllm=("--decode-context-parallel-size", "-dcp", "--dcp"))
    enable_dp_attention: bool = _flag(False, sglang=("--enable-dp-attention",))
    enable_expert_parallel: bool = _flag(False, vllm=("--enable-expert-parallel", "-ep"))
    nnodes: int = _flag(1, sglang=("--nnodes",), vllm=("--nnodes", "-n"))
    node_rank: int = _flag(0, sglang=("--node-rank",), vllm=("--node-rank", "-r"))
    dist_init_addr: str | None = _flag(None, sglang=("--dist-init-addr", "--nccl-init-addr"),
                                       vllm=("--master-addr", "--data-parallel-address"))
    master_port: int | None = _flag(None, vllm=("--master-port",))
    attention_backend: str | None = _flag(None, sglang=("--attention-backend",), vllm=("--attention-backend",))
    prefill_attention_backend: str | None = _flag(None, sglang=("--prefill-attention-backend",))
    decode_attention_backend: str | None = _flag(None, sglang=("--decode-attention-backend",))
    moe_runner_backend: str | None = _flag(None, sglang=("--moe-runner-backend",),
                                           vllm=("--moe-backend", "--moe-runner-backend"))
    moe_a2a_backend: str | None = _flag(None, sglang=("--moe-a2a-backend",), vllm=("--all2all-backend",))
    quantization: str | None = _flag(None, sglang=("--quantization",), vllm=("--quantization", "-q"))
    kv_cache_dtype: str | None = _flag(None, sglang=("--kv-cache-dtype",), vllm=("--kv-cache-dtype",))
    mem_fraction: float | None = _flag(None, sglang=("--mem-fraction-static", "--mem-fraction"),
                                       vllm=("--gpu-memory-utilization",))
    context_length: int | None = _flag(None, sglang=("--context-length",), vllm=("--max-model-len",))
    load_format: str | None = _flag(None, sglang=("--load-format",), vllm=("--load-format",))
    cuda_graph_max_bs: int | None = _flag(None, sglang=("--cuda-graph-max-bs",),
                                          vllm=("--max-cudagraph-capture-size", "--max-seq-len-to-capture"))
    max_running_requests: int | None = _flag(None, sglang=("--max-running-requests",), vllm=("--max-num-seqs",))
    chunked_prefill_size: int | None = _flag(None, sglang=("--chunked-prefill-size",),
                                             vllm=("--max-num-batched-tokens",))
    trust_remote_code: bool = _flag(False, sglang=("--trust-remote-code",), vllm=("--trust-remote-code",))
    enforce_eager: bool = _flag(False, sglang=("--disable-cuda-graph",), vllm=("--enforce-eager",))
    enable_symm_mem: bool = _flag(False, sglang=("--enable-symm-mem",))
    enable_dp_lm_head: bool = _flag(False, sglang=("--enable-dp-lm-head",))
    mamba_ssm_dtype: str | None = _flag(None, sglang=("--mamba-ssm-dtype",), vllm=("--mamba-ssm-cache-dtype",))
    speculative_algorithm: str | None = _flag(None, sglang=("--speculative-algorithm",))
    speculative_config: str | None = _flag(None, vllm=("--speculative-config",))
    host: str | None = _flag(None, sglang=("--host",), vllm=("--host",))
    port: int | None = _flag(None, sglang=("--port",), vllm=("--port",))
    dist_timeout: int | None = _flag(None, sglang=("--dist-timeout",))
    headless: bool = _flag(False, vllm=("--headless",))
    distributed_executor_backend: str | None = _flag(None, vllm=("--distributed-executor-backend",))
    tokenizer: str | None = _flag(None, sglang=("--tokenizer-path",), vllm=("--tokenizer",))
    revision: str | None = _flag(None, sglang=("--revision",), vllm=("--revision",))
    download_dir: str | None = _flag(None, sglang=("--download-dir",), vllm=("--download-dir",))
    served_model_name: str | None = _flag(None, sglang=("--served-model-name",), vllm=("--served-model-name",))
    #: every flag as given: ``--long-name`` -> value (str) or True
    flags: dict[str, Any] = field(default_factory=dict)
    #: effective environment: process env < --env-file < leading VAR=value words
    env: dict[str, str] = field(default_factory=dict)
    #: just the VAR=value words of the launch line and the env file (what the user pinned)
    env_assignments: dict[str, str] = field(default_factory=dict)
    unknown_flags: list[str] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: fields whose launch value was rejected (CMD001): left at their default here, so a check that
    #: depends on one of them skips instead of judging a value the engine would never run with
    invalid: list[str] = field(default_factory=list)
    # -- derived once (from_json) -----------------------------------------------------------
    world_size: int = 1
    attention_tp: int = 1
    gpus_per_node: int | None = None
    head_host: str | None = None
    head_port: int | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "LaunchSpec":
        """The typed fact of a ``launch`` document (a snapshot's, or :func:`parse_launch`'s); a value
        of the wrong type falls back to the field's default, never an exception."""
        kw: dict[str, Any] = {name: _lenient(doc.get(name), kind, default)
                              for name, (kind, default) in _FACT_FIELDS.items() if name in doc}
        for name in ("tp", "pp", "dp", "ep", "dcp", "nnodes"):
            if name in kw and kw[name] < 1:
                kw[name] = 1
        spec = cls(doc=doc, **kw)
        engine, tp, pp, dp, dpa = spec.engine, spec.tp, spec.pp, spec.dp, spec.enable_dp_attention
        world = _int(doc.get("world_size")) or world_size(engine, tp, pp, dp, dpa)
        attn = _int(doc.get("attention_tp")) or _attention_tp(engine, tp, dp, dpa)
        derived = {"world_size": world, "attention_tp": attn if attn > 0 else tp,
                   "gpus_per_node": _int(doc.get("gpus_per_node")), "head_host": _str(doc.get("head_host")),
                   "head_port": _int(doc.get("head_port"))}
        for name, value in derived.items():
            object.__setattr__(spec, name, value)
        return spec

    def to_dict(self) -> dict[str, Any]:
        """The ``launch`` fact's JSON document."""
        return self.to_json()

    def placement(self, **over: Any) -> "Parallel":
        """This launch as the memory planner's :class:`~k3doctor.memory.placement.Parallel` (the
        parallel layout and every flag that changes what a rank holds), with ``over`` replacing
        fields that are not None (``concurrency``, or a what-if layout of ``plan --search``)."""
        from .launchflags import flag_number, redundant_experts, vllm_mtp_draft
        from .memory.placement import Parallel

        engine, flags = self.engine or "sglang", self.flags
        ep = (2 if self.enable_expert_parallel else 1) if engine == "vllm" else self.ep
        par = Parallel(
            engine=engine, tp=self.tp, ep=ep, pp=self.pp, dp=self.dp, dp_attention=self.enable_dp_attention,
            dcp=self.dcp, nnodes=self.nnodes, gpus_per_node=self.gpus_per_node, moe_backend=self.moe_runner_backend,
            a2a_backend=self.moe_a2a_backend, dp_lm_head=self.enable_dp_lm_head, load_format=self.load_format,
            kv_cache_dtype=self.kv_cache_dtype, mem_fraction=self.mem_fraction, context=self.context_length,
            mamba_ssm_dtype=self.mamba_ssm_dtype, cuda_graph_max_bs=self.cuda_graph_max_bs,
            chunked_prefill_size=self.chunked_prefill_size if engine == "sglang" else None,
            max_num_batched_tokens=self.chunked_prefill_size if engine == "vllm" else None,
            max_running=self.max_running_requests,
            speculative=bool(self.speculative_algorithm or self.speculative_config),
            mtp_draft=vllm_mtp_draft(engine, self.speculative_config),
            shared_experts_fusion=not flags.get("--disable-shared-experts-fusion"),
            language_only=bool(flags.get("--language-model-only")),
            mamba_ratio=flag_number(flags, "--mamba-full-memory-ratio", float),
            moe_dense_tp_size=flag_number(flags, "--moe-dense-tp-size", int),  # type: ignore[arg-type]
            redundant_experts=redundant_experts(engine, flags),
            mm_encoder_dp=str(flags.get("--mm-encoder-tp-mode") or "") == "data",
            env=dict(self.env),
        )
        for k, v in over.items():
            if v is not None:
                setattr(par, k, v)
        return par


def _lenient(value: Any, kind: str, default: Any) -> Any:
    """``value`` when it has the field's JSON type ``kind``, else ``default``."""
    ok = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "bool": lambda v: isinstance(v, bool),
        "list": lambda v: isinstance(v, (list, tuple)),
        "dict": lambda v: isinstance(v, Mapping),
    }[kind](value)
    if not ok:
        return default
    if kind == "float":
        return float(value)
    if kind == "list":
        return [str(x) for x in value]
    if kind == "dict":
        return dict(value)
    return value


def _kind_and_default(f: Any) -> tuple[str, Any]:
    text = str(f.type)
    kind = next(k for k in ("list", "dict", "bool", "float", "int", "str") if text.startswith(k))
    default = f.default_factory() if f.default_factory is not MISSING else f.default
    return kind, default


_DERIVED = ("world_size", "attention_tp", "gpus_per_node", "head_host", "head_port")
#: the fields a LaunchSpec reads as attributes through its Mapping interface
_ATTRS = frozenset(f.name for f in fields(LaunchSpec) if f.name != "doc")
#: field -> (JSON kind, default) of every field read from the document
_FACT_FIELDS: dict[str, tuple[str, Any]] = {
    f.name: _kind_and_default(f) for f in fields(LaunchSpec) if f.name != "doc" and f.name not in _DERIVED
}
#: canonical field -> (kind, flag spellings per engine) of every field a launch flag sets
_FIELDS: dict[str, _Field] = {
    f.name: (_FACT_FIELDS[f.name][0], dict(f.metadata["flags"])) for f in fields(LaunchSpec) if "flags" in f.metadata
}


def _draft(engine: str, entry: str, argv: list[str]) -> SimpleNamespace:
    """A mutable draft with every field at its default, filled while parsing."""
    values = {name: (list(d) if isinstance(d, list) else dict(d) if isinstance(d, dict) else d)
              for name, (_kind, d) in _FACT_FIELDS.items()}
    return SimpleNamespace(**{**values, "engine": engine, "entry": entry, "argv": argv})


def _attention_tp(engine: str, tp: int, dp: int, dp_attention: bool) -> int:
    """Ranks one attention layer is split over: SGLang dp-attention divides tp by dp."""
    if engine == "sglang" and dp_attention and dp > 0 and tp % dp == 0:
        return tp // dp
    return tp


def _finish(draft: SimpleNamespace) -> LaunchSpec:
    """The ``launch`` document of a finished draft, with the derived plan, as a :class:`LaunchSpec`."""
    from .hostenv.netinfo import parse_hostport

    d = dict(vars(draft))
    world = world_size(d["engine"], d["tp"], d["pp"], d["dp"], d["enable_dp_attention"])
    d["attention_tp"] = _attention_tp(d["engine"], d["tp"], d["dp"], d["enable_dp_attention"])
    if d["engine"] == "vllm":  # vLLM has no EP size: --enable-expert-parallel spreads experts over tp·dp
        d["ep"] = d["tp"] * d["dp"] if d["enable_expert_parallel"] else 1
    host, port = None, d["master_port"]
    if (d["dist_init_addr"] or "").strip():
        h, port, _err = parse_hostport(d["dist_init_addr"], default_port=d["master_port"])
        host = h or None
    d.update(world_size=world, head_host=host, head_port=port,
             gpus_per_node=world // d["nnodes"] if d["nnodes"] > 0 and world % d["nnodes"] == 0 else None)
    return LaunchSpec.from_json(d)


def parse_env_file(path: str | Path) -> dict[str, str]:
    """Read shell assignment lines (``export A=b``, ``A="b c"``, comments); raise LaunchError."""
    from .boundedio import BoundedReadError, read_text

    p = Path(path)
    try:
        text = read_text(p, kind="env", errors="replace")
    except BoundedReadError as exc:
        raise LaunchError(f"--env-file {p}: cannot read ({exc.reason})") from None
    env: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            words = shlex.split(stripped, comments=True)
        except ValueError as exc:
            raise LaunchError(f"--env-file {p}:{lineno}: {exc} (fix the quoting)") from None
        if words and words[0] == "export":
            words = words[1:]
        for word in words:
            m = _ASSIGN_RE.match(word)
            if m:
                env[m.group(1)] = m.group(2)
    return env


def _split(argv: Sequence[str] | str) -> list[str]:
    if isinstance(argv, str):
        try:
            return shlex.split(argv.replace("\\\n", " "))
        except ValueError as exc:
            raise LaunchError(f"launch command: {exc} (check the quoting)") from None
    words = [w for w in argv if w != "\\"]
    if len(words) == 1 and " " in words[0].strip():
        return _split(words[0])
    return words


def _detect(words: list[str]) -> tuple[str, str, int]:
    """Return (engine, entry description, index of the first engine argument)."""
    i = 0
    # wrappers that take no interesting arguments of their own
    while i < len(words) and words[i] in ("env", "exec", "nohup", "time", "stdbuf"):
        i += 1
    if i >= len(words):
        raise LaunchError("the launch command after `--` is empty; give it, e.g. `-- sglang serve --model-path …`")
    head = os.path.basename(words[i])
    rest = words[i + 1:]
    if head in ("sglang", "vllm"):
        if rest and rest[0] == "serve":
            return head, f"{head} serve", i + 2
        raise LaunchError(f"`{' '.join(words[i:i + 2])}`: k3doctor understands `{head} serve …`")
    if re.match(r"^python(\d+(\.\d+)?)?$", head):
        j = 0
        while j < len(rest) and rest[j].startswith("-") and rest[j] != "-m":
            j += 1
        if j + 1 < len(rest) and rest[j] == "-m":
            module = rest[j + 1]
            if module in ("sglang.launch_server", "sglang.srt.server"):
                return "sglang", f"python -m {module}", i + j + 3
            if module in ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server"):
                return "vllm", f"python -m {module}", i + j + 3
            if module in ("vllm.entrypoints.cli.main", "vllm") and rest[j + 2:j + 3] == ["serve"]:
                return "vllm", f"python -m {module} serve", i + j + 4
            raise LaunchError(
                f"`python -m {module}` is not an engine k3doctor knows; it understands `sglang serve`, "
                "`python -m sglang.launch_server`, `vllm serve` and `python -m vllm.entrypoints.openai.api_server`"
            )
    raise LaunchError(
        f"`{words[i]}` is not an engine launch k3doctor knows; it understands `sglang serve`, "
        "`python -m sglang.launch_server`, `vllm serve` and `python -m vllm.entrypoints.openai.api_server`"
    )


def _alias_table(engine: str) -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for name, (kind, per_engine) in _FIELDS.items():
        for alias in per_engine.get(engine, ()):
            table[alias] = (name, kind)
    return table


def _convert(kind: str, flag: str, raw: str, errors: list[str]) -> Any:
    if kind == "int":
        try:
            value = int(raw)
        except ValueError:
            errors.append(f"{flag} {raw!r}: expected a whole number")
            return None
        if value < 0:
            errors.append(f"{flag} {raw!r}: must not be negative")
            return None
        return value
    if kind == "float":
        try:
            return float(raw)
        except ValueError:
            errors.append(f"{flag} {raw!r}: expected a number such as 0.85")
            return None
    if kind == "bool":
        lowered = raw.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        errors.append(f"{flag} {raw!r}: expected true or false")
        return None
    return raw


def parse_launch(
    argv: Sequence[str] | str,
    *,
    env_file: str | Path | None = None,
    process_env: Mapping[str, str] | None = None,
) -> LaunchSpec:
    """Parse a launch command; see the module docstring."""
    words = _split(argv)
    assignments: dict[str, str] = {}
    words = _take_assignments(words, assignments)
    words = _unwrap_docker(words, assignments)
    words = _unwrap_offline_llm(words)
    if words and words[0] == "env":  # `env A=1 B=2 cmd …`
        words = ["env", *_take_assignments(words[1:], assignments)]
    if not words or words == ["env"]:
        raise LaunchError("the launch command after `--` is empty; give it, e.g. `-- sglang serve --model-path …`")
    engine, entry, start = _detect(words)
    spec = _draft(engine, entry, list(words))
    file_env = parse_env_file(env_file) if env_file else {}
    env: dict[str, str] = dict(process_env or {})
    env.update(file_env)
    env.update(assignments)
    spec.env = env
    spec.env_assignments = {**file_env, **assignments}

    seen = _parse_flags(spec, engine, words[start:])
    _check_values(spec, engine, seen)
    return _finish(spec)


def _normal_flag(engine: str, flag: str) -> str:
    """vLLM's FlexibleArgumentParser accepts ``--max_model_len`` for ``--max-model-len``."""
    if engine == "vllm" and flag.startswith("--") and "_" in flag.split(".", 1)[0]:
        head, dot, rest = flag.partition(".")
        return "--" + head[2:].replace("_", "-") + dot + rest
    return flag


def _parse_flags(spec: SimpleNamespace, engine: str, args: list[str]) -> dict[str, str]:
    """Fill ``spec`` from the engine's arguments; returns field name -> the flag that set it."""
    aliases = _alias_table(engine)
    known_values = _KNOWN_VALUE_FLAGS[engine]
    known_bools = _KNOWN_BOOL_FLAGS[engine]
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word.startswith("-") or word in ("-", "--"):
            spec.positional.append(word)
            continue
        flag, eq, inline = word.partition("=")
        flag = _normal_flag(engine, flag)
        has_next_value = i < len(args) and (not args[i].startswith("-") or _is_number(args[i]))
        # the flag's value: written --flag=value, else the next word when it is not a flag
        raw: str | None = inline if eq else args[i] if has_next_value else None
        takes_next = not eq and has_next_value
        if flag in aliases:
            name, kind = aliases[flag]
            if kind == "bool":
                value: Any = _convert("bool", flag, inline, spec.errors) if eq else True
            elif raw is None:
                spec.errors.append(f"{flag}: missing value")
                spec.invalid.append(name)
                continue
            else:
                i += takes_next
                value = _convert(kind, flag, raw, spec.errors)
            if value is None:
                spec.invalid.append(name)
                continue
            if name in seen and seen[name] != flag and getattr(spec, name) != value:
                spec.errors.append(f"{seen[name]} and {flag} both set {name} to different values")
            seen[name] = flag
            setattr(spec, name, value)
            spec.flags[flag] = value
        elif flag.startswith("--no-") and ("--" + flag[5:]) in aliases and aliases["--" + flag[5:]][1] == "bool":
            setattr(spec, aliases["--" + flag[5:]][0], False)
            spec.flags[flag] = True
        elif flag in known_bools:
            spec.flags[flag] = True if not eq else inline
        elif flag in known_values:
            if raw is None:
                spec.errors.append(f"{flag}: missing value")
            else:
                spec.flags[flag] = raw
                i += takes_next
        else:  # unknown flag: keep it; take the next word as its value if it does not look like a flag
            spec.unknown_flags.append(flag)
            spec.flags[flag] = True if raw is None else raw
            i += takes_next
    return seen


def _check_values(spec: SimpleNamespace, engine: str, seen: Mapping[str, str]) -> None:
    """Values the engine would refuse (CMD001): recorded as errors, the field reset to its default."""
    if engine == "vllm" and spec.model is None and spec.positional:
        spec.model = spec.positional.pop(0)
    for name in ("tp", "pp", "dp", "dcp", "nnodes"):
        if getattr(spec, name) == 0:
            spec.errors.append(f"{name} = 0: parallel sizes must be at least 1")
            setattr(spec, name, 1)
            spec.invalid.append(name)
    if spec.mem_fraction is not None and not 0.0 < spec.mem_fraction <= 1.0:
        flag = "--mem-fraction-static" if engine == "sglang" else "--gpu-memory-utilization"
        spec.errors.append(f"{flag} {spec.mem_fraction}: must be in (0, 1]")
        spec.mem_fraction = None
        spec.invalid.append("mem_fraction")
    if spec.node_rank >= spec.nnodes and spec.nnodes >= 1 and "node_rank" in seen:
        spec.errors.append(f"--node-rank {spec.node_rank} with --nnodes {spec.nnodes}: node rank must be < nnodes")


#: ``docker run`` options that take a value (the next word unless written ``--opt=value``)
_DOCKER_VALUE_OPTS = {
    "-p", "--publish", "-v", "--volume", "-e", "--env", "--env-file", "--name", "--gpus", "--ipc", "--shm-size",
    "--network", "--net", "--entrypoint", "-w", "--workdir", "--ulimit", "--runtime", "--device", "--mount",
    "--label", "-l", "-u", "--user", "--cpus", "--memory", "-m", "--hostname", "-h", "--add-host", "--pid",
    "--cap-add", "--security-opt", "--group-add", "--restart", "--log-driver", "--log-opt", "--platform",
    "--pull", "--cpuset-cpus", "--memory-swap", "--tmpfs", "--privileged-mode",
}
#: images whose entrypoint is the engine's server (arguments follow the image)
_ENGINE_IMAGES = (("vllm-openai", ["vllm", "serve"]), ("vllm/vllm", ["vllm", "serve"]))


def _unwrap_docker(words: list[str], env: dict[str, str]) -> list[str]:
    """``docker run [opts] IMAGE [cmd …]`` → the engine command inside (``-e K=V`` go to the
    launch env); the vLLM OpenAI image runs ``vllm serve`` on the arguments after the image."""
    if len(words) < 2 or os.path.basename(words[0]) not in ("docker", "podman") or words[1] != "run":
        return words
    i = 2
    while i < len(words) and words[i].startswith("-"):
        opt, eq, val = words[i].partition("=")
        if opt in ("-e", "--env"):
            kv = val if eq else (words[i + 1] if i + 1 < len(words) else "")
            k, e2, v = kv.partition("=")
            if e2 and k:
                env[k] = v
        i += 1 if eq or opt not in _DOCKER_VALUE_OPTS else 2
    if i >= len(words):
        return words
    image, rest = words[i], words[i + 1:]
    rest = _take_assignments(rest, env)
    if rest and (os.path.basename(rest[0]) in ("sglang", "vllm") or re.match(r"^python(\d+(\.\d+)?)?$", os.path.basename(rest[0]))
                 or rest[0] in ("env", "exec")):
        return rest
    for key, entry in _ENGINE_IMAGES:
        if key in image:
            return entry + rest
    raise LaunchError(f"`docker run … {image}` runs no engine command k3doctor knows; put the engine command "
                      f"after the image (`docker run … {image} python3 -m sglang.launch_server …` or "
                      "`… vllm serve …`), or use the vllm/vllm-openai image, whose entrypoint is `vllm serve`")


_LLM_KWARG = re.compile(r"\b(\w{1,60})\s{0,3}=\s{0,3}('[^']{0,500}'|\"[^\"]{0,500}\"|[\w.+-]{1,100})")


def _unwrap_offline_llm(words: list[str]) -> list[str]:
    """``python -c "from vllm import LLM; LLM(model='m', tensor_parallel_size=2, …)"`` → the
    equivalent ``vllm serve m --tensor-parallel-size 2 …`` (keyword arguments become flags)."""
    if len(words) < 3 or not re.match(r"^python(\d+(\.\d+)?)?$", os.path.basename(words[0])) or words[1] != "-c":
        return words
    code = words[2]
    m = re.search(r"\bLLM\s{0,3}\((.{0,4000})\)", code, re.S)
    if not m or "vllm" not in code:
        return words
    out = ["vllm", "serve"]
    for key, raw in _LLM_KWARG.findall(m.group(1)):
        val = raw.strip("'\"")
        if key == "model":
            out.insert(2, val)
        elif val in ("True", "False"):
            if val == "True":
                out.append("--" + key.replace("_", "-"))
        else:
            out += ["--" + key.replace("_", "-"), val]
    return out


def _take_assignments(words: list[str], into: dict[str, str]) -> list[str]:
    """Move leading ``VAR=value`` words into ``into``; return the rest."""
    i = 0
    while i < len(words):
        m = _ASSIGN_RE.match(words[i])
        if not m:
            break
        into[m.group(1)] = m.group(2)
        i += 1
    return words[i:]


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True
