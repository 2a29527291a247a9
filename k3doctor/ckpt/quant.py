"""What ``config.json`` says the tensors must look like, and the per-shard check of quantised pairs.

Conventions understood (tensor names and dtypes as the engines' loaders read them):

* compressed-tensors ``*-pack-quantized`` (Kimi-K3 MXFP4, NVFP4): ``X.weight_packed`` U8
  ``[out, in/2]`` (two E2M1 nibbles per byte) + ``X.weight_scale`` ``[out, in/group]`` (MXFP4: U8
  or F8_E8M0 E8M0 bytes, group 32; NVFP4: F8_E4M3, group 16);
* gpt-oss MXFP4: ``X_blocks`` U8 ``[E, out, in/32, 16]`` + ``X_scales`` U8 ``[E, out, in/32]``;
* DeepSeek-V3 FP8 block quantisation: ``X.weight`` F8_E4M3 + ``X.weight_scale_inv`` F32
  ``[ceil(out/128), ceil(in/128)]`` (``weight_block_size``).
"""

from __future__ import annotations

from collections import Counter
from itertools import compress, repeat
from operator import add, itemgetter, methodcaller
from typing import Any, Mapping

from .header import problem

__all__ = ["ARCHITECTURES", "expectations", "scan_quant"]

#: top-level ``architectures[0]`` -> family k3doctor knows the tensor layout of
ARCHITECTURES: dict[str, str] = {
    "KimiK3ForConditionalGeneration": "kimi_k3",
    "KimiLinearForCausalLM": "kimi_linear",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "KimiK25ForConditionalGeneration": "kimi_k25",
    "GptOssForCausalLM": "gpt_oss",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "MixtralForCausalLM": "mixtral",
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "MistralForCausalLM": "mistral",
}

_FP4_SCALE_DTYPES = {"mxfp4": ("U8", "F8_E8M0"), "nvfp4": ("F8_E4M3",)}


def _text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    tc = config.get("text_config")
    return tc if isinstance(tc, Mapping) else config


