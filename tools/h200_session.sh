#!/usr/bin/env bash
# The live-GPU session run on the H200 device machine (see docs/gpu-verification.md).
# Usage there:  bash tools/h200_session.sh   (writes its outputs under $OUT)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export COLUMNS=110 NO_COLOR=1
OUT=${OUT:-/tmp/k3doctor-h200}; mkdir -p "$OUT"
log="$OUT/session.txt"
step() { echo; echo "=== $* ==="; }
{
step "machine"
nvidia-smi -L; nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv
python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'
step "install (no network: --no-deps --no-build-isolation)"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2 || true
command -v k3doctor || { echo "no console script; using PYTHONPATH"; export PYTHONPATH=$PWD; }
python3 -m k3doctor --version

step "k3doctor snapshot"
time python3 -m k3doctor snapshot -o "$OUT/h200-live-snapshot.json"

SM100=(VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1 vllm serve moonshotai/Kimi-K3 --trust-remote-code
       --tensor-parallel-size 8 --pipeline-parallel-size 2 --nnodes 2 --load-format fastsafetensors
       --moe-backend marlin --gpu-memory-utilization 0.97 --max-model-len 65536)
CLEAN=(sglang serve --model-path Qwen/Qwen3-8B --tp-size 1 --mem-fraction-static 0.85 --context-length 32768)

step "live check with SM100-only flag (expect exit 1: ARCH001, ARCH003)"
time python3 -m k3doctor check -- "${SM100[@]}"; echo "exit=$?"
python3 -m k3doctor check --format json -o "$OUT/check-sm100.json" -- "${SM100[@]}"; echo "exit=$?"

step "live check with a clean command (expect exit 0)"
python3 -m k3doctor check -v -- "${CLEAN[@]}"; echo "exit=$?"

step "live check --target-free static run of the seed on this GPU's snapshot"
python3 -m k3doctor check --snapshot "$OUT/h200-live-snapshot.json" --select GPU,ARCH -- "${SM100[@]}"; echo "exit=$?"

step "plan from this GPU's snapshot: the seed's vLLM TP16 variant (reserve breakdown from live NVML)"
python3 -m k3doctor plan --snapshot "$OUT/h200-live-snapshot.json" --gpus-per-node 8 -- vllm serve moonshotai/Kimi-K3 \
  --tensor-parallel-size 16 --nnodes 2 --moe-backend marlin --gpu-memory-utilization 0.97 --max-model-len 65536
echo "exit=$?"

step "GPU-marked tests"
python3 -m pytest -m gpu -v -rs tests/ 2>&1 | tail -30

step "k3doctor check --nccl on this node (NCCL all-reduce over the local GPUs, reported by CLU010)"
python3 -m k3doctor check --nccl --select CLU -v --timeout 120; echo "exit=$?"

step "NCCL all-reduce test module directly (1 GPU: init + correctness; busbw is 0 by definition)"
python3 -m k3doctor.cluster.nccl_test --json --sizes 16M,256M,1G --iters 50 > "$OUT/nccl.json"; echo "exit=$?"
head -c 3000 "$OUT/nccl.json"; echo

step "full test suite on the GPU machine"
python3 -m pytest -q -x -p no:cacheprovider 2>&1 | tail -15

step "start-up benchmark (torch installed here)"
python3 benchmarks/bench_startup.py --runs 10
} > "$log" 2>&1
echo "done: $log"
