"""k3doctor never modifies a checkpoint, never executes its code, and never tracebacks on it."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from fixtures.checkpoints.generate import CACHE_ONLY_CASES, CASES, corrupt, make_small_real
from k3doctor.ckpt.inventory import CheckpointError, iter_tensors, read_config
from k3doctor.ckpt.scan import scan_checkpoint
from k3doctor.commands.manifest import command as manifest_command


def tree_state(root: Path) -> dict[str, tuple]:
    """Every path under root (symlinks not followed): type, size, mtime_ns, mode, content hash."""
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            digest: str | None = None
            if stat.S_ISLNK(st.st_mode):
                digest = "link:" + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                try:
                    digest = hashlib.sha256(Path(p).read_bytes()).hexdigest()
                except PermissionError:
                    digest = "unreadable"
            state[os.path.relpath(p, root)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns,
                                               stat.S_IMODE(st.st_mode), digest)
    return state


@pytest.mark.parametrize("case", CASES)
def test_bytes_and_mtimes_unchanged_after_every_case(tmp_path: Path, case: str, emulate_permissions: None) -> None:
    root = tmp_path / "root"
    info = make_small_real(root, layout="hf_cache" if case in CACHE_ONLY_CASES else "local_dir")
    d = Path(info["model_dir"])
    what = corrupt(d, case)
    manifest = tmp_path / "m.json"
    try:
        before = tree_state(root)
        fact = scan_checkpoint(d, deep=True, sample=True)
        assert fact["problems"], case  # every case is detected by the deep + sample scan
        res = CliRunner().invoke(manifest_command, ["create", str(d), "-o", str(manifest), "--no-progress"])
        assert res.exit_code in (0, 1, 2) and (res.exception is None or isinstance(res.exception, SystemExit)), res.output
        assert "Traceback" not in res.output
        if res.exit_code == 0:
            scan_checkpoint(d, manifest=manifest, sample=4)
        else:
            assert len(res.output.strip().splitlines()) == 1, res.output
        try:
            sum(1 for _ in iter_tensors(d))
        except CheckpointError as exc:
            assert "\n" not in str(exc)
        read_config(d)
        after = tree_state(root)
        assert after == before, case
        assert not [p for p in after if "EXECUTED_" in p]
    finally:
        if case == "unreadable_file":
            os.chmod(Path(d, what["file"]).resolve(), 0o644)


def test_model_code_is_never_executed(tmp_path: Path) -> None:
    info = make_small_real(tmp_path / "m")
    d = Path(info["model_dir"])
    assert (d / "modeling_kimi_k3.py").read_text().count("EXECUTED_") == 1
    scan_checkpoint(d, deep=True, sample=True)
    list(iter_tensors(d))
    assert not list(d.glob("EXECUTED_*"))
