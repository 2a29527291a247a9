"""Every quantisation method vLLM and SGLang accept (``--quantization`` values and the
``quant_method`` a checkpoint's ``quantization_config`` names) and what the projection does with it.

Transcribed from the engines' registries (vLLM ``model_executor/layers/quantization/__init__.py``
``QuantizationMethods`` at 05d9095 and at the newer registry with ``modelopt_mixed`` / ``humming`` /
``deepseek_v4_fp8`` / the online shorthands, plus names earlier releases accepted; SGLang
``srt/layers/quantization/__init__.py`` ``BASE_QUANTIZATION_METHODS`` and its vLLM-backed
``VLLM_QUANTIZATION_METHODS``). ``tests/test_mem_quant_methods.py`` checks that each name is here, that
each ``projected`` / ``approximate`` one is parsed by :mod:`.quantparse` into the layout named, and
that an ``uncertain`` one yields bounds in the plan, never a silent unquantised figure.

Status:

``projected``    the checkpoint layout (or, for ``online``, the layout the engine quantises to while
                 loading) is modelled tensor by tensor
``approximate``  modelled at its storage bit width; small side tensors (codebooks, Hadamard
                 matrices, padding of tensor subclasses) are not, a note says so
``uncertain``    not modelled: projected with the bit width the config states (or unquantised when
                 it states none) and the plan reports low / high bounds (``weights_uncertainty``)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Method", "METHODS", "VLLM_NAMES", "SGLANG_NAMES", "coverage_markdown"]


@dataclass(frozen=True)
class Method:
    kind: str     # checkpoint | online | kernel (a kernel choice for a checkpoint format named elsewhere)
    status: str   # projected | approximate | uncertain
    parser: str   # the quantparse.PARSERS key (or ONLINE_QUANTIZATION key for online methods)
    layout: str   # what is counted


_C, _O, _K = "checkpoint", "online", "kernel"
_P, _A, _U = "projected", "approximate", "uncertain"

METHODS: dict[str, Method] = {
    # integer weight-only
    "awq": Method(_C, _P, "awq", "awq: qweight/qzeros I32 + F16 scales per group"),
    "awq_marlin": Method(_K, _P, "awq", "awq (Marlin repack keeps the size)"),
    "auto_awq": Method(_C, _P, "awq", "awq"),
    "cpu_awq": Method(_K, _P, "awq", "awq"),
    "gptq": Method(_C, _P, "gptq", "gptq: 2/3/4/8-bit qweight + qzeros + scales + g_idx; GPTQModel dynamic rules"),
    "gptq_marlin": Method(_K, _P, "gptq", "gptq"),
    "auto_gptq": Method(_C, _P, "gptq", "gptq"),
    "gptq_bitblas": Method(_K, _A, "gptq", "gptq bits per weight (BitBLAS repack not modelled)"),
    "bitblas": Method(_C, _A, "gptq", "gptq bits per weight (BitBLAS layout not modelled)"),
    "marlin": Method(_C, _A, "marlin", "gptq bits per weight (Marlin checkpoint_format)"),
    "gptq_marlin_24": Method(_C, _U, "gptq_marlin_24", "2:4-sparse Marlin: bounds"),
    "moe_wna16": Method(_K, _P, "moe_wna16", "awq or gptq, as the checkpoint's linear_quant_method"),
    "inc": Method(_C, _P, "inc", "AutoRound: gptq / awq packing, MXFP / NVFP data types, extra_config"),
    "auto-round": Method(_C, _P, "auto_round", "AutoRound (as inc)"),
    "auto-round-int8": Method(_C, _P, "auto_round_int8", "int8 weight + per-channel scale"),
    "aqlm": Method(_C, _A, "aqlm", "codes at nbits x codebooks / in_group bits per weight (codebooks not counted)"),
    "hqq": Method(_C, _U, "hqq", "4-bit + per-group scale/zero: bounds"),
    "bitnet": Method(_C, _U, "bitnet", "2-bit packed: bounds"),
    "qqq": Method(_C, _U, "qqq", "W4A8 QQQ: bounds"),
    "qoq": Method(_C, _U, "qoq", "W4A8 QoQ: bounds"),
    # FP8 / INT8 weight + scales
    "fp8": Method(_C, _P, "fp8", "fp8 per-tensor or block (weight_block_size); also online from BF16"),
    "deepseek_v4_fp8": Method(_K, _P, "deepseek_v4_fp8", "fp8 block (+ FP4 experts per expert_dtype / quantized_layers)"),
    "deepgemm_fp8": Method(_K, _P, "fp8", "fp8 block"),
    "fbgemm_fp8": Method(_C, _P, "fbgemm_fp8", "fp8 per-channel, MLP only"),
    "ptpc_fp8": Method(_O, _P, "ptpc_fp8", "online fp8 per-channel, every Linear"),
    "w8a8_fp8": Method(_C, _P, "w8a8_fp8", "fp8 per-channel, every Linear"),
    "w8a8_int8": Method(_C, _P, "w8a8_int8", "int8 + per-channel scale"),
    "blockwise_int8": Method(_C, _P, "blockwise_int8", "int8 + F32 block scales"),
    "experts_int8": Method(_O, _P, "experts_int8", "online int8 experts, rest BF16"),
    "tpu_int8": Method(_O, _P, "tpu_int8", "online int8 + per-channel scale"),
    "neuron_quant": Method(_O, _P, "neuron_quant", "online int8 + per-channel scale"),
    "ipex": Method(_K, _P, "ipex", "the checkpoint's awq / gptq layout"),
    "deepspeedfp": Method(_O, _U, "deepspeedfp", "online FP6/FP8: bounds"),
    # ModelOpt
    "modelopt": Method(_C, _P, "modelopt", "ModelOpt FP8 / FP8_PER_CHANNEL_PER_TOKEN / FP8_PB_WO / NVFP4 / MXFP8 / INT4-AWQ"),
    "modelopt_fp8": Method(_C, _P, "modelopt_fp8", "ModelOpt FP8"),
    "modelopt_fp4": Method(_C, _P, "modelopt_fp4", "NVFP4: U8 pairs + F8 scale per 16 + global scales"),
    "modelopt_mxfp8": Method(_C, _P, "modelopt_mxfp8", "MXFP8: F8 + U8 scale per 32"),
    "modelopt_mixed": Method(_C, _P, "modelopt_mixed", "MIXED_PRECISION: per-layer quantized_layers"),
    "petit_nvfp4": Method(_K, _P, "petit_nvfp4", "NVFP4 (ModelOpt checkpoint on AMD)"),
    "nvfp4_online": Method(_O, _P, "nvfp4_online", "online NVFP4 of every Linear"),
    "nvfp4_per_token": Method(_O, _P, "nvfp4_per_token", "online NVFP4 of every Linear"),
    # compressed-tensors and MX formats
    "compressed-tensors": Method(_C, _P, "compressed_tensors",
                                 "every config_groups scheme (W4A16/W8A16 pack, W8A8 int/fp8 tensor/channel/block/group, "
                                 "NVFP4, MXFP4, MXFP8, actorder g_idx, zero points) on its targets; ignore"),
    "mxfp4": Method(_C, _P, "mxfp4", "gpt-oss MXFP4 experts (blocks + E8M0 scales per 32)"),
    "gpt_oss_mxfp4": Method(_K, _P, "mxfp4", "gpt-oss MXFP4"),
    "mxfp8": Method(_C, _P, "mxfp8", "F8 + U8 scale per 32 (checkpoint, or online from BF16)"),
    "mxfp_w4a8": Method(_C, _P, "mxfp4_w4a8", "MXFP4 weights"),
    "quark": Method(_C, _P, "quark", "Quark fp8 / MXFP4 / int4 / int8 weights, layer_quant_config, exclude"),
    "quark_mxfp4": Method(_C, _P, "quark", "Quark MXFP4"),
    "quark_int4fp8_moe": Method(_O, _P, "quark_int4fp8_moe", "online int4 experts + fp8 per-channel rest"),
    "w4afp8": Method(_C, _A, "w4afp8", "int4 experts (group 128) + fp8 block rest"),
    "fp_quant": Method(_C, _A, "fp_quant", "MXFP4 / NVFP4 weights (Hadamard matrices not counted)"),
    "torchao": Method(_C, _A, "torchao", "int4 / int8 / float8 tensor subclasses at storage size"),
    # online shorthands (vLLM vllm/config/quantization)
    "online": Method(_O, _U, "online", "online scheme from --quantization-config: bounds unless it names a known method"),
    "fp8_per_tensor": Method(_O, _P, "fp8_per_tensor", "online fp8 per-tensor"),
    "fp8_per_block": Method(_O, _P, "fp8_per_block", "online fp8 128x128 blocks"),
    "fp8_per_channel": Method(_O, _P, "fp8_per_channel", "online fp8 per-channel"),
    "int8_per_channel_weight_only": Method(_O, _P, "int8_per_channel_weight_only", "online int8 per-channel"),
    # other
    "bitsandbytes": Method(_C, _P, "bitsandbytes", "NF4/FP4 (absmax, nested) or int8 (SCB); also in-flight"),
    "gguf": Method(_C, _U, "gguf", "GGUF files carry per-tensor types the safetensors reader does not see: bounds"),
    "humming": Method(_C, _U, "humming", "not modelled: bounds"),
    "modelslim": Method(_C, _U, "modelslim", "Ascend NPU ModelSlim: bounds"),
}

#: vLLM ``QuantizationMethods`` names (newest registry, then earlier releases' extra names)
VLLM_NAMES = (
    "awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed", "gguf",
    "gptq_marlin", "awq_marlin", "gptq", "humming", "compressed-tensors", "bitsandbytes", "experts_int8", "quark",
    "moe_wna16", "torchao", "inc", "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8", "cpu_awq", "online", "fp8_per_tensor",
    "fp8_per_block", "int8_per_channel_weight_only", "mxfp8",
    # earlier releases
    "auto_awq", "auto_gptq", "fp8_per_channel", "nvfp4_per_token", "ptpc_fp8", "bitblas", "gptq_marlin_24",
    "gptq_bitblas", "ipex", "petit_nvfp4", "auto-round", "tpu_int8", "aqlm", "deepspeedfp", "marlin", "qqq", "hqq",
    "neuron_quant", "deepgemm_fp8",
)

#: SGLang ``QUANTIZATION_METHODS`` (base + the vLLM-backed ones)
SGLANG_NAMES = (
    "fp8", "mxfp8", "blockwise_int8", "modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4_online", "modelopt_mixed",
    "w8a8_int8", "w8a8_fp8", "awq", "awq_marlin", "bitsandbytes", "gguf", "gptq", "gptq_marlin", "marlin",
    "moe_wna16", "compressed-tensors", "qoq", "w4afp8", "petit_nvfp4", "fbgemm_fp8", "quark", "quark_mxfp4",
    "auto-round", "auto-round-int8", "modelslim", "quark_int4fp8_moe", "humming", "mxfp_w4a8", "mxfp4",
    "aqlm", "deepspeedfp", "tpu_int8", "gptq_marlin_24", "qqq", "experts_int8",
)


def coverage_markdown() -> str:
    """The coverage table docs/validation.md shows."""
    lines = ["| method | engines | kind | status | counted as |", "|---|---|---|---|---|"]
    for name in sorted(METHODS):
        m = METHODS[name]
        eng = "+".join(e for e, names in (("vLLM", VLLM_NAMES), ("SGLang", SGLANG_NAMES)) if name in names)
        lines.append(f"| `{name}` | {eng} | {m.kind} | {m.status} | {m.layout} |")
    return "\n".join(lines) + "\n"
