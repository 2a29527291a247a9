"""Which modules a quantisation config's name lists reach, read the way each engine reads them.

The projection synthesises module names in one canonical spelling (``model.layers.3.mlp.gate_proj``,
unfused projections); checkpoints and the engines spell the same module differently
(``model.language_model.layers.3...`` / ``backbone.layers.3...`` prefixes, fused ``qkv_proj`` /
``gate_up_proj`` / ``w13`` parameters, ``w1``/``w3``/``w2`` vs ``gate_proj``/``up_proj``/``down_proj``
experts). A pattern reaches a module when it reaches any of the module's spellings
(:func:`name_variants`), with each format's own rule:

``ct``        compressed-tensors ``ignore`` and ``config_groups.*.targets`` (vLLM
              ``compressed_tensors/utils.py`` ``should_ignore_layer`` / ``find_matched_target``):
              an exact module name, a ``re:`` regex (``re.match``, anchored at the start) or a
              module class name (``Linear``).
``modelopt``  ModelOpt ``exclude_modules`` / ``ignore`` and ``quantized_layers`` (vLLM
              ``modelopt.py`` ``is_layer_excluded``): exact name, substring (older exports), or
              an ``fnmatch`` wildcard whose ``*`` crosses dots (``model.layers.1*`` reaches layer
              1, 10-19 ... and everything under them; ``*mlp.gate`` reaches the router only).
``substring`` AWQ / GPTQ ``modules_to_not_convert`` (vLLM/SGLang ``is_layer_skipped_awq``, AutoAWQ):
              the listed string anywhere in the module name (``visual`` reaches the tower).
``exact``     ModelOpt ``quantized_layers``: the module or an ancestor named exactly.
``component`` bitsandbytes ``llm_int8_skip_modules`` (vLLM ``is_layer_skipped_bnb``), vLLM
              ``ignored_layers``, MLX: a dotted component or a leading path of the name.
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache

__all__ = ["name_variants", "matches", "exact_hit", "DECODER_PREFIXES", "LINEAR_CLASSES"]

#: module-path components exporters put in front of the decoder's ``layers.``
DECODER_PREFIXES = frozenset({"model", "backbone", "language_model", "transformer", "decoder", "text_model"})

#: the decoder paths the checkpoints seen here use (before ``layers.``)
_SPELLINGS = ("", "model.", "model.language_model.", "language_model.model.", "language_model.",
              "backbone.", "model.model.", "transformer.")

#: fused parameters vLLM/SGLang build from checkpoint projections (their ``packed_modules_mapping``)
#: and the expert names Mixtral-style checkpoints use for the HF ``gate/up/down`` projections
_ALIASES: dict[str, tuple[str, ...]] = {
    "q_proj": ("qkv_proj",), "k_proj": ("qkv_proj",), "v_proj": ("qkv_proj",),
    "gate_proj": ("gate_up_proj", "w1", "w13"), "up_proj": ("gate_up_proj", "w3", "w13"),
    "down_proj": ("w2",), "w1": ("gate_proj", "w13", "gate_up_proj"), "w3": ("up_proj", "w13", "gate_up_proj"),
    "w2": ("down_proj",), "wq_a": ("fused_wqa_wkv",), "wkv": ("fused_wqa_wkv",),
    "q_a_proj": ("fused_qkv_a_proj_with_mqa",), "kv_a_proj_with_mqa": ("fused_qkv_a_proj_with_mqa",),
    "in_proj_qkv": ("in_proj_qkvz",), "in_proj_z": ("in_proj_qkvz",), "in_proj_b": ("in_proj_ba",),
    "in_proj_a": ("in_proj_ba",),
}

#: the MoE block's module in the checkpoints' naming conventions (HF ``mlp``; Mixtral / MiniMax
#: ``block_sparse_moe``; Llama-4 ``feed_forward``; DeepSeek-V4 release ``ffn``)
_CONTAINERS: dict[str, tuple[str, ...]] = {".mlp.experts.": (".block_sparse_moe.experts.", ".feed_forward.experts.", ".ffn.experts."),
                                           ".mlp.shared_expert": (".block_sparse_moe.shared_expert", ".feed_forward.shared_expert",
                                                                  ".ffn.shared_expert")}

#: compressed-tensors class-name targets that reach every Linear the projection synthesises
LINEAR_CLASSES = frozenset({"linear", "columnparallellinear", "rowparallellinear", "qkvparallellinear",
                            "mergedcolumnparallellinear", "replicatedlinear", "fusedmoe"})


@lru_cache(maxsize=65536)
def name_variants(module: str) -> tuple[str, ...]:
    """``module`` in every decoder spelling and with its fused / aliased last component."""
    i = module.find("layers.")
    tail = module[i:] if i >= 0 else module
    head = module[:i] if i >= 0 else ""
    other = {c for c in head.split(".") if c and c not in DECODER_PREFIXES}
    bases = [module] if other or i < 0 else [p + tail for p in _SPELLINGS]
    for a, alts in _CONTAINERS.items():  # the MoE block's container in other checkpoints' naming
        if a in tail:
            bases += [b.replace(a, alt) for b in list(bases) for alt in alts]
    out: list[str] = []
    for b in bases:
        out.append(b)
        stem, _, last = b.rpartition(".")
        for alias in _ALIASES.get(last, ()):
            out.append(f"{stem}.{alias}" if stem else alias)
    return tuple(dict.fromkeys(out))


_RX: dict[str, re.Pattern[str] | None] = {}


def _regex(pattern: str) -> re.Pattern[str] | None:
    if pattern not in _RX:
        try:
            _RX[pattern] = re.compile(pattern)
        except re.error:
            _RX[pattern] = None
    return _RX[pattern]


def _component(pattern: str, name: str) -> bool:
    return ("." + pattern + ".") in ("." + name + ".") or name.startswith(pattern + ".")


def matches(pattern: str, module: str, how: str = "component", kind: str = "") -> bool:
    """Whether ``pattern`` (one entry of a config's list) reaches ``module`` under ``how``'s rule
    (see the module doc); ``kind`` is the projection's role of the module (``attn``, ``expert``
    ...), used for class-name targets."""
    p = str(pattern)
    if p.startswith("re:"):
        rx = _regex(p[3:])
        return bool(rx) and any(rx.match(v) for v in name_variants(module))  # type: ignore[union-attr]
    if p.startswith("-:"):  # GPTQModel ``dynamic``: "-:regex" = leave these modules unquantised
        return matches("re:" + p[2:], module, how, kind)
    if how == "ct" and p.lower() in LINEAR_CLASSES:
        return kind not in ("embedding", "norm", "vision", "router", "lm_head")
    variants = name_variants(module)
    if "*" in p or "?" in p or "[" in p:
        return any(fnmatch.fnmatchcase(v, p) for v in variants)
    if how in ("ct", "exact"):
        return any(v == p or v.startswith(p + ".") for v in variants)
    if how == "modelopt":
        return any(v == p or p in v for v in variants)
    if how == "substring":
        return any(p in v for v in variants)
    return any(_component(p, v) for v in variants)


def exact_hit(index: dict[str, int], module: str) -> int | None:
    """The rule an exact-name index (``{name: rule}``) gives ``module``: the entry naming one of its
    spellings or an ancestor of one (``layers.3.ffn.experts`` reaches every expert under it)."""
    if not index:
        return None
    for v in name_variants(module):
        parts = v.split(".")
        for k in range(len(parts), 0, -1):
            hit = index.get(".".join(parts[:k]))
            if hit is not None:
                return hit
    return None
