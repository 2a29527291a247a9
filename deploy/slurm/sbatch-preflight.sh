#!/usr/bin/env bash
#SBATCH --job-name=kimi-k3
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
# The srun pre-step: the same check on every node of the allocation, against the job's real launch
# script, before the engine starts; the job stops there if a node would fail.
set -euo pipefail
export HEAD_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)

srun --ntasks-per-node=1 bash -c 'NODE_RANK=$SLURM_NODEID k3doctor check --launch-file deploy/launch.sh --ignore CLU --local' \
  || { echo "preflight failed; not launching" >&2; exit 1; }

srun --ntasks-per-node=1 bash -c 'NODE_RANK=$SLURM_NODEID eval "$(k3doctor env --dist-init-addr $HEAD_ADDR:5000)" && exec deploy/launch.sh'