def expectations(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """A small JSON-able dict of what the tensors should be, from ``config.json`` (or {})."""
    if not isinstance(config, Mapping):
        return {}
    tc = _text(config)
    archs = config.get("architectures") or tc.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    qc = tc.get("quantization_config") or config.get("quantization_config") or {}
    if not isinstance(qc, Mapping):
        qc = {}
    method = qc.get("quant_method")
    fmt = qc.get("format")
    group = None
    for g in (qc.get("config_groups") or {}).values() if isinstance(qc.get("config_groups"), Mapping) else ():
        if isinstance(g, Mapping):
            fmt = fmt or g.get("format")
            w = g.get("weights")
            if isinstance(w, Mapping) and isinstance(w.get("group_size"), int):
                group = w["group_size"]
    fp4 = None
    if isinstance(fmt, str):
        fp4 = "mxfp4" if "mxfp4" in fmt else "nvfp4" if "nvfp4" in fmt else None
    if method == "mxfp4":
        fp4, group = "mxfp4", 32
    if fp4 and group is None:
        group = 32 if fp4 == "mxfp4" else 16

    def num(*keys: str) -> int | None:
        for k in keys:
            v = tc.get(k)
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        return None

    hidden = num("hidden_size")
    mi = num("moe_intermediate_size") if num("moe_intermediate_size") else num("intermediate_size")
    latent = num("routed_expert_hidden_size") or hidden
    shapes: dict[str, list[int]] = {}
    if mi and latent:
        for proj in ("w1", "w3", "gate_proj", "up_proj"):
            shapes[proj] = [mi, latent]
        for proj in ("w2", "down_proj"):
            shapes[proj] = [latent, mi]
    blk = qc.get("weight_block_size")
    return {
        "architecture": arch,
        "family": ARCHITECTURES.get(arch or ""),
        "model_type": config.get("model_type"),
        "text_model_type": tc.get("model_type") if tc is not config else None,
        "quant_method": method,
        "quant_format": fmt if isinstance(fmt, str) else None,
        "fp4": fp4,
        "group_size": group,
        "block": list(blk) if isinstance(blk, list) and len(blk) == 2 else None,
        "num_experts": num("num_experts", "n_routed_experts", "num_local_experts"),
        "hidden_size": hidden,
        "moe_intermediate_size": mi,
        "expert_hidden": latent,
        "expert_shapes": shapes,
        "num_hidden_layers": num("num_hidden_layers"),
    }


def _proj_of(name: str, suffix_len: int) -> str:
    """``...experts.7.w1.weight_packed`` -> ``w1``."""
    stem = name[: len(name) - suffix_len]
    return stem[stem.rfind(".") + 1:]


def _expert_layer(name: str) -> str | None:
    i = name.rfind(".experts.")
    return name[:i] if i >= 0 else None


def scan_quant(header: Mapping[str, Any], file: str, exp: Mapping[str, Any]) -> tuple[list[dict], dict]:
    """Check quantised pairs in one parsed header; returns ``(problems, stats)``.

    ``stats``: ``{"packed": n, "fp8": n, "blocks": n, "expert_layers": {layer_prefix: experts}}``.
    Fast path: tensors identical in dtype/shape to an already-checked one of the same projection
    are not re-checked (a K3 shard has 5,376 expert tensors of 6 distinct kinds).
    """
    probs: list[dict] = []
    fp4 = exp.get("fp4") or "mxfp4"
    group = exp.get("group_size") or (32 if fp4 == "mxfp4" else 16)
    scale_dtypes = _FP4_SCALE_DTYPES.get(fp4, ("U8", "F8_E8M0"))
    shapes = exp.get("expert_shapes") or {}
    n_exp = exp.get("num_experts")
    layers: Counter[str] = Counter()
    refs: dict[str, tuple] = {}
    bad: dict[str, dict] = {}
    n_packed = n_fp8 = n_blocks = 0
    get = header.get

    cand = list(filter(_ENDS_QUANT, header))  # one C-level pass over all names
    packed = list(filter(_ENDS_PACKED, cand)) if cand else []
    n_packed = len(packed)
    fast = bool(packed) and _packed_fast(header, packed, group, scale_dtypes, shapes)
    for name in ([] if fast else packed):
        pi = header[name]
        si = get(name[:-6] + "scale")
        if si is None:
            probs.append(problem("quant_pair_missing", file, name, missing=name[:-6] + "scale"))
            continue
        key = name[name.rfind(".", 0, len(name) - 14) + 1:]
        ref = refs.get(key)
        if ref is not None and pi["shape"] == ref[0] and si["shape"] == ref[1] \
                and pi["dtype"] == ref[2] and si["dtype"] == ref[3]:
            if key in bad:
                bad[key]["count"] += 1
            continue
        if not isinstance(pi, Mapping) or not isinstance(si, Mapping):
            continue
        found = _check_packed(name, pi, name[:-6] + "scale", si, file, group, scale_dtypes, shapes, fp4)
        if ref is None:
            refs[key] = (pi.get("shape"), si.get("shape"), pi.get("dtype"), si.get("dtype"))
            if found:
                found[0]["count"] = 1
                bad[key] = found[0]
        probs.extend(found)
    _count_layers(list(filter(_ENDS_FIRST_PROJ, packed)), layers)
    rest = cand if len(packed) != len(cand) else []  # every candidate was a packed weight

    for name in (list(filter(_ENDS_BLOCKS, rest)) if rest else []):
        n_blocks += 1
        bi = header[name]
        sname = name[:-6] + "scales"
        si = get(sname)
        lay = _expert_layer(name)
        if lay is not None and name.endswith("gate_up_proj_blocks") and isinstance(bi, Mapping) \
                and isinstance(bi.get("shape"), list) and bi["shape"]:
            layers[lay] += bi["shape"][0]
        if not isinstance(si, Mapping):
            probs.append(problem("quant_pair_missing", file, name, missing=sname))
            continue
        probs.extend(_check_blocks(name, bi, sname, si, file, exp))

    scales_inv = list(filter(_ENDS_SCALE_INV, rest)) if rest else []
    blk = exp.get("block") or [128, 128]
    for sname in scales_inv:
        wname = sname[:-10]
        wi, si = get(wname), header[sname]
        n_fp8 += 1
        key = wname[wname.rfind(".", 0, len(wname) - 7) + 1:]
        if key == "gate_proj.weight":
            lay = _expert_layer(wname)
            if lay is not None:
                layers[lay] += 1
        if not isinstance(wi, Mapping) or not isinstance(si, Mapping):
            probs.append(problem("quant_pair_missing", file, sname, missing=wname))
            continue
        ref = refs.get("fp8:" + key)
        if ref is not None and wi.get("shape") == ref[0] and si.get("shape") == ref[1] \
                and wi.get("dtype") == ref[2] and si.get("dtype") == ref[3]:
            continue
        refs["fp8:" + key] = (wi.get("shape"), si.get("shape"), wi.get("dtype"), si.get("dtype"))
        probs.extend(_check_fp8(wname, wi, sname, si, file, blk, shapes))

    # plain (unquantised) experts still count towards the expert total (e.g. Qwen3-MoE BF16)
    if not n_packed and not n_fp8 and not n_blocks:
        for name in header:
            if name.endswith(".gate_proj.weight") or name.endswith(".w1.weight"):
                lay = _expert_layer(name)
                if lay is not None:
                    layers[lay] += 1
    f8_weights = 0
    if exp.get("quant_method") == "fp8" or scales_inv:
        for name, info in header.items():
            if isinstance(info, Mapping) and str(info.get("dtype", "")).startswith("F8_") \
                    and name.endswith(".weight") and (name + "_scale_inv") not in header:
                f8_weights += 1
                if f8_weights <= 5:
                    probs.append(problem("quant_pair_missing", file, name, missing=name + "_scale_inv"))
    stats = {"packed": n_packed, "fp8": n_fp8, "blocks": n_blocks, "expert_layers": dict(layers),
             "num_experts_expected": n_exp}
    return probs, stats


_ENDS_QUANT = methodcaller("endswith", ("_packed", "_blocks", ".weight_scale_inv"))
_ENDS_PACKED = methodcaller("endswith", "_packed")
_ENDS_BLOCKS = methodcaller("endswith", "_blocks")
_ENDS_SCALE_INV = methodcaller("endswith", ".weight_scale_inv")
_ENDS_FIRST_PROJ = methodcaller("endswith", (".w1.weight_packed", ".gate_proj.weight_packed"))
_RPART_EXPERTS = methodcaller("rpartition", ".experts.")
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_DTYPE = itemgetter("dtype")
_SHAPE = itemgetter("shape")
_STEM = itemgetter(slice(None, -6))
_IS_EXPERT = methodcaller("__contains__", ".experts.")


def _count_layers(first_proj: list[str], layers: Counter[str]) -> None:
    """Experts per MoE layer from the names of each expert's first projection.

    When the lexicographically smallest and largest names share the layer prefix, every name
    between them does too (one layer per shard, as in Kimi-K3): two C-level passes instead of a
    split per name.
    """
    if not first_proj:
        return
    lo, hi = min(first_proj), max(first_proj)
    pre = lo.rpartition(".experts.")[0]
    if pre and hi.startswith(pre + ".experts."):
        layers[pre] += len(first_proj)
        return
    layers.update(map(_FIRST, map(_RPART_EXPERTS, first_proj)))
    layers.pop("", None)


def _pair_signatures(pshapes: list, sshapes: list, group: int) -> set[tuple] | None:
    """The distinct (packed, scale) shape pairs without building a tuple per tensor.

    Works when the first tensors show every distinct packed shape, their expected scale shapes
    are exactly the distinct scale shapes, and rows tell the shapes apart (Kimi-K3: [3072, 1792] /
    [3584, 1536]); then row equality pairs every tensor with its expected scale. None -> the
    caller builds the exact set.
    """
    dp: list = []
    for sh in pshapes[:64]:
        if sh not in dp:
            dp.append(sh)
            if len(dp) > 8:
                return None
    if sum(map(pshapes.count, dp)) != len(pshapes):
        return None
    try:
        want = [[p[0], p[1] * 2 // group] for p in dp]
    except (TypeError, IndexError):
        return None
    if len({p[0] for p in dp}) != len(dp) or sum(map(sshapes.count, want)) != len(sshapes):
        return None
    if list(map(_FIRST, pshapes)) != list(map(_FIRST, sshapes)):
        return None
    return {(tuple(p), tuple(w)) for p, w in zip(dp, want)}


def _packed_fast(header: Mapping[str, Any], packed: list[str], group: int, scale_dtypes: tuple[str, ...],
                 shapes: Mapping[str, list[int]]) -> bool:
    """All packed/scale pairs consistent, checked with C-level passes over the distinct
    (dtype, shape) signatures; False -> the per-tensor path names the offenders."""
    try:
        sinfos: list[Any] = list(map(header.get, map(add, map(_STEM, packed), repeat("scale"))))
        if None in sinfos:
            return False
        pinfos = list(map(header.__getitem__, packed))
        n = len(packed)
        pdt, sdt = list(map(_DTYPE, pinfos)), list(map(_DTYPE, sinfos))
        if pdt.count("U8") != n or sum(map(sdt.count, scale_dtypes)) != n:
            return False
        pshapes, sshapes = list(map(_SHAPE, pinfos)), list(map(_SHAPE, sinfos))
        sigs = _pair_signatures(pshapes, sshapes, group)
        if sigs is None:
            sigs = set(zip(map(tuple, pshapes), map(tuple, sshapes)))
        for ps, ss in sigs:
            if len(ps) != 2 or len(ss) != 2 or ps[0] != ss[0] or ss[1] * group != ps[1] * 2:
                return False
        if shapes:
            allowed = {(o, i) for o, i in shapes.values()}
            n_exp = sum(map(_IS_EXPERT, packed))
            if n_exp == len(packed) and any((ps[0], ps[1] * 2) not in allowed for ps, _ in sigs):
                return False
            if 0 < n_exp < len(packed):  # mixed: judge the expert shapes on their own
                uniq = set(map(tuple, compress(map(_SHAPE, pinfos), map(_IS_EXPERT, packed))))
                if any((o, i * 2) not in allowed for o, i in uniq):
                    return False
            # projection-specific dims on the first experts (w1 vs w2 swapped, ...)
            for name in packed[:12]:
                if ".experts." in name and _check_packed(name, header[name], name[:-6] + "scale",
                                                         header[name[:-6] + "scale"], "", group, scale_dtypes,
                                                         shapes, ""):
                    return False
    except (TypeError, KeyError, ValueError, IndexError, AttributeError):
        return False
    return True


def _check_packed(name: str, pi: Mapping, sname: str, si: Mapping, file: str, group: int,
                  scale_dtypes: tuple[str, ...], shapes: Mapping[str, list[int]], fp4: str) -> list[dict]:
    out: list[dict] = []
    pd, sd = pi.get("dtype"), si.get("dtype")
    ps, ss = pi.get("shape") or [], si.get("shape") or []
    if pd != "U8":
        out.append(problem("quant_dtype", file, name, dtype=pd, expected_dtype="U8",
                           why=f"{fp4} packs two FP4 values per byte"))
        return out
    if sd not in scale_dtypes:
        out.append(problem("quant_dtype", file, sname, dtype=sd, expected_dtype="/".join(scale_dtypes),
                           why=f"{fp4} scales are {' or '.join(scale_dtypes)}"))
    if len(ps) != 2 or len(ss) != 2:
        out.append(problem("quant_shape", file, name, shape=str(ps), scale_shape=str(ss),
                           why="packed weight and scale must both be 2-D"))
        return out
    logical_in = ps[1] * 2
    if ss[0] != ps[0] or ss[1] * group != logical_in:
        out.append(problem("quant_shape", file, sname, shape=str(ss), packed_shape=str(ps),
                           expected_shape=str([ps[0], logical_in // group]),
                           why=f"scale = [out, logical_in/{group}] with logical_in = packed_in*2 = {logical_in}"))
    if ".experts." in name:
        proj = _proj_of(name, len(".weight_packed"))
        want = shapes.get(proj)
        if want and [ps[0], logical_in] != want:
            out.append(problem("quant_shape", file, name, shape=str(ps), logical_shape=str([ps[0], logical_in]),
                               expected_logical=str(want), expected_shape=str([want[0], want[1] // 2]),
                               why="packed = [out, logical_in/2] with the expert dims from config.json"))
    return out


def _check_blocks(name: str, bi: Mapping, sname: str, si: Mapping, file: str, exp: Mapping) -> list[dict]:
    out: list[dict] = []
    bs, ss = bi.get("shape") or [], si.get("shape") or []
    for n, info in ((name, bi), (sname, si)):
        if info.get("dtype") != "U8":
            out.append(problem("quant_dtype", file, n, dtype=info.get("dtype"), expected_dtype="U8",
                               why="gpt-oss MXFP4 blocks and E8M0 scales are raw bytes"))
    if len(bs) != 4 or bs[-1] != 16 or bs[:-1] != ss:
        out.append(problem("quant_shape", file, sname, shape=str(ss), blocks_shape=str(bs),
                           expected_shape=str(bs[:-1]) if len(bs) == 4 else "[E, out, in/32]",
                           why="blocks = [E, out, in/32, 16] (32 nibbles per block), scales = [E, out, in/32]"))
        return out
    E, H, I = exp.get("num_experts"), exp.get("hidden_size"), exp.get("moe_intermediate_size")
    want = None
    if name.endswith("gate_up_proj_blocks") and E and H and I:
        want = [E, 2 * I, H // 32, 16]
    elif name.endswith("down_proj_blocks") and E and H and I:
        want = [E, H, I // 32, 16]
    if want and bs != want:
        out.append(problem("quant_shape", file, name, shape=str(bs), expected_shape=str(want),
                           why="num_local_experts / hidden_size / intermediate_size from config.json"))
    return out


def _check_fp8(wname: str, wi: Mapping, sname: str, si: Mapping, file: str, blk: list[int],
               shapes: Mapping[str, list[int]]) -> list[dict]:
    out: list[dict] = []
    if wi.get("dtype") not in ("F8_E4M3", "F8_E5M2"):
        out.append(problem("quant_dtype", file, wname, dtype=wi.get("dtype"), expected_dtype="F8_E4M3",
                           why="a weight with weight_scale_inv is FP8 block-quantised"))
    if si.get("dtype") not in ("F32", "BF16"):
        out.append(problem("quant_dtype", file, sname, dtype=si.get("dtype"), expected_dtype="F32",
                           why="FP8 block scales are F32"))
    ws, ss = wi.get("shape") or [], si.get("shape") or []
    if len(ws) == 2:
        want = [-(-ws[0] // blk[0]), -(-ws[1] // blk[1])]
        if ss != want:
            out.append(problem("quant_shape", file, sname, shape=str(ss), weight_shape=str(ws),
                               expected_shape=str(want), why=f"one scale per {blk[0]}x{blk[1]} block"))
    if ".experts." in wname:
        want_w = shapes.get(_proj_of(wname, len(".weight")))
        if want_w and ws != want_w:
            out.append(problem("quant_shape", file, wname, shape=str(ws), expected_shape=str(want_w),
                               why="expert dims from config.json"))
    return out
