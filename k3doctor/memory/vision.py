"""The vision tower + projector a multimodal checkpoint carries, estimated from its
``vision_config`` when the architecture is not one the memory model describes tensor by tensor."""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["vision_param_estimate"]

_VISION_GATED_ACTS = ("silu", "swiglu", "swish")
#: where configs keep the vision tower's own config (transformers ``vision_config``; Qwen-VL
#: ``visual``; remote-code VLMs ``vision_encoder_config`` / ``siglip_config`` / ``vit_config``)
_VISION_KEYS = ("vision_config", "visual", "vision_encoder_config", "siglip_config", "vit_config",
                "vision_tower_config")


def vision_param_estimate(top: Mapping[str, Any], text_hidden: int) -> tuple[int, str]:
    """Parameters of the vision tower + projector from ``vision_config`` (a ViT estimate:
    per block q/k/v/o with biases, the MLP — gated for SiLU towers such as Qwen2.5-VL/Pixtral —
    and norms; the patch embedding; learned position embeddings when ``image_size`` is given; the
    projector by family: Qwen-VL patch merger (+ DeepStack mergers), Llama-4 adapter + projector,
    Mistral-3 patch merger + 2-layer projector, else a 2-layer MLP)."""
    v = next((top.get(k) for k in _VISION_KEYS if isinstance(top.get(k), Mapping)), None)
    if not isinstance(v, Mapping):
        return 0, ""

    def first(*keys: str, default: int = 0) -> int:
        for k in keys:
            x = v.get(k)
            if isinstance(x, (int, float)) and x > 0:
                return int(x)
        return default

    # Qwen2-VL names the ViT width embed_dim and the merger output hidden_size
    vh = first("embed_dim", "hidden_size", "width", "vt_hidden_size", "hidden_dim")
    vl = first("num_hidden_layers", "depth", "layers", "vt_num_hidden_layers", "num_layers", "n_layers")
    if not vh or not vl:
        return 0, ""
    ratio = v.get("mlp_ratio")
    vi = first("intermediate_size", "mlp_dim", "vt_intermediate_size", "ffn_dim",
               default=int(vh * float(ratio)) if isinstance(ratio, (int, float)) else 4 * vh)
    act = str(v.get("hidden_act") or v.get("activation") or "").lower()
    mt = str(top.get("model_type", "")).lower()
    gated = act in _VISION_GATED_ACTS or mt in ("pixtral", "mistral3") and act != "gelu"
    block = 4 * vh * vh + 4 * vh + (3 if gated else 2) * vh * vi + vi + vh + 4 * vh
    patch = first("patch_size", default=14)
    chans = first("num_channels", "in_channels", "in_chans", default=3)
    temporal = first("temporal_patch_size", default=1)
    n = vl * block + vh * chans * patch * patch * temporal + 2 * vh
    image = first("image_size", default=0)
    positions = first("num_position_embeddings", default=0)
    if positions:  # Qwen3-VL / 3.5 learned position table
        n += positions * vh
    elif image and mt not in ("qwen2_vl", "qwen2_5_vl"):
        n += (image // patch) ** 2 * vh
    out_h = first("out_hidden_size", "projector_output_dim", "output_dim",
                  default=first("hidden_size") if v.get("embed_dim") else text_hidden)
    merge = first("spatial_merge_size", default=2)
    how = "2-layer projector"
    if mt.startswith("qwen") and "vl" in mt:
        m = vh * merge * merge
        mergers = 1 + len(v.get("deepstack_visual_indexes") or [])
        n += mergers * (m * m + m + m * out_h + out_h + 2 * m)
        how = f"Qwen-VL patch merger x{mergers}"
    elif mt == "llama4":
        pin = first("projector_input_dim", default=4096)
        pout = first("projector_output_dim", default=4096)
        vout = first("vision_output_dim", default=pout)
        shuffle = float(v.get("pixel_shuffle_ratio") or 0.5)
        n += int(vh / (shuffle * shuffle)) * pin + pin * pout + vout * text_hidden
        how = "Llama-4 adapter + projector"
    elif mt in ("mistral3", "pixtral", "llava"):
        n += vh * merge * merge * vh + vh * text_hidden + text_hidden * text_hidden
        how = "patch merger + 2-layer projector"
    else:
        n += vh * text_hidden + text_hidden * text_hidden
    return n, (f"vision tower estimated from vision_config: {vl} blocks × {vh} wide, "
               f"{'gated ' if gated else ''}MLP {vi}, {how}")
