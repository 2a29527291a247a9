"""How a checkpoint's ``quantization_config`` stores each Linear layer, and which layers it leaves
alone — the tensors (name, dtype, shape) the engines load, so scales, zero points and packed
layouts are counted at their real size. The config is read by :mod:`.quantparse` (one parser per
``quant_method``; :mod:`.quantmethods` lists every method vLLM and SGLang accept and how each is
projected); module lists are matched as each engine matches them (:mod:`.quantmatch`).

Layouts (``QuantScheme.method``), with the tensors one Linear ``out × in`` becomes:

===============  ==================================================================================
``bf16``         ``weight`` BF16/F16 ``[out, in]``
``fp8_block``    ``weight`` F8 ``[out, in]`` + ``weight_scale_inv`` F32 ``[⌈out/b0⌉, ⌈in/b1⌉]``
                 (``quant_method: fp8`` with ``weight_block_size``; compressed-tensors block;
                 ModelOpt ``FP8_PB_WO``)
``fp8_channel``  ``weight`` F8 + ``weight_scale`` F32 ``[out, 1]`` (compressed-tensors channel,
                 fbgemm_fp8, ModelOpt ``FP8_PER_CHANNEL_PER_TOKEN``, SGLang ``w8a8_fp8``)
``fp8_tensor``   ``weight`` F8 + ``weight_scale`` F32 ``[]`` (+ ``input_scale`` when static):
                 ``quant_method: fp8`` without blocks, ModelOpt FP8, compressed-tensors tensor,
                 Quark FP8
``mxfp8``        ``weight`` F8 ``[out, in]`` + ``weight_scale`` U8 ``[out, in/32]`` (ModelOpt MXFP8,
                 ``quant_method: mxfp8``, compressed-tensors MXFP8)
``awq``          ``qweight`` I32 ``[in, out·b/32]`` + ``qzeros`` I32 ``[in/g, out·b/32]`` +
                 ``scales`` F16 ``[in/g, out]`` (vLLM's AWQ-Marlin repack keeps the sizes)
``gptq``         ``qweight`` I32 ``[in·b/32, out]`` + ``qzeros`` I32 ``[in/g, out·b/32]`` +
                 ``scales`` F16 ``[in/g, out]`` + ``g_idx`` I32 ``[in]`` (2, 3, 4, 8 bits)
``ct_pack``      compressed-tensors ``pack-quantized`` (W4A16/W8A16/W4A8): ``weight_packed`` I32
                 ``[out, in·b/32]`` + ``weight_scale`` BF16 ``[out, in/g]`` (+ ``weight_zero_point``
                 when asymmetric, + ``weight_g_idx`` with group activation order) + ``weight_shape``
``ct_int8``      int8 weights: ``weight`` I8 + ``weight_scale`` F32 ``[out, 1]`` (compressed-tensors
                 W8A8, SGLang ``w8a8_int8``, Quark INT8; + ``input_scale`` when static)
``int8_block``   SGLang ``blockwise_int8``: ``weight`` I8 + ``weight_scale_inv`` F32 per block
``int4_sym``     ModelOpt ``W4A16_AWQ`` / ``W4A8_AWQ`` / ``NVFP4_AWQ``-style int4: ``weight`` U8
                 ``[out, in/2]`` + ``weight_scale`` BF16 ``[out, in/g]`` + ``pre_quant_scale`` BF16 ``[in]``
``nvfp4``        ModelOpt NVFP4: ``weight`` U8 ``[out, in/2]`` + ``weight_scale`` F8 ``[out, in/16]``
                 + ``weight_scale_2`` F32 + ``input_scale`` F32 (also ``petit_nvfp4``)
``nvfp4_ct``     compressed-tensors ``nvfp4-pack-quantized``: ``weight_packed`` U8 + ``weight_scale``
                 F8 ``[out, in/16]`` + ``weight_global_scale`` + ``input_global_scale`` F32
``mxfp4_ct``     MXFP4 pairs + one E8M0 scale per 32: ``weight_packed`` U8 ``[out, in/2]`` +
                 ``weight_scale`` U8 ``[out, in/32]`` (compressed-tensors, Quark, FP-Quant, AutoRound)
``mxfp4``        gpt-oss MXFP4 (experts only; ``*_blocks`` / ``*_scales``, see synth.py)
``bnb4``         bitsandbytes 4-bit: ``weight`` U8 ``[out·in/2, 1]`` + ``absmax`` F32 ``[out·in/64]``
                 (+ nested absmax when double quantisation) + ``quant_map`` F32 ``[16]``
``bnb8``         bitsandbytes 8-bit: ``weight`` I8 ``[out, in]`` + ``SCB`` F32 ``[out]``
``mlx``          MLX affine (``quantization_config: {group_size, bits}`` without ``quant_method``, as
                 mlx-lm writes it): ``weight`` U32 ``[out, in·b/32]`` + ``scales`` and ``biases``
                 BF16 ``[out, in/g]``; embeddings and the head are quantised too
``aqlm``         AQLM: ``codes`` I16 ``[out, in/in_group, codebooks]`` + ``codebooks`` F16 + ``scales``
``packed_int``   a method the projection does not model but whose config states a bit width: ``b``
                 bits per weight + one BF16 scale per ``g`` inputs (marked uncertain, with bounds)
===============  ==================================================================================

Per-module formats (``rules``): compressed-tensors ``config_groups`` (each group's ``targets``:
names, ``re:`` regexes, class names like ``Linear``), ModelOpt ``MIXED_PRECISION``
``quantized_layers``, and DeepSeek-V4-style ``fp8`` checkpoints whose ``quantized_layers`` move the
experts to NVFP4. Layers left unquantised: the router gates, embeddings and ``lm_head`` (unless
the config says otherwise), norms, vision towers, and every module an ignore list reaches.
Sources: the engines' quantization/*.py (vLLM ``awq_marlin``, ``gptq_marlin``,
``compressed_tensors``, ``modelopt``, ``fbgemm_fp8``, ``fp8``, ``mxfp4``, ``bitsandbytes``, ``quark``,
``inc``, ``fp_quant``; SGLang's counterparts) — these layouts are what their ``create_weights``
allocate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import ceil
from typing import Any, Mapping

from .quantmatch import exact_hit, matches

__all__ = ["QuantScheme", "QuantRule", "parse_quant", "linear_tensors", "resolve", "with_rules", "with_launch_quantization",
           "ONLINE_QUANTIZATION", "merge_hf_quant_config", "merge_quantize_config"]


@dataclass(frozen=True)
class QuantRule:
    """Modules ``targets`` reaches (under ``how``'s matching rule) use ``scheme``."""

    targets: tuple[str, ...]
    scheme: "QuantScheme"
    how: str = "ct"


@dataclass(frozen=True)
class QuantScheme:
    """The storage of a quantised Linear and the modules the config leaves unquantised."""

    method: str = "bf16"
    bits: int = 16
    group: int = 128          # input elements per scale; -1 = one scale per output channel
    block: tuple[int, int] = (128, 128)
    zero_point: bool = False
    desc_act: bool = False
    static_input: bool = False
    double_quant: bool = False
    mlp_only: bool = False    # fbgemm_fp8: attention projections stay BF16
    lm_head: bool = False     # GPTQ/AWQ ``lm_head: true`` quantises the head too
    ignore: tuple[str, ...] = ()
    #: how ``ignore`` entries reach modules (quantmatch: ct, modelopt, substring, component)
    match: str = "component"
    #: per-module formats; the first rule that reaches a module decides its format
    rules: tuple[QuantRule, ...] = ()
    #: with ``rules``: a module no rule reaches stays unquantised (compressed-tensors groups,
    #: ModelOpt MIXED_PRECISION); otherwise it keeps this scheme's own format
    rules_only: bool = False
    #: exact-name rules (``how == "exact"``) by name, for long per-layer lists (built by :func:`with_rules`)
    index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    #: MLX per-module bit widths: (module, "mlx<bits>", group)
    overrides: tuple[tuple[str, str, int], ...] = ()
    embeddings: bool = False  # MLX: the embedding is quantised like a Linear
    source: str = ""          # quant_method as written
    #: non-empty when the layout is not modelled (or only approximated): why; the plan then
    #: reports bounds instead of one silent figure
    uncertain: str = ""
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def quantised(self) -> bool:
        return self.method != "bf16" or bool(self.rules)

    @property
    def legacy(self) -> str:
        """The short names older code paths use (``spec.quant``)."""
        return {"ct_pack": "int4_ct"}.get(self.method, self.method)

    def rule_for(self, module: str, kind: str) -> QuantRule | None:
        """The first rule that reaches ``module`` (the exact-name index first)."""
        hit = exact_hit(self.index, module)
        if hit is not None:
            return self.rules[hit]
        for r in self.rules:
            if r.how != "exact" and any(matches(t, module, r.how, kind) for t in r.targets):
                return r
        return None

    def _rule_reaches(self, module: str, kind: str) -> bool:
        return self.rule_for(module, kind) is not None or any(
            matches(name, module, "modelopt", kind) for name, _m, _g in self.overrides)

    def skips(self, module: str, kind: str = "") -> bool:
        """Whether ``module`` (``model.layers.3.self_attn.q_proj``) stays unquantised."""
        if not self.quantised:
            return True
        if kind == "embedding" and self.embeddings:
            return any(matches(p, module, self.match, kind) for p in self.ignore)
        if kind in ("router", "embedding", "norm", "vision"):
            return True
        if kind == "lm_head" and not self.lm_head and not self._rule_reaches(module, kind):
            return True
        if self.mlp_only and kind == "attn":
            return True
        return any(matches(p, module, self.match, kind) for p in self.ignore)


def resolve(scheme: QuantScheme, module: str, kind: str = "") -> QuantScheme | None:
    """The scheme ``module`` is stored in, or None when it stays unquantised."""
    if scheme.skips(module, kind):
        return None
    if scheme.rules:
        r = scheme.rule_for(module, kind)
        if r is not None:
            sub = r.scheme
            return None if sub.method == "bf16" or sub.skips(module, kind if kind != "lm_head" else "dense") else sub
        if scheme.rules_only or scheme.method == "bf16":
            return None
    return scheme


def _int(v: Any, default: int) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def _words(n_bits: int) -> int:
    """int32 words holding ``n_bits`` bits."""
    return ceil(n_bits / 32)


def _packed(prefix: str, out: int, inp: int, m: str, b: int, g: int, s: QuantScheme) -> list[tuple[str, str, tuple[int, ...]]]:
    """The integer-packed layouts (AWQ, GPTQ, compressed-tensors pack, ModelOpt int4, MLX, AQLM, generic)."""
    gi = ceil(inp / g)
    if m == "awq":
        return [(f"{prefix}.qweight", "I32", (inp, _words(out * b))), (f"{prefix}.qzeros", "I32", (gi, _words(out * b))),
                (f"{prefix}.scales", "F16", (gi, out))]
    if m == "gptq":
        return [(f"{prefix}.qweight", "I32", (_words(inp * b), out)), (f"{prefix}.qzeros", "I32", (gi, _words(out * b))),
                (f"{prefix}.scales", "F16", (gi, out)), (f"{prefix}.g_idx", "I32", (inp,))]
    if m == "ct_pack":
        ts = [(f"{prefix}.weight_packed", "I32", (out, _words(inp * b))), (f"{prefix}.weight_scale", "BF16", (out, gi)),
              (f"{prefix}.weight_shape", "I32", (2,))]
        if s.zero_point:
            ts.append((f"{prefix}.weight_zero_point", "I32", (_words(out * b), gi)))
        if s.desc_act:
            ts.append((f"{prefix}.weight_g_idx", "I32", (inp,)))
        return ts
    if m == "int4_sym":
        return [(f"{prefix}.weight", "U8", (out, ceil(inp / 2))), (f"{prefix}.weight_scale", "BF16", (out, gi)),
                (f"{prefix}.pre_quant_scale", "BF16", (inp,))]
    if m == "mlx":
        return [(f"{prefix}.weight", "U32", (out, _words(inp * b))), (f"{prefix}.scales", "BF16", (out, gi)),
                (f"{prefix}.biases", "BF16", (out, gi))]
    if m == "aqlm":  # b = bits per weight (nbits_per_codebook × codebooks / in_group_size)
        return [(f"{prefix}.codes", "I16", (out, ceil(inp * b / 16))), (f"{prefix}.scales", "F16", (out, 1))]
    # packed_int: b bits per weight + one BF16 scale per g inputs
    return [(f"{prefix}.weight", "U8", (out, ceil(inp * b / 8))), (f"{prefix}.weight_scale", "BF16", (out, gi))]


def _float(prefix: str, out: int, inp: int, m: str, s: QuantScheme) -> list[tuple[str, str, tuple[int, ...]]] | None:
    """The FP8 / FP4 / int8 layouts with a weight of its own dtype and scale tensors."""
    w = f"{prefix}.weight"
    if m == "fp8_block":
        b0, b1 = s.block
        return [(w, "F8_E4M3", (out, inp)), (f"{prefix}.weight_scale_inv", "F32", (ceil(out / b0), ceil(inp / b1)))]
    if m == "int8_block":
        b0, b1 = s.block
        return [(w, "I8", (out, inp)), (f"{prefix}.weight_scale_inv", "F32", (ceil(out / b0), ceil(inp / b1)))]
    if m == "fp8_channel":
        return [(w, "F8_E4M3", (out, inp)), (f"{prefix}.weight_scale", "F32", (out, 1))]
    if m == "fp8_tensor":
        return [(w, "F8_E4M3", (out, inp)), (f"{prefix}.weight_scale", "F32", ())]
    if m == "mxfp8":
        return [(w, "F8_E4M3", (out, inp)), (f"{prefix}.weight_scale", "U8", (out, ceil(inp / 32)))]
    if m == "ct_int8":
        return [(w, "I8", (out, inp)), (f"{prefix}.weight_scale", "F32", (out, 1))]
    if m == "nvfp4":
        return [(w, "U8", (out, ceil(inp / 2))), (f"{prefix}.weight_scale", "F8_E4M3", (out, ceil(inp / 16))),
                (f"{prefix}.weight_scale_2", "F32", ()), (f"{prefix}.input_scale", "F32", ())]
    if m == "nvfp4_ct":
        return [(f"{prefix}.weight_packed", "U8", (out, ceil(inp / 2))),
                (f"{prefix}.weight_scale", "F8_E4M3", (out, ceil(inp / 16))),
                (f"{prefix}.weight_global_scale", "F32", (1,)), (f"{prefix}.input_global_scale", "F32", (1,))]
    if m == "mxfp4_ct":
        return [(f"{prefix}.weight_packed", "U8", (out, ceil(inp / 2))), (f"{prefix}.weight_scale", "U8", (out, ceil(inp / 32)))]
    if m == "bnb4":
        n, g = out * inp, s.group if s.group > 0 else 64
        ts = [(w, "U8", (ceil(n / 2), 1)), (f"{w}.quant_map", "F32", (16,))]
        if s.double_quant:
            return ts + [(f"{w}.absmax", "U8", (ceil(n / g),)), (f"{w}.nested_absmax", "F32", (ceil(n / g / 256),))]
        return ts + [(f"{w}.absmax", "F32", (ceil(n / g),))]
    if m == "bnb8":
        return [(w, "I8", (out, inp)), (f"{prefix}.SCB", "F32", (out,))]
    return None


def linear_tensors(prefix: str, out: int, inp: int, scheme: QuantScheme, kind: str = "",
                   bias: bool = False, dtype: str = "BF16") -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) of one Linear ``out × in`` under ``scheme`` (``prefix`` is the module
    name; ``kind`` one of attn, dense, shared, expert, router, lm_head ...)."""
    eff = resolve(scheme, prefix, kind)
    m = eff.method if eff is not None else "bf16"
    s = eff if eff is not None else scheme
    b, g = s.bits, s.group if s.group and s.group > 0 else inp
    if m == "mlx" and s.overrides:  # MLX: a listed module has its own bits / group, the rest the default
        hit = next(((meth, grp) for name, meth, grp in s.overrides if matches(name, prefix, "component")), None)
        if hit:
            b, g = _int(hit[0][3:], b), hit[1] or g
    ts: list[tuple[str, str, tuple[int, ...]]]
    if m in ("bf16", "mxfp4"):
        ts = [(f"{prefix}.weight", dtype, (out, inp))]
    else:
        ts = _float(prefix, out, inp, m, s) or _packed(prefix, out, inp, m, b, g, s)
    if m in ("fp8_tensor", "ct_int8") and s.static_input:
        ts.append((f"{prefix}.input_scale", "F32", ()))
    if bias:
        ts.append((f"{prefix}.bias", dtype, (out,)))
    return ts


#: ``--quantization`` values that quantise an unquantised checkpoint while loading (online); the
#: layout each leaves in memory (vLLM ``fp8.py`` / ``online/``, ``experts_int8.py``,
#: ``bitsandbytes.py``; SGLang ``fp8.py``, ``w8a8_fp8.py``, ``w8a8_int8.py``, ``blockwise_int8.py``)
ONLINE_QUANTIZATION: dict[str, dict[str, Any]] = {
    "fp8": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    "fp8_per_tensor": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    "ptpc_fp8": {"quant_method": "fbgemm_fp8", "_online_all": True},
    "fp8_per_channel": {"quant_method": "fbgemm_fp8", "_online_all": True},
    "w8a8_fp8": {"quant_method": "fbgemm_fp8", "_online_all": True},
    "fp8_per_block": {"quant_method": "fp8", "weight_block_size": [128, 128]},
    "fp8_blockwise": {"quant_method": "fp8", "weight_block_size": [128, 128]},
    "mxfp8": {"quant_method": "mxfp8"},
    "int8_per_channel_weight_only": {"quant_method": "w8a8_int8"},
    "w8a8_int8": {"quant_method": "w8a8_int8"},
    "nvfp4_online": {"quant_method": "modelopt_fp4"},
    "nvfp4_per_token": {"quant_method": "modelopt_fp4"},
    "experts_int8": {"quant_method": "experts_int8"},
    "tpu_int8": {"quant_method": "w8a8_int8"},
    "neuron_quant": {"quant_method": "w8a8_int8"},
    "quark_int4fp8_moe": {"quant_method": "quark_int4fp8_moe"},
    "deepspeedfp": {"quant_method": "deepspeedfp"},
    "online": {"quant_method": "online"},
    # vLLM's in-flight bitsandbytes quantises with compress_statistics=True (nested absmax)
    "bitsandbytes": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_blocksize": 64,
                     "bnb_4bit_use_double_quant": True},
}


def with_launch_quantization(cfg: Mapping[str, Any], flag: Any) -> dict[str, Any]:
    """``cfg`` with the quantisation a launch flag applies at load time (``ONLINE_QUANTIZATION``:
    vLLM/SGLang ``--quantization fp8`` = per-tensor FP8 of every Linear but the head, ``fp8_per_block``,
    ``mxfp8``, ``experts_int8``, ``bitsandbytes`` ...) on a checkpoint without ``quantization_config``.
    A checkpoint that carries one keeps it (the flag then only names the kernel, e.g. ``awq_marlin``)."""
    out = dict(cfg)
    if not flag:
        return out
    key = str(flag).lower().replace("-", "_")
    target = out.get("text_config") if isinstance(out.get("text_config"), Mapping) and "hidden_size" not in out else None
    has = out.get("quantization_config") or (target or {}).get("quantization_config")
    if has or key not in ONLINE_QUANTIZATION:
        return out
    out["quantization_config"] = dict(ONLINE_QUANTIZATION[key])
    return out


def merge_hf_quant_config(cfg: Mapping[str, Any], hf_quant: Mapping[str, Any] | None) -> dict[str, Any]:
    """ModelOpt checkpoints keep their quantisation in ``hf_quant_config.json`` beside
    config.json (``{"producer": ..., "quantization": {"quant_algo": "NVFP4", "exclude_modules":
    [...]}}``); the engines read it when config.json has no ``quantization_config``."""
    out = dict(cfg)
    if hf_quant and isinstance(hf_quant.get("quantization"), Mapping) and not out.get("quantization_config"):
        out["quantization_config"] = {"quant_method": "modelopt", **dict(hf_quant["quantization"])}
    return out


def merge_quantize_config(cfg: Mapping[str, Any], qc: Mapping[str, Any] | None) -> dict[str, Any]:
    """AutoGPTQ / AutoAWQ checkpoints may keep their settings only in ``quantize_config.json``
    (``bits``, ``group_size``, ``desc_act``, ``sym`` / AutoAWQ ``w_bit``, ``q_group_size``,
    ``zero_point``); vLLM's GPTQ/AWQ configs read that file when config.json has none
    (``get_quant_config``). Without a ``quant_method`` it is GPTQ unless AWQ's keys say otherwise."""
    out = dict(cfg)
    if not isinstance(qc, Mapping) or out.get("quantization_config") or not (qc.get("bits") or qc.get("w_bit")):
        return out
    q = dict(qc)
    if not q.get("quant_method"):
        q["quant_method"] = "awq" if ("w_bit" in q or "q_group_size" in q or q.get("version")) else "gptq"
    out["quantization_config"] = q
    return out


def parse_quant(cfg: Mapping[str, Any]) -> QuantScheme:
    """The :class:`QuantScheme` of a config (see :func:`.quantparse.parse_quant`)."""
    from .quantparse import parse_quant as _parse

    return _parse(cfg)


def with_rules(scheme: QuantScheme, rules: list[QuantRule], rules_only: bool) -> QuantScheme:
    """``scheme`` with per-module ``rules`` (exact-name ones indexed)."""
    index = {t: i for i, r in enumerate(rules) if r.how == "exact" for t in r.targets if "*" not in t}
    return replace(scheme, rules=tuple(rules), rules_only=rules_only, index=index)
