"""Bounds on the per-rank weights when the quantisation layout is not modelled exactly.

A checkpoint whose ``quant_method`` the projection does not model (or only approximates) is never
projected silently: :func:`.quantparse.unknown_scheme` projects it with the bit width its config
states (or unquantised when it states none) and marks it ``uncertain``; here the same checkpoint is
projected under the lowest and the highest plausible layout, so the plan can say how far off its
figure may be (``Plan.weights_uncertainty``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .quantscheme import QuantScheme

__all__ = ["bound_schemes", "weights_uncertainty"]


def bound_schemes(scheme: QuantScheme) -> tuple[QuantScheme, QuantScheme] | None:
    """(low, high) layouts for an uncertain scheme: with a bit width, ``b`` bits and one scale per
    row (low) to ``b`` bits with one BF16 scale per 16 inputs (high: about one more bit per weight,
    the heaviest scale / zero-point layout seen); without one, 4-bit with one scale per 128 inputs
    (low) to unquantised (high)."""
    if not scheme.uncertain:
        return None
    if scheme.method == "packed_int":
        return (replace(scheme, group=-1, uncertain=""), replace(scheme, group=16, uncertain=""))
    if scheme.method == "bf16":
        return (replace(scheme, method="packed_int", bits=4, group=128, uncertain=""), replace(scheme, uncertain=""))
    return (replace(scheme, uncertain=""), replace(scheme, uncertain=""))


def weights_uncertainty(inv: Any, par: Any) -> dict[str, Any] | None:
    """``{"reason", "low_bytes", "high_bytes"}``: the largest rank's weights under the low and high
    layouts of an uncertain config-built inventory; None when the layout is modelled (or the
    inventory comes from shard headers, whose bytes are the checkpoint's own)."""
    from .inventory import inventory_from_spec
    from .placement import stage_weights

    spec = getattr(inv, "spec", None)
    if spec is None or inv.source != "config" or not spec.qscheme.uncertain:
        return None
    pair = bound_schemes(spec.qscheme)
    if pair is None:
        return None
    out: dict[str, Any] = {"reason": spec.qscheme.uncertain}
    for key, alt in zip(("low_bytes", "high_bytes"), pair):
        alt_inv = inventory_from_spec(replace(spec, qscheme=alt, quant=alt.legacy), inv.config)
        out[key] = int(max(sum(stage_weights(alt_inv, par, s).values()) for s in range(par.pp)))
    return out
