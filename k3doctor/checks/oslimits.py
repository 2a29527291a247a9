"""OS family: operating-system limits with a cited launch failure (shm, memlock, open files, RAM).

The worked example of signature-style checks (k3doctor/check.py): each ``run`` names the facts it
reads — ``limits`` is required (no limits fact: skipped before ``run``), ``launch``, ``gpu``,
``env`` and ``model`` are optional and arrive as None when unknown.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..check import Check, module_checks
from ..facttypes import GpuFact, ModelFact
from ..hostenv import sanitize
from ..hostenv.topology import launch_env_of, ranks_per_node_of
from ..launch import LaunchSpec
from ..model import Finding, Severity
from ..units import GiB, MiB

__all__ = ["CHECKS", "OS001", "OS002", "OS003", "OS004"]

SHM_MIN = 1 * GiB
MEMLOCK_MIN = 16 * GiB
NOFILE_MIN = 65536


def _limits(limits: Any) -> Mapping[str, Any]:
    lim = sanitize.limits(limits)
    if lim is None:
        raise Check.skip("no usable limits fact")
    return lim


class OS001(Check):
    """/dev/shm is large enough for NCCL's shared-memory transport

    ## What it checks
    The size of `/dev/shm` when more than one rank runs on this node. Docker's default is 64 MiB
    (`--shm-size`); Kubernetes pods get the node's default unless an `emptyDir` with
    `medium: Memory` is mounted there.

    ## Why it matters
    NCCL puts its intra-node buffers in `/dev/shm` files of several MiB per peer and channel.
    With 64 MiB, init fails with `Error while creating shared memory segment /dev/shm/nccl-…` /
    `posix_fallocate failed: No space left on device` (NVIDIA/nccl#342, vllm-project/vllm#1710,
    vllm#6574, pytorch/torchtitan#853).

    ## How to fix
    `docker run --shm-size=16g …` (or `--ipc=host`); in Kubernetes mount an `emptyDir`
    (`medium: Memory`, `sizeLimit: 16Gi`) at `/dev/shm`. At least 1 GiB.
    """

    def run(self, limits: Mapping[str, Any], launch: LaunchSpec | None = None,
            gpu: GpuFact | None = None) -> Iterable[Finding]:
        shm = _limits(limits).get("shm")
        if not isinstance(shm, Mapping):
            raise self.skip("no /dev/shm reading")
        rpn, how = ranks_per_node_of(launch, gpu)
        if shm.get("error"):
            yield self.finding(f"/dev/shm: {shm['error']}", evidence={"path": str(shm.get("path"))},
                               fix="mount a tmpfs at /dev/shm (docker --shm-size=16g, or a Memory emptyDir)",
                               severity=Severity.ERROR if (rpn or 0) > 1 else Severity.WARNING)
            return
        total, free = shm.get("total_bytes"), shm.get("free_bytes")
        if rpn == 1:
            raise self.skip("one rank on this node: NCCL's shared-memory transport is not used")
        ev = {"total_bytes": total, "free_bytes": free, "ranks_per_node": rpn, "min_bytes": SHM_MIN}
        fix = "docker run --shm-size=16g (or --ipc=host); Kubernetes: emptyDir {medium: Memory, sizeLimit: 16Gi} at /dev/shm"
        sev = Severity.ERROR if (rpn or 0) > 1 else Severity.WARNING
        if isinstance(total, int) and total < SHM_MIN:
            note = " (Docker's 64 MiB default)" if total == 64 * MiB else ""
            yield self.finding(f"/dev/shm is {total // MiB} MiB{note}; {rpn or 'several'} ranks on this node "
                               f"({how}) need NCCL shared-memory segments", evidence=ev, fix=fix, severity=sev)
        elif isinstance(free, int) and free < SHM_MIN:
            yield self.finding(f"/dev/shm has only {free // MiB} MiB free of {(total or 0) // MiB} MiB "
                               "(stale nccl-* / psm_* files from earlier runs?)", evidence=ev,
                               fix="remove stale files in /dev/shm from dead jobs, or enlarge it: " + fix, severity=sev)


class OS002(Check):
    """ulimit -l (locked memory) allows RDMA registration

    ## What it checks
    The soft `RLIMIT_MEMLOCK` when this node has RDMA devices (`/sys/class/infiniband`) or
    `NCCL_IB_HCA` is set: it should be unlimited (at least 16 GiB).

    ## Why it matters
    NCCL's IB/RoCE transport pins its buffers with `ibv_reg_mr`; with the usual 8 MiB / 64 KiB
    default it fails with `ibv_reg_mr … failed with error Cannot allocate memory`
    (NVIDIA/nccl-tests#206, where `ulimit -l` was 8192; containers default to 64 MiB,
    NVIDIA/cudf-spark#7632).

    ## How to fix
    `ulimit -l unlimited` before the launch (needs the hard limit), `/etc/security/limits.conf`
    `* - memlock unlimited`, `docker run --ulimit memlock=-1:-1`, Slurm `PropagateResourceLimits`.
    """

    def run(self, limits: Mapping[str, Any], launch: LaunchSpec | None = None,
            env: Mapping[str, str] | None = None) -> Iterable[Finding]:
        lim = _limits(limits)
        env = launch_env_of(launch, env)
        if not lim.get("rdma_devices") and "NCCL_IB_HCA" not in env:
            raise self.skip("no RDMA devices on this node: NCCL uses sockets")
        ml = lim["memlock"]
        soft, hard = ml["soft"], ml["hard"]
        if not isinstance(soft, int):
            raise self.skip("RLIMIT_MEMLOCK unknown")
        if soft == -1 or soft >= MEMLOCK_MIN:
            return
        can_raise = hard == -1 or (isinstance(hard, int) and hard >= MEMLOCK_MIN)
        yield self.finding(
            f"locked-memory limit (ulimit -l) is {soft // 1024} KiB with {lim.get('rdma_devices')} RDMA device(s): "
            "NCCL cannot register its IB buffers",
            evidence={"soft_bytes": soft, "hard_bytes": hard, "rdma_devices": lim.get("rdma_devices")},
            fix=("ulimit -l unlimited before the launch" if can_raise else
                 "raise the hard limit: limits.conf '* - memlock unlimited', docker --ulimit memlock=-1:-1, "
                 "or systemd LimitMEMLOCK=infinity for slurmd"))


class OS003(Check):
    """ulimit -n (open files) is high enough for a multi-rank server

    ## What it checks
    The soft and hard `RLIMIT_NOFILE`: warning below 65536.

    ## Why it matters
    Each rank holds sockets to every peer, ZMQ pipes, shard files and one connection per client
    request; at the common 1024 default servers fail with `OSError: [Errno 24] Too many open files`
    (SemiAnalysisAI/InferenceX#2140 in multi-node jobs; pytorch/pytorch#137695 for vLLM TP8).

    ## How to fix
    `ulimit -n 1048576` before the launch (up to the hard limit); otherwise raise the hard limit:
    `docker run --ulimit nofile=1048576:1048576`, limits.conf `nofile`, systemd `LimitNOFILE`.
    """

    severity = Severity.WARNING

    def run(self, limits: Mapping[str, Any]) -> Iterable[Finding]:
        nf = _limits(limits).get("nofile")
        if not isinstance(nf, Mapping) or not isinstance(nf.get("soft"), int):
            raise self.skip("RLIMIT_NOFILE unknown")
        soft, hard = nf["soft"], nf.get("hard")
        if soft == -1 or soft >= NOFILE_MIN:
            return
        ev = {"soft": soft, "hard": hard, "min": NOFILE_MIN}
        if hard == -1 or (isinstance(hard, int) and hard >= NOFILE_MIN):
            yield self.finding(f"open-files soft limit (ulimit -n) is {soft}; the hard limit {hard} allows more",
                               evidence=ev, fix=f"ulimit -n {hard if hard != -1 else 1048576} before the launch",
                               severity=Severity.INFO if soft >= 8192 else Severity.WARNING)
        else:
            yield self.finding(f"open-files limit (ulimit -n) is {soft} (hard {hard})", evidence=ev,
                               fix="raise the hard limit: docker --ulimit nofile=1048576:1048576, limits.conf "
                                   "'* - nofile 1048576', or systemd LimitNOFILE=1048576")


def _model_sizes(model: Any) -> tuple[int | None, int | None]:
    if not isinstance(model, Mapping):
        return None, None
    total = sanitize.as_int(model.get("total_bytes"))
    biggest = sanitize.as_int(model.get("max_shard_bytes"))
    shards = model.get("shards")
    if isinstance(shards, list):
        sizes = [sanitize.as_int(s.get("size")) or sanitize.as_int(s.get("bytes")) or 0
                 for s in shards if isinstance(s, Mapping)]
        if sizes:
            total = total if isinstance(total, int) else sum(sizes)
            biggest = biggest if isinstance(biggest, int) else max(sizes)
    return (total if isinstance(total, int) else None), (biggest if isinstance(biggest, int) else None)


class OS004(Check):
    """Host RAM (or the container's memory limit) covers what the loader stages at once

    ## What it checks
    The memory this node may use — the cgroup limit when one is set, else `MemTotal` — against
    what its ranks stage in host memory while loading: one whole shard per rank in flight
    (`--load-format fastsafetensors` double-buffers two).

    ## Why it matters
    Loader memory that outlives the read is charged to the container: node cgroup OOM kills at
    load time have been reported with ~190 GiB retained per rank (NVIDIA/TensorRT-LLM#17999); a
    16 GB shard × 8 ranks is already 130 GB in flight.

    ## How to fix
    Raise the container/job memory limit (Kubernetes `resources.limits.memory`, Slurm `--mem=0`),
    or load with fewer shards in flight (default loader instead of fastsafetensors).
    """

    severity = Severity.WARNING

    def run(self, limits: Mapping[str, Any], model: ModelFact | None = None,
            launch: LaunchSpec | None = None, gpu: GpuFact | None = None) -> Iterable[Finding]:
        lim = _limits(limits)
        total, biggest = _model_sizes(model)
        if biggest is None:
            raise self.skip("shard sizes unknown (no model scan)")
        rpn, how = ranks_per_node_of(launch, gpu)
        ranks = rpn or 1
        fast = isinstance(launch, Mapping) and str(launch.get("load_format") or "") == "fastsafetensors"
        staged = ranks * biggest * (2 if fast else 1)
        cap = lim.get("cgroup_memory_limit") or lim.get("mem_total")
        if not isinstance(cap, int):
            raise self.skip("host memory unknown")
        src = "cgroup memory limit" if lim.get("cgroup_memory_limit") else "MemTotal"
        if staged > cap:
            yield self.finding(
                f"{ranks} rank(s) ({how}) × {'2 × ' if fast else ''}{biggest} byte shard = {staged} bytes staged at once, "
                f"more than the {src} {cap}",
                evidence={"staged_bytes": staged, "limit_bytes": cap, "max_shard_bytes": biggest,
                          "ranks_per_node": ranks, "fastsafetensors": fast, "model_bytes": total},
                fix="raise the memory limit of the job/container, or drop --load-format fastsafetensors",
                severity=Severity.ERROR if lim.get("cgroup_memory_limit") else Severity.WARNING)


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('OS', 'operating-system limits (shm, memlock, open files, host RAM)', 60)
CHECKS = module_checks(globals())
