"""Recipes that run: every file under deploy/, the Dockerfile, .pre-commit-hooks.yaml and the
documented shell completion are executed here the way the recipe runs them (the CI systems and
schedulers themselves are not available, so their k3doctor commands are run directly)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from k3doctor.cli import main
from k3doctor.launch import LaunchError
from k3doctor.launchfile import read_launch_file

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
DEMO = ROOT / "k3doctor" / "data" / "demo"
BIN = Path(sys.executable).parent


def invoke(args: list[str], env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, args, catch_exceptions=False, env=env)


# -- --launch-file ----------------------------------------------------------------------------


def test_launch_file_reads_the_deploy_script() -> None:
    words = read_launch_file(DEPLOY / "launch.sh", {"NODE_RANK": "1", "HEAD_ADDR": "10.1.2.3"})
    env = [w for w in words if re.match(r"^[A-Z_]+=", w)]
    assert env == ["NCCL_CUMEM_ENABLE=1", "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0", "GLOO_SOCKET_IFNAME=eth0",
                   "NCCL_SOCKET_IFNAME=eth0"]  # exported only; MODEL is a plain shell variable
    cmd = words[len(env):]
    assert cmd[:2] == ["sglang", "serve"] and "exec" not in cmd
    assert cmd[cmd.index("--model-path") + 1] == "moonshotai/Kimi-K3"
    assert cmd[cmd.index("--node-rank") + 1] == "1"
    assert cmd[cmd.index("--dist-init-addr") + 1] == "10.1.2.3:5000"


def test_launch_file_shapes(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n# comment\nexport A=1 B='two words'\nTP=8\n"
                      "python3 -c 'print(1)'   # not the launch\n"
                      "nohup python -m vllm.entrypoints.openai.api_server \\\n  --model /m \\\n"
                      "  --tensor-parallel-size ${TP} --max-model-len ${LEN:-4096} # trailing comment\n")
    assert read_launch_file(script) == ["A=1", "B=two words", "python", "-m", "vllm.entrypoints.openai.api_server",
                                        "--model", "/m", "--tensor-parallel-size", "8", "--max-model-len", "4096"]


@pytest.mark.parametrize("body, fragment", [
    ("#!/bin/sh\necho hi\n", "no SGLang or vLLM launch found"),
    ("vllm serve a\nvllm serve b\n", "several launches (lines 1, 2)"),
    ("export A='unclosed\n", ":1: No closing quotation"),
])
def test_launch_file_errors(tmp_path: Path, body: str, fragment: str) -> None:
    script = tmp_path / "bad.sh"
    script.write_text(body)
    with pytest.raises(LaunchError, match=re.escape(fragment)):
        read_launch_file(script)
    res = CliRunner().invoke(main, ["check", "--isolated", "--target", "h200", "--launch-file", str(script)])
    assert res.exit_code == 2 and fragment in res.output and "Traceback" not in res.output


def test_launch_file_and_dashdash_are_alternatives() -> None:
    res = CliRunner().invoke(main, ["check", "--isolated", "--target", "h200", "--launch-file",
                                    str(DEPLOY / "launch.sh"), "--", "vllm", "serve", "m"])
    assert res.exit_code == 2 and "alternatives" in res.output


def test_shebang_script_as_launch_file_finds_the_seed_nic_problem() -> None:
    res = invoke(["check", "--isolated", "--snapshot", str(DEMO / "node0.json"), "--snapshot", str(DEMO / "node1.json"),
                  "--select", "NET001", "--format", "json", "--launch-file", str(DEPLOY / "launch.sh")])
    doc = json.loads(res.stdout)
    assert res.exit_code == 1 and doc["meta"]["launch_file"].endswith("launch.sh")
    assert any("eth0" in f["message"] for f in doc["findings"] if f["code"] == "NET001")


# -- CI recipes --------------------------------------------------------------------------------


def _commands(text: str) -> list[list[str]]:
    """The k3doctor command lines of a YAML recipe (each written on one line)."""
    out = []
    for line in text.splitlines():
        m = re.search(r"(?:run:|-)\s+(k3doctor\s.*?)(?:\s*\|\|.*)?$", line)
        if m:
            out.append(shlex.split(m.group(1)))
    return out


def _localise(argv: list[str], tmp: Path) -> list[str]:
    subs = {"nodes/node0.json": str(DEMO / "node0.json"), "nodes/node1.json": str(DEMO / "node1.json"),
            "deploy/launch.sh": str(DEPLOY / "launch.sh"), "$GITHUB_STEP_SUMMARY": str(tmp / "summary.md")}
    out = [subs.get(a, a) for a in argv[1:]]
    if "-o" in out:
        i = out.index("-o") + 1
        if not out[i].startswith(str(tmp)):
            out[i] = str(tmp / Path(out[i]).name)
    return out


@pytest.mark.parametrize("recipe", ["github-actions.yml", "gitlab-ci.yml"])
def test_ci_recipes_run_as_written(recipe: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    commands = _commands((DEPLOY / "ci" / recipe).read_text())
    assert len(commands) >= 3 and all("--launch-file" in c for c in commands)
    for argv in commands:
        res = invoke(_localise(argv, tmp_path))
        assert res.exit_code == 1, (argv, res.output)  # the seed's launch has findings: the gate fails
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    if recipe.startswith("github"):
        sarif = json.loads(written["k3doctor.sarif"])
        assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
        assert written["summary.md"].startswith("## k3doctor:")
    else:
        assert ET.fromstring(written["k3doctor.xml"]).tag == "testsuite"
        issues = json.loads(written["gl-code-quality.json"])
        assert issues and {"description", "fingerprint", "severity", "location"} <= set(issues[0])


# -- Kubernetes --------------------------------------------------------------------------------


def _flow_lists(text: str, key: str) -> list[list[str]]:
    return [json.loads(m) for m in re.findall(rf"^\s*{key}: (\[.*\])\s*$", text, re.M)]


def test_kubernetes_init_container_and_job_check_the_pods_real_launch(tmp_path: Path) -> None:
    text = (DEPLOY / "k8s" / "preflight.yaml").read_text()
    engine_cmd = _flow_lists(text, "command")
    assert engine_cmd == [["/deploy/launch.sh"]]
    runs = _flow_lists(text, "args")
    assert len(runs) == 2  # the initContainer and the Job
    for args in runs:
        assert args[0] == "check" and args[args.index("--launch-file") + 1] == engine_cmd[0][0]
        argv = [str(DEPLOY / "launch.sh") if a == "/deploy/launch.sh" else a for a in args]
        argv = [str(tmp_path / "out.json") if a == "/dev/stdout" else a for a in argv]
        res = invoke(argv + ["--isolated"], env={"NODE_RANK": "0"})
        assert res.exit_code in (0, 1), res.output  # live on this machine: findings or none, never 2/3


# -- Slurm -------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "K3DOCTOR": str(BIN / "k3doctor")}


def test_slurm_prolog_runs() -> None:
    proc = subprocess.run(["bash", str(DEPLOY / "slurm" / "prolog.sh")], capture_output=True, text=True,
                          env=_env(), timeout=120, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr


def test_slurm_srun_pre_step_runs() -> None:
    text = (DEPLOY / "slurm" / "sbatch-preflight.sh").read_text()
    step = re.search(r"srun --ntasks-per-node=1 bash -c '([^']*k3doctor check[^']*)'", text)
    assert step is not None
    proc = subprocess.run(["bash", "-c", step.group(1)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**_env(), "SLURM_NODEID": "0", "HEAD_ADDR": "10.0.0.1"})
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "NET" in proc.stdout or "passed" in proc.stdout


# -- Dockerfile, pre-commit, completion ----------------------------------------------------------


def test_dockerfile_is_the_slim_base_install_and_its_default_command_runs() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.\d+-slim$", text, re.M)
    assert "pip install --no-cache-dir . " in text and "torch" not in text.split("FROM", 1)[1].split("ENTRYPOINT")[0]
    assert 'ENTRYPOINT ["k3doctor"]' in text
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))  # type: ignore[union-attr]
    assert invoke(cmd).exit_code == 0
    for copied in re.findall(r"^COPY (.+) \./", text, re.M):
        for name in copied.split():
            assert (ROOT / name).exists(), name


def test_pre_commit_hook_runs_on_the_launch_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    entry = shlex.split(re.search(r"^  entry: (.+)$", text, re.M).group(1))  # type: ignore[union-attr]
    args = [a.strip().strip('"') for a in re.search(r"^  args: \[(.+)\]$", text, re.M).group(1).split(", ")]  # type: ignore[union-attr]
    files = re.search(r"^  files: (.+)$", text, re.M).group(1)  # type: ignore[union-attr]
    assert re.search(files, "deploy/launch.sh") and entry[0] == "k3doctor"
    res = invoke([*entry[1:], *args, "deploy/launch.sh", "--isolated"])  # as pre-commit appends the file name
    assert res.exit_code == 0, res.output


def test_shell_completion_as_documented() -> None:
    doc = (ROOT / "docs" / "recipes.md").read_text()
    assert "_K3DOCTOR_COMPLETE=bash_source k3doctor" in doc
    env = {**_env(), "COMP_WORDS": "k3doctor check --launch-f", "COMP_CWORD": "2", "_K3DOCTOR_COMPLETE": "bash_complete"}
    proc = subprocess.run([str(BIN / "k3doctor")], capture_output=True, text=True, env=env, timeout=60)
    assert "plain,--launch-file" in proc.stdout
    src = subprocess.run([str(BIN / "k3doctor")], capture_output=True, text=True, timeout=60,
                         env={**_env(), "_K3DOCTOR_COMPLETE": "bash_source"})
    assert "_k3doctor_completion()" in src.stdout


def test_every_recipe_file_is_exercised_here() -> None:
    tested = {"launch.sh", "ci/github-actions.yml", "ci/gitlab-ci.yml", "k8s/preflight.yaml", "slurm/prolog.sh",
              "slurm/sbatch-preflight.sh"}
    present = {str(p.relative_to(DEPLOY)) for p in DEPLOY.rglob("*") if p.is_file()}
    assert present == tested
    doc = (ROOT / "docs" / "recipes.md").read_text()
    for name in tested:
        assert f"deploy/{name}" in doc, name
