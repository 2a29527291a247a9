"""The click command: modes, formats, exit codes, code lookup, start-up cost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from k3doctor.check import Check
from k3doctor.commands import explain as cmd_mod
from k3doctor.commands.explain import command

MATCH_KEYS = {"id", "category", "title", "cause", "fix", "related_checks", "references", "benign", "confidence",
              "count", "first_line", "excerpt"}
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total "
       "capacity of 139.81 GiB of which 1.25 GiB is free.")


def run(args, input=None):
    return CliRunner().invoke(command, args, input=input)


def test_text_argument_plain_output():
    r = run([OOM])
    assert r.exit_code == 0, r.output
    assert "CUDA out of memory" in r.output and "Tried to allocate 4.00 GiB with 1.25 GiB free." in r.output
    assert "k3doctor check --select MEM001,MEM003,GPU012" in r.output
    assert "\x1b[" not in r.output  # not a TTY: plain text


def test_several_words_are_joined():
    r = run(["RuntimeError:", "cp_world_size", "must", "be", "positive"])
    assert r.exit_code == 0 and "k3-cp-world-size" in r.output


def test_json_output_has_exactly_the_documented_keys():
    text = "[W1130 socket.cpp:1] Unable to resolve hostname to a (local) address. Using the loopback address as fallback.\n" + OOM
    r = run(["--format", "json", text])
    assert r.exit_code == 0
    doc = json.loads(r.output)
    assert doc["schema_version"] == 1
    assert [m["id"] for m in doc["matches"]] == ["gloo-hostname-loopback", "torch-cuda-oom"]
    for m in doc["matches"]:
        assert set(m) == MATCH_KEYS
    assert doc["matches"][1]["first_line"] == "<text>:2"
    assert doc["matches"][0]["benign"] is False and doc["matches"][0]["count"] == 1


def test_stdin():
    r = run(["-"], input="ValueError: Total number of attention heads (64) must be divisible by tensor parallel size (3).\n")
    assert r.exit_code == 0 and "heads-not-divisible-by-tp" in r.output and "<stdin>:1" in r.output


def test_large_stdin_is_streamed_like_a_log(monkeypatch):
    monkeypatch.setattr(cmd_mod, "_PASTE_LIMIT", 4096)
    filler = "".join(f"[2026-11-30 10:00:00 TP0] Decode batch. #running-req: {i}\n" for i in range(2000))
    r = run(["--format", "json", "-"], input=filler + OOM + "\n" + filler)
    assert r.exit_code == 0
    doc = json.loads(r.output)
    assert [m["id"] for m in doc["matches"]] == ["torch-cuda-oom"]
    assert doc["matches"][0]["first_line"] == "<stdin>:2001"


def test_rich_output_does_not_crash_and_keeps_literal_brackets():
    r = run(["--format", "rich", "[rank3]: " + OOM])
    assert r.exit_code == 0
    assert "[memory]" in r.output and "[rank3]" in r.output


def test_logs_many_files_and_positional_after_log(tmp_path):
    a = tmp_path / "r0.log"
    b = tmp_path / "r1.log"
    a.write_text("[2026-11-30 10:00:00] Using default MoE config. Performance might be sub-optimal!\n" * 3)
    b.write_bytes(b"\x1b[31mRuntimeError: CUDA error: uncorrectable ECC error encountered\x1b[0m\n")
    r = run(["--format", "json", "--log", str(a), str(b)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [m["id"] for m in doc["matches"]] == ["ecc-uncorrectable", "default-moe-config"]
    assert doc["matches"][1]["count"] == 3 and doc["matches"][1]["benign"] is True
    assert doc["matches"][0]["first_line"] == f"{b}:1"


def test_exit_1_when_nothing_recognised(tmp_path):
    assert run(["all good here"]).exit_code == 1
    p = tmp_path / "fine.log"
    p.write_text("INFO: started\n")
    r = run(["--log", str(p), "--format", "json"])
    assert r.exit_code == 1 and json.loads(r.output)["matches"] == []


@pytest.mark.parametrize("args", [[], ["--list", "extra"], ["--log", "/nonexistent/file.log"], ["--format", "xml", "x"]])
def test_usage_errors_exit_2(args):
    assert run(args).exit_code == 2


class ZZZ001(Check):
    """Widgets are frobnicated

    Long **markdown** documentation about widgets.
    """

    def run(self, facts):  # pragma: no cover - never run here
        return ()


class ZZZ002(Check):
    """Gadgets are aligned

    Gadget doc.
    """

    def run(self, facts):  # pragma: no cover
        return ()


@pytest.fixture
def fake_registry(monkeypatch):
    monkeypatch.setattr(cmd_mod, "_load_checks", lambda: {"ZZZ001": ZZZ001, "ZZZ002": ZZZ002})


def test_code_shows_long_doc_plain(fake_registry):
    r = run(["zzz001"])  # case-insensitive
    assert r.exit_code == 0
    assert "# ZZZ001: Widgets are frobnicated" in r.output
    assert "Long **markdown** documentation" in r.output  # plain: markdown source, no ANSI
    assert "k3doctor check --select ZZZ001" in r.output


def test_code_rich_markdown_when_forced(fake_registry):
    r = run(["--format", "rich", "ZZZ001"])
    assert r.exit_code == 0
    assert "Widgets are frobnicated" in r.output and "**markdown**" not in r.output


def test_unknown_code_gets_close_matches_not_a_text_search(fake_registry, monkeypatch):
    def boom(*a, **k):  # a code-like argument must never fall back to text matching
        raise AssertionError("text search attempted")

    monkeypatch.setattr("k3doctor.explain.explain_text", boom)
    r = run(["ZZZ003"])
    assert r.exit_code == 1
    assert "Did you mean: ZZZ001, ZZZ002" in r.output or "Did you mean: ZZZ002, ZZZ001" in r.output


def test_code_json(fake_registry):
    doc = json.loads(run(["--format", "json", "ZZZ002"]).output)
    assert doc["code"] == "ZZZ002" and doc["title"] == "Gadgets are aligned" and doc["doc"] == "Gadget doc."


def test_real_registry_code_lists_the_errors_it_prevents():
    pytest.importorskip("k3doctor.registry")
    r = run(["FS001"])
    assert r.exit_code == 0
    assert "triton-cache-tmp-race" in r.output


def test_list_text_and_json(fake_registry):
    r = run(["--list"])
    assert r.exit_code == 0 and "ZZZ001" in r.output and "gloo-connectfullmesh" in r.output
    doc = json.loads(run(["--list", "--format", "json"]).output)
    assert doc["schema_version"] == 1
    assert {c["code"] for c in doc["checks"]} == {"ZZZ001", "ZZZ002"}
    assert len(doc["signatures"]) >= 60


def test_import_is_light():
    code = ("import sys, k3doctor.commands.explain as m; "
            "print(isinstance(m.command.name, str), 'rich' in sys.modules, 'k3doctor.explain.scan' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "False"]
