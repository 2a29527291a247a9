"""A broad hostile-input sweep over the CLI (issue 17), wider than the CI corpus in tests/.

Every input surface (explain text/stdin/--log, check --model/--snapshot/--env-file/--launch-file/
--engine-log/--manifest/--config, plan, env, snapshot, manifest) is fed every hostile kind (FIFO,
idle FIFO writer, /dev/zero, /dev/urandom, /proc/self/pagemap, a directory, a symlink loop, a
dangling link, empty, binary, invalid UTF-8, NUL bytes, a 64 MB single line, deep JSON, terminal
escapes). Each run must end within 10 s, exit 0/1/2 (or 3 for a probe crash reported as a
finding), print no traceback, stay under 300 MB peak RSS, and let no control sequence from the
input reach stdout/stderr.

    python tools/hostile_sweep.py            # all cases, a table of failures
    python tools/hostile_sweep.py -k explain # only cases whose name contains "explain"
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.checkpoints.generate import write_shard  # noqa: E402
from fixtures.hostile_run import run_measured  # noqa: E402

TIME_LIMIT_S = 10.0
RSS_LIMIT_MB = 300
#: the sequences an attacker would plant: OSC 0 title, OSC 52 clipboard, OSC 8 link, DCS, C1 CSI, BEL
ESCAPES = "\x1b]0;PWNED\x07\x1b]52;c;SGVsbG8=\x07\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\x1bPq#0\x1b\\\x9b31m\x07"
#: anything an input could have put in the output: ESC not starting an SGR colour, C0 but tab/newline/CR, C1
_BAD = re.compile(r"\x1b(?!\[[0-9;]*m)|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\x80-\x9f]")

def run_cli(args: list[str], stdin: str | None = None, cwd: Path = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200", NO_COLOR="1")
    r = run_measured([sys.executable, "-m", "k3doctor", *args], timeout=TIME_LIMIT_S + 5, stdin=stdin, env=env,
                     cwd=cwd)
    r["out"], r["err"] = (r[k].decode("utf-8", "replace")[-20000:] for k in ("out", "err"))
    return r


def problems(r: dict, rcs: tuple) -> list[str]:
    text = r["out"] + r["err"]
    bad = []
    if r["rc"] == "timeout":
        bad.append("timeout")
    elif r["rc"] not in rcs:
        bad.append(f"rc {r['rc']}")
    if "Traceback" in text:
        bad.append("traceback")
    if r["wall"] > TIME_LIMIT_S:
        bad.append(f"{r['wall']:.1f}s")
    if r["rss_mb"] >= RSS_LIMIT_MB:
        bad.append(f"rss {r['rss_mb']:.0f}MB")
    m = _BAD.search(text)
    if m:
        bad.append(f"control {m.group()!r} at {text[max(0, m.start() - 40):m.start()]!r}")
    return bad


# ------------------------------------------------------------------------------------------
# hostile files
# ------------------------------------------------------------------------------------------
class Writers:
    """FIFOs that get a writer which never writes (a reader would block forever)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.opened: set[str] = set()
        self.fds: list[int] = []
        self.stop = threading.Event()
        threading.Thread(target=self._hold, daemon=True).start()

    def _hold(self) -> None:
        while not self.stop.is_set():
            for p in list(self.paths):
                if p not in self.opened:
                    try:
                        self.fds.append(os.open(p, os.O_WRONLY | os.O_NONBLOCK))
                        self.opened.add(p)
                    except OSError:
                        pass
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        for fd in self.fds:
            os.close(fd)


