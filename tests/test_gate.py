"""Gate semantics: --strict, --fail-on, the run summary, the one exit-code table, the config file,
and the torch-less multi-node degradation."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from k3doctor.cli import main
from k3doctor.exitcodes import EXIT_CODE_MEANINGS, ExitCode

ROOT = Path(__file__).resolve().parent.parent
VLLM_UNKNOWN = ["vllm", "serve", "x"]  # an unknown model: MEM001-MEM004 skip


def invoke(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)


@pytest.fixture(autouse=True)
def _no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test runs in an empty directory (no config file above it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- --strict, --fail-on, summary -------------------------------------------------------------


def test_all_skipped_passes_without_strict_but_says_nothing_was_checked() -> None:
    res = invoke("check", "--target", "h200-141g", "--select", "MEM001,MEM002,MEM003,MEM004", "--", *VLLM_UNKNOWN)
    assert res.exit_code == 0
    assert "nothing was checked: every selected check was skipped" in res.output
    assert "0 ran (0 passed, 0 failed), 4 skipped" in res.output


def test_strict_fails_when_a_selected_check_skips() -> None:
    res = invoke("check", "--target", "h200-141g", "--select", "MEM001,MEM002,MEM003,MEM004", "--strict",
                 "--format", "json", "--", *VLLM_UNKNOWN)
    doc = json.loads(res.output)
    assert res.exit_code == doc["exit_code"] == ExitCode.SKIPPED == 4
    assert doc["summary"]["strict"] is True and doc["summary"]["ran"] == 0
    assert sum(len(v) for v in doc["summary"]["skip_reasons"].values()) == 4


def test_strict_passes_when_everything_ran() -> None:
    res = invoke("check", "--target", "h200-141g", "--select", "CMD", "--strict", "--",
                 "sglang", "serve", "--model-path", "m", "--tp", "8")
    assert res.exit_code == 0, res.output


def test_findings_outrank_strict_skips() -> None:
    """crash > findings > strict skip: an error finding still exits 1 under --strict."""
    res = invoke("check", "--target", "h200-141g", "--select", "CMD001,MEM001", "--strict", "--",
                 "sglang", "serve", "--model-path", "m", "--mem-fraction-static", "85")
    assert res.exit_code == 1, res.output


def test_fail_on_warning() -> None:
    args = ["check", "--target", "h200-141g", "--select", "CMD", "--", "sglang", "serve", "--model-path", "m",
            "--tp-szie", "2"]
    assert invoke(*args).exit_code == 0
    assert invoke(*args[:1], "--fail-on", "warning", *args[1:]).exit_code == 1


def test_exit_code_table_is_documented_once_and_matches_the_enum() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d) \| (.+) \|$", section, re.M))
    assert {int(k): v for k, v in rows.items()} == {int(c): m for c, m in EXIT_CODE_MEANINGS.items()}
    assert readme.count("## Exit codes") == 1
    assert set(EXIT_CODE_MEANINGS) == set(ExitCode)
    help_text = invoke("--help").output
    assert "4" in help_text.split("Exit codes", 1)[1] and "--strict" in help_text


def test_severity_override_changes_exit() -> None:
    from k3doctor.model import CheckResult, Finding, Severity, Status
    from k3doctor.runner import Report

    f = Finding(code="FS004", severity=Severity.INFO, message="m")
    rep = Report(results=[CheckResult(code="FS004", title="t", status=Status.PASS, findings=(f,))],
                 duration_s=0, source="x")
    assert rep.exit_code == 0
    up = rep.with_severities({"FS": "error"})
    assert up.exit_code == 1 and up.results[0].status is Status.FAIL
    assert up.findings[0].severity is Severity.ERROR


# -- configuration ---------------------------------------------------------------------------


def _pyproject(folder: Path, body: str) -> Path:
    p = folder / "pyproject.toml"
    p.write_text("[project]\nname = 'deploy'\n\n[tool.k3doctor]\n" + body)
    return p


def test_pyproject_tool_table_is_honoured_from_a_subdirectory(_no_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pyproject(_no_config, 'target = "h200-141g"\nselect = ["MEM001", "MEM002", "MEM003", "MEM004"]\n'
                           'strict = true\nformat = "json"\n')
    sub = _no_config / "deploy" / "k8s"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    res = invoke("check", "--", *VLLM_UNKNOWN)
    doc = json.loads(res.output)
    assert res.exit_code == 4
    assert doc["config"]["file"] == str(_no_config / "pyproject.toml")
    assert doc["config"]["target"] == "h200-141g" and doc["config"]["strict"] is True
    assert [r["code"] for r in doc["results"]] == ["MEM001", "MEM002", "MEM003", "MEM004"]


def test_command_line_overrides_the_file(_no_config: Path) -> None:
    _pyproject(_no_config, 'target = "h200-141g"\nselect = ["MEM"]\nstrict = true\nformat = "json"\n'
                           'fail-on = "error"\n')
    res = invoke("check", "--select", "CMD", "--format", "json", "--fail-on", "warning", "--",
                 "sglang", "serve", "--model-path", "m", "--tp-szie", "2")
    doc = json.loads(res.output)
    assert {r["code"] for r in doc["results"]} == {"CMD001", "CMD002"}
    assert doc["config"]["select"] == ["CMD"] and doc["config"]["fail-on"] == "warning"
    assert set(doc["config"]["from_file"]) == {"target", "strict"}
    assert res.exit_code == 1  # the CMD002 warning fails with --fail-on warning


def test_k3doctor_toml_wins_over_pyproject_in_the_same_directory(_no_config: Path) -> None:
    _pyproject(_no_config, 'target = "b200"\n')
    (_no_config / "k3doctor.toml").write_text('target = "h200-141g"\nformat = "json"\nselect = "CMD"\n')
    doc = json.loads(invoke("check", "--", "sglang", "serve", "--model-path", "m").output)
    assert doc["source"] == "target h200-141g" and doc["config"]["file"].endswith("k3doctor.toml")


def test_isolated_and_config_file(_no_config: Path) -> None:
    _pyproject(_no_config, 'select = "NOPE"\n')
    bad = invoke("check", "--target", "h200", "--", "sglang", "serve", "--model-path", "m")
    assert bad.exit_code == 2 and "matches no check" in bad.output
    ok = invoke("check", "--isolated", "--target", "h200", "--select", "CMD", "--", "sglang", "serve",
                "--model-path", "m")
    assert ok.exit_code == 0
    other = _no_config / "ci.toml"
    other.write_text('select = ["CMD"]\ntarget = "h200"\nformat = "json"\n')
    doc = json.loads(invoke("check", "--config", str(other), "--", "sglang", "serve", "--model-path", "m").output)
    assert doc["config"]["file"] == str(other)


def test_severity_override_from_the_file(_no_config: Path) -> None:
    (_no_config / "k3doctor.toml").write_text('target = "h200"\nselect = ["CMD"]\nseverity = {CMD002 = "error"}\n')
    res = invoke("check", "--", "sglang", "serve", "--model-path", "m", "--tp-szie", "2")
    assert res.exit_code == 1 and "CMD002" in res.output


@pytest.mark.parametrize("body, fragment", [
    ('selct = ["GPU"]\n', "unknown key 'selct'; did you mean 'select'?"),
    ('strict = "yes"\n', "expected true or false"),
    ('fail-on = "fatal"\n', "expected error, warning or info"),
    ("severity = {GPU001 = 3}\n", "severity.GPU001"),
    ("select = [\n", "not valid TOML"),
])
def test_bad_config_is_a_one_line_usage_error(_no_config: Path, body: str, fragment: str) -> None:
    (_no_config / "k3doctor.toml").write_text(body)
    res = CliRunner().invoke(main, ["check", "--target", "h200"])
    assert res.exit_code == 2 and fragment in res.output, res.output
    assert "k3doctor.toml" in res.output and "Traceback" not in res.output


def test_missing_config_file(_no_config: Path) -> None:
    res = CliRunner().invoke(main, ["check", "--config", "nope.toml"])
    assert res.exit_code == 2 and "--config nope.toml: no such file" in res.output


# -- degrade, don't abort: a multi-node launch on a node without torch -------------------------


def test_torchless_multinode_launch_runs_local_checks_and_names_the_missing_nic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed's two-node SGLang launch with a NIC pinned to a name this node lacks: NET001 names
    it and the run exits 1; the CLU checks are skipped with the install hint (exit 4 if only they
    are selected under --strict)."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails as on a torch-less node
    monkeypatch.setitem(sys.modules, "torch.distributed", None)
    launch = ["NCCL_SOCKET_IFNAME=k3nosuchnic9", "sglang", "serve", "--trust-remote-code", "--model-path",
              "moonshotai/Kimi-K3", "--tp-size", "16", "--ep-size", "16", "--nnodes", "2", "--node-rank", "1",
              "--dist-init-addr", "10.0.0.1:5000"]
    res = invoke("check", "--select", "NET,CLU", "--format", "json", "--", *launch)
    doc = json.loads(res.stdout)
    assert "cross-node checks skipped" in res.stderr
    assert res.exit_code == 1
    net001 = [f for f in doc["findings"] if f["code"] == "NET001"]
    assert net001 and net001[0]["severity"] == "error" and "k3nosuchnic9" in net001[0]["message"]
    clu = [r for r in doc["results"] if r["code"].startswith("CLU")]
    assert clu and all(r["status"] == "skip" and "pip install 'k3doctor[distributed]'" in r["reason"] for r in clu)
    strict = invoke("check", "--select", "CLU", "--strict", "--", *launch)
    assert strict.exit_code == 4


@pytest.mark.parametrize("args", [["--help"], ["list"], ["demo", "--scenario", "vllm-pp"],
                                  ["check", "--target", "h200", "--select", "CMD", "--", "vllm", "serve", "m"]])
def test_cli_runs_with_deprecation_warnings_as_errors(args: list[str]) -> None:
    import subprocess

    proc = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-m", "k3doctor", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    assert "DeprecationWarning" not in proc.stderr and "Traceback" not in proc.stderr


def test_config_paths_are_relative_to_the_config_file(_no_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (_no_config / "deploy").mkdir()
    (_no_config / "deploy" / "launch.sh").write_text("#!/bin/sh\nexec vllm serve m --tp-szie 2\n")
    _pyproject(_no_config, 'launch-file = "deploy/launch.sh"\ntarget = "h200"\nselect = ["CMD"]\nformat = "json"\n')
    sub = _no_config / "ci"
    sub.mkdir()
    monkeypatch.chdir(sub)
    doc = json.loads(invoke("check").stdout)
    assert doc["meta"]["launch_file"] == str(_no_config / "deploy" / "launch.sh")
    assert [f["code"] for f in doc["findings"]] == ["CMD002"]
