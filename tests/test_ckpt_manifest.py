"""Manifests (create on the download node, verify offline) and the hashing primitives."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fixtures.checkpoints.generate import corrupt, make_small_real
from k3doctor.check import call_run
from k3doctor.checks.ckpt import CKPT009
from k3doctor.ckpt.hashing import HashJob, hash_files, sample_file
from k3doctor.ckpt.manifest import ManifestError, create_manifest, load_manifest
from k3doctor.ckpt.scan import scan_checkpoint
from k3doctor.commands.manifest import command as manifest_command
from k3doctor.facts import Facts

SHARD2 = "model-00002-of-000005.safetensors"


def ckpt009(fact: dict) -> list:
    return list(call_run(CKPT009(), Facts({"model": fact})))


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return Path(make_small_real(tmp_path / "m")["model_dir"])


@pytest.fixture
def manifest(tmp_path: Path, model: Path) -> Path:
    out = tmp_path / "m.json"
    res = CliRunner().invoke(manifest_command, ["create", str(model), "-o", str(out), "--jobs", "2", "--no-progress"])
    assert res.exit_code == 0, res.output
    return out


def test_manifest_records_every_file(manifest: Path, model: Path) -> None:
    doc = load_manifest(manifest)
    assert doc["kind"] == "k3doctor.manifest" and doc["schema_version"] == 1
    files = doc["files"]
    assert ".cache" not in " ".join(files) and SHARD2 in files and "config.json" in files
    for name, rec in files.items():
        data = (model / name).read_bytes()
        assert rec == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_air_gapped_copy_verifies_against_manifest(tmp_path: Path, manifest: Path, model: Path) -> None:
    copy = tmp_path / "airgapped"
    shutil.copytree(model, copy, ignore=shutil.ignore_patterns(".cache"))
    fact = scan_checkpoint(copy, manifest=manifest)
    assert fact["deep"]["source"] == "manifest"
    assert fact["deep"]["verified"] == fact["deep"]["files"] == len(load_manifest(manifest)["files"])
    assert ckpt009(fact) == []
    # without hashes recorded anywhere, --deep says so instead of passing silently
    fact = scan_checkpoint(copy, deep=True)
    (f,) = ckpt009(fact)
    assert "no locally recorded sha256" in f.message and "manifest create" in f.fix


def test_manifest_catches_flipped_bit_and_size_changes(manifest: Path, model: Path) -> None:
    corrupt(model, "bit_flip")
    fact = scan_checkpoint(model, manifest=manifest)
    (f,) = ckpt009(fact)
    assert SHARD2 in f.message and f.evidence["source"] == "manifest" and "hf download" in f.fix
    corrupt(model, "trailing_bytes")
    fact = scan_checkpoint(model, manifest=manifest)
    sizes = [p for p in fact["problems"] if p["kind"] == "size_mismatch"]
    assert sizes and sizes[0]["file"] == SHARD2 and sizes[0]["size"] == sizes[0]["expected_size"] + 4096
    assert fact["deep"]["files"] == len(load_manifest(manifest)["files"]) - 1  # not hashed: size decides


def test_manifest_missing_and_extra_files(tmp_path: Path, manifest: Path, model: Path) -> None:
    corrupt(model, "missing_shard")
    corrupt(model, "shard_not_in_index")
    fact = scan_checkpoint(model, manifest=manifest)
    kinds = {p["kind"]: p["file"] for p in fact["problems"]}
    assert kinds["manifest_file_missing"] == SHARD2
    assert kinds["manifest_extra"] == "model-00006-of-000006.safetensors"


@pytest.mark.parametrize("content,needle", [
    ("{not json", "not valid JSON"),
    ('{"kind": "something.else"}', "not a k3doctor manifest"),
    ('{"kind": "k3doctor.manifest", "schema_version": 9, "files": {}}', "schema_version 9"),
    ('{"kind": "k3doctor.manifest", "schema_version": 1, "files": {"../x": {"size": 1, "sha256": "' + "a" * 64 + '"}}}',
     "bad entry"),
    ('{"kind": "k3doctor.manifest", "schema_version": 1, "files": {"a": {"size": 1, "sha256": "xyz"}}}', "bad entry"),
])
def test_bad_manifest_is_one_line_finding(tmp_path: Path, model: Path, content: str, needle: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(ManifestError) as exc:
        load_manifest(bad)
    assert needle in str(exc.value) and str(bad) in str(exc.value) and "\n" not in str(exc.value)
    (f,) = ckpt009(scan_checkpoint(model, manifest=bad))
    assert needle in f.message and "manifest create" in f.fix


def test_manifest_from_another_repo_is_refused(tmp_path: Path, model: Path) -> None:
    doc = create_manifest(model, repo="org/other-model")
    p = tmp_path / "other.json"
    p.write_text(json.dumps(doc))
    fact = scan_checkpoint(model, manifest=p, repo="moonshotai/Kimi-K3")
    msgs = [f.message for f in ckpt009(fact)]
    assert any("org/other-model" in m and "moonshotai/Kimi-K3" in m for m in msgs)


def test_manifest_cli_errors_are_one_line(tmp_path: Path, model: Path) -> None:
    res = CliRunner().invoke(manifest_command, ["create", str(model), "-o", str(model / "m.json")])
    assert res.exit_code == 2 and "outside the model directory" in res.output
    assert not (model / "m.json").exists()
    res = CliRunner().invoke(manifest_command, ["create", str(tmp_path / "nope"), "-o", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "not a directory" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("workers", [1, 2])
def test_hash_files_matches_hashlib(tmp_path: Path, model: Path, workers: int) -> None:
    files = sorted(p for p in model.iterdir() if p.is_file())
    jobs = [HashJob(str(p), p.name, "sha256", p.stat().st_size) for p in files]
    jobs.append(HashJob(str(model / "config.json"), "config.json#git", "git-sha1", 0))
    res = hash_files(jobs, workers=workers, chunk=1 << 16)
    for job, r in zip(jobs, res):
        data = Path(job.path).read_bytes()
        want = (hashlib.sha256(data).hexdigest() if job.algo == "sha256"
                else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest())
        assert r["file"] == job.file and r["actual"] == want and r["bytes"] == len(data)


def test_sample_file_finds_zero_tail_and_holes(tmp_path: Path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(b"\x01" * (4 << 20) + b"\x00" * (4 << 20))
    r = sample_file(str(p), 0, ranges=8, range_bytes=1 << 18, seed=1)
    assert r["ranges"] == 8 and len(r["zero"]) == 4 and all(b >= 4 << 20 for b, e in r["zero"])
    sparse = tmp_path / "s.bin"
    with open(sparse, "wb") as f:
        f.write(b"\x01" * 4096)
        f.truncate(64 << 20)
    r = sample_file(str(sparse), 0, ranges=4, seed=2)
    assert r["holes"] and r["holes"][0][0] >= 4096 and r["holes"][-1][1] == 64 << 20


def test_progress_helpers_render_bytes_rate_eta(tmp_path: Path, model: Path) -> None:
    import io

    from rich.console import Console

    from k3doctor.ckpt.progress import format_progress, rich_progress, status_callback

    assert format_progress(12_300_000_000, 1_560_860_324_864, 8.66) == \
        "sha256 12.3/1560.9 GB · 1.42 GB/s · ETA 18m10s"
    seen: list[str] = []
    cb = status_callback(seen.append, min_interval=60)
    cb(1, 10)
    cb(2, 10)  # throttled
    cb(10, 10)  # the final update always goes through
    assert len(seen) == 2 and "ETA 0m00s" in seen[-1]
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120)
    files = sorted(p for p in model.iterdir() if p.is_file())
    with rich_progress("sha256", console=console, min_interval=0) as cb:
        hash_files([HashJob(str(p), p.name, "sha256", p.stat().st_size) for p in files], workers=2, progress=cb)
    out = buf.getvalue()
    assert "sha256" in out and "MB" in out and "/s" in out


def test_manifest_verify_command(tmp_path: Path, manifest: Path, model: Path) -> None:
    ok = CliRunner().invoke(manifest_command, ["verify", str(model), str(manifest), "--no-progress"])
    n = len(load_manifest(manifest)["files"])
    assert ok.exit_code == 0 and f"{n} of {n} files verified, 0 mismatched" in ok.output
    corrupt(model, "bit_flip")
    bad = CliRunner().invoke(manifest_command, ["verify", str(model), str(manifest), "--no-progress"])
    assert bad.exit_code == 1 and "CKPT009" in bad.output and SHARD2 in bad.output and "fix: hf download" in bad.output


def test_manifest_verify_goes_through_the_runner_and_reporters(manifest: Path, model: Path) -> None:
    """`manifest verify` renders with the check reporters: JSON like `check --format json`, JUnit too."""
    import json

    corrupt(model, "bit_flip")
    res = CliRunner().invoke(manifest_command, ["verify", str(model), str(manifest), "--no-progress", "-f", "json"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 1 == doc["exit_code"]
    assert [r["code"] for r in doc["results"]] == ["CKPT001", "CKPT009"]
    (finding,) = doc["findings"]
    assert finding["code"] == "CKPT009" and SHARD2 in finding["message"]
    junit = CliRunner().invoke(manifest_command, ["verify", str(model), str(manifest), "--no-progress", "-f", "junit"])
    assert junit.exit_code == 1 and "<testsuite" in junit.stdout and 'failures="1"' in junit.stdout


def test_hash_buffers_stay_bounded_with_many_workers(tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from k3doctor.ckpt import hashing

    sizes: set[int] = set()
    real = hashing._hash_one

    def spy(job, meter, chunk, deadline, local):  # type: ignore[no-untyped-def]
        sizes.add(chunk)
        return real(job, meter, chunk, deadline, local)

    monkeypatch.setattr(hashing, "_hash_one", spy)
    files = sorted(p for p in model.iterdir() if p.is_file())
    jobs = [HashJob(str(p), p.name, "sha256", p.stat().st_size) for p in files] * 20
    hash_files(jobs, workers=128)
    (chunk,) = sizes
    assert chunk * 128 <= hashing.BUFFER_BUDGET
    hash_files(jobs[:4], workers=2)
    assert hashing.DEFAULT_CHUNK in sizes
