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


def test_plan_and_check_read_headers_through_one_reader(tmp_path, k3_dir):
    """`plan --model DIR` folds the headers through the checkpoint scan, as `check --model` does:
    the same inventory document either way (one reader, one set of bounds)."""
    from k3doctor.memory.inventory import inventory_from_fact
    from k3doctor.probes.checkpoint import model_fact

    fact = model_fact(k3_dir)
    assert _full(load_inventory(k3_dir)) == _full(inventory_from_fact(fact["inventory"], str(k3_dir)))


# -- the inventory inside the model fact (one header parse for CKPT and MEM) ---------------------
def _full(inv):
    return ([(g.layer, g.template, g.dtype, g.nbytes, g.count, g.experts) for g in inv.groups],
            inv.source, inv.total_bytes, inv.n_tensors, inv.max_shard_bytes, inv.n_shards, inv.notes, inv.spec)


@pytest.fixture(scope="module")
def k3_dir(tmp_path_factory):
    from fixtures.checkpoints.generate import shared_skeleton

    return shared_skeleton(tmp_path_factory.getbasetemp(), "kimi_k3")


def test_model_fact_inventory_equals_header_read_inventory_k3(k3_dir):
    from k3doctor.probes.checkpoint import model_fact
    from k3doctor.memory.inventory import inventory_from_fact, read_inventory

    fact = model_fact(k3_dir)
    doc = fact["inventory"]
    assert doc["source"] == "headers" and doc["errors"] == []
    assert doc["tensors"] == K3_TENSORS and doc["bytes"] == K3_BYTES and doc["shards"] == 96
    assert len(json.dumps(doc)) < 20_000  # ~3,000 groups as ~60 rows of layer ranges, config included
    from_fact = inventory_from_fact(json.loads(json.dumps(doc)), fact["dir"])  # as read back from a snapshot
    assert _full(from_fact) == _full(read_inventory(k3_dir))
    assert len(from_fact.groups) == 3023


@pytest.mark.parametrize("kind", ["ds", "oss"])
def test_model_fact_inventory_equals_header_read_inventory(tmp_path, kind):
    from fixtures.checkpoints.generate import make_gpt_oss
    from k3doctor.probes.checkpoint import model_fact
    from k3doctor.memory.inventory import inventory_from_fact, read_inventory

    (make_deepseek_v3_fp8 if kind == "ds" else make_gpt_oss)(tmp_path / kind)
    fact = model_fact(tmp_path / kind)
    inv = inventory_from_fact(json.loads(json.dumps(fact["inventory"])), fact["dir"])
    assert _full(inv) == _full(read_inventory(tmp_path / kind))
    assert inv.n_tensors == fact["totals"]["tensors"] and inv.total_bytes == fact["totals"]["data_bytes"]


def test_model_fact_inventory_of_a_broken_shard_refuses_like_the_header_reader(tmp_path):
    from k3doctor.probes.checkpoint import model_fact
    from k3doctor.memory.inventory import inventory_from_fact

    make_deepseek_v3_fp8(tmp_path / "ds")
    shard = sorted((tmp_path / "ds").glob("*.safetensors"))[3]
    shard.write_bytes(b"\x01\x02")  # a broken download: no header at all
    fact = model_fact(tmp_path / "ds")
    assert fact["inventory"]["errors"][0]["file"] == shard.name
    with pytest.raises(InventoryError, match=shard.name):
        inventory_from_fact(fact["inventory"], fact["dir"])
    with pytest.raises(InventoryError, match="re-download"):
        load_inventory(tmp_path / "ds")


def test_config_only_directory_keeps_the_config_in_the_fact(tmp_path):
    from k3doctor.probes.checkpoint import model_fact
    from k3doctor.memory.inventory import inventory_from_fact

    (tmp_path / "config.json").write_text(json.dumps(load_known_config("qwen3-8b")))
    fact = model_fact(tmp_path)
    assert fact["inventory"]["source"] == "config"
    inv = inventory_from_fact(fact["inventory"], fact["dir"])
    assert _full(inv) == _full(load_inventory(tmp_path))


