"""Engine effects as named constants, each with its source.

Everything here is either read from engine source (path given) or an explicitly labelled estimate.
Rules (what is replicated, what is sharded) live in :mod:`placement`; only *amounts* live here.
"""

from __future__ import annotations

from ..units import GiB, MiB, NVML_IDLE_RESERVE

# -- placement ---------------------------------------------------------------------------------
#: SGLang replicates shared experts (tp_size=1) under these all-to-all MoE backends.
#: sgl:python/sglang/srt/models/deepseek_v2.py (DeepseekV2MoE: shared_experts tp_size=1 when
#: deepep/mooncake); Kimi-K3 adds MegaMoE (kimi-k3.md §4.1, S7).
SGLANG_A2A_REPLICATE_SHARED = frozenset({"deepep", "mooncake", "megamoe", "mori", "ascend_fuseep"})

#: vLLM Kimi-K3: when ``moe_intermediate_size // tp < 256`` the per-rank intermediate is padded
#: to 256 (vllm/models/kimi_k3/nvidia/model.py, kimi-k3.md §4.2; removed by
#: local-inference-lab/vllm#385 "can prevent the official MXFP4 checkpoint from fitting").
VLLM_K3_MOE_PAD_MULTIPLE = 256

#: vLLM MXFP4 MoE (gpt-oss): per-rank intermediate rounded up to a multiple of 256 on the Hopper
#: backends (vllm/model_executor/layers/quantization/mxfp4.py Mxfp4MoEMethod.create_weights;
#: domain.md §C.1). gpt-oss: 2880 -> 3072 (+6.7% expert bytes), matching the receipts.
VLLM_MXFP4_PAD_MULTIPLE = 256
#: vLLM MXFP4 MoE on Marlin: the Marlin MoE kernel needs n % 256 and k % 128, so create_weights
#: rounds the per-rank intermediate to 128 and the hidden size to 256 (mxfp4.py, MARLIN backend)
VLLM_MXFP4_MARLIN_N_MULTIPLE = 128
VLLM_MXFP4_MARLIN_K_MULTIPLE = 256

# -- load-time transients -------------------------------------------------------------------
#: Marlin MXFP4 repack: per expert ``.view(int32).T.contiguous()`` + ``gptq_marlin_repack`` into a
#: list, then ``torch.cat`` -> ~2x one layer's local expert bytes live at once; freed per layer.
#: vllm:vllm/model_executor/layers/quantization/utils/marlin_utils_fp4.py (domain.md §C.2).
MARLIN_REPACK_FACTOR = 2.0

#: fastsafetensors: each rank copies whole files to GPU (``file_size - header``); the
#: ParallelLoader queue default (0) keeps two batches in flight -> 2 x shard bytes per rank.
#: fastsafetensors docs/configuration.md, loader.py; vLLM ``VLLM_FASTSAFETENSORS_QUEUE_SIZE``;
#: fastsafetensors#71 (domain.md §D).
FASTSAFETENSORS_BUFFERS = 2
#: misaligned header -> an extra 1 GiB temporary buffer (fastsafetensors loader.py).
FASTSAFETENSORS_MISALIGNED_EXTRA = 1 * GiB

#: Default safetensors loader: mmap + per-tensor narrow + copy; the transient is one tensor's
#: per-rank slice at a time (vllm weight_utils.safetensors_weights_iterator,
#: sgl weight_utils.py). We charge the largest single tensor (whole) as an upper bound.
DEFAULT_LOADER_TRANSIENT = "largest tensor"

# -- per-process reserves ---------------------------------------------------------------------
#: CUDA context + torch/cuBLAS handles on Hopper: ~0.5 GiB per process. Estimate; matches the gap
#: between NVML total and SGLang's first "avail mem" line in public H100/H200 logs.
CUDA_CONTEXT_BYTES = 512 * MiB
#: NCCL communicators, custom all-reduce IPC buffers, symmetric memory for a TP group. Estimate
#: (SGLang "Init torch distributed ends. mem usage=" lines are 0.3-1.2 GiB in public logs).
NCCL_BYTES = 563 * MiB  # 0.55 GiB non-torch at TP2 in the vLLM H100 logs
#: Extra for a TP group spanning nodes (IB/NET proxy buffers). No public measurement found, so
#: nothing is charged; kept as a named knob.
NCCL_MULTINODE_EXTRA = 0

