"""``k3doctor env``: exports, formats, rank keys, and eval-safety of the quoting."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from k3doctor.commands.env import command
from k3doctor.hostenv.shell import export_line, quote, render

HOST = Path(__file__).resolve().parent.parent / "fixtures" / "host"
HOSTILE = ["e$`'\"x", "a'b", "$(touch /tmp/k3d-pwned)", "`id`", "back\\slash", "new\nline", "tab\there", "x;y&z|w",
           "\u00e9t\u00e9", "!event", "*glob?[x]", "~user", "{a,b}", ""]


@pytest.mark.parametrize("shell", ["bash", "dash", "sh", "zsh"])
def test_posix_quoting_round_trips_in_real_shells(shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} not installed")
    fmt = "sh" if shell in ("dash", "sh") else shell
    for value in HOSTILE:
        script = export_line("K3D_TEST", value, fmt) + '\nprintf "%s" "$K3D_TEST"'
        out = subprocess.run([shell, "-c", 'eval "$S"'], env={"S": script, "PATH": os.environ["PATH"]},
                             capture_output=True, text=True, timeout=10)
        assert out.returncode == 0 and out.stdout == value, (value, out.stderr)
    assert not Path("/tmp/k3d-pwned").exists()


def test_fish_quoting_round_trips_in_fish() -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish not installed")
    for value in HOSTILE:
        script = export_line("K3D_TEST", value, "fish") + "\nprintf '%s' \"$K3D_TEST\""
        out = subprocess.run(["fish", "--no-config", "-c", script], capture_output=True, text=True, timeout=20,
                             env={"PATH": os.environ["PATH"], "HOME": "/tmp"})
        assert out.returncode == 0 and out.stdout == value, (value, out.stderr)
    assert not Path("/tmp/k3d-pwned").exists()


def test_fish_quoting_rules() -> None:
    assert quote("a'b\\c$d", "fish") == "'a\\'b\\\\c$d'"
    assert export_line("X", "v", "fish") == "set -gx X 'v';"
    with pytest.raises(ValueError):
        export_line("BAD-NAME", "v")
    with pytest.raises(ValueError):
        quote("nul\0byte")
    assert render({"A": "1"}, "sh", ["line1\nline2"]) == "# line1\n# line2\nexport A='1'\n"


def invoke(*args: str, env: dict[str, str] | None = None) -> object:
    base = {"NCCL_SOCKET_IFNAME": None, "GLOO_SOCKET_IFNAME": None, "MASTER_ADDR": None, "MASTER_PORT": None,
            "LOCAL_RANK": None, "RANK": None, "SLURM_PROCID": None, "TRITON_CACHE_DIR": None, "TMPDIR": None}
    return CliRunner().invoke(command, list(args), env={**base, **(env or {})}, catch_exceptions=False)


def nfs_proc(tmp_path: Path) -> str:
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "mountinfo").write_text((HOST / "mountinfo" / "nfs-home").read_text())
    return str(tmp_path)


def test_caches_on_nfs_home_are_moved_per_rank(tmp_path: Path) -> None:
    r = invoke("--format", "json", "--proc-root", nfs_proc(tmp_path), "--engine", "sglang",
               env={"HOME": "/home/alice", "USER": "alice", "SLURM_PROCID": "3"})
    doc = json.loads(r.output)
    assert doc["rank_var"] == "SLURM_PROCID" and doc["rank"] == "3"
    ex = doc["exports"]
    assert ex["TRITON_CACHE_DIR"] == "/tmp/k3doctor-alice/rank3/triton"
    assert ex["SGLANG_DG_CACHE_DIR"] == "/tmp/k3doctor-alice/rank3/deepgemm_sglang"
    assert "DG_JIT_CACHE_DIR" not in ex and "VLLM_CACHE_ROOT" not in ex
    assert "TORCHINDUCTOR_CACHE_DIR" not in ex  # /tmp is local (tmpfs) in that table
    assert "HF_HUB_CACHE" not in ex and "HOME" not in ex  # never move the model store or $HOME


def test_garbage_rank_variables(tmp_path: Path) -> None:
    r = invoke("--format", "json", "--all-caches", env={"LOCAL_RANK": "$(reboot)", "RANK": "2"})
    doc = json.loads(r.output)
    assert doc["rank"] == "2" and any("not a non-negative integer" in n for n in doc["notes"])
    r = invoke("--format", "json", "--all-caches", "--rank-var", "MY_RANK", env={"MY_RANK": "abc"})
    doc = json.loads(r.output)
    assert doc["rank"] == "0" and doc["exports"]["TRITON_CACHE_DIR"].endswith("/rank0/triton")


def test_unresolvable_head_is_a_message_and_output_still_evals(tmp_path: Path) -> None:
    r = invoke("--dist-init-addr", "no-such-host.invalid:5000", "--all-caches", "--shell", "sh")
    assert r.exit_code == 1
    assert "cannot resolve 'no-such-host.invalid'" in r.stderr
    assert "TRITON_CACHE_DIR" in r.stdout and "GLOO_SOCKET_IFNAME" not in r.stdout
    out = subprocess.run(["sh", "-c", 'eval "$S"; printf "%s" "$TRITON_CACHE_DIR"'],
                         env={"S": r.stdout, "PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=10)
    assert out.returncode == 0 and out.stdout.endswith("/rank0/triton")


@pytest.mark.parametrize("addr", ["head:notaport", "[fd00::1", "   "])
def test_bad_head_address(addr: str) -> None:
    r = invoke("--dist-init-addr", addr)
    assert r.exit_code == 1 and "k3doctor env: head" in r.stderr


def test_master_addr_fallback_to_loopback_does_not_pin_lo() -> None:
    r = invoke("--format", "json", env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"})
    doc = json.loads(r.output)
    assert doc["head"]["addr"] == "127.0.0.1:29500"
    assert doc["exports"].get("GLOO_SOCKET_IFNAME") != "lo"
    assert any("loopback" in n for n in doc["notes"])


def test_default_route_fallback_on_recorded_tree() -> None:
    r = invoke("--format", "json", "--sys-root", str(HOST / "node-a" / "sys"), "--proc-root", str(HOST / "node-a" / "proc"))
    doc = json.loads(r.output)
    assert doc["interface"] == "eth1" and doc["exports"]["NCCL_SOCKET_IFNAME"] == "=eth1"
    assert any("default route" in n for n in doc["notes"])
    assert any("vanished0" in n for n in doc["notes"])


def test_nothing_to_pin() -> None:
    r = invoke("--sys-root", "/nonexistent", "--proc-root", "/nonexistent")
    assert r.exit_code == 1 and "cannot tell which interface" in r.stderr
    assert r.stdout.startswith("# k3doctor env")


def test_usage_errors() -> None:
    assert CliRunner().invoke(command, ["--shell", "csh"]).exit_code == 2
    assert CliRunner().invoke(command, ["--format", "yaml"]).exit_code == 2


def test_shell_default_from_SHELL() -> None:
    r = invoke("--all-caches", env={"SHELL": "/usr/bin/fish"})
    assert "set -gx TRITON_CACHE_DIR" in r.stdout
    r = invoke("--all-caches", env={"SHELL": "/bin/tcsh"})
    assert "export TRITON_CACHE_DIR=" in r.stdout


def test_documented_sbatch_pattern_stops_on_failure_and_exports_on_success() -> None:
    """`K3D_ENV=$(k3doctor env …) || exit 1; eval "$K3D_ENV"`, as docs/host-environment.md shows."""
    import sys

    root = Path(__file__).resolve().parent.parent
    snippet = ('K3D_ENV="$("$PY" -c "from k3doctor.commands.env import command; command()" '
               '--dist-init-addr "$HEAD" --all-caches)" || exit 7\neval "$K3D_ENV"\nprintf "%s" "$TRITON_CACHE_DIR"')
    env = {"PATH": os.environ["PATH"], "PY": sys.executable, "PYTHONPATH": str(root), "SLURM_PROCID": "1"}
    bad = subprocess.run(["bash", "-c", snippet], env={**env, "HEAD": "no-such-host.invalid:5000"},
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 7 and "cannot resolve" in bad.stderr
    good = subprocess.run(["bash", "-c", snippet], env={**env, "HEAD": "127.0.0.1:5000"},
                          capture_output=True, text=True, timeout=60)
    assert good.returncode == 0 and good.stdout.endswith("/rank1/triton"), good.stderr
