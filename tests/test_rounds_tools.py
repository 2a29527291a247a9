"""tools/rounds: kb_merge3.py unites the KB files of two round branches by signature block; insert_writeups.py
puts round write-ups into docs/validation.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from k3doctor.explain.kb import tomllib

TOOL = Path(__file__).resolve().parents[1] / "tools" / "rounds" / "kb_merge3.py"
HEAD = '# header\n\n[[signature]]\nid = "a"\ntitle = "A"\nexamples = ["x"]\n'


def _block(sid: str, title: str) -> str:
    return f'\n[[signature]]\nid = "{sid}"\ntitle = "{title}"\nexamples = ["y"]\n'


def _merge(tmp_path: Path, base: str, ours: str, theirs: str) -> subprocess.CompletedProcess[str]:
    for name, text in (("b", base), ("o", ours), ("t", theirs)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return subprocess.run([sys.executable, str(TOOL), *(str(tmp_path / n) for n in "bot")],
                          capture_output=True, text=True)


def test_blocks_appended_on_both_sides_are_both_kept_whole(tmp_path):
    """Round 263's merge with a line union glued two appended signatures into invalid TOML."""
    res = _merge(tmp_path, HEAD, HEAD + _block("b", "B"), HEAD + _block("c", "C"))
    assert res.returncode == 0, res.stderr
    ids = [s["id"] for s in tomllib.loads(res.stdout)["signature"]]
    assert ids == ["a", "b", "c"]


def test_a_block_changed_on_one_side_takes_that_side(tmp_path):
    res = _merge(tmp_path, HEAD, HEAD.replace('"A"', '"A2"'), HEAD + _block("c", "C"))
    assert res.returncode == 0
    sigs = tomllib.loads(res.stdout)["signature"]
    assert [s["title"] for s in sigs] == ["A2", "C"]


def test_a_block_changed_differently_on_both_sides_stops_the_merge(tmp_path):
    res = _merge(tmp_path, HEAD, HEAD.replace('"A"', '"A2"'), HEAD.replace('"A"', '"A3"'))
    assert res.returncode == 1 and "changed on both sides: a" in res.stderr


def _insert_writeups():
    import importlib.util

    path = TOOL.parent / "insert_writeups.py"
    spec = importlib.util.spec_from_file_location("insert_writeups", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_insert_writeups_puts_the_rounds_before_the_anchor_newest_first(tmp_path):
    doc = tmp_path / "validation.md"
    doc.write_text("# Results\n\n**Round 2:** old.\n", encoding="utf-8")
    (tmp_path / "r3.md").write_text("**Round 3:** three.\n", encoding="utf-8")
    (tmp_path / "r4.md").write_text("**Round 4:**   four\nwrapped.\n", encoding="utf-8")
    assert _insert_writeups().main([str(tmp_path), "**Round 2:", "4", "3"], doc) == 0
    assert doc.read_text(encoding="utf-8") == (
        "# Results\n\n**Round 4:** four wrapped.\n\n**Round 3:** three.\n\n**Round 2:** old.\n")


def test_insert_writeups_refuses_bad_arguments_without_touching_the_doc(tmp_path, capsys):
    doc = tmp_path / "validation.md"
    doc.write_text("**Round 2:** old.\n", encoding="utf-8")
    (tmp_path / "r3.md").write_text("**Round 3:** three.\n", encoding="utf-8")
    mod = _insert_writeups()
    assert mod.main([str(tmp_path), "**Round 2:"], doc) == 2
    assert mod.main([str(tmp_path), "**Round 9:", "3"], doc) == 2
    assert mod.main([str(tmp_path), "**Round 2:", "3", "5"], doc) == 2
    assert "r5.md" in capsys.readouterr().err
    assert doc.read_text(encoding="utf-8") == "**Round 2:** old.\n"