def _seed_launch(d):
    return ["sglang", "serve", "--model-path", str(d), "--tp-size", "16", "--ep-size", "16", "--nnodes", "2",
            "--mem-fraction-static", "0.85"]


def _check(tmp_path, name, *args):
    from click.testing import CliRunner

    from k3doctor.cli import main

    out = tmp_path / f"{name}.json"
    r = CliRunner().invoke(main, ["check", *args[:-1], "--format", "json", "-o", str(out), "--", *args[-1]])
    assert r.exit_code in (0, 1), r.output
    return json.loads(out.read_text())


def _mem_results(report, path=None):
    out = {}
    for r in report["results"]:
        if r["code"].startswith("MEM"):
            text = json.dumps([r["status"], r.get("reason"), r.get("findings", [])])
            out[r["code"]] = text.replace(str(path), "DIR") if path else text
    return out


def test_mem_checks_run_from_a_snapshot_whose_model_directory_is_gone(tmp_path, k3_dir):
    from k3doctor.probes.checkpoint import model_fact
    from k3doctor.targets import get_target, gpu_fact_for_target

    live = _mem_results(_check(tmp_path, "live", "--target", "h200", "--model", str(k3_dir), "--select", "MEM",
                               _seed_launch(k3_dir)), k3_dir)
    gone = tmp_path / "was-here" / "Kimi-K3"  # the checkpoint lived on another machine
    fact = model_fact(k3_dir)
    fact.update(dir=str(gone), found_via="option")
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"kind": "k3doctor.snapshot", "schema_version": 1, "tool": "k3doctor",
                                "facts": {"gpu": gpu_fact_for_target(get_target("h200")), "model": fact}}))
    offline = _mem_results(_check(tmp_path, "offline", "--snapshot", str(snap), "--select", "MEM",
                                  _seed_launch(gone)), gone)
    statuses = {c: json.loads(v)[0] for c, v in offline.items()}
    assert statuses == {"MEM001": "pass", "MEM002": "pass", "MEM003": "pass", "MEM004": "pass", "MEM005": "skip"}
    assert offline == live  # the same plan (and the doubled plan of MEM004) from the recorded fact alone


def test_check_with_model_parses_each_shard_header_once(tmp_path, k3_dir, monkeypatch):
    """CKPT + MEM in one run: the scan's parse feeds the planner."""
    import os

    import k3doctor.ckpt.shard_scan as scan_mod

    log = tmp_path / "reads.log"

    def note(what, path):  # O_APPEND writes: counts from any child process too
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{what}\t{os.path.basename(str(path))}\n".encode())
        finally:
            os.close(fd)

    real_scan_read = scan_mod.header_bytes

    def scan_read(path, file, *a, **kw):  # the scan's one read of a header (a memo hit parses none)
        note("ckpt", path)
        return real_scan_read(path, file, *a, **kw)

    monkeypatch.setattr(scan_mod, "header_bytes", scan_read)
    report = _check(tmp_path, "both", "--target", "h200", "--model", str(k3_dir), "--select", "CKPT,MEM",
                    _seed_launch(k3_dir))
    statuses = {r["code"]: r["status"] for r in report["results"]}
    assert all(statuses[c] == "pass" for c in ("CKPT001", "MEM001", "MEM002", "MEM003", "MEM004")), statuses
    reads = [line.split("\t") for line in log.read_text().splitlines()]
    shards = sorted(p.name for p in k3_dir.glob("*.safetensors"))
    assert sorted(f for _, f in reads) == shards  # 96 shards, each header read (and parsed) exactly once
    assert {w for w, _ in reads} == {"ckpt"}


def test_an_empty_directory_says_there_is_nothing_to_plan(tmp_path):
    with pytest.raises(InventoryError) as ei:
        load_inventory(tmp_path)
    msg = str(ei.value)
    assert msg.count(str(tmp_path)) == 1 and "no config.json and no *.safetensors" in msg and "--model" in msg
