"""Inventory: synthesis from config.json vs shard headers, header-only fallback, bad headers."""

from __future__ import annotations

import json
import struct

import pytest

from fixtures.checkpoints.generate import k3_inventory, make_deepseek_v3_fp8, make_kimi_k3
from k3doctor.memory.inventory import InventoryError, load_inventory
from k3doctor.memory.spec import UnknownArchitecture, load_known_config, spec_from_config
from k3doctor.memory.synth import synthesise

K3_TENSORS = 497_220
K3_BYTES = 1_560_860_324_864


def _groups(inv):
    return {(g.layer, g.template): (g.nbytes, g.count, g.experts) for g in inv.groups}


def test_synthesised_k3_equals_fixture_tensor_list():
    spec = spec_from_config(load_known_config("moonshotai/Kimi-K3"))
    synth = {(t.name, t.dtype, tuple(t.shape)) for t in synthesise(spec)}
    fixture = {(n, d, tuple(s)) for _f, specs in k3_inventory() for n, d, s in specs}
    assert len(synth) == K3_TENSORS
    assert synth == fixture


def test_synthesised_k3_equals_full_size_fixture_headers(tmp_path):
    info = make_kimi_k3(tmp_path / "k3")
    assert info["tensors"] == K3_TENSORS
    hdr = load_inventory(tmp_path / "k3")
    cfg = load_inventory("moonshotai/Kimi-K3")
    assert hdr.source == "headers" and cfg.source == "config"
    assert hdr.n_tensors == cfg.n_tensors == K3_TENSORS
    assert hdr.total_bytes == cfg.total_bytes == K3_BYTES
    assert _groups(hdr) == _groups(cfg)
    assert hdr.n_shards == cfg.n_shards == 96
    assert hdr.max_shard_bytes == cfg.max_shard_bytes == 16_990_092_800  # a KDA+MoE layer (kimi-k3.md §2.1)


def test_k3_expert_bytes_match_the_checkpoint_breakdown():
    inv = load_inventory("moonshotai/Kimi-K3")
    experts = sum(g.nbytes for g in inv.groups if ".experts.{E}." in g.template)
    assert experts == 1_446_456_066_048  # S3 breakdown, kimi-k3.md §2.1


def test_dsv3_fp8_names_dtypes_match_the_fixture_writer(tmp_path):
    info = make_deepseek_v3_fp8(tmp_path / "ds")
    cfg = json.loads((tmp_path / "ds" / "config.json").read_text())
    synth = {(t.name, t.dtype) for t in synthesise(spec_from_config(cfg))}
    hdr = load_inventory(tmp_path / "ds")
    names = set()
    for f in sorted((tmp_path / "ds").glob("*.safetensors")):
        with open(f, "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            names |= {(k, v["dtype"]) for k, v in json.loads(fh.read(n)).items() if k != "__metadata__"}
    assert synth == names
    assert hdr.total_bytes == load_inventory(config=cfg).total_bytes
    assert info


@pytest.mark.parametrize("name,billions", [
    ("deepseek-v3", 688.6), ("qwen3-235b-a22b", 470.2), ("gpt-oss-120b", 65.2), ("mixtral-8x7b", 93.4),
    ("qwen3-8b", 16.4), ("llama-3.1-8b", 16.1), ("kimi-k2", 1029.2), ("glm-4.5", 716.7),
])
def test_synthesised_checkpoint_sizes(name, billions):
    inv = load_inventory(name)
    assert abs(inv.total_bytes / 1e9 - billions) / billions < 0.005


def _write_st(path, tensors):
    hdr, off = {}, 0
    for name, dtype, shape, nb in tensors:
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    raw = json.dumps(hdr).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + off)


def test_unknown_architecture_falls_back_to_header_only(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["MysteryForCausalLM"], "model_type": "mystery"}))
    _write_st(tmp_path / "model.safetensors", [
        ("model.layers.0.mlp.experts.0.w1.weight", "BF16", [64, 32], 4096),
        ("model.layers.0.mlp.experts.1.w1.weight", "BF16", [64, 32], 4096),
        ("model.layers.0.self_attn.q_proj.weight", "BF16", [32, 32], 2048),
        ("model.embed_tokens.weight", "BF16", [100, 32], 6400),
    ])
    inv = load_inventory(tmp_path)
    assert inv.header_only and inv.spec is None
    assert any("MysteryForCausalLM" in n and "header-only" in n and "hidden_size" in n for n in inv.notes)
    assert inv.total_bytes == 4096 * 2 + 2048 + 6400


def test_unknown_architecture_without_headers_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["MysteryForCausalLM"]}))
    with pytest.raises(InventoryError, match="MysteryForCausalLM"):
        load_inventory(tmp_path)


def test_missing_fields_are_named():
    with pytest.raises(UnknownArchitecture) as ei:
        spec_from_config({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64})
    assert "num_hidden_layers" in ei.value.missing and "vocab_size" in ei.value.missing


def test_truncated_header_is_a_one_line_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(load_known_config("qwen3-0.6b")))
    (tmp_path / "model.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(InventoryError, match="re-download"):
        load_inventory(tmp_path)


def test_fast_header_scan_equals_the_checkpoint_reader(tmp_path):
    from fixtures.checkpoints.generate import make_gpt_oss
    from k3doctor.ckpt.inventory import iter_tensors
    from k3doctor.memory.inventory import aggregate

    for name, make in (("ds", make_deepseek_v3_fp8), ("oss", make_gpt_oss)):
        make(tmp_path / name)
        inv = load_inventory(tmp_path / name)
        groups, total, n, shards = aggregate(iter_tensors(tmp_path / name))
        assert (total, n) == (inv.total_bytes, inv.n_tensors)
        assert {(g.layer, g.template): (g.nbytes, g.count, g.experts) for g in groups} == _groups(inv)
        assert max(shards.values()) == inv.max_shard_bytes
