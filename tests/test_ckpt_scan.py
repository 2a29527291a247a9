"""The checkpoint scanner, header reader and inventory API on generated checkpoints."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fixtures.checkpoints.generate import (corrupt, make_deepseek_v3_fp8, make_gpt_oss, make_small_real,
                                           shared_skeleton)
from k3doctor.ckpt.header import read_header
from k3doctor.ckpt.inventory import CheckpointError, TensorRecord, iter_tensors, read_config
from k3doctor.ckpt.scan import scan_checkpoint

K3_TOTAL = 1_560_860_324_864


def shared_k3(factory: pytest.TempPathFactory) -> Path:
    """One Kimi-K3 skeleton per test session (generation takes a few seconds)."""
    return shared_skeleton(factory.getbasetemp(), "kimi_k3")


@pytest.fixture(scope="module")
def k3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_k3(tmp_path_factory)


def _strip(fact: dict) -> dict:
    fact = dict(fact)
    fact.pop("seconds")
    return fact


def test_k3_full_scan_is_clean_and_compact(k3: Path) -> None:
    fact = scan_checkpoint(k3)
    assert fact["problems"] == [] and fact["problem_counts"] == {}
    assert fact["totals"]["tensors"] == 497_220
    assert fact["totals"]["data_bytes"] == K3_TOTAL
    assert fact["index"]["total_size"] == K3_TOTAL and fact["index"]["tensors"] == 497_220
    assert fact["config"]["family"] == "kimi_k3" and fact["config"]["fp4"] == "mxfp4"
    assert fact["quant"]["experts_per_layer"] == {"min": 896, "max": 896}
    assert fact["quant"]["expert_layers"] == 92 and fact["quant"]["packed"] == 92 * 896 * 3
    s93 = next(s for s in fact["shards"] if s["file"] == "model-00093-of-000096.safetensors")
    assert s93["header_len"] == 823_008 and s93["size"] == 16_567_507_176
    assert s93["dtype_bytes"]["U8"] == 896 * 17_547_264
    assert len(json.dumps(fact)) < 100_000  # a summary, not the 497k-tensor list


def test_iter_tensors_matches_the_index(k3: Path) -> None:
    seen = 0
    total = 0
    index = json.loads((k3 / "model.safetensors.index.json").read_text())["weight_map"]
    first = None
    for rec in iter_tensors(k3):
        assert isinstance(rec, TensorRecord)
        first = first or rec
        seen += 1
        total += rec.nbytes
        if seen % 997 == 0:
            assert index[rec.name] == rec.shard
    assert seen == 497_220 and total == K3_TOTAL
    assert first.shard == "model-00001-of-000096.safetensors" and isinstance(first.shape, tuple)
    cfg = read_config(k3)
    assert cfg is not None and cfg["text_config"]["num_experts"] == 896


def test_iter_tensors_and_read_config_on_bad_input(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    d = Path(info["model_dir"])
    corrupt(d, "invalid_json")
    with pytest.raises(CheckpointError) as exc:
        list(iter_tensors(d))
    msg = str(exc.value)
    assert "model-00002-of-000005.safetensors" in msg and "\n" not in msg and "k3doctor check" in msg
    corrupt(d, "config_invalid")
    assert read_config(d) is None
    with pytest.raises(CheckpointError, match="not a directory"):
        list(iter_tensors(tmp_path / "nope"))


@pytest.mark.parametrize("maker,kw,family,quant_key", [
    (make_deepseek_v3_fp8, {"full": True}, "deepseek_v3", "fp8"),
    (make_deepseek_v3_fp8, {}, "deepseek_v3", "fp8"),
    (make_gpt_oss, {"full": True}, "gpt_oss", "blocks"),
    (make_gpt_oss, {}, "gpt_oss", "blocks"),
])
def test_other_families_scan_clean(tmp_path: Path, maker, kw, family, quant_key) -> None:
    info = maker(tmp_path / "m", **kw)
    fact = scan_checkpoint(tmp_path / "m")
    assert fact["problem_counts"] == {}, fact["problems"][:3]
    assert fact["config"]["family"] == family
    assert fact["totals"]["data_bytes"] == info["total_size"]
    assert fact["quant"][quant_key] > 0
    lo, hi = fact["quant"]["experts_per_layer"]["min"], fact["quant"]["experts_per_layer"]["max"]
    assert lo == hi == fact["config"]["num_experts"]


@pytest.mark.parametrize("layout", ["local_dir", "hf_cache"])
def test_small_real_scan_with_deep_and_sample_is_clean(tmp_path: Path, layout: str) -> None:
    info = make_small_real(tmp_path / "m", layout=layout)
    fact = scan_checkpoint(info["model_dir"], deep=True, sample=True)
    assert fact["problem_counts"] == {}, fact["problems"]
    assert fact["layout"] == {"local_dir": "hf_local_dir", "hf_cache": "hf_cache"}[layout]
    assert fact["deep"]["verified"] == fact["deep"]["files"] >= 7 and fact["deep"]["mismatched"] == 0
    assert fact["sample"]["shards"] == 5 and fact["sample"]["zero_ranges"] == 0
    if layout == "hf_cache":
        assert fact["repo"] == info["repo"] and fact["revision"] == info["revision"]


# the safetensors library is the reference statement of the format: every header-level corruption
# it refuses, k3doctor refuses too (and names the same file), and it opens what k3doctor accepts
HEADER_CASES = ["truncated_shard", "header_len_beyond_file", "header_len_over_100mb", "lfs_pointer", "invalid_json",
                "non_utf8_header", "unknown_dtype", "shape_dtype_mismatch", "offsets_overlap", "offsets_unsorted",
                "offsets_gap", "data_past_eof", "trailing_bytes", "empty_file"]


@pytest.mark.parametrize("case", HEADER_CASES)
def test_header_reader_agrees_with_safetensors(tmp_path: Path, case: str) -> None:
    safetensors = pytest.importorskip("safetensors")
    info = make_small_real(tmp_path / "m")
    shard = Path(info["model_dir"]) / "model-00002-of-000005.safetensors"
    with safetensors.safe_open(str(shard), framework="np") as f:
        assert len(list(f.keys())) > 100
    assert read_header(str(shard), shard.name).ok
    corrupt(info["model_dir"], case)
    res = read_header(str(shard), shard.name)
    assert not res.ok and all(p["file"] == shard.name for p in res.problems)
    with pytest.raises(Exception):
        with safetensors.safe_open(str(shard), framework="np"):
            pass
    fact = scan_checkpoint(info["model_dir"])
    lib = [p.get("safetensors_error") for p in fact["problems"] if p["file"] == shard.name]
    if case != "empty_file":
        assert any(lib), fact["problems"]


def test_k3_corruptions_found(tmp_path: Path) -> None:
    from fixtures.checkpoints.generate import make_kimi_k3

    d = tmp_path / "Kimi-K3"
    make_kimi_k3(d)
    s42 = d / "model-00042-of-000096.safetensors"
    os.truncate(s42, s42.stat().st_size - 1000)
    idx = json.loads((d / "model.safetensors.index.json").read_text())
    moved = "language_model.model.layers.80.block_sparse_moe.experts.17.w2.weight_scale"
    idx["weight_map"][moved] = "model-00090-of-000096.safetensors"
    (d / "model.safetensors.index.json").write_text(json.dumps(idx))
    par = scan_checkpoint(d)
    kinds = {(p["kind"], p["file"], p.get("tensor")) for p in par["problems"]}
    # the last tensor in offset order (U8 experts, lexicographic: "99" sorts after "895") is the one cut
    assert ("truncated", s42.name, "language_model.model.layers.41.block_sparse_moe.experts.99.w3.weight_scale") in kinds
    assert ("index_tensor_elsewhere", "model-00081-of-000096.safetensors", moved) in kinds
    assert par["problem_counts"] == {"index_tensor_elsewhere": 1, "truncated": 1}


_INDEX_DOCS = [
    {"metadata": {"total_size": 5}, "weight_map": {"a": "x", "b": "y"}},
    {"weight_map": {}, "metadata": {}},
    {"metadata": {"weight_map": {"q": "r"}}, "weight_map": {"a": "x"}},
    {"weight_map": {"a}": "x", "{b": "y}", "c, \"d": "z"}},
    {"weight_map": {"ü": "x"}, "extra": [1, 2, {"k": None}]},
    {"weight_map": {"a": ["x"], "b": 3}},
    {"weight_map": {"a": {"b": "c"}}},
    {"weight_map": 7},
]
_INDEX_TEXTS = [b'{"weight_map": {"a": "x",}}', b'{"weight_map": {"a": "x" "b": "y"}}', b'{"weight_map": {"a\n": "x"}}',
                b'{"weight_map": {"a": "x"}', b'{"weight_map": {"a": "x"}} x', b'{"weight_map": {"a": "x", "a": "z"}}',
                b'{"weight_map": {"a": "x"}, "weight_map": {"b": "y"}}', b'\xef\xbb\xbf{"weight_map": {"a": "x"}}',
                b'{"weight_map": {"\xff": "x"}}', b'[]', b'']


@pytest.mark.parametrize("slice_bytes", [7, 64, 4 << 20])
def test_index_slices_parse_as_json_loads(monkeypatch: pytest.MonkeyPatch, slice_bytes: int) -> None:
    """The sliced index parser returns json.loads' document, key order included, or None (then the
    scan calls json.loads itself); for every layout, slice size and invalid file."""
    from k3doctor.ckpt import index

    monkeypatch.setattr(index, "_SLICE", slice_bytes)
    wm = {f"model.layers.{i}.mlp.experts.{i % 7}.w{i % 3}.weight": f"model-{i % 5:05d}.safetensors" for i in range(3000)}
    texts = [json.dumps(doc, **kw).encode() for doc in [*_INDEX_DOCS, {"metadata": {"total_size": 1}, "weight_map": wm}]
             for kw in ({}, {"indent": 2, "sort_keys": True}, {"separators": (",", ":")}, {"ensure_ascii": False})]
    taken = 0
    for raw in texts + _INDEX_TEXTS:
        got = index.loads_index(raw)
        if got is None:
            continue
        taken += 1
        want = json.loads(raw)
        assert got == want and list(got) == list(want), raw[:200]
        assert list(got["weight_map"]) == list(want["weight_map"])
    assert taken >= 15  # the plain layouts are taken, not all sent to json.loads


def test_index_with_many_braces_in_names_is_linear() -> None:
    """Closing braces inside names do not make the search for the map's end quadratic."""
    import time

    from k3doctor.ckpt.index import loads_index

    wm = {f"t{i}" + "}" * 40: "a.safetensors" for i in range(40_000)}
    raw = json.dumps({"weight_map": wm}).encode()
    t = time.perf_counter()
    assert loads_index(raw) == {"weight_map": wm}
    assert time.perf_counter() - t < 5.0