# -- SGLang ------------------------------------------------------------------------------------
#: ``_handle_gpu_memory_settings`` (sgl:python/sglang/srt/server_args.py, domain.md §B.1):
#: reserved MB = 512 + max(chunked_prefill, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp*pp/8*1024,
#: at least 10 GB on GPUs > 60 GB; fraction = (gpu - reserved) / gpu.
SGLANG_RESERVED_BASE_MB = 512
SGLANG_RESERVED_MIN_BIG_GPU_MB = 10 * 1024
SGLANG_DEFAULT_CHUNKED_PREFILL = 8192  # H200-class tier
SGLANG_DEFAULT_CUDA_GRAPH_BS = 512  # tp >= 4 on the H200-class tier
#: Kimi-K3 KDA state slots per request (S6): extra_buffer (default) 5, extra_buffer_lazy 4,
#: no_buffer 3; 1 with radix cache off.
SGLANG_K3_STATE_SLOTS = 5
#: SGLang cookbook calculator default request length for --mamba-full-memory-ratio (S6).
SGLANG_K3_RATIO_REQUEST_LEN = 11264

#: SGLang's "Load weight end ... mem usage=" is the drop in device *free* memory across loading
#: (model_runner.load_model, get_available_gpu_memory with empty_cache), so it also catches
#: non-torch allocations made while loading (lazily loaded CUDA kernel modules, cuBLAS handles),
#: which vLLM's torch-allocated "Model loading took" does not. Same checkpoint, TP1: Qwen3-0.6B
#: SGLang 1.20 GB(GiB) vs vLLM 1.12 GiB = 82 MiB, of which 10 MiB is SGLang's float32 RoPE table
#: against vLLM's bf16 one (rope.py) -> 72 MiB (docs/validation.md). Estimate, from that one pair.
SGLANG_LOAD_NONTORCH_BYTES = 72 * MiB

