"""The checkpoint fixture generators produce what they claim (checked independently of k3doctor)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import struct
from pathlib import Path

import pytest


from fixtures.checkpoints.generate import (CASES, DTYPE_SIZE, corrupt, make_deepseek_v3_fp8, make_gpt_oss,
                                           make_kimi_k3, make_small_real, shared_skeleton)

K3_TOTAL = 1_560_860_324_864


def _header(path: Path) -> tuple[int, dict]:
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return n, json.loads(f.read(n))


def shared_k3(factory: pytest.TempPathFactory) -> Path:
    """One Kimi-K3 skeleton per test session (generation takes a few seconds)."""
    return shared_skeleton(factory.getbasetemp(), "kimi_k3")


@pytest.fixture(scope="module")
def k3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_k3(tmp_path_factory)


def test_k3_skeleton_is_faithful(k3: Path) -> None:
    shards = sorted(p.name for p in k3.glob("*.safetensors"))
    assert shards == [f"model-{i:05d}-of-000096.safetensors" for i in range(1, 97)]
    count = total = 0
    disk = 0
    for name in shards:
        p = k3 / name
        n, h = _header(p)
        assert "__metadata__" not in h  # the released shards carry none (shard 93 header is byte-exact)
        data_end = 0
        for t, info in h.items():
            b, e = info["data_offsets"]
            assert e - b == math.prod(info["shape"]) * DTYPE_SIZE[info["dtype"]], t
            data_end = max(data_end, e)
        assert p.stat().st_size == 8 + n + data_end, name
        count += len(h)
        total += data_end
        disk += p.stat().st_blocks * 512
    assert count == 497_220
    assert total == K3_TOTAL
    assert disk < 200 << 20, "data regions must be sparse holes"
    idx = json.loads((k3 / "model.safetensors.index.json").read_text())
    assert idx["metadata"]["total_size"] == K3_TOTAL
    assert len(idx["weight_map"]) == 497_220
    # byte-exact facts of the released checkpoint (shared/reference/kimi-k3.md §2.1)
    assert (k3 / "model.safetensors.index.json").stat().st_size == 59_764_096
    n93, _ = _header(k3 / "model-00093-of-000096.safetensors")
    assert n93 == 823_008
    assert (k3 / "model-00093-of-000096.safetensors").stat().st_size == 16_567_507_176


def test_k3_shard_contents_and_expert_order(k3: Path) -> None:
    idx = json.loads((k3 / "model.safetensors.index.json").read_text())["weight_map"]
    layer = re.compile(r"^language_model\.model\.layers\.(\d+)\.")
    for t, f in idx.items():
        m = layer.match(t)
        shard = int(f[6:11])
        if m:
            assert shard == int(m.group(1)) + 1, t
        elif t.startswith("vision_tower."):
            assert shard == 96
        elif t.startswith("mm_projector."):
            assert shard == 95
        else:
            assert shard == 94, t
    _, h = _header(k3 / "model-00093-of-000096.safetensors")
    order = sorted(h, key=lambda k: h[k]["data_offsets"][0])
    u8 = [k for k in order if h[k]["dtype"] == "U8"]
    assert order[-len(u8):] == u8 and u8 == sorted(u8)  # all U8 experts last, lexicographic
    assert u8[6].startswith("language_model.model.layers.92.block_sparse_moe.experts.1.")
    assert h[u8[0]]["data_offsets"][0] + 8 + 823_008 == 845_158_632  # expert 0 offset in the real shard 93
    e0 = [k for k in u8 if ".experts.0." in k]
    assert sum(h[k]["data_offsets"][1] - h[k]["data_offsets"][0] for k in e0) == 17_547_264


def test_k3_non_sparse_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="1.56 TB"):
        make_kimi_k3(tmp_path / "x", sparse=False)
    assert not (tmp_path / "x").exists()


def test_k3_config_is_the_released_one(k3: Path) -> None:
    cfg = json.loads((k3 / "config.json").read_text())
    assert cfg["architectures"] == ["KimiK3ForConditionalGeneration"]
    tc = cfg["text_config"]
    assert tc["num_experts"] == 896 and tc["quantization_config"]["format"] == "mxfp4-pack-quantized"
    assert "quantization_config" not in cfg


def test_deepseek_v3_full_has_163_shards_and_block_scales(tmp_path: Path) -> None:
    info = make_deepseek_v3_fp8(tmp_path / "dsv3", full=True)
    assert info["shards"] == 163
    names = sorted(p.name for p in (tmp_path / "dsv3").glob("*.safetensors"))
    assert names[0] == "model-00001-of-000163.safetensors" and len(names) == 163
    merged: dict = {}
    for n in names:
        merged.update(_header(tmp_path / "dsv3" / n)[1])
    assert merged.pop("__metadata__") == {"format": "pt"}
    f8 = [k for k, v in merged.items() if v["dtype"] == "F8_E4M3"]
    assert f8
    for k in f8:
        s = merged[k + "_scale_inv"]
        out, inn = merged[k]["shape"]
        assert s["dtype"] == "F32" and s["shape"] == [-(-out // 128), -(-inn // 128)], k
    experts = {k.split(".experts.")[1].split(".")[0] for k in f8 if "layers.3.mlp.experts." in k}
    assert len(experts) == 256


def test_gpt_oss_full_and_small(tmp_path: Path) -> None:
    info = make_gpt_oss(tmp_path / "full", full=True)
    names = sorted(p.name for p in (tmp_path / "full").glob("*.safetensors"))
    assert names[0] == "model-00000-of-00014.safetensors" and names[-1] == "model-00014-of-00014.safetensors"
    assert info["shards"] == 15
    merged: dict = {}
    for n in names:
        merged.update(_header(tmp_path / "full" / n)[1])
    b = merged["model.layers.0.mlp.experts.gate_up_proj_blocks"]
    assert b["dtype"] == "U8" and b["shape"] == [128, 5760, 90, 16]
    assert merged["model.layers.0.mlp.experts.gate_up_proj_scales"]["shape"] == [128, 5760, 90]
    small = make_gpt_oss(tmp_path / "small")
    assert small["shards"] == 2 and small["tensors"] < info["tensors"]


@pytest.mark.parametrize("layout", ["local_dir", "hf_cache"])
def test_small_real_records_hashes_like_huggingface_hub(tmp_path: Path, layout: str) -> None:
    info = make_small_real(tmp_path / "m", layout=layout)
    d = Path(info["model_dir"])
    shards = sorted(d.glob("*.safetensors"))
    assert len(shards) == 5
    for p in shards:
        data = p.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        if layout == "local_dir":
            commit, etag, ts = (d / ".cache/huggingface/download" / f"{p.name}.metadata").read_text().splitlines()
            assert etag == sha and len(commit) == 40 and p.stat().st_mtime - 1 <= float(ts)
        else:
            assert p.is_symlink() and os.readlink(p) == f"../../blobs/{sha}"
    cfg = (d / "config.json").read_bytes()
    git_sha1 = hashlib.sha1(b"blob %d\0" % len(cfg) + cfg).hexdigest()
    assert info["etags"]["config.json"] == git_sha1
    if layout == "hf_cache":
        assert (d.parent.parent / "refs" / "main").read_text() == info["revision"]


def test_corrupt_rejects_unknown_case_and_changes_bytes(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    with pytest.raises(ValueError, match="unknown corruption case"):
        corrupt(info["model_dir"], "no_such_case")
    shard = Path(info["model_dir"]) / "model-00002-of-000005.safetensors"
    before = shard.read_bytes()
    res = corrupt(info["model_dir"], "bit_flip")
    after = shard.read_bytes()
    assert res["file"] == shard.name and len(after) == len(before)
    assert sum(a != b for a, b in zip(before, after)) == 1
    assert len(CASES) == len(set(CASES)) >= 30
