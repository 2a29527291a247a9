"""FS family: filesystems of JIT caches, download caches, $HOME and the model directory (domain §E)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..check import Check, module_checks
from ..facttypes import ClusterFact, GpuFact, MountsFact, PathsFact
from ..hostenv import sanitize
from ..hostenv.topology import launch_env_of, nnodes_of, ranks_per_node_of
from ..launch import LaunchSpec
from ..model import Finding, Severity

__all__ = ["CHECKS", "FS001", "FS002", "FS003", "FS004"]

from ..units import GiB

#: Free space below which a JIT cache warns (Triton + Inductor + DeepGEMM + FlashInfer builds).
MIN_FREE = 2 * GiB


def _paths(raw: Any) -> PathsFact:
    paths = sanitize.paths(raw)
    if paths is None:
        raise Check.skip("the paths fact has no entries")
    return PathsFact.of(paths)


def _entries(paths: Any, launch: Any = None, mounts_fact: Any = None, env_fact: Any = None) -> list[Mapping[str, Any]]:
    """Cache entries as this launch will use them.

    The ``paths`` fact records the directories resolved from the environment at probe time. When
    a launch is given (e.g. ``check --snapshot node.json -- <launch>`` with its own
    ``TRITON_CACHE_DIR=…``), the directories are resolved again from the launch's environment and
    placed on the recorded mount table, keeping the recorded writability/free space where the
    path is the same.
    """
    recorded = list(_paths(paths)["entries"])
    mounts = mounts_fact.get("mounts") if isinstance(mounts_fact, Mapping) else None
    if not isinstance(launch, Mapping) or not isinstance(mounts, list) or not mounts:
        return recorded
    from ..hostenv.caches import resolve_caches
    from ..hostenv.mountinfo import classify_fs, find_mount

    env = launch_env_of(launch, env_fact)
    home = next((str(e.get("path")) for e in recorded if e.get("key") == "home" and e.get("path")), "")
    by_path = {str(e.get("path")): e for e in recorded}
    out: list[Mapping[str, Any]] = []
    for cache in resolve_caches(env, engine=str(launch.get("engine") or "") or None, home=home):
        entry: dict[str, Any] = dict(by_path.get(cache.path) or {})
        entry.update(cache.to_dict())
        mount = find_mount(cache.path, mounts) if cache.path else None
        if mount is not None and cache.path not in by_path:
            entry.update(realpath=cache.path, mount_point=mount.get("mount_point"), fstype=mount.get("fstype"),
                         fs_class=classify_fs(mount.get("fstype")), mount_source=mount.get("source"))
        entry.setdefault("fs_class", "unknown")
        out.append(entry)
    keys = {str(e.get("key")) for e in out}
    out.extend(e for e in recorded if str(e.get("key")) not in keys)  # the model directory, …
    return out


def _per_rank_fix(entry: Mapping[str, Any]) -> str:
    var = str(entry.get("variable"))
    key = str(entry.get("key"))
    sub = "" if not entry.get("subdir") else " (the tool appends " + str(entry["subdir"]) + ")"
    return (f"export {var}=/tmp/k3doctor-$USER/rank${{SLURM_PROCID:-${{RANK:-0}}}}/{key}{sub} — a node-local "
            f"directory per rank, set before the engine starts; or eval \"$(k3doctor env)\" on each node")


def _evidence(e: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("path", "variable", "source", "explicit", "realpath", "mount_point", "fstype", "mount_source",
            "free_bytes", "writable")
    return {k: e.get(k) for k in keys if e.get(k) is not None}


class FS001(Check):
    """JIT caches are not on a shared/network filesystem written by several ranks

    ## What it checks
    Resolves every JIT cache the launch will use — explicit or default — and finds its mount in
    `/proc/self/mountinfo`: Triton (`TRITON_CACHE_DIR`, else `$TRITON_HOME/.triton/cache`, else
    `~/.triton/cache`), TorchInductor (`TORCHINDUCTOR_CACHE_DIR`, else `/tmp/torchinductor_$USER`),
    FlashInfer (`FLASHINFER_WORKSPACE_BASE`, else `$HOME`), DeepGEMM (SGLang overrides
    `DG_JIT_CACHE_DIR` with `SGLANG_DG_CACHE_DIR`, default `~/.cache/deep_gemm`; elsewhere
    `DG_JIT_CACHE_DIR`, default `~/.deep_gemm`), vLLM (`VLLM_CACHE_ROOT`), the CUDA compute cache
    (`CUDA_CACHE_PATH`), DeepEP (`EP_JIT_CACHE_DIR`). Error when the filesystem is shared
    (nfs, nfs4, lustre, gpfs, beegfs, ceph, cifs/smb3, 9p, virtiofs, wekafs, glusterfs, any
    `fuse.*`, …) and more than one rank writes it (GPUs per node > 1 or nodes > 1).

    ## Why it matters
    Triton writes each kernel into `tmp.pid_<pid>_<uuid>` and renames it into place; on NFS/Lustre
    16 ranks racing on the same key dir crash with `FileNotFoundError` (or `OSError: [Errno 16]
    Device or resource busy`, "Stale file handle") during CUDA-graph capture — minutes into the
    launch (triton-lang/triton#2688, #11512; sgl-project/sglang#472; pytorch/pytorch#173679).

    ## How to fix
    Give every rank a node-local directory before the engine starts, e.g.
    `export TRITON_CACHE_DIR=/tmp/k3doctor-$USER/rank${SLURM_PROCID}/triton`, or run
    `eval "$(k3doctor env)"` on each node, which prints all of them.
    """

    def run(self, paths: PathsFact, launch: LaunchSpec | None = None,
            mounts: MountsFact | None = None, env: Mapping[str, str] | None = None,
            gpu: GpuFact | None = None, cluster: ClusterFact | None = None,
            options: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        entries = _entries(paths, launch, mounts, env)
        rpn, how = ranks_per_node_of(launch, gpu)
        n = nnodes_of(launch, options, cluster)
        multi = (rpn or 0) > 1 or (n or 0) > 1
        for e in entries:
            if not e.get("jit"):
                continue
            if e.get("note") and "ignored" in str(e.get("note")):
                yield self.finding(str(e["note"]), subject=str(e.get("key")), evidence=_evidence(e),
                                   severity=Severity.INFO,
                                   fix=f"set {e.get('variable')} instead (SGLang copies it into DG_JIT_CACHE_DIR)")
            if e.get("fs_class") != "network":
                continue
            writers = f"{rpn if rpn else '?'} rank(s) per node ({how}) × {n if n else '?'} node(s)"
            ev = {**_evidence(e), "ranks_per_node": rpn, "nnodes": n}
            if multi:
                yield self.finding(
                    f"{e.get('label')} {e.get('path')} is on {e.get('fstype')} ({e.get('mount_source')}) "
                    f"and is written by {writers}: ranks race on its temp-file + rename",
                    subject=str(e.get("key")), evidence=ev, fix=_per_rank_fix(e),
                    group=f"JIT caches on {e.get('fstype')} ({e.get('mount_source')}), each written by {writers} "
                          "(ranks race on temp-file + rename)")
            elif rpn is None and n is None:
                yield self.finding(
                    f"{e.get('label')} {e.get('path')} is on {e.get('fstype')}; with more than one rank "
                    "(GPUs per node > 1 or several nodes) they race on it",
                    subject=str(e.get("key")), evidence=ev, fix=_per_rank_fix(e), severity=Severity.WARNING)


class FS002(Check):
    """Cache directories are writable, answer promptly and have free space

    ## What it checks
    For each cache directory (or the nearest existing parent the tool would create it in):
    writable by this user, `statvfs` answers within the probe's timeout, at least 2 GiB free.

    ## Why it matters
    JIT compilation happens after weights load; a read-only `$HOME`, a full disk or a hung NFS
    mount fails the launch 10+ minutes in, often as an unrelated-looking compile error.

    ## How to fix
    Point the variable at a writable node-local directory with space, e.g.
    `export TRITON_CACHE_DIR=/tmp/k3doctor-$USER/triton` (or `eval "$(k3doctor env)"`).
    """

    def run(self, paths: PathsFact, launch: LaunchSpec | None = None,
            mounts: MountsFact | None = None, env: Mapping[str, str] | None = None) -> Iterable[Finding]:
        for e in _entries(paths, launch, mounts, env):
            if e.get("key") in ("home", "model"):
                continue
            ev = _evidence(e)
            key = str(e.get("key"))
            fix = f"export {e.get('variable')}=<a writable node-local directory>, e.g. /tmp/k3doctor-$USER/{key}"
            if e.get("error"):
                yield self.finding(f"{e.get('label')} {e.get('path') or '(no path)'}: {e['error']}",
                                   subject=key, evidence=ev, fix=fix)
                continue
            if e.get("note") and "not an absolute path" in str(e.get("note")):
                yield self.finding(str(e["note"]), subject=key, evidence=ev, fix=fix, severity=Severity.WARNING)
            if e.get("writable") is False:
                yield self.finding(f"{e.get('label')} {e.get('path')} is not writable (checked "
                                   f"{e.get('checked_path')})", subject=key, evidence=ev, fix=fix)
            free = e.get("free_bytes")
            if isinstance(free, int) and free < MIN_FREE:
                yield self.finding(f"{e.get('label')} {e.get('path')}: only {free} bytes free on "
                                   f"{e.get('mount_point')}", subject=key, evidence={**ev, "min_free_bytes": MIN_FREE},
                                   fix=fix, severity=Severity.WARNING)


class FS003(Check):
    """Model directory on a network filesystem: expected weight-load time

    ## What it checks
    Finds the model directory's filesystem. On a network filesystem, with `--measure-load`, reads
    one region (up to 256 MiB, after dropping its cached pages) of the largest shard, times it, and
    projects the time to read every shard at that rate.

    ## Why it matters
    The seed deployment spent 669 s loading 1.56 TB of weights from shared storage; knowing the
    rate up front tells users whether to stage the checkpoint to local NVMe first.

    ## How to fix
    Copy the checkpoint to node-local disk (`rsync`/`hf download --local-dir /local/...`) and point
    `--model-path` there, or accept the load time.
    """

    severity = Severity.INFO

    def run(self, paths: PathsFact, launch: LaunchSpec | None = None,
            mounts: MountsFact | None = None, env: Mapping[str, str] | None = None) -> Iterable[Finding]:
        model = next((e for e in _entries(paths, launch, mounts, env) if e.get("key") == "model"), None)
        paths = _paths(paths)
        if model is None:
            raise self.skip("no model directory (use --model DIR or a launch with a local model path)")
        ev = _evidence(model)
        if model.get("error"):
            yield self.finding(f"model directory {model.get('path')}: {model['error']}", evidence=ev,
                               severity=Severity.WARNING, fix="check the mount of the model directory")
            return
        if model.get("fs_class") != "network":
            return
        est = paths.get("load_estimate")
        if not isinstance(est, Mapping):
            yield self.finding(f"model directory {model.get('path')} is on {model.get('fstype')}; "
                               "every node reads its shards over the network",
                               evidence=ev, fix="run with --measure-load for a load-time estimate, or stage "
                               "the checkpoint on node-local disk")
            return
        if est.get("error") or not est.get("bytes_per_s"):
            yield self.finding(f"model directory on {model.get('fstype')}: timed read failed: {est.get('error')}",
                               evidence=ev, severity=Severity.WARNING, fix="check the mount of the model directory")
            return
        rate = int(est["bytes_per_s"])
        yield self.finding(
            f"model directory on {model.get('fstype')}: read {est.get('bytes_read')} bytes in {est.get('seconds')} s "
            f"({rate // (1 << 20)} MiB/s); reading all {est.get('shard_count')} shards ({est.get('total_bytes')} bytes) "
            f"takes ~{est.get('estimated_s')} s per node at that rate",
            evidence={**ev, "bytes_per_s": rate, "estimated_s": est.get("estimated_s"),
                      "total_bytes": est.get("total_bytes"), "file": est.get("file")},
            severity=Severity.WARNING if (est.get("estimated_s") or 0) > 300 else Severity.INFO,
            fix="stage the checkpoint on node-local NVMe and point --model-path there")


class FS004(Check):
    """$HOME on a shared filesystem: which caches default under it

    ## What it checks
    When `$HOME` is on a network filesystem, lists the caches that are not pinned and therefore
    land under it (Triton, FlashInfer, DeepGEMM, DeepEP, CUDA, vLLM), and the Hugging Face hub
    cache when several nodes share it without `HF_HUB_OFFLINE=1`.

    ## Why it matters
    The seed's Triton crash came from nobody setting `TRITON_CACHE_DIR` on a cluster whose `$HOME`
    is NFS. FS001 flags each cache; this note explains the common cause. A shared hub cache
    written by several nodes at once relies on file locks that NFS does not always honour.

    ## How to fix
    Pin the cache variables per node (`eval "$(k3doctor env)"`); download the model once and run
    with `HF_HUB_OFFLINE=1`.
    """

    severity = Severity.INFO

    def run(self, paths: PathsFact, launch: LaunchSpec | None = None,
            mounts: MountsFact | None = None, env: Mapping[str, str] | None = None,
            cluster: ClusterFact | None = None, options: Mapping[str, Any] | None = None) -> Iterable[Finding]:
        entries = _entries(paths, launch, mounts, env)
        n_nodes = nnodes_of(launch, options, cluster) or 0
        home = next((e for e in entries if e.get("key") == "home"), None)
        if home is None:
            raise self.skip("no $HOME entry")
        if home.get("fs_class") == "network":
            under = [str(e.get("variable")) for e in entries
                     if e.get("jit") and not e.get("explicit") and str(e.get("path", "")).startswith(str(home.get("path")))]
            yield self.finding(
                f"$HOME {home.get('path')} is on {home.get('fstype')} ({home.get('mount_source')}); unpinned caches "
                f"under it: {', '.join(under) or 'none'}",
                evidence={**_evidence(home), "unpinned": ",".join(under)},
                fix=("pin " + ", ".join(under) + " to node-local directories (eval \"$(k3doctor env)\")") if under
                else "nothing to do: every cache is pinned")
        hub = next((e for e in entries if e.get("key") == "hf_hub"), None)
        run_env = launch_env_of(launch, env)
        if hub and hub.get("fs_class") == "network" and n_nodes > 1 and run_env.get("HF_HUB_OFFLINE") != "1":
            yield self.finding(f"Hugging Face hub cache {hub.get('path')} is on {hub.get('fstype')} shared by "
                               f"{n_nodes} nodes and HF_HUB_OFFLINE is not 1: nodes may download and lock "
                               "the same files at once", subject="hf_hub", evidence=_evidence(hub),
                               fix="download once (hf download), then export HF_HUB_OFFLINE=1 on every node")


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('FS', 'filesystems of JIT caches, model and cache directories', 50)
CHECKS = module_checks(globals())
