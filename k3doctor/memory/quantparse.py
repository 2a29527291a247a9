"""``quantization_config`` (or ModelOpt's ``hf_quant_config.json``, AutoGPTQ's ``quantize_config.json``)
→ :class:`~.quantscheme.QuantScheme`, one parser per ``quant_method`` as vLLM / SGLang read it.
:mod:`.quantmethods` lists every method the engines accept and which parser (or which refusal)
answers it. A method that is not modelled is never projected silently as unquantised: the scheme
carries ``uncertain`` (why) and ``alt`` (the low / high layouts the plan reports as bounds)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from .quantscheme import QuantRule, QuantScheme, _int, with_rules

__all__ = ["parse_quant", "PARSERS", "unknown_scheme"]


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


# -- compressed-tensors ------------------------------------------------------------------------
def _ct_group(w: Mapping[str, Any], a: Mapping[str, Any] | None, fmt: str) -> QuantScheme:
    """One ``config_groups`` entry (vLLM ``CompressedTensorsConfig._get_scheme_from_parts``)."""
    bits = _int(w.get("num_bits"), 8)
    wtype = str(w.get("type", "int")).lower()
    strat = str(w.get("strategy", "")).lower()
    gsize = _int(w.get("group_size"), 128) if strat in ("group", "tensor_group") else -1
    static = bool(a) and not (a or {}).get("dynamic", True)
    base: dict[str, Any] = dict(bits=bits, group=gsize, static_input=static, source="compressed-tensors")
    if "nvfp4" in fmt or (wtype == "float" and bits == 4 and gsize == 16):
        return QuantScheme("nvfp4_ct", **{**base, "group": 16})
    if "mxfp4" in fmt or (wtype == "float" and bits == 4):
        return QuantScheme("mxfp4_ct", **{**base, "group": 32})
    if wtype == "float" or "float-quantized" in fmt or "mxfp8" in fmt:
        if "mxfp8" in fmt or (gsize == 32 and str(w.get("scale_dtype") or "").endswith("uint8")):
            return QuantScheme("mxfp8", **{**base, "group": 32})
        if strat == "block":
            blk = w.get("block_structure") or [128, 128]
            return QuantScheme("fp8_block", **{**base, "block": (_int(blk[0], 128), _int(blk[-1], 128))})
        if strat in ("group", "tensor_group"):
            return QuantScheme("fp8_block", **{**base, "block": (1, max(1, gsize))})
        return QuantScheme("fp8_tensor" if strat == "tensor" else "fp8_channel", **base)
    if "pack-quantized" in fmt or bits < 8:
        return QuantScheme("ct_pack", zero_point=not w.get("symmetric", True),
                           desc_act=str(w.get("actorder") or "").lower() == "group", **base)
    return QuantScheme("ct_int8", **base)


def _ct(q: Mapping[str, Any]) -> QuantScheme:
    """compressed-tensors: each ``config_groups`` entry is a format and the ``targets`` it applies
    to (module names, ``re:`` regexes, class names); ``ignore`` leaves modules out; a module no
    group targets stays unquantised (vLLM ``get_scheme`` returns None for it)."""
    top = str(q.get("format", "")).lower()
    groups = q.get("config_groups") or {}
    rules: list[QuantRule] = []
    for g in groups.values() if isinstance(groups, Mapping) else ():
        if isinstance(g, Mapping) and isinstance(g.get("weights"), Mapping):
            fmt = str(g.get("format") or top).lower()
            targets = tuple(str(t) for t in g.get("targets") or ["Linear"])
            rules.append(QuantRule(targets, _ct_group(g["weights"], g.get("input_activations"), fmt), "ct"))
    ignore = _ignore_list(q, "ignore")
    notes: list[str] = []
    sparsity = q.get("sparsity_config") or {}
    uncertain = ""
    if isinstance(sparsity, Mapping) and sparsity.get("format") not in (None, "", "dense"):
        uncertain = (f"compressed-tensors sparsity format {sparsity.get('format')!r}: 2:4 sparse weights are kept "
                     "compressed or decompressed depending on the kernel; projected dense")
    if not rules:
        return unknown_scheme(q, "compressed-tensors config without weight config_groups")
    first = rules[0].scheme
    if len(rules) == 1 and {t.lower() for t in rules[0].targets} <= {"linear"}:
        return QuantScheme(first.method, bits=first.bits, group=first.group, block=first.block,
                           zero_point=first.zero_point, desc_act=first.desc_act, static_input=first.static_input,
                           ignore=ignore, match="ct", source="compressed-tensors", uncertain=uncertain,
                           notes=tuple(notes))
    return QuantScheme(first.method, bits=first.bits, group=first.group, block=first.block, ignore=ignore, match="ct",
                       rules=tuple(rules), rules_only=True, source="compressed-tensors", uncertain=uncertain,
                       notes=tuple(notes))


# -- ModelOpt ----------------------------------------------------------------------------------
def _modelopt_algo(algo: str, quant: Mapping[str, Any], group: int) -> QuantScheme | None:
    """One ModelOpt ``quant_algo`` (vLLM ``modelopt.py`` QUANT_ALGOS and the per-layer algos of
    MIXED_PRECISION)."""
    a = algo.upper()
    if a in ("FP8", "FP8_PER_TENSOR"):
        return QuantScheme("fp8_tensor", bits=8, static_input=True, source="modelopt")
    if a == "FP8_PER_CHANNEL_PER_TOKEN":
        return QuantScheme("fp8_channel", bits=8, source="modelopt")
    if a in ("FP8_PB_WO", "FP8_BLOCK", "FP8_PB"):
        blk = quant.get("block_size") or quant.get("weight_block_size") or [128, 128]
        blk = blk if isinstance(blk, (list, tuple)) and blk else [128, 128]
        return QuantScheme("fp8_block", bits=8, block=(_int(blk[0], 128), _int(blk[-1], 128)), source="modelopt")
    if a == "MXFP8":
        return QuantScheme("mxfp8", bits=8, group=32, source="modelopt")
    if "MXFP4" in a:
        return QuantScheme("mxfp4_ct", bits=4, group=32, source="modelopt")
    if "FP4" in a:  # NVFP4, W4A16_NVFP4, NVFP4_AWQ
        return QuantScheme("nvfp4", bits=4, group=16, source="modelopt")
    if "AWQ" in a or a in ("INT4", "W4A8", "W4A16"):
        return QuantScheme("int4_sym", bits=4, group=group if group > 0 else 128, source="modelopt")
    if a in ("INT8_SQ", "W8A8_SQ_PER_CHANNEL", "INT8"):
        return QuantScheme("ct_int8", bits=8, group=-1, source="modelopt")
    return None


def _layer_rules(layers: Mapping[str, Any], quant: Mapping[str, Any], group: int) -> list[QuantRule]:
    """ModelOpt ``quantized_layers`` (``{module: {quant_algo, group_size}}``) as exact-name rules."""
    rules = []
    for name, spec in layers.items():
        if isinstance(spec, Mapping):
            s = _modelopt_algo(str(spec.get("quant_algo", "")), quant, _int(spec.get("group_size"), group))
            if s is not None:
                rules.append(QuantRule((str(name),), s, "exact"))
    return rules


def _modelopt(q: Mapping[str, Any]) -> QuantScheme:
    sub = q.get("quantization")
    quant: Mapping[str, Any] = sub if isinstance(sub, Mapping) else q
    algo = str(quant.get("quant_algo", q.get("quant_algo", "")) or "").upper()
    method = str(q.get("quant_method", "")).lower()
    ignore = _ignore_list(quant, "exclude_modules", "ignore")
    group = _int(quant.get("group_size"), 0)
    layers = quant.get("quantized_layers")
    if algo == "MIXED_PRECISION" and isinstance(layers, Mapping):
        rules = _layer_rules(layers, quant, 128)
        first = rules[0].scheme if rules else QuantScheme()
        return with_rules(QuantScheme(first.method, bits=first.bits, group=first.group, ignore=ignore, match="modelopt",
                                      source="modelopt"), rules, True)
    if not algo:
        algo = {"modelopt_fp4": "NVFP4", "modelopt_mxfp8": "MXFP8", "petit_nvfp4": "NVFP4"}.get(method, "FP8")
    s = _modelopt_algo(algo, quant, group)
    if s is None:
        return unknown_scheme(q, f"ModelOpt quant_algo {algo}")
    return QuantScheme(s.method, bits=s.bits, group=s.group, block=s.block, static_input=s.static_input,
                       ignore=ignore, match="modelopt", source="modelopt")


# -- FP8 ---------------------------------------------------------------------------------------
def _fp8(q: Mapping[str, Any]) -> QuantScheme:
    """``quant_method: fp8`` (vLLM ``Fp8Config``: ``ignored_layers``; HF ``modules_to_not_convert``),
    block-scaled with ``weight_block_size``; a ModelOpt ``MIXED_PRECISION`` block beside it (the
    DeepSeek-V4 NVFP4 releases) moves the listed layers (the experts) to that format."""
    ignore = _ignore_list(q, "ignored_layers", "modules_to_not_convert")
    blk = q.get("weight_block_size")
    static = str(q.get("activation_scheme", "dynamic")).lower() == "static"
    if blk:
        base = QuantScheme("fp8_block", bits=8, block=(_int(blk[0], 128), _int(blk[-1], 128)), ignore=ignore, source="fp8")
    else:
        base = QuantScheme("fp8_tensor", bits=8, static_input=static, ignore=ignore, source="fp8")
    layers = q.get("quantized_layers")
    if str(q.get("quant_algo", "")).upper() == "MIXED_PRECISION" and isinstance(layers, Mapping):
        return with_rules(QuantScheme(base.method, bits=8, block=base.block, static_input=static, ignore=ignore,
                                      source="fp8"), _layer_rules(layers, q, 16), False)
    return base


def _fbgemm(q: Mapping[str, Any]) -> QuantScheme:
    return QuantScheme("fp8_channel", bits=8, mlp_only=not q.get("_online_all"),
                       ignore=_ignore_list(q, "modules_to_not_convert"), source="fbgemm_fp8")


# -- integer weight-only -----------------------------------------------------------------------
def _awq(q: Mapping[str, Any]) -> QuantScheme:
    ver = str(q.get("version", "gemm")).lower()
    return QuantScheme("awq", bits=_int(q.get("bits") or q.get("w_bit"), 4),
                       group=_int(q.get("group_size") or q.get("q_group_size"), 128),
                       zero_point=bool(q.get("zero_point", True)), ignore=_ignore_list(q, "modules_to_not_convert"),
                       match="substring", source="awq", notes=(f"AWQ version {ver}",) if ver not in ("gemm", "gemv") else ())


def _gptq(q: Mapping[str, Any]) -> QuantScheme:
    """GPTQ (AutoGPTQ / GPTQModel; vLLM ``gptq_marlin``): 2/3/4/8 bits, ``desc_act`` adds ``g_idx``;
    GPTQModel ``dynamic`` rules: ``-:regex`` leaves modules unquantised, ``+:regex`` (or a bare
    regex) gives them their own ``bits`` / ``group_size``."""
    bits, group = _int(q.get("bits"), 4), _int(q.get("group_size"), 128)
    rules = []
    dyn = q.get("dynamic")
    for k, v in (dyn.items() if isinstance(dyn, Mapping) else ()):
        if str(k).startswith("-:") or not isinstance(v, Mapping):
            continue
        rx = str(k)[2:] if str(k).startswith("+:") else str(k)
        sub = QuantScheme("gptq", bits=_int(v.get("bits"), bits), group=_int(v.get("group_size"), group), source="gptq")
        rules.append(QuantRule(("re:" + rx,), sub, "ct"))
    fmt = str(q.get("checkpoint_format") or "gptq").lower()
    if fmt == "marlin_24":  # vLLM GPTQMarlin24Config.override_quantization_method
        return PARSERS["gptq_marlin_24"](q)
    notes = (f"GPTQ checkpoint_format {fmt}: projected with the GPTQ layout (same bits per weight)",) \
        if fmt not in ("gptq", "gptq_v2") else ()
    return QuantScheme("gptq", bits=bits, group=group, zero_point=not q.get("sym", True),
                       desc_act=bool(q.get("desc_act", False)), lm_head=bool(q.get("lm_head", False)),
                       ignore=_ignore_list(q, "modules_to_not_convert"), match="substring", rules=tuple(rules),
                       source="gptq", notes=notes)


def _autoround(q: Mapping[str, Any]) -> QuantScheme:
    """Intel AutoRound / INC (vLLM ``inc.py``, SGLang ``auto_round.py``): integer weights in the
    GPTQ or AWQ packing (``packing_format``), or MX/NV floating point (``data_type``);
    ``extra_config`` gives modules their own bits (16 = left unquantised)."""
    bits, group = _int(q.get("bits"), 4), _int(q.get("group_size"), 128)
    dt = str(q.get("data_type") or "int").lower()
    pack = str(q.get("packing_format") or "auto_round:auto_gptq").lower()
    if "mx" in dt:
        base = QuantScheme("mxfp4_ct" if bits <= 4 else "mxfp8", bits=bits, group=32, source="auto-round")
    elif "nv" in dt:
        base = QuantScheme("nvfp4_ct", bits=4, group=16, source="auto-round")
    elif dt.startswith("fp") and bits == 8:
        base = QuantScheme("fp8_tensor", bits=8, source="auto-round")
    else:
        base = QuantScheme("awq" if "awq" in pack else "gptq", bits=bits, group=group,
                           zero_point=not q.get("sym", True), source="auto-round")
    skip, rules = list(_ignore_list(q, "modules_to_not_convert")), []
    extra = q.get("extra_config")
    for name, v in (extra.items() if isinstance(extra, Mapping) else ()):
        if isinstance(v, Mapping) and _int(v.get("bits"), bits) >= 16:
            skip.append(_rx_key(str(name)))
        elif isinstance(v, Mapping) and "bits" in v:
            rules.append(QuantRule((_rx_key(str(name)),), QuantScheme(base.method, bits=_int(v["bits"], bits),
                                                                       group=_int(v.get("group_size"), group)), "modelopt"))
    return QuantScheme(base.method, bits=base.bits, group=base.group, zero_point=base.zero_point, ignore=tuple(skip),
                       match="modelopt", rules=tuple(rules), source="auto-round")


def _rx_key(name: str) -> str:
    """An AutoRound / INC ``extra_config`` key: a module name, or a regex (vLLM ``inc.py`` tries
    ``re.fullmatch`` when the key is not a name)."""
    return "re:" + name + "$" if any(c in name for c in "\\()[]^$+") or ".*" in name else name


def _quark_one(w: Mapping[str, Any], a: Any) -> QuantScheme:
    dt = str(w.get("dtype", "")).lower()
    qs = str(w.get("qscheme", "")).lower()
    static = isinstance(a, Mapping) and not a.get("is_dynamic", True)
    if "fp4" in dt or "mx" in dt:
        return QuantScheme("mxfp4_ct", bits=4, group=32, source="quark")
    if "fp8" in dt:
        return QuantScheme("fp8_channel" if qs == "per_channel" else "fp8_tensor", bits=8, static_input=static,
                           source="quark")
    if "int4" in dt or "uint4" in dt:
        return QuantScheme("ct_pack", bits=4, group=_int(w.get("group_size"), 128) if qs == "per_group" else -1,
                           zero_point=dt.startswith("u"), source="quark")
    if "int8" in dt:
        return QuantScheme("ct_int8", bits=8, group=-1, static_input=static, source="quark")
    return QuantScheme()


def _quark(q: Mapping[str, Any]) -> QuantScheme:
    """AMD Quark (vLLM/SGLang ``quark/quark.py``): ``global_quant_config`` (weight ``dtype`` fp8_e4m3 /
    fp4 (MXFP4) / int4 / int8, ``qscheme``), ``layer_quant_config`` per-name overrides and
    ``exclude`` wildcards."""
    glob = q.get("global_quant_config") or {}
    w = glob.get("weight") if isinstance(glob, Mapping) else None
    base = _quark_one(w if isinstance(w, Mapping) else {}, (glob or {}).get("input_tensors"))
    rules = []
    lqc = q.get("layer_quant_config") or {}
    for name, spec in (lqc.items() if isinstance(lqc, Mapping) else ()):
        if isinstance(spec, Mapping) and isinstance(spec.get("weight"), Mapping):
            rules.append(QuantRule((str(name),), _quark_one(spec["weight"], spec.get("input_tensors")), "modelopt"))
    if base.method == "bf16" and not rules:
        return unknown_scheme(q, f"Quark weight dtype {(w or {}).get('dtype') if isinstance(w, Mapping) else None}")
    return QuantScheme(base.method, bits=base.bits, group=base.group, zero_point=base.zero_point,
                       static_input=base.static_input, ignore=_ignore_list(q, "exclude"), match="modelopt",
                       rules=tuple(rules), source="quark")


def _fpquant(q: Mapping[str, Any]) -> QuantScheme:
    """FP-Quant (vLLM ``fp_quant.py``): MXFP4 / NVFP4 weights with Hadamard rotations (one
    ``hadamard_group_size``² matrix per layer, small)."""
    fwd = str(q.get("forward_dtype") or "mxfp4").lower()
    m = "nvfp4_ct" if "nv" in fwd else "mxfp4_ct"
    return QuantScheme(m, bits=4, group=16 if m == "nvfp4_ct" else 32, ignore=_ignore_list(q, "modules_to_not_convert"),
                       match="substring", source="fp_quant")


def _torchao(q: Mapping[str, Any]) -> QuantScheme:
    """torchao (vLLM ``torchao.py``): tensor-subclass weights named by ``quant_type``; the common
    weight-only / dynamic configs are projected at their storage size, with a note."""
    qt = q.get("quant_type")
    name = str(((qt or {}).get("default") or {}).get("_type") if isinstance(qt, Mapping) else qt or "").lower()
    data = ((qt or {}).get("default") or {}).get("_data") if isinstance(qt, Mapping) else None
    group = _int((data or {}).get("group_size"), 128) if isinstance(data, Mapping) else 128
    note = (f"torchao {name or '?'}: projected at its storage size (tensor-subclass layouts may pad)",)
    if "int4" in name:
        return QuantScheme("ct_pack", bits=4, group=group, zero_point=True, source="torchao", notes=note)
    if "float8" in name or "fp8" in name:
        return QuantScheme("fp8_channel", bits=8, source="torchao", notes=note)
    if "int8" in name:
        return QuantScheme("ct_int8", bits=8, group=-1, source="torchao", notes=note)
    return unknown_scheme(q, f"torchao quant_type {name or '?'}")


def _aqlm(q: Mapping[str, Any]) -> QuantScheme:
    ncb, nbits, ing = _int(q.get("num_codebooks"), 1), _int(q.get("nbits_per_codebook"), 16), _int(q.get("in_group_size"), 8)
    return QuantScheme("aqlm", bits=max(1, ncb * nbits // max(1, ing)), group=-1, ignore=_ignore_list(q, "linear_weights_not_to_quantize"),
                       match="substring", source="aqlm",
                       notes=("AQLM: codes counted, codebooks (tens of MiB) not",))


def _approx_bits(method: str, bits: int, group: int, why: str) -> Callable[[Mapping[str, Any]], QuantScheme]:
    def parse(q: Mapping[str, Any]) -> QuantScheme:
        nested = (q.get("quant_config") or {}).get("weight_quant_params") if isinstance(q.get("quant_config"), Mapping) else None
        src: Mapping[str, Any] = nested if isinstance(nested, Mapping) else q
        b = _int(src.get("bits") or src.get("nbits") or src.get("weight_bits") or src.get("w_bit"), bits)
        g = _int(src.get("group_size"), group)
        return QuantScheme("packed_int", bits=b, group=g, ignore=_ignore_list(q, "modules_to_not_convert", "skip_modules"),
                           match="substring", source=method,
                           uncertain=f"{method}: {why}; projected as {b}-bit weights with one BF16 scale per {g} inputs")
    return parse


def unknown_scheme(q: Mapping[str, Any], what: str) -> QuantScheme:
    """A format the projection does not model: with a stated bit width, that many bits per weight
    plus group scales; without, unquantised (the upper bound). Either way ``uncertain`` says so and
    ``alt`` carries the bounds the plan reports."""
    w = q.get("weight") if isinstance(q.get("weight"), Mapping) else {}
    bits = _int(q.get("bits") or q.get("num_bits") or q.get("w_bit") or q.get("weight_bits") or q.get("wbits")
                or (w or {}).get("num_bits"), 0)
    group = _int(q.get("group_size") or q.get("q_group_size"), 128)
    ignore = _ignore_list(q, "modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules", "exclude")
    if 1 <= bits < 16:
        return QuantScheme("packed_int", bits=bits, group=group, ignore=ignore, match="modelopt", source=what,
                           uncertain=f"{what} is not modelled: projected as {bits}-bit weights (the config's bit width) "
                                     f"with one BF16 scale per {group} inputs")
    return QuantScheme(ignore=ignore, source=what,
                       uncertain=f"{what} is not modelled and its config states no bit width: projected unquantised "
                                 "(an upper bound); a 4-bit layout would be about 3.5x smaller")


def _mlx(q: Mapping[str, Any]) -> QuantScheme:
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


def _bnb(q: Mapping[str, Any]) -> QuantScheme:
    skip = _ignore_list(q, "llm_int8_skip_modules", "modules_to_not_convert")
    if q.get("load_in_8bit") and not q.get("load_in_4bit"):
        return QuantScheme("bnb8", bits=8, ignore=skip, source="bitsandbytes")
    return QuantScheme("bnb4", bits=4, group=_int(q.get("bnb_4bit_blocksize"), 64),
                       double_quant=bool(q.get("bnb_4bit_use_double_quant", False)), ignore=skip, source="bitsandbytes")


def _rules_only(method: str, rx: str, sub: QuantScheme, rest: QuantScheme | None = None) -> Callable[[Mapping[str, Any]], QuantScheme]:
    def parse(q: Mapping[str, Any]) -> QuantScheme:
        r = [QuantRule((rx,), sub, "ct")]
        if rest is not None:
            blk = q.get("weight_block_size") or [128, 128]
            r.append(QuantRule(("Linear",), QuantScheme(rest.method, bits=rest.bits, block=(_int(blk[0], 128), _int(blk[-1], 128))), "ct"))
        return QuantScheme(sub.method, bits=sub.bits, group=sub.group, rules=tuple(r), rules_only=True,
                           ignore=_ignore_list(q, "ignored_layers", "modules_to_not_convert"), source=method)
    return parse


def _simple(method: str, **kw: Any) -> Callable[[Mapping[str, Any]], QuantScheme]:
    def parse(q: Mapping[str, Any]) -> QuantScheme:
        blk = q.get("weight_block_size") or [128, 128]
        return QuantScheme(method, source=str(q.get("quant_method", method)),
                           ignore=_ignore_list(q, "ignored_layers", "modules_to_not_convert"),
                           **{**kw, **({"block": (_int(blk[0], 128), _int(blk[-1], 128))} if method == "int8_block" else {})})
    return parse


#: quant_method (lower case, ``-`` as ``_``) → parser; :mod:`.quantmethods` says which engine
#: names map here and why
PARSERS: dict[str, Callable[[Mapping[str, Any]], QuantScheme]] = {
    "compressed_tensors": _ct, "fp8": _fp8, "deepseek_v4_fp8": _fp8, "fbgemm_fp8": _fbgemm,
    "modelopt": _modelopt, "modelopt_fp4": _modelopt, "modelopt_fp8": _modelopt, "modelopt_mixed": _modelopt,
    "modelopt_mxfp8": _modelopt, "petit_nvfp4": _modelopt,
    "mxfp4": lambda q: QuantScheme("mxfp4", bits=4, group=32, ignore=_ignore_list(q, "modules_to_not_convert"),
                                   match="substring", source="mxfp4"),
    "mxfp8": _simple("mxfp8", bits=8, group=32),
    "awq": _awq, "awq_marlin": _awq, "auto_awq": _awq, "cpu_awq": _awq,
    "gptq": _gptq, "gptq_marlin": _gptq, "auto_gptq": _gptq, "gptq_bitblas": _gptq, "bitblas": _gptq,
    "marlin": _gptq, "moe_wna16": lambda q: _awq(q) if "awq" in str(q.get("linear_quant_method", "")).lower() else _gptq(q),
    "bitsandbytes": _bnb, "quark": _quark, "auto_round": _autoround, "intel/auto_round": _autoround,
    "inc": _autoround, "fp_quant": _fpquant, "torchao": _torchao, "aqlm": _aqlm,
    "w8a8_int8": _simple("ct_int8", bits=8, group=-1), "auto_round_int8": _simple("ct_int8", bits=8, group=-1),
    "w8a8_fp8": lambda q: _fbgemm({**q, "_online_all": True}),
    "blockwise_int8": _simple("int8_block", bits=8),
    "experts_int8": _rules_only("experts_int8", "re:.*experts\\.", QuantScheme("ct_int8", bits=8, group=-1)),
    "w4afp8": _rules_only("w4afp8", "re:.*experts\\.", QuantScheme("ct_pack", bits=4, group=128),
                          QuantScheme("fp8_block", bits=8)),
    "hqq": _approx_bits("hqq", 4, 64, "HQQ stores a scale and a zero point per group (not modelled exactly)"),
    "bitnet": _approx_bits("bitnet", 2, -1, "BitNet ternary weights packed four per byte"),
    "qoq": _approx_bits("qoq", 4, 128, "QoQ W4A8 with per-channel and per-group scales"),
    "qqq": _approx_bits("qqq", 4, 128, "QQQ W4A8 with per-channel and per-group scales"),
    "gptq_marlin_24": _approx_bits("gptq_marlin_24", 4, 128, "2:4-sparse Marlin keeps half the weights plus "
                                   "metadata (counted dense: the figure is high)"),
    "deepspeedfp": _approx_bits("deepspeedfp", 8, 512, "DeepSpeed FP6/FP8 weights quantised while loading"),
    "ipex": lambda q: _awq(q) if ("w_bit" in q or "zero_point" in q or "version" in q) else _gptq(q),
    "mxfp4_w4a8": lambda q: QuantScheme("mxfp4_ct", bits=4, group=32, ignore=_ignore_list(q, "modules_to_not_convert"),
                                        match="substring", source="mxfp_w4a8"),
    "mxfp_w4a8": lambda q: QuantScheme("mxfp4_ct", bits=4, group=32, ignore=_ignore_list(q, "modules_to_not_convert"),
                                       match="substring", source="mxfp_w4a8"),
    "quark_int4fp8_moe": _rules_only("quark_int4fp8_moe", "re:.*experts\\.", QuantScheme("ct_pack", bits=4, group=-1)),
}


def parse_quant(cfg: Mapping[str, Any]) -> QuantScheme:
    """The :class:`QuantScheme` of a config (``quantization_config``, or ``compression_config`` of
    older compressed-tensors exports); ``bf16`` when there is none. A method no parser answers is
    an :func:`unknown_scheme` (projected with its stated bits, or unquantised, and marked uncertain)."""
    q = cfg.get("quantization_config") or cfg.get("compression_config") or {}
    if not isinstance(q, Mapping) or not q:
        return QuantScheme()
    method = str(q.get("quant_method", "")).lower().replace("-", "_")
    algo = str(q.get("quant_algo", "")).upper()
    if not method and isinstance(q.get("quantization"), Mapping):  # hf_quant_config.json layout
        method = "modelopt"
    if not method and algo:
        method = "modelopt"
    if not method and isinstance(q.get("bits"), int) and isinstance(q.get("group_size"), int) \
            and q.get("mode", "affine") == "affine":
        return _mlx(q)
    if not method and (q.get("load_in_4bit") or q.get("load_in_8bit")):
        method = "bitsandbytes"
    parser = PARSERS.get(method)
    if parser is None:
        return unknown_scheme(q, f"quant_method {method or '?'}")
    return parser(q)
