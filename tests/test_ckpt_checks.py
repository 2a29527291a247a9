"""CKPT checks: every corruption case yields a finding naming the file (and tensor) with the fix."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from fixtures.checkpoints.generate import CACHE_ONLY_CASES, CASES, SMALL_REPO, corrupt, make_small_real
from k3doctor.check import call_run
from k3doctor.check import Check
from k3doctor.checks import ckpt as ckpt_checks
from k3doctor.checks.ckpt import CHECKS, KIND_TO_CHECK, refetch_command
from k3doctor.ckpt.scan import scan_checkpoint
from k3doctor.facts import Facts, ProbeContext
from k3doctor.model import Finding, Severity, Skip
from k3doctor.probes.checkpoint import probe_model

#: case -> the check that must report it
EXPECTED: dict[str, str] = {
    "truncated_shard": "CKPT003", "header_len_beyond_file": "CKPT002", "header_len_over_100mb": "CKPT002",
    "lfs_pointer": "CKPT002", "invalid_json": "CKPT002", "non_utf8_header": "CKPT002", "unknown_dtype": "CKPT002",
    "shape_dtype_mismatch": "CKPT002", "offsets_overlap": "CKPT002", "offsets_unsorted": "CKPT002",
    "offsets_gap": "CKPT002", "data_past_eof": "CKPT003", "trailing_bytes": "CKPT003", "missing_shard": "CKPT005",
    "shard_not_in_index": "CKPT005", "index_tensor_absent": "CKPT005", "index_tensor_other_shard": "CKPT005",
    "tensor_in_two_shards": "CKPT005", "wrong_total_size": "CKPT005", "index_missing": "CKPT005",
    "index_invalid": "CKPT005", "config_missing": "CKPT006", "config_invalid": "CKPT006",
    "config_unknown_arch": "CKPT006", "quant_scale_missing": "CKPT007", "quant_scale_shape": "CKPT007",
    "quant_packed_shape": "CKPT007", "quant_dtype": "CKPT007", "expert_missing": "CKPT007",
    "expert_count_config": "CKPT007", "empty_file": "CKPT002", "shard_is_directory": "CKPT004",
    "dangling_symlink": "CKPT004", "unreadable_file": "CKPT004", "incomplete_download": "CKPT008",
    "zero_filled_tail": "CKPT010", "bit_flip": "CKPT009",
}
#: cases only a content read can see
CONTENT_ONLY = {"zero_filled_tail", "bit_flip"}


def run_checks(fact: dict[str, Any]) -> tuple[list[Finding], dict[str, str]]:
    facts = Facts({"model": fact})
    findings: list[Finding] = []
    skipped: dict[str, str] = {}
    for cls in CHECKS:
        try:
            findings.extend(call_run(cls(), facts))
        except Skip as exc:
            skipped[cls.code] = exc.reason
    return findings, skipped


def test_every_case_has_an_expectation() -> None:
    assert set(EXPECTED) == set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_corruption_yields_finding_naming_file_and_fix(tmp_path: Path, case: str, emulate_permissions: None) -> None:
    info = make_small_real(tmp_path / "m", layout="hf_cache" if case in CACHE_ONLY_CASES else "local_dir",
                           repo=SMALL_REPO)
    d = info["model_dir"]
    what = corrupt(d, case)
    try:
        fact = scan_checkpoint(d, deep=True, sample=True, repo=None)
        json.dumps(fact)  # snapshot-safe
        findings, _ = run_checks(fact)
        code = EXPECTED[case]
        mine = [f for f in findings if f.code == code]
        assert mine, (case, fact["problem_counts"])
        text = " ".join(f.message + " " + f.subject for f in mine)
        assert what["file"] in text, (case, text)
        if what["tensor"]:
            assert what["tensor"].rstrip(".*").rsplit(".experts.", 1)[0] in text, (case, text)
        assert all(f.fix for f in mine)
        named = [f for f in mine if what["file"] in f.message + f.subject]
        assert any(what["file"] in f.fix or "hf download" in f.fix for f in named), [f.fix for f in named]
        if case not in CONTENT_ONLY:  # header/index/config problems need no content read
            fast, _ = run_checks(scan_checkpoint(d))
            assert any(f.code == code for f in fast), case
    finally:
        if case == "unreadable_file":
            os.chmod(Path(d, what["file"]).resolve(), 0o644)


def test_clean_checkpoint_passes_every_check(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    findings, skipped = run_checks(scan_checkpoint(info["model_dir"], deep=True, sample=True))
    assert findings == [] and skipped == {}


def test_deep_and_sample_checks_skip_unless_asked(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    findings, skipped = run_checks(scan_checkpoint(info["model_dir"]))
    assert findings == []
    assert "--deep" in skipped["CKPT009"] and "--sample" in skipped["CKPT010"]


def test_missing_directory_is_one_finding(tmp_path: Path) -> None:
    findings, skipped = run_checks(scan_checkpoint(tmp_path / "nope"))
    assert [f.code for f in findings] == ["CKPT001"]
    assert "nope" in findings[0].message and "--model" in findings[0].fix
    assert "CKPT002" in skipped


def test_fix_commands_per_layout(tmp_path: Path) -> None:
    cache = make_small_real(tmp_path / "hub", layout="hf_cache")
    fact = scan_checkpoint(cache["model_dir"])
    cmd = refetch_command(fact, "model-00002-of-000005.safetensors")
    assert cmd.startswith(f"hf download {SMALL_REPO} model-00002-of-000005.safetensors --force-download")
    assert f"--revision {cache['revision']}" in cmd and f"--cache-dir {tmp_path / 'hub'}" in cmd
    local = make_small_real(tmp_path / "local")
    fact = scan_checkpoint(local["model_dir"])
    cmd = refetch_command(fact, "config.json")
    assert "<repo-id>" in cmd and "--hf-repo" in cmd and "rsync" in cmd
    fact = scan_checkpoint(local["model_dir"], repo="moonshotai/Kimi-K3", repo_source="option")
    assert refetch_command(fact, "config.json").startswith(
        f"hf download moonshotai/Kimi-K3 config.json --local-dir {tmp_path / 'local'} --force-download")


def test_checks_run_from_a_snapshot_round_trip(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    corrupt(info["model_dir"], "truncated_shard")
    fact = scan_checkpoint(info["model_dir"], deep=True)
    live, _ = run_checks(fact)
    stored, _ = run_checks(json.loads(json.dumps(fact)))
    assert [f.to_dict() for f in live] == [f.to_dict() for f in stored] and live


def test_problem_cap_reports_the_rest(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    d = Path(info["model_dir"])
    idx = json.loads((d / "model.safetensors.index.json").read_text())
    for i in range(80):
        idx["weight_map"][f"ghost.{i}.weight"] = "model-00001-of-000005.safetensors"
    (d / "model.safetensors.index.json").write_text(json.dumps(idx))
    fact = scan_checkpoint(d)
    assert fact["problem_counts"]["index_tensor_absent"] == 80
    findings, _ = run_checks(fact)
    absent = [f for f in findings if f.code == "CKPT005"]
    assert len(absent) == 51 and "30 more" in absent[-1].message


def test_every_problem_kind_maps_to_a_check() -> None:
    src = Path(ckpt_checks.__file__).parent.parent / "ckpt"
    text = "".join(p.read_text() for p in src.glob("*.py"))
    emitted = set(re.findall(r'problem\(\s*"([a-z0-9_]+)"', text))
    assert len(emitted) > 40
    # kinds built as f"{what}_…" for what in (config, index)
    suffixes = set(re.findall(r'problem\(f"\{what\}_([a-z]+)"', text))
    assert suffixes == {"unreadable", "invalid"}
    emitted |= {f"{w}_{s}" for w in ("config", "index") for s in suffixes}
    assert emitted - set(KIND_TO_CHECK) == set(), emitted - set(KIND_TO_CHECK)


@pytest.mark.parametrize("cls", CHECKS)
def test_check_docs_have_the_sections(cls: type[Check]) -> None:
    doc = cls.doc()
    for section in ("## What it checks", "## Why it matters", "## How to fix"):
        assert section in doc, (cls.code, section)
    assert cls.title() and cls.family() == "CKPT"


# -- the probe --------------------------------------------------------------------------------
def test_probe_uses_option_then_launch_then_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = make_small_real(tmp_path / "local")
    fact = probe_model(ProbeContext(options={"model_dir": local["model_dir"], "hf_repo": "org/name"}))
    assert fact["found_via"] == "option" and fact["repo"] == "org/name" and fact["repo_source"] == "option"

    facts = Facts({"launch": {"model": local["model_dir"]}})
    fact = probe_model(ProbeContext(options={}, facts=facts))
    assert fact["found_via"] == "launch" and fact["problem_counts"] == {}

    make_small_real(tmp_path / "hub", layout="hf_cache")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    facts = Facts({"launch": {"model": SMALL_REPO}})
    fact = probe_model(ProbeContext(options={}, facts=facts))
    assert fact["found_via"] == "launch-hf-cache" and fact["repo"] == SMALL_REPO and fact["layout"] == "hf_cache"

    facts = Facts({"launch": {"model": "moonshotai/Kimi-K3"}})
    with pytest.raises(Skip, match="no local copy"):
        probe_model(ProbeContext(options={}, facts=facts))
    with pytest.raises(Skip, match="--model DIR"):
        probe_model(ProbeContext(options={}))


def test_probe_progress_callback_and_sample_count(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    calls: list[tuple[int, int]] = []
    fact = probe_model(ProbeContext(options={"model_dir": info["model_dir"], "deep": True, "jobs": 2, "sample": 3,
                                             "progress": lambda d, t: calls.append((d, t))}, timeout=60))
    json.dumps(fact)  # the callable is an option, never part of the fact
    assert "progress" not in fact
    assert calls and calls[-1][0] == calls[-1][1] == fact["deep"]["bytes"]
    assert max(c[0] for c in calls) == fact["deep"]["bytes"]
    assert fact["sample"]["ranges_per_shard"] == 3 and fact["deep"]["jobs"] == 2


def test_broken_progress_callback_does_not_break_verification(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")

    def boom(done: int, total: int) -> None:
        raise RuntimeError("display gone")

    fact = scan_checkpoint(info["model_dir"], deep=True, progress=boom)
    assert fact["deep"]["verified"] == fact["deep"]["files"] > 0


def test_hash_deadline_reports_unfinished_files(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    fact = scan_checkpoint(info["model_dir"], deep=True, deadline=0.0)
    findings, _ = run_checks(fact)
    errs = [f for f in findings if f.code == "CKPT009" and "could not be hashed" in f.message]
    assert errs and all("--probe-timeout" in f.fix for f in errs)
    assert all(f.severity is Severity.ERROR for f in errs)


def test_cli_check_exit_codes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from k3doctor.cli import main

    info = make_small_real(tmp_path / "m")
    out = tmp_path / "report.json"
    args = ["check", "--model", info["model_dir"], "--select", "CKPT", "--format", "json", "-o", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    corrupt(info["model_dir"], "truncated_shard")
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1, res.output
    report = json.loads(out.read_text())
    assert report["exit_code"] == 1
    assert {f["code"] for f in report["findings"]} == {"CKPT003"}


def test_probe_resolves_hub_cache_repo_folder_and_launch_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = make_small_real(tmp_path / "hub", layout="hf_cache")
    repo_dir = Path(info["model_dir"]).parent.parent
    fact = probe_model(ProbeContext(options={"model_dir": str(repo_dir)}))
    assert fact["found_via"] == "option-hf-cache-repo" and fact["dir"] == info["model_dir"]
    assert fact["problem_counts"] == {} and fact["repo"] == SMALL_REPO
    # the engine's cache (from the launch command's env) wins over this process's
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    facts = Facts({"launch": {"model": SMALL_REPO, "env": {"HF_HUB_CACHE": str(tmp_path / "hub")}}})
    fact = probe_model(ProbeContext(options={}, facts=facts))
    assert fact["found_via"] == "launch-hf-cache" and fact["dir"] == info["model_dir"]


def _raw_shard(path: Path, header: Any, data: bytes = b"") -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data)


@pytest.mark.parametrize("what,code,needle", [
    ("fifo", "CKPT004", "not a regular file"),
    ("header_list", "CKPT002", "JSON list"),
    ("bad_metadata", "CKPT002", "__metadata__"),
    ("f4_misaligned", "CKPT002", "not a whole number of bytes"),
    ("float_offsets", "CKPT002", "malformed header entry"),
    ("config_dir", "CKPT006", "is a directory"),
    ("weight_map_list", "CKPT005", "weight_map"),
])
def test_odd_inputs_become_findings(tmp_path: Path, what: str, code: str, needle: str) -> None:
    info = make_small_real(tmp_path / "m")
    d = Path(info["model_dir"])
    extra = d / "model-00009-of-000009.safetensors"
    if what == "fifo":
        os.mkfifo(extra)
    elif what == "header_list":
        _raw_shard(extra, [1, 2, 3])
    elif what == "bad_metadata":
        _raw_shard(extra, {"__metadata__": {"format": 1}, "x": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}},
                   b"\x01\x02")
    elif what == "f4_misaligned":
        _raw_shard(extra, {"x": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, b"\x01\x02")
    elif what == "float_offsets":
        _raw_shard(extra, {"x": {"dtype": "U8", "shape": [2], "data_offsets": [0.0, 2.0]}}, b"\x01\x02")
    elif what == "config_dir":
        (d / "config.json").unlink()
        (d / "config.json").mkdir()
    elif what == "weight_map_list":
        (d / "model.safetensors.index.json").write_text('{"metadata": {}, "weight_map": []}')
    fact = scan_checkpoint(d)
    findings, _ = run_checks(fact)
    mine = [f for f in findings if f.code == code]
    assert any(needle in f.message for f in mine), [f.message for f in findings]


def test_valid_sub_byte_dtype_passes(tmp_path: Path) -> None:
    d = tmp_path / "f4"
    d.mkdir()
    _raw_shard(d / "model.safetensors", {"a": {"dtype": "F4", "shape": [4, 2], "data_offsets": [0, 4]},
                                         "b": {"dtype": "F8_E8M0", "shape": [4], "data_offsets": [4, 8]}}, bytes(range(8)))
    (d / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}')
    fact = scan_checkpoint(d)
    assert fact["problem_counts"] == {} and fact["totals"]["data_bytes"] == 8
    assert fact["shards"][0]["dtype_bytes"] == {"F4": 4, "F8_E8M0": 4}