@pytest.mark.parametrize("offsets", [[0, True], [False, 1], [0, 1.0]])
def test_an_offset_that_is_not_an_integer_is_a_bad_entry(tmp_path: Path, offsets: list) -> None:
    """A JSON boolean or float in data_offsets is refused, as safetensors refuses it (the fast path
    once let a boolean through: ``true`` sums as the integer 1)."""
    import struct

    raw = json.dumps({"a": {"dtype": "U8", "shape": [1], "data_offsets": offsets}}, separators=(",", ":")).encode()
    p = tmp_path / "model.safetensors"
    p.write_bytes(struct.pack("<Q", len(raw)) + raw + b"x")
    res = read_header(str(p), p.name)
    assert [q["kind"] for q in res.problems][:1] == ["bad_entry"], res.problems


@pytest.mark.parametrize("dtype", [{"a": 1}, ["BF16"], None, 7])
def test_a_dtype_that_is_not_a_string_is_an_unknown_dtype(tmp_path: Path, dtype: object) -> None:
    """A list or object as dtype is named as an unknown dtype (it crashed the model probe: unhashable)."""
    import struct

    raw = json.dumps({"a": {"dtype": dtype, "shape": [1], "data_offsets": [0, 1]}}, separators=(",", ":")).encode()
    p = tmp_path / "model.safetensors"
    p.write_bytes(struct.pack("<Q", len(raw)) + raw + b"x")
    res = read_header(str(p), p.name)
    assert [q["kind"] for q in res.problems][:1] == ["unknown_dtype"], res.problems


@pytest.mark.parametrize("shape", [[True, 4], [-2, -2], [2.0, 2], ["2", 2]])
def test_a_shape_that_is_not_non_negative_integers_is_a_bad_entry(tmp_path: Path, shape: list) -> None:
    """safetensors refuses a boolean, negative, float or string dimension; the fast path once let
    [True, 4] and [-2, -2] through (their products are the right byte count)."""
    import struct

    raw = json.dumps({"a": {"dtype": "U8", "shape": shape, "data_offsets": [0, 4]}}, separators=(",", ":")).encode()
    p = tmp_path / "model.safetensors"
    p.write_bytes(struct.pack("<Q", len(raw)) + raw + b"xxxx")
    res = read_header(str(p), p.name)
    assert [q["kind"] for q in res.problems][:1] == ["bad_entry"], res.problems
    safetensors = pytest.importorskip("safetensors")
    with pytest.raises(Exception):
        with safetensors.safe_open(str(p), framework="np"):
            pass
