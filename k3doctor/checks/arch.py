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
from ..facttypes import GpuFact, ModelFact, PackagesFact
from ..launch import LaunchSpec
from ..model import Finding, Severity

from ._arch_common import (  # noqa: F401 - the family's shared constants and helpers
    CP_WORLD_SIZE_ERROR, _B200_FP4_DENSE_TFLOPS, _BF16_DENSE_TFLOPS, _ENGINE_NAMES, _SEVERITY,
    _gpu_desc, _groups_or_skip, _int, _model, _quote, _where,
)
from .arch_plan import ARCH005, ARCH006, ARCH007, FLASHKDA_ERROR  # noqa: F401 - re-exported
from . import arch_plan as _plan

__all__ = ["ARCH001", "ARCH002", "ARCH003", "ARCH004", "ARCH005", "ARCH006", "ARCH007", "CHECKS"]

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

    url = "https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/server_args.py"

    def run(self, launch: LaunchSpec, gpu: GpuFact, packages: PackagesFact | None = None,
            model: ModelFact | None = None) -> Iterator[Finding]:
        groups = _groups_or_skip(gpu, self)
        table = load_rules()
        packages = packages or PackagesFact.from_json({})
        info = _model(launch, model)
        tp = _int(launch, "tp")
        for rule, match in table.matches(launch):
            if rule.model and info.family and info.family != rule.model:
                continue
            for violation in rule.evaluate(groups, packages=packages, tp=tp):
                yield self._finding(rule, match, violation, launch, gpu, tp)

    def _finding(
        self, rule: Rule, m: Match, v: Violation, launch: LaunchSpec, gpu: Mapping[str, Any], tp: int
    ) -> Finding:
        engine = (launch.engine or rule.engine)
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

    severity = Severity.INFO

    def run(self, gpu: GpuFact, launch: LaunchSpec | None = None,
            model: ModelFact | None = None) -> Iterator[Finding]:
        model_fact = model
        if launch is None and model_fact is None:
            raise self.skip("no launch command and no model directory: cannot tell whether the model is MXFP4")
        groups = _groups_or_skip(gpu, self)
        info = resolve_model(launch, model_fact, load_rules())
        reason = mxfp4_reason(launch, info)
        if reason is None:
            return
        engine = launch.engine if launch else ""
        backend = launch.moe_runner_backend if launch else None
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

    url = "https://github.com/vllm-project/recipes/issues/698"

    def run(self, launch: LaunchSpec, gpu: GpuFact | None = None,
            packages: PackagesFact | None = None, model: ModelFact | None = None) -> Iterator[Finding]:
        if launch.engine != "vllm":
            return
        pp = _int(launch, "pp")
        if pp <= 1 or launch.enforce_eager or launch.flags.get("--enforce-eager"):
            return
        info = _model(launch, model)
        if info.family != "kimi-k3":
            return
        groups = device_groups(gpu) if gpu and gpu.get("ok", True) is not False else []
        hopper = [g for g in groups if g[0][0] == 9]
        if groups and not hopper:
            return
        tp = _int(launch, "tp")
        packages = packages or PackagesFact.from_json({})
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

    severity = Severity.WARNING
    url = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-mnnvl-enable"

    def run(self, gpu: GpuFact, launch: LaunchSpec | None = None,
            env: Mapping[str, Any] | None = None, packages: PackagesFact | None = None) -> Iterator[Finding]:
        if launch:
            env = launch.env
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
        packages = packages or PackagesFact.from_json({})
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


FAMILY = ('ARCH', 'launch flags, backends and env vars vs the GPU architecture; parallel-plan arithmetic', 30)
CHECKS = sorted(module_checks(globals()) + _plan.CHECKS, key=lambda c: c.code)

