"""How a checkpoint's ``quantization_config`` stores each Linear layer, and which layers it leaves
alone — the tensors (name, dtype, shape) the engines load, so scales, zero points and packed
layouts are counted at their real size.

Formats (``QuantScheme.method``), with the tensors one Linear ``out × in`` becomes:

===============  ==================================================================================
``bf16``         ``weight`` BF16/F16 ``[out, in]``
``fp8_block``    ``weight`` F8 ``[out, in]`` + ``weight_scale_inv`` F32 ``[⌈out/b0⌉, ⌈in/b1⌉]``
                 (``quant_method: fp8`` with ``weight_block_size``; compressed-tensors block)
``fp8_channel``  ``weight`` F8 + ``weight_scale`` F32 ``[out, 1]`` (compressed-tensors channel,
                 fbgemm_fp8 which also has ``input_scale_ub``)
``fp8_tensor``   ``weight`` F8 + ``weight_scale`` F32 ``[]`` (+ ``input_scale`` when static):
                 ``quant_method: fp8`` without blocks, ModelOpt FP8, compressed-tensors tensor
``awq``          ``qweight`` I32 ``[in, out·b/32]`` + ``qzeros`` I32 ``[in/g, out·b/32]`` +
                 ``scales`` F16 ``[in/g, out]`` (vLLM's AWQ-Marlin repack keeps the sizes)
``gptq``         ``qweight`` I32 ``[in·b/32, out]`` + ``qzeros`` I32 ``[in/g, out·b/32]`` +
                 ``scales`` F16 ``[in/g, out]`` + ``g_idx`` I32 ``[in]``
``ct_pack``      compressed-tensors ``pack-quantized`` (W4A16/W8A16): ``weight_packed`` I32
                 ``[out, in·b/32]`` + ``weight_scale`` BF16 ``[out, in/g]`` (+ ``weight_zero_point``
                 when asymmetric) + ``weight_shape`` I32 ``[2]``
``ct_int8``      compressed-tensors ``int-quantized`` W8A8: ``weight`` I8 + ``weight_scale`` F32
                 ``[out, 1]`` (+ ``input_scale`` when static)
``nvfp4``        ModelOpt NVFP4: ``weight`` U8 ``[out, in/2]`` + ``weight_scale`` F8 ``[out, in/16]``
                 + ``weight_scale_2`` F32 + ``input_scale`` F32
``nvfp4_ct``     compressed-tensors ``nvfp4-pack-quantized``: ``weight_packed`` U8 + ``weight_scale``
                 F8 ``[out, in/16]`` + ``weight_global_scale`` + ``input_global_scale`` F32
``mxfp4_ct``     compressed-tensors ``mxfp4-pack-quantized``: ``weight_packed`` U8 ``[out, in/2]`` +
                 ``weight_scale`` U8 ``[out, in/32]``
``mxfp4``        gpt-oss MXFP4 (experts only; ``*_blocks`` / ``*_scales``, see synth.py)
``bnb4``         bitsandbytes 4-bit: ``weight`` U8 ``[out·in/2, 1]`` + ``absmax`` F32 ``[out·in/64]``
                 (+ nested absmax when double quantisation) + ``quant_map`` F32 ``[16]``
``bnb8``         bitsandbytes 8-bit: ``weight`` I8 ``[out, in]`` + ``SCB`` F32 ``[out]``
``mlx``          MLX affine (``quantization_config: {group_size, bits}`` without ``quant_method``, as
                 mlx-lm writes it): ``weight`` U32 ``[out, in·b/32]`` + ``scales`` and ``biases``
                 BF16 ``[out, in/g]``; embeddings and the head are quantised too; a module key
                 with its own ``{bits, group_size}`` overrides, ``false`` keeps it unquantised
===============  ==================================================================================

Layers left unquantised: the router gates, embeddings and ``lm_head`` (unless the config says
otherwise), norms, vision towers, and every module an ignore list names — ``modules_to_not_convert``
(AWQ, GPTQ, fbgemm, bitsandbytes ``llm_int8_skip_modules``: substrings, ``*`` wildcards),
compressed-tensors ``ignore`` (exact names or ``re:`` regexes), ModelOpt ``exclude_modules``
(wildcards, ``re:``), vLLM ``ignored_layers``, and fbgemm FP8's MLP-only rule (attention stays
BF16). Sources: the engines' quantization/*.py (vLLM ``awq_marlin``, ``gptq_marlin``,
``compressed_tensors``, ``modelopt``, ``fbgemm_fp8``, ``fp8``, ``bitsandbytes``; SGLang's
counterparts) — these layouts are what their ``create_weights`` allocate.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from math import ceil
from typing import Any, Mapping

__all__ = ["QuantScheme", "parse_quant", "linear_tensors", "with_launch_quantization", "ONLINE_QUANTIZATION",
           "merge_hf_quant_config", "merge_quantize_config"]

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
    #: per-module formats (ModelOpt MIXED_PRECISION ``quantized_layers``): (module, method, group);
    #: with overrides, a module none of them names stays unquantised (MLX: keeps the default)
    overrides: tuple[tuple[str, str, int], ...] = ()
    embeddings: bool = False  # MLX: the embedding is quantised like a Linear
    source: str = ""          # quant_method as written
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def quantised(self) -> bool:
        return self.method != "bf16"

    @property
    def legacy(self) -> str:
        """The short names older code paths use (``spec.quant``)."""
        return {"ct_pack": "int4_ct"}.get(self.method, self.method)

    def skips(self, module: str, kind: str = "") -> bool:
        """Whether ``module`` (``model.layers.3.self_attn.q_proj``) stays unquantised."""
        if not self.quantised:
            return True
        if kind == "embedding" and self.embeddings:
            return any(_matches(p, module) for p in self.ignore)
        if kind in ("router", "embedding", "norm", "vision"):
            return True
        if kind == "lm_head" and not self.lm_head:
            # ModelOpt MIXED_PRECISION lists the head among its quantised layers when it is one
            return not any(_matches(name, module) for name, _m, _g in self.overrides)
        if self.mlp_only and kind == "attn":
            return True
        return any(_matches(p, module) for p in self.ignore)


_RX_CACHE: dict[str, re.Pattern[str] | None] = {}


#: module-path components exporters put in front of the decoder's ``layers.``
_DECODER_PREFIXES = frozenset({"model", "backbone", "language_model", "transformer", "decoder", "text_model"})


def _tail(name: str) -> str:
    """``layers.3.mlp.gate`` of ``backbone.layers.3.mlp.gate`` / ``model.language_model.layers...``:
    exporters name the decoder differently, the part from ``layers.`` on is what they share."""
    i = name.find("layers.")
    return name[i:] if i >= 0 else name


def _matches(pattern: str, module: str) -> bool:
    """compressed-tensors ``re:`` regexes (``re.match``), ``*`` wildcards (fnmatch over the
    whole name), else a substring test (HF ``modules_to_not_convert`` semantics); names are
    compared from ``layers.`` on when the pattern names a layer (exporters prefix the decoder as
    ``model.``, ``backbone.``, ``language_model.model.`` ...)."""
    if "layers." in pattern and not pattern.startswith(("re:", "-:")):
        pt, mt = _tail(pattern), _tail(module)
        # the part before ``layers.`` only spells the decoder's prefix; anything else in it names
        # another stack (``mtp.layers.0*`` is the MTP block, not the decoder's layer 0)
        other = {c for c in pattern[:pattern.find("layers.")].split(".") if c and c not in _DECODER_PREFIXES}
        if other and not other <= set(module[:module.find("layers.")].split(".")):
            return False
        if "*" in pt or "?" in pt:
            return fnmatch.fnmatchcase(mt, pt) or fnmatch.fnmatchcase(mt, pt + "*")
        return mt == pt or mt.startswith(pt + ".")
    if pattern.startswith("re:"):
        rx = _RX_CACHE.get(pattern)
        if pattern not in _RX_CACHE:
            try:
                rx = re.compile(pattern[3:])
            except re.error:
                rx = None
            _RX_CACHE[pattern] = rx
        return bool(rx and rx.match(module))
    if pattern.startswith("-:"):  # GPTQModel ``dynamic``: "-:regex" = skip these modules
        return _matches("re:" + pattern[2:], module)
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, "*" + pattern + "*")
    # a dotted-component match: "gate" names the router ``mlp.gate``, not ``gate_proj``;
    # "self_attn" every module under it; an exact name itself
    return ("." + pattern + ".") in ("." + module + ".")


def _int(v: Any, default: int) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def _ignore_list(q: Mapping[str, Any], *keys: str) -> tuple[str, ...]:
    out: list[str] = []
    for k in keys:
        v = q.get(k)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(str(x) for x in v if isinstance(x, (str, int)))
    dyn = q.get("dynamic")
    if isinstance(dyn, Mapping):
        out.extend(str(k) for k in dyn if str(k).startswith("-:"))
    return tuple(out)


def _ct_scheme(q: Mapping[str, Any]) -> QuantScheme:
    fmt = str(q.get("format", "")).lower()
    groups = q.get("config_groups") or {}
    first: Mapping[str, Any] = {}
    for g in groups.values() if isinstance(groups, Mapping) else ():
        if isinstance(g, Mapping) and isinstance(g.get("weights"), Mapping):
            first = g
            break
    w: Mapping[str, Any] = first.get("weights") or {}
    a: Mapping[str, Any] = first.get("input_activations") or {}
    bits = _int(w.get("num_bits"), 8)
    wtype = str(w.get("type", "int")).lower()
    strat = str(w.get("strategy", "")).lower()
    gsize = _int(w.get("group_size"), 128) if strat in ("group", "tensor_group") else -1
    static = bool(a) and not a.get("dynamic", True)
    ignore = _ignore_list(q, "ignore")
    base: dict[str, Any] = dict(bits=bits, group=gsize, static_input=static, ignore=ignore,
                                source="compressed-tensors")
    if "nvfp4" in fmt or (wtype == "float" and bits == 4 and gsize == 16):
        return QuantScheme("nvfp4_ct", **{**base, "group": 16})
    if "mxfp4" in fmt or (wtype == "float" and bits == 4):
        return QuantScheme("mxfp4_ct", **{**base, "group": 32})
    if wtype == "float" or "float-quantized" in fmt:
        if strat == "block":
            blk = w.get("block_structure") or [128, 128]
            return QuantScheme("fp8_block", **{**base, "block": (_int(blk[0], 128), _int(blk[-1], 128))})
        if strat == "tensor":
            return QuantScheme("fp8_tensor", **base)
        return QuantScheme("fp8_channel", **base)
    if "pack-quantized" in fmt or bits < 8:
        return QuantScheme("ct_pack", zero_point=not w.get("symmetric", True), **base)
    return QuantScheme("ct_int8", **base)


def _mlx_scheme(q: Mapping[str, Any]) -> QuantScheme:
    """mlx-lm's ``quantization`` block: every Linear and Embedding at ``bits`` with one scale and one
    bias per ``group_size`` inputs, except the module paths listed with their own settings (a
    ``{bits, group_size}`` mapping) or ``false`` (left in 16 bits)."""
    bits, group = _int(q.get("bits"), 4), _int(q.get("group_size"), 64)
    ov, skip = [], []
    for name, v in q.items():
        if name in ("bits", "group_size", "mode", "quant_method"):
            continue
        if v is False:
            skip.append(str(name))
        elif isinstance(v, Mapping):
            ov.append((str(name), f"mlx{_int(v.get('bits'), bits)}", _int(v.get("group_size"), group)))
    return QuantScheme("mlx", bits=bits, group=group, lm_head=True, embeddings=True, ignore=tuple(skip),
                       overrides=tuple(ov), source="mlx",
                       notes=("MLX affine quantisation (mlx-lm): a format for Apple silicon, not one vLLM/SGLang load",))


def parse_quant(cfg: Mapping[str, Any]) -> QuantScheme:
    """The :class:`QuantScheme` of a config (``quantization_config``, or ``compression_config``
    of older compressed-tensors exports); ``bf16`` when there is none or it is not understood
    (the caller notes the latter)."""
    q = cfg.get("quantization_config") or cfg.get("compression_config") or {}
    if not isinstance(q, Mapping) or not q:
        return QuantScheme()
    method = str(q.get("quant_method", "")).lower().replace("-", "_")
    algo = str(q.get("quant_algo", "")).upper()
    if method == "compressed_tensors":
        return _ct_scheme(q)
    if method == "fp8":
        ignore = _ignore_list(q, "ignored_layers", "modules_to_not_convert")
        blk = q.get("weight_block_size")
        static = str(q.get("activation_scheme", "dynamic")).lower() == "static"
        if blk:
            return QuantScheme("fp8_block", bits=8, block=(_int(blk[0], 128), _int(blk[-1], 128)),
                               ignore=ignore, source="fp8")
        return QuantScheme("fp8_tensor", bits=8, static_input=static, ignore=ignore, source="fp8")
    if method == "fbgemm_fp8":
        return QuantScheme("fp8_channel", bits=8, mlp_only=True,
                           ignore=_ignore_list(q, "modules_to_not_convert"), source="fbgemm_fp8")
    if not method and isinstance(q.get("quantization"), Mapping):  # hf_quant_config.json layout
        method = "modelopt"
    if method in ("modelopt", "modelopt_fp4", "modelopt_fp8") or algo in ("FP8", "NVFP4", "W4A8_AWQ"):
        sub = q.get("quantization")
        quant: Mapping[str, Any] = sub if isinstance(sub, Mapping) else q
        algo = str(quant.get("quant_algo", algo)).upper()
        ignore = _ignore_list(quant, "exclude_modules", "ignore")
        layers = quant.get("quantized_layers")
        if algo == "MIXED_PRECISION" and isinstance(layers, Mapping):
            ov = []
            for name, spec in layers.items():
                a = str((spec or {}).get("quant_algo", "")).upper() if isinstance(spec, Mapping) else ""
                meth = "nvfp4" if "FP4" in a else "fp8_tensor" if "FP8" in a else ""
                if meth:
                    ov.append((str(name), meth, _int((spec or {}).get("group_size"), 16 if meth == "nvfp4" else 0)))
            return QuantScheme("nvfp4" if any(o[1] == "nvfp4" for o in ov) else "fp8_tensor", bits=4,
                               group=16, ignore=ignore, overrides=tuple(ov), source="modelopt")
        if "FP4" in algo or method == "modelopt_fp4":
            return QuantScheme("nvfp4", bits=4, group=_int(quant.get("group_size"), 16), ignore=ignore,
                               source="modelopt")
        return QuantScheme("fp8_tensor", bits=8, static_input=True, ignore=ignore, source="modelopt")
    if method == "mxfp4":
        return QuantScheme("mxfp4", bits=4, group=32, ignore=_ignore_list(q, "modules_to_not_convert"),
                           source="mxfp4")
    if method in ("awq", "awq_marlin"):
        ver = str(q.get("version", "gemm")).lower()
        return QuantScheme("awq", bits=_int(q.get("bits") or q.get("w_bit"), 4),
                           group=_int(q.get("group_size") or q.get("q_group_size"), 128),
                           zero_point=bool(q.get("zero_point", True)),
                           ignore=_ignore_list(q, "modules_to_not_convert"), source="awq",
                           notes=(f"AWQ version {ver}",) if ver not in ("gemm", "gemv") else ())
    if method in ("gptq", "gptq_marlin"):
        return QuantScheme("gptq", bits=_int(q.get("bits"), 4), group=_int(q.get("group_size"), 128),
                           zero_point=not q.get("sym", True), desc_act=bool(q.get("desc_act", False)),
                           lm_head=bool(q.get("lm_head", False)),
                           ignore=_ignore_list(q, "modules_to_not_convert"), source="gptq")
    if not method and isinstance(q.get("bits"), int) and isinstance(q.get("group_size"), int) \
            and (q.get("mode", "affine") == "affine") and not q.get("quant_method"):
        return _mlx_scheme(q)
    if method == "bitsandbytes" or q.get("load_in_4bit") or q.get("load_in_8bit"):
        skip = _ignore_list(q, "llm_int8_skip_modules", "modules_to_not_convert")
        if q.get("load_in_8bit") and not q.get("load_in_4bit"):
            return QuantScheme("bnb8", bits=8, ignore=skip, source="bitsandbytes")
        return QuantScheme("bnb4", bits=4, group=_int(q.get("bnb_4bit_blocksize"), 64),
                           double_quant=bool(q.get("bnb_4bit_use_double_quant", False)), ignore=skip,
                           source="bitsandbytes")
    return QuantScheme(notes=(f"quant_method {method or '?'} is not modelled; counted as unquantised",))


def linear_tensors(prefix: str, out: int, inp: int, scheme: QuantScheme, kind: str = "",
                   bias: bool = False, dtype: str = "BF16") -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) of one Linear ``out × in`` under ``scheme`` (``prefix`` is the module
    name; ``kind`` one of attn, dense, shared, expert, router, lm_head ...)."""
    m = scheme.method if not scheme.skips(prefix, kind) else "bf16"
    b = scheme.bits
    g = scheme.group if scheme.group and scheme.group > 0 else inp
    if scheme.overrides and m != "bf16":
        hit = next(((meth, grp) for name, meth, grp in scheme.overrides if _matches(name, prefix)), None)
        if m == "mlx":  # MLX: a listed module has its own bits / group, the rest the default
            if hit:
                b, g = _int(hit[0][3:], b), hit[1] or g
        else:
            m, g = (hit[0], hit[1] or g) if hit else ("bf16", g)
    ts: list[tuple[str, str, tuple[int, ...]]]
    if m == "bf16" or m == "mxfp4":
        ts = [(f"{prefix}.weight", dtype, (out, inp))]
    elif m == "fp8_block":
        b0, b1 = scheme.block
        ts = [(f"{prefix}.weight", "F8_E4M3", (out, inp)),
              (f"{prefix}.weight_scale_inv", "F32", (ceil(out / b0), ceil(inp / b1)))]
    elif m == "fp8_channel":
        ts = [(f"{prefix}.weight", "F8_E4M3", (out, inp)), (f"{prefix}.weight_scale", "F32", (out, 1))]
    elif m == "fp8_tensor":
        ts = [(f"{prefix}.weight", "F8_E4M3", (out, inp)), (f"{prefix}.weight_scale", "F32", ())]
    elif m == "awq":
        pack = 32 // b
        ts = [(f"{prefix}.qweight", "I32", (inp, ceil(out / pack))),
              (f"{prefix}.qzeros", "I32", (ceil(inp / g), ceil(out / pack))),
              (f"{prefix}.scales", "F16", (ceil(inp / g), out))]
    elif m == "gptq":
        pack = 32 // b
        ts = [(f"{prefix}.qweight", "I32", (ceil(inp / pack), out)),
              (f"{prefix}.qzeros", "I32", (ceil(inp / g), ceil(out / pack))),
              (f"{prefix}.scales", "F16", (ceil(inp / g), out)),
              (f"{prefix}.g_idx", "I32", (inp,))]
    elif m == "ct_pack":
        pack = 32 // b
        ts = [(f"{prefix}.weight_packed", "I32", (out, ceil(inp / pack))),
              (f"{prefix}.weight_scale", "BF16", (out, ceil(inp / g))),
              (f"{prefix}.weight_shape", "I32", (2,))]
        if scheme.zero_point:
            ts.append((f"{prefix}.weight_zero_point", "I32", (ceil(out / pack), ceil(inp / g))))
    elif m == "ct_int8":
        ts = [(f"{prefix}.weight", "I8", (out, inp)), (f"{prefix}.weight_scale", "F32", (out, 1))]
    elif m == "nvfp4":
        ts = [(f"{prefix}.weight", "U8", (out, ceil(inp / 2))),
              (f"{prefix}.weight_scale", "F8_E4M3", (out, ceil(inp / 16))),
              (f"{prefix}.weight_scale_2", "F32", ()), (f"{prefix}.input_scale", "F32", ())]
    elif m == "nvfp4_ct":
        ts = [(f"{prefix}.weight_packed", "U8", (out, ceil(inp / 2))),
              (f"{prefix}.weight_scale", "F8_E4M3", (out, ceil(inp / 16))),
              (f"{prefix}.weight_global_scale", "F32", (1,)), (f"{prefix}.input_global_scale", "F32", (1,))]
    elif m == "mxfp4_ct":
        ts = [(f"{prefix}.weight_packed", "U8", (out, ceil(inp / 2))),
              (f"{prefix}.weight_scale", "U8", (out, ceil(inp / 32)))]
    elif m == "bnb4":
        n = out * inp
        ts = [(f"{prefix}.weight", "U8", (ceil(n / 2), 1)), (f"{prefix}.weight.quant_map", "F32", (16,))]
        if scheme.double_quant:
            ts += [(f"{prefix}.weight.absmax", "U8", (ceil(n / g),)),
                   (f"{prefix}.weight.nested_absmax", "F32", (ceil(n / g / 256),))]
        else:
            ts.append((f"{prefix}.weight.absmax", "F32", (ceil(n / g),)))
    elif m == "mlx":
        ts = [(f"{prefix}.weight", "U32", (out, ceil(inp * b / 32))),
              (f"{prefix}.scales", dtype, (out, ceil(inp / g))), (f"{prefix}.biases", dtype, (out, ceil(inp / g)))]
    elif m == "bnb8":
        ts = [(f"{prefix}.weight", "I8", (out, inp)), (f"{prefix}.SCB", "F32", (out,))]
    else:  # pragma: no cover - parse_quant only yields the methods above
        ts = [(f"{prefix}.weight", dtype, (out, inp))]
    if m in ("fp8_tensor", "ct_int8") and scheme.static_input:
        ts.append((f"{prefix}.input_scale", "F32", ()))
    if bias:
        ts.append((f"{prefix}.bias", dtype, (out,)))
    return ts


#: ``--quantization`` values that quantise an unquantised checkpoint while loading (online)
ONLINE_QUANTIZATION: dict[str, dict[str, Any]] = {
    "fp8": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    # vLLM's in-flight bitsandbytes quantises with compress_statistics=True (nested absmax)
    "bitsandbytes": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_blocksize": 64,
                     "bnb_4bit_use_double_quant": True},
}


def with_launch_quantization(cfg: Mapping[str, Any], flag: Any) -> dict[str, Any]:
    """``cfg`` with the quantisation a launch flag applies at load time: vLLM/SGLang
    ``--quantization fp8`` (per-tensor FP8 of every Linear but the head) and ``bitsandbytes``
    (in-flight 4-bit) on a checkpoint without ``quantization_config``. A checkpoint that carries
    one keeps it (the flag then only names the kernel, e.g. ``awq_marlin``)."""
    out = dict(cfg)
    if not flag:
        return out
    key = str(flag).lower()
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