def make_kind(path: Path, kind: str, writers: Writers, valid: bytes = b"{}") -> None:
    """Put a hostile file of ``kind`` at ``path`` (replacing what is there)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "fifo-idle":
        os.mkfifo(path)
        writers.paths.append(str(path))
    elif kind.startswith("/"):
        path.symlink_to(kind)
    elif kind == "dir":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "dangling":
        path.symlink_to(path.parent / "gone-nowhere")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4096)
    elif kind == "badutf8":
        path.write_bytes(b"\xff\xfe\xc3(" * 1000 + valid)
    elif kind == "nul":
        path.write_bytes(valid[: len(valid) // 2] + b"\x00" * 100 + valid[len(valid) // 2:])
    elif kind == "bigline":
        with path.open("wb") as f:
            f.write(b"RuntimeError: " + b"A" * (64 << 20))
    elif kind == "sparse":
        with path.open("wb") as f:
            f.truncate(20 << 30)
    elif kind == "deepjson":
        path.write_bytes(b"[" * 200000 + b"]" * 200000)
    elif kind == "escapes":
        path.write_bytes(valid.replace(b'"', b'"' + ESCAPES.encode("utf-8", "surrogateescape"), 1)
                         if valid.startswith(b"{") else ESCAPES.encode() + b"\n" + valid + ESCAPES.encode())
    else:
        raise ValueError(kind)


FILE_KINDS = ["fifo", "fifo-idle", "/dev/zero", "/dev/urandom", "/proc/self/pagemap", "dir", "loop",
              "dangling", "empty", "binary", "badutf8", "nul", "bigline", "sparse", "deepjson", "escapes"]


def small_model(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    write_shard(d / "model-00001-of-00002.safetensors", [("a.weight", "BF16", [4, 4])])
    write_shard(d / "model-00002-of-00002.safetensors", [("b.weight", "BF16", [4, 4])])
    (d / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 64}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                                                        "b.weight": "model-00002-of-00002.safetensors"}}))
    (d / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                               "hidden_size": 4, "num_hidden_layers": 1,
                                               "num_attention_heads": 1, "vocab_size": 4}))
    return d


# ------------------------------------------------------------------------------------------
# cases: (name, setup(tmp, writers) -> (args, stdin), allowed exit codes)
# ------------------------------------------------------------------------------------------
Case = tuple[str, Callable[[Path, Writers], tuple[list[str], str]], tuple]


def cases() -> Iterator[Case]:
    ok = (0, 1, 2)
    for kind in FILE_KINDS:
        def explain_log(t: Path, w: Writers, kind: str = kind) -> tuple[list[str], str]:
            make_kind(t / "rank0.log", kind, w, b"INFO ok\nRuntimeError: CUDA error: out of memory\n")
            return ["explain", "--format", "text", "--log", str(t / "rank0.log")], "/dev/null"
        yield f"explain --log {kind}", explain_log, ok

        def explain_stdin(t: Path, w: Writers, kind: str = kind) -> tuple[list[str], str]:
            if kind in ("dir", "loop", "dangling"):
                return ["explain", "--format", "text", "-"], "closed"
            if kind.startswith("fifo"):
                # a pipe on stdin is the user's own producer: explain waits for it, as grep does
                return ["explain", "--format", "text", "-"], "/dev/zero"
            make_kind(t / "in.txt", kind, w, b"NCCL WARN NET/IB : Got completion with error 12\n")
            return ["explain", "--format", "text", "-"], str(t / "in.txt")
        yield f"explain - <{kind}", explain_stdin, ok

        for name, valid in (("config.json", b'{"architectures": ["LlamaForCausalLM"]}'),
                            ("model.safetensors.index.json", b'{"weight_map": {}}'),
                            ("model-00001-of-00002.safetensors", b"")):
            def check_model(t: Path, w: Writers, kind: str = kind, name: str = name,
                            valid: bytes = valid) -> tuple[list[str], str]:
                m = small_model(t / "m")
                make_kind(m / name, kind, w, valid or (m / "model-00002-of-00002.safetensors").read_bytes())
                return ["check", "--target", "h200", "--model", str(m), "--select", "CKPT,MEM",
                        "-f", "markdown", "--", "python", "-m", "sglang.launch_server", "--model-path",
                        str(m), "--tp", "8"], "/dev/null"
            yield f"check --model ({name}={kind})", check_model, ok

            def plan_model(t: Path, w: Writers, kind: str = kind, name: str = name,
                           valid: bytes = valid) -> tuple[list[str], str]:
                m = small_model(t / "m")
                make_kind(m / name, kind, w, valid or (m / "model-00002-of-00002.safetensors").read_bytes())
                return ["plan", "--model", str(m), "--target", "h200", "--tp", "8"], "/dev/null"
            yield f"plan --model ({name}={kind})", plan_model, ok

        for flag, cmd, valid in (
                ("--snapshot", ["check"], b'{"schema_version": 1, "facts": {}}'),
                ("--env-file", ["check", "--target", "h200"], b"export NCCL_DEBUG=INFO\n"),
                ("--launch-file", ["check", "--target", "h200"], b"python -m sglang.launch_server --tp 8\n"),
                ("--engine-log", ["check", "--target", "h200"], b"Load weight end. mem usage=10.00 GB\n"),
                ("--config", ["check", "--target", "h200"], b"[tool.k3doctor]\nselect = ['GPU']\n"),
                ("--snapshot", ["plan", "--tp", "8", "--model", "moonshotai/Kimi-K3"], b"{}"),
                ("--engine-log", ["plan", "--tp", "8", "--model", "moonshotai/Kimi-K3", "--target", "h200"],
                 b"Loading model weights took 10.0 GiB\n"),
                ("--env-file", ["snapshot", "--only", "env"], b"export A=1\n")):
            def flag_file(t: Path, w: Writers, kind: str = kind, flag: str = flag, cmd: list = cmd,
                          valid: bytes = valid) -> tuple[list[str], str]:
                make_kind(t / "f", kind, w, valid)
                return [*cmd, flag, str(t / "f")], "/dev/null"
            yield f"{' '.join(cmd[:1])} {flag} {kind}", flag_file, ok

        def manifest_verify(t: Path, w: Writers, kind: str = kind) -> tuple[list[str], str]:
            m = small_model(t / "m")
            make_kind(t / "man.json", kind, w, b'{"files": {}}')
            return ["manifest", "verify", str(m), str(t / "man.json")], "/dev/null"
        yield f"manifest verify {kind}", manifest_verify, ok

        if kind == "sparse":
            continue  # hashing a 20 GB file is the work manifest create is asked for (no shortcut for sha256)

        def manifest_create(t: Path, w: Writers, kind: str = kind) -> tuple[list[str], str]:
            m = small_model(t / "m")
            make_kind(m / "extra.bin", kind, w, b"x")
            return ["manifest", "create", str(m), "-o", str(t / "out.json")], "/dev/null"
        yield f"manifest create (file={kind})", manifest_create, ok

    # arguments that carry escapes, huge or odd values
    for label, args in (
            ("explain arg escapes", ["explain", "--format", "text", "RuntimeError: " + ESCAPES]),
            ("explain rich arg escapes", ["explain", "--format", "rich", "NCCL error " + ESCAPES]),
            ("explain unknown id escapes", ["explain", "--format", "text", "gloo-" + ESCAPES]),
            ("explain json escapes", ["explain", "--format", "json", "CUDA out of memory " + ESCAPES]),
            ("check flag escapes", ["check", "--target", "h200", "-f", "markdown", "--", "python", "-m",
                                    "sglang.launch_server", "--tp", "8", "--bogus" + ESCAPES, "x" + ESCAPES]),
            ("check rich flag escapes", ["check", "--target", "h200", "--", "vllm", "serve",
                                         "m" + ESCAPES, "--tensor-parallel-size", "8" + ESCAPES]),
            ("plan flag escapes", ["plan", "--target", "h200", "--", "python", "-m", "sglang.launch_server",
                                   "--model-path", "/m" + ESCAPES, "--tp", "8"]),
            ("plan model escapes", ["plan", "--target", "h200", "--tp", "8", "--model", "/x" + ESCAPES]),
            ("env addr escapes", ["env", "--dist-init-addr", "h" + ESCAPES + ":5000"]),
            ("env cache-root escapes", ["env", "--cache-root", "/tmp/" + ESCAPES]),
            ("env rank-var escapes", ["env", "--rank-var", "R" + ESCAPES]),
            ("check target escapes", ["check", "--target", "h2" + ESCAPES]),
            ("check select escapes", ["check", "--target", "h200", "--select", "GPU" + ESCAPES]),
            ("explain 120KB arg", ["explain", "--format", "text", "NCCL WARN " + "x" * (120 << 10)]),
            ("check 20k flags", ["check", "--target", "h200", "--", "python", "-m", "sglang.launch_server",
                                 *[f"--f{i}" for i in range(20000)]]),
            ("plan huge tp", ["plan", "--target", "h200", "--tp", "9" * 400, "--model", "moonshotai/Kimi-K3"]),
            ("plan negative tp", ["plan", "--target", "h200", "--tp", "-8", "--model", "moonshotai/Kimi-K3"]),
            ("plan search huge nodes", ["plan", "--target", "h200", "--search", "--max-nodes", "100000",
                                        "--model", "moonshotai/Kimi-K3"]),
            ("plan context huge", ["plan", "--target", "h200", "--tp", "16", "--context", "9" * 30,
                                   "--model", "moonshotai/Kimi-K3"]),
            ("plan mem-fraction nan", ["plan", "--target", "h200", "--tp", "16", "--mem-fraction", "nan",
                                       "--model", "moonshotai/Kimi-K3"]),
            ("plan mem-fraction inf", ["plan", "--target", "h200", "--tp", "16", "--mem-fraction", "inf",
                                       "--model", "moonshotai/Kimi-K3"]),
            ("check gpus huge", ["check", "--target", "h200", "--gpus", "9" * 50]),
            ("check launch control chars", ["check", "--target", "h200", "--", "\x01\x02", "\x7f"]),
            ("check launch huge tp", ["check", "--target", "h200", "--", "python", "-m", "sglang.launch_server",
                                      "--model-path", "moonshotai/Kimi-K3", "--tp", "9" * 40, "--nnodes", "9" * 40]),
            ("check launch huge dp", ["check", "--target", "h200", "--", "vllm", "serve", "moonshotai/Kimi-K3",
                                      "--data-parallel-size", "99999999", "--tensor-parallel-size", "99999999"]),
            ("plan launch huge pp", ["plan", "--target", "h200", "--", "vllm", "serve", "moonshotai/Kimi-K3",
                                     "--pipeline-parallel-size", "99999999", "--tensor-parallel-size", "8"]),
            ("plan launch huge context", ["plan", "--target", "h200", "--", "python", "-m", "sglang.launch_server",
                                          "--model-path", "moonshotai/Kimi-K3", "--tp", "16",
                                          "--context-length", "9" * 30, "--max-running-requests", "9" * 30]),
            ("check nnodes huge", ["check", "--target", "h200", "--nnodes", "9" * 30, "--node-rank", "0"]),
            ("check probe-timeout huge", ["check", "--target", "h200", "--probe-timeout", "1e308"]),
            ("check deep-timeout nan", ["check", "--target", "h200", "--deep-timeout", "nan"]),
            ("check jobs huge", ["check", "--target", "h200", "--jobs", "9" * 30]),
            ("explain max huge", ["explain", "--format", "text", "--max", "9" * 30, "CUDA out of memory"]),
            ("explain --list", ["explain", "--list", "--format", "text"]),
            ("check --model /proc", ["check", "--target", "h200", "--model", "/proc", "--select", "CKPT"]),
            ("check --model /dev", ["check", "--target", "h200", "--model", "/dev", "--select", "CKPT"]),
            ("plan --model /proc/self", ["plan", "--target", "h200", "--tp", "8", "--model", "/proc/self"]),
            ("manifest create /proc/self/fd", ["manifest", "create", "/proc/self/fd", "-o", "/tmp/k3m.json"]),
    ):
        def argcase(t: Path, w: Writers, args: list[str] = args) -> tuple[list[str], str]:
            return args, "/dev/null"
        yield "arg: " + label, argcase, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("-v", action="store_true", help="print every case")
    a = ap.parse_args()
    failures = 0
    total = 0
    worst_wall = worst_rss = 0.0
    for name, setup, rcs in cases():
        if a.k not in name:
            continue
        total += 1
        writers = Writers()
        with tempfile.TemporaryDirectory(prefix="k3hostile-") as td:
            try:
                args, stdin = setup(Path(td), writers)
                r = run_cli(args, stdin)
            finally:
                writers.close()
        worst_wall, worst_rss = max(worst_wall, r["wall"]), max(worst_rss, r["rss_mb"])
        bad = problems(r, rcs)
        if bad or a.v:
            print(f"{'FAIL' if bad else 'ok  '} {name[:70]:70s} rc={r['rc']} {r['wall']:5.1f}s "
                  f"{r['rss_mb']:4.0f}MB {'; '.join(bad)}", flush=True)
        if bad:
            failures += 1
            tail = (r["out"] + r["err"]).strip().splitlines()[-3:]
            print("      " + "\n      ".join(ln[:200].encode("unicode_escape").decode() for ln in tail))
    print(f"{total} cases, {failures} failing; worst wall {worst_wall:.1f} s, worst RSS {worst_rss:.0f} MB")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
