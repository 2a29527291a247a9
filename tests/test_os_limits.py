"""The limits probe (on recorded /proc and /sys roots and live) and the OS checks."""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Any

import pytest

from k3doctor import testing
from k3doctor.checks import oslimits as O
from k3doctor.model import Severity, Skip
from k3doctor.probes.oslimits import read_limits

HOST = Path(__file__).resolve().parent.parent / "fixtures" / "host"
MiB, GiB = 1 << 20, 1 << 30


def run(check: type, **facts: Any) -> list:
    try:
        return testing.run(check, **facts)
    except Skip as exc:
        return [("skip", exc.reason)]


def limits(**kw: Any) -> dict[str, Any]:
    base = {"shm": {"path": "/dev/shm", "total_bytes": 128 * GiB, "free_bytes": 128 * GiB, "error": None},
            "memlock": {"soft": -1, "hard": -1}, "nofile": {"soft": 1048576, "hard": 1048576},
            "mem_total": 2000 * GiB, "mem_available": 1900 * GiB, "cgroup_memory_limit": None,
            "rdma_devices": 8, "errors": []}
    base.update(kw)
    return base


EIGHT = {"engine": "sglang", "nnodes": 2, "tp": 16, "gpus_per_node": 8, "env": {}}


def test_probe_reads_fake_roots(tmp_path: Path) -> None:
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text("MemTotal:       2113619968 kB\nMemAvailable:   2000000000 kB\n")
    (proc / "self" / "mountinfo").write_text((HOST / "h200" / "proc" / "self" / "mountinfo").read_text())
    (sys_root / "fs" / "cgroup").mkdir(parents=True)
    (sys_root / "fs" / "cgroup" / "memory.max").write_text("68719476736\n")
    (sys_root / "class" / "infiniband" / "mlx5_0").mkdir(parents=True)
    lim = read_limits(str(proc), str(sys_root), shm_path="/dev/shm")
    assert lim["mem_total"] == 2113619968 * 1024 and lim["cgroup_memory_limit"] == 64 * GiB
    assert lim["rdma_devices"] == 1 and lim["shm"]["fstype"] == "tmpfs"
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert lim["nofile"]["soft"] == (soft if soft != resource.RLIM_INFINITY else -1)
    (sys_root / "fs" / "cgroup" / "memory.max").write_text("max\n")
    assert read_limits(str(proc), str(sys_root))["cgroup_memory_limit"] is None


def test_probe_survives_missing_roots(tmp_path: Path) -> None:
    lim = read_limits(str(tmp_path / "p"), str(tmp_path / "s"), shm_path=str(tmp_path / "noshm"))
    assert lim["mem_total"] is None and lim["errors"] and "statvfs" in lim["shm"]["error"]
    assert lim["rdma_devices"] == 0


def test_os001_docker_default_shm() -> None:
    small = limits(shm={"path": "/dev/shm", "total_bytes": 64 * MiB, "free_bytes": 64 * MiB, "error": None})
    found = run(O.OS001, limits=small, launch=EIGHT)
    assert found[0].severity is Severity.ERROR and "Docker's 64 MiB default" in found[0].message
    assert "--shm-size" in found[0].fix
    assert run(O.OS001, limits=limits(), launch=EIGHT) == []
    one = {**EIGHT, "tp": 1, "nnodes": 1, "gpus_per_node": 1}
    assert run(O.OS001, limits=small, launch=one)[0][0] == "skip"
    full = limits(shm={"path": "/dev/shm", "total_bytes": 64 * GiB, "free_bytes": 10 * MiB, "error": None})
    assert "stale" in run(O.OS001, limits=full, launch=EIGHT)[0].message


def test_os002_memlock_with_rdma() -> None:
    found = run(O.OS002, limits=limits(memlock={"soft": 8 * MiB, "hard": 8 * MiB}), launch=EIGHT)
    assert found[0].severity is Severity.ERROR and "8192 KiB" in found[0].message and "hard limit" in found[0].fix
    found = run(O.OS002, limits=limits(memlock={"soft": 64 * 1024, "hard": -1}), launch=EIGHT)
    assert found[0].fix == "ulimit -l unlimited before the launch"
    assert run(O.OS002, limits=limits(memlock={"soft": 8 * MiB, "hard": 8 * MiB}, rdma_devices=0),
               launch=EIGHT)[0][0] == "skip"
    assert run(O.OS002, limits=limits(), launch=EIGHT) == []


@pytest.mark.parametrize("soft, hard, sev", [(1024, 1024, Severity.WARNING), (1024, 1048576, Severity.WARNING),
                                              (20000, 1048576, Severity.INFO), (1048576, 1048576, None)])
def test_os003_nofile(soft: int, hard: int, sev: Severity | None) -> None:
    found = run(O.OS003, limits=limits(nofile={"soft": soft, "hard": hard}))
    assert (found[0].severity if found else None) is sev


def test_os004_host_memory_vs_staged_shards() -> None:
    model = {"total_bytes": 1_560_000_000_000, "max_shard_bytes": 16_300_000_000}
    capped = limits(cgroup_memory_limit=100 * GiB)
    found = run(O.OS004, limits=capped, launch={**EIGHT, "load_format": "fastsafetensors"}, model=model)
    assert found[0].severity is Severity.ERROR and found[0].evidence["staged_bytes"] == 8 * 2 * 16_300_000_000
    assert run(O.OS004, limits=limits(), launch=EIGHT, model=model) == []
    assert run(O.OS004, limits=limits(), launch=EIGHT)[0][0] == "skip"
    shards = {"shards": [{"size": 10 * GiB}, {"size": 20 * GiB}]}
    found = run(O.OS004, limits=limits(mem_total=100 * GiB), launch=EIGHT, model=shards)
    assert found[0].severity is Severity.WARNING and found[0].evidence["max_shard_bytes"] == 20 * GiB


def test_docstrings_have_the_three_sections() -> None:
    for check in O.CHECKS:
        doc = check.doc()
        assert "What it checks" in doc and "Why it matters" in doc and "How to fix" in doc, check.code


def test_h200_reading_with_the_seed_launch() -> None:
    """The real H200 reading (ulimit -a: locked memory unlimited, nofiles 20000; /dev/shm 128 GiB;
    no InfiniBand) under the seed's 2×8 SGLang launch."""
    reading = limits(shm={"path": "/dev/shm", "total_bytes": 134217728 * 1024, "free_bytes": 134217728 * 1024,
                          "fstype": "tmpfs", "error": None},
                     memlock={"soft": -1, "hard": -1}, nofile={"soft": 20000, "hard": 20000}, rdma_devices=0)
    seed = {"engine": "sglang", "nnodes": 2, "node_rank": 0, "tp": 16, "ep": 16, "gpus_per_node": 8,
            "env": {"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1"}}
    assert run(O.OS001, limits=reading, launch=seed) == []
    assert run(O.OS002, limits=reading, launch=seed)[0][0] == "skip"
    found = run(O.OS003, limits=reading, launch=seed)
    assert found[0].severity is Severity.WARNING and "20000" in found[0].message
