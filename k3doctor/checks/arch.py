"""ARCH family: launch flags, backends and env vars vs the GPU architecture; parallel-plan arithmetic.

ARCH001 is driven by the rule table in ``k3doctor/data/arch_rules.toml`` (see
:mod:`k3doctor.archrules` and ``docs/arch-rules.md``); the other codes are rules that need more
than a compute capability (model config, NVML fabric state, the parallel plan).
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

from ..archrules import (
    Match,
    ModelInfo,
    Rule,
    Violation,
    device_groups,
    format_cc,
    load_rules,
    mxfp4_reason,
    release_tuple,
    resolve_model,
)
from ..check import Check, module_checks
from ..facts import ProbeError
from ..model import Finding, Severity, Skip

__all__ = ["ARCH001", "ARCH002", "ARCH003", "ARCH004", "ARCH005", "ARCH006", "ARCH007", "CHECKS"]

_ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "nccl": "NCCL", "any": "the engine"}
_SEVERITY = {"error": Severity.ERROR, "warning": Severity.WARNING, "info": Severity.INFO}
_POW2 = (1, 2, 4, 8, 16, 32, 64, 128, 256)

#: dense (non-sparse) peak tensor TFLOPS from NVIDIA datasheets, for the MXFP4 speed note.
_BF16_DENSE_TFLOPS = {8: 312, 9: 989}
_B200_FP4_DENSE_TFLOPS = 9000

CP_WORLD_SIZE_ERROR = (
    "cp_world_size must be positive, required by downstream unified code path. Use 1 if CP is not enabled."
)


# -- shared helpers --------------------------------------------------------------------------
def _optional(facts: Any, name: str) -> Any:
    """A fact this check can do without: the value, or None when unavailable."""
    has = getattr(facts, "has", None)
    if callable(has) and not has(name):
        return None
    try:
        return facts.get(name)
    except (Skip, ProbeError):
        return None


def _groups_or_skip(gpu: Mapping[str, Any], check: Check) -> list[tuple[tuple[int, int], tuple[str, ...], int]]:
    if gpu.get("ok") is False:
        raise check.skip(f"no GPU information ({gpu.get('error') or 'NVML failed'})")
    groups = device_groups(gpu)
    if not groups:
        raise check.skip("the gpu fact lists no device with a compute capability")
    return groups


def _where(gpu: Mapping[str, Any] | None) -> str:
    if gpu and gpu.get("source") == "target":
        return f"target {gpu.get('target') or 'profile'}"
    return "this node"


def _gpu_desc(gpu: Mapping[str, Any] | None, cc: tuple[int, int], names: tuple[str, ...], count: int) -> str:
    return f"{_where(gpu)} has {count}× {' / '.join(names) or 'GPU'} (SM {format_cc(cc)})"


def _int(launch: Mapping[str, Any], key: str, default: int = 1) -> int:
    value = launch.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def _attention_tp(launch: Mapping[str, Any]) -> int:
    value = launch.get("attention_tp")
    if isinstance(value, int) and value > 0:
        return value
    tp, dp = _int(launch, "tp"), _int(launch, "dp")
    if launch.get("engine") == "sglang" and launch.get("enable_dp_attention") and tp % dp == 0:
        return tp // dp
    return tp


def _world_size(launch: Mapping[str, Any]) -> int:
    value = launch.get("world_size")
    if isinstance(value, int) and value > 0:
        return value
    tp, pp, dp = _int(launch, "tp"), _int(launch, "pp"), _int(launch, "dp")
    if launch.get("engine") == "sglang" and launch.get("enable_dp_attention"):
        return tp * pp
    return tp * pp * dp


def _model(facts: Any, launch: Mapping[str, Any] | None) -> ModelInfo:
    return resolve_model(launch, _optional(facts, "model"), load_rules())


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in _POW2 if d <= limit and n % d == 0]


def _quote(engine: str, error: str, verbatim: bool) -> str:
    name = _ENGINE_NAMES.get(engine, engine)
    return f"{name} raises: “{error}”" if verbatim else f"{name} fails: {error}"


# -- ARCH001 ---------------------------------------------------------------------------------
class ARCH001(Check):
    """Flag, backend or env var needs a GPU architecture this node lacks

    ## What it checks
    Every attention backend, MoE runner backend, quantization method and env switch on the
    launch line (or in its `--env-file` / environment) is looked up in the ARCH rule table
    (`k3doctor/data/arch_rules.toml`, rendered in `docs/arch-rules.md`): which compute
    capability it needs, plus extra conditions such as "TP in {8, 16}" for vLLM's Kimi-K3
    latent-MoE tail fusion or "flashinfer-python > 0.6.10" for SGLang's `flashinfer_mxfp4` MoE
    runner on Hopper. One finding per offending item, quoting the error the engine raises.
    Names the table does not know are left to the LAUNCH checks.

    ## Why it matters
    These switches are checked late: after the 669 s weight load of a 1.56 TB checkpoint, in
    CUDA-graph capture or at the first forward pass. A Blackwell-only flag copied from a B200
    recipe into an H200 launch (`VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1` → "K3 latent-MoE
    tail fusion requires SM100.") costs a whole start-up cycle.

    ## How to fix
    Apply the finding's fix: unset the env var (or set it to 0), or pick the backend that
    exists on this architecture (Hopper: `flashmla` / `fa3` attention, `marlin` MoE for MXFP4).
    Check a target without hardware with `--target b200` etc.
    """

    facts = ("launch", "gpu")
    url = "https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/server_args.py"

    def run(self, facts: Any) -> Iterator[Finding]:
        launch = facts.get("launch")
        gpu = facts.get("gpu")
        groups = _groups_or_skip(gpu, self)
        table = load_rules()
        packages = _optional(facts, "packages") or {}
        info = _model(facts, launch)
        tp = _int(launch, "tp")
        for rule, match in table.matches(launch):
            if rule.model and info.family and info.family != rule.model:
                continue
            for violation in rule.evaluate(groups, packages=packages, tp=tp):
                yield self._finding(rule, match, violation, launch, gpu, tp)

    def _finding(
        self, rule: Rule, m: Match, v: Violation, launch: Mapping[str, Any], gpu: Mapping[str, Any], tp: int
    ) -> Finding:
        engine = str(launch.get("engine") or rule.engine)
        item = f"`{m.where}={m.value}`" if m.via == "env" else f"`{m.where} {m.value}`"
        evidence: dict[str, Any] = {
            "rule": rule.id,
            "engine": engine,
            "item": m.where,
            "value": m.value,
            "requires": rule.requires,
            "source": rule.source,
        }
        severity = _SEVERITY[rule.severity]
        if v.kind == "tp":
            error = rule.tp_error.format(tp=tp)
            allowed = ", ".join(str(t) for t in rule.tp_in)
            evidence.update(tp=tp, tp_allowed=allowed)
            if m.via == "env":
                fix = (f"use --tensor-parallel-size {' or '.join(str(t) for t in rule.tp_in)}, or unset {m.where} "
                       "(set it to 0)")
            else:
                fix = f"use a TP size in {{{allowed}}} or drop {m.where} {m.value}"
            return self.finding(
                f"{item} requires tensor-parallel size in {{{allowed}}}; the launch has TP {tp}. "
                + _quote(engine, error, True),
                subject=f"{m.where}={m.value} tp={tp}",
                evidence=evidence,
                fix=fix,
                severity=Severity.ERROR,
            )
        assert v.cc is not None
        evidence.update(cc=format_cc(v.cc), gpu=" / ".join(v.names), gpus=v.count)
        desc = _gpu_desc(gpu, v.cc, v.names, v.count)
        subject = f"{m.where}={m.value}"
        if v.kind == "arch":
            speaker = "nccl" if rule.engine == "nccl" else engine
            message = f"{item} needs {rule.requires}; {desc}. " + _quote(speaker, rule.error, rule.verbatim)
            return self.finding(message, subject=subject, evidence=evidence, fix=rule.fix, severity=severity)
        if v.kind == "soft":
            message = (
                f"{item} needs {rule.requires}; {desc}, which only some {_ENGINE_NAMES.get(engine, engine)} "
                "versions accept. Older releases: " + _quote(engine, rule.error, rule.verbatim)
            )
            return self.finding(message, subject=subject, evidence=evidence, fix=rule.fix, severity=Severity.WARNING)
        pkg = rule.package
        assert pkg is not None
        evidence.update(package=pkg.dist, package_version=v.version, package_needs=f"> {pkg.above}")
        if v.kind == "package":
            message = (
                f"{item} on SM {format_cc(v.cc)} needs {pkg.dist} > {pkg.above}; installed {v.version}. "
                + _quote(engine, rule.error, rule.verbatim)
            )
            return self.finding(message, subject=subject, evidence=evidence, fix=rule.fix, severity=Severity.ERROR)
        message = (
            f"{item} on SM {format_cc(v.cc)} needs {pkg.dist} > {pkg.above}; the installed {pkg.dist} version is "
            "unknown (no `packages` fact, or the package is not installed here). If it is older, "
            + _quote(engine, rule.error, rule.verbatim)
        )
        return self.finding(message, subject=subject, evidence=evidence, fix=rule.fix, severity=Severity.WARNING)


# -- ARCH002 ---------------------------------------------------------------------------------
class ARCH002(Check):
    """MXFP4 model on a GPU without FP4 tensor cores runs as Marlin W4A16

    ## What it checks
    Whether the launched model is MXFP4 — `--quantization mxfp4`, a config.json
    `quantization_config` with `quant_method: mxfp4` or compressed-tensors format
    `mxfp4-pack-quantized` (Kimi-K3), or a known MXFP4 checkpoint id (`moonshotai/Kimi-K3`,
    `openai/gpt-oss-*`) — while the GPUs are Hopper (SM90) or Ampere (SM80).

    ## Why it matters
    Only Blackwell has FP4 tensor cores. On Hopper the experts run W4A16: the FP4 weights are
    dequantised to BF16 inside the Marlin (or triton_kernels) GEMM, so matmuls run at the BF16
    rate (H100/H200 SXM ≈ 989 dense TFLOPS, against ≈ 9,000 dense FP4 TFLOPS on a B200).
    Decode is memory-bound and keeps most of the 4-bit bandwidth saving; prefill and large
    batches are compute-bound and pay the gap. The Marlin repack also adds a transient of about
    twice one layer's local expert bytes while loading. This is informational: it works, and
    it is what the Kimi-K3 Hopper recipes do.

    ## How to fix
    Nothing is required. Pin the backend the recipes use (`--moe-runner-backend marlin` for
    SGLang, `--moe-backend marlin` for vLLM) so an `auto` choice does not pick a path that
    needs FP4 hardware; for native FP4 throughput deploy on B200/B300/GB200/GB300.
    """

    facts = ("gpu",)
    severity = Severity.INFO

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = facts.get("gpu")
        launch = _optional(facts, "launch")
        model_fact = _optional(facts, "model")
        if launch is None and model_fact is None:
            raise self.skip("no launch command and no model directory: cannot tell whether the model is MXFP4")
        groups = _groups_or_skip(gpu, self)
        info = resolve_model(launch, model_fact, load_rules())
        reason = mxfp4_reason(launch, info)
        if reason is None:
            return
        engine = str((launch or {}).get("engine") or "")
        backend = (launch or {}).get("moe_runner_backend")
        if str(backend or "").lower() == "marlin":
            how = f"Marlin (`{'--moe-backend' if engine == 'vllm' else '--moe-runner-backend'} marlin`, as launched)"
            fix_flag = "--moe-backend marlin" if engine == "vllm" else "--moe-runner-backend marlin"
        elif engine == "vllm":
            how = "Marlin (`--moe-backend marlin`) or triton_kernels (vLLM's SM90 MXFP4 default)"
            fix_flag = "--moe-backend marlin"
        else:
            how = "Marlin (`--moe-runner-backend marlin`, what the Kimi-K3 H100/H200 cookbook cells pin)"
            fix_flag = "--moe-runner-backend marlin" if engine == "sglang" else "--moe-runner-backend marlin (SGLang) / --moe-backend marlin (vLLM)"
        for cc, names, count in groups:
            if cc[0] >= 10:
                continue
            bf16 = _BF16_DENSE_TFLOPS.get(cc[0])
            arch = "Hopper" if cc[0] == 9 else "Ampere" if cc[0] == 8 else f"SM {format_cc(cc)}"
            rate = (
                f"matmuls run at the BF16 tensor-core rate (~{bf16} dense TFLOPS on this class vs "
                f"~{_B200_FP4_DENSE_TFLOPS} dense FP4 TFLOPS on a B200)"
                if bf16
                else "matmuls run at the BF16 tensor-core rate"
            )
            yield self.finding(
                f"{info.id or 'the model'} is MXFP4 ({reason}); {_gpu_desc(gpu, cc, names, count)}, without FP4 "
                f"tensor cores, so the routed experts run W4A16 through {how}: FP4 weights are dequantised to "
                f"BF16 in-kernel and {rate}. Decode (memory-bound) keeps most of the 4-bit bandwidth saving; "
                "prefill and large batches are compute-bound and slower than on Blackwell.",
                subject=f"model={info.id or 'mxfp4'} cc={format_cc(cc)}",
                evidence={
                    "model": info.id,
                    "mxfp4_from": reason,
                    "cc": format_cc(cc),
                    "arch": arch,
                    "gpus": count,
                    "engine": engine or None,
                    "moe_backend": str(backend) if backend else None,
                    "bf16_dense_tflops": bf16,
                    "b200_fp4_dense_tflops": _B200_FP4_DENSE_TFLOPS,
                },
                fix=f"none required; pin {fix_flag} on Hopper, or deploy on Blackwell (B200/B300/GB200/GB300) for "
                "native FP4",
            )


# -- ARCH003 ---------------------------------------------------------------------------------
class ARCH003(Check):
    """Pipeline parallel on the vLLM Kimi-K3 path crashes in CUDA-graph capture on Hopper

    ## What it checks
    A vLLM launch of Kimi-K3 with `--pipeline-parallel-size` > 1, CUDA graphs on (no
    `--enforce-eager`), on Hopper GPUs (SM90: H20/H100/H200).

    ## Why it matters
    In the vLLM Kimi-K3 image (0.27.x) `MLACommonImpl` sets `dcp_world_size = -1` as a "not
    initialised yet" sentinel; K3's MLA calls `forward_mqa` directly and bypasses the lazy
    initialisation, so FlashAttention-3 receives −1 during CUDA-graph capture and aborts with
    "cp_world_size must be positive, required by downstream unified code path. Use 1 if CP is
    not enabled." — after the full weight load (vllm-project/recipes#698: the published H200
    recipe OOMs at TP8, and TP8 + PP2 then hits this crash).

    ## How to fix
    Drop `--pipeline-parallel-size` and run TP16 across both nodes
    (`--tensor-parallel-size 16 --nnodes 2 …`), or add `--enforce-eager` (no CUDA graphs,
    slower decode), or use a vLLM build that contains PR #50625 (the dcp_world_size fix).
    """

    facts = ("launch",)
    url = "https://github.com/vllm-project/recipes/issues/698"

    def run(self, facts: Any) -> Iterator[Finding]:
        launch = facts.get("launch")
        if launch.get("engine") != "vllm":
            return
        pp = _int(launch, "pp")
        if pp <= 1 or launch.get("enforce_eager") or (launch.get("flags") or {}).get("--enforce-eager"):
            return
        info = _model(facts, launch)
        if info.family != "kimi-k3":
            return
        gpu = _optional(facts, "gpu")
        groups = device_groups(gpu) if gpu and gpu.get("ok", True) is not False else []
        hopper = [g for g in groups if g[0][0] == 9]
        if groups and not hopper:
            return
        tp = _int(launch, "tp")
        packages = _optional(facts, "packages") or {}
        if hopper:
            cc, names, count = hopper[0]
            on = f"Hopper ({_gpu_desc(gpu, cc, names, count)})"
            severity, cc_text = Severity.ERROR, format_cc(cc)
        else:
            on, severity, cc_text = "GPUs of unknown architecture (the crash is on Hopper)", Severity.WARNING, None
        yield self.finding(
            f"vLLM Kimi-K3 with --pipeline-parallel-size {pp} (TP {tp}) on {on}: CUDA-graph capture aborts with "
            f"“RuntimeError: {CP_WORLD_SIZE_ERROR}” (K3's MLA bypasses the lazy dcp_world_size init, FA3 gets -1; "
            "vllm-project/recipes#698), after the full weight load.",
            subject=f"--pipeline-parallel-size={pp}",
            evidence={
                "engine": "vllm",
                "model": info.id,
                "pp": pp,
                "tp": tp,
                "cc": cc_text,
                "vllm": str(packages.get("vllm")) if packages.get("vllm") else None,
                "issue": "https://github.com/vllm-project/recipes/issues/698",
            },
            fix=f"drop --pipeline-parallel-size and use --tensor-parallel-size {tp * pp} over both nodes "
            "(--nnodes 2 --node-rank N --master-addr HEAD), or add --enforce-eager, or use a vLLM with PR #50625",
            severity=severity,
        )


# -- ARCH004 ---------------------------------------------------------------------------------
_FABRIC_COMPLETED = {"3", "completed", "nvml_gpu_fabric_state_completed"}
_GB_NAME = re.compile(r"\bGB\d{3}\b", re.I)


def _fabric_state(dev: Mapping[str, Any]) -> str | None:
    fabric = dev.get("fabric")
    if not isinstance(fabric, Mapping) or fabric.get("state") is None:
        return None
    return str(fabric["state"]).strip().lower()


def _nccl_version(packages: Mapping[str, Any]) -> str | None:
    for dist in ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "nccl"):
        if packages.get(dist):
            return str(packages[dist])
    return None


class ARCH004(Check):
    """NCCL_MNNVL_ENABLE=1 without multi-node NVLink

    ## What it checks
    `NCCL_MNNVL_ENABLE=1` (on the launch line, in `--env-file` or the process environment)
    while the GPUs are not in a multi-node NVLink domain: the gpu fact's `nvlink_domain` is not
    `multi-node` and the GPUs are not GB200/GB300 NVL parts. (An HGX H100/H200 reports NVML
    fabric state COMPLETED for its in-node NVSwitch fabric, with a zero cluster UUID: that is not
    multi-node NVLink.) On GB200/GB300 it also checks that the fabric state is COMPLETED.

    ## Why it matters
    Multi-node NVLink needs NVLink switch trays, Fabric Manager and a working IMEX domain
    (GB200/GB300 NVL72). NCCL documents `1` as "NCCL initialization will fail if MNNVL is not
    supported"; NCCL 2.21–2.24 fail with "MNNVL is not supported on this system", newer NCCL
    silently skips MNNVL on plain HGX — no benefit either way. On a GB200 whose fabric is not
    COMPLETED, `1` fails NCCL init ("MNNVL … is available but not working … Set
    NCCL_MNNVL_ENABLE=0"). The SGLang Kimi-K3 H200 cookbook cell sets it anyway.

    ## How to fix
    On HGX H100/H200/B200 nodes unset `NCCL_MNNVL_ENABLE` or set it to `0` (or `2`, auto). On
    GB200/GB300 make Fabric Manager and `nvidia-imex` reach COMPLETED before launching.
    """

    facts = ("gpu",)
    severity = Severity.WARNING
    url = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-mnnvl-enable"

    def run(self, facts: Any) -> Iterator[Finding]:
        gpu = facts.get("gpu")
        launch = _optional(facts, "launch")
        env: Mapping[str, Any] | None = (launch or {}).get("env") if launch else _optional(facts, "env")
        if env is None:
            raise self.skip("no launch command or environment to read NCCL_MNNVL_ENABLE from")
        value = env.get("NCCL_MNNVL_ENABLE")
        if value is None or str(value).strip() != "1":
            return
        _groups_or_skip(gpu, self)
        devices = [d for d in gpu.get("devices") or [] if isinstance(d, Mapping)]
        states = [_fabric_state(d) for d in devices]
        domains = [str(d.get("nvlink_domain")) for d in devices if d.get("nvlink_domain") is not None]
        names = sorted({str(d.get("name") or "GPU") for d in devices})
        gb_class = any(_GB_NAME.search(n) for n in names) or "multi-node" in domains
        packages = _optional(facts, "packages") or {}
        nccl = _nccl_version(packages)
        evidence = {
            "NCCL_MNNVL_ENABLE": "1",
            "gpu": " / ".join(names),
            "fabric_state": ",".join(sorted({s for s in states if s})) or None,
            "nvlink_domain": ",".join(sorted(set(domains))) or None,
            "nccl": nccl,
            "multi_node": _int(launch or {}, "nnodes") > 1,
        }
        if gb_class:
            bad = [s for s in states if s is not None and s not in _FABRIC_COMPLETED]
            if bad:
                yield self.finding(
                    f"NCCL_MNNVL_ENABLE=1 on {_where(gpu)}'s {' / '.join(names)} whose NVML fabric state is "
                    f"{bad[0]!r}, not COMPLETED: NCCL init fails (“MNNVL … is available but not working … Set "
                    "NCCL_MNNVL_ENABLE=0”).",
                    subject="NCCL_MNNVL_ENABLE=1",
                    evidence=evidence,
                    fix="start nvidia-fabricmanager and nvidia-imex and wait for fabric state COMPLETED "
                    "(`nvidia-smi -q | grep -A2 Fabric`), or set NCCL_MNNVL_ENABLE=0",
                    severity=Severity.ERROR,
                )
            return
        # HGX H100/H200 report fabric state COMPLETED too (NVSwitch inside the node) with a zero
        # cluster UUID; only nvlink_domain == "multi-node" (set by the gpu probe) means MNNVL.
        old = release_tuple(nccl) if nccl else None
        fatal = old is not None and (2, 21) <= old[:2] <= (2, 24)
        yield self.finding(
            f"NCCL_MNNVL_ENABLE=1 but {_where(gpu)}'s {' / '.join(names)} are not in a multi-node NVLink domain "
            f"(NVML fabric state: {evidence['fabric_state'] or 'not reported'}; nvlink_domain: "
            f"{evidence['nvlink_domain'] or 'unknown'}). NCCL documents 1 as “NCCL initialization will fail if "
            "MNNVL is not supported”; "
            + (f"NCCL {nccl} fails with “MNNVL is not supported on this system”."
               if fatal else "NCCL 2.21–2.24 fail with “MNNVL is not supported on this system”, newer NCCL "
               "ignores it on plain HGX."),
            subject="NCCL_MNNVL_ENABLE=1",
            evidence=evidence,
            fix="unset NCCL_MNNVL_ENABLE (or set NCCL_MNNVL_ENABLE=0; 2 = auto) on HGX nodes without multi-node "
            "NVLink (GB200/GB300 NVL72 only)",
            severity=Severity.ERROR if fatal else Severity.WARNING,
        )


# -- ARCH005 ---------------------------------------------------------------------------------
class ARCH005(Check):
    """Parallel plan does not divide: heads, experts, TP/EP/DP, GPUs per node

    ## What it checks
    The arithmetic the engines assert at start-up:

    - attention heads % attention-TP (vLLM: TP; SGLang dp-attention: TP / DP), with the head
      count from the model's config.json or the built-in table (Kimi-K3 96, DeepSeek-V3 128,
      Kimi-K2 64, gpt-oss-120b 64, Qwen3-235B-A22B 64);
    - routed experts % EP (SGLang `--ep-size`; vLLM MegaMoE, where Kimi-K3's 896 experts must
      divide by TP·DP);
    - SGLang: TP % EP and EP ≤ TP; with `--enable-dp-attention`, TP % DP;
    - TP·PP(·DP) against GPUs per node × `--nnodes` (from the `gpu` fact when known); vLLM
      multi-node without `--nnodes` or Ray.

    ## Why it matters
    Each of these is an assertion or ValueError the engine raises while building the model,
    i.e. after the container is scheduled and, for some, after weights start loading.

    ## How to fix
    Use the sizes the finding lists (they divide the model's heads/experts and the GPUs).
    """

    facts = ("launch",)

    def run(self, facts: Any) -> Iterator[Finding]:
        launch = facts.get("launch")
        engine = str(launch.get("engine") or "")
        info = _model(facts, launch)
        gpu = _optional(facts, "gpu")
        yield from self._heads(launch, engine, info)
        yield from self._experts(launch, engine, info)
        yield from self._tp_ep_dp(launch, engine)
        yield from self._world(launch, engine, gpu)

    def _heads(self, launch: Mapping[str, Any], engine: str, info: ModelInfo) -> Iterator[Finding]:
        heads = info.heads
        if not heads:
            return
        attn_tp = _attention_tp(launch)
        if heads % attn_tp == 0:
            return
        valid = _divisors(heads, max(_world_size(launch), attn_tp))
        if engine == "vllm":
            said = _quote("vllm", f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({attn_tp}).", True)
            fix = f"use --tensor-parallel-size in {valid} ({heads} heads)"
        else:
            said = _quote(
                "sglang",
                f"the {heads} attention heads are split evenly over attention-TP ranks; {heads} % {attn_tp} != 0 "
                "fails the head-split assertion while the attention layers are built",
                False,
            )
            fix = (
                f"choose --tp-size / --dp-size so that TP/DP is in {valid}"
                if launch.get("enable_dp_attention")
                else f"use --tp-size in {valid} ({heads} heads)"
            )
        yield self.finding(
            f"{info.id or 'the model'} has {heads} attention heads, not divisible by attention-TP {attn_tp}. {said}",
            subject=f"heads={heads} attention_tp={attn_tp}",
            evidence={"engine": engine, "model": info.id, "heads": heads, "attention_tp": attn_tp,
                      "heads_from": info.source or None},
            fix=fix,
        )

    def _experts(self, launch: Mapping[str, Any], engine: str, info: ModelInfo) -> Iterator[Finding]:
        experts = info.experts
        ep = _int(launch, "ep")
        if not experts or ep <= 1 or experts % ep == 0:
            return
        valid = _divisors(experts, max(_world_size(launch), ep))
        mega = str(launch.get("moe_runner_backend") or "") == "deep_gemm_mega_moe"
        if engine == "vllm":
            if not (mega and info.family == "kimi-k3"):
                return  # vLLM's FusedMoE spreads the remainder; only K3 MegaMoE asserts
            said = _quote("vllm", f"Kimi K3 num_experts={experts} must be divisible by EP size {ep}.", True)
            fix = f"choose TP×DP (the EP size with --enable-expert-parallel) in {valid}"
        else:
            said = _quote(
                "sglang",
                f"each EP rank owns num_experts // ep_size experts; {experts} routed experts do not split over "
                f"{ep} ranks and the MoE layer's expert map assertion fails",
                False,
            )
            fix = f"use --ep-size in {[d for d in valid if _int(launch, 'tp') % d == 0] or valid}"
        yield self.finding(
            f"{info.id or 'the model'} has {experts} routed experts, not divisible by EP size {ep}. {said}",
            subject=f"experts={experts} ep={ep}",
            evidence={"engine": engine, "model": info.id, "experts": experts, "ep": ep,
                      "experts_from": info.source or None},
            fix=fix,
        )

    def _tp_ep_dp(self, launch: Mapping[str, Any], engine: str) -> Iterator[Finding]:
        if engine != "sglang":
            return
        tp, ep, dp = _int(launch, "tp"), _int(launch, "ep"), _int(launch, "dp")
        if ep > 1 and (ep > tp or tp % ep):
            yield self.finding(
                f"--ep-size {ep} does not divide --tp-size {tp} (SGLang's MoE-TP size is tp_size / ep_size). "
                + _quote("sglang", "tp_size must be divisible by ep_size", True),
                subject=f"tp={tp} ep={ep}",
                evidence={"engine": engine, "tp": tp, "ep": ep},
                fix=f"use --ep-size in {[d for d in _POW2 if d <= tp and tp % d == 0]} (usually --ep-size {tp})",
            )
        if launch.get("enable_dp_attention") and (dp > tp or tp % dp):
            yield self.finding(
                f"--enable-dp-attention with --dp-size {dp} and --tp-size {tp}: the attention-TP size tp_size / "
                f"dp_size is not a whole number. "
                + _quote("sglang", "attention-TP = tp_size // dp_size must divide tp_size exactly; the DP-attention "
                         "group setup asserts tp_size % dp_size == 0", False),
                subject=f"tp={tp} dp={dp} dp_attention",
                evidence={"engine": engine, "tp": tp, "dp": dp, "enable_dp_attention": True},
                fix=f"use --dp-size in {[d for d in _POW2 if d <= tp and tp % d == 0]}",
            )

    def _world(self, launch: Mapping[str, Any], engine: str, gpu: Mapping[str, Any] | None) -> Iterator[Finding]:
        if not gpu or gpu.get("ok") is False:
            return
        gpus = len([d for d in gpu.get("devices") or [] if isinstance(d, Mapping)])
        if gpus == 0:
            return
        world = _world_size(launch)
        nnodes = _int(launch, "nnodes")
        ray = str(launch.get("distributed_executor_backend") or "").lower() == "ray"
        tp, pp, dp = _int(launch, "tp"), _int(launch, "pp"), _int(launch, "dp")
        plan = f"TP {tp} × PP {pp}" + (f" × DP {dp}" if world == tp * pp * dp and dp > 1 else "")
        evidence: dict[str, Any] = {"engine": engine, "tp": tp, "pp": pp, "dp": dp, "world_size": world,
                                    "nnodes": nnodes, "gpus_per_node": gpus}
        where = _where(gpu)
        if engine == "vllm" and nnodes == 1 and world > gpus:
            if ray:
                return  # Ray places the workers over the cluster; the cluster size is not known here
            yield self.finding(
                f"{plan} = {world} GPUs but {where} has {gpus} and the launch gives neither --nnodes nor "
                "--distributed-executor-backend ray. "
                + _quote("vllm", f"World size ({world}) is larger than the number of available GPUs ({gpus}) in this "
                         "node. If this is intentional and you are using: - ray, set '--distributed-executor-backend "
                         "ray'. - multiprocessing, set '--nnodes' appropriately.", True),
                subject=f"world_size={world} gpus_per_node={gpus}",
                evidence=evidence,
                fix=f"add --nnodes {-(-world // gpus)} --node-rank N --master-addr HEAD_IP (multiprocessing), or "
                "--distributed-executor-backend ray with a Ray cluster",
            )
            return
        if ray and engine == "vllm":
            return
        if world % nnodes:
            yield self.finding(
                f"{plan} = {world} ranks do not split evenly over --nnodes {nnodes}.",
                subject=f"world_size={world} nnodes={nnodes}",
                evidence=evidence,
                fix=f"make TP×PP a multiple of {nnodes} (e.g. --tp-size {gpus * nnodes // max(pp, 1)})",
            )
            return
        per_node = world // nnodes
        if per_node > gpus:
            said = (
                _quote("vllm", f"World size ({per_node}) is larger than the number of available GPUs ({gpus}) in this "
                       "node.", False)
                if engine == "vllm"
                else _quote("sglang", f"ranks {gpus}..{per_node - 1} on each node get a GPU id ≥ the {gpus} visible "
                            "devices (CUDA error: invalid device ordinal)", False)
            )
            yield self.finding(
                f"{plan} = {world} GPUs over {nnodes} node(s) needs {per_node} GPUs per node; {where} has {gpus}. {said}",
                subject=f"gpus_per_node={per_node} available={gpus}",
                evidence=evidence,
                fix=f"use --nnodes {-(-world // gpus)} (one per {gpus} GPUs) or shrink TP×PP to {gpus * nnodes}",
            )
        elif per_node < gpus:
            yield self.finding(
                f"{plan} = {world} GPUs over {nnodes} node(s) uses {per_node} of the {gpus} GPUs on {where}; "
                f"{gpus - per_node} stay idle.",
                subject=f"gpus_per_node={per_node} available={gpus}",
                evidence=evidence,
                fix=f"raise TP (e.g. --tp-size {tp * gpus // per_node}) to use every GPU, or restrict "
                "CUDA_VISIBLE_DEVICES on purpose",
                severity=Severity.INFO,
            )


# -- ARCH006 ---------------------------------------------------------------------------------
class ARCH006(Check):
    """vLLM MegaMoE without --enable-expert-parallel

    ## What it checks
    A vLLM launch with `--moe-backend deep_gemm_mega_moe` (Kimi-K3 / DeepSeek-V4 MegaMoE)
    that does not pass `--enable-expert-parallel`.

    ## Why it matters
    The model constructor raises at start-up: Kimi-K3 "Kimi K3 MegaMoE requires expert
    parallel. Enable it with --enable-expert-parallel." (DeepSeek-V4: "DeepSeek V4 MegaMoE
    requires expert parallel").

    ## How to fix
    Add `--enable-expert-parallel` (the EP size is then TP×DP; Kimi-K3's 896 experts must
    divide by it — ARCH005), or choose another `--moe-backend`.
    """

    facts = ("launch",)
    url = "https://github.com/vllm-project/vllm/blob/main/vllm/models/kimi_k3/nvidia/model.py"

    def run(self, facts: Any) -> Iterator[Finding]:
        launch = facts.get("launch")
        if launch.get("engine") != "vllm" or str(launch.get("moe_runner_backend") or "") != "deep_gemm_mega_moe":
            return
        flags = launch.get("flags") or {}
        if launch.get("enable_expert_parallel") or flags.get("--enable-expert-parallel") or flags.get("-ep"):
            return
        info = _model(facts, launch)
        if info.family == "deepseek-v4":
            error = "DeepSeek V4 MegaMoE requires expert parallel"
        else:
            error = "Kimi K3 MegaMoE requires expert parallel. Enable it with --enable-expert-parallel."
        yield self.finding(
            f"--moe-backend deep_gemm_mega_moe without --enable-expert-parallel. vLLM raises: “NotImplementedError: "
            f"{error}”",
            subject="--moe-backend=deep_gemm_mega_moe",
            evidence={"engine": "vllm", "model": info.id, "moe_backend": "deep_gemm_mega_moe",
                      "enable_expert_parallel": False},
            fix="add --enable-expert-parallel (EP = TP×DP must divide the routed experts, 896 for Kimi-K3), or use "
            "another --moe-backend",
        )


# -- ARCH007 ---------------------------------------------------------------------------------
_SGLANG_FUSED_KDA_LOCAL_HEADS = (3, 6, 12)
_VLLM_FUSED_KDA_LOCAL_HEADS = (12, 24, 48, 96)
FLASHKDA_ERROR = "FlashKDA requires CUDA SM90/SM10x/SM12x, bfloat16, head_dim=128, and a bounded KDA gate."


class ARCH007(Check):
    """Kimi-K3 KDA fast paths unavailable at this attention-TP or architecture

    ## What it checks
    For Kimi-K3 (69 KDA linear-attention layers, 96 KDA heads):

    - the fused KDA decode kernel needs a fixed number of local heads per rank — SGLang
      {3, 6, 12} (attention-TP 32/16/8), vLLM {12, 24, 48, 96} (TP 8/4/2/1);
    - FlashKDA prefill needs SM90/SM10x/SM12x.

    ## Why it matters
    Outside these shapes the engine takes the unfused KDA decode path / Triton KDA prefill:
    it runs, but slower (the unfused decode issues dozens of small kernels per KDA layer). Note
    that vLLM TP16 — the usual fix for ARCH003 — gives 6 local heads, outside vLLM's fused set.
    An explicit FlashKDA selection on other GPUs raises "FlashKDA requires CUDA
    SM90/SM10x/SM12x, bfloat16, head_dim=128, and a bounded KDA gate."

    ## How to fix
    Informational. Prefer an attention-TP in the listed set when latency matters.
    """

    facts = ("launch",)
    severity = Severity.INFO
    url = "https://github.com/vllm-project/vllm/blob/main/vllm/models/kimi_k3/nvidia/kda.py"

    def run(self, facts: Any) -> Iterator[Finding]:
        launch = facts.get("launch")
        info = _model(facts, launch)
        if info.family != "kimi-k3":
            return
        engine = str(launch.get("engine") or "")
        kda = info.kda_heads or info.heads or 96
        attn_tp = _attention_tp(launch)
        allowed = _SGLANG_FUSED_KDA_LOCAL_HEADS if engine == "sglang" else _VLLM_FUSED_KDA_LOCAL_HEADS
        if engine in ("sglang", "vllm") and kda % attn_tp == 0 and kda // attn_tp not in allowed:
            local = kda // attn_tp
            tps = sorted(kda // h for h in allowed)
            yield self.finding(
                f"Kimi-K3 KDA: {kda} heads over attention-TP {attn_tp} = {local} local heads; "
                f"{_ENGINE_NAMES[engine]}'s fused KDA decode kernel needs local heads in {set(allowed)} "
                f"(attention-TP {tps}), so decode uses the unfused KDA path (slower per token).",
                subject=f"kda_local_heads={local}",
                evidence={"engine": engine, "kda_heads": kda, "attention_tp": attn_tp, "local_heads": local,
                          "fused_local_heads": ",".join(str(h) for h in allowed)},
                fix=f"for the fused KDA decode kernel use attention-TP in {tps}",
            )
        gpu = _optional(facts, "gpu")
        for cc, names, count in device_groups(gpu) if gpu else []:
            if cc[0] in (9, 10, 12):
                continue
            yield self.finding(
                f"Kimi-K3 where {_gpu_desc(gpu, cc, names, count)}: FlashKDA prefill needs SM90/SM10x/SM12x, so KDA "
                f"prefill runs the Triton kernels; forcing FlashKDA raises “{FLASHKDA_ERROR}”",
                subject=f"flashkda cc={format_cc(cc)}",
                evidence={"engine": engine, "cc": format_cc(cc), "gpus": count},
                fix="keep the KDA prefill backend on auto/triton on this GPU; use Hopper or Blackwell for FlashKDA",
            )


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('ARCH', 'launch flags, backends and env vars vs the GPU architecture; parallel-plan arithmetic', 30)
CHECKS = module_checks(globals())
