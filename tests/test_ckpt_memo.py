"""The header memo and the index check against the shards (issue 16): byte for byte the full path.

``k3doctor.ckpt.shard_scan.MEMO = False`` parses every header and the whole index (the path before the
memo); each case here scans one checkpoint both ways and compares the ``model`` fact (with the memory
planner's inventory), the JSON of ``check --select CKPT,MEM`` and the raw rows a sink receives. The
crafted cases change one thing in one shard or in the index, and the memo must not apply there.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path
from typing import Any, Callable

import pytest

import k3doctor.ckpt.shard_scan as shard_scan
from fixtures.checkpoints.generate import (CACHE_ONLY_CASES, CASES, _write_skeleton, corrupt, k3_inventory,
                                           make_deepseek_v3_fp8, make_gpt_oss, make_small_real, shared_skeleton,
                                           small_k3_config)
from k3doctor.ckpt.memo import HeaderMemo
from k3doctor.ckpt.scan import scan_checkpoint
from k3doctor.probes.checkpoint import model_fact

INDEX = "model.safetensors.index.json"


class Recorder:
    """A rows sink without ``rows_like``: it receives every shard's rows, derived or parsed."""

    def __init__(self) -> None:
        self.log: list[tuple] = []

    def rows(self, file: str, names: list[str], dtypes: list[str], nbytes: list[int], *, large: bool = False) -> bool:
        self.log.append(("rows", file, list(names), list(dtypes), list(nbytes), large))
        return True

    def end(self, file: str) -> None:
        self.log.append(("end", file))

    def unreadable(self, file: str, kind: str) -> None:
        self.log.append(("unreadable", file, kind))

    def finish(self, config: Any) -> Any:
        return None


class Seen:
    """What the memo path did: the shards that reused a template, whether the index was verified."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.derived: list[str] = []
        self.verified: list[bool] = []
        real_derived, real_verify = shard_scan._derived, shard_scan.verify_runs

        def derived(res: Any, *a: Any) -> Any:
            self.derived.append(res.file)
            return real_derived(res, *a)

        def verify(raw: bytes, split: Any, known: Any) -> Any:
            got = real_verify(raw, split, known)
            self.verified.append(got is not None)
            return got

        monkeypatch.setattr(shard_scan, "_derived", derived)
        monkeypatch.setattr(shard_scan, "verify_runs", verify)


def _fact_json(d: Path, monkeypatch: pytest.MonkeyPatch, memo: bool) -> str:
    monkeypatch.setattr(shard_scan, "MEMO", memo)
    fact = model_fact(d)
    fact.pop("seconds")
    return json.dumps(fact)


def _rows(d: Path, monkeypatch: pytest.MonkeyPatch, memo: bool) -> list[tuple]:
    monkeypatch.setattr(shard_scan, "MEMO", memo)
    rec = Recorder()
    scan_checkpoint(d, rows=rec)
    return rec.log


def same_both_ways(d: Path, monkeypatch: pytest.MonkeyPatch) -> Seen:
    """The fact and the rows are identical with and without the memo; returns what the memo did."""
    full = _fact_json(d, monkeypatch, False)
    full_rows = _rows(d, monkeypatch, False)
    seen = Seen(monkeypatch)
    assert _fact_json(d, monkeypatch, True) == full
    assert _rows(d, monkeypatch, True) == full_rows
    return seen


# ------------------------------------------------------------------------------------------
# real layouts
# ------------------------------------------------------------------------------------------
def test_k3_skeleton_memo_equals_full_path(tmp_path_factory: pytest.TempPathFactory,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    k3 = shared_skeleton(tmp_path_factory.getbasetemp(), "kimi_k3")
    seen = same_both_ways(k3, monkeypatch)
    assert len(set(seen.derived)) >= 85  # one real parse per distinct shape (6 of 96 here)
    assert seen.verified and all(seen.verified)  # the 60 MB index checked without building its map


def test_k3_skeleton_check_json_equal(tmp_path_factory: pytest.TempPathFactory,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole report (CKPT and MEM from the same fact) is byte-identical but for the timings."""
    from click.testing import CliRunner

    from k3doctor.cli import main

    k3 = shared_skeleton(tmp_path_factory.getbasetemp(), "kimi_k3")
    outs = []
    for memo in (False, True):
        monkeypatch.setattr(shard_scan, "MEMO", memo)
        r = CliRunner().invoke(main, ["check", "--model", str(k3), "--select", "CKPT,MEM", "--target", "h200",
                                      "--format", "json", "--", "sglang", "serve", "--model-path", str(k3),
                                      "--tp-size", "16", "--ep-size", "16"], catch_exceptions=False)
        doc = json.loads(r.stdout)
        for res in doc.get("results", []):
            res.pop("duration_s", None)
        doc.pop("duration_s", None)
        doc.pop("generated", None)
        doc.pop("facts_seconds", None)
        outs.append((r.exit_code, _no_timing(doc)))
    assert outs[0] == outs[1]
    statuses = {res["code"]: res["status"] for res in outs[0][1]["results"]}
    assert statuses["CKPT002"] == "pass" and statuses["MEM001"] in ("pass", "fail"), statuses


