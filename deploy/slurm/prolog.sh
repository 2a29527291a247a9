#!/usr/bin/env bash
# Slurm prolog (slurm.conf: Prolog=/etc/slurm/prolog.d/k3doctor.sh, PrologFlags=Alloc): node health
# before any job lands on the node. It knows nothing of the job's launch, so it checks the node
# itself: GPUs, OS limits, filesystems. A non-zero exit drains the node and requeues the job, so only
# errors fail (not warnings), and a skipped check does not (no --strict).
set -u
K3DOCTOR=${K3DOCTOR:-/opt/k3doctor/bin/k3doctor}
out=$("$K3DOCTOR" check --isolated --select GPU,OS,FS --fail-on error --format github 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "k3doctor prolog: exit $rc on $(hostname)" >&2
  printf '%s\n' "$out" | sed -n '1,20p' >&2
  [ "$rc" -eq 1 ] && exit 1   # findings: drain the node; a crash (3) must not drain it
fi
exit 0
