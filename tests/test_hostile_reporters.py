"""No control sequence from input reaches the terminal or a report file, in any check format."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from k3doctor.cli import main

#: OSC 52 (clipboard write), OSC 0 (title), OSC 8 (link), DCS, CSI colour, a bare C1 CSI, BEL
EVIL = "\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b]8;;http://x\x1b\\\x1bPq#0\x1b\\\x1b[31m\x9b2J\x07"


@pytest.mark.parametrize("fmt", ["rich", "markdown", "github", "junit", "sarif", "gitlab", "json"])
def test_no_control_bytes_from_a_hostile_launch_in_any_format(fmt: str) -> None:
    launch = ["vllm", "serve", f"model{EVIL}", f"--no-such-flag{EVIL}", "1", "--tensor-parallel-size", "8"]
    result = CliRunner().invoke(main, ["check", "--target", "h200-141g", "--format", fmt, "--", *launch])
    assert result.exit_code in (0, 1), result.output
    out = result.output
    bad = [c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
    assert bad == [], (fmt, [hex(ord(c)) for c in bad][:10])
    if fmt in ("json", "sarif", "gitlab"):
        json.loads(out)  # still valid JSON, the input kept (escaped) in it


def test_colour_output_keeps_only_its_own_styling() -> None:
    """On a TTY the rich reporter colours its output; input text still cannot add a sequence."""
    import io
    import re

    from k3doctor.model import CheckResult, Finding, Severity, Status
    from k3doctor.reporters.text import RichReporter
    from k3doctor.runner import Report

    f = Finding(code="CMD002", severity=Severity.WARNING, message=f"unknown flag{EVIL}", subject=f"flag={EVIL}",
                evidence={}, fix=f"remove it{EVIL}")
    report = Report(results=[CheckResult(code="CMD002", title="t", status=Status.FAIL, findings=(f,))],
                    duration_s=0.0, source="test")
    buf = io.StringIO()
    RichReporter().render(report, buf, color=True)
    out = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())  # the reporter's own SGR colour codes
    bad = [c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
    assert bad == [], [hex(ord(c)) for c in bad][:10]
    assert "\\x07" in out or "unknown flag" in out


def _controls(text: str) -> list[str]:
    return [hex(ord(c)) for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]


def test_html_report_and_usage_errors_carry_no_control_bytes(tmp_path) -> None:
    """--report HTML (launch, facts, findings) and click's usage errors, which quote what was typed."""
    report = tmp_path / "r.html"
    launch = ["python", "-m", "sglang.launch_server", "--model-path", f"/m{EVIL}", "--tp", "8", f"--x{EVIL}"]
    result = CliRunner().invoke(main, ["check", "--target", "h200-141g", "--report", str(report), "--", *launch])
    assert result.exit_code in (0, 1), result.output
    assert _controls(report.read_text(encoding="utf-8")) == []
    for args in (["plan", "--target", "h200", "--tp", "8", "--model", f"/x{EVIL}"],
                 ["check", f"--bogus{EVIL}"], ["env", "--rank-var", f"R{EVIL}"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert _controls(result.output) == [], (args, _controls(result.output))


def test_shell_comments_carry_no_control_bytes() -> None:
    from k3doctor.hostenv.shell import comment_line

    assert _controls(comment_line(f"note {EVIL}\nsecond")) == []
    assert comment_line("a\nb") == "# a\n# b"


@pytest.mark.parametrize("args", [["plan", "--target", "h200", "--model", "moonshotai/Kimi-K3", "--tp", "16"],
                                  ["check", "--target", "h200", "--", "sglang", "serve", "--model-path",
                                   "moonshotai/Kimi-K3", "--tp", "8"],
                                  ["demo"], ["explain", "torch-cuda-oom"]])
@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_output_encoding_without_unicode_is_not_a_crash(args: list[str], encoding: str) -> None:
    """PYTHONIOENCODING=ascii (or a Latin-1 terminal): "—", "×" and the chart's blocks are written
    escaped, never a UnicodeEncodeError traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONIOENCODING=encoding, PYTHONPATH=str(root))
    p = subprocess.run([sys.executable, "-m", "k3doctor", *args], capture_output=True, env=env, timeout=120)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert b"Traceback" not in p.stderr and p.stdout.strip(), p.stderr[-2000:]