def _no_timing(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _no_timing(v) for k, v in obj.items() if k not in ("seconds", "duration_s", "time_unix", "elapsed_s")}
    if isinstance(obj, list):
        return [_no_timing(v) for v in obj]
    return obj


@pytest.mark.parametrize("maker", [make_deepseek_v3_fp8, make_gpt_oss])
def test_other_families_equal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, maker: Callable) -> None:
    maker(tmp_path / "m")
    same_both_ways(tmp_path / "m", monkeypatch)


@pytest.mark.parametrize("case", [None, *CASES])
def test_small_real_and_every_corruption_equal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               case: str | None) -> None:
    info = make_small_real(tmp_path / "m", layout="hf_cache" if case in CACHE_ONLY_CASES else "local_dir")
    d = Path(info["model_dir"])
    if case is not None:
        corrupt(d, case)
    same_both_ways(d, monkeypatch)


# ------------------------------------------------------------------------------------------
# crafted near-identical headers
# ------------------------------------------------------------------------------------------
LAYERS = 12


@pytest.fixture(scope="module")
def mini_k3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scaled-down Kimi-K3 of 12 layers (one per shard; layers 1-9 and 10-11 differ in digits)."""
    c = small_k3_config()
    tc = c["text_config"]
    tc["num_hidden_layers"] = LAYERS
    tc["linear_attn_config"].update(full_attn_layers=[4, 8, 12], kda_layers=[i for i in range(1, 13) if i % 4])
    d = tmp_path_factory.mktemp("mini") / "k3"
    _write_skeleton(d, k3_inventory(c), c, metadata=None)
    return d


def _shard(d: Path, layer: int) -> Path:
    return d / f"model-{layer + 1:05d}-of-{LAYERS + 3:06d}.safetensors"


def _header(p: Path) -> tuple[dict, int]:
    with open(p, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)), n


def _rewrite(p: Path, header: dict, *, pad: bool = True, data_len: int | None = None) -> None:
    """Write ``header`` (compact JSON, in this key order) and a sparse data region."""
    raw = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        raw += b" " * (-len(raw) % 8)
    end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + (end if data_len is None else data_len))


def _edit_index(d: Path, fn: Callable[[dict], Any], **dump: Any) -> None:
    doc = json.loads((d / INDEX).read_text())
    fn(doc)
    (d / INDEX).write_text(json.dumps(doc, **(dump or {"indent": 2})))


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_mini_k3_memo_applies(mini_k3: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = same_both_ways(mini_k3, monkeypatch)
    # shapes: the dense layer 0, the KDA MoE layers, the MLA MoE layers (3, 7, 11)
    assert len(set(seen.derived)) == LAYERS - 3
    assert all(seen.verified)


def _swap_offsets(h: dict) -> None:
    """One offset changed, header still valid: two adjacent tensors of one size trade places."""
    items = sorted(((k, v) for k, v in h.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0])
    for (ka, a), (kb, b) in zip(items, items[1:]):
        sa = a["data_offsets"][1] - a["data_offsets"][0]
        if sa == b["data_offsets"][1] - b["data_offsets"][0] and a["dtype"] == b["dtype"] and a["shape"] == b["shape"]:
            a["data_offsets"], b["data_offsets"] = b["data_offsets"], a["data_offsets"]
            return
    raise AssertionError("no two adjacent tensors of one size")


def _dtype(h: dict) -> None:
    name = next(k for k, v in h.items() if k != "__metadata__" and v["dtype"] == "BF16")
    h[name]["dtype"] = "F16"  # same size: still a valid header


def _scale_dtype(h: dict) -> None:
    name = next(k for k in h if k.endswith(".w1.weight_scale"))
    h[name]["dtype"] = "I8"  # a quantisation problem (CKPT007)


def _metadata_token(h: dict) -> None:
    h["__metadata__"] = {"format": "pt", "note": "language_model.model.layers.5.x"}


def _metadata_plain(h: dict) -> None:
    h["__metadata__"] = {"format": "pt"}


def _bad_span(h: dict) -> None:
    name = next(k for k in h if k.endswith("input_layernorm.weight"))
    h[name]["shape"] = [h[name]["shape"][0] + 1]  # a shape mismatch (CKPT002)


def _rename(h: dict, layer: int) -> Callable[[dict], None]:
    def fn(d: dict) -> None:
        old = next(k for k in list(h) if k.endswith("input_layernorm.weight"))
        new = old.replace("input_layernorm", "input_layernorm2")
        d["weight_map"][new] = d["weight_map"].pop(old)
    return fn


HEADER_EDITS = {"offset": _swap_offsets, "dtype": _dtype, "scale_dtype": _scale_dtype,
                "metadata_token": _metadata_token, "metadata": _metadata_plain, "bad_span": _bad_span}


@pytest.mark.parametrize("layer", [1, 2, 10])  # the first of its shape (a template), a later one, 2 digits
@pytest.mark.parametrize("edit", sorted(HEADER_EDITS))
def test_one_header_changed(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch, edit: str,
                            layer: int) -> None:
    d = _copy(mini_k3, tmp_path / "k3")
    p = _shard(d, layer)
    h, _ = _header(p)
    HEADER_EDITS[edit](h)
    _rewrite(p, h)
    seen = same_both_ways(d, monkeypatch)
    assert p.name not in seen.derived


@pytest.mark.parametrize("layer", [1, 5])
def test_one_name_changed(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch, layer: int) -> None:
    d = _copy(mini_k3, tmp_path / "k3")
    p = _shard(d, layer)
    h, _ = _header(p)
    old = next(k for k in h if k.endswith("input_layernorm.weight"))
    h = {(k.replace("input_layernorm", "input_layernorm2") if k == old else k): v for k, v in h.items()}
    _rewrite(p, h)
    same_both_ways(d, monkeypatch)  # the index still names the old tensor: CKPT005 both ways
    _edit_index(d, _rename({old: None}, layer))
    seen = same_both_ways(d, monkeypatch)
    assert p.name not in seen.derived


def test_token_twice_in_a_name(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name holding the layer token a second time makes its shard no template, and a shard
    whose header differs from it only there is no hit."""
    d = _copy(mini_k3, tmp_path / "k3")
    for layer in (1, 2):
        p = _shard(d, layer)
        h, _ = _header(p)
        old = next(k for k in h if k.endswith("input_layernorm.weight"))
        new = old.replace("input_layernorm", f"x.layers.{layer}.input_layernorm")
        _rewrite(p, {(new if k == old else k): v for k, v in h.items()})
        _edit_index(d, lambda doc, o=old, n=new: doc["weight_map"].__setitem__(n, doc["weight_map"].pop(o)))
    seen = same_both_ways(d, monkeypatch)
    assert _shard(d, 2).name not in seen.derived