# -- vLLM --------------------------------------------------------------------------------------
#: vLLM on ROCm reports "Model loading took" as the drop of device free memory across load_model
#: (vllm/platforms/rocm.py ``RocmPlatform.get_current_memory_usage``: ``total - free`` from
#: ``torch.cuda.mem_get_info``; CUDA reports torch's ``max_memory_allocated``), so it includes what
#: the load allocates outside torch's live tensors (HIP runtime / library workspaces, allocator
#: cache). Estimate: the median gap of the four dev ROCm vLLM receipts (DeepSeek-R1-Distill-Qwen-14B
#: AWQ / FP8-dynamic on gfx1201, BF16 TP2 on Instinct with vLLM 0.9 and 0.11.1: 170, 226, 208,
#: 220 MiB; docs/validation.md round 11).
VLLM_ROCM_LOAD_NONTORCH_BYTES = 214 * MiB
#: vLLM model classes that build ``embed_tokens`` and ``lm_head`` (and the final norm) on every
#: pipeline stage instead of a ``PPMissingLayer`` off the first / last stage: Qwen3-MoE
#: (``qwen3_moe.py`` Qwen3MoeModel / Qwen3MoeForCausalLM, read at two vLLM commits of 2025-2026).
VLLM_PP_VOCAB_ON_EVERY_STAGE = frozenset({"qwen3_moe"})
#: ``--gpu-memory-utilization`` default (vllm/config/cache.py; 0.9 in older releases).
VLLM_DEFAULT_UTIL = 0.9
#: V1 batch defaults for the OpenAI server on GPUs with >= 70 GiB (EngineArgs.get_batch_defaults):
#: max_num_batched_tokens 8192, max_num_seqs 1024; smaller GPUs 2048 / 256.
VLLM_BIG_GPU_BYTES = 70 * GiB
VLLM_MAX_BATCHED_TOKENS = (8192, 2048)
VLLM_MAX_NUM_SEQS = (1024, 256)
#: Sampler dummy run (gpu_model_runner._dummy_sampler_run) on max_num_seqs rows of full-vocab
#: logits (all-gathered on every TP rank) dominates vLLM's profiled "torch peak memory increase".
#: Public H100 logs (docs/validation.md, receipts vllm-h100-*) give 38.4-39.6 B per (row, vocab)
#: entry at max_num_seqs 1024 for four models with vocabularies 128k-201k: Llama-3.1-8B 4.76 GiB,
#: Qwen3-0.6B 5.56 GiB, gpt-oss-20b/120b 7.38 GiB, Llama-3.3-70B-FP8 4.84 GiB. That matches the
#: tensors the sampler holds at once: bf16 logits (2) + fp32 copy (4) + raw logprobs fp32 (4) +
#: top-k/top-p sort values (4) + int64 indices (8) + softmax (4) + cumsum (4) + mask (1) +
#: scatter-back (4) + sampling probs (4) = 39 B. The rows are ``min(max_num_batched_tokens,
#: max_num_seqs)`` (gpu_model_runner._dummy_run: ``num_reqs = min(num_tokens, max_num_reqs)``; the
#: sampler gets ``hidden_states[logit_indices]``, one row per request) and the logits are full-vocab on
#: every rank (LogitsProcessor._gather_logits all-gathers under V1): TP1 and TP2 receipts give the same
#: bytes per entry (Qwen3-32B 5.64 GiB at both; Llama-3.3-70B TP2 4.84), and so does a hybrid model on
#: H200 at TP2 (Qwen3-Next-80B-A3B, vLLM 0.10.2, 1024 rows x 151,936: 5.58 GiB). This is the
#: PyTorch-native top-k/top-p path (sort). Newer vLLM turns FlashInfer's sampler on by default
#: (vllm-project/vllm#40376, after #26859 had turned it off): no sort, ~14 B per entry -- no public
#: receipt measures it yet, so it is not modelled (docs/validation.md).
VLLM_SAMPLER_BYTES_PER_LOGIT = 38.5
#: Residual-stream buffers alive during the profile forward (hidden, residual, norm out, attn out,
#: gathered copies): 6 x tokens x hidden x 2 B. Estimate from the model code's tensor lifetimes.
VLLM_RESIDUAL_BUFFERS = 6
#: CUDA-graph memory. vLLM subtracts its CUDA-graph estimate from the KV budget only when
#: ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1`` (vllm/envs.py before v0.21.0: default "0", "Disabled by default to
#: preserve existing behavior"; vllm/v1/worker/gpu_worker.py determine_available_memory:
#: ``cudagraph_memory_estimate_applied = estimate if envs.VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
#: else 0``). Every public receipt agrees: available KV = requested - weights - peak activation -
#: non-torch, to the printed 0.01 GiB, while the same lines report 0.1-2.4 GiB "CUDAGraph memory"
#: (H100 report; Qwen3-Next-80B TP2 on H200, vLLM 0.10.2). Graphs are captured afterwards, inside the
#: (1 - utilization) headroom. The flat quarter GiB below is charged only with the env var set.
#: Releases from v0.21.0 on default the variable to 1 (a v0.27.1 log: "CUDA graph memory profiling is
#: enabled (default since v0.21.0)"), and on hybrid linear-attention models since v0.26.0 the estimate
#: carries a transient that grows with --max-num-batched-tokens (vllm-project/vllm#50780): not sized
#: here, for lack of a K3 measurement (docs/validation.md).
VLLM_CUDAGRAPH_ENV = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"
#: first release that defaults VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS to 1
VLLM_CUDAGRAPH_DEFAULT_SINCE = (0, 21, 0)
VLLM_CUDAGRAPH_BYTES = 256 * MiB
#: vLLM's GPU model runner V2 (vllm/v1/worker/gpu/model_runner.py), selected by
#: ``VLLM_USE_V2_MODEL_RUNNER`` (vllm/envs.py; "1" forces V2, "0" forces V1) or, unset, by
#: ``VllmConfig.use_v2_model_runner`` (vllm/config/vllm.py): at the v0.27.1 pin the default-V2 list
#: ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` holds ``KimiK3ForConditionalGeneration`` (CUDA; ROCm
#: excludes it) and every non-MoE, non-hybrid generate model defaults to V2 as well. Older releases:
#: opt-in only (envs.py default "0"). The K3 Hopper recipe sets it explicitly (kimi-k3.md §5.2).
VLLM_V2_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
#: First vLLM release whose default selector is known to pick V2 for the architectures above.
VLLM_V2_DEFAULT_SINCE = (0, 27, 1)
#: V2 profile run: ``profile_run`` -> ``_dummy_run(max_num_batched_tokens, skip_attn=True)`` builds
#: ``min(tokens, max_num_seqs)`` dummy requests (same rows as V1), then ``_dummy_sampler_run``:
#: ``model.compute_logits`` on one row per request and ``Sampler.__call__`` on a dummy input batch
#: whose requests were never added, so no top-k/top-p, min-p, penalties or logprobs run ("the sampler
#: may skip top_k, top_p, and logprobs"): gumbel-max over the logits (gpu/sample/gumbel.py, per-1024
#: block partial argmax, no vocab-sized temporaries). Live per (row x vocab) entry: bf16 logits (2) +
#: the sampler's fp32 copy (4) = 6 B (gpu/sample/sampler.py ``sample``: ``torch.empty_like(logits,
#: dtype=float32).copy_(logits)``); newer V2 samplers skip that copy when no request needs logits
#: processing, leaving the TP all-gather in ``compute_logits`` (local 2/tp + gathered 2 + reshaped 2 B)
#: as the peak, ~4 B. 6 B is the upper bound of the two; estimate from tensor lifetimes, no receipt.
VLLM_V2_SAMPLER_BYTES_PER_LOGIT = 6.0
#: vLLM's budget is ``--gpu-memory-utilization`` x the CUDA-visible total
#: (gpu_worker: ``requested_memory = init_snapshot.total_memory * util``, ``total_memory`` from
#: ``torch.cuda.mem_get_info()``), which is NVML ``memory.total`` minus NVML's driver-reserved memory
#: (``nvmlDeviceGetMemoryInfo_v2().reserved``). Measured on H200: NVML total 150,754,820,096 B,
#: reserved 644,939,776 B, torch mem_get_info total 150,109,880,320 B = the difference
#: (../shared/reference/h200-reading.json); public vLLM logs print "(…/139.81 GiB) on startup" for H200
#: and "(78.57/79.18 GiB)" for H100 SXM (NVML 81,559 MiB -> 479 MiB reserved). Used when the gpu fact
#: carries no ``memory_reserved``; unknown GPUs get the H200 figure.
NVML_RESERVED_BYTES = {
    "NVIDIA H200": 644_939_776,
    "NVIDIA H100 80GB HBM3": 479 * MiB,
}
NVML_RESERVED_DEFAULT = NVML_IDLE_RESERVE
#: vLLM non-torch memory at TP1 (cuBLAS/NCCL-less workspaces): 0.13 GiB in the same H100 logs;
#: 0.55 GiB at TP2 (NCCL + custom all-reduce) -> NCCL_BYTES below.
VLLM_NONTORCH_TP1 = 133 * MiB
#: vLLM hybrid (KDA/Mamba + attention) allocator: attention block size is rounded up so that one
#: attention page >= one state page, in multiples of this (kimi-k3.md §5.3: 768 tokens at TP8).
VLLM_HYBRID_BLOCK_MULTIPLE = 64

# -- KV cache dtypes -------------------------------------------------------------------------
KV_DTYPE_BYTES = {
    "auto": 2, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "half": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_ds_mla": 656 / 576, "fp4_e2m1": 0.5 + 1 / 32, "int8": 1,
}
