"""Output people can act on: fixes and commands never cut at any width, no trailing padding,
one block per root cause, --statistics, and the plan --search reasons filled in."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from k3doctor.cli import main
from k3doctor.reporters.fold import atoms, fold

ROOT = Path(__file__).resolve().parent.parent
SNAP = ROOT / "k3doctor" / "data" / "demo"
SEED = ["NCCL_MNNVL_ENABLE=1", "sglang", "serve", "--trust-remote-code", "--model-path", "moonshotai/Kimi-K3",
        "--tp-size", "16", "--ep-size", "16", "--nnodes", "2", "--node-rank", "0", "--dist-init-addr",
        "10.0.0.1:5000"]


def run(*args: str, columns: int = 80):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env={"COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def fixes() -> list[str]:
    res = run("check", "--snapshot", str(SNAP / "node0.json"), "--snapshot", str(SNAP / "node1.json"),
              "--format", "json", "--isolated", "--", *SEED)
    return [f["fix"] for f in json.loads(res.stdout)["findings"] if f["fix"]]


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_demo_at_width_has_no_ellipsis_no_padding_and_whole_commands(columns: int, fixes: list[str]) -> None:
    res = run("demo", columns=columns)
    assert res.exit_code == 0
    out = res.stdout
    assert "…" not in out
    lines = out.splitlines()
    assert not [line for line in lines if line != line.rstrip()], "trailing spaces"
    for line in lines:
        if len(line) > columns:  # only a command too wide to fold, alone on its line
            assert len(atoms(line.strip().removeprefix("fix: "))) == 1, line
    flat = " ".join(line.strip() for line in lines)
    # every command of every fix appears unbroken on one line
    for fix in fixes:
        for atom in atoms(fix):
            if " " in atom and atom.split()[0] in ("export", "eval", "hf", "rsync", "k3doctor"):
                assert any(atom in line for line in lines), (columns, atom)
    assert "7 JIT caches on nfs4" in flat


def test_fold_never_breaks_a_command_and_never_pads() -> None:
    text = ('export TRITON_CACHE_DIR=/tmp/k3doctor-$USER/rank${SLURM_PROCID:-${RANK:-0}}/triton — a node-local '
            'directory per rank; or run eval "$(k3doctor env --dist-init-addr HEAD:PORT)" on each node')
    for width in (20, 40, 60, 80):
        lines = fold(text, width, "fix: ", "     ")
        assert all(line == line.rstrip() for line in lines)
        joined = "\n".join(lines)
        assert "export TRITON_CACHE_DIR=/tmp/k3doctor-$USER/rank${SLURM_PROCID:-${RANK:-0}}/triton" in joined
        assert 'eval "$(k3doctor env --dist-init-addr HEAD:PORT)"' in joined
        for line in lines:
            assert len(line) <= width or len(atoms(line.strip())) == 1 or line.strip().startswith("fix: ")


def test_prose_apostrophes_do_not_glue_the_rest_of_the_text() -> None:
    words = atoms("K3's MLA bypasses the lazy init, so FA3 gets -1")
    assert words[0] == "K3's" and len(words) == 10


def test_report_file_has_no_trailing_padding(tmp_path: Path) -> None:
    for fmt in ("rich", "markdown", "junit", "json", "github"):
        out = tmp_path / f"r.{fmt}"
        run("check", "--isolated", "--snapshot", str(SNAP / "node0.json"), "--snapshot", str(SNAP / "node1.json"),
            "--format", fmt, "-o", str(out), "-v", "--", *SEED)
        text = out.read_text()
        assert text and all(line == line.rstrip() for line in text.splitlines()), fmt


def test_one_root_cause_is_one_block() -> None:
    res = run("check", "--isolated", "--snapshot", str(SNAP / "node0.json"), "--snapshot", str(SNAP / "node1.json"),
              "--select", "FS001,NET001,CLU002", "--", *SEED)
    out = res.stdout
    assert out.count("FS001") == 1 and out.count("NET001") == 1 and out.count("CLU002") == 1
    flat = " ".join(out.split())
    assert "7 JIT caches on nfs4 (filer01:/export/home)" in flat
    assert "GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME" in flat
    # the JSON keeps one entry per finding, each naming its root cause
    doc = json.loads(run("check", "--isolated", "--snapshot", str(SNAP / "node0.json"), "--snapshot",
                         str(SNAP / "node1.json"), "--select", "FS001", "--format", "json", "--", *SEED).stdout)
    groups = {f["group"] for f in doc["findings"]}
    assert len(doc["findings"]) == 7 and len(groups) == 1


def test_statistics_counts_per_code() -> None:
    res = run("check", "--isolated", "--snapshot", str(SNAP / "node0.json"), "--snapshot", str(SNAP / "node1.json"),
              "--statistics", "--format", "json", "--", *SEED)
    stats = [line.split() for line in res.stderr.splitlines() if re.match(r"^\s*\d+\s+[A-Z]+\d{3}\s", line)]
    counts = {row[1]: int(row[0]) for row in stats}
    doc = json.loads(res.stdout)
    want: dict[str, int] = {}
    for f in doc["findings"]:
        want[f["code"]] = want.get(f["code"], 0) + 1
    assert counts == want and counts["FS001"] == 7


def test_plan_search_fills_placeholders_pluralises_and_shows_no_impossible_setting() -> None:
    for gpu in ("h200", "h100", "b200"):
        res = run("plan", "--model", "moonshotai/Kimi-K3", "--target", gpu, "--search", "--max-nodes", "8",
                  columns=200)
        out = res.stdout
        assert " N " not in out and " N GiB" not in out and "-N" not in out
        assert "(1 GPUs)" not in out
        assert not re.search(r"(?<![\w/.\-])-\d", out), "a negative number in the search output"
        doc = json.loads(run("plan", "--model", "moonshotai/Kimi-K3", "--target", gpu, "--search",
                             "--format", "json").stdout)
        for c in doc["candidates"]:
            assert not re.search(r"(?<![\w/.\-])-\d", c["reason"]), c["reason"]
            for key in ("max_rank_weights_bytes", "kv_tokens", "max_context"):
                assert c.get(key, 0) is None or c.get(key, 0) >= 0
    out = run("plan", "--model", "moonshotai/Kimi-K3", "--gpu", "h200", "--search", columns=200).stdout
    assert "(1 GPU)" in out
    assert "SGLang's default --mem-fraction-static would be below 0" in out
    for label in ("TP56 EP56 DP56-attn", "TP64 DP64-attn"):
        assert label in out.split("would be below 0", 1)[1]
