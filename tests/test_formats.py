"""Formats and reports: SARIF, GitLab code quality, Markdown, the HTML report, and the same flag
spellings on every command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from k3doctor.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "k3doctor" / "data" / "demo"
SEED = ["sglang", "serve", "--trust-remote-code", "--model-path", "moonshotai/Kimi-K3", "--tp-size", "16",
        "--ep-size", "16", "--nnodes", "2", "--node-rank", "0", "--dist-init-addr", "10.0.0.1:5000"]
TWO_NODES = ["--isolated", "--snapshot", str(DEMO / "node0.json"), "--snapshot", str(DEMO / "node1.json")]


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _json_findings() -> list[dict[str, object]]:
    return json.loads(invoke("check", *TWO_NODES, "--format", "json", "--", *SEED).stdout)["findings"]  # type: ignore[no-any-return]


def test_sarif_has_a_rule_per_check_and_a_located_result_per_finding() -> None:
    res = invoke("check", *TWO_NODES, "--format", "sarif", "--", *SEED)
    doc = json.loads(res.stdout)
    run = doc["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert doc["version"] == "2.1.0" and len(rule_ids) == len(set(rule_ids))
    results = run["results"]
    assert len(results) == len(_json_findings())
    for r in results:
        assert r["ruleId"] in rule_ids and run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["level"] in {"error", "warning", "note"}
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert len({r["partialFingerprints"]["k3doctor/v1"] for r in results}) == len(results)
    assert run["invocations"][0]["exitCode"] == res.exit_code == 1


def test_sarif_points_at_the_launch_file() -> None:
    doc = json.loads(invoke("check", *TWO_NODES, "--select", "NET001", "--format", "sarif", "--launch-file",
                            str(ROOT / "deploy" / "launch.sh")).stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]}
    assert uris and all(u.endswith("deploy/launch.sh") for u in uris)


def test_gitlab_code_quality() -> None:
    issues = json.loads(invoke("check", *TWO_NODES, "--format", "gitlab", "--", *SEED).stdout)
    assert len(issues) == len(_json_findings())
    assert {i["severity"] for i in issues} <= {"info", "minor", "major", "critical", "blocker"}
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    assert all(i["location"]["lines"]["begin"] == 1 for i in issues)


def test_markdown_report() -> None:
    md = invoke("check", *TWO_NODES, "--format", "markdown", "--", *SEED).stdout
    assert md.startswith("## k3doctor: 11 errors")
    assert "| ❌ error | `FS001` |" in md and "7 JIT caches" in md
    assert "### Fixes" in md and "<details><summary>skipped checks</summary>" in md
    assert "…" not in md


def test_html_report_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = invoke("check", *TWO_NODES, "--report", str(out), "--", *SEED)
    assert res.exit_code == 1 and "wrote the HTML report" in res.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)=["']?https?:""", page), "must not load anything from elsewhere"
    assert "<script" not in page
    assert "<svg" in page and page.count("<rect") > 5 and "Per-rank memory" in page
    assert "<code>FS001</code>" in page and "7 JIT caches" in page
    assert "<summary>h200-node0</summary>" in page and "<summary>h200-node1</summary>" in page
    assert "Skipped checks" in page


def test_html_report_without_a_plan_has_no_chart(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    invoke("check", "--isolated", "--target", "h200", "--select", "CMD", "--report", str(out), "--",
           "vllm", "serve", "x")
    page = out.read_text()
    assert "<svg" not in page and "<h2>Findings</h2>" in page


def test_html_report_unwritable_is_a_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["check", "--isolated", "--target", "h200", "--select", "CMD", "--report",
                                    str(tmp_path / "no" / "such" / "dir" / "r.html"), "--", "vllm", "serve", "x"])
    assert res.exit_code == 2 and "--report" in res.output and "Traceback" not in res.output


def test_list_targets_markdown_is_markdown() -> None:
    md = invoke("list", "--targets", "--format", "markdown").stdout
    lines = md.splitlines()
    assert lines[0].startswith("| target |") and lines[1].startswith("|---")
    assert any(line.startswith("| `h200-141g` |") for line in lines)


@pytest.mark.parametrize("command", ["check", "plan", "demo", "list", "env", "explain", "snapshot"])
def test_every_command_has_format_and_output(command: str) -> None:
    text = invoke(command, "--help").stdout
    assert "-o, --output" in text or "--output, -o" in text, command
    if command != "snapshot":  # a snapshot is JSON by definition
        assert "--format" in text, command


@pytest.mark.parametrize("new, old", [("--target", "--gpu"), ("--gpus", "--gpus-per-node")])
def test_old_spellings_stay_as_aliases(new: str, old: str) -> None:
    base = ["plan", "--model", "moonshotai/Kimi-K3", "--format", "json"]
    a = invoke(*base, new, "h200" if new == "--target" else "8", *(["--target", "h200"] if new == "--gpus" else []),
               "--", *SEED)
    b = invoke(*base, old, "h200" if old == "--gpu" else "8", *(["--target", "h200"] if old == "--gpus-per-node" else []),
               "--", *SEED)
    assert a.exit_code == b.exit_code == 0 and json.loads(a.stdout) == json.loads(b.stdout)
    for cmd in (["check", "--isolated", "--select", "CMD"],):
        x = invoke(*cmd, "--target" if new == "--target" else "--gpus", "h200" if new == "--target" else "8",
                   *(["--target", "h200"] if new == "--gpus" else []), "--format", "json", "--", *SEED)
        y = invoke(*cmd, old, "h200" if old == "--gpu" else "8", *(["--target", "h200"] if new == "--gpus" else []),
                   "--format", "json", "--", *SEED)
        assert json.loads(x.stdout)["source"] == json.loads(y.stdout)["source"]


def test_output_file_for_plan_list_and_env(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert invoke("plan", "--model", "moonshotai/Kimi-K3", "--target", "h200", "--format", "json", "-o", str(plan),
                  "--", *SEED).exit_code == 0
    assert json.loads(plan.read_text())["schema_version"] == 1
    listing = tmp_path / "list.md"
    invoke("list", "--format", "markdown", "-o", str(listing))
    assert listing.read_text().startswith("| code |")
    assert all(line == line.rstrip() for line in listing.read_text().splitlines())
