#!/usr/bin/env bash
# Kimi-K3 on 2 × 8 H200 with SGLang (the seed's balanced recipe). Run on every node with
# NODE_RANK=0 on the head and NODE_RANK=1 on the other node; HEAD_ADDR is the head's address.
set -euo pipefail

export NCCL_CUMEM_ENABLE=1
export SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0
export GLOO_SOCKET_IFNAME=eth0          # pinned: the NIC name differs on node 1 (NET001, CLU002)
export NCCL_SOCKET_IFNAME="$GLOO_SOCKET_IFNAME"
MODEL=${MODEL:-moonshotai/Kimi-K3}

cd /srv/k3   # the engine's working directory

exec sglang serve --trust-remote-code \
    --model-path "$MODEL" \
    --tp-size 16 --ep-size 16 \
    --moe-runner-backend marlin \
    --mem-fraction-static 0.85 \
    --reasoning-parser kimi_k3 --tool-call-parser kimi_k3 \
    --host 0.0.0.0 --port 30000 \
    --nnodes 2 --node-rank "${NODE_RANK:-0}" \
    --dist-init-addr "${HEAD_ADDR:-10.0.0.1}:5000"
