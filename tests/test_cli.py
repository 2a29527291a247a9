"""CLI contract: exit codes, JSON schema, reporters, snapshots, bad input, start-up cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from k3doctor.cli import main

ROOT = Path(__file__).resolve().parent.parent
SGLANG = ["sglang", "serve", "--model-path", "moonshotai/Kimi-K3", "--tp-size", "16", "--ep-size", "16",
          "--nnodes", "2", "--node-rank", "0", "--dist-init-addr", "10.0.0.1:5000"]


def invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)


def test_json_contract_static_target() -> None:
    res = invoke("check", "--target", "h200-141g", "--select", "CMD", "--format", "json", "--",
                 *SGLANG, "--tp-szie", "2")
    doc = json.loads(res.output)
    assert doc["schema_version"] == 1 and doc["tool"] == "k3doctor"
    assert set(doc) >= {"tool", "version", "exit_code", "summary", "findings", "results"}
    assert doc["exit_code"] == res.exit_code == 0  # only a warning
    f = doc["findings"][0]
    assert set(f) == {"code", "severity", "message", "subject", "evidence", "fix"}
    assert f["code"] == "CMD002" and f["severity"] == "warning"
    for r in doc["results"]:
        assert set(r) == {"code", "status", "reason", "duration_s"}
        assert r["status"] in {"pass", "fail", "skip", "crash"}
    assert doc["summary"]["warnings"] == 1


def test_fail_on_warning_exit_1() -> None:
    res = invoke("check", "--target", "h200", "--select", "CMD", "--fail-on", "warning", "--format", "json",
                 "--", *SGLANG, "--tp-szie", "2")
    assert res.exit_code == 1 and json.loads(res.output)["exit_code"] == 1


def test_junit_one_testcase_per_check() -> None:
    res = invoke("check", "--target", "h200", "--select", "CMD", "--format", "junit", "--", *SGLANG, "--tp", "x")
    suite = ET.fromstring(res.output.split("\n", 1)[1])
    cases = suite.findall("testcase")
    assert [c.get("name", "").split()[0] for c in cases] == ["CMD001", "CMD002"]
    assert cases[0].find("failure") is not None
    assert suite.get("failures") == "1"
    assert res.exit_code == 1


def test_github_annotations() -> None:
    res = invoke("check", "--target", "h200", "--select", "CMD001", "--format", "github", "--", *SGLANG,
                 "--mem-fraction-static", "85")
    assert res.output.startswith("::error title=CMD001 flag=--mem-fraction-static::")
    assert "fix: correct --mem-fraction-static" in res.output.replace("%0A", "\n")


def test_output_file(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = invoke("check", "--target", "h200", "--select", "CMD", "--format", "json", "-o", str(out), "--", *SGLANG)
    assert res.exit_code == 0 and json.loads(out.read_text())["exit_code"] == 0


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["check", "--target", "h999"], "unknown --target 'h999'"),
        (["check", "--target", "h200", "--"], "empty"),
        (["check", "--target", "h200", "--", "tgi", "serve"], "not an engine launch"),
        (["check", "--target", "h200", "--select", "NOPE"], "matches no check"),
        (["check", "--target", "h200", "--snapshot", "x.json"], "alternatives"),
        (["check", "--target", "h200", "--gpus", "0"], "1<=x<=1024"),
            (["check", "--target", "h200", "--gpus", "100000000"], "1<=x<=1024"),
    ],
)
def test_usage_errors_exit_2(args: list[str], fragment: str) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert fragment in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"{not json", "not valid JSON"),
        (b'{"schema_version": 1, "kind": "k3doctor.snapshot", "fac', "not valid JSON"),
        (b"\x80\x81garbage", "not UTF-8"),
        (b'{"kind": "something-else"}', "not a k3doctor snapshot"),
        (b'{"kind": "k3doctor.snapshot", "schema_version": 99, "facts": {}}', "schema_version 99"),
        (b'{"kind": "k3doctor.snapshot", "schema_version": 1}', "no \"facts\""),
    ],
)
def test_bad_snapshots(tmp_path: Path, content: bytes, fragment: str) -> None:
    p = tmp_path / "node.json"
    p.write_bytes(content)
    res = CliRunner().invoke(main, ["check", "--snapshot", str(p)])
    assert res.exit_code == 2 and fragment in res.output and str(p) in res.output
    assert "Traceback" not in res.output


def test_missing_snapshot_file(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["check", "--snapshot", str(tmp_path / "none.json")])
    assert res.exit_code == 2 and "no such file" in res.output


def test_snapshot_roundtrip_runs_same_checks(tmp_path: Path) -> None:
    out = tmp_path / "node.json"
    res = invoke("snapshot", "--only", "host", "--only", "packages", "-o", str(out), "--", *SGLANG)
    assert res.exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == 1 and doc["kind"] == "k3doctor.snapshot"
    assert doc["facts"]["launch"]["tp"] == 16 and "packages" in doc["facts"]
    res = invoke("check", "--snapshot", str(out), "--select", "CMD", "--format", "json", "--", *SGLANG)
    assert json.loads(res.output)["summary"]["checks"] == 2


def test_snapshot_unknown_fact() -> None:
    res = CliRunner().invoke(main, ["snapshot", "--only", "nosuchfact"])
    assert res.exit_code == 2 and "unknown fact" in res.output


def test_list_json_and_markdown() -> None:
    doc = json.loads(invoke("list", "--format", "json").output)
    codes = [c["code"] for c in doc["checks"]]
    assert "INT001" in codes and "CMD001" in codes
    assert doc["load_errors"] == []
    md = invoke("list", "--format", "markdown").output
    assert md.startswith("| code | severity | title |")
    targets = json.loads(invoke("list", "--targets", "--format", "json").output)["targets"]
    assert {"h100-80g", "h200-141g", "h20-96g", "b200", "b300", "gb200", "gb300", "a100-80g"} <= {
        t["name"] for t in targets}


def test_rich_output_respects_no_color() -> None:
    res = invoke("check", "--target", "h200", "--select", "CMD", "--", *SGLANG, "--tp", "x",
                 env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert "\x1b[" not in res.output
    assert "CMD001" in res.output and "fix:" in res.output
    assert "exit 1" in res.output


def test_force_color_gives_ansi() -> None:
    res = invoke("check", "--target", "h200", "--select", "CMD", "--", *SGLANG, "--tp", "x",
                 env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" in res.output


def _fresh_python(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_help_and_static_check_do_not_import_torch(tmp_path: Path) -> None:
    out = _fresh_python(
        "import sys\n"
        "from k3doctor.cli import run\n"
        "run(['--help'])\n"
        "print('HEAVY', [m for m in ('torch', 'numpy', 'pynvml', 'rich') if m in sys.modules])\n"
    )
    assert "HEAVY []" in out
    out = _fresh_python(
        "import sys\n"
        "from k3doctor.cli import run\n"
        "run(['check', '--target', 'h200', '--format', 'json', '--', 'vllm', 'serve', 'm', '-tp', '8'])\n"
        "print('HEAVY', [m for m in ('torch', 'numpy') if m in sys.modules])\n"
    )
    assert "HEAVY []" in out


def test_version_and_help_commands() -> None:
    assert "k3doctor" in invoke("--version").output
    res = invoke("version")
    assert res.exit_code == 0 and "k3doctor.checks.internal" in res.output
    assert "Exit codes" in invoke("--help").output


def test_model_dir_is_read_in_static_modes(tmp_path: Path) -> None:
    from fixtures.checkpoints.generate import make_small_real

    model = tmp_path / "model"
    make_small_real(model, layout="local_dir")
    shard = sorted(model.glob("model-*.safetensors"))[1]
    with open(shard, "r+b") as fh:  # truncate one shard by 100 bytes
        fh.truncate(shard.stat().st_size - 100)
    for source in (["--target", "h200"], ["--snapshot", str(ROOT / "fixtures/snapshots/h200-live-device.json")]):
        res = CliRunner().invoke(main, ["check", *source, "--model", str(model), "--select", "CKPT",
                                        "--format", "json"], catch_exceptions=False)
        doc = json.loads(res.output)
        assert res.exit_code == 1, source
        assert any(shard.name in f["subject"] + f["message"] for f in doc["findings"]), doc["findings"]