@pytest.mark.parametrize("extra", [+8, -8])
def test_same_header_other_file_length(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch,
                                       extra: int) -> None:
    """Trailing bytes or a cut data region with a header byte-identical to a verified one."""
    d = _copy(mini_k3, tmp_path / "k3")
    p = _shard(d, 5)
    os.truncate(p, p.stat().st_size + extra)
    seen = same_both_ways(d, monkeypatch)
    assert p.name not in seen.derived


def test_padding_differs(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trailing JSON whitespace is not part of the shape (json.loads ignores it)."""
    d = _copy(mini_k3, tmp_path / "k3")
    p = _shard(d, 5)
    h, _ = _header(p)
    raw = json.dumps(h, separators=(",", ":")).encode() + b" \t\n\r" * 5
    end = max(v["data_offsets"][1] for v in h.values())
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + end)
    seen = same_both_ways(d, monkeypatch)
    assert p.name in seen.derived


def test_a_nul_byte_in_a_header(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _copy(mini_k3, tmp_path / "k3")
    p = _shard(d, 5)
    raw = bytearray(p.read_bytes())
    (n,) = struct.unpack("<Q", raw[:8])
    raw[8 + n - 1] = 0  # the last padding byte
    p.write_bytes(bytes(raw))
    seen = same_both_ways(d, monkeypatch)
    assert p.name not in seen.derived


def test_duplicated_shard(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard copied under a second name: the same header, every name twice."""
    d = _copy(mini_k3, tmp_path / "k3")
    shutil.copy(_shard(d, 5), d / "model-00099-of-000015.safetensors")
    same_both_ways(d, monkeypatch)
    (d / INDEX).unlink()
    same_both_ways(d, monkeypatch)


def _move_one(doc: dict) -> None:
    wm = doc["weight_map"]
    name = next(k for k in wm if ".layers.6." in k)
    wm[name] = next(v for k, v in wm.items() if ".layers.7." in k)


def _drop_one(doc: dict) -> None:
    wm = doc["weight_map"]
    del wm[next(k for k in wm if ".layers.6." in k)]


def _add_one(doc: dict) -> None:
    wm = doc["weight_map"]
    wm["language_model.model.layers.6.extra.weight"] = next(v for k, v in wm.items() if ".layers.6." in k)
    doc["weight_map"] = dict(sorted(wm.items()))


def _drop_shard(doc: dict) -> None:
    wm = doc["weight_map"]
    doc["weight_map"] = {k: v for k, v in wm.items() if ".layers.6." not in k}


def _reverse(doc: dict) -> None:
    doc["weight_map"] = dict(reversed(list(doc["weight_map"].items())))


def _interleave(doc: dict) -> None:
    """Two shards' runs interleaved (every name still in its shard)."""
    items = list(doc["weight_map"].items())
    a = [kv for kv in items if ".layers.6." in kv[0]]
    b = [kv for kv in items if ".layers.7." in kv[0]]
    rest = [kv for kv in items if kv not in a and kv not in b]
    mixed = [x for pair in zip(a, b) for x in pair] + a[len(b):] + b[len(a):]
    doc["weight_map"] = dict(rest[:5] + mixed + rest[5:])


def _total(doc: dict) -> None:
    doc["metadata"]["total_size"] += 1


def _ghost_file(doc: dict) -> None:
    wm = doc["weight_map"]
    name = next(k for k in wm if ".layers.6." in k)
    wm[name] = "model-00077-of-000015.safetensors"


INDEX_EDITS: dict[str, tuple[Callable[[dict], None], dict]] = {
    "moved": (_move_one, {}), "dropped": (_drop_one, {}), "added": (_add_one, {}),
    "shard_dropped": (_drop_shard, {}), "reversed": (_reverse, {}), "interleaved": (_interleave, {}),
    "total": (_total, {}), "ghost_file": (_ghost_file, {}), "compact": (lambda doc: None, {"separators": (",", ":")}),
    "tabs": (lambda doc: None, {"indent": "\t"}),
}


@pytest.mark.parametrize("edit", sorted(INDEX_EDITS))
def test_index_changed(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch, edit: str) -> None:
    d = _copy(mini_k3, tmp_path / "k3")
    fn, dump = INDEX_EDITS[edit]
    _edit_index(d, fn, **dump)
    seen = same_both_ways(d, monkeypatch)
    if edit in ("compact", "tabs", "total"):
        assert all(seen.verified)
    elif edit != "reversed":
        assert not any(seen.verified)


def test_index_duplicate_key_and_missing(tmp_path: Path, mini_k3: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _copy(mini_k3, tmp_path / "k3")
    text = (d / INDEX).read_text()
    first = text.index('"language_model.model.layers.6.')
    line = text[first:text.index("\n", first) + 1]
    (d / INDEX).write_text(text[:first] + line + "    " + text[first:])  # the same entry twice
    seen = same_both_ways(d, monkeypatch)
    assert not any(seen.verified)
    (d / INDEX).unlink()
    same_both_ways(d, monkeypatch)


def test_memo_bytes_are_bounded(mini_k3: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MEMO_BYTES of kept headers no new shape is memoised: every shard takes the full path."""
    import k3doctor.ckpt.memo as memo

    monkeypatch.setattr(memo, "MEMO_BYTES", 1000)
    seen = same_both_ways(mini_k3, monkeypatch)
    assert not seen.derived


def test_memo_is_per_scan() -> None:
    """A memo never outlives its scan (a shape verified in one directory says nothing of another)."""
    assert HeaderMemo().shapes == {}
