"""mountinfo parsing, cache-dir resolution, the paths probe and the FS checks."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from k3doctor import testing
from k3doctor.checks import fs as F
from k3doctor.facts import Facts, ProbeContext
from k3doctor.hostenv.caches import local_cache_dir, rank_key, resolve_caches
from k3doctor.hostenv.mountinfo import classify_fs, find_mount, parse_mountinfo, parse_proc_mounts, unescape
from k3doctor.model import Severity, Skip
from k3doctor.probes import fs as P

HOST = Path(__file__).resolve().parent.parent / "fixtures" / "host"
MI = HOST / "mountinfo"


def mounts(name: str) -> list[dict[str, Any]]:
    ms, errors = parse_mountinfo((MI / name).read_text())
    assert name == "malformed" or errors == []
    return ms


# -- mountinfo --------------------------------------------------------------------------------
def test_octal_escapes_and_separator_with_optional_fields() -> None:
    ms = {m["mount_point"]: m for m in mounts("nfs-home")}
    home = ms["/home"]
    assert home["fstype"] == "nfs4" and home["source"] == "filer01:/export/home"
    assert home["optional"] == ["shared:30", "master:12"] and home["root"] == "/export/home"
    assert ms["/mnt/shared models"]["fstype"] == "nfs"  # \040 -> space
    assert unescape(r"a\011b\012c\134d") == "a\tb\nc\\d"


def test_malformed_lines_are_reported_not_raised() -> None:
    ms, errors = parse_mountinfo((MI / "malformed").read_text())
    assert len(errors) == 3 and any("separator" in e for e in errors) and any("not numbers" in e for e in errors)
    assert "/data\ttab\nnl\\bs" in {m["mount_point"] for m in ms}


def test_h200_reading_mount_table() -> None:
    mi, _ = parse_mountinfo((HOST / "h200" / "proc" / "self" / "mountinfo").read_text())
    pm, _ = parse_proc_mounts((HOST / "h200" / "proc" / "mounts").read_text())
    assert [m["fstype"] for m in mi] == [m["fstype"] for m in pm]
    # /dev/shm is mounted twice; the later (128 GiB) one is on top
    assert find_mount("/dev/shm/x", mi)["super_options"].endswith("size=134217728k")
    assert find_mount("/root/.triton/cache", mi)["fstype"] == "ext4"
    assert classify_fs(find_mount("/usr/local/nvidia/lib", mi)["fstype"]) == "local"  # squashfs


def test_longest_prefix_and_nested_local_mount() -> None:
    ms = mounts("lustre-scratch")
    assert find_mount("/lustre/u/.triton", ms)["fstype"] == "lustre"
    assert find_mount("/lustre/cache/triton", ms)["fstype"] == "ext4"
    assert find_mount("/lustrefoo", ms)["mount_point"] == "/"


@pytest.mark.parametrize("fstype, cls", [
    ("nfs4", "network"), ("lustre", "network"), ("gpfs", "network"), ("fuse.juicefs", "network"),
    ("fuse.s3fs", "network"), ("fuse", "network"), ("9p", "network"), ("virtiofs", "network"),
    ("cifs", "network"), ("smb3", "network"), ("wekafs", "network"), ("ext4", "local"), ("overlay", "local"),
    ("tmpfs", "local"), ("zonefs", "unknown"), (None, "unknown")])
def test_classify(fstype: str | None, cls: str) -> None:
    assert classify_fs(fstype) == cls


# -- cache resolution -------------------------------------------------------------------------
def by_key(env: dict[str, str], engine: str | None = None) -> dict[str, Any]:
    return {c.key: c for c in resolve_caches(env, engine=engine, home="/home/u", user="u")}


def test_defaults_and_explicit() -> None:
    c = by_key({"HOME": "/home/u"})
    assert c["triton"].path == "/home/u/.triton/cache" and not c["triton"].explicit
    assert c["inductor"].path == "/tmp/torchinductor_u"
    assert c["hf_hub"].path == "/home/u/.cache/huggingface/hub" and not c["hf_hub"].jit
    c = by_key({"HOME": "/home/u", "TRITON_HOME": "/scratch/t", "TMPDIR": "/local", "HF_HOME": "/data/hf",
                "FLASHINFER_WORKSPACE_BASE": "/fi", "CUDA_CACHE_DISABLE": "1"})
    assert c["triton"].path == "/scratch/t/.triton/cache" and c["triton"].source == "TRITON_HOME"
    assert c["inductor"].path == "/local/torchinductor_u"
    assert c["hf_hub"].path == "/data/hf/hub" and c["flashinfer"].path == "/fi/.cache/flashinfer"
    assert "cuda" not in c


def test_sglang_overrides_dg_jit_cache_dir() -> None:
    c = by_key({"HOME": "/home/u", "DG_JIT_CACHE_DIR": "/tmp/dg"}, engine="sglang")
    assert "deepgemm" not in c and "vllm" not in c
    assert c["deepgemm_sglang"].path == "/home/u/.cache/deep_gemm" and "ignored" in c["deepgemm_sglang"].note
    c = by_key({"HOME": "/home/u", "DG_JIT_CACHE_DIR": "/tmp/dg", "VLLM_CACHE_ROOT": "/v"}, engine="vllm")
    assert c["deepgemm"].path == "/tmp/dg" and c["vllm"].path == "/v" and "deepgemm_sglang" not in c


def test_garbage_cache_values() -> None:
    c = by_key({"HOME": "/home/u", "TRITON_CACHE_DIR": "relative/dir"})
    assert c["triton"].path == "" and "not an absolute path" in c["triton"].note


def test_rank_key() -> None:
    assert rank_key({"SLURM_PROCID": "3"}) == ("SLURM_PROCID", "3", [])
    var, val, problems = rank_key({"LOCAL_RANK": "x;rm -rf", "RANK": "7"})
    assert (var, val) == ("RANK", "7") and "ignored" in problems[0]
    assert rank_key({}, node_rank=1)[:2] == ("node_rank", "1")
    assert rank_key({})[1] == "0"
    assert local_cache_dir("/tmp", "a b$", "3", "triton") == "/tmp/k3doctor-a_b_/rank3/triton"


# -- probes -----------------------------------------------------------------------------------
def test_read_mounts_fallback_and_unreadable(tmp_path: Path) -> None:
    (tmp_path / "mounts").write_text((HOST / "h200" / "proc" / "mounts").read_text())
    doc = P.read_mounts(str(tmp_path))
    assert doc["source"].endswith("/mounts") and "cannot read" in doc["errors"][0] and doc["mounts"]
    empty = P.read_mounts(str(tmp_path / "none"))
    assert empty["mounts"] == [] and len(empty["errors"]) == 2


def proc_with(tmp_path: Path, name: str) -> str:
    (tmp_path / "self").mkdir(exist_ok=True)
    (tmp_path / "self" / "mountinfo").write_text((MI / name).read_text())
    return str(tmp_path)


def paths_fact(tmp_path: Path, name: str, env: dict[str, str], **options: Any) -> dict[str, Any]:
    facts = Facts({"launch": {"engine": "sglang", "env": env}}, options=options)
    return P.probe_paths(ProbeContext(options=options, facts=facts), proc_root=proc_with(tmp_path, name))


def test_probe_paths_on_nfs_home(tmp_path: Path) -> None:
    doc = paths_fact(tmp_path, "nfs-home", {"HOME": "/home/alice", "USER": "alice"})
    e = {x["key"]: x for x in doc["entries"]}
    assert doc["env_source"] == "launch"
    assert e["triton"]["fstype"] == "nfs4" and e["triton"]["fs_class"] == "network"
    assert e["triton"]["mount_source"] == "filer01:/export/home"
    assert e["inductor"]["fs_class"] == "local"  # /tmp is tmpfs in this table
    assert e["home"]["fs_class"] == "network"


def test_probe_paths_bounded_on_hung_stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.statvfs

    def hang(path: Any) -> Any:
        if str(path).startswith("/"):
            time.sleep(5)
        return real(path)

    monkeypatch.setattr(P.os, "statvfs", hang)
    started = time.perf_counter()
    info = P.inspect_path("/tmp", [], timeout=0.3)
    assert time.perf_counter() - started < 2
    assert "no answer within 0.3 s" in info["error"]


def test_measure_read_and_estimate(tmp_path: Path) -> None:
    for i, size in enumerate((3 << 20, 5 << 20)):
        (tmp_path / f"model-0000{i}.safetensors").write_bytes(os.urandom(size))
    est = P.measure_read(str(tmp_path), budget_bytes=4 << 20)
    assert est["file"].endswith("model-00001.safetensors") and est["shard_count"] == 2
    assert est["bytes_read"] == 4 << 20 and est["total_bytes"] == 8 << 20
    assert est["bytes_per_s"] > 0 and est["estimated_s"] >= 0
    assert P.measure_read(str(tmp_path / "none"))["error"].startswith("cannot list")


def test_probe_paths_model_dir_opt_in(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "a.safetensors").write_bytes(b"\0" * (1 << 20))
    doc = paths_fact(tmp_path, "nfs-home", {"HOME": "/home/alice"}, model_dir=str(model))
    assert doc["load_estimate"] is None
    doc = paths_fact(tmp_path, "nfs-home", {"HOME": "/home/alice"}, model_dir=str(model), measure_load=True)
    assert doc["load_estimate"]["bytes_read"] == 1 << 20


# -- checks -----------------------------------------------------------------------------------
def run(check: type, **facts: Any) -> list:
    try:
        return testing.run(check, **facts)
    except Skip as exc:
        return [("skip", exc.reason)]


SEED_LAUNCH = {"engine": "sglang", "nnodes": 2, "node_rank": 0, "tp": 16, "gpus_per_node": 8}


def test_fs001_seed_story_triton_on_nfs_home(tmp_path: Path) -> None:
    paths = paths_fact(tmp_path, "nfs-home", {"HOME": "/home/alice", "USER": "alice"})
    found = run(F.FS001, paths=paths, launch={**SEED_LAUNCH, "env": {}})
    keys = {f.subject for f in found if f.severity is Severity.ERROR}
    assert {"triton", "flashinfer", "deepgemm_sglang", "cuda", "deepep"} <= keys
    assert "inductor" not in keys
    tri = next(f for f in found if f.subject == "triton")
    assert "nfs4" in tri.message and "8 rank(s) per node" in tri.message
    assert tri.fix.startswith("export TRITON_CACHE_DIR=/tmp/k3doctor-$USER/rank$")
    assert tri.evidence["fstype"] == "nfs4" and tri.evidence["ranks_per_node"] == 8


def test_fs001_pinned_and_single_rank(tmp_path: Path) -> None:
    env = {"HOME": "/home/alice", "TRITON_CACHE_DIR": "/tmp/triton"}
    paths = paths_fact(tmp_path, "nfs-home", env)
    found = run(F.FS001, paths=paths, launch={**SEED_LAUNCH, "env": env})
    assert "triton" not in {f.subject for f in found}
    single = {"engine": "sglang", "nnodes": 1, "tp": 1, "gpus_per_node": 1, "env": env}
    assert run(F.FS001, paths=paths, launch=single) == []


@pytest.mark.parametrize("table, home, key, fstype", [
    ("lustre-scratch", "/lustre/u", "triton", "lustre"),
    ("fuse-juicefs", "/jfs/u", "triton", "fuse.juicefs"),
    ("fuse-juicefs", "/root", "flashinfer", "fuse.s3fs"),  # ~/.cache is an s3fs mount, ~/.triton is not
])
def test_fs001_lustre_and_fuse(tmp_path: Path, table: str, home: str, key: str, fstype: str) -> None:
    env = {"HOME": home}
    paths = paths_fact(tmp_path, table, env)
    found = run(F.FS001, paths=paths, launch={**SEED_LAUNCH, "env": env})
    assert any(f.subject == key and fstype in f.message for f in found)
    if home == "/root":
        assert "triton" not in {f.subject for f in found}


def test_fs001_sglang_dg_override_note(tmp_path: Path) -> None:
    env = {"HOME": "/root", "DG_JIT_CACHE_DIR": "/tmp/dg"}
    found = run(F.FS001, paths=paths_fact(tmp_path, "nfs-home", env), launch={**SEED_LAUNCH, "env": env})
    note = [f for f in found if f.severity is Severity.INFO]
    assert note and "SGLANG_DG_CACHE_DIR" in note[0].message


def test_fs002_timeouts_unwritable_and_low_space() -> None:
    entries = [
        {"key": "triton", "label": "Triton JIT cache", "path": "/nfs/t", "variable": "TRITON_CACHE_DIR",
         "error": "no answer within 3 s (stale or hung network mount?)"},
        {"key": "inductor", "label": "TorchInductor cache", "path": "/ro/x", "variable": "TORCHINDUCTOR_CACHE_DIR",
         "writable": False, "checked_path": "/ro", "free_bytes": 10 << 30},
        {"key": "cuda", "label": "CUDA", "path": "/full/c", "variable": "CUDA_CACHE_PATH", "writable": True,
         "free_bytes": 100 << 20, "mount_point": "/full"},
    ]
    found = run(F.FS002, paths={"entries": entries})
    assert [(f.subject, f.severity) for f in found] == [
        ("triton", Severity.ERROR), ("inductor", Severity.ERROR), ("cuda", Severity.WARNING)]
    assert run(F.FS002, paths={"nope": 1})[0][0] == "skip"


def test_fs003_load_estimate_message() -> None:
    model = {"key": "model", "path": "/mnt/models/k3", "fs_class": "network", "fstype": "nfs4"}
    est = {"bytes_read": 268435456, "seconds": 0.5, "bytes_per_s": 536870912, "shard_count": 96,
           "total_bytes": 1_560_000_000_000, "estimated_s": 2905.8, "file": "/mnt/models/k3/x.safetensors"}
    found = run(F.FS003, paths={"entries": [model], "load_estimate": est})
    assert found[0].severity is Severity.WARNING and "~2905.8 s" in found[0].message and "512 MiB/s" in found[0].message
    found = run(F.FS003, paths={"entries": [model], "load_estimate": None})
    assert found[0].severity is Severity.INFO and "--measure-load" in found[0].fix
    assert run(F.FS003, paths={"entries": [{**model, "fs_class": "local"}]}) == []
    assert run(F.FS003, paths={"entries": []})[0][0] == "skip"


def test_fs004_home_on_nfs(tmp_path: Path) -> None:
    env = {"HOME": "/home/alice", "TRITON_CACHE_DIR": "/tmp/t"}
    found = run(F.FS004, paths=paths_fact(tmp_path, "nfs-home", env), launch={**SEED_LAUNCH, "env": env})
    home = found[0]
    assert "nfs4" in home.message and "SGLANG_DG_CACHE_DIR" in home.message and "TRITON_CACHE_DIR" not in home.message
    assert any(f.subject == "hf_hub" for f in found)


def test_probe_paths_one_hung_mount_does_not_stall_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.path.realpath

    def hang_on_home(path: Any, *args: Any, **kw: Any) -> Any:
        if str(path).startswith("/home/"):
            time.sleep(3)  # a dead NFS server: realpath's lstat never returns
        return real(path, *args, **kw)

    monkeypatch.setattr(P.os.path, "realpath", hang_on_home)
    started = time.perf_counter()
    doc = paths_fact(tmp_path, "nfs-home", {"HOME": "/home/alice"}, fs_timeout=0.3)
    assert time.perf_counter() - started < 2.5
    e = {x["key"]: x for x in doc["entries"]}
    assert "no answer within 0.3 s" in str([x["error"] for x in doc["entries"]])
    assert any(str(x["error"]).startswith("not checked: /home did not answer") for x in doc["entries"])
    assert e["inductor"]["error"] is None and e["inductor"]["free_bytes"]  # /tmp answered
    assert e["triton"]["fstype"] == "nfs4"
    found = run(F.FS002, paths=doc)
    assert any(f.subject == "triton" and "no answer" in f.message for f in found)


def test_docstrings_have_the_three_sections() -> None:
    for check in F.CHECKS:
        doc = check.doc()
        assert "What it checks" in doc and "Why it matters" in doc and "How to fix" in doc, check.code
