"""Safetensors dtypes and their sizes: the one table the checkpoint reader (``ckpt/``) and the
memory model (``memory/``) share."""

from __future__ import annotations

__all__ = ["DTYPE_BITS", "DTYPE_BYTES"]

#: safetensors dtype -> bits per element (``F4``/``F6_*``/``F8_E8M0`` since safetensors 0.6)
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
    "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}

#: safetensors dtype -> bytes per element (fractional for the sub-byte formats)
DTYPE_BYTES: dict[str, float] = {k: (v // 8 if v % 8 == 0 else v / 8) for k, v in DTYPE_BITS.items()}
